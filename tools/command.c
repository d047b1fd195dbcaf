/*
 * command.c: the galloc command (command.h). Dispatches to its subcommands:
 *   replay  replay allocation traces through galloc (tools/replay/replay_cli.c)
 *   fit     search the settings under which a trace fits (tools/fit/fit_cli.c)
 *   gen     generate a synthetic training trace     (tools/gen)
 *   budget  a training step's memory budget          (tools/gen)
 * and says help and version. The executable (main.c) and the library
 * (tools/lib, galloc_tools_main) both run it, so the two cannot drift.
 */
#include "tools/command.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "tools/fit/fit.h"
#include "tools/readers/trace_reader.h"
#include "tools/replay/replay_cli.h"
#include "tools/version.h"
#ifdef GA_TOOLS_HAVE_GEN
#include "tools/gen/gen.h"
#endif

static void usage(FILE *out)
{
    fputs("usage: galloc <command> [options]\n"
          "commands:\n"
          "  replay   replay allocation traces on a simulated GPU under several allocator\n"
          "           configurations\n"
          "  fit      search the PYTORCH_CUDA_ALLOC_CONF settings under which a trace fits\n"
#ifdef GA_TOOLS_HAVE_GEN
          "  gen      generate a synthetic training-step allocation trace\n"
          "  budget   estimate a training step's memory budget\n"
#endif
          "  help     this text (galloc <command> --help for a command's options)\n"
          "  --version\n"
          "trace formats (told from a file's first bytes; --format NAME forces one):\n",
          out);
    ga_reader_format_help(out);
}

/* Every subcommand's output ends here: a report that could not be written
 * (a full disk, a closed pipe, > /dev/full) is bad output, exit 2 with the
 * reason on stderr, whatever the command had decided, so a script never takes
 * a truncated report for a verdict. */
static int finish(const char *cmd, int rc)
{
    errno = 0;
    if (fflush(stdout) == 0 && !ferror(stdout))
        return rc;
    int e = errno;
    fprintf(stderr, "galloc %s: cannot write standard output%s%s\n", cmd, e ? ": " : "", e ? strerror(e) : "");
    return 2;
}

static int run(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "replay") == 0 || strcmp(cmd, "fit") == 0) {
        return cmd[0] == 'r' ? ga_replay_main(argc - 1, argv + 1) : ga_fit_main(argc - 1, argv + 1);
    }
#ifdef GA_TOOLS_HAVE_GEN
    if (strcmp(cmd, "gen") == 0)
        return ga_gen_main(argc - 1, argv + 1);
    if (strcmp(cmd, "budget") == 0)
        return ga_budget_main(argc - 1, argv + 1);
#endif
    if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
        if (argc > 2 && strcmp(argv[2], "replay") == 0)
            ga_replay_usage(stdout);
        else if (argc > 2 && strcmp(argv[2], "fit") == 0)
            ga_fit_usage(stdout);
        else
            usage(stdout);
        return 0;
    }
    if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "version") == 0) {
        printf("galloc %s\n", GA_TOOLS_VERSION);
        return 0;
    }
    fprintf(stderr, "galloc: unknown command \"%s\"\n", cmd);
    usage(stderr);
    return 2;
}

int ga_command_main(int argc, char **argv)
{
    /* A write error an earlier run in this process left on stdout (tools/lib
     * runs the command again and again) is not this run's. */
    clearerr(stdout);
    int rc = run(argc, argv);
    return finish(argc > 1 ? argv[1] : "", rc);
}
