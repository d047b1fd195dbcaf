/*
 * input.c: see input.h. The buffer is filled with large fread calls and lines
 * are found with memchr, so reading costs a few nanoseconds per byte and no
 * allocation per line.
 */
#include "tools/readers/input.h"

#include "tools/readers/gz.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static void put(char *err, size_t errlen, const char *path, const char *what, int e)
{
    if (err != NULL && errlen > 0)
        snprintf(err, errlen, "%s: %s%s%s", path, what, e ? ": " : "", e ? strerror(e) : "");
}

/* Up to n bytes of the file's content (inflated when gzip) into dst; sets
 * in->eof at its end. Returns the count, or -1 with err. */
static long long get(ga_input_t *in, void *dst, size_t n, char *err, size_t errlen)
{
    if (in->gz != NULL) {
        long long k = ga_gz_read(in->gz, dst, n, err, errlen);
        if (k == 0)
            in->eof = true;
        return k;
    }
    size_t k = fread(dst, 1, n, in->f);
    if (k == 0) {
        if (ferror(in->f)) {
            put(err, errlen, in->path, "read error", errno);
            return -1;
        }
        in->eof = true;
    }
    return (long long)k;
}

/* Move unread bytes to the front and read until the buffer is full or EOF. */
static int fill(ga_input_t *in, char *err, size_t errlen)
{
    if (in->start > 0) {
        memmove(in->buf, in->buf + in->start, in->end - in->start);
        in->end -= in->start;
        in->start = 0;
    }
    while (!in->eof && in->end < GA_INPUT_BUF) {
        long long k = get(in, in->buf + in->end, GA_INPUT_BUF - in->end, err, errlen);
        if (k < 0)
            return -1;
        in->end += (size_t)k;
    }
    return 0;
}

int ga_input_open(ga_input_t *in, const char *path, char *err, size_t errlen)
{
    memset(in, 0, sizeof(*in));
    in->path = path;
    if (strcmp(path, "-") == 0) {
        in->f = stdin;
    } else {
        in->f = fopen(path, "rb");
        if (in->f == NULL) {
            put(err, errlen, path, "cannot open", errno);
            return -1;
        }
        in->own = true;
        struct stat st;
        if (fstat(fileno(in->f), &st) == 0 && S_ISREG(st.st_mode))
            in->total = (uint64_t)st.st_size;
        else if (fstat(fileno(in->f), &st) == 0 && S_ISDIR(st.st_mode)) {
            put(err, errlen, path, "is a directory", 0);
            ga_input_close(in);
            return -1;
        }
    }
    in->buf = malloc(GA_INPUT_BUF + 1);
    if (in->buf == NULL) {
        put(err, errlen, path, "out of host memory", 0);
        ga_input_close(in);
        return -1;
    }
    if (fill(in, err, errlen) != 0) {
        ga_input_close(in);
        return -1;
    }
    if (ga_gz_other(in->buf, in->end, path, err, errlen)) {
        ga_input_close(in);
        return -1;
    }
    if (ga_gz_magic(in->buf, in->end)) {
        /* Inflate from here on: the bytes read so far are the decoder's first input. */
        if (ga_gz_open(&in->gz, in->f, in->buf, in->end, path, err, errlen) != 0) {
            ga_input_close(in);
            return -1;
        }
        in->start = in->end = 0;
        in->eof = false;
        if (fill(in, err, errlen) != 0) {
            ga_input_close(in);
            return -1;
        }
    }
    return 0;
}

bool ga_input_compressed(const ga_input_t *in)
{
    return in->gz != NULL;
}

void ga_input_peek(const ga_input_t *in, const char **p, size_t *n)
{
    *p = in->buf + in->start;
    *n = in->end - in->start;
}

int ga_input_line(ga_input_t *in, char **line, size_t *len, char *err, size_t errlen)
{
    char *nl = memchr(in->buf + in->start, '\n', in->end - in->start);
    if (nl == NULL && !in->eof) {
        if (fill(in, err, errlen) != 0)
            return -1;
        nl = memchr(in->buf + in->start, '\n', in->end - in->start);
    }
    if (nl == NULL && in->start == in->end)
        return 0; /* end of file */
    size_t n = nl ? (size_t)(nl - (in->buf + in->start)) : in->end - in->start;
    in->line++;
    if (n > GA_INPUT_MAX_LINE || (nl == NULL && !in->eof)) {
        if (err != NULL && errlen > 0)
            snprintf(err, errlen, "%s:%llu: line longer than %d bytes (not a trace file?)", in->path,
                     (unsigned long long)in->line, GA_INPUT_MAX_LINE);
        return -1;
    }
    char *s = in->buf + in->start;
    if (memchr(s, '\0', n) != NULL) {
        if (err != NULL && errlen > 0)
            snprintf(err, errlen, "%s:%llu: NUL byte in a text line (binary or garbled file)", in->path,
                     (unsigned long long)in->line);
        return -1;
    }
    in->start += n + (nl != NULL);
    in->consumed += n + (nl != NULL);
    if (n > 0 && s[n - 1] == '\r')
        n--;
    s[n] = '\0'; /* overwrites the '\n' (or the spare byte after the buffer) */
    *line = s;
    *len = n;
    return 1;
}

int ga_input_chunk(ga_input_t *in, const char **p, size_t *n, char *err, size_t errlen)
{
    if (in->start == in->end) {
        if (in->eof)
            return 0;
        if (fill(in, err, errlen) != 0)
            return -1;
        if (in->start == in->end)
            return 0;
    }
    *p = in->buf + in->start;
    *n = in->end - in->start;
    in->consumed += *n;
    in->start = in->end;
    return 1;
}

int ga_input_slurp(ga_input_t *in, size_t max, uint8_t **out, size_t *len, char *err, size_t errlen)
{
    *out = NULL;
    *len = 0;
    size_t cap = in->total > 0 && in->total <= max ? (size_t)in->total + 1 : GA_INPUT_BUF;
    size_t n = in->end - in->start;
    if (n > max) {
        put(err, errlen, in->path, "file too large", 0);
        return -1;
    }
    if (cap < n)
        cap = n;
    uint8_t *b = malloc(cap ? cap : 1);
    if (b == NULL) {
        put(err, errlen, in->path, "out of host memory reading the file", 0);
        return -1;
    }
    memcpy(b, in->buf + in->start, n);
    in->start = in->end;
    while (!in->eof) {
        if (n == cap) {
            if (cap >= max) {
                free(b);
                if (err != NULL && errlen > 0)
                    snprintf(err, errlen, "%s: file larger than %zu bytes", in->path, max);
                return -1;
            }
            size_t ncap = cap > max / 2 ? max : cap * 2;
            uint8_t *nb = realloc(b, ncap);
            if (nb == NULL) {
                free(b);
                put(err, errlen, in->path, "out of host memory reading the file", 0);
                return -1;
            }
            b = nb;
            cap = ncap;
        }
        /* a buffer's worth at most per read: the bound is checked before a bomb inflates much past it */
        long long k = get(in, b + n, cap - n < GA_INPUT_BUF ? cap - n : GA_INPUT_BUF, err, errlen);
        if (k < 0 || ga_input_hold_check(in, n + (size_t)k, "the inflated file", err, errlen) != 0) {
            free(b);
            return -1;
        }
        n += (size_t)k;
    }
    in->consumed += n;
    *out = b;
    *len = n;
    return 0;
}

int ga_input_hold_check(const ga_input_t *in, uint64_t held, const char *what, char *err, size_t errlen)
{
    return in->gz != NULL ? ga_gz_hold_check(in->gz, held, what, err, errlen) : 0;
}

double ga_input_progress(const ga_input_t *in)
{
    if (in->total == 0)
        return -1.0;
    double p = (double)(in->gz != NULL ? ga_gz_consumed(in->gz) : in->consumed) / (double)in->total;
    return p > 1.0 ? 1.0 : p;
}

void ga_input_close(ga_input_t *in)
{
    if (in->own && in->f != NULL)
        fclose(in->f);
    ga_gz_close(in->gz);
    in->gz = NULL;
    free(in->buf);
    in->f = NULL;
    in->buf = NULL;
    in->own = false;
}
