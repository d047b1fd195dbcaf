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
/* configure, fail, fail_clear, calls, stats, trace, trace_clear, last_violation,
 * set_manual_streams, stream_create, stream_destroy, stream_complete, pool_attr,
 * access, mappings_without, peer_enabled, peer_block, capture_begin, capture_launch,
 * capture_join, capture_end, capture_invalidate (tests/fake_cuda/fake_gpu.h, FAKE_GPU_CONTROLS). */
FAKE_GPU_DECLARE_CONTROLS(fake_hip)

/* The version hipRuntimeGetVersion reports (HIP_VERSION's encoding); below
 * 60000000 the fake reads hipMemAllocationProp in HIP 5's layout. */
void fake_hip_set_version(int version);

#ifdef __cplusplus
}
#endif
#endif /* GA_TESTS_FAKE_HIP_CONTROL_H */
