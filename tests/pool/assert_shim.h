/* assert_shim.h: C entry points for assert_test: GA_ASSERT (util/assert.h) as
 * the pool's sources compile it. */
#ifndef ASSERT_SHIM_H
#define ASSERT_SHIM_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* GA_ASSERT_ON as this build compiles the pool: 1 unless NDEBUG. */
int assert_shim_on(void);
/* GA_ASSERT(value == 1): returns when it holds, aborts when it does not. */
void assert_shim_check(int value);

/* The pool's assertions at their places, on a free 2 MiB block of a
 * segment built by hand: */
/* split its front `size` bytes off (returns unless size is 0, not a multiple
 * of 512, or not below 2 MiB); */
void assert_shim_split_whole(size_t size);
/* file it in its set while marked allocated (aborts); */
void assert_shim_insert_allocated(void);
/* file it while it claims another stream than its segment's set (aborts); */
void assert_shim_insert_other_stream(void);
/* merge two neighbours that do not touch (aborts). */
void assert_shim_merge_apart(void);

#ifdef __cplusplus
}
#endif
#endif /* ASSERT_SHIM_H */
