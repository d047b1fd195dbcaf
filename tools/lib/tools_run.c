/*
 * tools_run.c: galloc_tools_run and galloc_tools_main, the galloc command run
 * as a library call (galloc_tools.h), both through the command's own
 * dispatcher (tools/command.c). The command writes to stdout and stderr:
 * galloc_tools_main leaves them the process's; for the length of one
 * galloc_tools_run they are memory streams (open_memstream), so the caller
 * gets exactly what the command prints, from exactly the command's code.
 * Invariant: one lock serializes both (the command's globals), it is held
 * from the swap to the restore, and the original streams are restored on
 * every path.
 */
#include <galloc/galloc_tools.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/command.h"
#include "tools/replay/replay_cli.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER; /* the commands' globals: getopt, progress */
static char program[] = "galloc";                        /* argv[0] for galloc_tools_run's commands */

void galloc_tools_free(void *p)
{
    free(p);
}

/* The command on a private copy of argv (getopt_long permutes the array it
 * is given, and the caller's is const), name before it as argv[0] unless
 * NULL; -1 when host memory ran out. Called with the lock held. */
static int run_command(char *name, int argc, const char *const *argv)
{
    int first = name != NULL;
    char **args = calloc((size_t)(first + argc) + 1, sizeof(*args));
    if (args == NULL)
        return -1;
    args[0] = name;
    if (argc > 0)
        memcpy(args + first, argv, (size_t)argc * sizeof(*args));
    int rc = ga_command_main(first + argc, args);
    free(args);
    return rc;
}

int galloc_tools_main(int argc, const char *const *argv)
{
    if (argv == NULL || argc < 0)
        argc = 0;
    pthread_mutex_lock(&lock);
    int rc = run_command(NULL, argc, argv);
    pthread_mutex_unlock(&lock);
    if (rc < 0) {
        fprintf(stderr, "galloc: out of host memory\n");
        return 2;
    }
    return rc;
}

int galloc_tools_run(int argc, const char *const *argv, galloc_tools_progress_fn progress, void *ctx, char **out,
                     char **messages)
{
    if (out == NULL || messages == NULL)
        return -1;
    *out = *messages = NULL;
    if (argc < 1 || argv == NULL || argv[0] == NULL || (strcmp(argv[0], "replay") != 0 && strcmp(argv[0], "fit") != 0))
        return -1;
    size_t out_len = 0, msg_len = 0;
    pthread_mutex_lock(&lock);
    FILE *o = open_memstream(out, &out_len);
    FILE *m = o != NULL ? open_memstream(messages, &msg_len) : NULL;
    if (m == NULL) {
        if (o != NULL)
            fclose(o);
        free(*out);
        *out = NULL;
        pthread_mutex_unlock(&lock);
        return -1;
    }
    fflush(stdout);
    fflush(stderr);
    FILE *saved_out = stdout, *saved_err = stderr;
    stdout = o;
    stderr = m;
    ga_replay_progress_observe(progress, ctx);
    int rc = run_command(program, argc, argv);
    ga_replay_progress_observe(NULL, NULL);
    stdout = saved_out;
    stderr = saved_err;
    /* fclose writes the final size and the terminating NUL. */
    int closed = fclose(o) | fclose(m);
    pthread_mutex_unlock(&lock);
    if (rc < 0 || closed != 0 || *out == NULL || *messages == NULL) {
        free(*out);
        free(*messages);
        *out = *messages = NULL;
        return -1;
    }
    return rc;
}
