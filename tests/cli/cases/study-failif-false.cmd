$TAOTSIM table1 --planners taot,echo --fail-if 'taot.weighted.mean > echo.weighted.mean' --fail-if 'ep16.imb70.taot.rho_after.p95 > 0.05' > /dev/null; echo status $?
