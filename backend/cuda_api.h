/*
 * cuda_api.h: galloc's own declarations of the CUDA driver API subset it calls,
 * in galloc names, so that galloc builds with or without cuda.h and loads
 * libcuda.so.1 with dlopen (model: FFmpeg nv-codec-headers dynlink_cuda.h).
 *
 * Only what the cuda backend (backend/vendor_cuda.c) calls is declared. Types
 * use the same fundamental C types as cuda.h (CUdeviceptr is unsigned long
 * long, CUdevice int, handles pointers to incomplete structs, enums int-sized)
 * so the ABI is identical; tests/backend/cuda_abi_test.cc static-asserts every
 * size, offset, enum value and function signature below against
 * /usr/local/cuda/include/cuda.h (CUDA 13) where that header exists.
 *
 * Functions are declared by the exact symbol the driver exports: cuda.h maps
 * the plain names by macro (cuMemAlloc -> cuMemAlloc_v2), a dlsym does not, so
 * the versioned names are spelt out here and in the loader's symbol table.
 * On Linux CUDAAPI is empty (the default C calling convention).
 */
#ifndef GA_BACKEND_CUDA_API_H
#define GA_BACKEND_CUDA_API_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* CUresult: only the values galloc names; the driver may return others. */
typedef enum ga_cu_result {
    GA_CUDA_SUCCESS = 0,
    GA_CUDA_ERROR_INVALID_VALUE = 1,
    GA_CUDA_ERROR_OUT_OF_MEMORY = 2,
    GA_CUDA_ERROR_NOT_INITIALIZED = 3,
    GA_CUDA_ERROR_DEINITIALIZED = 4,
    GA_CUDA_ERROR_STUB_LIBRARY = 34,
    GA_CUDA_ERROR_NO_DEVICE = 100,
    GA_CUDA_ERROR_INVALID_DEVICE = 101,
    GA_CUDA_ERROR_INVALID_CONTEXT = 201,
    GA_CUDA_ERROR_PEER_ACCESS_UNSUPPORTED = 217,
    GA_CUDA_ERROR_INVALID_HANDLE = 400,
    GA_CUDA_ERROR_NOT_FOUND = 500,
    GA_CUDA_ERROR_NOT_READY = 600,
    GA_CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED = 704,
    GA_CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED = 712,
    GA_CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED = 713,
    GA_CUDA_ERROR_NOT_SUPPORTED = 801,
    GA_CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED = 900,
    GA_CUDA_ERROR_CAPTURED_EVENT = 907,
    GA_CUDA_ERROR_UNKNOWN = 999
} ga_cu_result_t;

typedef int ga_cu_device_t;                             /* CUdevice */
typedef unsigned long long ga_cu_deviceptr_t;           /* CUdeviceptr (64-bit builds) */
typedef unsigned long long ga_cu_mem_handle_t;          /* CUmemGenericAllocationHandle */
typedef struct ga_cu_ctx_st *ga_cu_context_t;           /* CUcontext */
typedef struct ga_cu_stream_st *ga_cu_stream_t;         /* CUstream; NULL is the legacy default stream */
typedef struct ga_cu_event_st *ga_cu_event_t;           /* CUevent */
typedef struct ga_cu_mempool_st *ga_cu_mempool_t;       /* CUmemoryPool */
typedef struct ga_cu_graph_st *ga_cu_graph_t;           /* CUgraph */
typedef struct ga_cu_graph_node_st *ga_cu_graph_node_t; /* CUgraphNode */

/* CUstreamCaptureStatus */
typedef enum ga_cu_stream_capture_status {
    GA_CU_STREAM_CAPTURE_STATUS_NONE = 0,       /* not capturing */
    GA_CU_STREAM_CAPTURE_STATUS_ACTIVE = 1,     /* capturing */
    GA_CU_STREAM_CAPTURE_STATUS_INVALIDATED = 2 /* capturing, but an error invalidated the capture */
} ga_cu_stream_capture_status_t;

/* CUevent_flags */
enum { GA_CU_EVENT_DEFAULT = 0x0, GA_CU_EVENT_DISABLE_TIMING = 0x2 };

/* cuMemHostAlloc flags: PORTABLE makes the block pinned memory for every
 * context, not only the one current at the call (galloc's is the primary
 * context; the framework may make another current while the copy runs). */
enum { GA_CU_MEMHOSTALLOC_PORTABLE = 0x01 };
/* cuMemHostRegister flags: PORTABLE, for the same reason as host allocation's. */
enum { GA_CU_MEMHOSTREGISTER_PORTABLE = 0x01 };

/* Special stream handles (cuda.h: CU_STREAM_LEGACY, CU_STREAM_PER_THREAD). */
#define GA_CU_STREAM_LEGACY ((ga_cu_stream_t)0x1)
#define GA_CU_STREAM_PER_THREAD ((ga_cu_stream_t)0x2)

/* CUmemAllocationType */
typedef enum ga_cu_mem_allocation_type {
    GA_CU_MEM_ALLOCATION_TYPE_INVALID = 0x0,
    GA_CU_MEM_ALLOCATION_TYPE_PINNED = 0x1
} ga_cu_mem_allocation_type_t;

/* CUmemAllocationHandleType */
typedef enum ga_cu_mem_handle_type {
    GA_CU_MEM_HANDLE_TYPE_NONE = 0x0,
    GA_CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR = 0x1,
    GA_CU_MEM_HANDLE_TYPE_FABRIC = 0x8
} ga_cu_mem_handle_type_t;

/* CUmemLocationType */
typedef enum ga_cu_mem_location_type {
    GA_CU_MEM_LOCATION_TYPE_INVALID = 0x0,
    GA_CU_MEM_LOCATION_TYPE_DEVICE = 0x1
} ga_cu_mem_location_type_t;

/* CUmemAccess_flags */
typedef enum ga_cu_mem_access_flags {
    GA_CU_MEM_ACCESS_FLAGS_PROT_NONE = 0x0,
    GA_CU_MEM_ACCESS_FLAGS_PROT_READ = 0x1,
    GA_CU_MEM_ACCESS_FLAGS_PROT_READWRITE = 0x3
} ga_cu_mem_access_flags_t;

/* CUmemAllocationGranularity_flags */
typedef enum ga_cu_mem_granularity_flags {
    GA_CU_MEM_ALLOC_GRANULARITY_MINIMUM = 0x0,
    GA_CU_MEM_ALLOC_GRANULARITY_RECOMMENDED = 0x1
} ga_cu_mem_granularity_flags_t;

/* CUmemPool_attribute: value type int for 1..3, cuuint64_t for 4..8. */
typedef enum ga_cu_mempool_attr {
    GA_CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES = 1,
    GA_CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC = 2,
    GA_CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES = 3,
    GA_CU_MEMPOOL_ATTR_RELEASE_THRESHOLD = 4,
    GA_CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT = 5,
    GA_CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH = 6,
    GA_CU_MEMPOOL_ATTR_USED_MEM_CURRENT = 7,
    GA_CU_MEMPOOL_ATTR_USED_MEM_HIGH = 8
} ga_cu_mempool_attr_t;

/* CUipcMemHandle: the bytes cuIpcGetMemHandle writes and cuIpcOpenMemHandle
 * takes (by value). */
typedef struct ga_cu_ipc_mem_handle {
    char reserved[64]; /* CU_IPC_HANDLE_SIZE, opaque */
} ga_cu_ipc_mem_handle_t;

/* CUipcMem_flags: peer access enabled on demand when the memory lives on another device. */
enum { GA_CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS = 0x1 };

/* CUmemLocation */
typedef struct ga_cu_mem_location {
    ga_cu_mem_location_type_t type; /* GA_CU_MEM_LOCATION_TYPE_DEVICE: id is a device ordinal */
    int id;                         /* the device ordinal */
} ga_cu_mem_location_t;

/* CUmemAllocationProp */
typedef struct ga_cu_mem_allocation_prop {
    ga_cu_mem_allocation_type_t type;               /* PINNED: device memory that does not migrate */
    ga_cu_mem_handle_type_t requested_handle_types; /* POSIX_FILE_DESCRIPTOR: exportable (export_page) */
    ga_cu_mem_location_t location;                  /* where the memory lives */
    void *win32_handle_meta_data;                   /* Windows only; must be NULL */
    struct {
        unsigned char compression_type;        /* CU_MEM_ALLOCATION_COMP_NONE */
        unsigned char gpu_direct_rdma_capable; /* 0 */
        unsigned short usage;                  /* CU_MEM_CREATE_USAGE_* bits, 0 */
        unsigned char reserved[4];             /* must be zero */
    } alloc_flags;
} ga_cu_mem_allocation_prop_t;

/* CUmemAccessDesc */
typedef struct ga_cu_mem_access_desc {
    ga_cu_mem_location_t location;  /* the device given access */
    ga_cu_mem_access_flags_t flags; /* GA_CU_MEM_ACCESS_FLAGS_PROT_READWRITE */
} ga_cu_mem_access_desc_t;

/* Function types, one per exported symbol galloc resolves. */
typedef ga_cu_result_t ga_cuInit_fn(unsigned int flags);
typedef ga_cu_result_t ga_cuDeviceGet_fn(ga_cu_device_t *device, int ordinal);
typedef ga_cu_result_t ga_cuDeviceGetCount_fn(int *count);
typedef ga_cu_result_t ga_cuDevicePrimaryCtxRetain_fn(ga_cu_context_t *pctx, ga_cu_device_t dev);
typedef ga_cu_result_t ga_cuDevicePrimaryCtxRelease_v2_fn(ga_cu_device_t dev);
typedef ga_cu_result_t ga_cuCtxGetCurrent_fn(ga_cu_context_t *pctx);
typedef ga_cu_result_t ga_cuCtxSetCurrent_fn(ga_cu_context_t ctx);
typedef ga_cu_result_t ga_cuCtxSynchronize_fn(void);
typedef ga_cu_result_t ga_cuMemAlloc_v2_fn(ga_cu_deviceptr_t *dptr, size_t bytesize);
typedef ga_cu_result_t ga_cuMemFree_v2_fn(ga_cu_deviceptr_t dptr);
typedef ga_cu_result_t ga_cuMemGetInfo_v2_fn(size_t *free_bytes, size_t *total_bytes);
typedef ga_cu_result_t ga_cuMemAddressReserve_fn(ga_cu_deviceptr_t *ptr, size_t size, size_t alignment,
                                                 ga_cu_deviceptr_t addr, unsigned long long flags);
typedef ga_cu_result_t ga_cuMemAddressFree_fn(ga_cu_deviceptr_t ptr, size_t size);
typedef ga_cu_result_t ga_cuMemCreate_fn(ga_cu_mem_handle_t *handle, size_t size,
                                         const ga_cu_mem_allocation_prop_t *prop, unsigned long long flags);
typedef ga_cu_result_t ga_cuMemRelease_fn(ga_cu_mem_handle_t handle);
typedef ga_cu_result_t ga_cuMemMap_fn(ga_cu_deviceptr_t ptr, size_t size, size_t offset, ga_cu_mem_handle_t handle,
                                      unsigned long long flags);
typedef ga_cu_result_t ga_cuMemUnmap_fn(ga_cu_deviceptr_t ptr, size_t size);
typedef ga_cu_result_t ga_cuMemSetAccess_fn(ga_cu_deviceptr_t ptr, size_t size, const ga_cu_mem_access_desc_t *desc,
                                            size_t count);
typedef ga_cu_result_t ga_cuMemGetAllocationGranularity_fn(size_t *granularity, const ga_cu_mem_allocation_prop_t *prop,
                                                           ga_cu_mem_granularity_flags_t option);
typedef ga_cu_result_t ga_cuEventCreate_fn(ga_cu_event_t *event, unsigned int flags);
typedef ga_cu_result_t ga_cuEventDestroy_v2_fn(ga_cu_event_t event);
typedef ga_cu_result_t ga_cuEventRecord_fn(ga_cu_event_t event, ga_cu_stream_t stream);
typedef ga_cu_result_t ga_cuEventQuery_fn(ga_cu_event_t event);
typedef ga_cu_result_t ga_cuEventSynchronize_fn(ga_cu_event_t event);
typedef ga_cu_result_t ga_cuStreamSynchronize_fn(ga_cu_stream_t stream);
typedef ga_cu_result_t ga_cuGetErrorName_fn(ga_cu_result_t error, const char **str);
typedef ga_cu_result_t ga_cuGetErrorString_fn(ga_cu_result_t error, const char **str);
typedef ga_cu_result_t ga_cuMemAllocAsync_fn(ga_cu_deviceptr_t *dptr, size_t bytesize, ga_cu_stream_t stream);
typedef ga_cu_result_t ga_cuMemFreeAsync_fn(ga_cu_deviceptr_t dptr, ga_cu_stream_t stream);
typedef ga_cu_result_t ga_cuDeviceGetDefaultMemPool_fn(ga_cu_mempool_t *pool, ga_cu_device_t dev);
typedef ga_cu_result_t ga_cuMemPoolSetAttribute_fn(ga_cu_mempool_t pool, ga_cu_mempool_attr_t attr, void *value);
typedef ga_cu_result_t ga_cuMemPoolGetAttribute_fn(ga_cu_mempool_t pool, ga_cu_mempool_attr_t attr, void *value);
typedef ga_cu_result_t ga_cuMemPoolTrimTo_fn(ga_cu_mempool_t pool, size_t min_bytes_to_keep);
typedef ga_cu_result_t ga_cuMemHostAlloc_fn(void **pp, size_t bytesize, unsigned int flags);
typedef ga_cu_result_t ga_cuMemFreeHost_fn(void *p);
typedef ga_cu_result_t ga_cuMemHostRegister_v2_fn(void *p, size_t bytesize, unsigned int flags);
typedef ga_cu_result_t ga_cuMemHostUnregister_fn(void *p);
typedef ga_cu_result_t ga_cuMemcpyDtoH_v2_fn(void *dst_host, ga_cu_deviceptr_t src_device, size_t byte_count);
typedef ga_cu_result_t ga_cuMemcpyHtoD_v2_fn(ga_cu_deviceptr_t dst_device, const void *src_host, size_t byte_count);
typedef ga_cu_result_t ga_cuDeviceCanAccessPeer_fn(int *can_access_peer, ga_cu_device_t dev, ga_cu_device_t peer_dev);
typedef ga_cu_result_t ga_cuCtxEnablePeerAccess_fn(ga_cu_context_t peer_context, unsigned int flags);
typedef ga_cu_result_t ga_cuIpcGetMemHandle_fn(ga_cu_ipc_mem_handle_t *handle, ga_cu_deviceptr_t dptr);
typedef ga_cu_result_t ga_cuIpcOpenMemHandle_v2_fn(ga_cu_deviceptr_t *pdptr, ga_cu_ipc_mem_handle_t handle,
                                                   unsigned int flags);
typedef ga_cu_result_t ga_cuIpcCloseMemHandle_fn(ga_cu_deviceptr_t dptr);
typedef ga_cu_result_t ga_cuMemExportToShareableHandle_fn(void *shareable_handle, ga_cu_mem_handle_t handle,
                                                          ga_cu_mem_handle_type_t handle_type,
                                                          unsigned long long flags);
typedef ga_cu_result_t ga_cuMemImportFromShareableHandle_fn(ga_cu_mem_handle_t *handle, void *os_handle,
                                                            ga_cu_mem_handle_type_t sh_handle_type);
/* The stream capture graph calls by their CUDA 11.3 names, which libcuda
 * still exports in 13.x: CUDA 12.3's cuda.h maps cuStreamGetCaptureInfo to
 * _v3 and cuGraphNodeGetDependencies to _v2 (both with edge data), and
 * CUDA 13's declares the two below only for the driver's own build
 * (__CUDA_API_VERSION_INTERNAL), so cuda_abi_test.cc checks them against
 * those prototypes written out. id_out is a cuuint64_t (uint64_t on Linux). */
typedef ga_cu_result_t ga_cuStreamGetCaptureInfo_v2_fn(ga_cu_stream_t stream,
                                                       ga_cu_stream_capture_status_t *capture_status_out,
                                                       uint64_t *id_out, ga_cu_graph_t *graph_out,
                                                       const ga_cu_graph_node_t **dependencies_out,
                                                       size_t *num_dependencies_out);
typedef ga_cu_result_t ga_cuGraphNodeGetDependencies_fn(ga_cu_graph_node_t node, ga_cu_graph_node_t *dependencies,
                                                        size_t *num_dependencies);

/* GA_CUDA_SYMBOLS(X): X(group, symbol) for every symbol galloc resolves, by
 * the name the driver exports; group is a backend/dl_table.h group without its
 * GA_DL_ prefix (REQUIRED, or the optional VMM, ASYNC, HOST, PEER, IPC, GRAPH,
 * HOSTREG). cuda.h maps cuIpcOpenMemHandle to cuIpcOpenMemHandle_v2 and
 * cuMemHostRegister to cuMemHostRegister_v2 by macro. */
#define GA_CUDA_SYMBOLS(X)                                                                                             \
    X(REQUIRED, cuInit)                                                                                                \
    X(REQUIRED, cuDeviceGet)                                                                                           \
    X(REQUIRED, cuDeviceGetCount)                                                                                      \
    X(REQUIRED, cuDevicePrimaryCtxRetain)                                                                              \
    X(REQUIRED, cuDevicePrimaryCtxRelease_v2)                                                                          \
    X(REQUIRED, cuCtxGetCurrent)                                                                                       \
    X(REQUIRED, cuCtxSetCurrent)                                                                                       \
    X(REQUIRED, cuCtxSynchronize)                                                                                      \
    X(REQUIRED, cuMemAlloc_v2)                                                                                         \
    X(REQUIRED, cuMemFree_v2)                                                                                          \
    X(REQUIRED, cuMemGetInfo_v2)                                                                                       \
    X(REQUIRED, cuEventCreate)                                                                                         \
    X(REQUIRED, cuEventDestroy_v2)                                                                                     \
    X(REQUIRED, cuEventRecord)                                                                                         \
    X(REQUIRED, cuEventQuery)                                                                                          \
    X(REQUIRED, cuEventSynchronize)                                                                                    \
    X(REQUIRED, cuStreamSynchronize)                                                                                   \
    X(REQUIRED, cuGetErrorName)                                                                                        \
    X(REQUIRED, cuGetErrorString)                                                                                      \
    X(VMM, cuMemGetAllocationGranularity)                                                                              \
    X(VMM, cuMemAddressReserve)                                                                                        \
    X(VMM, cuMemAddressFree)                                                                                           \
    X(VMM, cuMemCreate)                                                                                                \
    X(VMM, cuMemRelease)                                                                                               \
    X(VMM, cuMemMap)                                                                                                   \
    X(VMM, cuMemUnmap)                                                                                                 \
    X(VMM, cuMemSetAccess)                                                                                             \
    X(ASYNC, cuMemAllocAsync)                                                                                          \
    X(ASYNC, cuMemFreeAsync)                                                                                           \
    X(ASYNC, cuDeviceGetDefaultMemPool)                                                                                \
    X(ASYNC, cuMemPoolSetAttribute)                                                                                    \
    X(ASYNC, cuMemPoolGetAttribute)                                                                                    \
    X(ASYNC, cuMemPoolTrimTo)                                                                                          \
    X(HOST, cuMemHostAlloc)                                                                                            \
    X(HOST, cuMemFreeHost)                                                                                             \
    X(HOST, cuMemcpyDtoH_v2)                                                                                           \
    X(HOST, cuMemcpyHtoD_v2)                                                                                           \
    X(PEER, cuDeviceCanAccessPeer)                                                                                     \
    X(PEER, cuCtxEnablePeerAccess)                                                                                     \
    X(IPC, cuIpcGetMemHandle)                                                                                          \
    X(IPC, cuIpcOpenMemHandle_v2)                                                                                      \
    X(IPC, cuIpcCloseMemHandle)                                                                                        \
    X(IPC, cuMemExportToShareableHandle)                                                                               \
    X(IPC, cuMemImportFromShareableHandle)                                                                             \
    X(GRAPH, cuStreamGetCaptureInfo_v2)                                                                                \
    X(GRAPH, cuGraphNodeGetDependencies)                                                                               \
    X(HOSTREG, cuMemHostRegister_v2)                                                                                   \
    X(HOSTREG, cuMemHostUnregister)

/* The library dlopen'd when no path is configured. */
#define GA_CUDA_DEFAULT_LIBRARY "libcuda.so.1"

#ifdef __cplusplus
}
#endif
#endif /* GA_BACKEND_CUDA_API_H */
