/* Test helper: every built-in planner's options block, reached by name from
 * the options a command builds (TSIM_OPTS) or from a configured planner
 * (TSIM_OWN). Tests may know the baselines; the library below them may not. */
#ifndef TSIM_TEST_OPTIONS_H
#define TSIM_TEST_OPTIONS_H

#include "echo.h"
#include "eplb.h"
#include "fastermoe.h"
#include "llep.h"
#include "lplb.h"
#include "optimal.h"
#include "registry.h"
#include "taot.h"

/* Planner X's block in base options o (a tsim_planner_options lvalue). */
#define TSIM_OPTS(o, X) ((tsim_##X##_options *)tsim_planner_options_own(&(o), &tsim_planner_##X))
/* The own block of configured planner p (a tsim_planner lvalue) of planner X. */
#define TSIM_OWN(p, X) ((tsim_##X##_options *)(p).own.bytes)

#include <stdio.h>

/* Gives configured planner p (desc and label set) every default option. */
static inline void tsim_test_defaults(tsim_planner *p)
{
    char label[TSIM_LABEL_MAX];
    snprintf(label, sizeof label, "%s", p->label);
    tsim_planner_options base;
    tsim_planner_options_default(&base);
    tsim_planner_configure(p, p->desc, label[0] ? label : NULL, &base);
}

#endif
