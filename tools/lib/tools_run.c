/*
 * tools_run.c: galloc_tools_run, the galloc command run as a library call
 * (galloc_tools.h). The command's entries write to stdout and stderr; for the
 * length of one call those two stdio streams are memory streams
 * (open_memstream), so the caller gets exactly what the command prints, from
 * exactly the command's code. Invariant: the lock is held from the swap to
 * the restore, and the original streams are restored on every path.
 */
#include <galloc/galloc_tools.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/fit/fit.h"
#include "tools/replay/replay_cli.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER; /* the commands' globals: getopt, progress */

void galloc_tools_free(void *p)
{
    free(p);
}

/* The command's entry on a private copy of argv: getopt_long permutes the
 * array it is given, and the caller's is const. */
static int run_command(int argc, const char *const *argv)
{
    char **args = calloc((size_t)argc + 1, sizeof(*args));
    if (args == NULL)
        return -1;
    memcpy(args, argv, (size_t)argc * sizeof(*args));
    int rc = argv[0][0] == 'r' ? ga_replay_main(argc, args) : ga_fit_main(argc, args);
    free(args);
    return rc;
}

int galloc_tools_run(int argc, const char *const *argv, galloc_tools_progress_fn progress, void *ctx, char **out,
                     char **messages)
{
    if (out == NULL || messages == NULL)
        return -1;
    *out = *messages = NULL;
    if (argc < 1 || argv == NULL || argv[0] == NULL ||
        (strcmp(argv[0], "replay") != 0 && strcmp(argv[0], "fit") != 0))
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
    int rc = run_command(argc, argv);
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
