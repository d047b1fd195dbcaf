/* snapfile.c: see snapfile.h. */
#include "tools/snapshot/snapfile.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef struct entry {
    struct entry *next;
    char *path;
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtime;
    uint8_t *buf; /* the file: the pickle's strings point into it */
    ga_pickle_t *pk;
} entry_t;

static entry_t *cache;
static bool share;

void ga_snapfile_share(bool on)
{
    share = on;
}

static int read_file(const char *path, const struct stat *st, uint8_t **out, char *err, size_t errlen)
{
    if ((uint64_t)st->st_size > GA_SNAPFILE_MAX) {
        snprintf(err, errlen, "%s: larger than %zu GiB", path, GA_SNAPFILE_MAX >> 30);
        return -1;
    }
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    size_t n = (size_t)st->st_size;
    uint8_t *b = malloc(n > 0 ? n : 1);
    size_t got = b != NULL ? fread(b, 1, n, f) : 0;
    bool bad = b == NULL || got != n || ferror(f);
    fclose(f);
    if (bad) {
        snprintf(err, errlen, "%s: %s", path, b == NULL ? "out of host memory" : "read error");
        free(b);
        return -1;
    }
    *out = b;
    return 0;
}

int ga_snapfile_get(const char *path, const ga_pickle_t **pk, size_t *len, char *err, size_t errlen)
{
    *pk = NULL;
    struct stat st;
    if (stat(path, &st) != 0) {
        snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    for (entry_t *e = share ? cache : NULL; e != NULL; e = e->next) {
        if (strcmp(e->path, path) == 0 && e->dev == st.st_dev && e->ino == st.st_ino && e->size == st.st_size &&
            e->mtime.tv_sec == st.st_mtim.tv_sec && e->mtime.tv_nsec == st.st_mtim.tv_nsec) {
            *pk = e->pk;
            if (len != NULL)
                *len = (size_t)e->size;
            return 0;
        }
    }
    entry_t *e = calloc(1, sizeof(*e));
    char *p = strdup(path);
    if (e == NULL || p == NULL) {
        free(e);
        free(p);
        snprintf(err, errlen, "%s: out of host memory", path);
        return -1;
    }
    char perr[256];
    if (read_file(path, &st, &e->buf, err, errlen) != 0) {
        free(e);
        free(p);
        return -1;
    }
    if (ga_pickle_parse(e->buf, (size_t)st.st_size, NULL, &e->pk, perr, sizeof(perr)) != 0) {
        snprintf(err, errlen, "%s: %s", path, perr);
        free(e->buf);
        free(e);
        free(p);
        return -1;
    }
    e->path = p;
    e->dev = st.st_dev;
    e->ino = st.st_ino;
    e->size = st.st_size;
    e->mtime = st.st_mtim;
    e->next = cache;
    cache = e;
    *pk = e->pk;
    if (len != NULL)
        *len = (size_t)e->size;
    return 0;
}

void ga_snapfile_drop_all(void)
{
    while (cache != NULL) {
        entry_t *e = cache;
        cache = e->next;
        ga_pickle_free(e->pk);
        free(e->buf);
        free(e->path);
        free(e);
    }
}
