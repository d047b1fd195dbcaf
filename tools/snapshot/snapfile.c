/* snapfile.c: see snapfile.h. */
#include "tools/snapshot/snapfile.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "tools/readers/gz.h"

struct ga_snapfile {
    uint8_t *buf; /* the file: the pickle's strings point into it */
    size_t len;   /* its length (inflated when gzip) */
    bool mapped;  /* buf is a read-only mapping of len bytes, else malloc'd */
    ga_pickle_t *pk;
    ga_torch_snapshot_t snap;
};

/* A gzip file inflated whole into a malloc'd buffer, growing as it comes
 * (never to a size the file claims): refused after its first two bytes when
 * they are not a pickle's header, and as soon as it holds more than
 * ga_gz_hold_check allows for the compressed bytes read (a gzip bomb). */
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
        /* 1 MiB at most per read: the bound is checked before a bomb inflates much past it */
        long long k = ga_gz_read(g, b + n, cap - n < ((size_t)1 << 20) ? cap - n : (size_t)1 << 20, err, errlen);
        if (k < 0)
            break;
        n += (size_t)k;
        if (n >= 2 && (b[0] != 0x80 || b[1] < 2 || b[1] > 5)) { /* refuse a non-pickle before inflating the rest */
            snprintf(err, errlen,
                     "%s: gzip of something that is not a pickle of protocol 2-5 (it starts 0x%02x 0x%02x, not 0x80 "
                     "and the protocol)",
                     path, b[0], b[1]);
            break;
        }
        if (ga_gz_hold_check(g, n, "the inflated pickle", err, errlen) != 0)
            break;
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
 * far, not the file's size. A gzip file is inflated, up to GA_SNAPFILE_MAX
 * and GA_HOLD_SLACK + GA_HOLD_RATIO x its compressed size (limits.h; snapshot
 * pickles compress about 16-fold). zstd and xz are refused by name.
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
    uint8_t head[8];
    size_t nhead = fread(head, 1, sizeof(head), f);
    if (ga_gz_other(head, nhead, path, err, errlen)) {
        fclose(f);
        return -1;
    }
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

static void free_buf(ga_snapfile_t *f)
{
    if (f->mapped)
        munmap(f->buf, f->len);
    else
        free(f->buf);
}

/* Parse f's bytes; on failure f is freed. */
static int parse(ga_snapfile_t *f, const char *name, ga_snapfile_t **out, char *err, size_t errlen)
{
    char perr[256];
    if (ga_pickle_parse(f->buf, f->len, NULL, &f->pk, perr, sizeof(perr)) != 0) {
        snprintf(err, errlen, "%s: %s", name, perr);
        ga_snapfile_close(f);
        return -1;
    }
    ga_torch_open(f->pk, &f->snap);
    if (ga_torch_check(&f->snap, f->len, name, err, errlen) != 0) {
        ga_snapfile_close(f);
        return -1;
    }
    *out = f;
    return 0;
}

int ga_snapfile_open(const char *path, ga_snapfile_t **out, char *err, size_t errlen)
{
    *out = NULL;
    struct stat st;
    if (stat(path, &st) != 0) {
        snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    ga_snapfile_t *f = calloc(1, sizeof(*f));
    if (f == NULL) {
        snprintf(err, errlen, "%s: out of host memory", path);
        return -1;
    }
    if (read_file(path, &st, &f->buf, &f->len, &f->mapped, err, errlen) != 0) {
        free(f);
        return -1;
    }
    return parse(f, path, out, err, errlen);
}

int ga_snapfile_adopt(uint8_t *buf, size_t len, const char *name, ga_snapfile_t **out, char *err, size_t errlen)
{
    *out = NULL;
    ga_snapfile_t *f = calloc(1, sizeof(*f));
    if (f == NULL) {
        free(buf);
        snprintf(err, errlen, "%s: out of host memory", name);
        return -1;
    }
    f->buf = buf;
    f->len = len;
    return parse(f, name, out, err, errlen);
}

const ga_torch_snapshot_t *ga_snapfile_snapshot(const ga_snapfile_t *f)
{
    return &f->snap;
}

size_t ga_snapfile_len(const ga_snapfile_t *f)
{
    return f->len;
}

void ga_snapfile_close(ga_snapfile_t *f)
{
    if (f == NULL)
        return;
    ga_pickle_free(f->pk);
    free_buf(f);
    free(f);
}
