/*
 * reserve.c: expandable_segments_reserve and expandable_segments_reserve_by_class
 * (PyTorch main, PR #192269), as the ExpandableSegment constructor,
 * find_expandable_block and DeviceCachingAllocator::malloc's OOM branch use
 * them in c10/cuda/CUDACachingAllocator.cpp (read in cyyever/pytorch at
 * 78f3d0d6, a mirror of main), with CUDAAllocatorConfig's
 * expandable_segments_reserve_decision and clamp_reserve_bytes.
 *
 * A new expandable segment reserves the full reserve, total + total / 8,
 * unless the config resolves one for the stream's class (its own entry, else
 * the global reserve); that one is capped at the full reserve. The segment's
 * range is the reserve rounded up to whole pages (numSegments). A stream gets
 * its class from galloc_set_expandable_reserve_class (PyTorch:
 * setExpandableSegmentReserveClassForStream, a process-wide map by
 * cudaStream_t; galloc keeps one table per allocator, that is per device).
 *
 * When even a fresh segment is smaller than the request (a single allocation
 * cannot span segments), find_expandable_block gives the new range back and
 * reports no block: the request fails like an exhausted device, through the
 * free-and-retry chain and the OOM path (expandable.c). The OOM message then
 * names the reserve and the keys that set it (ga_pool_reserve_oom_hint).
 *
 * Differences on purpose: PyTorch warns once per class that is tagged but not
 * listed while a global reserve applies; galloc has no warning channel and
 * uses the global reserve silently. A reserve under one page would make
 * PyTorch ask the driver for 0 bytes (an error, not an OOM); galloc reserves
 * one page (expandable.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pool/reserve.h"

/* A class name the grammar can list: 1 to 31 printable bytes, none of the
 * separators, quotes or backslashes (conf.c's rule for the list). */
static bool name_ok(const char *name, size_t n)
{
    if (n == 0 || n >= GA_CONF_NAME_MAX)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        if (c <= ' ' || c >= 0x7f || c == '"' || c == '\\' || c == ',' || c == ':' || c == '[' || c == ']')
            return false;
    }
    return true;
}

static size_t find(const ga_pool_t *p, galloc_stream_t stream)
{
    size_t i = 0;
    while (i < p->n_reserve_tags && p->reserve_tags[i].stream != stream)
        i++;
    return i;
}

galloc_status_t ga_pool_set_reserve_class(void *impl, galloc_stream_t stream, const char *name)
{
    ga_pool_t *p = impl;
    size_t n = name != NULL ? strnlen(name, GA_CONF_NAME_MAX) : 0;
    size_t i = find(p, stream);
    if (n == 0) { /* the empty class clears the tag */
        if (i < p->n_reserve_tags)
            p->reserve_tags[i] = p->reserve_tags[--p->n_reserve_tags];
        return GALLOC_OK;
    }
    if (!name_ok(name, n))
        return ga_fail(p->err, GALLOC_E_INVAL,
                       "expandable reserve class: expected 1 to 31 printable bytes without ',', ':', '[', ']', "
                       "quotes or backslashes, got \"%.40s\"%s",
                       name, n > 40 ? "..." : "");
    if (i == p->n_reserve_tags) {
        if (p->n_reserve_tags == p->cap_reserve_tags) {
            size_t cap = p->cap_reserve_tags ? 2 * p->cap_reserve_tags : 8;
            ga_reserve_tag_t *t = realloc(p->reserve_tags, cap * sizeof(*t));
            if (t == NULL)
                return ga_fail(p->err, GALLOC_E_NOMEM, "out of host memory for the reserve class of a stream");
            p->reserve_tags = t;
            p->cap_reserve_tags = cap;
        }
        p->reserve_tags[i].stream = stream;
        p->n_reserve_tags++;
    }
    memset(p->reserve_tags[i].name, 0, sizeof(p->reserve_tags[i].name));
    memcpy(p->reserve_tags[i].name, name, n);
    return GALLOC_OK;
}

const char *ga_pool_reserve_class_of(const ga_pool_t *p, galloc_stream_t stream)
{
    size_t i = find(p, stream);
    return i < p->n_reserve_tags ? p->reserve_tags[i].name : "";
}

size_t ga_pool_reserve_bytes(const ga_pool_t *p, galloc_stream_t stream)
{
    size_t full = p->device_total + p->device_total / 8;
    uint64_t bytes = 0;
    if (!ga_conf_reserve_bytes(&p->conf, ga_pool_reserve_class_of(p, stream), p->device_total, &bytes, NULL))
        return full;
    return bytes < full ? (size_t)bytes : full;
}

bool ga_pool_reserve_oom_hint(const ga_pool_t *p, const ga_alloc_params_t *ap, char *buf, size_t len)
{
    /* Releases up to 2.11 (recorded: tests/tools/data/h200) print the classic
     * hint even with expandable segments on; a job that sets a reserve key
     * runs a PyTorch that prints these instead. */
    if (!p->conf.expandable_segments || !ga_conf_reserve_configured(&p->conf))
        return false;
    const char *vendor = ga_backend_vendor(p->backend);
    const char *cls = ga_pool_reserve_class_of(p, ap->stream);
    size_t reserve = ga_pool_reserve_bytes(p, ap->stream);
    /* Only advised when the request would fit on the device: for a larger
     * one the reserve is not the problem. */
    if (ap->alloc_size <= p->device_total && reserve < ap->alloc_size) {
        char r[32], a[32], where[64];
        ga_format_size(reserve, r, sizeof(r));
        ga_format_size(ap->alloc_size, a, sizeof(a));
        if (cls[0] == '\0')
            snprintf(where, sizeof(where), "for this stream");
        else
            snprintf(where, sizeof(where), "for stream reserve class '%s'", cls);
        snprintf(buf, len,
                 " This allocation exceeds the expandable-segment reserve of %s %s, and a single allocation cannot "
                 "span expandable segments. Raise PYTORCH_%s_ALLOC_CONF expandable_segments_reserve or "
                 "expandable_segments_reserve_by_class (or unset it) so that a segment is at least %s.",
                 r, where, vendor, a);
        return true;
    }
    snprintf(buf, len,
             " expandable_segments is enabled. If instead the process is running out of virtual address space "
             "(VSZ), expandable segments may be over-reserving VA (each segment reserves ~9/8 of device memory, "
             "times the number of streams); reduce it via PYTORCH_%s_ALLOC_CONF expandable_segments_reserve / "
             "expandable_segments_reserve_by_class.",
             vendor);
    return true;
}

void ga_pool_reserve_destroy(ga_pool_t *p)
{
    free(p->reserve_tags);
    p->reserve_tags = NULL;
    p->n_reserve_tags = p->cap_reserve_tags = 0;
}
