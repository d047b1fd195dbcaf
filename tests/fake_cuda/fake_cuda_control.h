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
int fake_cuda_configure(int devices, uint64_t bytes_per_device, uint64_t granularity);
/* fn: exported name ("cuMemAlloc_v2") or "*"; nth / from count its calls from now on. */
int fake_cuda_fail(const char *fn, uint64_t nth, uint64_t from, int cuda_result);
void fake_cuda_fail_clear(void);
uint64_t fake_cuda_calls(const char *fn);
void fake_cuda_stats(fake_gpu_stats_t *out);
size_t fake_cuda_trace(char *buf, size_t len);
void fake_cuda_trace_clear(void);
size_t fake_cuda_last_violation(char *buf, size_t len);
void fake_cuda_set_manual_streams(int on);
int fake_cuda_stream_create(int device, uintptr_t *stream);
int fake_cuda_stream_destroy(uintptr_t stream);
int fake_cuda_stream_complete(int device, uintptr_t stream);
/* A device's default-pool attribute by its CUmemPool_attribute value (1..8). */
int fake_cuda_pool_attr(int device, int cu_attr, uint64_t *value);

#ifdef __cplusplus
}
#endif
#endif /* GA_TESTS_FAKE_CUDA_CONTROL_H */
