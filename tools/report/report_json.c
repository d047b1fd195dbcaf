/*
 * report_json.c: `galloc replay --json`, one JSON document for the whole run:
 *
 *   {"tool": "galloc replay", "version": 1, "backend": "sim", "environment": {...},
 *    "traces": [{"file", "unit", "format", "device_memory", "events", "error",
 *                "settings_from_snapshot" (the recorded settings replayed, or null),
 *                "device_memory_from_snapshot" (the size is the snapshot's oom bound),
 *                "device_memory_from_trace" (the size is the one the trace records),
 *                "seeded" ({"segments", "live_blocks"} of a mid-run snapshot's rebuilt state, or null),
 *                "results": [{"conf", "label", "memory_stats": {122 keys}, "peak_requested_bytes",
 *                             "peak_reserved_bytes", "ooms": [{"event", "size", "message", ...}],
 *                             "events", "seconds", ...}]}]}
 *
 * memory_stats has PyTorch's flattened keys in PyTorch's order (from
 * galloc_stats_foreach), so a script written against torch.cuda.memory_stats()
 * reads it unchanged. Strings are escaped per RFC 8259; bytes that are not
 * printable ASCII are written as \u00XX escapes so the output is valid UTF-8
 * whatever a trace's annotations hold.
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tools/report/report.h"
#include "tools/snapshot/seed.h"

static void jstr(FILE *out, const char *s)
{
    fputc('"', out);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(out, "\\%c", *p);
        else if (*p == '\n')
            fputs("\\n", out);
        else if (*p == '\t')
            fputs("\\t", out);
        else if (*p < 0x20 || *p >= 0x7f)
            fprintf(out, "\\u%04x", *p);
        else
            fputc(*p, out);
    }
    fputc('"', out);
}

void ga_report_json_str(FILE *out, const char *s)
{
    jstr(out, s);
}

static void jstr_or_null(FILE *out, const char *s)
{
    if (s == NULL || s[0] == '\0')
        fputs("null", out);
    else
        jstr(out, s);
}

static void jnum(FILE *out, double v)
{
    if (isfinite(v))
        fprintf(out, "%.9g", v);
    else
        fputs("null", out);
}

typedef struct visit {
    FILE *out;
    bool first;
} visit_t;

static int stat_key(void *ctx, const char *key, int64_t value)
{
    visit_t *v = ctx;
    fprintf(v->out, "%s\n          ", v->first ? "" : ",");
    jstr(v->out, key);
    fprintf(v->out, ": %" PRId64, value);
    v->first = false;
    return 0;
}

void ga_report_json_oom_facts(FILE *out, const ga_oom_facts_t *f)
{
    jstr(out, ga_oom_class_name(f->cls));
    fprintf(out, ", \"live_bytes\": %" PRId64 ", \"cached_free_bytes\": %" PRId64
                 ", \"largest_free_block\": %" PRId64 ", \"device_free_bytes\": %" PRIu64
                 ", \"device_total_bytes\": %" PRIu64 ", \"memory_fraction\": %.17g, \"limit_bytes\": %" PRIu64
                 ", \"usable_free_bytes\": %" PRIu64,
            f->live, f->cached_free, f->largest_free_block, f->device_free, f->device_total, f->fraction, f->limit,
            f->usable_free);
}

static void oom_json(FILE *out, const ga_replay_oom_t *o, bool first)
{
    fprintf(out, "%s\n          {\"event\": %" PRIu64 ", \"size\": %" PRIu64 ", \"message\": ", first ? "" : ",",
            o->event, o->size);
    jstr(out, o->message);
    fprintf(out, ", \"expected\": %s, \"prologue\": %s, \"line\": %" PRIu64 ", \"annotation\": ",
            o->expected ? "true" : "false", o->prologue ? "true" : "false", o->where);
    jstr_or_null(out, o->annotation);
    fprintf(out, ", \"allocated_bytes\": %" PRId64 ", \"reserved_bytes\": %" PRId64 ", \"class\": ", o->allocated,
            o->reserved);
    ga_report_json_oom_facts(out, &o->facts);
    fputs("}", out);
}

/* galloc_sleep_stats at the end (galloc.sleep.* names without the prefix),
 * null when the allocator has none. */
static void sleep_json(FILE *out, const ga_replay_column_t *c)
{
    if (c->create_status != GALLOC_OK || !c->has_sleep_stats) {
        fputs("null", out);
        return;
    }
    const galloc_sleep_stats_t *s = &c->sleep;
    fprintf(out, "{\"tags\": %" PRIu64 ", \"tags_asleep\": %" PRIu64 ", \"num_sleep\": %" PRIu64
                 ", \"num_wake\": %" PRIu64 ", \"bytes_slept\": %" PRIu64 ", \"bytes_woken\": %" PRIu64
                 ",\n          \"bytes_asleep\": %" PRIu64 ", \"bytes_offloaded\": %" PRIu64
                 ", \"peak_bytes_offloaded\": %" PRIu64 ", \"num_failed\": %" PRIu64 "}",
            s->tags, s->tags_asleep, s->num_sleep, s->num_wake, s->bytes_slept, s->bytes_woken, s->bytes_asleep,
            s->bytes_offloaded, s->peak_bytes_offloaded, s->num_failed);
}

static void column_json(FILE *out, const ga_replay_column_t *c, bool first)
{
    fprintf(out, "%s\n      {\"conf\": ", first ? "" : ",");
    jstr(out, strcmp(c->label, "defaults") == 0 ? "" : c->label);
    fputs(", \"label\": ", out);
    jstr(out, c->label);
    fputs(", \"galloc_conf\": ", out);
    jstr(out, c->conf);
    fputs(",\n        \"create_error\": ", out);
    if (c->create_status != GALLOC_OK) {
        jstr(out, c->create_error);
        fputs(", \"create_status\": ", out);
        jstr(out, galloc_status_name(c->create_status));
    } else {
        fputs("null", out);
    }
    fprintf(out, ",\n        \"events\": %" PRIu64 ", \"seconds\": ", c->events);
    jnum(out, c->seconds);
    fputs(", \"events_per_second\": ", out);
    jnum(out, c->seconds > 0 ? (double)c->events / c->seconds : NAN);
    fputs(", \"verdict\": ", out);
    jstr(out, ga_report_verdict(c));
    bool ok = c->create_status == GALLOC_OK;
    fprintf(out, ",\n        \"peak_requested_bytes\": %" PRId64 ", \"peak_allocated_bytes\": %" PRId64
                 ", \"peak_reserved_bytes\": %" PRId64,
            ok ? c->stats.requested_bytes[GALLOC_STAT_ALL].peak : 0,
            ok ? c->stats.allocated_bytes[GALLOC_STAT_ALL].peak : 0,
            ok ? c->stats.reserved_bytes[GALLOC_STAT_ALL].peak : 0);
    fprintf(out, ",\n        \"ooms_total\": %" PRIu64 ", \"expected_ooms\": %" PRIu64
                 ", \"expected_ooms_avoided\": %" PRIu64 ", \"capped_ooms\": %" PRIu64 ", \"cap_low\": %" PRIu64 ", \"cap_high\": %" PRIu64
                 ", \"ooms\": [",
            c->ooms_total, c->expected_ooms, c->expected_avoided, c->capped_ooms, c->cap_low, c->cap_high);
    for (size_t k = 0; k < c->n_ooms; k++)
        oom_json(out, &c->ooms[k], k == 0);
    fprintf(out, "%s],\n        \"unmatched_frees\": %" PRIu64 ", \"duplicate_allocs\": %" PRIu64
                 ", \"errors\": %" PRIu64 ", \"first_error\": ",
            c->n_ooms ? "\n        " : "", c->unmatched, c->duplicates, c->errors);
    jstr_or_null(out, c->first_error);
    fprintf(out, ", \"tag_anomalies\": %" PRIu64 ", \"first_tag_anomaly\": ", c->tag_anomalies);
    jstr_or_null(out, c->first_tag_anomaly);
    fputs(",\n        \"sleep\": ", out);
    sleep_json(out, c);
    fputs(",\n        \"snapshot\": ", out);
    if (c->snapshot_path == NULL) {
        fputs("null", out);
    } else {
        fputs("{\"path\": ", out);
        jstr(out, c->snapshot_path);
        fputs(", \"error\": ", out);
        jstr_or_null(out, c->snapshot_error);
        fputs("}", out);
    }
    fputs(",\n        \"memory_stats\": ", out);
    if (!ok) {
        fputs("null}", out);
        return;
    }
    visit_t v = {out, true};
    fputs("{", out);
    galloc_stats_foreach(&c->stats, stat_key, &v);
    fputs("\n        }}", out);
}

void ga_report_json_begin(FILE *out, const char *backend, bool env)
{
    fputs("{\"tool\": \"galloc replay\", \"version\": 1, \"backend\": ", out);
    jstr(out, backend);
    fputs(",\n  \"environment\": {", out);
    bool first = true;
    for (size_t i = 0; env && ga_report_env[i] != NULL; i++) {
        const char *v = getenv(ga_report_env[i]);
        if (v == NULL)
            continue;
        fprintf(out, "%s", first ? "" : ", ");
        jstr(out, ga_report_env[i]);
        fputs(": ", out);
        jstr(out, v);
        first = false;
    }
    fputs("},\n  \"traces\": [", out);
}

void ga_report_json_trace(FILE *out, const ga_report_trace_t *t, bool first)
{
    const ga_replay_t *rp = t->rp;
    fprintf(out, "%s\n    {\"file\": ", first ? "" : ",");
    jstr(out, t->path);
    fputs(", \"unit\": ", out);
    jstr(out, t->unit);
    fputs(", \"format\": ", out);
    jstr(out, ga_reader_format_name(t->format));
    fputs(", \"error\": ", out);
    jstr_or_null(out, t->error);
    fputs(", \"settings_from_snapshot\": ", out);
    jstr_or_null(out, t->settings);
    fprintf(out, ", \"device_memory_from_snapshot\": %s, \"device_memory_from_trace\": %s, \"seeded\": ",
            t->device_from_snapshot ? "true" : "false", t->device_from_trace ? "true" : "false");
    if (t->seed != NULL)
        fprintf(out, "{\"segments\": %zu, \"live_blocks\": %" PRIu64 "}", t->seed->n_seg, t->seed->live_blocks);
    else
        fputs("null", out);
    if (rp == NULL) {
        fputs(", \"results\": []}", out);
        return;
    }
    fprintf(out, ",\n     \"device_memory\": %" PRIu64 ", \"events\": %" PRIu64 ", \"read_seconds\": ",
            rp->device_memory, rp->events);
    jnum(out, rp->read_seconds);
    fprintf(out, ", \"skipped_entries\": %" PRIu64 ", \"prologue_allocs\": %" PRIu64
                 ", \"tag_events\": %" PRIu64 ", \"sleep_events\": %" PRIu64 ", \"no_sleep\": %s, \"start\": ",
            rp->notes.skipped, rp->notes.prologue, rp->tag_events, rp->sleep_events, rp->no_sleep ? "true" : "false");
    ga_report_json_start(out, &rp->notes.start);
    fputs(", \"plot\": ", out);
    if (t->plot_path == NULL && t->plot_error == NULL) {
        fputs("null", out);
    } else {
        fputs("{\"path\": ", out);
        jstr_or_null(out, t->plot_path);
        fputs(", \"error\": ", out);
        jstr_or_null(out, t->plot_error);
        fputs("}", out);
    }
    fputs(",\n     \"results\": [", out);
    for (size_t i = 0; i < rp->n_cols; i++)
        column_json(out, &rp->cols[i], i == 0);
    fputs("]}", out);
}

void ga_report_json_end(FILE *out)
{
    fputs("\n  ]\n}\n", out);
}
