/* MoonEP (moonep.md): exact balance in every microbatch. Every rank computes
 * its cap floor(T/R) (+1 for the first T mod R ranks); overloaded ranks send
 * whole quotas to underloaded ones, which host the experts in prefetch slots.
 * Stateless: each record is planned from its own counts alone. */
#ifndef TSIM_MOONEP_H
#define TSIM_MOONEP_H

#include "error.h"
#include "plan.h"
#include "record.h"
#include "topology.h"

/* How a guest numbers its slots (moonep.md 3.5). */
enum {
    TSIM_MOONEP_SLOTS_EXPERT = 0, /* ascending expert index (MoonEP at 753befe) */
    TSIM_MOONEP_SLOTS_TOKENS = 1, /* descending tokens, ties to the higher expert (Megatron's port) */
};

/* --moonep-* options (moonep.md section 5). */
typedef struct {
    int slot_order; /* TSIM_MOONEP_SLOTS_* (default expert) */
} tsim_moonep_options;

typedef struct tsim_moonep tsim_moonep;

/* The published defaults. */
void tsim_moonep_options_default(tsim_moonep_options *opt);

/* Parses a --moonep-slot-order value ("expert" or "tokens") into *out. */
int tsim_moonep_parse_slot_order(const char *text, int *out, tsim_error *err);

/* The K MoonEP needs and runs at by default: E/R (one prefetch slot per home
 * expert). */
int tsim_moonep_needed_slots(const tsim_topology *topo);

/* Checks the configuration before any record (slots >= E/R, a known slot
 * order) and allocates all scratch for this topology. */
int tsim_moonep_init(tsim_moonep **out, const tsim_topology *topo, int slots, const tsim_moonep_options *opt,
                     tsim_error *err);

/* Plans one record into plan (reset here). plan->ranks must be R. */
int tsim_moonep_plan(tsim_moonep *m, const tsim_record *rec, tsim_plan *plan, tsim_error *err);

void tsim_moonep_free(tsim_moonep *m);

#endif
