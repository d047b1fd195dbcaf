/*
 * input.h: a trace file read through one fixed buffer: a peek at its first
 * bytes for format detection, then either line by line (CSV and text traces:
 * memory stays at the buffer size whatever the file size) or whole (a pickle).
 * A gzip-compressed file (gzip magic bytes, whatever its name) is inflated as
 * it is read (gz.h): every reader sees the plain bytes.
 *
 * Memory is the buffer (GA_INPUT_BUF) and the gzip decoder's 300 KiB for
 * every way of reading but ga_input_slurp, whose buffer is the file: at most
 * the max it is given, and for a gzip file what ga_input_hold_check allows.
 * A file compressed with another tool (zstd, xz) is refused by name at open.
 *
 * Lines are returned NUL-terminated in place, without "\n" or "\r\n". A line
 * longer than GA_INPUT_MAX_LINE or holding a NUL byte is an error: a trace line
 * is short text, and a NUL means a binary or garbled file.
 */
#ifndef GA_TOOLS_READERS_INPUT_H
#define GA_TOOLS_READERS_INPUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GA_INPUT_MAX_LINE 65536              /* longest line accepted, bytes */
#define GA_INPUT_BUF (GA_INPUT_MAX_LINE * 4) /* the read buffer */

struct ga_gz;

typedef struct ga_input {
    FILE *f;           /* the open file, or stdin */
    bool own;          /* whether f is ours to close */
    const char *path;  /* as given (for messages), not owned */
    char *buf;         /* GA_INPUT_BUF + 1 bytes (room for a final NUL) */
    size_t start, end; /* unread bytes are buf[start..end) */
    bool eof;          /* f has no more bytes */
    uint64_t line;     /* number of the last line returned (1-based) */
    uint64_t consumed; /* bytes handed out so far (for progress) */
    uint64_t total;    /* file size, 0 when unknown (a pipe) */
    struct ga_gz *gz;  /* the decoder when the file is gzip, else NULL */
} ga_input_t;

/* ga_input_open: open path ("-" = stdin) and fill the buffer. 0 or -1 + err. */
int ga_input_open(ga_input_t *in, const char *path, char *err, size_t errlen);

/* ga_input_peek: the first bytes of the file (up to GA_INPUT_BUF), valid
 * until the first ga_input_line / ga_input_slurp. */
void ga_input_peek(const ga_input_t *in, const char **p, size_t *n);

/* ga_input_line: the next line. Returns 1 (*line, *len set), 0 at end of file,
 * -1 with err = "PATH:LINE: problem". */
int ga_input_line(ga_input_t *in, char **line, size_t *len, char *err, size_t errlen);

/* ga_input_chunk: the next unread bytes, whatever they hold (a JSON document
 * need not have lines, nor short ones). Returns 1 (*p, *n > 0 set, valid until
 * the next call), 0 at end of file, -1 with err. Memory stays the buffer. */
int ga_input_chunk(ga_input_t *in, const char **p, size_t *n, char *err, size_t errlen);

/* ga_input_slurp: the whole remaining file in a new malloc'd buffer (caller
 * frees). Fails with err if it is larger than max bytes, or, for a gzip
 * file, than ga_input_hold_check allows; the buffer grows as bytes come,
 * never to a size the file claims. */
int ga_input_slurp(ga_input_t *in, size_t max, uint8_t **out, size_t *len, char *err, size_t errlen);

/* ga_input_hold_check: 0 when a reader may keep `held` bytes (what, for the
 * message) for what it read so far: always for a plain file, whose length
 * bounds what it holds; for a gzip file see ga_gz_hold_check. Else -1, err. */
int ga_input_hold_check(const ga_input_t *in, uint64_t held, const char *what, char *err, size_t errlen);

/* ga_input_compressed: whether the file is gzip (its bytes are inflated). */
bool ga_input_compressed(const ga_input_t *in);

/* ga_input_progress: consumed / total (compressed bytes for a gzip file), or -1 when the size is unknown. */
double ga_input_progress(const ga_input_t *in);

/* ga_input_close: close the file and free the buffer. Safe on a zeroed or
 * failed-open input. */
void ga_input_close(ga_input_t *in);

#ifdef __cplusplus
}
#endif
#endif /* GA_TOOLS_READERS_INPUT_H */
