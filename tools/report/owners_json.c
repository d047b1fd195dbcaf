/*
 * owners_json.c: who holds the memory, in --json (report.h). Per trace, the
 * unit's sites once ("owner_sites": id, name, kind, the whole stack of the
 * first allocation that named it); per result, "owners": each moment (the
 * allocated and reserved peaks, the first OOMs) with every site holding live
 * bytes, the phases, streams and pools, and for the reserved peak and OOMs
 * every segment with its free bytes and the sites pinning it. Moments and
 * sites refer to sites by id. The schema is docs/owners.md's.
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tools/report/report.h"

static void jnum_or_null(FILE *out, double v, bool known)
{
    if (!known || !isfinite(v))
        fputs("null", out);
    else
        fprintf(out, "%.1f", v);
}

void ga_report_owner_sites_json(FILE *out, const ga_owners_index_t *x)
{
    char keyed[128];
    fputs("{\"keyed_by\": ", out);
    ga_report_json_str(out, ga_owners_keyed_by(x, keyed, sizeof(keyed)));
    fprintf(out, ", \"overflow\": %s, \"sites\": [", x->overflow ? "true" : "false");
    for (size_t i = 0; i < x->n_sites; i++) {
        const ga_owner_site_t *s = &x->sites[i];
        fprintf(out, "%s\n        {\"id\": %zu, \"name\": ", i ? "," : "", i);
        ga_report_json_str(out, s->key);
        fputs(", \"kind\": ", out);
        ga_report_json_str(out, ga_site_kind_name(s->kind));
        fputs(", \"stack\": [", out);
        for (size_t f = 0; f < s->n_stack; f++) {
            fputs(f ? ", {\"file\": " : "{\"file\": ", out);
            ga_report_json_str(out, s->stack[f].file);
            fprintf(out, ", \"line\": %" PRId64 ", \"name\": ", s->stack[f].line);
            ga_report_json_str(out, s->stack[f].name);
            fputs("}", out);
        }
        fputs("]}", out);
    }
    fputs("]}", out);
}

static void phases_obj(FILE *out, const int64_t bytes[GA_PHASES])
{
    fputs("{", out);
    for (int p = 0; p < GA_PHASES; p++)
        fprintf(out, "%s\"%s\": %" PRId64, p ? ", " : "", ga_phase_name((ga_phase_t)p), bytes[p]);
    fputs("}", out);
}

static void sites_json(FILE *out, const ga_owners_t *w, const ga_owners_moment_t *m)
{
    ga_owner_site_row_t *rows;
    size_t n;
    fputs(", \"sites\": [", out);
    if (ga_owners_sites(m, w->index, &rows, &n) != 0) {
        fputs("], \"error\": \"out of host memory listing the sites\"", out);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        const ga_owner_cell_t *c = &rows[i].cell;
        double ev, us;
        bool aged = ga_owner_mean_age(c, m, w->t0_us, &ev, &us);
        fprintf(out,
                "%s\n            {\"site\": %" PRIu32 ", \"bytes\": %" PRId64 ", \"requested_bytes\": %" PRId64
                ", \"blocks\": %" PRId64 ", \"kept_bytes\": %" PRId64 ", \"kept_blocks\": %" PRId64
                ", \"before_trace_blocks\": %" PRId64 ", \"mean_age_events\": ",
                i ? "," : "", rows[i].site, c->bytes, c->requested, c->blocks, c->kept_bytes, c->kept_blocks,
                c->before);
        jnum_or_null(out, ev, aged);
        fputs(", \"mean_age_us\": ", out);
        jnum_or_null(out, us, aged && us >= 0);
        fputs(", \"phases\": ", out);
        phases_obj(out, rows[i].phase_bytes);
        fputs("}", out);
    }
    fputs("], \"error\": null", out);
    free(rows);
}

/* Bytes and blocks per stream and per pool, from the classes. */
static void streams_pools_json(FILE *out, const ga_owners_t *w, const ga_owners_moment_t *m)
{
    const ga_owners_index_t *x = w->index;
    for (int pass = 0; pass < 2; pass++) {
        size_t n = pass == 0 ? x->n_streams : x->n_pools;
        fputs(pass == 0 ? ", \"streams\": [" : ", \"pools\": [", out);
        bool first = true;
        for (size_t k = 0; k < n; k++) {
            int64_t bytes = 0, blocks = 0;
            for (size_t i = 0; i < m->n_entries; i++) {
                const ga_owner_class_t *c = &x->classes[m->entries[i].cls];
                if ((pass == 0 ? c->stream : c->pool) == k) {
                    bytes += m->entries[i].cell.bytes;
                    blocks += m->entries[i].cell.blocks;
                }
            }
            if (blocks == 0)
                continue;
            if (pass == 0)
                fprintf(out, "%s{\"stream\": %" PRIu64, first ? "" : ", ", x->streams[k]);
            else
                fprintf(out, "%s{\"pool\": [%" PRId64 ", %" PRId64 "]", first ? "" : ", ", x->pools[k][0],
                        x->pools[k][1]);
            fprintf(out, ", \"bytes\": %" PRId64 ", \"blocks\": %" PRId64 "}", bytes, blocks);
            first = false;
        }
        fputs("]", out);
    }
}

static void segments_json(FILE *out, const ga_owners_t *w, const ga_owners_moment_t *m)
{
    fputs(", \"segments\": ", out);
    if (!m->has_segments) {
        fputs("null", out);
        return;
    }
    fputs("[", out);
    for (size_t i = 0; i < m->n_segments; i++) {
        const ga_owner_segment_t *s = &m->segments[i];
        fprintf(out,
                "%s\n            {\"address\": %" PRIu64 ", \"size\": %" PRIu64 ", \"free_bytes\": %" PRIu64
                ", \"largest_free_block\": %" PRIu64 ", \"pending_free_bytes\": %" PRIu64
                ", \"allocated_bytes\": %" PRIu64 ", \"blocks\": %" PRIu32 ", \"free_blocks\": %" PRIu32
                ", \"stream\": %" PRIu64 ", \"pool\": [%" PRId64 ", %" PRId64 "], \"expandable\": %s, \"small\": %s"
                ", \"pinned_by\": [",
                i ? "," : "", s->address, s->size, s->free_bytes, s->largest_free, s->pending_bytes, s->allocated_bytes,
                s->blocks, s->free_blocks, s->stream, s->pool[0], s->pool[1], s->expandable ? "true" : "false",
                s->small ? "true" : "false");
        for (uint32_t k = 0; k < s->n_pins; k++) {
            const ga_owner_class_t *c = &w->index->classes[s->pins[k]];
            fprintf(out, "%s{\"site\": %" PRIu32 ", \"phase\": \"%s\", \"bytes\": %" PRIu64 "}", k ? ", " : "", c->site,
                    ga_phase_name((ga_phase_t)c->phase), s->pin_bytes[k]);
        }
        fputs("]}", out);
    }
    fputs("]", out);
}

static void moment_json(FILE *out, const ga_job_unit_t *u, const ga_owners_t *w, const ga_owners_moment_t *m)
{
    if (!m->valid) {
        fputs("null", out);
        return;
    }
    static const char *const kinds[] = {"peak_allocated", "peak_reserved", "oom"};
    bool before = m->event == GA_OWNERS_BEFORE_EVENTS;
    fprintf(out, "{\"kind\": \"%s\", \"event\": ", kinds[m->kind]);
    if (before) /* the line: as an OOM record's, the trace's line or entry of the event */
        fputs("null, \"line\": null", out);
    else
        fprintf(out, "%" PRIu64 ", \"line\": %" PRIu64, m->event, m->event < u->n ? u->ev[m->event].where : 0);
    fputs(", \"time_us\": ", out);
    if (m->time_us != 0)
        fprintf(out, "%" PRId64, m->time_us);
    else
        fputs("null", out);
    fprintf(out,
            ", \"allocated_bytes\": %" PRId64 ", \"reserved_bytes\": %" PRId64 ", \"active_bytes\": ", m->allocated,
            m->reserved);
    if (m->active >= 0)
        fprintf(out, "%" PRId64 ", \"requested_bytes\": %" PRId64, m->active, m->requested);
    else
        fputs("null, \"requested_bytes\": null", out);
    fputs(", \"request\": ", out);
    if (m->kind != GA_MOMENT_OOM) {
        fputs("null", out);
    } else {
        fprintf(out, "{\"bytes\": %" PRIu64 ", \"site\": ", m->request_size);
        if (m->request_cls != UINT32_MAX) {
            const ga_owner_class_t *c = &w->index->classes[m->request_cls];
            fprintf(out, "%" PRIu32 ", \"phase\": \"%s\"}", c->site, ga_phase_name((ga_phase_t)c->phase));
        } else {
            fputs("null, \"phase\": null}", out);
        }
    }
    sites_json(out, w, m);
    ga_owner_cell_t ph[GA_PHASES];
    ga_owners_phases(m, w->index, ph);
    fputs(", \"phases\": {", out);
    for (int p = 0; p < GA_PHASES; p++)
        fprintf(out, "%s\"%s\": {\"bytes\": %" PRId64 ", \"blocks\": %" PRId64 "}", p ? ", " : "",
                ga_phase_name((ga_phase_t)p), ph[p].bytes, ph[p].blocks);
    fputs("}", out);
    streams_pools_json(out, w, m);
    segments_json(out, w, m);
    fputs("}", out);
}

void ga_report_owners_json(FILE *out, const ga_job_unit_t *u, const ga_owners_t *w)
{
    if (w == NULL) {
        fputs("null", out);
        return;
    }
    fputs("{\"error\": ", out);
    if (w->error[0])
        ga_report_json_str(out, w->error);
    else
        fputs("null", out);
    fprintf(out, ", \"untracked_blocks\": %" PRIu64 ", \"t0_us\": ", w->untracked);
    if (w->t0_us != 0)
        fprintf(out, "%" PRId64, w->t0_us);
    else
        fputs("null", out);
    fputs(",\n          \"peak_allocated\": ", out);
    moment_json(out, u, w, &w->peak_allocated);
    fputs(",\n          \"peak_reserved\": ", out);
    moment_json(out, u, w, &w->peak_reserved);
    fputs(",\n          \"ooms\": [", out);
    for (size_t i = 0; i < w->n_ooms; i++) {
        fputs(i ? ",\n            " : "\n            ", out);
        moment_json(out, u, w, &w->ooms[i]);
    }
    fputs("]}", out);
}
