/* Megatron-Core's parallel layout for router traces (--megatron-parallel):
 * which global rank holds which pipeline stage, expert-parallel group and EP
 * rank. Megatron lays the ranks out on a grid whose dimensions come in the
 * order of its order string ("tp-cp-ep-dp-pp" by default), the first one
 * varying fastest. The experts use their own grid of the same order: expert
 * TP (default: TP), EP, expert DP (what is left) and PP; CP folds into expert
 * DP there. A global rank's coordinate on a dimension is (rank / stride) %
 * size, the stride being the product of the sizes before it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "topology.h"
#include "trace_megatron_layout.h"

static int bad(tsim_error *err, const char *fmt, const char *what)
{
    return tsim_error_set(err, TSIM_E_INPUT, fmt, what);
}

/* "tp-cp-ep-dp-pp": each of the five names once. */
static int parse_order(const char *s, char order[5], tsim_error *err)
{
    static const char *names[] = {"tp", "cp", "ep", "dp", "pp"};
    static const char codes[] = "TCEDP";
    const char *p = s;
    bool ok = true;
    for (int n = 0; ok && n < 5;) {
        int k = 0;
        while (k < 5 && strncmp(p, names[k], 2) != 0)
            k++;
        ok = k < 5 && !memchr(order, codes[k], (size_t)n);
        if (ok) {
            order[n++] = codes[k];
            p += 2;
            ok = n == 5 ? *p == '\0' : *p++ == '-';
        }
    }
    if (!ok)
        return bad(err, "--megatron-parallel: order=%s: expected the five names tp, cp, ep, dp and pp, each once, "
                        "joined by '-' (Megatron's default is tp-cp-ep-dp-pp)",
                   s);
    return TSIM_OK;
}

int tsim_megatron_layout_parse(const char *spec, tsim_megatron_layout *l, tsim_error *err)
{
    *l = (tsim_megatron_layout){.tp = 0, .pp = 0, .ep = 0, .cp = 1, .etp = 0, .tp_same = false};
    memcpy(l->order, "TCEDP", 5);
    char buf[256];
    if (strlen(spec) >= sizeof buf)
        return bad(err, "--megatron-parallel: %s", "longer than 255 characters");
    snprintf(buf, sizeof buf, "%s", spec);
    char *save = NULL;
    for (char *item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(item, '=');
        if (!eq)
            return bad(err, "--megatron-parallel: '%s': expected KEY=VALUE (tp=, pp=, ep=, cp=, etp=, order=, tokens=)",
                       item);
        *eq = '\0';
        const char *key = item, *val = eq + 1;
        int *slot = strcmp(key, "tp") == 0 ? &l->tp : strcmp(key, "pp") == 0 ? &l->pp : strcmp(key, "ep") == 0 ? &l->ep
                    : strcmp(key, "cp") == 0 ? &l->cp : strcmp(key, "etp") == 0 ? &l->etp : NULL;
        if (slot) {
            char *end;
            long v = strtol(val, &end, 10);
            if (!val[0] || *end || v < 1 || v > TSIM_MAX_RANKS)
                return tsim_error_set(err, TSIM_E_INPUT, "--megatron-parallel: %s=%s: expected an integer in 1..%d",
                                      key, val, TSIM_MAX_RANKS);
            *slot = (int)v;
        } else if (strcmp(key, "order") == 0) {
            if (parse_order(val, l->order, err))
                return TSIM_E_INPUT;
        } else if (strcmp(key, "tokens") == 0) {
            if (strcmp(val, "split") != 0 && strcmp(val, "same") != 0)
                return bad(err, "--megatron-parallel: tokens=%s: expected split (sequence parallelism: each TP rank "
                                "routes its own tokens) or same (every TP rank routes the same tokens)",
                           val);
            l->tp_same = strcmp(val, "same") == 0;
        } else if (strcmp(key, "vpp") == 0) {
            return bad(err, "--megatron-parallel: %s: virtual pipeline stages are not handled yet (their layer ids "
                            "restart per model chunk)",
                       item);
        } else {
            return bad(err, "--megatron-parallel: unknown key '%s' (expected tp, pp, ep, cp, etp, order, tokens)", key);
        }
    }
    if (!l->tp || !l->pp || !l->ep)
        return bad(err, "--megatron-parallel: %s is missing (tp=T,pp=P,ep=E are required)",
                   !l->tp ? "tp" : !l->pp ? "pp" : "ep");
    if (!l->etp)
        l->etp = l->tp; /* Megatron's expert TP defaults to TP */
    return TSIM_OK;
}

/* The coordinate of global rank g on dimension `dim` of a grid with these sizes. */
static int coord(const char order[5], const int size[5], int g, char dim)
{
    int stride = 1;
    for (int k = 0; k < 5; k++) {
        if (order[k] == dim)
            return (g / stride) % size[k];
        stride *= size[k];
    }
    return 0;
}

int tsim_megatron_layout_map(const tsim_megatron_layout *l, int world, tsim_megatron_place *places, int *groups,
                             tsim_error *err)
{
    const int dense = l->tp * l->cp * l->pp, expert = l->etp * l->ep * l->pp;
    if (world % dense != 0)
        return tsim_error_set(err, TSIM_E_INPUT,
                              "--megatron-parallel: %d rank files do not divide into tp %d x cp %d x pp %d (data "
                              "parallel size = ranks / (tp x cp x pp))",
                              world, l->tp, l->cp, l->pp);
    if (world % expert != 0)
        return tsim_error_set(err, TSIM_E_INPUT,
                              "--megatron-parallel: %d rank files do not divide into etp %d x ep %d x pp %d (expert "
                              "data parallel size = ranks / (etp x ep x pp))",
                              world, l->etp, l->ep, l->pp);
    *groups = world / expert;
    int size[5];
    for (int k = 0; k < 5; k++)
        size[k] = l->order[k] == 'T'   ? l->etp
                  : l->order[k] == 'C' ? 1
                  : l->order[k] == 'E' ? l->ep
                  : l->order[k] == 'D' ? *groups
                                       : l->pp;
    for (int g = 0; g < world; g++) {
        places[g].etp_rank = coord(l->order, size, g, 'T');
        places[g].ep_rank = coord(l->order, size, g, 'E');
        places[g].group = coord(l->order, size, g, 'D');
        places[g].stage = coord(l->order, size, g, 'P');
    }
    return TSIM_OK;
}
