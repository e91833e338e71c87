$TAOTSIM fit --conc=2
