/* assert_shim.h: C entry points for assert_test: GA_ASSERT (util/assert.h) as
 * the pool's sources compile it. */
#ifndef ASSERT_SHIM_H
#define ASSERT_SHIM_H

#ifdef __cplusplus
extern "C" {
#endif

/* GA_ASSERT_ON as this build compiles the pool: 1 unless NDEBUG. */
int assert_shim_on(void);
/* GA_ASSERT(value == 1): returns when it holds, aborts when it does not. */
void assert_shim_check(int value);

#ifdef __cplusplus
}
#endif
#endif /* ASSERT_SHIM_H */
