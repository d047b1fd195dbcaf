/*
 * size.h: sizes as PyTorch's allocators report and limit them, shared by the
 * caching pool (pool/) and the stream-ordered allocator (allocators/async/),
 * whose OOM messages users compare with PyTorch's to the character.
 *
 * Locking: none needed (pure functions and constants).
 */
#ifndef GA_UTIL_SIZE_H
#define GA_UTIL_SIZE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Both of PyTorch's CUDA allocators refuse a request of 1 EB or more before
 * any device call ("Tried to allocate more than 1EB memory."). */
#define GA_ONE_EXABYTE ((uint64_t)1 << 60)

/* ga_format_size: bytes as c10's format_size writes them for OOM messages
 * ("1024 bytes", "1.00 MiB", "80.00 GiB"), NUL-terminated in buf (len bytes). */
void ga_format_size(uint64_t bytes, char *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif /* GA_UTIL_SIZE_H */
