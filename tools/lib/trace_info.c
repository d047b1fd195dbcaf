/*
 * trace_info.c: galloc_tools_trace_info, a trace file loaded as the commands
 * load it (tools/job: the same readers, the same device size, start state
 * and cap) and described as galloc replay describes each unit (report/unit.c),
 * so galloc.load_trace in Python says what the commands say about the file.
 * Nothing is replayed but the cap's inference, as the commands do on load.
 */
#include <galloc/galloc_tools.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/engine/replay.h"
#include "tools/job/job.h"
#include "tools/report/report.h"

/* The summary of the loaded job into out. */
static void summarize(const ga_job_t *job, const char *path, FILE *out)
{
    const ga_job_unit_t *u0 = job->n_units ? &job->units[0] : NULL;
    fputs("{\"file\": ", out);
    ga_report_json_str(out, path);
    fputs(", \"format\": ", out);
    ga_report_json_str(out, ga_reader_format_name(u0 != NULL ? u0->format : GA_FORMAT_AUTO));
    fprintf(out, ", \"device_memory\": %" PRIu64 ", \"units\": [", u0 != NULL ? u0->memory : 0);
    for (size_t i = 0; i < job->n_units; i++) {
        const ga_job_unit_t *u = &job->units[i];
        fprintf(out, "%s{\"label\": ", i ? ", " : "");
        ga_report_json_str(out, u->unit_label);
        fprintf(out,
                ", \"allocs\": %" PRIu64 ", \"frees\": %" PRIu64 ", \"ooms\": %" PRIu64 ", \"annotations\": %" PRIu64
                ", \"other\": %" PRIu64 ",\n     ",
                u->allocs, u->frees, u->ooms, u->annotations, u->other);
        ga_report_unit_json(out, u);
        fputs("}", out);
    }
    fputs("]}\n", out);
}

int galloc_tools_trace_info(const char *path, const char *format, char **json, char **messages)
{
    if (json == NULL || messages == NULL)
        return -1;
    *json = NULL;
    *messages = NULL;
    char err[1024] = "";
    ga_job_opts_t o = {.format = GA_FORMAT_AUTO};
    int status = 2;
    ga_job_t job;
    memset(&job, 0, sizeof(job));
    if (path == NULL) {
        snprintf(err, sizeof(err), "no trace file given");
    } else if (format != NULL && !ga_reader_format_parse(format, &o.format)) {
        char names[128];
        ga_reader_format_list(names, sizeof(names));
        snprintf(err, sizeof(err), "unknown format \"%s\" (auto, %s)", format, names);
    } else if (ga_job_add(&job, path, &o, err, sizeof(err)) == 0) {
        ga_replay_infer_caps(&job, NULL, false);
        size_t len = 0;
        FILE *out = open_memstream(json, &len);
        if (out == NULL) {
            ga_job_free(&job);
            return -1;
        }
        summarize(&job, path, out);
        ga_job_free(&job);
        if (fclose(out) != 0 || *json == NULL) {
            free(*json);
            *json = NULL;
            return -1;
        }
        status = 0;
        err[0] = '\0';
    } else {
        ga_job_free(&job); /* what a failed load leaves (its grown tables) */
    }
    *messages = strdup(err);
    if (*messages == NULL) {
        free(*json);
        *json = NULL;
        return -1;
    }
    return status;
}
