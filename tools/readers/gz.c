/* gz.c: see gz.h. zlib's inflate with gzip framing (windowBits 16 + 15). */
#include "tools/readers/gz.h"

#include "tools/readers/limits.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#define IN_BUF (256 * 1024)

struct ga_gz {
    z_stream z;
    FILE *f;
    const char *path;
    unsigned char *in; /* IN_BUF compressed bytes; z.next_in points into it */
    bool eof;          /* f has no more bytes */
    bool done;         /* the last member ended with the file */
    bool member_end;   /* a member just ended: another may follow */
    uint64_t base;     /* compressed bytes of the members before this one */
};

bool ga_gz_magic(const void *p, size_t n)
{
    const unsigned char *b = p;
    return n >= 2 && b[0] == 0x1f && b[1] == 0x8b;
}

int ga_gz_open(ga_gz_t **out, FILE *f, const void *pre, size_t npre, const char *path, char *err, size_t errlen)
{
    *out = NULL;
    ga_gz_t *g = calloc(1, sizeof(*g));
    unsigned char *in = malloc(npre > IN_BUF ? npre : IN_BUF);
    if (g == NULL || in == NULL || inflateInit2(&g->z, 16 + MAX_WBITS) != Z_OK) {
        free(g);
        free(in);
        snprintf(err, errlen, "%s: out of host memory for the gzip decoder", path);
        return -1;
    }
    memcpy(in, pre, npre);
    g->in = in;
    g->f = f;
    g->path = path;
    g->z.next_in = in;
    g->z.avail_in = (uInt)npre;
    *out = g;
    return 0;
}

static int refill(ga_gz_t *g, char *err, size_t errlen)
{
    if (g->z.avail_in > 0 || g->eof)
        return 0;
    size_t k = fread(g->in, 1, IN_BUF, g->f);
    if (k == 0) {
        if (ferror(g->f)) {
            snprintf(err, errlen, "%s: read error: %s", g->path, strerror(errno));
            return -1;
        }
        g->eof = true;
    }
    g->z.next_in = g->in;
    g->z.avail_in = (uInt)k;
    return 0;
}

long long ga_gz_read(ga_gz_t *g, void *dst, size_t n, char *err, size_t errlen)
{
    if (g->done || n == 0)
        return 0;
    if (n > (1u << 30))
        n = 1u << 30;
    g->z.next_out = dst;
    g->z.avail_out = (uInt)n;
    while (g->z.avail_out == n) {
        if (refill(g, err, errlen) != 0)
            return -1;
        if (g->member_end) {
            /* After a member: the end of the file, or the next member. */
            if (g->z.avail_in == 0 && g->eof) {
                g->done = true;
                return 0;
            }
            g->base += g->z.total_in;
            inflateReset(&g->z);
            g->member_end = false;
            continue;
        }
        if (g->z.avail_in == 0 && g->eof) {
            snprintf(err, errlen, "%s: gzip stream truncated at byte %llu (the file ends inside compressed data)",
                     g->path, (unsigned long long)(g->base + g->z.total_in));
            return -1;
        }
        int rc = inflate(&g->z, Z_NO_FLUSH);
        if (rc == Z_STREAM_END) {
            g->member_end = true;
        } else if (rc == Z_DATA_ERROR || rc == Z_NEED_DICT) {
            snprintf(err, errlen, "%s: gzip stream corrupt at byte %llu: %s", g->path,
                     (unsigned long long)(g->base + g->z.total_in), g->z.msg ? g->z.msg : "invalid data");
            return -1;
        } else if (rc == Z_MEM_ERROR) {
            snprintf(err, errlen, "%s: out of host memory inflating the gzip stream", g->path);
            return -1;
        }
        /* Z_OK, or Z_BUF_ERROR (no progress for want of input): go round. */
    }
    return (long long)(n - g->z.avail_out);
}

uint64_t ga_gz_consumed(const ga_gz_t *g)
{
    return g->base + g->z.total_in;
}

int ga_gz_hold_check(const ga_gz_t *g, uint64_t held, const char *what, char *err, size_t errlen)
{
    uint64_t in = ga_gz_consumed(g);
    uint64_t max = in > (UINT64_MAX - GA_HOLD_SLACK) / GA_HOLD_RATIO ? UINT64_MAX : GA_HOLD_SLACK + GA_HOLD_RATIO * in;
    if (held <= max)
        return 0;
    snprintf(err, errlen,
             "%s: %s exceeds %llu MiB after %llu KiB of gzip: a gzip input may hold at most %llu MiB + %d x its "
             "compressed size (real traces inflate 16 to 30-fold): a gzip bomb or not a trace; to read it anyway, "
             "gunzip it and pass the plain file",
             g->path, what, (unsigned long long)(max >> 20), (unsigned long long)(in >> 10),
             (unsigned long long)(GA_HOLD_SLACK >> 20), GA_HOLD_RATIO);
    return -1;
}

bool ga_gz_other(const void *p, size_t n, const char *path, char *err, size_t errlen)
{
    static const struct {
        const char *name;  /* the tool that decompresses it */
        const char *magic; /* the frame's first bytes */
        size_t n;
    } other[] = {
        {"zstd", "\x28\xb5\x2f\xfd", 4},
        {"xz", "\xfd\x37\x7a\x58\x5a\x00", 6},
    };
    for (size_t i = 0; i < sizeof(other) / sizeof(other[0]); i++) {
        if (n >= other[i].n && memcmp(p, other[i].magic, other[i].n) == 0) {
            snprintf(err, errlen,
                     "%s: a %s-compressed file: galloc reads plain and gzip-compressed files only; decompress it "
                     "first (%s -d)",
                     path, other[i].name, other[i].name);
            return true;
        }
    }
    return false;
}

void ga_gz_close(ga_gz_t *g)
{
    if (g == NULL)
        return;
    inflateEnd(&g->z);
    free(g->in);
    free(g);
}
