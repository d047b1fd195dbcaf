/*
 * reserve.h: how much address space each expandable segment reserves
 * (reserve.c): the per-stream reserve class, the reserve it resolves to, and
 * what the OOM message says about it.
 *
 * Locking: the locked path (ga_pool_set_reserve_class is the ops member the
 * front end calls under the allocator's lock).
 */
#ifndef GA_POOL_RESERVE_H
#define GA_POOL_RESERVE_H

#include "pool/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* An entry of the pool's stream -> reserve class table. */
typedef struct ga_reserve_tag {
    galloc_stream_t stream;      /* the stream */
    char name[GA_CONF_NAME_MAX]; /* its class, NUL-terminated, 1 to 31 bytes */
} ga_reserve_tag_t;

/* ops member set_reserve_class (galloc_set_expandable_reserve_class): tag
 * stream with reserve class name; NULL or "" removes its tag.
 * GALLOC_E_INVAL for a name the config grammar could not list, GALLOC_E_NOMEM. */
galloc_status_t ga_pool_set_reserve_class(void *impl, galloc_stream_t stream, const char *name);

/* The class stream is tagged with, "" for none. */
const char *ga_pool_reserve_class_of(const ga_pool_t *p, galloc_stream_t stream);

/* The virtual range a new expandable segment of stream reserves before it is
 * rounded to whole pages: 9/8 of the device's memory, or the configured
 * reserve for the stream's class clamped to that (clamp_reserve_bytes). */
size_t ga_pool_reserve_bytes(const ga_pool_t *p, galloc_stream_t stream);

/* The end of the OOM message when expandable segments are on and a reserve
 * key is set (PyTorch main's hints about the reserve), into buf; false, buf
 * untouched, where the message keeps the released wording. */
bool ga_pool_reserve_oom_hint(const ga_pool_t *p, const ga_alloc_params_t *ap, char *buf, size_t len);

/* Free the tag table (destroy). */
void ga_pool_reserve_destroy(ga_pool_t *p);

#ifdef __cplusplus
}
#endif
#endif /* GA_POOL_RESERVE_H */
