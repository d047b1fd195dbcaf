/*
 * fit_fleet.c: `galloc fit FOLDER`: a fleet of jobs, each trace fitted on its
 * own. A trace of a fleet is exactly a `galloc fit TRACE` (same options, same
 * report, same exit status): each one is ga_fit_traces on that one file with
 * the command's parsed options, its report written into memory
 * (open_memstream) and placed under the trace's name; the search inside each
 * keeps the worker pool busy (--jobs threads over its configurations).
 *
 * Traces run concurrently, up to --jobs at a time, each in a child process
 * (fork) that writes its report down a pipe and exits with its status.
 * Processes, not threads: each job's memory is freed with its process, and a
 * trace that crashes the fit takes only its own report with it. Each child
 * keeps the --jobs of the command, so its report is byte for byte that of
 * `galloc fit TRACE` ("on N threads" included); the kernel shares the
 * cores. The parent prints the reports in name order as they become due, so
 * the output is the same as when traces ran one after another; memory holds
 * up to --jobs traces' events at a time. With one slot (--jobs 1 or one
 * trace), or where fork fails, a trace runs in this process as before.
 * GALLOC_FLEET_DEBUG=1 says on stderr when each trace starts and ends (the
 * tests check that two traces overlap).
 */
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tools/fit/fit.h"
#include "tools/report/report.h"
#include "util/grow.h"

static bool is_dir(const char *path)
{
    struct stat st;
    return strcmp(path, "-") != 0 && stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

bool ga_fit_fleet_wanted(int n, char *const *paths)
{
    for (int i = 0; i < n; i++)
        if (is_dir(paths[i]))
            return true;
    return false;
}

typedef struct list {
    char **v;   /* malloc'd paths */
    size_t n;   /* used */
    size_t cap; /* allocated */
} list_t;

static int push(list_t *l, const char *dir, const char *name)
{
    char **v = ga_grow(l->v, &l->cap, l->n, sizeof(*v), 16);
    if (v == NULL)
        return -1;
    l->v = v;
    size_t len = (dir ? strlen(dir) + 1 : 0) + strlen(name) + 1;
    char *p = malloc(len);
    if (p == NULL)
        return -1;
    if (dir)
        snprintf(p, len, "%s/%s", dir, name);
    else
        snprintf(p, len, "%s", name);
    l->v[l->n++] = p;
    return 0;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The regular files of dir, hidden ones left out, in name order (a fleet's
 * report reads the same on every run). 0, or -1 said on stderr. */
static int expand(list_t *l, const char *dir)
{
    DIR *d = opendir(dir);
    if (d == NULL) {
        fprintf(stderr, "galloc fit: %s: cannot open the folder\n", dir);
        return -1;
    }
    size_t from = l->n;
    struct dirent *e;
    int rc = 0;
    while (rc == 0 && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        rc = push(l, dir, e->d_name);
        struct stat st;
        if (rc == 0 && (stat(l->v[l->n - 1], &st) != 0 || !S_ISREG(st.st_mode)))
            free(l->v[--l->n]); /* a subfolder or a special file: not a trace */
    }
    closedir(d);
    if (rc != 0) {
        fprintf(stderr, "galloc fit: out of host memory listing %s\n", dir);
    } else if (l->n == from) {
        fprintf(stderr, "galloc fit: %s: no trace files in the folder\n", dir);
        rc = -1;
    }
    if (l->n > from)
        qsort(l->v + from, l->n - from, sizeof(*l->v), by_name);
    return rc;
}

/* galloc fit with the command's options on path alone; its report into *text. */
static int fit_one(const ga_fit_cli_t *cli, char *path, char **text)
{
    size_t len = 0;
    FILE *mem = open_memstream(text, &len);
    if (mem == NULL)
        return GA_EXIT_USAGE;
    int code = ga_fit_traces(cli, &path, 1, mem);
    if (fclose(mem) != 0 || *text == NULL) {
        free(*text);
        *text = NULL;
        return GA_EXIT_USAGE;
    }
    return code;
}

static int worst(int a, int b)
{
    return a == GA_EXIT_USAGE || b == GA_EXIT_USAGE ? GA_EXIT_USAGE : a > b ? a : b;
}

typedef struct task {
    pid_t pid;   /* the child fitting it; 0 = not started or reaped */
    int fd;      /* read end of its pipe; -1 = closed */
    char *text;  /* its report so far (malloc'd) */
    size_t len;  /* used */
    size_t cap;  /* allocated */
    int rc;      /* its exit status once done */
    bool done;   /* report complete and child reaped */
    bool failed; /* out of host memory reading its report */
} task_t;

static bool debug_on(void)
{
    const char *e = getenv("GALLOC_FLEET_DEBUG");
    return e != NULL && strcmp(e, "1") == 0;
}

/* The child: fit path, write the report to fd, exit with the fit's status. */
static void child(const ga_fit_cli_t *cli, char *path, int fd)
{
    char *text = NULL;
    int rc = fit_one(cli, path, &text);
    size_t len = text ? strlen(text) : 0, off = 0;
    while (off < len) {
        ssize_t w = write(fd, text + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            rc = GA_EXIT_USAGE;
            break;
        }
        off += (size_t)w;
    }
    fflush(stderr);
    _exit(rc);
}

/* Fork a child for t; false (nothing started) when fork or pipe fails. */
static bool start(task_t *t, const ga_fit_cli_t *cli, char *path)
{
    int p[2];
    if (pipe(p) != 0)
        return false;
    fflush(stdout); /* a child must not write the parent's buffered output again */
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        close(p[0]);
        close(p[1]);
        return false;
    }
    if (pid == 0) {
        close(p[0]);
        child(cli, path, p[1]);
    }
    close(p[1]); /* later children must not hold it: EOF comes when this child exits */
    t->pid = pid;
    t->fd = p[0];
    return true;
}

/* Read what t's pipe holds; at EOF reap the child and mark t done. */
static void drain(task_t *t, const char *path)
{
    char buf[65536];
    ssize_t r = read(t->fd, buf, sizeof(buf));
    if (r < 0 && (errno == EINTR || errno == EAGAIN))
        return;
    if (r > 0) {
        if (t->len + (size_t)r + 1 > t->cap) {
            size_t cap = 2 * (t->len + (size_t)r + 1);
            char *v = realloc(t->text, cap);
            if (v == NULL) {
                t->failed = true;
                return;
            }
            t->text = v;
            t->cap = cap;
        }
        memcpy(t->text + t->len, buf, (size_t)r);
        t->len += (size_t)r;
        t->text[t->len] = '\0';
        return;
    }
    close(t->fd);
    t->fd = -1;
    int st = 0;
    while (waitpid(t->pid, &st, 0) < 0 && errno == EINTR)
        ;
    t->pid = 0;
    t->rc = WIFEXITED(st) ? WEXITSTATUS(st) : GA_EXIT_USAGE;
    if (!WIFEXITED(st))
        fprintf(stderr, "galloc fit: %s: the fit was killed by signal %d\n", path, WTERMSIG(st));
    if (t->failed) {
        fprintf(stderr, "galloc fit: %s: out of host memory reading its report\n", path);
        t->rc = GA_EXIT_USAGE;
    }
    t->done = true;
    if (debug_on())
        fprintf(stderr, "galloc fit: fleet: end %s\n", path);
}

static void print_one(bool json, size_t i, const char *path, int rc, const char *text)
{
    if (json) {
        fprintf(stdout, "%s\n{\"file\": ", i ? "," : "");
        ga_report_json_str(stdout, path);
        fprintf(stdout, ", \"exit_status\": %d, \"fit\": %s}", rc, text && text[0] ? text : "null");
    } else {
        fprintf(stdout, "%s== %s (exit %d)\n%s", i ? "\n" : "", path, rc, text ? text : "");
    }
    fflush(stdout);
}

static unsigned slots_for(unsigned jobs, size_t n)
{
    if (jobs == 0) {
        long c = sysconf(_SC_NPROCESSORS_ONLN);
        jobs = c > 0 ? (unsigned)c : 1;
    }
    return n < jobs ? (unsigned)n : jobs;
}

/* Wait for any running child (tasks shown..next) to have output or end, and
 * read what it sent; *running drops by those that ended. 0, or -1 (said). */
static int wait_some(task_t *t, const list_t *l, size_t shown, size_t next, size_t *running)
{
    struct pollfd pf[*running];
    size_t who[*running], k = 0;
    for (size_t i = shown; i < next && k < *running; i++)
        if (t[i].fd >= 0) {
            pf[k] = (struct pollfd){.fd = t[i].fd, .events = POLLIN};
            who[k++] = i;
        }
    if (poll(pf, k, -1) < 0 && errno != EINTR) {
        fprintf(stderr, "galloc fit: waiting for the fleet's fits failed: %s\n", strerror(errno));
        return -1;
    }
    for (size_t j = 0; j < k; j++)
        if (pf[j].revents != 0) {
            drain(&t[who[j]], l->v[who[j]]);
            if (t[who[j]].done)
                (*running)--;
        }
    return 0;
}

int ga_fit_fleet(const ga_fit_cli_t *cli, char *const *paths, size_t np)
{
    list_t l = {0};
    int code = GA_EXIT_OK;
    bool json = cli->json;
    for (size_t i = 0; i < np; i++) {
        if (is_dir(paths[i]) ? expand(&l, paths[i]) != 0 : push(&l, NULL, paths[i]) != 0)
            code = GA_EXIT_USAGE;
    }
    if (json)
        fputs("{\"tool\": \"galloc fit\", \"version\": 2, \"fleet\": [", stdout);
    task_t *t = calloc(l.n ? l.n : 1, sizeof(*t));
    unsigned slots = t ? slots_for(cli->o.jobs, l.n) : 1;
    bool debug = debug_on();
    size_t next = 0, shown = 0, running = 0;
    while (shown < l.n) {
        /* Start traces while slots are free; one slot or a failed fork: run it here. */
        while (next < l.n && running < slots) {
            if (slots > 1 && start(&t[next], cli, l.v[next])) {
                if (debug)
                    fprintf(stderr, "galloc fit: fleet: start %s\n", l.v[next]);
                running++;
                next++;
                continue;
            }
            if (running > 0)
                break; /* wait for the children first: this process runs one fit at a time */
            if (debug)
                fprintf(stderr, "galloc fit: fleet: start %s\n", l.v[next]);
            char *text = NULL;
            int rc = fit_one(cli, l.v[next], &text);
            if (debug)
                fprintf(stderr, "galloc fit: fleet: end %s\n", l.v[next]);
            if (t) {
                t[next] = (task_t){.text = text, .rc = rc, .done = true, .fd = -1};
            } else { /* no task table: print now, in order (shown == next) */
                code = worst(code, rc);
                print_one(json, next, l.v[next], rc, text);
                free(text);
                free(l.v[next]);
                shown++;
            }
            next++;
        }
        if (t == NULL)
            continue;
        /* Print every report that is due, in name order. */
        while (shown < next && t[shown].done) {
            code = worst(code, t[shown].rc);
            print_one(json, shown, l.v[shown], t[shown].rc, t[shown].text);
            free(t[shown].text);
            free(l.v[shown]);
            shown++;
        }
        if (running == 0)
            continue;
        if (wait_some(t, &l, shown, next, &running) != 0) {
            code = GA_EXIT_USAGE;
            break;
        }
    }
    if (json)
        fputs("\n]}\n", stdout);
    fflush(stdout);
    free(t);
    free(l.v);
    return code;
}
