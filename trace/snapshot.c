/*
 * snapshot.c: the snapshot model's builder and the file wrapper around the
 * writer (see snapshot.h; the dictionary itself is written by
 * snapshot_write.c).
 */
#include "trace/snapshot.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

void ga_snapshot_init(ga_snapshot_t *s, ga_trace_t *trace, int device)
{
    memset(s, 0, sizeof(*s));
    s->trace = trace;
    s->device = device;
}

void ga_snapshot_destroy(ga_snapshot_t *s)
{
    free(s->segs);
    free(s->blocks);
    free(s->conf_copy);
    ga_snapshot_init(s, s->trace, s->device);
}

static bool grow(void **arr, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return true;
    size_t ncap = *cap == 0 ? 16 : *cap;
    while (ncap < need) {
        if (ncap > SIZE_MAX / 2 / elem)
            return false;
        ncap *= 2;
    }
    void *p = realloc(*arr, ncap * elem);
    if (p == NULL)
        return false;
    *arr = p;
    *cap = ncap;
    return true;
}

galloc_status_t ga_snapshot_segment(ga_snapshot_t *s, const ga_snapshot_segment_info_t *info)
{
    if (info == NULL)
        return GALLOC_E_INVAL;
    if (!grow((void **)&s->segs, &s->segs_cap, s->nsegs + 1, sizeof(*s->segs)))
        return GALLOC_E_NOMEM;
    ga_snapshot_segment_t *seg = &s->segs[s->nsegs++];
    memset(seg, 0, sizeof(*seg));
    seg->info = *info;
    seg->first_block = s->nblocks;
    return GALLOC_OK;
}

galloc_status_t ga_snapshot_block(ga_snapshot_t *s, uint64_t size, uint64_t requested_size,
                                  ga_snapshot_block_state_t state, uint32_t stack_id)
{
    if (s->nsegs == 0 || (unsigned)state > GA_SNAPSHOT_ACTIVE_PENDING_FREE)
        return GALLOC_E_INVAL;
    if (!grow((void **)&s->blocks, &s->blocks_cap, s->nblocks + 1, sizeof(*s->blocks)))
        return GALLOC_E_NOMEM;
    ga_snapshot_block_t *b = &s->blocks[s->nblocks++];
    b->size = size;
    b->requested_size = requested_size;
    b->stack_id = stack_id;
    b->state = (uint8_t)state;
    /* The sums of PyTorch's snapshot(): active = allocated or pending free. */
    ga_snapshot_segment_t *seg = &s->segs[s->nsegs - 1];
    seg->nblocks++;
    seg->total_size += size;
    if (state == GA_SNAPSHOT_ACTIVE_ALLOCATED)
        seg->allocated_size += size;
    if (state != GA_SNAPSHOT_INACTIVE) {
        seg->active_size += size;
        seg->requested_size += requested_size;
        s->total_active += size;
    }
    return GALLOC_OK;
}

galloc_status_t ga_snapshot_settings(ga_snapshot_t *s, const ga_snapshot_settings_t *settings)
{
    if (settings == NULL || settings->roundup_count > GA_SNAPSHOT_ROUNDUP_MAX)
        return GALLOC_E_INVAL;
    const char *conf = settings->alloc_conf != NULL ? settings->alloc_conf : "";
    size_t len = strlen(conf);
    char *copy = malloc(len + 1);
    if (copy == NULL)
        return GALLOC_E_NOMEM;
    memcpy(copy, conf, len + 1);
    free(s->conf_copy);
    s->conf_copy = copy;
    s->settings = *settings;
    s->settings.alloc_conf = copy;
    s->has_settings = true;
    return GALLOC_OK;
}

const char *ga_snapshot_state_name(ga_snapshot_block_state_t state)
{
    switch (state) {
    case GA_SNAPSHOT_ACTIVE_ALLOCATED: return "active_allocated";
    case GA_SNAPSHOT_ACTIVE_PENDING_FREE: return "active_pending_free";
    default: return "inactive";
    }
}

static void set_err(char *err, size_t errlen, const char *what, const char *path, int errnum)
{
    if (err == NULL || errlen == 0)
        return;
    if (errnum != 0)
        snprintf(err, errlen, "%s '%s': %s", what, path, strerror(errnum));
    else
        snprintf(err, errlen, "%s '%s'", what, path);
}

galloc_status_t ga_snapshot_write_path(ga_snapshot_t *s, const char *path, galloc_snapshot_format_t format, char *err,
                                       size_t errlen)
{
    if (path == NULL || (format != GALLOC_SNAPSHOT_PICKLE && format != GALLOC_SNAPSHOT_JSON)) {
        set_err(err, errlen, "invalid snapshot path or format for", path != NULL ? path : "(null)", 0);
        return GALLOC_E_INVAL;
    }
    FILE *f = fopen(path, "wb");
    if (f == NULL) {
        set_err(err, errlen, "cannot open snapshot file", path, errno);
        return GALLOC_E_IO;
    }
    /* Only a regular file is removed after a failure: never a device such
     * as /dev/full, a pipe or a terminal. */
    struct stat st;
    bool regular = fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode);
    errno = 0;
    galloc_status_t rc = ga_snapshot_write(s, f, format);
    int write_errno = errno;
    if (fclose(f) != 0 && rc == GALLOC_OK) {
        rc = GALLOC_E_IO;
        write_errno = errno;
    }
    if (rc != GALLOC_OK) {
        if (rc == GALLOC_E_IO)
            set_err(err, errlen, "cannot write snapshot file", path, write_errno);
        else if (rc == GALLOC_E_NOMEM)
            set_err(err, errlen, "out of host memory writing snapshot file", path, 0);
        else
            set_err(err, errlen, "cannot write snapshot file", path, 0);
        if (regular)
            remove(path); /* a failed call leaves no half-written snapshot behind */
    }
    return rc;
}

galloc_status_t ga_snapshot_commit(ga_snapshot_t *s, galloc_status_t built, ga_trace_t *trace, const char *path,
                                   galloc_snapshot_format_t format, char *msg, size_t len)
{
    if (built != GALLOC_OK) {
        ga_snapshot_destroy(s);
        snprintf(msg, len, "snapshot: %s", galloc_strerror(built));
        return built;
    }
    /* PyTorch records a "snapshot" entry with the active bytes when one is
     * taken. A replay's file is the recorded run's, which took none here:
     * MemoryViz would show the extra entry as a block without frames. */
    if (!ga_trace_tokens(trace))
        ga_trace_record_snapshot(trace, ga_snapshot_total_active(s));
    char err[512] = "";
    galloc_status_t st = ga_snapshot_write_path(s, path, format, err, sizeof(err));
    ga_snapshot_destroy(s);
    if (st != GALLOC_OK)
        snprintf(msg, len, "snapshot: %s", err[0] ? err : galloc_strerror(st));
    return st;
}
