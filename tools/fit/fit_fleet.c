/*
 * fit_fleet.c: `galloc fit FOLDER`: a fleet of jobs, each trace fitted on its
 * own. Why here and not in the search: a trace of a fleet is exactly a
 * `galloc fit TRACE` (same options, same report, same exit status), so each
 * one is that command run again on one file, its output captured
 * (open_memstream) and placed under the trace's name; the search inside each
 * run keeps the worker pool busy (--jobs threads over its configurations).
 * Traces run one after another: memory holds one trace's events at a time.
 */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tools/fit/fit.h"
#include "tools/report/report.h"

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
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 16;
        char **v = realloc(l->v, cap * sizeof(*v));
        if (v == NULL)
            return -1;
        l->v = v;
        l->cap = cap;
    }
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

/* galloc fit with argv's options on path alone; its stdout into *text. */
static int fit_one(int first, char **argv, const char *path, char **text)
{
    char *args[first + 3];
    int n = 0;
    for (; n < first; n++)
        args[n] = argv[n];
    if (strcmp(argv[first - 1], "--") != 0)
        args[n++] = "--"; /* a trace named "-x" is still a file */
    args[n++] = (char *)path;
    args[n] = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(text, &len), *saved = stdout;
    if (mem == NULL)
        return GA_EXIT_USAGE;
    fflush(stdout);
    stdout = mem;
    int code = ga_fit_main(n, args);
    stdout = saved;
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

int ga_fit_fleet(int argc, char **argv, int first, bool json)
{
    list_t l = {0};
    int code = GA_EXIT_OK;
    for (int i = first; i < argc; i++) {
        if (is_dir(argv[i]) ? expand(&l, argv[i]) != 0 : push(&l, NULL, argv[i]) != 0)
            code = GA_EXIT_USAGE;
    }
    if (json)
        fputs("{\"tool\": \"galloc fit\", \"version\": 1, \"fleet\": [", stdout);
    for (size_t i = 0; i < l.n; i++) {
        char *text = NULL;
        int rc = fit_one(first, argv, l.v[i], &text);
        code = worst(code, rc);
        if (json) {
            fprintf(stdout, "%s\n{\"file\": ", i ? "," : "");
            ga_report_json_str(stdout, l.v[i]);
            fprintf(stdout, ", \"exit_status\": %d, \"fit\": %s}", rc, text && text[0] ? text : "null");
        } else {
            fprintf(stdout, "%s== %s (exit %d)\n%s", i ? "\n" : "", l.v[i], rc, text ? text : "");
        }
        fflush(stdout);
        free(text);
        free(l.v[i]);
    }
    if (json)
        fputs("\n]}\n", stdout);
    fflush(stdout);
    free(l.v);
    return code;
}
