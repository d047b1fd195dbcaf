/*
 * assert.h: GA_ASSERT, the library's debug-only invariant check, as mimalloc's
 * mi_assert and jemalloc's assert: a condition that holds unless galloc
 * itself has a bug (a block split past its end, a set holding another
 * stream's block, an escrow spending headroom it was not granted). Caller
 * mistakes (NULL, a foreign pointer, a double free) are not invariants: they
 * return a status, never assert.
 *
 * On or off: on unless NDEBUG is defined, as the C library's assert. Bazel's
 * `-c opt` defines NDEBUG, and so does .bazelrc's --config=opt (bench/ builds
 * with both): release builds compile every GA_ASSERT out, the condition is
 * not evaluated and costs nothing. Bazel's default compilation mode,
 * fastbuild, leaves NDEBUG undefined, so GA_ASSERT is on in the tests, in
 * CI's sanitizer stages (--config=asan and --config=tsan are fastbuild with
 * clang and the sanitizers' flags) and in a plain `./bazelw build` or `run`. GA_ASSERT_ON says
 * which; tests/pool/assert_test checks that it is on where the tests run.
 *
 * A failure prints "galloc: file:line: assertion failed: condition" on stderr
 * and aborts. Conditions must have no side effects: release builds drop them.
 */
#ifndef GA_UTIL_ASSERT_H
#define GA_UTIL_ASSERT_H

#ifdef __cplusplus
extern "C" {
#endif

#ifdef NDEBUG
#define GA_ASSERT_ON 0
/* sizeof keeps the condition compiled (names checked, variables used) but never evaluated. */
#define GA_ASSERT(cond) ((void)sizeof(!(cond)))
#else
#define GA_ASSERT_ON 1
#define GA_ASSERT(cond) (__builtin_expect(!!(cond), 1) ? (void)0 : ga_assert_fail(#cond, __FILE__, __LINE__))
#endif

/* Print where and what failed, then abort(). Out of line and cold, so an
 * assertion costs its test and a not-taken branch on the path it guards. */
__attribute__((noreturn, cold, noinline)) void ga_assert_fail(const char *cond, const char *file, int line);

#ifdef __cplusplus
}
#endif
#endif /* GA_UTIL_ASSERT_H */
