/*
 * usage.c: what galloc replay and galloc fit say about their own command
 * line (report.h): a usage error names the command and where its help is; a
 * bad --format lists the registry's formats; the environment variables that
 * apply under every configuration are named once for both.
 */
#include <stdio.h>

#include "tools/readers/trace_reader.h"
#include "tools/report/report.h"

const char *const ga_report_env[] = {"PYTORCH_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF", "GALLOC_CONF", NULL};

int ga_report_usage_error(const char *cmd, const char *fmt, const char *arg)
{
    fprintf(stderr, "galloc %s: ", cmd);
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n(galloc %s --help for usage)\n", cmd);
    return GA_EXIT_USAGE;
}

int ga_report_bad_format(const char *cmd, const char *arg)
{
    char formats[128], fmt[192];
    ga_reader_format_list(formats, sizeof(formats));
    snprintf(fmt, sizeof(fmt), "bad --format \"%%s\" (auto, %s)", formats);
    return ga_report_usage_error(cmd, fmt, arg);
}
