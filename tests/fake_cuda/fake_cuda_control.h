/*
 * fake_cuda_control.h: the test controls libfake_cuda.so exports beside the
 * CUDA driver symbols. Tests dlopen the library (the same path galloc is given
 * as driver_path, so both share one fake driver) and dlsym these by name;
 * the prototypes here give the types (decltype in C++).
 *
 * Semantics are the core's (tests/fake_cuda/fake_gpu.h): the fake keeps its
 * state for the life of the process, across galloc's dlopen/dlclose, as long
 * as the test holds its own handle. A CUDA result code is an int here.
 *
 * Typical use:
 *   fake_cuda_reset();                       // fresh driver, counters at 0
 *   fake_cuda_configure(2, 1 << 30, 2 << 20);// 2 devices of 1 GiB
 *   fake_cuda_fail("cuMemCreate", 2, 0, 2);  // the 2nd cuMemCreate from now: OUT_OF_MEMORY
 *   fake_cuda_fail("*", 7, 0, 999);          // the 7th driver call from now: UNKNOWN
 *   ... run galloc with "device_backend:cuda,driver_path:<the .so>" ...
 *   fake_cuda_stats(&s);                     // s.leaks == 0, s.violations == 0
 */
#ifndef GA_TESTS_FAKE_CUDA_CONTROL_H
#define GA_TESTS_FAKE_CUDA_CONTROL_H

#include <stddef.h>
#include <stdint.h>

#include "tests/fake_cuda/fake_gpu.h"

#ifdef __cplusplus
extern "C" {
#endif

void fake_cuda_reset(void);
/* configure, fail, fail_clear, calls, stats, trace, trace_clear, last_violation,
 * set_manual_streams, stream_create, stream_destroy, stream_complete, pool_attr,
 * access, mappings_without, peer_enabled, peer_block, capture_begin,
 * capture_launch, capture_join, capture_end, capture_invalidate
 * (tests/fake_cuda/fake_gpu.h, FAKE_GPU_CONTROLS). */
FAKE_GPU_DECLARE_CONTROLS(fake_cuda)

#ifdef __cplusplus
}
#endif
#endif /* GA_TESTS_FAKE_CUDA_CONTROL_H */
