/*
 * report_text.c: the human-readable comparison. Rows use the words PyTorch
 * users know: requested (what the program asked for), allocated (blocks
 * handed out, after rounding), reserved (what the allocator holds from the
 * device), reserved but unallocated (cached free blocks).
 *
 * Columns are headed by the configuration strings when they are short, else by
 * [1], [2], ... with a legend, so the table stays readable at 80+ columns.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "tools/readers/units.h"
#include "tools/report/report.h"

#define LABEL_W 30    /* width of the row-name column */
#define MAX_HEADER 26 /* longest configuration shown as a column header */
#define CELL 64       /* bytes per cell */

/* The outcome of the figures' run alone. */
static const char *outcome(const ga_replay_column_t *c)
{
    if (c->ooms_total == 0)
        return c->errors ? "fits (with errors)" : "fits";
    if (c->n_ooms > 0 && c->ooms[0].facts.cls == GA_OOM_FRAGMENTATION)
        return "OOM (fragmentation)";
    return "OOM (genuine)";
}

const char *ga_report_verdict(const ga_replay_column_t *c, char *buf, size_t len)
{
    if (c->create_status != GALLOC_OK) {
        snprintf(buf, len, "error");
        return buf;
    }
    if (!ga_replay_depends(c)) {
        snprintf(buf, len, "%s", outcome(c));
        return buf;
    }
    /* where the outcome of the widest part turns: the nearest part the other way */
    const ga_replay_part_t *m = &c->parts[c->main_part];
    bool fits = m->ooms == 0;
    char cap[32];
    for (size_t i = c->main_part + 1; !fits && i < c->n_parts; i++)
        if (c->parts[i].ooms == 0) {
            ga_units_format_size(c->parts[i].from, cap, sizeof(cap));
            snprintf(buf, len, "%s unless the cap >= %s", outcome(c), cap);
            return buf;
        }
    for (size_t i = c->main_part; fits && i-- > 0;)
        if (c->parts[i].ooms > 0) {
            ga_units_format_size(c->parts[i].to, cap, sizeof(cap));
            snprintf(buf, len, "fits unless the cap < %s", cap);
            return buf;
        }
    snprintf(buf, len, "%s, depending on the cap", outcome(c));
    return buf;
}

typedef void (*cell_fn)(const ga_replay_column_t *c, char *buf, size_t len);

static void c_bytes(int64_t v, char *b, size_t n)
{
    ga_units_format_bytes(v, b, n);
}
static void peak_req(const ga_replay_column_t *c, char *b, size_t n)
{
    c_bytes(c->stats.requested_bytes[GALLOC_STAT_ALL].peak, b, n);
}
static void peak_alloc(const ga_replay_column_t *c, char *b, size_t n)
{
    c_bytes(c->stats.allocated_bytes[GALLOC_STAT_ALL].peak, b, n);
}
static void peak_res(const ga_replay_column_t *c, char *b, size_t n)
{
    c_bytes(c->stats.reserved_bytes[GALLOC_STAT_ALL].peak, b, n);
}
static void ratio(const ga_replay_column_t *c, char *b, size_t n)
{
    int64_t req = c->stats.requested_bytes[GALLOC_STAT_ALL].peak;
    if (req <= 0)
        snprintf(b, n, "-");
    else
        snprintf(b, n, "%.3fx", (double)c->stats.reserved_bytes[GALLOC_STAT_ALL].peak / (double)req);
}
/* A sleeping tag's blocks stay allocated while its memory is not reserved:
 * its address space (bytes asleep) counts as reserved here, so the figure is
 * every cached free block, asleep or not. */
static void unalloc_end(const ga_replay_column_t *c, char *b, size_t n)
{
    int64_t asleep = c->has_sleep_stats ? (int64_t)c->sleep.bytes_asleep : 0;
    c_bytes(c->stats.reserved_bytes[GALLOC_STAT_ALL].current + asleep -
                c->stats.allocated_bytes[GALLOC_STAT_ALL].current,
            b, n);
}
static void segments(const ga_replay_column_t *c, char *b, size_t n)
{
    ga_units_format_count((uint64_t)c->stats.segment[GALLOC_STAT_ALL].peak, b, n);
}
static void dev_calls(const ga_replay_column_t *c, char *b, size_t n)
{
    char x[32], y[32];
    ga_units_format_count((uint64_t)c->stats.num_device_alloc, x, sizeof(x));
    ga_units_format_count((uint64_t)c->stats.num_device_free, y, sizeof(y));
    snprintf(b, n, "%s / %s", x, y);
}
static void retries(const ga_replay_column_t *c, char *b, size_t n)
{
    ga_units_format_count((uint64_t)c->stats.num_alloc_retries, b, n);
}
static void ooms(const ga_replay_column_t *c, char *b, size_t n)
{
    if (c->ooms_total == 0) {
        snprintf(b, n, "0");
        return;
    }
    char first[32];
    ga_units_format_count(c->ooms[0].event, first, sizeof(first));
    if (c->ooms[0].facts.at_start)
        snprintf(b, n, "%" PRIu64 " (before the first event)", c->ooms_total);
    else
        snprintf(b, n, "%" PRIu64 " (first at event %s)", c->ooms_total, first);
}
static void expected(const ga_replay_column_t *c, char *b, size_t n)
{
    snprintf(b, n, "%" PRIu64 " of %" PRIu64 " avoided", c->expected_avoided, c->expected_ooms);
}
static void seconds(const ga_replay_column_t *c, char *b, size_t n)
{
    snprintf(b, n, "%.3f s", c->seconds);
}
static void rate(const ga_replay_column_t *c, char *b, size_t n)
{
    ga_units_format_rate(c->seconds > 0 && c->events > 0 ? (double)c->events / c->seconds : -1, b, n);
}
static void slept(const ga_replay_column_t *c, char *b, size_t n)
{
    if (!c->has_sleep_stats) {
        snprintf(b, n, "-");
        return;
    }
    char x[32], y[32];
    ga_units_format_count(c->sleep.num_sleep, x, sizeof(x));
    ga_units_format_count(c->sleep.num_wake, y, sizeof(y));
    snprintf(b, n, "%s / %s", x, y);
}
static void slept_bytes(const ga_replay_column_t *c, char *b, size_t n)
{
    if (c->has_sleep_stats)
        c_bytes((int64_t)c->sleep.bytes_slept, b, n);
    else
        snprintf(b, n, "-");
}
static void offloaded(const ga_replay_column_t *c, char *b, size_t n)
{
    if (c->has_sleep_stats)
        c_bytes((int64_t)c->sleep.peak_bytes_offloaded, b, n);
    else
        snprintf(b, n, "-");
}
static void verdict(const ga_replay_column_t *c, char *b, size_t n)
{
    ga_report_verdict(c, b, n);
}

/* When a row is shown. */
enum { ALWAYS, EXPECTED_ONLY /* the trace records failed allocations */, SLEEP_ONLY /* it has tag events */ };

static const struct {
    const char *name;
    cell_fn fn;
    int when;
} rows[] = {
    {"peak requested", peak_req, ALWAYS},
    {"peak allocated", peak_alloc, ALWAYS},
    {"peak reserved", peak_res, ALWAYS},
    {"reserved / requested at peak", ratio, ALWAYS},
    {"reserved but unallocated, end", unalloc_end, ALWAYS},
    {"segments (peak)", segments, ALWAYS},
    {"device allocs / frees", dev_calls, ALWAYS},
    {"alloc retries", retries, ALWAYS},
    {"sleeps / wakes", slept, SLEEP_ONLY},
    {"bytes slept (total)", slept_bytes, SLEEP_ONLY},
    {"offloaded to host (peak)", offloaded, SLEEP_ONLY},
    {"OOMs", ooms, ALWAYS},
    {"traced OOMs", expected, EXPECTED_ONLY},
    {"replay time", seconds, ALWAYS},
    {"events/s", rate, ALWAYS},
    {"verdict", verdict, ALWAYS},
};

static void header(FILE *out, const ga_report_trace_t *t)
{
    const ga_replay_t *rp = t->rp;
    char ev[160], mem[32];
    fprintf(out, "== %s", t->u->label);
    ga_report_unit_events(t->u, ev, sizeof(ev));
    ga_units_format_size(rp->device_memory, mem, sizeof(mem));
    fprintf(out, " (%s, %s, %s device %s)\n", ga_reader_format_name(t->u->format), ev, t->backend, mem);
    ga_report_unit_text(out, t->u, "");
}

/* The advice for a fragmentation OOM (see ga_report_oom_facts). */
static void frag_advice(const ga_oom_facts_t *f, bool none_fits, char *b, size_t n)
{
    if (none_fits) {
        snprintf(b, n, "no configuration galloc fit tried fits this device, so no setting is enough");
        return;
    }
    if (!f->has_expandable || !f->has_max_split) {
        snprintf(b, n, "settings can help (galloc fit: %s%s%s)", f->has_expandable ? "" : "expandable_segments:True",
                 !f->has_expandable && !f->has_max_split ? ", " : "", f->has_max_split ? "" : "max_split_size_mb");
        return;
    }
    snprintf(b, n,
             "this configuration already has expandable_segments:True and max_split_size_mb (galloc fit "
             "searches the other settings)");
}

/* The figures of an OOM before the first event (facts.at_start): the state
 * the trace starts in is larger than the device. When its live blocks alone
 * fit, the rest is PyTorch's cache at that moment, which a job on this device
 * might not have held: --no-seed replays the live blocks without it. */
static void start_facts(FILE *out, const ga_oom_facts_t *f, const char *live, const char *cached, const char *lim)
{
    char res[32];
    ga_units_format_bytes(f->live + f->cached_free, res, sizeof(res));
    if ((uint64_t)f->live > f->limit)
        fprintf(out,
                "  genuine: the state the trace starts in holds %s live (%s reserved), more than the %s the "
                "allocator may use, before any event; no allocator setting helps (a smaller model or batch, a "
                "larger device)\n",
                live, res, lim);
    else
        fprintf(out,
                "  genuine: the state the trace starts in holds %s reserved (%s live + %s cached free), more than "
                "the %s the allocator may use, before any event; every configuration starts from that state, so "
                "no allocator setting helps (a larger device; --no-seed replays its live blocks alone, without "
                "the cache)\n",
                res, live, cached, lim);
}

void ga_report_oom_facts(FILE *out, const ga_oom_facts_t *f, const ga_job_cap_t *cap, bool none_fits)
{
    char advice[160];
    frag_advice(f, none_fits, advice, sizeof(advice));
    char sz[32], live[32], cached[32], largest[32], dfree[32], dtot[32], lim[32];
    ga_units_format_size(f->size, sz, sizeof(sz));
    ga_units_format_bytes(f->live, live, sizeof(live));
    ga_units_format_bytes(f->cached_free, cached, sizeof(cached));
    ga_units_format_bytes(f->largest_free_block, largest, sizeof(largest));
    ga_units_format_size(f->usable_free, dfree, sizeof(dfree));
    ga_units_format_size(f->device_total, dtot, sizeof(dtot));
    ga_units_format_size(f->limit, lim, sizeof(lim));
    bool capped = f->fraction < 1.0;
    if (f->at_start) { /* the state itself: no request of the job, no setting (every one starts from it) */
        start_facts(out, f, live, cached, lim);
        return;
    }
    /* Each class gets only the advice that can work for it: allocator
     * settings for fragmentation (the bytes exist, not in one piece), less
     * memory or more of it for a genuine OOM, where no setting helps. */
    if (f->cls == GA_OOM_FRAGMENTATION && !capped)
        fprintf(out,
                "  fragmentation: %s requested <= %s cached free + %s device free, but the largest free "
                "block is %s; %s\n",
                sz, cached, dfree, largest, advice);
    else if (f->cls == GA_OOM_FRAGMENTATION)
        fprintf(out,
                "  fragmentation: %s requested <= %s cached free + %s free under the memory fraction "
                "(%g of %s = %s), but the largest free block is %s; %s\n",
                sz, cached, dfree, f->fraction, dtot, lim, largest, advice);
    else if (!capped)
        fprintf(out,
                "  genuine: %s live + %s requested exceed the %s device; no allocator setting helps, even "
                "with every cached block released (smaller batch, activation checkpointing, a larger "
                "device)\n",
                live, sz, dtot);
    else if (cap != NULL && cap->inferred) {
        char r[80];
        ga_report_cap_text(cap, r, sizeof(r));
        fprintf(out,
                "  genuine: %s live + %s requested exceed the lowest cap the trace allows (%s; it lay in %s); "
                "no allocator setting helps (a larger set_per_process_memory_fraction, smaller batch, "
                "activation checkpointing)\n",
                live, sz, lim, r);
    } else
        fprintf(out,
                "  genuine: %s live + %s requested exceed the %s the memory fraction allows (%g of %s); "
                "no allocator setting helps (a larger set_per_process_memory_fraction, smaller batch, "
                "activation checkpointing)\n",
                live, sz, lim, f->fraction, dtot);
}

static void oom_details(FILE *out, const ga_job_unit_t *u, const ga_replay_column_t *c, const char *tag,
                        const char *where_word)
{
    for (size_t k = 0; k < c->n_ooms && k < 3; k++) {
        const ga_replay_oom_t *o = &c->ooms[k];
        char ev[32], sz[32];
        ga_units_format_count(o->event, ev, sizeof(ev));
        ga_units_format_size(o->size, sz, sizeof(sz));
        if (o->facts.at_start) {
            char msg[GALLOC_ERROR_MAX + 256];
            ga_report_oom_message(u, o->message, msg, sizeof(msg));
            fprintf(out,
                    "%s OOM before the first event: the state the trace starts in does not fit; seeding it, a "
                    "request of %s failed:\n  %s\n",
                    tag, sz, msg);
            ga_report_oom_facts(out, &o->facts, &u->cap, false);
            fprintf(out, "  nothing after it is replayed: the column's figures are of the part of the state seeded "
                         "before the request that failed\n");
            if (u->memory_source == GA_JOB_MEM_DEFAULT) /* the verdict rests on a size nothing said */
                fprintf(out,
                        "  the device's size was assumed (not recorded): --device-memory gives the one it ran on\n");
            continue;
        }
        fprintf(out, "%s OOM at event %s", tag, ev);
        if (o->prologue)
            fprintf(out, " (recreating a block live before the trace began)");
        else if (o->where)
            fprintf(out, " (%s %" PRIu64 ")", where_word, o->where);
        if (o->annotation[0])
            fprintf(out, " after \"%s\"", o->annotation);
        char msg[GALLOC_ERROR_MAX + 256];
        ga_report_oom_message(u, o->message, msg, sizeof(msg));
        fprintf(out, ", %s requested%s:\n  %s\n", sz, o->expected ? ", an OOM the traced run had too" : "", msg);
        ga_report_oom_facts(out, &o->facts, &u->cap, false);
    }
    if (c->ooms_total > 3)
        fprintf(out, "%s ... and %" PRIu64 " more OOMs (see --json)\n", tag, c->ooms_total - 3);
}

/* The side-by-side table: a header row of labels (or [N] with a legend
 * above), then a row per figure. Cells are made first, to size the columns.
 * false when host memory ran out (said in the output). */
static bool table(FILE *out, const ga_replay_t *rp, bool legend)
{
    size_t nc = rp->n_cols, nrows = sizeof(rows) / sizeof(rows[0]);
    bool any_expected = false;
    for (size_t i = 0; i < nc; i++)
        any_expected |= rp->cols[i].expected_ooms > 0;
    char(*cells)[CELL] = calloc(nrows * nc + nc, CELL); /* the header row last */
    size_t *w = calloc(nc, sizeof(size_t));
    if (cells == NULL || w == NULL) {
        free(cells);
        free(w);
        fprintf(stderr, "galloc replay: out of host memory\n");
        return false;
    }
    for (size_t i = 0; i < nc; i++) {
        char *h = cells[nrows * nc + i];
        if (legend)
            snprintf(h, CELL, "[%zu]", i + 1);
        else
            snprintf(h, CELL, "%s", rp->cols[i].label);
        w[i] = strlen(h);
        for (size_t r = 0; r < nrows; r++) {
            char *cell = cells[r * nc + i];
            rows[r].fn(&rp->cols[i], cell, CELL); /* every column was made (ga_report_text) */
            if (strlen(cell) > w[i])
                w[i] = strlen(cell);
        }
    }
    fprintf(out, "%-*s", LABEL_W, "");
    for (size_t i = 0; i < nc; i++) /* the last column unpadded: no trailing blanks */
        fprintf(out, "  %-*s", i + 1 < nc ? (int)w[i] : 0, cells[nrows * nc + i]);
    fprintf(out, "\n");
    for (size_t r = 0; r < nrows; r++) {
        if ((rows[r].when == EXPECTED_ONLY && !any_expected) ||
            (rows[r].when == SLEEP_ONLY && rp->unit->tag_events == 0))
            continue;
        fprintf(out, "%-*s", LABEL_W, rows[r].name);
        for (size_t i = 0; i < nc; i++)
            fprintf(out, "  %-*s", i + 1 < nc ? (int)w[i] : 0, cells[r * nc + i]);
        fprintf(out, "\n");
    }
    free(cells);
    free(w);
    return true;
}

/* Under a cap known as a range: the outcome of each part of it. */
static void parts_text(FILE *out, const ga_replay_column_t *c, const char *tag)
{
    char cap[32], r[80];
    ga_units_format_size(c->cap, cap, sizeof(cap));
    if (c->n_parts == 1) {
        fprintf(out, "%s the same outcome under every cap in the trace's range; figures at a cap of %s\n", tag, cap);
        return;
    }
    fprintf(out,
            "%s the outcome depends on where the cap lay in the trace's range; figures at a cap of %s, in the "
            "widest part:\n",
            tag, cap);
    for (size_t i = 0; i < c->n_parts; i++) {
        const ga_replay_part_t *p = &c->parts[i];
        ga_job_cap_t sub = {.low = p->from, .high = p->to};
        char ev[32], pk[32];
        ga_report_cap_text(&sub, r, sizeof(r));
        ga_units_format_bytes(p->peak_reserved, pk, sizeof(pk));
        const char *mark = i == c->main_part ? " (the figures)" : "";
        if (p->ooms == 0) {
            fprintf(out, "  a cap in %s: fits, peak reserved %s%s\n", r, pk, mark);
            continue;
        }
        ga_units_format_count(p->first_oom_event, ev, sizeof(ev));
        fprintf(out, "  a cap in %s: OOM at event %s%s, peak reserved %s%s\n", r, ev,
                p->first_oom_expected ? " (an OOM the traced run had too)" : "", pk, mark);
    }
}

/* What a column has to say beyond its cells: creation failure, OOM details,
 * failed calls, trace anomalies, its snapshot (failures are on stderr). */
static void column_notes(FILE *out, const ga_report_trace_t *t, const ga_replay_column_t *c, const char *tag)
{
    oom_details(out, t->u, c, tag, t->u->format == GA_FORMAT_TORCH ? "device_traces entry" : "line");
    if (c->errors)
        fprintf(out, "%s %" PRIu64 " failed calls; first: %s\n", tag, c->errors, c->first_error);
    if (c->unmatched || c->duplicates)
        fprintf(out,
                "%s trace anomalies: %" PRIu64 " frees/record_streams of unknown pointers, %" PRIu64
                " allocations of a pointer already live\n",
                tag, c->unmatched, c->duplicates);
    if (c->tag_anomalies)
        fprintf(out,
                "%s trace anomalies: %" PRIu64 " tag events naming an unknown tag or a scope not begun; "
                "first: %s\n",
                tag, c->tag_anomalies, c->first_tag_anomaly);
    if (c->n_parts > 0)
        parts_text(out, c, tag);
    if (c->snapshot_path != NULL && !c->snapshot_error[0]) /* a failure is said on stderr (replay_cli.c) */
        fprintf(out, "%s snapshot written to %s\n", tag, c->snapshot_path);
}

/* What the trace as a whole has to say: how it started, what was skipped,
 * the read rate, the plot. */
static void trace_notes(FILE *out, const ga_report_trace_t *t)
{
    const ga_replay_t *rp = t->rp;
    if (rp->no_sleep && t->u->sleep_events)
        fprintf(out,
                "note: --no-sleep: the trace's %" PRIu64 " sleep and wake events were skipped (tags still "
                "begun and ended): the peaks are those of the job without sleeping\n",
                t->u->sleep_events);
    char rs[32];
    ga_units_format_rate(t->load_seconds > 0 ? (double)rp->events / t->load_seconds : -1, rs, sizeof(rs));
    fprintf(out, "read %" PRIu64 " events in %.3f s (%s)\n", rp->events, t->load_seconds, rs);
    if (t->plot_path != NULL)
        fprintf(out, "plot written to %s\n", t->plot_path);
}

static void report_made(FILE *out, const ga_report_trace_t *t, const ga_replay_t *rp);

void ga_report_text(FILE *out, const ga_report_trace_t *t)
{
    if (t->rp == NULL || t->u == NULL || t->error != NULL)
        return; /* the caller said why on stderr; a partial replay has no verdict */
    /* A configuration that could not be made has no figures: said on stderr
     * (replay_cli.c), it gets no column of "-"; with none made, no table. */
    ga_replay_t made = *t->rp;
    made.cols = calloc(t->rp->n_cols ? t->rp->n_cols : 1, sizeof(*made.cols));
    if (made.cols == NULL) {
        fprintf(stderr, "galloc replay: out of host memory\n");
        return;
    }
    made.n_cols = 0;
    for (size_t i = 0; i < t->rp->n_cols; i++)
        if (t->rp->cols[i].create_status == GALLOC_OK)
            made.cols[made.n_cols++] = t->rp->cols[i];
    if (made.n_cols > 0)
        report_made(out, t, &made);
    free(made.cols);
}

/* The report of the columns made (rp: t's, less those that could not be). */
static void report_made(FILE *out, const ga_report_trace_t *t, const ga_replay_t *rp)
{
    header(out, t);
    bool legend = false;
    for (size_t i = 0; i < rp->n_cols; i++)
        legend |= strlen(rp->cols[i].label) > MAX_HEADER;
    if (legend)
        for (size_t i = 0; i < rp->n_cols; i++)
            fprintf(out, "  [%zu] %s\n", i + 1, rp->cols[i].label);
    if (!table(out, rp, legend))
        return;
    for (size_t i = 1; i < rp->n_cols; i++)
        if (rp->cols[i].stats.requested_bytes[GALLOC_STAT_ALL].peak !=
            rp->cols[0].stats.requested_bytes[GALLOC_STAT_ALL].peak) { /* one job: say why once */
            fprintf(out, "peak requested counts the allocations each configuration made: a request that ran out of "
                         "memory is not counted (a traced OOM's only where the configuration could make it), so "
                         "it differs between columns\n");
            break;
        }
    for (size_t i = 0; i < t->rp->n_cols; i++)
        if (t->rp->cols[i].create_status != GALLOC_OK)
            fprintf(out, "configuration \"%s\" could not be made: left out (said on stderr)\n", t->rp->cols[i].label);
    for (size_t i = 0; i < rp->n_cols; i++) {
        const ga_replay_column_t *c = &rp->cols[i];
        char tag[CELL + 4];
        snprintf(tag, sizeof(tag), "[%.*s]", CELL - 1, legend ? "" : c->label);
        if (legend)
            snprintf(tag, sizeof(tag), "[%zu]", i + 1);
        column_notes(out, t, c, tag);
        if (t->top > 0)
            ga_report_owners_text(out, t->u, c, tag, t->top, GA_REPORT_OWNERS_PEAK | GA_REPORT_OWNERS_OOM);
    }
    trace_notes(out, t);
    fprintf(out, "\n");
}
