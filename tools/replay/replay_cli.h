/*
 * replay_cli.h: `galloc replay`, the command line around replay.h.
 */
#ifndef GA_TOOLS_REPLAY_REPLAY_CLI_H
#define GA_TOOLS_REPLAY_REPLAY_CLI_H

#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * ga_replay_main: run `galloc replay` with argv[0] = "replay" and the options
 * after it; the report goes to stdout, messages to stderr. Returns an exit
 * code (GA_EXIT_*, report.h). Not reentrant (getopt state).
 */
int ga_replay_main(int argc, char **argv);

/* ga_replay_progress_observe: also hand every progress update of a replay to
 * fn(ctx, fraction in [0, 1] or -1 if unknown, events so far), whether or not
 * stderr is a terminal (NULL stops it): the library API (tools/lib) reports
 * progress to its caller through this. Process-wide, like the command itself:
 * set it only around one ga_replay_main (progress.c). */
void ga_replay_progress_observe(void (*fn)(void *ctx, double fraction, uint64_t events), void *ctx);

/* ga_replay_usage: the help text. */
void ga_replay_usage(FILE *out);

#ifdef __cplusplus
}
#endif
#endif /* GA_TOOLS_REPLAY_REPLAY_CLI_H */
