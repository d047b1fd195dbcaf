/*
 * owners_text.c: who holds the memory, in the text report (report.h,
 * ga_report_owners_text): for one column, its reserved peak and its first
 * OOM, each a table of the top sites (bytes, share, blocks, how much of it
 * the trace never frees, mean age, phase) and a line of phases; at an OOM,
 * what the failed request was for and where the cached free bytes sit.
 * Short enough to read: --json has every site, every moment and segment.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "tools/readers/units.h"
#include "tools/report/report.h"

#define SITE_W 72 /* a site's name beyond this keeps its end ("...x/train.py:35 step") */

/* A site's name for a table: its end when long (file names carry the news there). */
static void short_name(const char *key, char *buf, size_t len)
{
    size_t n = strlen(key);
    if (n <= SITE_W || len < SITE_W + 1)
        snprintf(buf, len, "%s", key);
    else
        snprintf(buf, len, "...%s", key + n - (SITE_W - 3));
}

/* The phase a site's bytes are in: the one phase, or the largest with "+". */
static const char *phase_of(const ga_owner_site_row_t *r, char *buf, size_t len)
{
    int best = 0, nz = 0;
    for (int p = 0; p < GA_PHASES; p++) {
        nz += r->phase_bytes[p] != 0;
        if (r->phase_bytes[p] > r->phase_bytes[best])
            best = p;
    }
    snprintf(buf, len, "%s%s", ga_phase_name((ga_phase_t)best), nz > 1 ? "+" : "");
    return buf;
}

static void age_text(const ga_owner_cell_t *c, const ga_owners_moment_t *m, int64_t t0, char *buf, size_t len)
{
    double ev, us;
    if (!ga_owner_mean_age(c, m, t0, &ev, &us)) {
        snprintf(buf, len, "before trace");
        return;
    }
    char n[32];
    ga_units_format_count((uint64_t)(ev + 0.5), n, sizeof(n));
    if (us >= 0)
        snprintf(buf, len, "%s ev, %.2f s", n, us / 1e6);
    else
        snprintf(buf, len, "%s ev", n);
}

static double pct(int64_t part, int64_t whole)
{
    return whole > 0 ? 100.0 * (double)part / (double)whole : 0.0;
}

/* The event a moment follows, as the report names events. */
static void where_text(const ga_job_unit_t *u, const ga_owners_moment_t *m, char *buf, size_t len)
{
    if (m->event == GA_OWNERS_BEFORE_EVENTS) {
        snprintf(buf, len, "before the first event (the state the trace starts in)");
        return;
    }
    char ev[32];
    ga_units_format_count(m->event, ev, sizeof(ev));
    uint64_t where = m->event < u->n ? u->ev[m->event].where : 0;
    const char *word = u->format == GA_FORMAT_TORCH ? "device_traces entry" : "line";
    if (where)
        snprintf(buf, len, "after event %s (%s %" PRIu64 ")", ev, word, where);
    else
        snprintf(buf, len, "after event %s", ev);
}

/* The top sites of m and its phases. */
static void sites_table(FILE *out, const ga_owners_t *w, const ga_owners_moment_t *m, size_t top)
{
    const ga_owners_index_t *x = w->index;
    ga_owner_site_row_t *rows;
    size_t n;
    if (ga_owners_sites(m, x, &rows, &n) != 0) {
        fprintf(out, "    (out of host memory listing the sites)\n");
        return;
    }
    if (n == 0) {
        fprintf(out, "    no live blocks\n");
        return;
    }
    fprintf(out, "    %12s  %6s  %7s  %5s  %-17s  %-10s  %s\n", "allocated", "share", "blocks", "kept", "mean age",
            "phase", "site");
    int64_t rest = 0;
    size_t shown = n < top ? n : top;
    for (size_t i = 0; i < n; i++) {
        if (i >= shown) {
            rest += rows[i].cell.bytes;
            continue;
        }
        const ga_owner_cell_t *c = &rows[i].cell;
        char b[32], blocks[32], age[48], ph[16], name[SITE_W + 8];
        ga_units_format_bytes(c->bytes, b, sizeof(b));
        ga_units_format_count((uint64_t)c->blocks, blocks, sizeof(blocks));
        age_text(c, m, w->t0_us, age, sizeof(age));
        short_name(x->sites[rows[i].site].key, name, sizeof(name));
        fprintf(out, "    %12s  %5.1f%%  %7s  %4.0f%%  %-17s  %-10s  %s\n", b, pct(c->bytes, m->allocated), blocks,
                pct(c->kept_bytes, c->bytes), age, phase_of(&rows[i], ph, sizeof(ph)), name);
    }
    if (n > shown) {
        char b[32];
        ga_units_format_bytes(rest, b, sizeof(b));
        fprintf(out, "    %12s  %5.1f%%  ... %zu more sites (--top N, --json: all)\n", b, pct(rest, m->allocated),
                n - shown);
    }
    free(rows);
    ga_owner_cell_t ph[GA_PHASES];
    ga_owners_phases(m, x, ph);
    static const ga_phase_t order[] = {GA_PHASE_FORWARD, GA_PHASE_BACKWARD, GA_PHASE_OPTIMIZER, GA_PHASE_OTHER};
    fprintf(out, "    phases:");
    for (size_t i = 0; i < GA_PHASES; i++) {
        char b[32];
        ga_units_format_bytes(ph[order[i]].bytes, b, sizeof(b));
        fprintf(out, "%s %s %s (%.1f%%)", i ? "," : "", ga_phase_name(order[i]), b,
                pct(ph[order[i]].bytes, m->allocated));
    }
    fprintf(out, "\n");
}

/* Where the cached free bytes sit (a walked moment): the segment with the
 * most, and who pins it. */
static void holes_text(FILE *out, const ga_owners_t *w, const ga_owners_moment_t *m)
{
    if (!m->has_segments || m->n_segments == 0)
        return;
    uint64_t free_b = 0, pend = 0;
    size_t with = 0;
    for (size_t i = 0; i < m->n_segments; i++) {
        free_b += m->segments[i].free_bytes;
        pend += m->segments[i].pending_bytes;
        with += m->segments[i].free_bytes > 0;
    }
    char fb[32], pb[32];
    ga_units_format_size(free_b, fb, sizeof(fb));
    ga_units_format_size(pend, pb, sizeof(pb));
    if (free_b == 0) {
        fprintf(out, "    no cached free bytes in its %zu segments%s%s%s\n", m->n_segments, pend ? " (" : "",
                pend ? pb : "", pend ? " pending free)" : "");
        return;
    }
    const ga_owner_segment_t *s = &m->segments[0]; /* most free bytes first */
    char sz[32], sf[32], lf[32];
    ga_units_format_size(s->size, sz, sizeof(sz));
    ga_units_format_size(s->free_bytes, sf, sizeof(sf));
    ga_units_format_size(s->largest_free, lf, sizeof(lf));
    fprintf(out,
            "    cached free: %s in %zu of %zu segments%s%s%s; the most in a %s%s segment: %s free (largest block %s)",
            fb, with, m->n_segments, pend ? ", and " : "", pend ? pb : "", pend ? " pending free" : "", sz,
            s->expandable ? " expandable" : "", sf, lf);
    for (uint32_t k = 0; k < s->n_pins; k++) {
        char pbytes[32], name[SITE_W + 8];
        ga_units_format_size(s->pin_bytes[k], pbytes, sizeof(pbytes));
        short_name(w->index->sites[w->index->classes[s->pins[k]].site].key, name, sizeof(name));
        fprintf(out, "%s %s of %s", k ? "," : ", pinned by", pbytes, name);
    }
    fprintf(out, "\n");
}

static void moment_text(FILE *out, const ga_job_unit_t *u, const ga_owners_t *w, const ga_owners_moment_t *m,
                        size_t top)
{
    char where[128], al[32], res[32];
    where_text(u, m, where, sizeof(where));
    ga_units_format_bytes(m->allocated, al, sizeof(al));
    ga_units_format_bytes(m->reserved, res, sizeof(res));
    if (m->kind == GA_MOMENT_OOM) {
        char sz[32], ev[32], name[SITE_W + 8] = "(unknown)", ph[16] = "";
        ga_units_format_size(m->request_size, sz, sizeof(sz));
        ga_units_format_count(m->event, ev, sizeof(ev));
        if (m->request_cls != UINT32_MAX) {
            const ga_owner_class_t *c = &w->index->classes[m->request_cls];
            short_name(w->index->sites[c->site].key, name, sizeof(name));
            snprintf(ph, sizeof(ph), ", %s", ga_phase_name((ga_phase_t)c->phase));
        }
        if (m->event == GA_OWNERS_BEFORE_EVENTS)
            fprintf(out,
                    "  at the OOM before the first event: %s requested seeding the state the trace starts in; "
                    "%s allocated, %s reserved (the part of that state seeded before it):\n",
                    sz, al, res);
        else
            fprintf(out, "  at the OOM of event %s: %s requested by %s%s; %s allocated, %s reserved:\n", ev, sz, name,
                    ph, al, res);
    } else {
        fprintf(out, "  at the %s (%s reserved, %s allocated), %s:\n", ga_owners_moment_name(m->kind), res, al, where);
    }
    sites_table(out, w, m, top);
    holes_text(out, w, m);
}

void ga_report_owners_text(FILE *out, const ga_job_unit_t *u, const ga_replay_column_t *c, const char *tag, size_t top,
                           unsigned moments)
{
    const ga_owners_t *w = c->owners;
    if (w == NULL || c->create_status != GALLOC_OK)
        return;
    char keyed[128];
    fprintf(out, "%s who holds the memory (keyed by %s; docs/owners.md):\n", tag,
            ga_owners_keyed_by(w->index, keyed, sizeof(keyed)));
    if (w->error[0])
        fprintf(out, "  (incomplete: %s)\n", w->error);
    if (w->peak_reserved.valid && (moments & GA_REPORT_OWNERS_PEAK))
        moment_text(out, u, w, &w->peak_reserved, top);
    if (w->n_ooms > 0 && (moments & GA_REPORT_OWNERS_OOM))
        moment_text(out, u, w, &w->ooms[0], top);
}
