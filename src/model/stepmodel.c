#include "stepmodel.h"

#include <stdio.h>
#include <string.h>

#include "parse.h"

void tsim_step_model_default(tsim_step_model *m)
{
    m->us_per_token = 0.063;
    m->backward_ratio = 2.0;
    m->expert_mb = 9.44;
    m->intra_gbps = 400.0;
    m->inter_gbps = 25.0;
    m->overlap = true;
}

/* MB / (GB/s) = ms. */
static double fetch_ms(const tsim_step_model *m, int32_t intra, int32_t inter)
{
    return (double)intra * m->expert_mb / m->intra_gbps + (double)inter * m->expert_mb / m->inter_gbps;
}

static double phase_ms(const tsim_step_model *m, double home_ms, double guest_ms, double xfer_ms)
{
    return m->overlap ? (xfer_ms > home_ms ? xfer_ms : home_ms) + guest_ms : xfer_ms + home_ms + guest_ms;
}

double tsim_step_time_ms(const tsim_step_model *m, int ranks, const int64_t *home_tokens, const int64_t *guest_tokens,
                         const int32_t *guest_intra, const int32_t *guest_inter)
{
    double fwd = 0.0, bwd = 0.0;
    for (int r = 0; r < ranks; r++) {
        double home = (double)home_tokens[r] * m->us_per_token * 1e-3;
        double guest = (double)guest_tokens[r] * m->us_per_token * 1e-3;
        double xfer = fetch_ms(m, guest_intra[r], guest_inter[r]);
        double f = phase_ms(m, home, guest, xfer);
        double b = phase_ms(m, home * m->backward_ratio, guest * m->backward_ratio, xfer);
        if (f > fwd)
            fwd = f;
        if (b > bwd)
            bwd = b;
    }
    return fwd + bwd;
}

double tsim_step_time_static_ms(const tsim_step_model *m, int ranks, const int64_t *loads)
{
    int64_t max = 0;
    for (int r = 0; r < ranks; r++)
        if (loads[r] > max)
            max = loads[r];
    return (double)max * m->us_per_token * 1e-3 * (1.0 + m->backward_ratio);
}

bool tsim_step_model_option_is_flag(const char *name)
{
    return strcmp(name, "overlap") == 0 || strcmp(name, "no-overlap") == 0;
}

static const char *const option_names[] = {"us-per-token", "expert-mb", "intra-gbps", "inter-gbps",
                                           "backward-ratio", "overlap", "no-overlap", NULL};

const char *tsim_step_model_option_name(int i)
{
    return i >= 0 && i < (int)(sizeof option_names / sizeof option_names[0]) ? option_names[i] : NULL;
}

bool tsim_step_model_option_exists(const char *name)
{
    for (const char *const *n = option_names; *n; n++)
        if (strcmp(*n, name) == 0)
            return true;
    return false;
}

int tsim_step_model_option(tsim_step_model *m, const char *name, const char *value, bool *known, tsim_error *err)
{
    *known = true;
    if (strcmp(name, "overlap") == 0) {
        m->overlap = true;
        return TSIM_OK;
    }
    if (strcmp(name, "no-overlap") == 0) {
        m->overlap = false;
        return TSIM_OK;
    }
    double *target = NULL;
    if (strcmp(name, "us-per-token") == 0)
        target = &m->us_per_token;
    else if (strcmp(name, "expert-mb") == 0)
        target = &m->expert_mb;
    else if (strcmp(name, "intra-gbps") == 0)
        target = &m->intra_gbps;
    else if (strcmp(name, "inter-gbps") == 0)
        target = &m->inter_gbps;
    else if (strcmp(name, "backward-ratio") == 0)
        target = &m->backward_ratio;
    if (!target) {
        *known = false;
        return tsim_error_set(err, TSIM_E_INPUT, "unknown option --%s", name);
    }
    if (!value)
        return tsim_error_set(err, TSIM_E_INPUT, "--%s needs a value", name);
    char what[64];
    snprintf(what, sizeof what, "--%s", name);
    double lo = strcmp(name, "backward-ratio") == 0 || strcmp(name, "expert-mb") == 0 || strcmp(name, "us-per-token") == 0 ? 0.0 : 1e-9;
    return tsim_parse_double(value, lo, 1e12, target, what, err);
}
