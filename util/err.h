/*
 * err.h: the error sink: where an allocator records its last failure, so that
 * galloc_last_error can report it with figures. Every implementation behind
 * the allocator ops table (the caching pool, the stream-ordered and the user
 * allocators) and the front end write through ga_fail, so one breakpoint on
 * ga_fail sees every error galloc reports.
 *
 * Locking: none inside. A sink belongs to one allocator front end (front/) and
 * is written and read only under that allocator's lock.
 */
#ifndef GA_UTIL_ERR_H
#define GA_UTIL_ERR_H

#include <galloc/galloc_allocator.h>
#include <galloc/galloc_status.h>

#ifdef __cplusplus
extern "C" {
#endif

/* An error sink: the status of the last failure and its message. */
typedef struct ga_err {
    galloc_status_t status;     /* last failure's status, GALLOC_OK if none */
    char msg[GALLOC_ERROR_MAX]; /* its message, NUL-terminated */
} ga_err_t;

/* ga_fail: record status and a printf-style message in err (NULL: record
 * nothing); returns status so that every failure is one `return ga_fail(...)`. */
galloc_status_t ga_fail(ga_err_t *err, galloc_status_t status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

#ifdef __cplusplus
}
#endif
#endif /* GA_UTIL_ERR_H */
