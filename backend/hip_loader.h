/*
 * hip_loader.h: the HIP runtime library (libamdhip64.so), dlopen'd at backend
 * open, as a struct of function pointers filled from one symbol table by the
 * loader the GPU vendors share (backend/dl_table.h: a missing REQUIRED symbol
 * fails the load, an optional group resolves all or nothing and turns off only
 * its feature).
 *
 * The VMM group (expandable segments), the ASYNC group
 * (backend:hipMallocAsync) and the HOST group (pinned host memory and copies,
 * galloc_sleep's offload) are optional: ROCm added the first two in 5.1 and a
 * runtime may still lack them; HOST only turns off the offload. Nothing is loaded before ga_hip_runtime_load; it calls
 * no HIP function. Locking: none; a loaded runtime belongs to one backend state.
 */
#ifndef GA_BACKEND_HIP_LOADER_H
#define GA_BACKEND_HIP_LOADER_H

#include <stddef.h>

#include <galloc/galloc_status.h>
#include "backend/dl_table.h"
#include "backend/hip_api.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Symbol groups. */
typedef enum ga_hip_group {
    GA_HIP_REQUIRED = GA_DL_REQUIRED, /* the library is unusable without it */
    GA_HIP_VMM = 1,                   /* virtual memory: expandable segments */
    GA_HIP_ASYNC = 2,                 /* stream-ordered allocation: backend:hipMallocAsync */
    GA_HIP_HOST = 3,                  /* pinned host memory and synchronous copies: galloc_sleep's offload */
    GA_HIP_GROUPS = 4
} ga_hip_group_t;

/* GA_HIP_SYMBOLS(X): X(group, symbol) for every symbol galloc resolves. */
#define GA_HIP_SYMBOLS(X)                                                                          \
    X(REQUIRED, hipInit)                                                                           \
    X(REQUIRED, hipRuntimeGetVersion)                                                              \
    X(REQUIRED, hipGetDeviceCount)                                                                 \
    X(REQUIRED, hipDeviceGet)                                                                      \
    X(REQUIRED, hipGetDevice)                                                                      \
    X(REQUIRED, hipSetDevice)                                                                      \
    X(REQUIRED, hipDeviceSynchronize)                                                              \
    X(REQUIRED, hipMalloc)                                                                         \
    X(REQUIRED, hipFree)                                                                           \
    X(REQUIRED, hipMemGetInfo)                                                                     \
    X(REQUIRED, hipEventCreateWithFlags)                                                           \
    X(REQUIRED, hipEventDestroy)                                                                   \
    X(REQUIRED, hipEventRecord)                                                                    \
    X(REQUIRED, hipEventQuery)                                                                     \
    X(REQUIRED, hipEventSynchronize)                                                               \
    X(REQUIRED, hipStreamSynchronize)                                                              \
    X(REQUIRED, hipGetErrorName)                                                                   \
    X(REQUIRED, hipGetErrorString)                                                                 \
    X(VMM, hipMemGetAllocationGranularity)                                                         \
    X(VMM, hipMemAddressReserve)                                                                   \
    X(VMM, hipMemAddressFree)                                                                      \
    X(VMM, hipMemCreate)                                                                           \
    X(VMM, hipMemRelease)                                                                          \
    X(VMM, hipMemMap)                                                                              \
    X(VMM, hipMemUnmap)                                                                            \
    X(VMM, hipMemSetAccess)                                                                        \
    X(ASYNC, hipMallocAsync)                                                                       \
    X(ASYNC, hipFreeAsync)                                                                         \
    X(ASYNC, hipDeviceGetDefaultMemPool)                                                           \
    X(ASYNC, hipMemPoolSetAttribute)                                                               \
    X(ASYNC, hipMemPoolGetAttribute)                                                               \
    X(ASYNC, hipMemPoolTrimTo)                                                                     \
    X(HOST, hipHostMalloc)                                                                         \
    X(HOST, hipHostFree)                                                                           \
    X(HOST, hipMemcpyDtoH)                                                                         \
    X(HOST, hipMemcpyHtoD)

/* A loaded HIP runtime. */
typedef struct ga_hip_runtime {
    void *lib; /* dlopen handle; NULL when not loaded */
#define GA_HIP_FIELD_(group, sym) ga_##sym##_fn *sym; /* NULL if its optional group is missing */
    GA_HIP_SYMBOLS(GA_HIP_FIELD_)
#undef GA_HIP_FIELD_
    const char *missing[GA_DL_MAX_GROUPS]; /* per optional group: its first missing symbol, or NULL */
} ga_hip_runtime_t;

/* The symbol table (exported for the test that checks the names against a
 * real libamdhip64): ga_dl_symbol_t entries whose group is a ga_hip_group_t. */
extern const ga_dl_symbol_t ga_hip_symbols[];
extern const size_t ga_hip_symbol_count;

/* The library dlopen'd when no path is configured (the soname-independent
 * link every ROCm install has, 5.x and 6.x alike). */
#define GA_HIP_DEFAULT_LIBRARY "libamdhip64.so"

/*
 * ga_hip_runtime_load: dlopen path and resolve every symbol into *r.
 * Returns GALLOC_OK; GALLOC_E_UNAVAILABLE if the library does not load or
 * lacks a REQUIRED symbol (closed again, err says which, with dlerror's text);
 * GALLOC_E_INVAL for NULL arguments.
 */
galloc_status_t ga_hip_runtime_load(ga_hip_runtime_t *r, const char *path, char *err, size_t errlen);

/* ga_hip_runtime_unload: dlclose the library; *r is zeroed. No-op if not loaded. */
void ga_hip_runtime_unload(ga_hip_runtime_t *r);

#ifdef __cplusplus
}
#endif
#endif /* GA_BACKEND_HIP_LOADER_H */
