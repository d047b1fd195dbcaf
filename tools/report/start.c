/*
 * start.c: what the reports say about a trace's state before its first event
 * (ga_reader_start_t): how much a mid-run trace's totals say was allocated
 * and reserved, how the replay modelled it, and, when the trace cannot tell,
 * what the figures leave out. Shared by galloc replay and galloc fit, text
 * and JSON, so both say the same.
 */
#include <inttypes.h>

#include "tools/readers/units.h"
#include "tools/report/report.h"

/* How the prologue recreates a seeded start (read_kineto.c, ga_replay_reserve). */
static const char model_text[] =
    "live bytes as pinned blocks never freed, the reserved remainder as cached free segments "
    "(as much as the device holds)";

void ga_report_start_text(FILE *out, const ga_reader_start_t *s, const char *prefix)
{
    char live[32], res[32], cache[32], pa[32], pr[32];
    switch (s->kind) {
    case GA_START_SEEDED:
        ga_units_format_bytes((int64_t)s->live, live, sizeof(live));
        ga_units_format_bytes((int64_t)s->reserved, res, sizeof(res));
        ga_units_format_bytes(s->reserved > s->live ? (int64_t)(s->reserved - s->live) : 0, cache, sizeof(cache));
        fprintf(out, "%snote: the trace starts mid-run: %s allocated and %s reserved before its first event (its "
                     "totals); replayed from that state: %s pinned (never freed), %s cached free\n",
                prefix, live, res, live, cache);
        if (s->peak_allocated || s->peak_reserved) {
            ga_units_format_bytes((int64_t)s->peak_allocated, pa, sizeof(pa));
            ga_units_format_bytes((int64_t)s->peak_reserved, pr, sizeof(pr));
            fprintf(out, "%snote: the trace's own peaks: Total Allocated %s (%" PRIu64 " B), Total Reserved %s "
                         "(%" PRIu64 " B)\n",
                    prefix, pa, s->peak_allocated, pr, s->peak_reserved);
        }
        return;
    case GA_START_UNKNOWN:
        fprintf(out, "%snote: the trace has no allocator totals (Total Allocated, Total Reserved): if it starts "
                     "mid-run, memory allocated or reserved before its first event is not included in these "
                     "figures, and a device size found here is too small by that much\n",
                prefix);
        return;
    case GA_START_EVENTS:
        return;
    }
}

void ga_report_json_start(FILE *out, const ga_reader_start_t *s)
{
    static const char *const kinds[] = {"events", "seeded", "unknown"};
    fprintf(out, "{\"kind\": \"%s\"", (unsigned)s->kind < 3 ? kinds[s->kind] : "?");
    if (s->kind == GA_START_SEEDED) {
        fprintf(out, ", \"live_bytes\": %" PRIu64 ", \"reserved_bytes\": %" PRIu64 ", \"model\": ", s->live,
                s->reserved);
        ga_report_json_str(out, model_text);
    }
    if (s->kind == GA_START_UNKNOWN)
        fputs(", \"not_included\": \"memory allocated or reserved before the first event\"", out);
    if (s->peak_allocated || s->peak_reserved)
        fprintf(out, ", \"trace_peak_allocated_bytes\": %" PRIu64 ", \"trace_peak_reserved_bytes\": %" PRIu64,
                s->peak_allocated, s->peak_reserved);
    fputs("}", out);
}
