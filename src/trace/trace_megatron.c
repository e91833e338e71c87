/* Megatron-LM router traces (--moe-routing-trace-path DIR): one JSON Lines
 * file per source rank, router_trace_rank{N}.jsonl, one line per router call
 * {"step", "stage", "block", "layer", "rank", "num_tokens", "topk",
 * "top_indices": [[e, ...], ...]}.
 *
 * The files are read side by side, one line from each per record: the k-th
 * call kept (of the chosen block) on every rank is the same router call, so
 * all ranks must agree on its step and layer. Within a step, the i-th call of
 * layer L is microbatch i of that step; microbatches are numbered on across
 * steps. counts[N][e] is how often rank N's tokens chose expert e.
 *
 * Without --experts, a first pass over the files finds the largest expert id
 * (E is it + 1, rounded up to a multiple of the ranks); the records come from
 * a second pass. Each line is parsed once, straight into counts, by a strict
 * parser of this one shape; anything it does not take is checked by the
 * RFC 8259 checker so that a message says what is wrong. Not cJSON (issue
 * 21): cJSON took about 215 ms to parse one 1.6 MB rank file of 2,048 tokens
 * x topk 8 per line, once; this reader read two such files, twice, in 72 ms,
 * about 12x faster. */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "json_strict.h"
#include "topology.h"
#include "trace_megatron_internal.h"

static const char *block_name(int b)
{
    return b == BLOCK_MTP ? "mtp" : "decoder";
}

/* The next call of the chosen block in file f: 1, 0 at its end, or an error.
 * row (when not NULL) must hold E zeros; it receives the counts. */
static int next_call(tsim_reader *r, megatron *m, int rank, int64_t *row, call *k, long *lineno, int64_t *other,
                     tsim_error *err)
{
    rank_file *f = &m->files[rank];
    for (;;) {
        char *line;
        size_t len;
        int rc = tsim_gzline_next(&f->lines, &line, &len, err);
        if (rc != 1)
            return rc;
        if (tsim_line_blank(line))
            continue;
        line_ctx c = {r, f, line, len, f->lines.line, err};
        *lineno = f->lines.line;
        /* Count into row only when the call is kept: parse into it, undo otherwise. */
        if ((rc = tsim_megatron_parse_call(&c, m, row, k)))
            return rc;
        k->text = line;
        if (k->has_rank && k->rank != rank)
            return tsim_megatron_line_fail(&c, 0, "\"rank\" is %lld, but the file is rank %d's", (long long)k->rank,
                                           rank);
        bool stage_ok = !k->stage[0] || strcmp(k->stage, "pre_dispatch") == 0;
        if (k->block == m->block && stage_ok) {
            if (k->bad_id >= 0)
                return tsim_megatron_line_fail(&c, k->bad_at,
                                               "\"top_indices\" row %lld: expert id %lld is out of range 0..%lld%s",
                                               (long long)k->bad_row, (long long)k->bad_id, (long long)m->experts - 1,
                                               m->experts_given ? " (--experts)" : "");
            if (k->dup_id >= 0)
                return tsim_megatron_line_fail(&c, k->dup_at,
                                 "\"top_indices\" row %lld: expert id %lld appears twice (a token picks topk distinct "
                                 "experts)",
                                 (long long)k->dup_row, (long long)k->dup_id);
            return 1;
        }
        if (!stage_ok && m->quiet) {
            m->dirty = true;
        } else if (!stage_ok) {
            bool warned = false;
            for (int i = 0; i < m->n_warned_stage; i++)
                warned = warned || strcmp(m->warned_stage[i], k->stage) == 0;
            if (!warned && m->n_warned_stage < MAX_STAGE_WARNINGS) {
                snprintf(m->warned_stage[m->n_warned_stage++], sizeof m->warned_stage[0], "%s", k->stage);
                if (tsim_reader_warn(r,
                                     "%s:%ld: router calls of stage \"%s\" are skipped (only \"pre_dispatch\" is read)",
                                     f->path, *lineno, k->stage))
                    return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
            }
        }
        if (other)
            (*other)++;
        if (row && m->experts > 0)
            memset(row, 0, sizeof *row * (size_t)m->experts);
    }
}

static void close_files(megatron *m)
{
    for (int i = 0; i < m->ranks; i++)
        if (m->files[i].open) {
            tsim_gzline_close(&m->files[i].lines);
            m->files[i].open = false;
        }
}

static int open_file(megatron *m, int rank, tsim_error *err)
{
    rank_file *f = &m->files[rank];
    int rc = tsim_gzline_open(&f->lines, f->path, f->gz, tsim_trace_max_line(), err);
    if (rc)
        return rc;
    f->open = true;
    return TSIM_OK;
}

/* The calls of `layer` so far in this step, or NULL out of memory. */
static int64_t *layer_calls(megatron *m, int64_t layer)
{
    if ((m->used + 1) * 2 > m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 256;
        layer_slot *fresh = calloc(cap, sizeof *fresh);
        if (!fresh)
            return NULL;
        for (size_t i = 0; i < m->cap; i++) {
            if (m->slots[i].gen != m->gen)
                continue;
            size_t j = (size_t)((uint64_t)m->slots[i].layer * UINT64_C(0x9E3779B97F4A7C15) >> 20) & (cap - 1);
            while (fresh[j].gen == m->gen)
                j = (j + 1) & (cap - 1);
            fresh[j] = m->slots[i];
        }
        free(m->slots);
        m->slots = fresh;
        m->cap = cap;
    }
    size_t j = (size_t)((uint64_t)layer * UINT64_C(0x9E3779B97F4A7C15) >> 20) & (m->cap - 1);
    while (m->slots[j].gen == m->gen) {
        if (m->slots[j].layer == layer)
            return &m->slots[j].calls;
        j = (j + 1) & (m->cap - 1);
    }
    m->slots[j] = (layer_slot){layer, 0, m->gen};
    m->used++;
    return &m->slots[j].calls;
}

/* Remembers this step's call of `layer` with hash h first seen at `line`.
 * Returns 1 with *earlier set when the step already had it, 0 when it is
 * new, -1 out of memory. */
static int remember_call(megatron *m, int64_t layer, uint64_t h, long line, long *earlier)
{
    const uint64_t key = h ^ ((uint64_t)layer * UINT64_C(0xC2B2AE3D27D4EB4F));
    if ((m->calls_used + 1) * 2 > m->calls_cap) {
        size_t cap = m->calls_cap ? m->calls_cap * 2 : 256;
        call_slot *fresh = calloc(cap, sizeof *fresh);
        if (!fresh)
            return -1;
        for (size_t i = 0; i < m->calls_cap; i++) {
            const call_slot *o = &m->calls_seen[i];
            if (o->gen != m->gen)
                continue;
            size_t j = (size_t)((o->hash ^ ((uint64_t)o->layer * UINT64_C(0xC2B2AE3D27D4EB4F))) >> 17) & (cap - 1);
            while (fresh[j].gen == m->gen)
                j = (j + 1) & (cap - 1);
            fresh[j] = *o;
        }
        free(m->calls_seen);
        m->calls_seen = fresh;
        m->calls_cap = cap;
    }
    size_t j = (size_t)(key >> 17) & (m->calls_cap - 1);
    while (m->calls_seen[j].gen == m->gen) {
        if (m->calls_seen[j].layer == layer && m->calls_seen[j].hash == h) {
            *earlier = m->calls_seen[j].line;
            return 1;
        }
        j = (j + 1) & (m->calls_cap - 1);
    }
    m->calls_seen[j] = (call_slot){layer, h, line, m->gen};
    m->calls_used++;
    return 0;
}

/* Without a layout, at the end: adjacent ranks in groups of t that routed the
 * same tokens in every call are tensor parallel ranks without sequence
 * parallelism, which one EP group of all files would count t times. */
static int check_same_tokens(tsim_reader *r, megatron *m, tsim_error *err)
{
    if (m->layout || m->ranks < 2 || !m->any_tokens)
        return TSIM_OK;
    for (int t = 2; t <= m->ranks; t++) {
        if (m->ranks % t != 0)
            continue;
        bool fits = true;
        for (int j = 1; j < m->ranks && fits; j++)
            fits = m->same_prev[j] == (j % t != 0);
        if (!fits)
            continue;
        char groups[64];
        if (t == m->ranks)
            snprintf(groups, sizeof groups, "all %d ranks", t);
        else
            snprintf(groups, sizeof groups, "ranks 0..%d (and each next %d ranks)", t - 1, t);
        return tsim_error_set(err, TSIM_E_INPUT,
                              "%s: %s route the same tokens in every call: looks like tensor parallelism tp=%d "
                              "without sequence parallelism, which one EP group of %d ranks would count %d times; "
                              "give --megatron-parallel tp=%d,pp=P,ep=E,tokens=same",
                              r->path, groups, t, m->ranks, t, t);
    }
    return TSIM_OK;
}

/* A rank file's calls of the chosen block as one hash of their (step,
 * layer) sequence; false when the file cannot be read to the end. */
static bool call_signature(tsim_reader *r, megatron *m, int rank, uint64_t *sig)
{
    tsim_gzline lines;
    tsim_error e;
    const rank_file *f = &m->files[rank];
    if (tsim_gzline_open(&lines, f->path, f->gz, tsim_trace_max_line(), &e))
        return false;
    uint64_t h = 7;
    int rc;
    char *line;
    size_t len;
    while ((rc = tsim_gzline_next(&lines, &line, &len, &e)) == 1) {
        if (tsim_line_blank(line))
            continue;
        line_ctx c = {r, f, line, len, lines.line, &e};
        call k;
        if (tsim_megatron_parse_call(&c, m, NULL, &k)) {
            rc = -1;
            break;
        }
        if (k.block != m->block || (k.stage[0] && strcmp(k.stage, "pre_dispatch") != 0))
            continue;
        h = (h ^ (uint64_t)k.step) * UINT64_C(0x9E3779B97F4A7C15);
        h = (h ^ (uint64_t)k.layer) * UINT64_C(0xBF58476D1CE4E5B9);
        h ^= h >> 31;
    }
    tsim_gzline_close(&lines);
    *sig = h;
    return rc == 0;
}

/* Without a layout, when ranks disagree on their calls: the hint. Ranks
 * that form p > 1 contiguous equal blocks, each agreeing within itself, are
 * pipeline stages (each numbers its layers from 0; stages whose layers have
 * routers differently record other calls). Blocks of one rank are
 * ambiguous and keep the plain hint. */
static void disagree_hint(tsim_reader *r, megatron *m, char *buf, size_t cap)
{
    /* with a layout the files were placed as told: no hint */
    buf[0] = '\0';
    if (m->layout)
        return;
    snprintf(buf, cap, " (pipeline or tensor parallelism? give --megatron-parallel tp=T,pp=P,ep=E)");
    uint64_t *sig = calloc((size_t)m->ranks, sizeof *sig);
    if (!sig)
        return;
    int runs = 1;
    bool ok = true;
    for (int g = 0; g < m->ranks && ok; g++) {
        ok = call_signature(r, m, g, &sig[g]);
        if (ok && g > 0 && sig[g] != sig[g - 1])
            runs++;
    }
    /* blocks of one rank are no evidence: every rank could just differ */
    if (ok && runs > 1 && m->ranks % runs == 0 && m->ranks / runs > 1) {
        const int size = m->ranks / runs;
        for (int g = 1; g < m->ranks && ok; g++)
            ok = (sig[g] != sig[g - 1]) == (g % size == 0);
        if (ok)
            snprintf(buf, cap,
                     " (ranks 0..%d, %d..%d%s each agree among themselves: looks like pipeline parallelism with "
                     "pp=%d, each stage numbering its layers from 0; give --megatron-parallel tp=T,pp=%d,ep=E and "
                     "--num-layers N)",
                     size - 1, size, 2 * size - 1, runs > 2 ? ", ..." : "", runs, runs);
    }
    free(sig);
}

/* Every token picks the same number of experts: on every rank of a call
 * (first_picks: rank 0's), and in every call. picks < 0: the call has no
 * tokens and no "topk", so it says nothing. */
static int check_topk(megatron *m, int rank, long lineno, int64_t picks, int64_t first_picks, long first_line,
                      tsim_error *err)
{
    if (picks < 0)
        return TSIM_OK;
    if (rank != m->unit_files[0] && first_picks >= 0 && picks != first_picks)
        return tsim_error_set(err, TSIM_E_INPUT,
                              "%s:%ld: tokens pick %lld experts, but in the same call on rank %d (%s:%ld) they pick "
                              "%lld: every rank uses the same topk",
                              m->files[rank].path, lineno, (long long)picks, m->unit_files[0],
                              m->files[m->unit_files[0]].path, first_line, (long long)first_picks);
    if (m->topk_seen < 0) {
        m->topk_seen = picks;
        m->topk_rank = rank;
        m->topk_line = lineno;
    } else if (picks != m->topk_seen) {
        return tsim_error_set(err, TSIM_E_INPUT,
                              "%s:%ld: tokens pick %lld experts, but at %s:%ld they pick %lld: every router call uses "
                              "the same topk",
                              m->files[rank].path, lineno, (long long)picks, m->files[m->topk_rank].path, m->topk_line,
                              (long long)m->topk_seen);
    }
    return TSIM_OK;
}

/* The next call of unit file slot i (row i / per_row) into row: the first
 * file of a row counts into it, the others into m->add and are summed. */
static int unit_call(tsim_reader *r, megatron *m, int i, int64_t *row, call *c, long *lineno, tsim_error *err)
{
    const int f = m->unit_files[i];
    if (i % m->per_row == 0)
        return next_call(r, m, f, row, c, lineno, NULL, err);
    memset(m->add, 0, sizeof *m->add * (size_t)m->experts);
    int rc = next_call(r, m, f, row ? m->add : NULL, c, lineno, NULL, err);
    for (int64_t e = 0; rc == 1 && row && e < m->experts; e++)
        row[e] += m->add[e];
    return rc;
}

/* Two "top_indices" texts hold the same ids in the same order: equal once
 * white space is skipped (both parsed already: plain integers only). */
static bool same_ids_text(const char *a, size_t an, const char *b, size_t bn)
{
    size_t i = 0, j = 0;
    for (;;) {
        while (i < an && (a[i] == ' ' || a[i] == '\t' || a[i] == '\r' || a[i] == '\n'))
            i++;
        while (j < bn && (b[j] == ' ' || b[j] == '\t' || b[j] == '\r' || b[j] == '\n'))
            j++;
        if (i == an || j == bn)
            return i == an && j == bn;
        if (a[i++] != b[j++])
            return false;
    }
}

/* The hashes say `first` repeats line `earlier` of the unit's first file:
 * confirms it on that file's full line, read again (rare: only a repeat
 * found by hash comes here). */
static bool confirm_repeat(tsim_reader *r, megatron *m, const call *first, long earlier)
{
    const rank_file *f = &m->files[m->unit_files[0]];
    tsim_gzline lines;
    tsim_error e;
    if (tsim_gzline_open(&lines, f->path, f->gz, tsim_trace_max_line(), &e))
        return true; /* it was readable a moment ago: trust the hashes */
    char *line;
    size_t len;
    bool same = true;
    while (tsim_gzline_next(&lines, &line, &len, &e) == 1) {
        if (lines.line < earlier)
            continue;
        line_ctx c = {r, f, line, len, lines.line, &e};
        call k;
        if (tsim_megatron_parse_call(&c, m, NULL, &k) == 0)
            same = k.step == first->step && k.layer == first->layer &&
                   same_ids_text(line + k.ids_at, k.ids_end - k.ids_at, first->text + first->ids_at,
                                 first->ids_end - first->ids_at);
        break;
    }
    tsim_gzline_close(&lines);
    return same;
}

/* A call with tokens that repeats an earlier call of its step and layer on
 * every file, id for id: activation recompute running the router again in
 * the backward pass (Megatron-Core's forward hook fires again, with the same
 * step). Read as one more microbatch it would count the tokens twice. Also
 * notes, without a layout, which adjacent files route the same tokens. */
static int check_recomputed(tsim_reader *r, megatron *m, const call *first, long first_line, tsim_error *err)
{
    const int slots = m->rows * m->per_row;
    uint64_t h = 0;
    for (int i = 0; i < slots; i++) {
        h = (h ^ m->hashes[i]) * UINT64_C(0x9E3779B97F4A7C15);
        h ^= h >> 31;
        if (!m->layout && i > 0 && m->hashes[i] != m->hashes[i - 1])
            m->same_prev[i] = false;
    }
    m->any_tokens = true;
    long earlier = 0;
    int found = remember_call(m, first->layer, h, first_line, &earlier);
    if (found < 0)
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    if (found == 0 || !confirm_repeat(r, m, first, earlier))
        return TSIM_OK;
    return tsim_error_set(err, TSIM_E_INPUT,
                          "%s:%ld: step %lld, layer %lld repeats the call at line %ld id for id, on all %d rank files "
                          "read with it: a recomputed router call (activation recompute runs the router again in the "
                          "backward pass), which would count its tokens twice; not handled yet: record with "
                          "recompute off for the MoE layers, or drop the repeated lines",
                          m->files[m->unit_files[0]].path, first_line, (long long)first->step,
                          (long long)first->layer, earlier, slots);
}

/* The next record of the current unit: 1, or 0 at its end. */
static int unit_next(tsim_reader *r, megatron *m, tsim_raw_record *raw, tsim_error *err)
{
    const size_t E = (size_t)m->experts;
    const int slots = m->rows * m->per_row;
    const char *p0 = m->files[m->unit_files[0]].path;
    char hint[320] = "";
    int64_t tokens = 0;
    call first, k;
    long first_line = 0;
    int64_t first_picks = -1;
    int rc;
    tsim_reader_begin_counts(r);
    for (int i = 0; i < slots; i++) {
        const int row_i = i / m->per_row, f = m->unit_files[i];
        int64_t *row = tsim_reader_row(r, row_i);
        if (i % m->per_row == 0)
            memset(row, 0, sizeof *row * E);
        long lineno = 0;
        call *c = i == 0 ? &first : &k;
        rc = unit_call(r, m, i, row, c, &lineno, err);
        if (rc < 0 || rc > 1)
            return rc;
        if (rc == 0) {
            if (i == 0) {
                /* the unit's first file is done: so must every other file be */
                for (int o = 1; o < slots; o++) {
                    long ol = 0;
                    rc = next_call(r, m, m->unit_files[o], NULL, &k, &ol, NULL, err);
                    if (rc < 0 || rc > 1)
                        return rc;
                    if (rc == 1) {
                        disagree_hint(r, m, hint, sizeof hint);
                        return tsim_error_set(err, TSIM_E_INPUT,
                                              "%s:%ld: a call of step %lld, layer %lld that %s does not have (it ends "
                                              "after %lld calls): every rank must record the same calls%s",
                                              m->files[m->unit_files[o]].path, ol, (long long)k.step,
                                              (long long)k.layer, p0, (long long)m->kept, hint);
                    }
                }
                return check_same_tokens(r, m, err);
            }
            disagree_hint(r, m, hint, sizeof hint);
            return tsim_error_set(err, TSIM_E_INPUT,
                                  "%s: ends after %lld calls, but %s:%ld has another (step %lld, layer %lld): every "
                                  "rank must record the same calls%s",
                                  m->files[f].path, (long long)m->kept, p0, first_line, (long long)first.step,
                                  (long long)first.layer, hint);
        }
        if (i == 0) {
            first_line = lineno;
        } else if (k.step != first.step || k.layer != first.layer) {
            disagree_hint(r, m, hint, sizeof hint);
            return tsim_error_set(err, TSIM_E_INPUT,
                                  "%s:%ld: step %lld, layer %lld, but the same call on rank %d (%s:%ld) is step %lld, "
                                  "layer %lld: every rank must record the same calls in the same order%s",
                                  m->files[f].path, lineno, (long long)k.step, (long long)k.layer,
                                  m->unit_files[0], p0, first_line, (long long)first.step, (long long)first.layer,
                                  hint);
        }
        const int64_t picks = c->rows > 0 ? c->row_len : c->has_topk ? c->topk : -1;
        if ((rc = check_topk(m, f, lineno, picks, first_picks, first_line, err)))
            return rc;
        if (i == 0)
            first_picks = picks;
        m->hashes[i] = c->ids_hash;
        tokens += c->rows;
        if (i % m->per_row == m->per_row - 1)
            tsim_reader_row_done(r);
    }
    if (m->layout && m->block == BLOCK_DECODER && first.layer >= m->layers_per_stage)
        return tsim_error_set(err, TSIM_E_INPUT,
                              "%s:%ld: layer %lld, but a stage of --num-layers / pp holds %lld layers: virtual "
                              "pipeline stages and uneven layouts are not handled yet",
                              p0, first_line, (long long)first.layer, (long long)m->layers_per_stage);
    /* microbatch: the i-th call of this layer within the step */
    if (!m->have_step || first.step != m->step) {
        if (m->have_step && first.step < m->step)
            return tsim_error_set(err, TSIM_E_INPUT,
                                  "%s:%ld: step %lld comes after step %lld: calls must be in step order", p0,
                                  first_line, (long long)first.step, (long long)m->step);
        m->mb_base += m->step_calls;
        m->have_step = true;
        m->step = first.step;
        m->step_calls = 0;
        m->gen++; /* empties the per-layer counters and the calls seen */
        m->used = 0;
        m->calls_used = 0;
    }
    if (tokens > 0 && (rc = check_recomputed(r, m, &first, first_line, err)))
        return rc;
    int64_t *calls = layer_calls(m, first.layer);
    if (!calls)
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    int64_t i = (*calls)++;
    if (i + 1 > m->step_calls)
        m->step_calls = i + 1;
    m->kept++;
    raw->microbatch = m->mb_base + i;
    raw->layer = m->layer_offset + first.layer;
    raw->line = first_line;
    raw->kind = REC_COUNTS;
    if (m->tag[0])
        snprintf(raw->tag, sizeof raw->tag, "%s", m->tag);
    return 1;
}

/* Opens the files of unit m->unit, after closing the last unit's. */
static int begin_unit(megatron *m, tsim_error *err)
{
    close_files(m);
    m->have_step = false;
    m->mb_base = m->step_calls = 0;
    m->gen++;
    m->used = 0;
    m->calls_used = 0;
    m->kept = 0;
    if (!m->layout) {
        for (int i = 0; i < m->ranks; i++)
            m->unit_files[i] = i;
    } else {
        const int group = m->first_group + m->unit / m->lay.pp, stage = m->unit % m->lay.pp;
        for (int g = 0; g < m->ranks; g++) {
            const tsim_megatron_place *p = &m->places[g];
            if (p->group == group && p->stage == stage && p->etp_rank < m->per_row)
                m->unit_files[p->ep_rank * m->per_row + p->etp_rank] = g;
        }
        m->layer_offset = m->block == BLOCK_DECODER ? (int64_t)stage * m->layers_per_stage : 0;
        if (m->groups > 1 && m->first_group == 0 && m->units > m->lay.pp)
            snprintf(m->tag, sizeof m->tag, "ep-group-%d", group);
    }
    for (int i = 0; i < m->rows * m->per_row; i++) {
        int rc = open_file(m, m->unit_files[i], err);
        if (rc)
            return rc;
    }
    return TSIM_OK;
}

static int megatron_next(tsim_reader *r, tsim_raw_record *raw, tsim_error *err)
{
    megatron *m = r->ext;
    for (;;) {
        int rc = unit_next(r, m, raw, err);
        if (rc != 0)
            return rc;
        if (++m->unit >= m->units)
            return 0;
        if ((rc = begin_unit(m, err)))
            return rc;
    }
}

static void megatron_close(tsim_reader *r)
{
    megatron *m = r->ext;
    if (!m)
        return;
    if (m->files) {
        close_files(m);
        for (int i = 0; i < m->ranks; i++)
            free(m->files[i].path);
        free(m->files);
    }
    free(m->slots);
    free(m->seen);
    free(m->unit_files);
    free(m->hashes);
    free(m->same_prev);
    free(m->calls_seen);
    free(m->places);
    free(m->add);
    free(m);
    r->ext = NULL;
}

static void megatron_progress(const tsim_reader *r, int64_t *bytes, int64_t *done, int64_t *total)
{
    const megatron *m = r->ext;
    *bytes = 0;
    *done = 0;
    for (int i = 0; i < m->ranks; i++)
        if (m->files[i].open) {
            *bytes += m->files[i].lines.bytes;
            *done += tsim_gzline_offset(&m->files[i].lines);
        }
    *total = m->total_size;
}

/* router_trace_rank{N}.jsonl or .jsonl.gz: N; -1 when the name is no rank
 * file's; -2 when it spells a rank with leading zeros (rank01), which
 * Megatron never writes. */
static long rank_of(const char *name, bool *gz)
{
    size_t pl = strlen(PREFIX);
    if (strncmp(name, PREFIX, pl) != 0)
        return -1;
    const char *p = name + pl;
    if (*p < '0' || *p > '9')
        return -1;
    bool leading_zero = *p == '0' && p[1] >= '0' && p[1] <= '9';
    long n = 0;
    while (*p >= '0' && *p <= '9' && n <= TSIM_MAX_RANKS)
        n = n * 10 + (*p++ - '0');
    if (strcmp(p, ".jsonl") == 0)
        *gz = false;
    else if (strcmp(p, ".jsonl.gz") == 0)
        *gz = true;
    else
        return -1;
    return leading_zero ? -2 : n;
}

/* Finds the rank files: 0..N-1, all present, each once. */
static int find_files(tsim_reader *r, megatron *m, tsim_error *err)
{
    DIR *d = opendir(r->path);
    if (!d)
        return tsim_error_set(err, TSIM_E_INPUT, "%s: cannot open the directory: %s", r->path, strerror(errno));
    char **names = calloc(TSIM_MAX_RANKS, sizeof *names);
    bool *gz = calloc(TSIM_MAX_RANKS, sizeof *gz);
    if (!names || !gz) {
        free(names);
        free(gz);
        closedir(d);
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    }
    int rc = TSIM_OK;
    long hi = -1;
    /* names like rank files: [0] with leading zeros (rank01), [1] others */
    char odd[2][256];
    long odd_n[2] = {0, 0};
    struct dirent *e;
    while (!rc && (e = readdir(d))) {
        bool is_gz = false;
        long n = rank_of(e->d_name, &is_gz);
        if (n < 0) {
            /* readdir's order is the file system's: name the first in byte order */
            int kind = n == -2 ? 0 : strncmp(e->d_name, PREFIX, strlen(PREFIX)) == 0 ? 1 : -1;
            if (kind >= 0 && (odd_n[kind]++ == 0 || strcmp(e->d_name, odd[kind]) < 0))
                snprintf(odd[kind], sizeof odd[kind], "%s", e->d_name);
            continue;
        }
        if (n >= TSIM_MAX_RANKS) {
            rc = tsim_error_set(err, TSIM_E_INPUT, "%s: %s: rank above the limit of %d", r->path, e->d_name,
                                TSIM_MAX_RANKS - 1);
            break;
        }
        if (names[n]) {
            rc = tsim_error_set(err, TSIM_E_INPUT, "%s: both %s and %s: keep one", r->path, names[n], e->d_name);
            break;
        }
        names[n] = strdup(e->d_name);
        gz[n] = is_gz;
        if (!names[n])
            rc = tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
        if (n > hi)
            hi = n;
    }
    closedir(d);
    if (!rc && odd_n[0])
        rc = tsim_error_set(err, TSIM_E_INPUT,
                            "%s: %s%s: a rank file name with leading zeros (Megatron writes " PREFIX
                            "{N}.jsonl, N without them): rename it",
                            r->path, odd[0], odd_n[0] > 1 ? " and others" : "");
    if (!rc && odd_n[1] &&
        tsim_reader_warn(r, "%s: %s%s skipped: not a rank file name (" PREFIX "{N}.jsonl or .jsonl.gz)", r->path,
                         odd[1], odd_n[1] > 1 ? " and others like it" : ""))
        rc = tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    if (!rc && hi < 0)
        rc = tsim_error_set(err, TSIM_E_INPUT,
                            "%s: a directory without router_trace_rank{N}.jsonl files (the trace directory Megatron's "
                            "--moe-routing-trace-path writes)",
                            r->path);
    for (long n = 0; !rc && n <= hi; n++)
        if (!names[n])
            rc = tsim_error_set(err, TSIM_E_INPUT,
                                "%s: " PREFIX "%ld.jsonl is missing: ranks 0..%ld must all be there (found rank %ld)",
                                r->path, n, hi, hi);
    if (!rc) {
        m->ranks = (int)(hi + 1);
        m->files = calloc((size_t)m->ranks, sizeof *m->files);
        if (!m->files)
            rc = tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
        size_t dl = strlen(r->path);
        bool slash = dl > 0 && r->path[dl - 1] == '/';
        for (int n = 0; !rc && n < m->ranks; n++) {
            size_t need = dl + strlen(names[n]) + 2;
            m->files[n].path = malloc(need);
            if (!m->files[n].path) {
                rc = tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
                break;
            }
            snprintf(m->files[n].path, need, "%s%s%s", r->path, slash ? "" : "/", names[n]);
            m->files[n].gz = gz[n];
            struct stat st;
            if (stat(m->files[n].path, &st) == 0 && S_ISREG(st.st_mode))
                m->total_size += (int64_t)st.st_size;
        }
    }
    for (int n = 0; n < TSIM_MAX_RANKS; n++)
        free(names[n]);
    free(names);
    free(gz);
    return rc;
}

/* What the first pass learns from one rank file. */
typedef struct {
    int64_t max_id, max_layer, kept, other, topk;
    bool dirty; /* an error or a warning: scanned again in order */
} rank_scan;

typedef struct {
    tsim_reader *r;
    const megatron *m;
    rank_scan *out;
    int first, step;
} scan_job;

/* A quiet scan of every step-th rank file from `first`, on its own thread
 * with its own scratch: a file with anything to say (an error, a warning)
 * is only marked dirty, and the caller scans it again in rank order, so
 * messages and their order do not depend on the threads. */
static void *scan_thread(void *arg)
{
    scan_job *j = arg;
    megatron mt = *j->m;
    mt.quiet = true;
    mt.row_stamp = 0;
    mt.seen = calloc((size_t)TSIM_MAX_EXPERTS + 1, sizeof *mt.seen);
    for (int rank = j->first; rank < mt.ranks; rank += j->step) {
        rank_scan *o = &j->out[rank];
        *o = (rank_scan){-1, -1, 0, 0, 0, !mt.seen};
        tsim_error err;
        if (o->dirty || open_file(&mt, rank, &err)) {
            o->dirty = true;
            continue;
        }
        mt.dirty = false;
        call k;
        long lineno;
        int rc;
        while ((rc = next_call(j->r, &mt, rank, NULL, &k, &lineno, &o->other, &err)) == 1) {
            o->kept++;
            if (k.layer > o->max_layer)
                o->max_layer = k.layer;
            if (k.max_id > o->max_id)
                o->max_id = k.max_id;
            if (!o->topk && k.rows > 0)
                o->topk = k.row_len;
        }
        o->dirty = rc != 0 || mt.dirty;
        tsim_gzline_close(&mt.files[rank].lines);
        mt.files[rank].open = false;
    }
    free(mt.seen);
    return NULL;
}

/* The first pass over rank files: on up to 8 threads (one per online CPU)
 * when there are several files; a file the threads could not read quietly
 * comes back dirty. */
static void scan_parallel(tsim_reader *r, megatron *m, rank_scan *out)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    int threads = cpus > 8 ? 8 : cpus < 1 ? 1 : (int)cpus;
    if (threads > m->ranks)
        threads = m->ranks;
    for (int rank = 0; rank < m->ranks; rank++)
        out[rank].dirty = true;
    if (threads < 2)
        return;
    pthread_t tid[8];
    scan_job jobs[8];
    int started = 0;
    for (int t = 0; t < threads; t++) {
        jobs[t] = (scan_job){r, m, out, t, threads};
        if (pthread_create(&tid[t], NULL, scan_thread, &jobs[t]) != 0)
            break;
        started++;
    }
    for (int t = 0; t < started; t++)
        pthread_join(tid[t], NULL);
    /* ranks of threads that never started stay dirty: scanned in order */
    if (started < threads)
        for (int rank = 0; rank < m->ranks; rank++)
            if (rank % threads >= started)
                out[rank].dirty = true;
}

/* The first pass: the largest expert id and the ids per token. */
static int scan_experts(tsim_reader *r, megatron *m, tsim_error *err)
{
    int64_t max_id = -1, kept = 0, other = 0;
    rank_scan *quick = calloc((size_t)m->ranks, sizeof *quick);
    if (!quick)
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    scan_parallel(r, m, quick);
    for (int rank = 0; rank < m->ranks; rank++) {
        if (!quick[rank].dirty) {
            const rank_scan *o = &quick[rank];
            kept += o->kept;
            other += o->other;
            if (o->max_layer > m->max_layer)
                m->max_layer = o->max_layer;
            if (o->max_id > max_id)
                max_id = o->max_id;
            if (!m->topk && o->topk)
                m->topk = o->topk;
            continue;
        }
        int rc = open_file(m, rank, err);
        if (rc) {
            free(quick);
            return rc;
        }
        call k;
        long lineno;
        while ((rc = next_call(r, m, rank, NULL, &k, &lineno, &other, err)) == 1) {
            kept++;
            if (k.layer > m->max_layer)
                m->max_layer = k.layer;
            if (k.max_id > max_id)
                max_id = k.max_id;
            if (!m->topk && k.rows > 0)
                m->topk = k.row_len;
        }
        close_files(m);
        if (rc) {
            free(quick);
            return rc;
        }
    }
    free(quick);
    if (kept == 0)
        return tsim_error_set(err, TSIM_E_INPUT, "%s: no router calls of block \"%s\"%s", r->path,
                              block_name(m->block),
                              other ? m->block == BLOCK_DECODER ? " (there are others: --block mtp?)"
                                                                : " (there are others: --block decoder?)"
                                    : "");
    if (max_id < 0)
        return tsim_error_set(err, TSIM_E_INPUT,
                              "%s: the router calls hold no expert ids, so the number of experts is unknown: give "
                              "--experts N",
                              r->path);
    int64_t E = (max_id + 1 + m->rows - 1) / m->rows * m->rows;
    if (E > TSIM_MAX_EXPERTS)
        return tsim_error_set(err, TSIM_E_INPUT,
                              "%s: %lld experts (the largest id %lld + 1, rounded up to a multiple of %d ranks) is "
                              "above the limit of %d",
                              r->path, (long long)E, (long long)max_id, m->rows, TSIM_MAX_EXPERTS);
    if (!m->experts_given)
        m->experts = E;
    return TSIM_OK;
}

/* With --experts: only the first kept call of rank 0, for topk. */
static int peek_topk(tsim_reader *r, megatron *m, tsim_error *err)
{
    int rc = open_file(m, 0, err);
    if (rc)
        return rc;
    call k;
    long lineno;
    int64_t other = 0;
    rc = next_call(r, m, 0, NULL, &k, &lineno, &other, err);
    close_files(m);
    if (rc < 0 || rc > 1)
        return rc;
    if (rc == 0)
        return tsim_error_set(err, TSIM_E_INPUT, "%s: no router calls of block \"%s\" in %s%s", r->path,
                              block_name(m->block), m->files[0].path,
                              other ? m->block == BLOCK_DECODER ? " (there are others: --block mtp?)"
                                                                : " (there are others: --block decoder?)"
                                    : "");
    m->topk = k.rows > 0 ? k.row_len : k.topk;
    return TSIM_OK;
}

/* --megatron-parallel: where every rank file sits, and the units to read. */
static int setup_layout(tsim_reader *r, megatron *m, const tsim_read_options *opts, tsim_error *err)
{
    int rc = tsim_megatron_layout_parse(opts->megatron_parallel, &m->lay, err);
    if (rc)
        return rc;
    m->places = calloc((size_t)m->ranks, sizeof *m->places);
    if (!m->places)
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    if ((rc = tsim_megatron_layout_map(&m->lay, m->ranks, m->places, &m->groups, err)))
        return rc;
    m->layout = true;
    m->rows = m->lay.ep;
    m->per_row = m->lay.tp_same ? 1 : m->lay.etp;
    m->units = m->groups * m->lay.pp;
    if (opts->ep_group > 0) {
        if (opts->ep_group > m->groups)
            return tsim_error_set(err, TSIM_E_INPUT, "%s: --ep-group %d: the layout has %d expert data parallel "
                                  "group%s (0..%d)",
                                  r->path, opts->ep_group - 1, m->groups, m->groups == 1 ? "" : "s", m->groups - 1);
        m->first_group = opts->ep_group - 1;
        m->units = m->lay.pp;
    }
    if (opts->num_layers > 0) {
        if (opts->num_layers % m->lay.pp != 0)
            return tsim_error_set(err, TSIM_E_INPUT,
                                  "%s: --num-layers %d is not divisible by pp %d: uneven pipeline layouts are not "
                                  "handled yet",
                                  r->path, opts->num_layers, m->lay.pp);
        m->layers_per_stage = opts->num_layers / m->lay.pp;
    }
    return TSIM_OK;
}

int tsim_megatron_open(tsim_reader *r, const tsim_read_options *opts, tsim_error *err)
{
    megatron *m = calloc(1, sizeof *m);
    if (!m)
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    r->ext = m;
    r->ext_close = megatron_close;
    r->ext_progress = megatron_progress;
    m->block = opts && opts->block && strcmp(opts->block, "mtp") == 0 ? BLOCK_MTP : BLOCK_DECODER;
    m->gen = 1; /* calloc'd slots (generation 0) count as empty */
    m->topk_seen = -1;
    m->seen = calloc((size_t)TSIM_MAX_EXPERTS + 1, sizeof *m->seen);
    if (!m->seen)
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    m->max_layer = -1;
    int rc = find_files(r, m, err);
    if (rc)
        return rc;
    m->rows = m->ranks;
    m->per_row = 1;
    m->units = 1;
    if (opts && opts->megatron_parallel && (rc = setup_layout(r, m, opts, err)))
        return rc;
    m->unit_files = calloc((size_t)m->rows * (size_t)m->per_row, sizeof *m->unit_files);
    m->hashes = calloc((size_t)m->rows * (size_t)m->per_row, sizeof *m->hashes);
    m->same_prev = malloc((size_t)m->ranks * sizeof *m->same_prev);
    if (m->same_prev)
        for (int i = 0; i < m->ranks; i++)
            m->same_prev[i] = true;
    if (!m->unit_files || !m->hashes || !m->same_prev)
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    for (int i = 0; i < m->rows * m->per_row; i++)
        m->unit_files[i] = i; /* the first pass's check_topk names unit file 0 */
    if (opts && opts->experts > 0) {
        if (opts->experts % m->rows != 0)
            return tsim_error_set(err, TSIM_E_INPUT, "%s: --experts %d is not divisible by the %d %s of the trace",
                                  r->path, opts->experts, m->rows, m->layout ? "EP ranks" : "ranks");
        m->experts = opts->experts;
        m->experts_given = true;
        /* the layers per stage come from the first pass when not given */
        rc = m->layout && !m->layers_per_stage ? scan_experts(r, m, err) : peek_topk(r, m, err);
    } else {
        rc = scan_experts(r, m, err);
    }
    if (rc)
        return rc;
    if (m->layout && !m->layers_per_stage) {
        m->layers_per_stage = m->max_layer + 1;
        if (m->lay.pp > 1 &&
            tsim_reader_warn(r,
                             "%s: %lld layers per pipeline stage, from the largest layer id: give --num-layers N "
                             "if some layers have no router",
                             r->path, (long long)m->layers_per_stage))
            return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    }
    if ((int64_t)m->rows * m->experts > TSIM_MAX_CELLS)
        return tsim_error_set(err, TSIM_E_INPUT,
                              "%s: %d ranks x %lld experts is above the limit of %lld counts per record", r->path,
                              m->rows, (long long)m->experts, (long long)TSIM_MAX_CELLS);
    m->add = calloc((size_t)m->experts + 1, sizeof *m->add);
    if (!m->add)
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    if ((rc = begin_unit(m, err)))
        return rc;
    /* Nothing in the files tells pure EP from tensor or pipeline parallelism */
    if (!m->layout && m->ranks > 1 &&
        tsim_reader_warn(r,
                         "%s: the %d rank files are read as one EP group of %d ranks: under tensor or pipeline "
                         "parallelism give --megatron-parallel tp=T,pp=P,ep=E",
                         r->path, m->ranks, m->ranks))
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    r->hdr.experts = (int)m->experts;
    r->hdr.ep = m->rows;
    r->file_ep = m->rows;
    r->hdr.ranks_per_node = 8;
    r->hdr.topk = m->topk >= 1 && m->topk <= m->experts ? (int)m->topk : 0;
    char base[256];
    tsim_path_base(r->path, base, sizeof base);
    cJSON *meta = cJSON_CreateObject();
    if (!meta || !cJSON_AddStringToObject(meta, "source", "megatron") ||
        !cJSON_AddStringToObject(meta, "dir", base) ||
        !cJSON_AddStringToObject(meta, "block", block_name(m->block)) ||
        !cJSON_AddNumberToObject(meta, "ranks", m->ranks) ||
        (m->layout && (!cJSON_AddStringToObject(meta, "parallel", opts->megatron_parallel) ||
                       !cJSON_AddNumberToObject(meta, "layers_per_stage", (double)m->layers_per_stage)))) {
        cJSON_Delete(meta);
        return tsim_error_set(err, TSIM_E_INTERNAL, "out of memory");
    }
    r->hdr.meta = meta;
    r->next_raw = megatron_next;
    return TSIM_OK;
}
