/*
 * compare_out.c: what `galloc replay --compare` prints (compare.h): per pair
 * of devices, both records' peaks and verdicts, then the sites at the
 * reserved peak whose bytes changed most, the phases' change and the totals
 * (text); or one JSON document with every site at both peaks. A change is
 * B - A: positive when B holds more.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "tools/readers/units.h"
#include "tools/replay/compare.h"
#include "tools/report/report.h"

#define SITE_W 72 /* a site's name beyond this keeps its end, as the owners' tables do */

static void short_name(const char *key, char *buf, size_t len)
{
    size_t n = strlen(key);
    if (n <= SITE_W || len < SITE_W + 1)
        snprintf(buf, len, "%s", key);
    else
        snprintf(buf, len, "...%s", key + n - (SITE_W - 3));
}

/* A change with its sign: "+256.00 MiB", "-2.00 GiB", "0 bytes". */
static void change_text(int64_t d, char *buf, size_t len)
{
    char b[24]; /* "-8.00 EiB" and the like: a sign and b fit the callers' 32 bytes */
    ga_units_format_bytes(d, b, sizeof(b));
    snprintf(buf, len, "%s%s", d > 0 ? "+" : "", b);
}

static void bytes_text(int64_t v, char *buf, size_t len)
{
    ga_units_format_bytes(v, buf, len);
}

/* "after event 1,234", "before the first event", "(none)". */
static void event_text(bool valid, uint64_t ev, char *buf, size_t len)
{
    char n[32];
    if (!valid)
        snprintf(buf, len, "no such moment");
    else if (ev == GA_OWNERS_BEFORE_EVENTS)
        snprintf(buf, len, "before the first event");
    else {
        ga_units_format_count(ev, n, sizeof(n));
        snprintf(buf, len, "after event %s", n);
    }
}

static void side_text(FILE *out, const char *tag, const ga_compare_side_t *s)
{
    const ga_replay_column_t *c = s->c;
    char res[32], al[32], ev[32], verdict[128], keyed[128];
    bytes_text(c->stats.reserved_bytes[GALLOC_STAT_ALL].peak, res, sizeof(res));
    bytes_text(c->stats.allocated_bytes[GALLOC_STAT_ALL].peak, al, sizeof(al));
    ga_units_format_count(s->u->n, ev, sizeof(ev));
    ga_report_verdict(c, verdict, sizeof(verdict));
    fprintf(out, "%s: %s (%s, %s events, %s): peak reserved %s, peak allocated %s, %s", tag, s->u->label,
            ga_reader_format_name(s->u->format), ev, c->label, res, al, verdict);
    if (c->ooms_total > 1)
        fprintf(out, " (%" PRIu64 " OOMs)", c->ooms_total);
    fprintf(out, "; keyed by %s\n",
            c->owners != NULL ? ga_owners_keyed_by(c->owners->index, keyed, sizeof(keyed)) : "nothing");
}

static void phases_text(FILE *out, const ga_compare_moment_t *m)
{
    static const ga_phase_t order[] = {GA_PHASE_FORWARD, GA_PHASE_BACKWARD, GA_PHASE_OPTIMIZER, GA_PHASE_OTHER};
    fprintf(out, "  phases:");
    for (size_t i = 0; i < GA_PHASES; i++) {
        ga_phase_t p = order[i];
        char a[32], b[32], d[32];
        bytes_text(m->a_phase[p], a, sizeof(a));
        bytes_text(m->b_phase[p], b, sizeof(b));
        change_text(m->b_phase[p] - m->a_phase[p], d, sizeof(d));
        fprintf(out, "%s %s %s (%s -> %s)", i ? "," : "", ga_phase_name(p), d, a, b);
    }
    fprintf(out, "\n");
}

void ga_compare_text(FILE *out, const ga_compare_pair_t *p, size_t top)
{
    const ga_compare_moment_t *m = &p->reserved;
    fprintf(out, "== compare: who holds the memory in A and in B (change = B - A; sites matched by name)\n");
    side_text(out, "A", &p->a);
    side_text(out, "B", &p->b);
    char ea[64], eb[64];
    event_text(m->a_valid, m->a_event, ea, sizeof(ea));
    event_text(m->b_valid, m->b_event, eb, sizeof(eb));
    fprintf(out, "at the reserved peak (A %s, B %s), by site, most change first:\n", ea, eb);
    if (m->n_sites == 0) {
        fprintf(out, "  no live blocks in either\n");
        return;
    }
    fprintf(out, "  %12s  %12s  %13s  %s\n", "A bytes", "B bytes", "change", "site");
    size_t shown = m->n_sites < top ? m->n_sites : top;
    for (size_t i = 0; i < shown; i++) {
        const ga_compare_site_t *s = &m->sites[i];
        char a[32], b[32], d[32], name[SITE_W + 8];
        bytes_text(s->a_bytes, a, sizeof(a));
        bytes_text(s->b_bytes, b, sizeof(b));
        change_text(s->b_bytes - s->a_bytes, d, sizeof(d));
        short_name(s->name, name, sizeof(name));
        fprintf(out, "  %12s  %12s  %13s  %s\n", a, b, d, name);
    }
    if (m->n_sites > shown) {
        int64_t ra = 0, rb = 0;
        for (size_t i = shown; i < m->n_sites; i++) {
            ra += m->sites[i].a_bytes;
            rb += m->sites[i].b_bytes;
        }
        char a[32], b[32], d[32];
        bytes_text(ra, a, sizeof(a));
        bytes_text(rb, b, sizeof(b));
        change_text(rb - ra, d, sizeof(d));
        size_t more = m->n_sites - shown;
        fprintf(out, "  %12s  %12s  %13s  ... %zu more site%s (--top N; --json: all)\n", a, b, d, more,
                more == 1 ? "" : "s");
    }
    phases_text(out, m);
    char a[32], b[32], d[32], ra[32], rb[32], rd[32];
    bytes_text(m->a_total, a, sizeof(a));
    bytes_text(m->b_total, b, sizeof(b));
    change_text(m->b_total - m->a_total, d, sizeof(d));
    bytes_text(m->a_reserved, ra, sizeof(ra));
    bytes_text(m->b_reserved, rb, sizeof(rb));
    change_text(m->b_reserved - m->a_reserved, rd, sizeof(rd));
    fprintf(out, "  total: allocated %s -> %s (%s), reserved %s -> %s (%s), %zu sites\n", a, b, d, ra, rb, rd,
            m->n_sites);
}

/* ---- JSON ---------------------------------------------------------------- */

static void side_json(FILE *out, const ga_compare_side_t *s)
{
    const ga_replay_column_t *c = s->c;
    char keyed[128], verdict[128];
    fputs("{\"file\": ", out);
    ga_report_json_str(out, s->path);
    fputs(", \"unit\": ", out);
    ga_report_json_str(out, s->u->unit_label);
    fputs(", \"label\": ", out);
    ga_report_json_str(out, c->label);
    fprintf(out,
            ", \"events\": %zu, \"device_memory\": %" PRIu64 ", \"peak_reserved_bytes\": %" PRId64
            ", \"peak_allocated_bytes\": %" PRId64 ", \"ooms\": %" PRIu64 ", \"verdict\": ",
            s->u->n, s->u->memory, c->stats.reserved_bytes[GALLOC_STAT_ALL].peak,
            c->stats.allocated_bytes[GALLOC_STAT_ALL].peak, c->ooms_total);
    ga_report_json_str(out, ga_report_verdict(c, verdict, sizeof(verdict)));
    fputs(", \"keyed_by\": ", out);
    ga_report_json_str(out, c->owners != NULL ? ga_owners_keyed_by(c->owners->index, keyed, sizeof(keyed)) : "nothing");
    fputs("}", out);
}

static void triple(FILE *out, int64_t a, int64_t b)
{
    fprintf(out, "{\"a_bytes\": %" PRId64 ", \"b_bytes\": %" PRId64 ", \"change_bytes\": %" PRId64 "}", a, b, b - a);
}

static void event_json(FILE *out, bool valid, uint64_t ev)
{
    if (!valid || ev == GA_OWNERS_BEFORE_EVENTS)
        fputs("null", out);
    else
        fprintf(out, "%" PRIu64, ev);
}

static void moment_json(FILE *out, const ga_compare_moment_t *m)
{
    fputs("{\"a_event\": ", out);
    event_json(out, m->a_valid, m->a_event);
    fputs(", \"b_event\": ", out);
    event_json(out, m->b_valid, m->b_event);
    fputs(", \"allocated\": ", out);
    triple(out, m->a_total, m->b_total);
    fputs(", \"reserved\": ", out);
    triple(out, m->a_reserved, m->b_reserved);
    fputs(", \"phases\": {", out);
    for (int p = 0; p < GA_PHASES; p++) {
        fprintf(out, "%s\"%s\": ", p ? ", " : "", ga_phase_name((ga_phase_t)p));
        triple(out, m->a_phase[p], m->b_phase[p]);
    }
    fputs("}, \"sites\": [", out);
    for (size_t i = 0; i < m->n_sites; i++) {
        const ga_compare_site_t *s = &m->sites[i];
        fputs(i ? ",\n        {\"name\": " : "\n        {\"name\": ", out);
        ga_report_json_str(out, s->name);
        fprintf(out,
                ", \"a_bytes\": %" PRId64 ", \"b_bytes\": %" PRId64 ", \"change_bytes\": %" PRId64
                ", \"a_blocks\": %" PRId64 ", \"b_blocks\": %" PRId64 "}",
                s->a_bytes, s->b_bytes, s->b_bytes - s->a_bytes, s->a_blocks, s->b_blocks);
    }
    fputs("]}", out);
}

static void pair_json(FILE *out, const ga_compare_pair_t *p)
{
    fputs("{\n    \"a\": ", out);
    side_json(out, &p->a);
    fputs(",\n    \"b\": ", out);
    side_json(out, &p->b);
    fputs(",\n    \"moments\": {\n      \"peak_reserved\": ", out);
    moment_json(out, &p->reserved);
    fputs(",\n      \"peak_allocated\": ", out);
    moment_json(out, &p->allocated);
    fputs("}}", out);
}

void ga_compare_json(FILE *out, const char *backend, const ga_compare_pair_t *const *pairs, size_t n,
                     const char *const *skipped, size_t n_skipped, const char *error)
{
    fputs("{\"tool\": \"galloc replay\", \"version\": 2, \"backend\": ", out);
    ga_report_json_str(out, backend);
    fputs(",\n  \"compare\": ", out);
    if (n > 0)
        pair_json(out, pairs[0]);
    else
        fputs("null", out);
    fputs(",\n  \"other_devices\": [", out);
    for (size_t i = 1; i < n; i++) {
        fputs(i > 1 ? ",\n  " : "\n  ", out);
        pair_json(out, pairs[i]);
    }
    fputs("],\n  \"skipped\": [", out);
    for (size_t i = 0; i < n_skipped; i++) {
        fputs(i ? ", " : "", out);
        ga_report_json_str(out, skipped[i]);
    }
    fputs("],\n  \"error\": ", out);
    if (error != NULL)
        ga_report_json_str(out, error);
    else
        fputs("null", out);
    fputs("}\n", out);
}
