/*
 * cli.h: the command-line flags shared by `galloc gen transformer` and
 * `galloc budget`, and the number syntaxes they accept. Private to tools/gen.
 * Thread-safety: pure functions of their arguments (argv is not modified).
 */
#ifndef GA_TOOLS_GEN_CLI_H
#define GA_TOOLS_GEN_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tools/gen/transformer.h"

#define GA_CLI_MAX_CONFS 16

/* Which command is parsing: each accepts the model flags plus its own. */
typedef enum ga_cli_cmd { GA_CLI_GEN, GA_CLI_BUDGET } ga_cli_cmd_t;

typedef struct ga_cli {
    ga_gen_model_t model;                /* the model flags */
    const char *output;                  /* gen: -o FILE; NULL or "-" = stdout */
    uint64_t device_memory;              /* --device-memory in bytes; 0 = not given */
    const char *confs[GA_CLI_MAX_CONFS]; /* budget: --conf values, in order (point into argv) */
    size_t n_confs;                      /* how many */
    bool json;                           /* budget: --json */
    bool help;                           /* -h / --help: the caller prints usage, nothing else is checked */
} ga_cli_t;

/*
 * ga_cli_parse: read argv[first..argc) for command cmd. Flags take their
 * value as the next argument or after '=' (--layers=32). Returns 0, or -1 with
 * a message naming the flag in err. Checks the model (ga_gen_model_check) and
 * that the required flags were given, unless --help was.
 */
int ga_cli_parse(int argc, char **argv, int first, ga_cli_cmd_t cmd, ga_cli_t *cli, char *err, size_t errlen);

/* ga_cli_parse_count: a count such as 125000000, 125M, 7B, 21.875B, 1.5T
 * (K = 10^3, M = 10^6, B or G = 10^9, T = 10^12; the result must be whole:
 * 1.5 and 1.0000000005B are refused).
 * Returns 0 or -1. */
int ga_cli_parse_count(const char *s, uint64_t *out);

/* ga_cli_parse_size: bytes such as 85899345920, 80GiB, 80GB, 512MiB, 1.5TiB.
 * Units are powers of 1024 whether spelt GB or GiB, as in the replay tool
 * (an "80 GB" GPU has 80 GiB). Returns 0 or -1. */
int ga_cli_parse_size(const char *s, uint64_t *out);

/* The model flags' help lines, shared by both commands' --help. */
extern const char ga_cli_model_help[];

/* ga_cli_format_model: the model flags as a command line would give them
 * ("--params 7000000000 --layers 32 ..."), for trace headers and reports. */
void ga_cli_format_model(const ga_gen_model_t *m, char *buf, size_t len);

#endif /* GA_TOOLS_GEN_CLI_H */
