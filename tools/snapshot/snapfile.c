/* snapfile.c: see snapfile.h. */
#include "tools/snapshot/snapfile.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "tools/readers/gz.h"

typedef struct entry {
    struct entry *next;
    char *path;
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtime;
    uint8_t *buf; /* the file: the pickle's strings point into it */
    size_t len;   /* its length (inflated when gzip) */
    bool mapped;  /* buf is a read-only mapping of len bytes, else malloc'd */
    ga_pickle_t *pk;
} entry_t;

static entry_t *cache;
static bool share;

void ga_snapfile_share(bool on)
{
    share = on;
}

/* A gzip file inflated whole into a malloc'd buffer, growing as it comes. */
static int inflate_file(const char *path, FILE *f, const uint8_t *head, size_t nhead, uint8_t **out, size_t *len,
                        char *err, size_t errlen)
{
    ga_gz_t *g;
    if (ga_gz_open(&g, f, head, nhead, path, err, errlen) != 0)
        return -1;
    size_t cap = (size_t)1 << 20, n = 0;
    uint8_t *b = malloc(cap);
    for (;;) {
        if (b == NULL) {
            snprintf(err, errlen, "%s: out of host memory inflating the file", path);
            break;
        }
        long long k = ga_gz_read(g, b + n, cap - n, err, errlen);
        if (k < 0)
            break;
        n += (size_t)k;
        if (n >= 2 && b[0] != 0x80) { /* refuse a non-pickle before inflating the rest */
            snprintf(err, errlen, "%s: gzip of something that is not a pickle (first byte 0x%02x)", path, b[0]);
            break;
        }
        if (k == 0) {
            ga_gz_close(g);
            *out = b;
            *len = n;
            return 0;
        }
        if (n == cap) {
            if (cap >= GA_SNAPFILE_MAX) {
                snprintf(err, errlen, "%s: inflates to more than %zu GiB", path, GA_SNAPFILE_MAX >> 30);
                break;
            }
            uint8_t *nb = realloc(b, cap * 2);
            if (nb == NULL)
                free(b);
            b = nb;
            cap *= 2;
        }
    }
    free(b);
    ga_gz_close(g);
    return -1;
}

/*
 * The file's bytes. A plain file is mapped, not read: the decoder touches
 * only the pages it parses, so a large file that stops being a pickle after
 * its header is refused at that point with the memory of the bytes read so
 * far (a 2 GB file used to cost 2 GB before the refusal). A gzip file is
 * inflated (snapshot pickles compress about tenfold).
 */
static int read_file(const char *path, const struct stat *st, uint8_t **out, size_t *len, bool *mapped, char *err,
                     size_t errlen)
{
    *mapped = false;
    if ((uint64_t)st->st_size > GA_SNAPFILE_MAX) {
        snprintf(err, errlen, "%s: larger than %zu GiB", path, GA_SNAPFILE_MAX >> 30);
        return -1;
    }
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    uint8_t head[2];
    size_t nhead = fread(head, 1, sizeof(head), f);
    if (ga_gz_magic(head, nhead)) {
        int rc = inflate_file(path, f, head, nhead, out, len, err, errlen);
        fclose(f);
        return rc;
    }
    size_t n = (size_t)st->st_size;
    if (n == 0 || !S_ISREG(st->st_mode)) {
        fclose(f);
        *out = malloc(1);
        *len = 0;
        if (*out == NULL) {
            snprintf(err, errlen, "%s: out of host memory", path);
            return -1;
        }
        return 0;
    }
    void *m = mmap(NULL, n, PROT_READ, MAP_PRIVATE, fileno(f), 0);
    int e = errno;
    fclose(f);
    if (m == MAP_FAILED) {
        snprintf(err, errlen, "%s: cannot map: %s", path, strerror(e));
        return -1;
    }
    *out = m;
    *len = n;
    *mapped = true;
    return 0;
}

static void free_buf(entry_t *e)
{
    if (e->mapped)
        munmap(e->buf, e->len);
    else
        free(e->buf);
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
                *len = e->len;
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
    if (read_file(path, &st, &e->buf, &e->len, &e->mapped, err, errlen) != 0) {
        free(e);
        free(p);
        return -1;
    }
    if (ga_pickle_parse(e->buf, e->len, NULL, &e->pk, perr, sizeof(perr)) != 0) {
        snprintf(err, errlen, "%s: %s", path, perr);
        free_buf(e);
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
        *len = e->len;
    return 0;
}

void ga_snapfile_drop_all(void)
{
    while (cache != NULL) {
        entry_t *e = cache;
        cache = e->next;
        ga_pickle_free(e->pk);
        free_buf(e);
        free(e->path);
        free(e);
    }
}
