/*
 * snapfile.h: a PyTorch snapshot file, read and parsed into an object its
 * owner holds (the loaded job, tools/job): the trace reader, the recorded
 * settings, the verify view and the rebuilt start state all read that one
 * parsed copy, so a 1 GB snapshot is read once, and nothing reopens it by path.
 *
 * A plain file is mapped, not read (memory grows only with what the decoder
 * touches); a gzip one (magic bytes 1f 8b) is inflated, at most
 * GA_HOLD_SLACK + GA_HOLD_RATIO x its size (tools/readers/limits.h). Either
 * way the decoded tree is at most 64 MiB + 16 x the pickle's length
 * (pickle_read.h) and the snapshot's sizes are checked against
 * GA_TRACE_BYTES_MAX once parsed (ga_torch_check). No global state.
 */
#ifndef GA_TOOLS_SNAPSHOT_SNAPFILE_H
#define GA_TOOLS_SNAPSHOT_SNAPFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tools/snapshot/pickle_read.h"
#include "tools/snapshot/torch_snapshot.h"

/* The largest snapshot read (the readers' bound). */
#define GA_SNAPFILE_MAX ((size_t)16 << 30)

typedef struct ga_snapfile ga_snapfile_t;

/* ga_snapfile_open: read and parse the pickle at path (a file, not "-").
 * Returns 0 with *out (close with ga_snapfile_close), or -1 with a message
 * naming the path in err. */
int ga_snapfile_open(const char *path, ga_snapfile_t **out, char *err, size_t errlen);

/* ga_snapfile_adopt: parse buf[0..len) (malloc'd; owned by the result, or
 * freed on failure), named name in messages: a snapshot read from stdin. */
int ga_snapfile_adopt(uint8_t *buf, size_t len, const char *name, ga_snapfile_t **out, char *err, size_t errlen);

/* ga_snapfile_snapshot: the snapshot's schema walker (valid while f is). */
const ga_torch_snapshot_t *ga_snapfile_snapshot(const ga_snapfile_t *f);

/* ga_snapfile_len: the file's size (inflated size for a gzip file). */
size_t ga_snapfile_len(const ga_snapfile_t *f);

/* ga_snapfile_close: free everything (NULL is a no-op). */
void ga_snapfile_close(ga_snapfile_t *f);

#endif /* GA_TOOLS_SNAPSHOT_SNAPFILE_H */
