/*
 * options.h: the command line of galloc replay and galloc fit: one option
 * table and one parser (getopt_long) for every subcommand. The options the
 * commands share are rows defined here once (GA_OPT_DEVICE_MEMORY, ...), so
 * each is spelt, read and refused the same everywhere; a command's table is
 * those rows and its own. Every refusal is a usage error (usage.c: "galloc
 * CMD: ...", where the help is, exit 2).
 *
 * Thread-safety: none; getopt's state is global (tools/lib serializes).
 */
#ifndef GA_TOOLS_REPORT_OPTIONS_H
#define GA_TOOLS_REPORT_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "tools/readers/trace_reader.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How an option's value is read, and what its dest is. */
typedef enum ga_opt_kind {
    GA_OPT_FLAG,   /* no value: *(bool *)dest = true */
    GA_OPT_STRING, /* *(const char **)dest = the value (it points into argv) */
    GA_OPT_SIZE,   /* a size with a unit (80GiB, 1.5GB, bytes), at least limit: *(uint64_t *)dest */
    GA_OPT_COUNT,  /* a count from 1 to limit (ga_opts_count): *(size_t *)dest */
    GA_OPT_FORMAT, /* a trace format's name (a bad one lists the registry's): *(ga_format_t *)dest */
    GA_OPT_CALL    /* call(value, dest) reads and stores it: 0, or -1 to refuse it */
} ga_opt_kind_t;

/* One row of a command's option table. */
typedef struct ga_opt {
    const char *name; /* the long name, without "--" */
    ga_opt_kind_t kind;
    void *dest;                                 /* where the value goes (by kind) */
    const char *refusal;                        /* the usage error for a value refused, with %s for the value */
    uint64_t limit;                             /* SIZE: the smallest value; COUNT: the largest */
    int (*call)(const char *value, void *dest); /* CALL only */
} ga_opt_t;

/* dest of each kind, type-checked. */
/* One-line wrappers, one a line. */
/* clang-format off */
static inline void *ga_opt_bool(bool *p) { return p; }
static inline void *ga_opt_str(const char **p) { return p; }
static inline void *ga_opt_u64(uint64_t *p) { return p; }
static inline void *ga_opt_format(ga_format_t *p) { return p; }
/* clang-format on */

/* The rows galloc replay and galloc fit share. */
/* Brace-initializer macros, one a line (clang-format would open each as a block). */
/* clang-format off */
#define GA_OPT_DEVICE_MEMORY(p) \
    {"device-memory", GA_OPT_SIZE, ga_opt_u64(p), \
     "bad --device-memory \"%s\" (e.g. 80GiB, 512MiB, 1.5GB or bytes)", 1, NULL}
#define GA_OPT_RESERVE(p) \
    {"reserve", GA_OPT_SIZE, ga_opt_u64(p), "bad --reserve \"%s\" (e.g. 1GiB, 512MiB or bytes)", 0, NULL}
#define GA_OPT_TRACE_FORMAT(p) {"format", GA_OPT_FORMAT, ga_opt_format(p), NULL, 0, NULL}
#define GA_OPT_JSON(p) {"json", GA_OPT_FLAG, ga_opt_bool(p), NULL, 0, NULL}
#define GA_OPT_ENV(p) {"env", GA_OPT_FLAG, ga_opt_bool(p), NULL, 0, NULL}
#define GA_OPT_NO_SLEEP(p) {"no-sleep", GA_OPT_FLAG, ga_opt_bool(p), NULL, 0, NULL}
#define GA_OPT_NO_RECORDED(p) {"no-recorded", GA_OPT_FLAG, ga_opt_bool(p), NULL, 0, NULL}
#define GA_OPT_PLOT(p) {"plot", GA_OPT_STRING, ga_opt_str(p), NULL, 0, NULL}
/* clang-format on */

/* The most rows a table may have. */
#define GA_OPTS_MAX 32

/*
 * ga_opts_parse: `galloc cmd` of argv (argv[0] the command's name) against
 * opts[0..n) and -h / --help, then at least one operand. Returns 0 with
 * optind at the first operand; -1 after writing usage(stdout) for --help;
 * GA_EXIT_USAGE after saying on stderr what was refused: a value (the row's
 * refusal), a value missing, an unknown option, no operand. Values are
 * stored as they are read, so a refused command line may have set some.
 */
int ga_opts_parse(const char *cmd, const ga_opt_t *opts, size_t n, void (*usage)(FILE *out), int argc, char **argv);

/* ga_opts_count: whether s is a count from 1 to max (decimal digits only; a
 * number past 64 bits counts as 2^64 - 1), into *out. */
bool ga_opts_count(const char *s, uint64_t max, size_t *out);

/* ga_opts_check_reserve: --reserve against --device-memory when both are
 * given (0: not given): a reserve is a part of the device, so one not less
 * than it is a usage error naming both sizes (GA_EXIT_USAGE), else 0. A size
 * the trace gives is checked when it is read (ga_job_add). */
int ga_opts_check_reserve(const char *cmd, uint64_t device_memory, uint64_t reserve);

/* ga_opts_check_plot: before a long run, whether --plot path names a format
 * this build writes, at a place it can create: 0, or the usage error. */
int ga_opts_check_plot(const char *cmd, const char *path);

#ifdef __cplusplus
}
#endif
#endif /* GA_TOOLS_REPORT_OPTIONS_H */
