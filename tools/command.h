/*
 * command.h: the galloc command as one call, so that the executable
 * (tools/main.c) and the library (tools/lib: galloc_tools_main, which the
 * Python package's `galloc` console command runs) dispatch through the same
 * code: same subcommands, usage text, help and version.
 */
#ifndef GA_TOOLS_COMMAND_H
#define GA_TOOLS_COMMAND_H

#ifdef __cplusplus
extern "C" {
#endif

/*
 * ga_command_main: run `galloc ARGV[1] ...` (argv[0] is the program's name,
 * argv[1] the subcommand: replay, fit, gen, budget, help, --version) with the
 * process's stdout and stderr, and flush stdout. Returns the exit status: the
 * subcommand's, or 2 for bad usage or a report that could not be written.
 * Not reentrant: the subcommands keep getopt and progress state in globals,
 * so callers serialize (tools/lib holds its lock).
 */
int ga_command_main(int argc, char **argv);

#ifdef __cplusplus
}
#endif
#endif /* GA_TOOLS_COMMAND_H */
