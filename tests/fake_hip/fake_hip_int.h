/*
 * fake_hip_int.h: private to the fake HIP runtime's files (fake_hip.c: the
 * runtime, memory, streams, events, host memory, peers, the test controls;
 * fake_hip_share.c: sharing between processes and capture graphs): the entry
 * macro, the core's results as hipError_t, streams as the core sees them.
 */
#ifndef GA_FAKE_HIP_INT_H
#define GA_FAKE_HIP_INT_H

#include <stdint.h>

#include "backend/hip_api.h"
#include "tests/fake_hip/fake_hip_control.h"

#define EXPORT __attribute__((visibility("default")))

/* Count the call, apply fault rules (an injected failure changes nothing),
 * then give the thread its device's context as the runtime would. */
#define ENTER(fn)                                                                                                      \
    do {                                                                                                               \
        int code_;                                                                                                     \
        if (fg_enter(#fn, &code_))                                                                                     \
            return (ga_hip_error_t)code_;                                                                              \
        fg_rt_bind();                                                                                                  \
    } while (0)

static inline ga_hip_error_t hip(fg_rc_t rc)
{
    static const ga_hip_error_t map[] = {
        [FG_OK] = GA_HIP_SUCCESS,
        [FG_INVALID_VALUE] = GA_HIP_ERROR_INVALID_VALUE,
        [FG_OUT_OF_MEMORY] = GA_HIP_ERROR_OUT_OF_MEMORY,
        [FG_NOT_INITIALIZED] = GA_HIP_ERROR_NOT_INITIALIZED,
        [FG_INVALID_DEVICE] = GA_HIP_ERROR_INVALID_DEVICE,
        [FG_INVALID_CONTEXT] = GA_HIP_ERROR_INVALID_CONTEXT,
        [FG_INVALID_HANDLE] = GA_HIP_ERROR_INVALID_HANDLE,
        [FG_NOT_READY] = GA_HIP_ERROR_NOT_READY,
        [FG_NOT_SUPPORTED] = GA_HIP_ERROR_NOT_SUPPORTED,
        [FG_PEER_UNSUPPORTED] = GA_HIP_ERROR_PEER_ACCESS_UNSUPPORTED,
        [FG_PEER_ALREADY_ENABLED] = GA_HIP_ERROR_PEER_ACCESS_ALREADY_ENABLED,
        [FG_CAPTURE_UNSUPPORTED] = GA_HIP_ERROR_STREAM_CAPTURE_UNSUPPORTED,
        [FG_CAPTURED_EVENT] = GA_HIP_ERROR_CAPTURED_EVENT,
        [FG_HOST_ALREADY_REGISTERED] = GA_HIP_ERROR_HOST_MEMORY_ALREADY_REGISTERED,
        [FG_HOST_NOT_REGISTERED] = GA_HIP_ERROR_HOST_MEMORY_NOT_REGISTERED,
    };
    return map[rc];
}

/* NULL and hipStreamPerThread both mean the device's default stream to the core. */
static inline uintptr_t stream_of(ga_hip_stream_t s)
{
    return s == GA_HIP_STREAM_PER_THREAD ? 0 : (uintptr_t)s;
}

/* The version the fake reports (fake_hip_set_version), read atomically. */
extern _Atomic int fake_hip_version;

#endif /* GA_FAKE_HIP_INT_H */
