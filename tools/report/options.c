/*
 * options.c: one parser for the option tables of galloc replay and galloc
 * fit (see options.h).
 */
#include "tools/report/options.h"

#include <getopt.h>
#include <string.h>

#include "tools/readers/units.h"
#include "tools/report/outputs.h"
#include "tools/report/report.h"

#define FIRST_ID 256 /* getopt_long's value of row i is FIRST_ID + i: above every short option */

bool ga_opts_count(const char *s, uint64_t max, size_t *out)
{
    uint64_t v = 0;
    if (*s == '\0')
        return false;
    for (; *s != '\0'; s++) {
        unsigned d = (unsigned char)*s - '0';
        if (d > 9)
            return false;
        v = v > (UINT64_MAX - d) / 10 ? UINT64_MAX : v * 10 + d;
    }
    if (v == 0 || v > max || v > SIZE_MAX)
        return false;
    *out = (size_t)v;
    return true;
}

/* Read value into row o's dest: 0, or the usage error. */
static int take(const char *cmd, const ga_opt_t *o, const char *value)
{
    uint64_t size;
    switch (o->kind) {
    case GA_OPT_FLAG: *(bool *)o->dest = true; return 0;
    case GA_OPT_STRING: *(const char **)o->dest = value; return 0;
    case GA_OPT_SIZE:
        if (!ga_units_parse_size(value, strlen(value), &size) || size < o->limit)
            return ga_report_usage_error(cmd, o->refusal, value);
        *(uint64_t *)o->dest = size;
        return 0;
    case GA_OPT_COUNT:
        return ga_opts_count(value, o->limit, o->dest) ? 0 : ga_report_usage_error(cmd, o->refusal, value);
    case GA_OPT_FORMAT: return ga_reader_format_parse(value, o->dest) ? 0 : ga_report_bad_format(cmd, value);
    case GA_OPT_CALL: return o->call(value, o->dest) == 0 ? 0 : ga_report_usage_error(cmd, o->refusal, value);
    }
    return ga_report_usage_error(cmd, "unknown option %s", o->name);
}

int ga_opts_parse(const char *cmd, const ga_opt_t *opts, size_t n, void (*usage)(FILE *out), int argc, char **argv)
{
    struct option longs[GA_OPTS_MAX + 2];
    if (n > GA_OPTS_MAX)
        return ga_report_usage_error(cmd, "%s", "too many options in the command's table");
    for (size_t i = 0; i < n; i++)
        longs[i] = (struct option){opts[i].name, opts[i].kind == GA_OPT_FLAG ? no_argument : required_argument, NULL,
                                   FIRST_ID + (int)i};
    longs[n] = (struct option){"help", no_argument, NULL, 'h'};
    longs[n + 1] = (struct option){NULL, 0, NULL, 0};
    optind = 0; /* reset getopt: a command may run more than once in a process (tests, tools/lib) */
    opterr = 0;
    int o;
    while ((o = getopt_long(argc, argv, ":h", longs, NULL)) != -1) {
        if (o == 'h') {
            usage(stdout);
            return -1;
        }
        if (o == ':')
            return ga_report_usage_error(cmd, "option %s needs a value", argv[optind - 1]);
        if (o < FIRST_ID || o >= FIRST_ID + (int)n)
            return ga_report_usage_error(cmd, "unknown option %s", argv[optind - 1]);
        int rc = take(cmd, &opts[o - FIRST_ID], optarg);
        if (rc != 0)
            return rc;
    }
    if (optind >= argc)
        return ga_report_usage_error(cmd, "%s", "no trace file given");
    return 0;
}

int ga_opts_check_plot(const char *cmd, const char *path)
{
    char err[512];
    if (path != NULL && ga_outputs_plot_check(path, err, sizeof(err)) != 0)
        return ga_report_usage_error(cmd, "--plot %s", err);
    return 0;
}

int ga_opts_check_reserve(const char *cmd, uint64_t device_memory, uint64_t reserve)
{
    if (device_memory == 0 || reserve < device_memory)
        return 0;
    char a[32], b[32], msg[200];
    ga_units_format_size(reserve, a, sizeof(a));
    ga_units_format_size(device_memory, b, sizeof(b));
    snprintf(msg, sizeof(msg), "--reserve %s is not less than --device-memory %s: the allocator would have no memory",
             a, b);
    return ga_report_usage_error(cmd, "%s", msg);
}
