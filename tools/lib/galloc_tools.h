/*
 * galloc_tools.h: the galloc command's analyses as a library: `galloc replay`
 * and `galloc fit` run in the caller's process, their --json document handed
 * back as a string, a trace file's summary through the same readers, and the
 * whole command (galloc_tools_main) as a program's main would run it.
 *
 * Why a run-the-command API and not a second set of entry points: the Python
 * package (galloc.replay, galloc.fit, galloc.load_trace) must give the same
 * figures as the command, so both go through one engine: galloc_tools_run
 * calls the command's own entry (tools/replay/replay_cli.c,
 * tools/fit/fit_cli.c) with the caller's arguments, and what it would print
 * is captured. The document's schema is the command's --json (documented in
 * tools/report/report_json.c and tools/fit/fit_report.c).
 *
 * Shipped as libgalloc_tools.so (tools/lib/BUILD), which the Python package
 * carries and which exports galloc_tools_* only: it holds its own copy of
 * galloc, so it never clashes with libgalloc.so in the same process. It is not
 * part of the installed C library (include/galloc/ stays the allocator's API).
 *
 * Thread-safety: calls are serialized by one lock (the commands keep getopt
 * and progress state in globals). While galloc_tools_run runs, the process's C
 * stdio streams stdout and stderr point at memory buffers: a C library of the
 * same process printing with stdio at that moment is captured too (Python's
 * own print is not: it writes to file descriptors).
 */
#ifndef GALLOC_TOOLS_H
#define GALLOC_TOOLS_H

#include <stdint.h>

#include <galloc/galloc_status.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A progress report: fraction of the current trace read in [0, 1] (-1 when
 * unknown), events replayed so far. Called from the thread that called
 * galloc_tools_run, between chunks of events; it must not call galloc_tools_*. */
typedef void (*galloc_tools_progress_fn)(void *ctx, double fraction, uint64_t events);

/*
 * galloc_tools_run: run `galloc ARGV...` in this process: argv[0] is the
 * command, "replay" or "fit", and argv[1..argc) its options and traces exactly
 * as on the command line (add "--json" for the machine-readable document).
 * progress (may be NULL) gets galloc replay's progress; galloc fit reports
 * none through it.
 *
 * On return *out holds what the command printed on stdout and *messages what
 * it printed on stderr (usage errors, unreadable traces, notes); both are
 * NUL-terminated, never NULL after a return >= 0, and owned by the caller:
 * release them with galloc_tools_free.
 *
 * Returns the command's exit status: 0, 1 (replay: an OOM in some
 * configuration; fit: no configuration fits) or 2 (bad usage or input: the
 * reason is in *messages); -1 when argv names no such command or host memory
 * ran out (*out and *messages NULL).
 */
GALLOC_API int galloc_tools_run(int argc, const char *const *argv, galloc_tools_progress_fn progress, void *ctx,
                                char **out, char **messages);

/*
 * galloc_tools_main: run the galloc command in this process as its
 * executable's main() would: argv[0] is the program's name (not read),
 * argv[1] the subcommand (replay, fit, gen, budget, help, --version) and the
 * rest its options, exactly as on the command line. What it prints goes to
 * the process's own stdout and stderr (C stdio, flushed before the return:
 * a caller with its own buffer on file descriptor 1, as Python's sys.stdout,
 * flushes it first). argv == NULL or argc < 2 prints the usage on stderr.
 *
 * Returns the command's exit status, for the caller to exit with: 0, 1 (an
 * OOM, nothing fits: the subcommand's meaning) or 2 (bad usage or input, a
 * report that could not be written, host memory exhausted: the reason on
 * stderr). Serialized with galloc_tools_run by the same lock.
 */
GALLOC_API int galloc_tools_main(int argc, const char *const *argv);

/*
 * galloc_tools_trace_info: read the trace at path through the command's
 * readers and summarize it as one JSON object in *json:
 *   {"file", "format" (the registry's name), "device_memory" (recorded, 0 if
 *    none), "units": [{"label" ("" or "device 1"), "events", "allocs",
 *    "frees", "ooms", "annotations", "other"}]}
 * format is "auto" (or NULL: detect from the first bytes) or one --format
 * name. Returns 0 with *json set and *messages "", or 2 with *json NULL and
 * *messages saying why (unreadable file, unknown format, a bad entry with its
 * line or offset); -1 when host memory ran out. Free both with
 * galloc_tools_free.
 */
GALLOC_API int galloc_tools_trace_info(const char *path, const char *format, char **json, char **messages);

/* galloc_tools_free: release a string galloc_tools_* handed out (NULL is a no-op). */
GALLOC_API void galloc_tools_free(void *p);

#ifdef __cplusplus
}
#endif
#endif /* GALLOC_TOOLS_H */
