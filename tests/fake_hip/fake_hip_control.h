/*
 * fake_hip_control.h: the test controls libfake_hip.so exports beside the HIP
 * runtime symbols: the same controls as the fake CUDA driver
 * (tests/fake_cuda/fake_cuda_control.h, same types and semantics, the shared
 * core's), under the fake_hip_ prefix, plus the runtime version the fake
 * reports. Tests dlopen the library galloc is given as driver_path and dlsym
 * these by name (tests/fake_cuda/fake_cuda_util.h: FakeCuda(lib, "hip")).
 * A hipError_t is an int here.
 */
#ifndef GA_TESTS_FAKE_HIP_CONTROL_H
#define GA_TESTS_FAKE_HIP_CONTROL_H

#include <stddef.h>
#include <stdint.h>

#include "tests/fake_cuda/fake_gpu.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The version hipRuntimeGetVersion reports after a reset: ROCm 6.2. */
#define FAKE_HIP_DEFAULT_VERSION 60200000

/* Also restores FAKE_HIP_DEFAULT_VERSION. */
void fake_hip_reset(void);
int fake_hip_configure(int devices, uint64_t bytes_per_device, uint64_t granularity);
/* fn: exported name ("hipMemCreate") or "*"; nth / from count its calls from now on. */
int fake_hip_fail(const char *fn, uint64_t nth, uint64_t from, int hip_error);
void fake_hip_fail_clear(void);
uint64_t fake_hip_calls(const char *fn);
void fake_hip_stats(fake_gpu_stats_t *out);
size_t fake_hip_trace(char *buf, size_t len);
void fake_hip_trace_clear(void);
size_t fake_hip_last_violation(char *buf, size_t len);
void fake_hip_set_manual_streams(int on);
int fake_hip_stream_create(int device, uintptr_t *stream);
int fake_hip_stream_destroy(uintptr_t stream);
int fake_hip_stream_complete(int device, uintptr_t stream);
/* A device's default-pool attribute by its hipMemPoolAttr value (1..8). */
int fake_hip_pool_attr(int device, int hip_attr, uint64_t *value);
/* The version hipRuntimeGetVersion reports (HIP_VERSION's encoding); below
 * 60000000 the fake reads hipMemAllocationProp in HIP 5's layout. */
void fake_hip_set_version(int version);

#ifdef __cplusplus
}
#endif
#endif /* GA_TESTS_FAKE_HIP_CONTROL_H */
