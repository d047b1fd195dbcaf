/*
 * unit.c: what every report says about a loaded unit before any
 * configuration (report.h): its device and where the size comes from, the
 * settings it recorded, its state before the first entry, the cap its trace
 * shows; and PyTorch's OOM message with the figures a trace cannot know said
 * as ranges. One place, so galloc replay, galloc fit and the Python API say
 * the same about the same file.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "tools/readers/units.h"
#include "tools/report/report.h"

void ga_report_cap_text(const ga_job_cap_t *cap, char *buf, size_t len)
{
    char lo[32], hi[32];
    ga_units_format_size(cap->low, lo, sizeof(lo));
    ga_units_format_size(cap->high, hi, sizeof(hi));
    snprintf(buf, len, "[%s, %s)", lo, hi);
}

/* What the trace shows the device held ("11.03 GiB reserved at once (11.03
 * GiB at its first entry, 7.03 GiB at its end)"), then, with request, "and
 * a largest request of 1.00 GiB", into buf; "" when it shows nothing. */
static void shown_text(const ga_job_unit_t *u, bool request, char *buf, size_t len)
{
    char p[32], f[32], l[32], m[32];
    size_t n = 0;
    buf[0] = '\0';
    ga_units_format_size(u->reserved_peak, p, sizeof(p));
    ga_units_format_size(u->reserved_first, f, sizeof(f));
    ga_units_format_size(u->reserved_last, l, sizeof(l));
    ga_units_format_size(u->max_alloc, m, sizeof(m));
    if (u->reserved_peak && u->reserved_last)
        n = (size_t)snprintf(buf, len, "%s reserved at once (%s at its first entry, %s at its end)", p, f, l);
    else if (u->reserved_peak)
        n = (size_t)snprintf(buf, len, "%s reserved at once (its Total Reserved)", p);
    if (request && u->max_alloc && n < len)
        snprintf(buf + n, len - n, "%sa largest request of %s", n ? " and " : "", m);
}

/* The device's size when nothing says it: that it is assumed, how to set
 * it, and what the trace shows the device held at least. */
static void assumed_text(FILE *out, const ga_job_unit_t *u, const char *prefix)
{
    char a[32], shown[256], m[32];
    ga_units_format_size(u->memory + u->reserve, a, sizeof(a));
    bool more = u->reserved_peak > u->memory;
    shown_text(u, !more, shown, sizeof(shown));
    fprintf(out, "%sdevice size not recorded: %s assumed; --device-memory sets it", prefix, a);
    if (shown[0])
        fprintf(out, ". The trace shows %s", shown);
    if (more) /* the request after the verdict on the size, so "more" is the reserved bytes' */
        fprintf(out, ": more than assumed, so the device was larger; its largest request is %s",
                (ga_units_format_size(u->max_alloc, m, sizeof(m)), m));
    fprintf(out, "\n");
}

size_t ga_report_unit_events(const ga_job_unit_t *u, char *buf, size_t len)
{
    char ev[32], pro[32];
    uint64_t before = u->notes.prologue < u->n ? u->notes.prologue : u->n;
    ga_units_format_count(u->n - before, ev, sizeof(ev));
    ga_units_format_count(before, pro, sizeof(pro));
    if (before == 0)
        return (size_t)snprintf(buf, len, "%s events", ev);
    if (u->format == GA_FORMAT_KINETO) /* pinned stand-ins and the cache: the totals, not blocks */
        return (size_t)snprintf(buf, len, "%s events, %s stand-ins for the memory in use before the first event", ev,
                                pro);
    return (size_t)snprintf(buf, len, "%s events, %s block%s live before the first event (%s)", ev, pro,
                            before == 1 ? "" : "s", u->seeded ? "seeded" : "allocated first");
}

void ga_report_unit_text(FILE *out, const ga_job_unit_t *u, const char *prefix)
{
    char a[32], b[32];
    const char *rec = ga_job_recorded(u);
    if (rec != NULL && u->file->settings_known)
        fprintf(out,
                "%ssettings from the snapshot: %s (recorded PYTORCH_CUDA_ALLOC_CONF=\"%s\"); the column "
                "\"recorded\" replays them at the recorded addresses (--no-recorded: PyTorch's defaults)\n",
                prefix, rec[0] ? rec : "PyTorch's defaults", u->file->recorded_text);
    else if (rec != NULL)
        fprintf(out,
                "%ssettings from the snapshot: none recorded (an older PyTorch): the column \"recorded\" replays "
                "PyTorch's defaults at the recorded addresses\n",
                prefix);
    if (u->memory_source == GA_JOB_MEM_OOM_ENTRIES)
        fprintf(out,
                "%sdevice size from the snapshot: reserved + device_free at its oom entries (--device-memory "
                "overrides): what the allocator could use; the device's total is larger by the memory outside "
                "the allocator (CUDA context, other processes), which the snapshot does not record\n",
                prefix);
    else if (u->memory_source == GA_JOB_MEM_PROPERTIES)
        fprintf(out,
                "%sdevice size from the trace: its deviceProperties totalGlobalMem (--device-memory "
                "overrides)\n",
                prefix);
    else if (u->memory_source == GA_JOB_MEM_OPTION && u->recorded_memory != 0 &&
             u->recorded_memory != u->memory + u->reserve)
        fprintf(out, "%sdevice size given (--device-memory); the trace says %s (%s)\n", prefix,
                (ga_units_format_size(u->recorded_memory, a, sizeof(a)), a),
                ga_job_memory_source_text(u->recorded_source));
    else if (u->memory_source == GA_JOB_MEM_DEFAULT)
        assumed_text(out, u, prefix);
    if (u->memory_source != GA_JOB_MEM_DEFAULT && u->reserved_peak > u->memory) {
        char shown[256];
        shown_text(u, false, shown, sizeof(shown));
        fprintf(out, "%snote: the trace shows %s: more than the %s the allocator may use here\n", prefix, shown,
                (ga_units_format_size(u->memory, a, sizeof(a)), a));
    }
    if (u->reserve)
        fprintf(out, "%s%s reserved for memory outside the allocator (--reserve): the allocator may use %s\n", prefix,
                (ga_units_format_size(u->reserve, a, sizeof(a)), a),
                (ga_units_format_size(u->memory, b, sizeof(b)), b));
    if (u->seeded)
        fprintf(out,
                "%snote: the trace starts mid-run: the allocator state at its first entry was rebuilt backwards "
                "from the final segments (%zu segments, %" PRIu64 " live blocks) and seeded\n",
                prefix, u->seed.n_seg, u->seed.live_blocks);
    else if (u->midrun && u->seed_error[0])
        fprintf(out,
                "%snote: the trace starts mid-run and its state at the first entry cannot be rebuilt (%s): the "
                "%" PRIu64 " blocks live before it are allocated first instead\n",
                prefix, u->seed_error, u->notes.prologue);
    else if (u->notes.start.kind != GA_START_EVENTS)
        ga_report_start_text(out, &u->notes.start, prefix);
    else if (u->notes.prologue)
        fprintf(out, "%snote: %" PRIu64 " blocks were live before the trace's first entry and were allocated first\n",
                prefix, u->notes.prologue);
    if (u->cap.capped_ooms && u->cap.inferred) {
        char r[80];
        ga_report_cap_text(&u->cap, r, sizeof(r));
        ga_units_format_size(u->cap.low, a, sizeof(a));
        ga_units_format_size(u->cap.high, b, sizeof(b));
        fprintf(out,
                "%snote: capped: %" PRIu64 " traced OOM%s came with room on the device, so a memory fraction "
                "refused %s, and snapshots do not record it. The cap lay in %s: at least %s (the recorded run "
                "needed that much before) and below %s (what its failed allocation needed). Every "
                "configuration is replayed under that range from the first event\n",
                prefix, u->cap.capped_ooms, u->cap.capped_ooms == 1 ? "" : "s", u->cap.capped_ooms == 1 ? "it" : "them",
                r, a, b);
    } else if (u->cap.capped_ooms) {
        fprintf(out,
                "%snote: capped: %" PRIu64 " traced OOM%s came with room on the device, but the cap cannot be "
                "placed (%s): replayed without one\n",
                prefix, u->cap.capped_ooms, u->cap.capped_ooms == 1 ? "" : "s", u->cap.why);
    }
    if (u->notes.skipped)
        fprintf(out, "%snote: %" PRIu64 " entries not replayed (%s)\n", prefix, u->notes.skipped,
                u->format == GA_FORMAT_TORCH    ? "segment records, unknown actions"
                : u->format == GA_FORMAT_KINETO ? "profiler events other than GPU [memory] events"
                                                : "entries the replay does not use");
}

static void jstr_or_null(FILE *out, const char *s)
{
    if (s == NULL)
        fputs("null", out);
    else
        ga_report_json_str(out, s);
}

static const char *source_name(ga_job_memory_source_t s)
{
    static const char *const names[] = {"default", "option", "header", "device_properties", "oom_entries"};
    return (unsigned)s < sizeof(names) / sizeof(names[0]) ? names[s] : "?";
}

void ga_report_unit_json(FILE *out, const ga_job_unit_t *u)
{
    fputs("\"file\": ", out);
    ga_report_json_str(out, u->path);
    fputs(", \"unit\": ", out);
    ga_report_json_str(out, u->unit_label);
    fputs(", \"format\": ", out);
    ga_report_json_str(out, ga_reader_format_name(u->format));
    fprintf(out,
            ", \"device\": %d, \"events\": %zu,\n     \"device_memory\": %" PRIu64
            ", \"device_memory_source\": \"%s\", \"device_memory_from_snapshot\": %s"
            ", \"device_memory_from_trace\": %s, \"recorded_memory\": %" PRIu64 ", \"reserve\": %" PRIu64
            ",\n     \"settings_from_snapshot\": ",
            u->device, u->n, u->memory, source_name(u->memory_source),
            u->memory_source == GA_JOB_MEM_OOM_ENTRIES ? "true" : "false",
            u->memory_source == GA_JOB_MEM_PROPERTIES || u->memory_source == GA_JOB_MEM_HEADER ? "true" : "false",
            u->recorded_memory, u->reserve);
    const char *rec = ga_job_recorded(u);
    jstr_or_null(out, rec);
    fprintf(out, ", \"settings_recorded\": %s, \"recorded_pytorch_cuda_alloc_conf\": ",
            rec != NULL && u->file->settings_known ? "true" : "false");
    jstr_or_null(out, rec != NULL && u->file->settings_known ? u->file->recorded_text : NULL);
    fputs(", \"start\": ", out);
    ga_report_json_start(out, &u->notes.start);
    fputs(",\n     \"seeded\": ", out);
    if (u->seeded)
        fprintf(out, "{\"segments\": %zu, \"live_blocks\": %" PRIu64 "}", u->seed.n_seg, u->seed.live_blocks);
    else
        fputs("null", out);
    fputs(", \"seed_error\": ", out);
    jstr_or_null(out, u->midrun && u->seed_error[0] ? u->seed_error : NULL);
    fprintf(out, ", \"cap\": {\"capped_ooms\": %" PRIu64 ", \"inferred\": %s, \"low_bytes\": ", u->cap.capped_ooms,
            u->cap.inferred ? "true" : "false");
    if (u->cap.inferred)
        fprintf(out, "%" PRIu64 ", \"high_bytes\": %" PRIu64 ", \"why\": null}", u->cap.low, u->cap.high);
    else {
        fputs("null, \"high_bytes\": null, \"why\": ", out);
        jstr_or_null(out, u->cap.capped_ooms ? u->cap.why : NULL);
        fputs("}", out);
    }
    fprintf(out,
            ",\n     \"skipped_entries\": %" PRIu64 ", \"prologue_allocs\": %" PRIu64 ", \"tag_events\": %" PRIu64
            ", \"sleep_events\": %" PRIu64,
            u->notes.skipped, u->notes.prologue, u->tag_events, u->sleep_events);
    /* the device's lower bounds the trace shows, null where it does not say */
    fprintf(out, ",\n     \"device_memory_assumed\": %s, \"trace_events\": %" PRIu64 ", \"device_shown\": {",
            u->memory_source == GA_JOB_MEM_DEFAULT ? "true" : "false",
            u->n - (u->notes.prologue < u->n ? u->notes.prologue : u->n));
    const char *names[] = {"reserved_peak_bytes", "reserved_first_bytes", "reserved_last_bytes",
                           "largest_request_bytes"};
    uint64_t v[] = {u->reserved_peak, u->reserved_first, u->reserved_last, u->max_alloc};
    for (size_t i = 0; i < 4; i++) {
        fprintf(out, "%s\"%s\": ", i ? ", " : "", names[i]);
        if (v[i])
            fprintf(out, "%" PRIu64, v[i]);
        else
            fputs("null", out);
    }
    fputs("}", out);
}

/* Replace the first occurrence of what (what_len bytes) in s (len bytes of room) by with. */
static void replace(char *s, size_t len, const char *what, size_t what_len, const char *with)
{
    char *p = strstr(s, what);
    if (p == NULL)
        return;
    char tail[2048];
    snprintf(tail, sizeof(tail), "%s", p + what_len);
    size_t at = (size_t)(p - s);
    snprintf(s + at, len - at, "%s%s", with, tail);
}

void ga_report_oom_message(const ga_job_unit_t *u, const char *msg, char *buf, size_t len)
{
    snprintf(buf, len, "%s", msg);
    if (u == NULL)
        return;
    if (u->memory_source == GA_JOB_MEM_OOM_ENTRIES)
        replace(buf, len, "has a total capacity of ", strlen("has a total capacity of "),
                "has a total capacity of at least ");
    if (!u->cap.inferred)
        return;
    /* "... is free. 14.19 GiB allowed; Of ...": the figure before " allowed;" */
    char *al = strstr(buf, " allowed; ");
    if (al == NULL)
        return;
    char *start = al;
    int spaces = 0;
    while (start > buf && spaces < 2) { /* back over "14.19 GiB" */
        start--;
        if (*start == ' ')
            spaces++;
    }
    if (*start == ' ')
        start++;
    char with[200], lo[32], hi[32];
    ga_units_format_size(u->cap.low, lo, sizeof(lo));
    ga_units_format_size(u->cap.high, hi, sizeof(hi));
    snprintf(with, sizeof(with), "%s to %s allowed (inferred: snapshots do not record the fraction); ", lo, hi);
    char tail[2048];
    snprintf(tail, sizeof(tail), "%s", al + strlen(" allowed; "));
    size_t at = (size_t)(start - buf);
    snprintf(buf + at, len - at, "%s%s", with, tail);
}
