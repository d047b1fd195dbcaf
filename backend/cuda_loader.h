/*
 * cuda_loader.h: the CUDA driver library, dlopen'd at backend open, as a
 * struct of function pointers filled from one symbol table by the loader the
 * GPU vendors share (backend/dl_table.h: FFmpeg's LOAD_SYMBOL /
 * LOAD_SYMBOL_OPT rules).
 *
 * Every symbol is looked up by its exact exported, versioned name and belongs
 * to a group: REQUIRED symbols must all resolve or the load fails
 * (GALLOC_E_UNAVAILABLE, the library is closed, the message carries dlerror's
 * text); an optional group (VMM for expandable segments, ASYNC for
 * backend:cudaMallocAsync, HOST for the pinned host memory and copies
 * galloc_sleep offloads with) resolves all or nothing: one missing symbol leaves
 * every pointer of its group NULL and names the missing symbol in `missing`,
 * and only that feature is off.
 *
 * Nothing is loaded before ga_cuda_driver_load; it calls no driver function.
 * Locking: none; a loaded driver belongs to one backend state.
 */
#ifndef GA_BACKEND_CUDA_LOADER_H
#define GA_BACKEND_CUDA_LOADER_H

#include <stddef.h>
#include <stdint.h>

#include <galloc/galloc_status.h>
#include "backend/cuda_api.h"
#include "backend/dl_table.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Symbol groups. */
typedef enum ga_cuda_group {
    GA_CUDA_REQUIRED = GA_DL_REQUIRED, /* the library is unusable without it */
    GA_CUDA_VMM = 1,      /* virtual memory: expandable segments */
    GA_CUDA_ASYNC = 2,    /* stream-ordered allocation: backend:cudaMallocAsync */
    GA_CUDA_HOST = 3,     /* pinned host memory and synchronous copies: galloc_sleep's offload */
    GA_CUDA_GROUPS = 4
} ga_cuda_group_t;

/* GA_CUDA_SYMBOLS(X): X(group, symbol) for every symbol galloc resolves. */
#define GA_CUDA_SYMBOLS(X)                                                                         \
    X(REQUIRED, cuInit)                                                                            \
    X(REQUIRED, cuDeviceGet)                                                                       \
    X(REQUIRED, cuDeviceGetCount)                                                                  \
    X(REQUIRED, cuDevicePrimaryCtxRetain)                                                          \
    X(REQUIRED, cuDevicePrimaryCtxRelease_v2)                                                      \
    X(REQUIRED, cuCtxGetCurrent)                                                                   \
    X(REQUIRED, cuCtxSetCurrent)                                                                   \
    X(REQUIRED, cuCtxSynchronize)                                                                  \
    X(REQUIRED, cuMemAlloc_v2)                                                                     \
    X(REQUIRED, cuMemFree_v2)                                                                      \
    X(REQUIRED, cuMemGetInfo_v2)                                                                   \
    X(REQUIRED, cuEventCreate)                                                                     \
    X(REQUIRED, cuEventDestroy_v2)                                                                 \
    X(REQUIRED, cuEventRecord)                                                                     \
    X(REQUIRED, cuEventQuery)                                                                      \
    X(REQUIRED, cuEventSynchronize)                                                                \
    X(REQUIRED, cuStreamSynchronize)                                                               \
    X(REQUIRED, cuGetErrorName)                                                                    \
    X(REQUIRED, cuGetErrorString)                                                                  \
    X(VMM, cuMemGetAllocationGranularity)                                                          \
    X(VMM, cuMemAddressReserve)                                                                    \
    X(VMM, cuMemAddressFree)                                                                       \
    X(VMM, cuMemCreate)                                                                            \
    X(VMM, cuMemRelease)                                                                           \
    X(VMM, cuMemMap)                                                                               \
    X(VMM, cuMemUnmap)                                                                             \
    X(VMM, cuMemSetAccess)                                                                         \
    X(ASYNC, cuMemAllocAsync)                                                                      \
    X(ASYNC, cuMemFreeAsync)                                                                       \
    X(ASYNC, cuDeviceGetDefaultMemPool)                                                            \
    X(ASYNC, cuMemPoolSetAttribute)                                                                \
    X(ASYNC, cuMemPoolGetAttribute)                                                                \
    X(ASYNC, cuMemPoolTrimTo)                                                                      \
    X(HOST, cuMemHostAlloc)                                                                        \
    X(HOST, cuMemFreeHost)                                                                         \
    X(HOST, cuMemcpyDtoH_v2)                                                                       \
    X(HOST, cuMemcpyHtoD_v2)

/* A loaded driver library. */
typedef struct ga_cuda_driver {
    void *lib; /* dlopen handle; NULL when not loaded */
#define GA_CUDA_FIELD_(group, sym) ga_##sym##_fn *sym; /* NULL if its optional group is missing */
    GA_CUDA_SYMBOLS(GA_CUDA_FIELD_)
#undef GA_CUDA_FIELD_
    const char *missing[GA_DL_MAX_GROUPS]; /* per optional group: its first missing symbol, or NULL */
} ga_cuda_driver_t;

/* One entry of the symbol table (exported for the tests that check the names
 * against a real libcuda): a ga_dl_symbol_t whose group is a ga_cuda_group_t. */
typedef ga_dl_symbol_t ga_cuda_symbol_t;

extern const ga_cuda_symbol_t ga_cuda_symbols[];
extern const size_t ga_cuda_symbol_count;

/* The library dlopen'd when no path is configured. */
#define GA_CUDA_DEFAULT_LIBRARY "libcuda.so.1"

/*
 * ga_cuda_driver_load: dlopen path (RTLD_NOW | RTLD_LOCAL) and resolve every
 * symbol into *d. Returns GALLOC_OK; GALLOC_E_UNAVAILABLE if the library does
 * not load or lacks a REQUIRED symbol (the library is closed again and err
 * says which, with dlerror's text); GALLOC_E_INVAL for NULL arguments.
 */
galloc_status_t ga_cuda_driver_load(ga_cuda_driver_t *d, const char *path, char *err, size_t errlen);

/* ga_cuda_driver_unload: dlclose the library; *d is zeroed. No-op if not loaded. */
void ga_cuda_driver_unload(ga_cuda_driver_t *d);

#ifdef __cplusplus
}
#endif
#endif /* GA_BACKEND_CUDA_LOADER_H */
