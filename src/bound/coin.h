/* COIN-OR's CBC and CLP through their C interfaces, loaded when first used
 * (dlopen). Linked, they made every taotsim process load some twenty C++
 * libraries (CBC, CLP, Cgl, Osi, LAPACK, BLAS, gfortran, libstdc++: about
 * 8 ms of CPU at each start), though only `optimal` and the bounds solve
 * with them. The rest of bound/ calls them through these tables. */
#ifndef TSIM_COIN_H
#define TSIM_COIN_H

#include <coin/Cbc_C_Interface.h>
#include <coin/Clp_C_Interface.h>

#include "error.h"

/* The CBC functions mip.c uses, with the header's own signatures. */
typedef struct {
    __typeof__(&Cbc_newModel) newModel;
    __typeof__(&Cbc_deleteModel) deleteModel;
    __typeof__(&Cbc_loadProblem) loadProblem;
    __typeof__(&Cbc_setInteger) setInteger;
    __typeof__(&Cbc_setLogLevel) setLogLevel;
    __typeof__(&Cbc_setParameter) setParameter;
    __typeof__(&Cbc_setMaximumNodes) setMaximumNodes;
    __typeof__(&Cbc_solve) solve;
    __typeof__(&Cbc_getNodeCount) getNodeCount;
    __typeof__(&Cbc_bestSolution) bestSolution;
    __typeof__(&Cbc_isProvenOptimal) isProvenOptimal;
    __typeof__(&Cbc_isProvenInfeasible) isProvenInfeasible;
    __typeof__(&Cbc_isNodeLimitReached) isNodeLimitReached;
    __typeof__(&Cbc_getObjValue) getObjValue;
    __typeof__(&Cbc_getBestPossibleObjValue) getBestPossibleObjValue;
    __typeof__(&Cbc_secondaryStatus) secondaryStatus;
} tsim_cbc_api;

/* The CLP functions lp.c uses. */
typedef struct {
    __typeof__(&Clp_newModel) newModel;
    __typeof__(&Clp_deleteModel) deleteModel;
    __typeof__(&Clp_setLogLevel) setLogLevel;
    __typeof__(&Clp_loadProblem) loadProblem;
    __typeof__(&Clp_setMaximumIterations) setMaximumIterations;
    __typeof__(&Clp_dual) dual;
    __typeof__(&Clp_status) status;
    __typeof__(&Clp_numberIterations) numberIterations;
    __typeof__(&Clp_isProvenOptimal) isProvenOptimal;
    __typeof__(&Clp_isProvenPrimalInfeasible) isProvenPrimalInfeasible;
    __typeof__(&Clp_objectiveValue) objectiveValue;
} tsim_clp_api;

/* The loaded tables (loaded once per process, then shared by every thread);
 * NULL with err set (TSIM_E_INPUT, naming the library and dlerror's reason)
 * when the library or one of its functions cannot be found. */
const tsim_cbc_api *tsim_coin_cbc(tsim_error *err);
const tsim_clp_api *tsim_coin_clp(tsim_error *err);

/* Loads `count` functions named names[i] from the first of the `n_libs`
 * libraries that dlopen finds, into the pointers at fns[i] (each
 * sizeof(void (*)(void)) bytes apart, as in the tables above). `what` names
 * the solver in the message. Exposed for the tests of the failure path. */
int tsim_coin_load(const char *what, const char *const *libs, int n_libs, const char *const *names, int count,
                   void *fns, tsim_error *err);

#endif
