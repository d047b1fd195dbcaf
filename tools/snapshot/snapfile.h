/*
 * snapfile.h: a PyTorch snapshot file, read and parsed once per process.
 *
 * `galloc replay` of a snapshot needs it in four places: the trace reader,
 * the recorded allocator settings, the verify view and the seeded state. Each
 * used to read and parse the whole file itself, so a 1 GB snapshot was
 * loaded four times. They now share one parsed copy.
 *
 * Entries are keyed by path and by the file's identity (device, inode, size,
 * modification time), so a file rewritten in place is normally read again;
 * the old copy stays valid for whoever still holds it. Entries live until
 * ga_snapfile_drop_all (the command's exit). A plain file is mapped, not
 * read (memory grows only with what the decoder touches); a gzip one (magic
 * bytes 1f 8b) is inflated. Not thread-safe: files are
 * loaded before any worker thread starts (fit reads its traces first).
 */
#ifndef GA_TOOLS_SNAPSHOT_SNAPFILE_H
#define GA_TOOLS_SNAPSHOT_SNAPFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tools/snapshot/pickle_read.h"

/* The largest snapshot read (the readers' bound). */
#define GA_SNAPFILE_MAX ((size_t)16 << 30)

/* ga_snapfile_get: the parsed pickle at path (a file, not "-"), loaded on
 * first use. Returns 0 and sets *pk (owned by the cache, read-only) and, if
 * len is not NULL, *len to the file's size (inflated size for a gzip file); or -1 with a message naming the
 * path in err. */
int ga_snapfile_get(const char *path, const ga_pickle_t **pk, size_t *len, char *err, size_t errlen);

/* ga_snapfile_share: whether ga_snapfile_get returns a file already loaded
 * (on) or always loads it afresh (off, the default: a process that rewrites
 * a snapshot in place within one clock tick, such as a test or a fuzzer,
 * must not see the old one). The galloc command turns it on: its inputs do
 * not change while it runs. */
void ga_snapfile_share(bool on);

/* ga_snapfile_drop_all: free every cached file. Pointers from
 * ga_snapfile_get become invalid. */
void ga_snapfile_drop_all(void);

#endif /* GA_TOOLS_SNAPSHOT_SNAPFILE_H */
