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

/* The older Kineto layout's guess (read_kineto.c, kineto_match.c). */
static const char by_size_text[] =
    "frees matched to live allocations of the same size, most recent first (LIFO, as a training step frees its "
    "temporaries)";
static const char not_included_text[] = "memory in use before the first event is not included";

void ga_report_start_text(FILE *out, const ga_reader_start_t *s, const char *prefix)
{
    char live[32], res[32], cache[32], pa[32], pr[32];
    if (s->by_size) { /* first: every figure rests on it */
        ga_units_format_count(s->unmatched_frees, cache, sizeof(cache));
        fprintf(out,
                "%snote: no addresses in the trace (older Kineto layout): %s; %s free%s with no live "
                "allocation of %s size skipped%s%s\n",
                prefix, by_size_text, cache, s->unmatched_frees == 1 ? "" : "s",
                s->unmatched_frees == 1 ? "its" : "their", s->kind == GA_START_UNKNOWN ? "; " : "",
                s->kind == GA_START_UNKNOWN ? not_included_text : "");
    }
    switch (s->kind) {
    case GA_START_SEEDED:
        ga_units_format_bytes((int64_t)s->live, live, sizeof(live));
        ga_units_format_bytes((int64_t)s->reserved, res, sizeof(res));
        ga_units_format_bytes(s->reserved > s->live ? (int64_t)(s->reserved - s->live) : 0, cache, sizeof(cache));
        fprintf(out,
                "%snote: the trace starts mid-run: %s allocated and %s reserved before its first event (its "
                "totals); replayed from that state: %s pinned (never freed), %s cached free\n",
                prefix, live, res, live, cache);
        if (s->peak_allocated || s->peak_reserved) {
            ga_units_format_bytes((int64_t)s->peak_allocated, pa, sizeof(pa));
            ga_units_format_bytes((int64_t)s->peak_reserved, pr, sizeof(pr));
            fprintf(out,
                    "%snote: the trace's own peaks: Total Allocated %s (%" PRIu64 " B), Total Reserved %s "
                    "(%" PRIu64 " B)\n",
                    prefix, pa, s->peak_allocated, pr, s->peak_reserved);
        }
        return;
    case GA_START_UNKNOWN:
        if (s->by_size)
            return; /* said above */
        fprintf(out,
                "%snote: the trace has no allocator totals (Total Allocated, Total Reserved): if it starts "
                "mid-run, memory allocated or reserved before its first event is not included in these "
                "figures, and a device size found here is too small by that much\n",
                prefix);
        return;
    case GA_START_EVENTS: return;
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
    if (s->by_size) {
        fputs(", \"addresses\": false, \"free_matching\": ", out);
        ga_report_json_str(out, by_size_text);
        fprintf(out, ", \"unmatched_frees\": %" PRIu64, s->unmatched_frees);
    }
    if (s->peak_allocated || s->peak_reserved)
        fprintf(out, ", \"trace_peak_allocated_bytes\": %" PRIu64 ", \"trace_peak_reserved_bytes\": %" PRIu64,
                s->peak_allocated, s->peak_reserved);
    fputs("}", out);
}
