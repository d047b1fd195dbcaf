/*
 * gz.h: gzip-compressed trace files, inflated as they are read. Profiler
 * traces are usually saved as .json.gz; any trace (and a snapshot pickle) may
 * be. A file is gzip when its first two bytes are the gzip magic 1f 8b,
 * whatever its name. Concatenated gzip members (pigz, `cat a.gz b.gz`) read
 * as one stream, as gunzip does.
 *
 * Errors name the place in the compressed file: "PATH: gzip stream corrupt at
 * byte N: <zlib's reason>", "PATH: gzip stream truncated at byte N".
 *
 * Memory: the decoder is a 256 KiB input buffer and zlib's 44 KiB state,
 * whatever the file inflates to. A reader that keeps what it inflates checks
 * its holdings against ga_gz_hold_check (limits.h: GA_HOLD_SLACK +
 * GA_HOLD_RATIO x the compressed bytes), so a small file claiming gigabytes is
 * refused after inflating about GA_HOLD_SLACK. Other compressors are told by
 * their magic bytes and refused by name (ga_gz_other): galloc reads
 * gzip only, and adds no dependency for the rest.
 */
#ifndef GA_TOOLS_READERS_GZ_H
#define GA_TOOLS_READERS_GZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ga_gz ga_gz_t;

/* ga_gz_magic: whether p[0..n) starts with the gzip magic bytes. */
bool ga_gz_magic(const void *p, size_t n);

/* ga_gz_open: a decoder reading compressed bytes from f, the first npre of
 * which were already read into pre (copied). path is for messages (not
 * owned, must outlive the decoder). 0 and *out, or -1 with err. */
int ga_gz_open(ga_gz_t **out, FILE *f, const void *pre, size_t npre, const char *path, char *err, size_t errlen);

/* ga_gz_read: up to n inflated bytes into dst. Returns the count (> 0), 0 at
 * the end of the last member, -1 with err (corrupt, truncated, read error). */
long long ga_gz_read(ga_gz_t *g, void *dst, size_t n, char *err, size_t errlen);

/* ga_gz_consumed: compressed bytes consumed so far (for progress). */
uint64_t ga_gz_consumed(const ga_gz_t *g);

/* ga_gz_hold_check: 0 when a reader may hold `held` bytes (what it has
 * kept, e.g. "the inflated pickle") for the compressed bytes g consumed so
 * far; else -1 with err naming the file, the figures and the bound. */
int ga_gz_hold_check(const ga_gz_t *g, uint64_t held, const char *what, char *err, size_t errlen);

/* ga_gz_other: whether p[0..n) starts with the magic bytes of a compressor
 * galloc does not read (zstd, xz); then err names it and the way out. */
bool ga_gz_other(const void *p, size_t n, const char *path, char *err, size_t errlen);

/* ga_gz_close: free the decoder (NULL is a no-op; f stays open). */
void ga_gz_close(ga_gz_t *g);

#ifdef __cplusplus
}
#endif
#endif /* GA_TOOLS_READERS_GZ_H */
