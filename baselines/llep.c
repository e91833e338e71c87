/* PLACEHOLDER: replaced by the llep planner. */
#include "planner.h"
static int p_init(void **s, const tsim_topology *t, const tsim_planner_options *o, tsim_error *err) { (void)s; (void)t; (void)o; return tsim_error_set(err, TSIM_E_INPUT, "planner llep is not built yet"); }
static int p_plan(void *s, const tsim_record *r, tsim_plan *p, tsim_error *err) { (void)s; (void)r; (void)p; (void)err; return 3; }
static void p_free(void *s) { (void)s; }
const tsim_planner_desc tsim_planner_llep = { .name = "llep", .summary = "(not built yet)", .init = p_init, .plan = p_plan, .free = p_free };
