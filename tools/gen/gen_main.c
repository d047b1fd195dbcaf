/*
 * gen_main.c: `galloc gen transformer`: write the generated events as a
 * galloc text trace (docs/trace-format.md: "galloc-trace 1", an optional
 * "device_memory <bytes>", then one event per line: alloc <id> <size>,
 * free <id>, annotate <text>, # comment).
 *
 * The trace heads with comments that repeat the flags and the step model, so
 * a trace file explains itself. A failed write removes the partial file: a
 * truncated trace would replay as a run that ends early, silently.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "tools/gen/cli.h"
#include "tools/gen/gen.h"

static const char usage[] =
    "Usage: galloc gen transformer --params N --layers L --d-model D --seq-len S --batch B\n"
    "                              [--mixed-precision] [--checkpointing] [--steps K]\n"
    "                              [--variable-seq-len MIN:MAX] [--seed X] [--heads H]\n"
    "                              [--device-memory SIZE] [-o FILE]\n"
    "Write the allocation trace of training a decoder-only transformer (GPT-2 layout,\n"
    "Adam) in galloc's text trace format, for `galloc replay`. Deterministic: the same\n"
    "flags give the same file.\n\n";

static const char usage_out[] =
    "Output:\n"
    "  -o, --output FILE       write to FILE (default: standard output)\n"
    "  --device-memory SIZE    add a device_memory header line (e.g. 80GiB)\n\n"
    "The model of a step:\n";

static void print_usage(FILE *f)
{
    fputs(usage, f);
    fputs(ga_cli_model_help, f);
    fputs(usage_out, f);
    fputs(ga_gen_step_model_text(), f);
}

static int on_event(void *ctx, const ga_gen_event_t *ev)
{
    FILE *f = ctx;
    int n;
    switch (ev->op) {
    case GA_GEN_ALLOC:
        n = fprintf(f, "alloc %" PRIu64 " %" PRIu64 "\n", ev->id, ev->size);
        break;
    case GA_GEN_FREE:
        n = fprintf(f, "free %" PRIu64 "\n", ev->id);
        break;
    default:
        n = fprintf(f, "annotate %s\n", ev->text);
        break;
    }
    return n < 0 ? 1 : 0; /* stop at the first failed write; errno says why */
}

/* The header and the comment block that describes the run. */
static int write_head(FILE *f, const ga_cli_t *cli)
{
    char flags[512];
    ga_cli_format_model(&cli->model, flags, sizeof(flags));
    if (fprintf(f, "galloc-trace 1\n") < 0)
        return -1;
    if (cli->device_memory != 0 && fprintf(f, "device_memory %" PRIu64 "\n", cli->device_memory) < 0)
        return -1;
    if (fprintf(f, GA_CLI_HEADER "%s\n#\n", flags) < 0)
        return -1;
    /* The step model, one comment line per line of text. */
    const char *t = ga_gen_step_model_text();
    while (*t != '\0') {
        size_t n = strcspn(t, "\n");
        if (fprintf(f, "# %.*s\n", (int)n, t) < 0)
            return -1;
        t += n + (t[n] == '\n');
    }
    return 0;
}

int ga_gen_main(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
        print_usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (strcmp(argv[1], "transformer") != 0) {
        fprintf(stderr, "galloc gen: unknown model '%s' (only 'transformer'; see --help)\n", argv[1]);
        return 2;
    }
    ga_cli_t cli;
    char err[256];
    if (ga_cli_parse(argc, argv, 2, GA_CLI_GEN, &cli, err, sizeof(err)) != 0) {
        fprintf(stderr, "galloc gen: %s\n", err);
        return 2;
    }
    if (cli.help) {
        print_usage(stdout);
        return 0;
    }
    bool to_stdout = cli.output == NULL || strcmp(cli.output, "-") == 0;
    const char *name = to_stdout ? "standard output" : cli.output;
    FILE *f = to_stdout ? stdout : fopen(cli.output, "w");
    if (f == NULL) {
        fprintf(stderr, "galloc gen: cannot open %s: %s\n", name, strerror(errno));
        return 2;
    }
    int rc = write_head(f, &cli) != 0 ? 1 : ga_gen_transformer(&cli.model, on_event, f, err, sizeof(err));
    int saved_errno = errno;
    if (rc == 0 && fflush(f) != 0) {
        rc = 1;
        saved_errno = errno;
    }
    if (!to_stdout && fclose(f) != 0 && rc == 0) {
        rc = 1;
        saved_errno = errno;
    }
    if (rc < 0) {
        fprintf(stderr, "galloc gen: %s\n", err);
    } else if (rc != 0 && !to_stdout) { /* standard output: main.c says it, once */
        fprintf(stderr, "galloc gen: cannot write %s: %s\n", name, strerror(saved_errno));
    }
    if (rc != 0 && !to_stdout)
        (void)remove(cli.output);
    return rc == 0 ? 0 : 2; /* a trace not written is bad output, as in every subcommand */
}
