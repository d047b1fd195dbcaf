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
