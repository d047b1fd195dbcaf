/*
 * report_json.c: `galloc replay --json`, one JSON document for the whole run:
 *
 *   {"tool": "galloc replay", "version": 2, "backend": "sim", "environment": {...},
 *    "traces": [{the unit (ga_report_unit_json: "file", "unit", "format", "device",
 *                "events", "device_memory", "device_memory_source", "recorded_memory",
 *                "settings_from_snapshot", "start", "seeded", "seed_error", "cap", ...),
 *                "error", "read_seconds", "no_sleep", "plot",
 *                "results": [{"conf", "recorded", "label", "verdict", "fits",
 *                             "depends_on_cap", "cap_bytes", "cap_parts",
 *                             "memory_stats": {123 keys}, "peak_requested_bytes",
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
    fprintf(out,
            ", \"live_bytes\": %" PRId64 ", \"cached_free_bytes\": %" PRId64 ", \"largest_free_block\": %" PRId64
            ", \"device_free_bytes\": %" PRIu64 ", \"device_total_bytes\": %" PRIu64
            ", \"memory_fraction\": %.17g, \"limit_bytes\": %" PRIu64 ", \"usable_free_bytes\": %" PRIu64
            ", \"before_first_event\": %s",
            f->live, f->cached_free, f->largest_free_block, f->device_free, f->device_total, f->fraction, f->limit,
            f->usable_free, f->at_start ? "true" : "false");
}

static void oom_json(FILE *out, const ga_job_unit_t *u, const ga_replay_oom_t *o, bool first)
{
    fprintf(out, "%s\n          {\"event\": %" PRIu64 ", \"size\": %" PRIu64 ", \"message\": ", first ? "" : ",",
            o->event, o->size);
    char msg[GALLOC_ERROR_MAX + 256];
    ga_report_oom_message(u, o->message, msg, sizeof(msg));
    jstr(out, msg);
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
    fprintf(out,
            "{\"tags\": %" PRIu64 ", \"tags_asleep\": %" PRIu64 ", \"num_sleep\": %" PRIu64 ", \"num_wake\": %" PRIu64
            ", \"bytes_slept\": %" PRIu64 ", \"bytes_woken\": %" PRIu64 ",\n          \"bytes_asleep\": %" PRIu64
            ", \"bytes_offloaded\": %" PRIu64 ", \"peak_bytes_offloaded\": %" PRIu64 ", \"num_failed\": %" PRIu64 "}",
            s->tags, s->tags_asleep, s->num_sleep, s->num_wake, s->bytes_slept, s->bytes_woken, s->bytes_asleep,
            s->bytes_offloaded, s->peak_bytes_offloaded, s->num_failed);
}

/* The outcome of each part of a cap range. */
static void parts_json(FILE *out, const ga_replay_column_t *c)
{
    fputs("[", out);
    for (size_t i = 0; i < c->n_parts; i++) {
        const ga_replay_part_t *p = &c->parts[i];
        fprintf(out,
                "%s{\"cap_from_bytes\": %" PRIu64 ", \"cap_to_bytes\": %" PRIu64 ", \"fits\": %s, \"ooms\": %" PRIu64
                ", \"first_oom_event\": ",
                i ? ", " : "", p->from, p->to, p->ooms ? "false" : "true", p->ooms);
        if (p->first_oom_event == UINT64_MAX)
            fputs("null", out);
        else
            fprintf(out, "%" PRIu64, p->first_oom_event);
        fprintf(out, ", \"peak_reserved_bytes\": %" PRId64 ", \"figures\": %s}", p->peak_reserved,
                i == c->main_part ? "true" : "false");
    }
    fputs("]", out);
}

static void column_json(FILE *out, const ga_job_unit_t *u, const ga_replay_column_t *c, bool first)
{
    fprintf(out, "%s\n      {\"conf\": ", first ? "" : ",");
    jstr(out, c->user_conf);
    fprintf(out, ", \"recorded\": %s", c->recorded ? "true" : "false");
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
    char verdict[128];
    jstr(out, ga_report_verdict(c, verdict, sizeof(verdict)));
    bool ok = c->create_status == GALLOC_OK;
    fprintf(out,
            ",\n        \"peak_requested_bytes\": %" PRId64 ", \"peak_allocated_bytes\": %" PRId64
            ", \"peak_reserved_bytes\": %" PRId64,
            ok ? c->stats.requested_bytes[GALLOC_STAT_ALL].peak : 0,
            ok ? c->stats.allocated_bytes[GALLOC_STAT_ALL].peak : 0,
            ok ? c->stats.reserved_bytes[GALLOC_STAT_ALL].peak : 0);
    fprintf(out,
            ",\n        \"fits\": %s, \"depends_on_cap\": %s, \"cap_bytes\": ", ga_replay_fits(c) ? "true" : "false",
            ga_replay_depends(c) ? "true" : "false");
    if (c->cap)
        fprintf(out, "%" PRIu64, c->cap);
    else
        fputs("null", out);
    fputs(", \"cap_parts\": ", out);
    parts_json(out, c);
    fprintf(out,
            ",\n        \"ooms_total\": %" PRIu64 ", \"expected_ooms\": %" PRIu64
            ", \"expected_ooms_avoided\": %" PRIu64 ", \"ooms\": [",
            c->ooms_total, c->expected_ooms, c->expected_avoided);
    for (size_t k = 0; k < c->n_ooms; k++)
        oom_json(out, u, &c->ooms[k], k == 0);
    fprintf(out,
            "%s],\n        \"unmatched_frees\": %" PRIu64 ", \"duplicate_allocs\": %" PRIu64 ", \"errors\": %" PRIu64
            ", \"first_error\": ",
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
    fputs(",\n        \"owners\": ", out);
    ga_report_owners_json(out, u, c->owners);
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
    fputs("{\"tool\": \"galloc replay\", \"version\": 2, \"backend\": ", out);
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
    fprintf(out, "%s\n    {", first ? "" : ",");
    if (t->u != NULL) {
        ga_report_unit_json(out, t->u);
    } else {
        fputs("\"file\": ", out);
        jstr(out, t->path);
        fputs(", \"unit\": \"\", \"format\": ", out);
        jstr(out, ga_reader_format_name(t->format));
    }
    fputs(", \"error\": ", out);
    jstr_or_null(out, t->error);
    if (rp == NULL) {
        fputs(", \"results\": []}", out);
        return;
    }
    fputs(", \"read_seconds\": ", out);
    jnum(out, t->load_seconds);
    fprintf(out, ", \"no_sleep\": %s, \"plot\": ", rp->no_sleep ? "true" : "false");
    if (t->plot_path == NULL && t->plot_error == NULL) {
        fputs("null", out);
    } else {
        fputs("{\"path\": ", out);
        jstr_or_null(out, t->plot_path);
        fputs(", \"error\": ", out);
        jstr_or_null(out, t->plot_error);
        fputs("}", out);
    }
    bool owned = false;
    for (size_t i = 0; i < rp->n_cols; i++)
        owned |= rp->cols[i].owners != NULL;
    fputs(",\n     \"owner_sites\": ", out);
    if (owned)
        ga_report_owner_sites_json(out, &t->u->owners);
    else
        fputs("null", out);
    fputs(",\n     \"results\": [", out);
    for (size_t i = 0; i < rp->n_cols; i++)
        column_json(out, t->u, &rp->cols[i], i == 0);
    fputs("]}", out);
}

void ga_report_json_end(FILE *out)
{
    fputs("\n  ]\n}\n", out);
}
