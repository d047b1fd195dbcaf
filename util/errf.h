/*
 * errf.h: the failure convention of the tools and readers: a function that
 * fails writes a message into the caller's buffer and returns -1, so
 *
 *     if (n == 0)
 *         return ga_errf(err, errlen, "--layers must be in 1..%u", MAX_LAYERS);
 *
 * is the whole error path. One definition rather than a static copy in each
 * file that formats its own messages.
 *
 * Thread-safety: writes only to err.
 */
#ifndef GA_UTIL_ERRF_H
#define GA_UTIL_ERRF_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ga_errf: printf fmt into err (errlen bytes, always NUL-terminated, cut to
 * fit; nothing when err is NULL or errlen 0) and return -1. */
__attribute__((format(printf, 3, 4))) int ga_errf(char *err, size_t errlen, const char *fmt, ...);

#ifdef __cplusplus
}
#endif
#endif /* GA_UTIL_ERRF_H */
