/* The --traffic text table (md or csv): each planner's crossing tokens and
 * hottest link before and after; the matrices come from study/traffic.c. */
#include "traffic_print.h"

#include <stdlib.h>
#include <string.h>

static void link_text(char *buf, size_t n, const int64_t *m, int units, tsim_format format)
{
    tsim_traffic_link l = tsim_traffic_hottest(m, units);
    if (l.src < 0)
        snprintf(buf, n, "%s", format == TSIM_FORMAT_CSV ? "" : "none");
    else
        snprintf(buf, n, "%d->%d (%.1f%%)", l.src, l.dst, 100.0 * l.share);
}

static int64_t sum_all(const int64_t *m, size_t n)
{
    int64_t s = 0;
    for (size_t i = 0; i < n; i++)
        s += m[i];
    return s;
}

int tsim_traffic_print(FILE *out, const tsim_traffic *t, const tsim_session *s, tsim_format format)
{
    static const char *const headers[] = {"planner", "crossing before", "crossing after", "hottest before",
                                          "hottest after", "GPU weight copies", "host weight copies",
                                          "crossing MB after"};
    const int ncols = t->hidden_bytes > 0 ? 8 : 7;
    tsim_table tab;
    if (tsim_table_init(&tab, ncols, headers))
        return -1;
    const size_t nn = (size_t)t->n * (size_t)t->n;
    for (int i = 0; i < t->n_planners; i++) {
        const tsim_traffic_planner *p = &t->p[i];
        char c[8][64];
        const char *cells[8];
        snprintf(c[0], sizeof c[0], "%s", s->planners[i].label);
        snprintf(c[1], sizeof c[1], "%lld", (long long)tsim_traffic_crossing(p->before, t->n));
        snprintf(c[2], sizeof c[2], "%lld", (long long)tsim_traffic_crossing(p->after, t->n));
        link_text(c[3], sizeof c[3], p->before, t->n, format);
        link_text(c[4], sizeof c[4], p->after, t->n, format);
        snprintf(c[5], sizeof c[5], "%lld", (long long)(sum_all(p->weights, nn) + sum_all(p->rehomed, nn)));
        snprintf(c[6], sizeof c[6], "%lld", (long long)sum_all(p->host, (size_t)t->R));
        tsim_fmt_num(c[7], sizeof c[7], (double)tsim_traffic_crossing(p->after, t->n) * t->hidden_bytes / 1e6, 1);
        for (int k = 0; k < 8; k++)
            cells[k] = c[k];
        if (tsim_table_add_row(&tab, cells)) {
            tsim_table_free(&tab);
            return -1;
        }
    }
    if (format == TSIM_FORMAT_MD)
        fprintf(out, "\n## traffic (%s x %s tokens, summed over records)\n\n", tsim_traffic_level_name(t->level),
                tsim_traffic_level_name(t->level));
    else
        fputc('\n', out);
    tsim_table_print(&tab, out, format);
    tsim_table_free(&tab);
    if (format == TSIM_FORMAT_MD)
        fprintf(out,
                "\ncrossing: tokens computed on another %s than their source (%s); hottest: the busiest %s pair "
                "(source->destination) and its share of the crossing tokens; weight copies: replicas listed per "
                "record plus re-homed experts, GPU to GPU or loaded from host memory.\n",
                tsim_traffic_level_name(t->level),
                t->level == TSIM_TRAFFIC_NODE ? "traffic_inter_before/after summed" : "off-diagonal",
                tsim_traffic_level_name(t->level));
    return 0;
}
