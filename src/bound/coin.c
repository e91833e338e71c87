/* The COIN-OR solvers' loader (coin.h). */
#include "coin.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

/* The library names tried in turn: the soname the build found (meson
 * passes TSIM_CBC_SONAME and TSIM_CLP_SONAME when it could read them), then
 * Debian 12's, then the development link. */
#ifndef TSIM_CBC_SONAME
#define TSIM_CBC_SONAME "libCbcSolver.so.3"
#endif
#ifndef TSIM_CLP_SONAME
#define TSIM_CLP_SONAME "libClp.so.1"
#endif

typedef void (*any_fn)(void);

int tsim_coin_load(const char *what, const char *const *libs, int n_libs, const char *const *names, int count,
                   void *fns, tsim_error *err)
{
    void *handle = NULL;
    char why[256] = "no library named";
    int lib = 0;
    for (; lib < n_libs && !handle; lib++) {
        /* RTLD_LOCAL: the solvers' symbols stay theirs (CBC and CLP ship
         * classes of the same name; see bound/meson.build) */
        handle = dlopen(libs[lib], RTLD_NOW | RTLD_LOCAL);
        if (!handle) {
            const char *e = dlerror();
            snprintf(why, sizeof why, "%s", e ? e : "not found");
        }
    }
    if (!handle)
        return tsim_error_set(err, TSIM_E_INPUT, "%s is needed here but could not be loaded (%s); install COIN-OR %s",
                              what, why, what);
    for (int i = 0; i < count; i++) {
        void *sym = dlsym(handle, names[i]);
        if (!sym) {
            dlclose(handle);
            return tsim_error_set(err, TSIM_E_INPUT, "%s: %s has no function %s", what, libs[lib - 1], names[i]);
        }
        /* A function pointer from dlsym's object pointer, as POSIX allows:
         * copied, since ISO C has no conversion between the two. */
        any_fn f;
        memcpy(&f, &sym, sizeof f);
        memcpy((char *)fns + (size_t)i * sizeof f, &f, sizeof f);
    }
    return TSIM_OK; /* the handle stays open for the process */
}

/* Each table is loaded once; the outcome (and its message) is kept. */
typedef struct {
    pthread_once_t once;
    int rc;
    tsim_error err;
} load_state;

static tsim_cbc_api cbc;
static load_state cbc_state = {PTHREAD_ONCE_INIT, 0, {0}};
static tsim_clp_api clp;
static load_state clp_state = {PTHREAD_ONCE_INIT, 0, {0}};

static void load_cbc(void)
{
    static const char *const libs[] = {TSIM_CBC_SONAME, "libCbcSolver.so.3", "libCbcSolver.so"};
    static const char *const names[] = {
        "Cbc_newModel",       "Cbc_deleteModel",     "Cbc_loadProblem",        "Cbc_setInteger",
        "Cbc_setLogLevel",    "Cbc_setParameter",    "Cbc_setMaximumNodes",    "Cbc_solve",
        "Cbc_getNodeCount",   "Cbc_bestSolution",    "Cbc_isProvenOptimal",    "Cbc_isProvenInfeasible",
        "Cbc_isNodeLimitReached", "Cbc_getObjValue", "Cbc_getBestPossibleObjValue", "Cbc_secondaryStatus"};
    _Static_assert(sizeof names / sizeof *names * sizeof(any_fn) == sizeof(tsim_cbc_api),
                   "one name per field of tsim_cbc_api");
    cbc_state.rc = tsim_coin_load("CBC", libs, 3, names, (int)(sizeof names / sizeof *names), &cbc, &cbc_state.err);
}

static void load_clp(void)
{
    static const char *const libs[] = {TSIM_CLP_SONAME, "libClp.so.1", "libClp.so"};
    static const char *const names[] = {
        "Clp_newModel", "Clp_deleteModel", "Clp_setLogLevel", "Clp_loadProblem",
        "Clp_setMaximumIterations", "Clp_dual", "Clp_status", "Clp_numberIterations",
        "Clp_isProvenOptimal", "Clp_isProvenPrimalInfeasible", "Clp_objectiveValue"};
    _Static_assert(sizeof names / sizeof *names * sizeof(any_fn) == sizeof(tsim_clp_api),
                   "one name per field of tsim_clp_api");
    clp_state.rc = tsim_coin_load("CLP", libs, 3, names, (int)(sizeof names / sizeof *names), &clp, &clp_state.err);
}

const tsim_cbc_api *tsim_coin_cbc(tsim_error *err)
{
    pthread_once(&cbc_state.once, load_cbc);
    if (cbc_state.rc) {
        *err = cbc_state.err;
        return NULL;
    }
    return &cbc;
}

const tsim_clp_api *tsim_coin_clp(tsim_error *err)
{
    pthread_once(&clp_state.once, load_clp);
    if (clp_state.rc) {
        *err = clp_state.err;
        return NULL;
    }
    return &clp;
}
