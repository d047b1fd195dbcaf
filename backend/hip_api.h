/*
 * hip_api.h: galloc's own declarations of the HIP runtime API subset it calls,
 * in galloc names, so that galloc builds with or without the ROCm headers and
 * loads libamdhip64.so with dlopen (the CUDA twin is cuda_api.h).
 *
 * Only what the hip backend (backend/vendor_hip.c) calls is declared. Types
 * use the same fundamental C types as hip_runtime_api.h (device pointers are
 * void *, hipDevice_t int, handles pointers to incomplete structs, enums
 * int-sized), so the ABI is identical; tests/backend/hip_abi_test.cc
 * static-asserts every size, offset, enum value and function signature below
 * against /usr/include/hip/hip_runtime_api.h (Debian's libamdhip64-dev) or
 * /opt/rocm/include where one exists.
 *
 * HIP is a runtime API: there is no primary-context call; the device a call
 * acts on is the calling thread's current device (hipSetDevice, default 0).
 *
 * hipMemAllocationProp changed layout in ROCm 6.0 (HIP 5 ordered its fields
 * differently and had no allocFlags struct); both are declared, and the
 * backend picks one from hipRuntimeGetVersion, so one galloc build serves both.
 */
#ifndef GA_BACKEND_HIP_API_H
#define GA_BACKEND_HIP_API_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* hipError_t: only the values galloc names; the runtime may return others. */
typedef enum ga_hip_error {
    GA_HIP_SUCCESS = 0,
    GA_HIP_ERROR_INVALID_VALUE = 1,
    GA_HIP_ERROR_OUT_OF_MEMORY = 2,
    GA_HIP_ERROR_NOT_INITIALIZED = 3,
    GA_HIP_ERROR_DEINITIALIZED = 4,
    GA_HIP_ERROR_NO_DEVICE = 100,
    GA_HIP_ERROR_INVALID_DEVICE = 101,
    GA_HIP_ERROR_INVALID_CONTEXT = 201,
    GA_HIP_ERROR_PEER_ACCESS_UNSUPPORTED = 217,
    GA_HIP_ERROR_INVALID_HANDLE = 400,
    GA_HIP_ERROR_NOT_FOUND = 500,
    GA_HIP_ERROR_NOT_READY = 600,
    GA_HIP_ERROR_PEER_ACCESS_ALREADY_ENABLED = 704,
    GA_HIP_ERROR_HOST_MEMORY_ALREADY_REGISTERED = 712,
    GA_HIP_ERROR_HOST_MEMORY_NOT_REGISTERED = 713,
    GA_HIP_ERROR_NOT_SUPPORTED = 801,
    GA_HIP_ERROR_STREAM_CAPTURE_UNSUPPORTED = 900,
    GA_HIP_ERROR_CAPTURED_EVENT = 907,
    GA_HIP_ERROR_UNKNOWN = 999
} ga_hip_error_t;

typedef int ga_hip_device_t;                            /* hipDevice_t */
typedef struct ga_ihip_stream *ga_hip_stream_t;         /* hipStream_t; NULL is the null stream */
typedef struct ga_ihip_event *ga_hip_event_t;           /* hipEvent_t */
typedef struct ga_ihip_mempool *ga_hip_mempool_t;       /* hipMemPool_t */
typedef struct ga_ihip_mem_handle *ga_hip_mem_handle_t; /* hipMemGenericAllocationHandle_t */
typedef struct ga_ihip_graph *ga_hip_graph_t;           /* hipGraph_t */
typedef struct ga_hip_graph_node *ga_hip_graph_node_t;  /* hipGraphNode_t */

/* hipStreamCaptureStatus (CUDA's values) */
typedef enum ga_hip_stream_capture_status {
    GA_HIP_STREAM_CAPTURE_STATUS_NONE = 0,       /* not capturing */
    GA_HIP_STREAM_CAPTURE_STATUS_ACTIVE = 1,     /* capturing */
    GA_HIP_STREAM_CAPTURE_STATUS_INVALIDATED = 2 /* capturing, but an error invalidated the capture */
} ga_hip_stream_capture_status_t;

/* hipEventCreateWithFlags flags. */
enum { GA_HIP_EVENT_DEFAULT = 0x0, GA_HIP_EVENT_DISABLE_TIMING = 0x2 };

/* hipHostMalloc flags: the default, pinned host memory (hipHostMallocDefault). */
enum { GA_HIP_HOST_MALLOC_DEFAULT = 0x0 };
/* hipHostRegister flags: the default, which HIP documents as mapped and
 * portable (hipHostRegisterDefault), what PyTorch's hipified
 * cudaHostRegisterDefault becomes. */
enum { GA_HIP_HOST_REGISTER_DEFAULT = 0x0 };

/* hipStreamPerThread: the per-thread default stream. */
#define GA_HIP_STREAM_PER_THREAD ((ga_hip_stream_t)2)

/* hipRuntimeGetVersion: major * 10000000 + minor * 100000 + patch (HIP_VERSION). */
#define GA_HIP_VERSION_6_0 60000000

/* hipMemAllocationType */
typedef enum ga_hip_mem_allocation_type {
    GA_HIP_MEM_ALLOCATION_TYPE_INVALID = 0x0,
    GA_HIP_MEM_ALLOCATION_TYPE_PINNED = 0x1
} ga_hip_mem_allocation_type_t;

/* hipMemAllocationHandleType */
typedef enum ga_hip_mem_handle_type {
    GA_HIP_MEM_HANDLE_TYPE_NONE = 0x0,
    GA_HIP_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR = 0x1
} ga_hip_mem_handle_type_t;

/* hipMemLocationType */
typedef enum ga_hip_mem_location_type {
    GA_HIP_MEM_LOCATION_TYPE_INVALID = 0x0,
    GA_HIP_MEM_LOCATION_TYPE_DEVICE = 0x1
} ga_hip_mem_location_type_t;

/* hipMemAccessFlags */
typedef enum ga_hip_mem_access_flags {
    GA_HIP_MEM_ACCESS_FLAGS_PROT_NONE = 0x0,
    GA_HIP_MEM_ACCESS_FLAGS_PROT_READ = 0x1,
    GA_HIP_MEM_ACCESS_FLAGS_PROT_READWRITE = 0x3
} ga_hip_mem_access_flags_t;

/* hipMemAllocationGranularity_flags */
typedef enum ga_hip_mem_granularity_flags {
    GA_HIP_MEM_ALLOC_GRANULARITY_MINIMUM = 0x0,
    GA_HIP_MEM_ALLOC_GRANULARITY_RECOMMENDED = 0x1
} ga_hip_mem_granularity_flags_t;

/* hipMemPoolAttr: value type int for 1..3, uint64_t for 4..8 (as CUDA's). */
typedef enum ga_hip_mempool_attr {
    GA_HIP_MEMPOOL_REUSE_FOLLOW_EVENT_DEPENDENCIES = 1,
    GA_HIP_MEMPOOL_REUSE_ALLOW_OPPORTUNISTIC = 2,
    GA_HIP_MEMPOOL_REUSE_ALLOW_INTERNAL_DEPENDENCIES = 3,
    GA_HIP_MEMPOOL_ATTR_RELEASE_THRESHOLD = 4,
    GA_HIP_MEMPOOL_ATTR_RESERVED_MEM_CURRENT = 5,
    GA_HIP_MEMPOOL_ATTR_RESERVED_MEM_HIGH = 6,
    GA_HIP_MEMPOOL_ATTR_USED_MEM_CURRENT = 7,
    GA_HIP_MEMPOOL_ATTR_USED_MEM_HIGH = 8
} ga_hip_mempool_attr_t;

/* hipIpcMemHandle_t: the bytes hipIpcGetMemHandle writes and
 * hipIpcOpenMemHandle takes (by value). */
typedef struct ga_hip_ipc_mem_handle {
    char reserved[64]; /* HIP_IPC_HANDLE_SIZE, opaque */
} ga_hip_ipc_mem_handle_t;

/* hipIpcMemLazyEnablePeerAccess: 0x01 from ROCm 6.0 (CUDA's value), 0 in
 * HIP 5's header; the runtime refuses any other flags than its own value
 * (hipErrorInvalidValue), so the backend passes the loaded runtime's. */
enum { GA_HIP_IPC_MEM_LAZY_ENABLE_PEER_ACCESS = 0x1, GA_HIP_IPC_MEM_LAZY_ENABLE_PEER_ACCESS_V5 = 0x0 };

/* hipMemLocation */
typedef struct ga_hip_mem_location {
    ga_hip_mem_location_type_t type; /* GA_HIP_MEM_LOCATION_TYPE_DEVICE: id is a device ordinal */
    int id;                          /* the device ordinal */
} ga_hip_mem_location_t;

/* hipMemAllocationProp, ROCm 6.0 and later (CUmemAllocationProp's order). */
typedef struct ga_hip_mem_allocation_prop {
    ga_hip_mem_allocation_type_t type;               /* PINNED: device memory that does not migrate */
    ga_hip_mem_handle_type_t requested_handle_types; /* POSIX_FILE_DESCRIPTOR: exportable (export_page) */
    ga_hip_mem_location_t location;                  /* where the memory lives */
    void *win32_handle_meta_data;                    /* Windows only; must be NULL */
    struct {
        unsigned char compression_type;        /* 0: none */
        unsigned char gpu_direct_rdma_capable; /* 0 */
        unsigned short usage;                  /* 0 */
    } alloc_flags;
} ga_hip_mem_allocation_prop_t;

/* hipMemAllocationProp as HIP 5.x declares it (Debian's 5.2 headers). */
typedef struct ga_hip_mem_allocation_prop_v5 {
    unsigned char compression_type;                 /* 0: none */
    ga_hip_mem_location_t location;                 /* where the memory lives */
    ga_hip_mem_handle_type_t requested_handle_type; /* POSIX_FILE_DESCRIPTOR */
    ga_hip_mem_allocation_type_t type;              /* PINNED */
    unsigned short usage;                           /* 0 */
    void *win32_handle_meta_data;                   /* must be NULL */
} ga_hip_mem_allocation_prop_v5_t;

/* hipMemAccessDesc */
typedef struct ga_hip_mem_access_desc {
    ga_hip_mem_location_t location;  /* the device given access */
    ga_hip_mem_access_flags_t flags; /* GA_HIP_MEM_ACCESS_FLAGS_PROT_READWRITE */
} ga_hip_mem_access_desc_t;

/* Function types, one per exported symbol galloc resolves. Where a prop is
 * passed, a HIP 5 runtime reads a ga_hip_mem_allocation_prop_v5_t through the
 * same pointer (both layouts are 32 bytes on LP64). */
typedef ga_hip_error_t ga_hipInit_fn(unsigned int flags);
typedef ga_hip_error_t ga_hipRuntimeGetVersion_fn(int *runtime_version);
typedef ga_hip_error_t ga_hipGetDeviceCount_fn(int *count);
typedef ga_hip_error_t ga_hipDeviceGet_fn(ga_hip_device_t *device, int ordinal);
typedef ga_hip_error_t ga_hipGetDevice_fn(int *device_id);
typedef ga_hip_error_t ga_hipSetDevice_fn(int device_id);
typedef ga_hip_error_t ga_hipDeviceSynchronize_fn(void);
typedef ga_hip_error_t ga_hipMalloc_fn(void **ptr, size_t size);
typedef ga_hip_error_t ga_hipFree_fn(void *ptr);
typedef ga_hip_error_t ga_hipMemGetInfo_fn(size_t *free_bytes, size_t *total_bytes);
typedef ga_hip_error_t ga_hipEventCreateWithFlags_fn(ga_hip_event_t *event, unsigned flags);
typedef ga_hip_error_t ga_hipEventDestroy_fn(ga_hip_event_t event);
typedef ga_hip_error_t ga_hipEventRecord_fn(ga_hip_event_t event, ga_hip_stream_t stream);
typedef ga_hip_error_t ga_hipEventQuery_fn(ga_hip_event_t event);
typedef ga_hip_error_t ga_hipEventSynchronize_fn(ga_hip_event_t event);
typedef ga_hip_error_t ga_hipStreamSynchronize_fn(ga_hip_stream_t stream);
typedef const char *ga_hipGetErrorName_fn(ga_hip_error_t error);
typedef const char *ga_hipGetErrorString_fn(ga_hip_error_t error);
typedef ga_hip_error_t ga_hipMemGetAllocationGranularity_fn(size_t *granularity,
                                                            const ga_hip_mem_allocation_prop_t *prop,
                                                            ga_hip_mem_granularity_flags_t option);
typedef ga_hip_error_t ga_hipMemAddressReserve_fn(void **ptr, size_t size, size_t alignment, void *addr,
                                                  unsigned long long flags);
typedef ga_hip_error_t ga_hipMemAddressFree_fn(void *dev_ptr, size_t size);
typedef ga_hip_error_t ga_hipMemCreate_fn(ga_hip_mem_handle_t *handle, size_t size,
                                          const ga_hip_mem_allocation_prop_t *prop, unsigned long long flags);
typedef ga_hip_error_t ga_hipMemRelease_fn(ga_hip_mem_handle_t handle);
typedef ga_hip_error_t ga_hipMemMap_fn(void *ptr, size_t size, size_t offset, ga_hip_mem_handle_t handle,
                                       unsigned long long flags);
typedef ga_hip_error_t ga_hipMemUnmap_fn(void *ptr, size_t size);
typedef ga_hip_error_t ga_hipMemSetAccess_fn(void *ptr, size_t size, const ga_hip_mem_access_desc_t *desc,
                                             size_t count);
typedef ga_hip_error_t ga_hipMallocAsync_fn(void **dev_ptr, size_t size, ga_hip_stream_t stream);
typedef ga_hip_error_t ga_hipFreeAsync_fn(void *dev_ptr, ga_hip_stream_t stream);
typedef ga_hip_error_t ga_hipDeviceGetDefaultMemPool_fn(ga_hip_mempool_t *mem_pool, int device);
typedef ga_hip_error_t ga_hipMemPoolSetAttribute_fn(ga_hip_mempool_t mem_pool, ga_hip_mempool_attr_t attr, void *value);
typedef ga_hip_error_t ga_hipMemPoolGetAttribute_fn(ga_hip_mempool_t mem_pool, ga_hip_mempool_attr_t attr, void *value);
typedef ga_hip_error_t ga_hipMemPoolTrimTo_fn(ga_hip_mempool_t mem_pool, size_t min_bytes_to_hold);
typedef ga_hip_error_t ga_hipHostMalloc_fn(void **ptr, size_t size, unsigned int flags);
typedef ga_hip_error_t ga_hipHostFree_fn(void *ptr);
typedef ga_hip_error_t ga_hipHostRegister_fn(void *host_ptr, size_t size_bytes, unsigned int flags);
typedef ga_hip_error_t ga_hipHostUnregister_fn(void *host_ptr);
/* hipDeviceptr_t is void * on AMD. The source of hipMemcpyHtoD is not const in
 * the headers checked (ROCm 5.2's): the backend casts const away, the runtime
 * only reads it. */
typedef ga_hip_error_t ga_hipMemcpyDtoH_fn(void *dst, void *src, size_t size_bytes);
typedef ga_hip_error_t ga_hipMemcpyHtoD_fn(void *dst, void *src, size_t size_bytes);
typedef ga_hip_error_t ga_hipDeviceCanAccessPeer_fn(int *can_access_peer, int device_id, int peer_device_id);
typedef ga_hip_error_t ga_hipDeviceEnablePeerAccess_fn(int peer_device_id, unsigned int flags);
typedef ga_hip_error_t ga_hipIpcGetMemHandle_fn(ga_hip_ipc_mem_handle_t *handle, void *dev_ptr);
typedef ga_hip_error_t ga_hipIpcOpenMemHandle_fn(void **dev_ptr, ga_hip_ipc_mem_handle_t handle, unsigned int flags);
typedef ga_hip_error_t ga_hipIpcCloseMemHandle_fn(void *dev_ptr);
typedef ga_hip_error_t ga_hipMemExportToShareableHandle_fn(void *shareable_handle, ga_hip_mem_handle_t handle,
                                                           ga_hip_mem_handle_type_t handle_type,
                                                           unsigned long long flags);
typedef ga_hip_error_t ga_hipMemImportFromShareableHandle_fn(ga_hip_mem_handle_t *handle, void *os_handle,
                                                             ga_hip_mem_handle_type_t sh_handle_type);
typedef ga_hip_error_t ga_hipStreamGetCaptureInfo_v2_fn(ga_hip_stream_t stream,
                                                        ga_hip_stream_capture_status_t *capture_status_out,
                                                        unsigned long long *id_out, ga_hip_graph_t *graph_out,
                                                        const ga_hip_graph_node_t **dependencies_out,
                                                        size_t *num_dependencies_out);
typedef ga_hip_error_t ga_hipGraphNodeGetDependencies_fn(ga_hip_graph_node_t node, ga_hip_graph_node_t *dependencies,
                                                         size_t *num_dependencies);

/* GA_HIP_SYMBOLS(X): X(group, symbol) for every symbol galloc resolves, by the
 * name the runtime exports; group is a backend/dl_table.h group without its
 * GA_DL_ prefix (REQUIRED, or the optional VMM, ASYNC, HOST, PEER, IPC, GRAPH, HOSTREG: ROCm
 * added the first two in 5.1 and a runtime may still lack them). */
#define GA_HIP_SYMBOLS(X)                                                                                              \
    X(REQUIRED, hipInit)                                                                                               \
    X(REQUIRED, hipRuntimeGetVersion)                                                                                  \
    X(REQUIRED, hipGetDeviceCount)                                                                                     \
    X(REQUIRED, hipDeviceGet)                                                                                          \
    X(REQUIRED, hipGetDevice)                                                                                          \
    X(REQUIRED, hipSetDevice)                                                                                          \
    X(REQUIRED, hipDeviceSynchronize)                                                                                  \
    X(REQUIRED, hipMalloc)                                                                                             \
    X(REQUIRED, hipFree)                                                                                               \
    X(REQUIRED, hipMemGetInfo)                                                                                         \
    X(REQUIRED, hipEventCreateWithFlags)                                                                               \
    X(REQUIRED, hipEventDestroy)                                                                                       \
    X(REQUIRED, hipEventRecord)                                                                                        \
    X(REQUIRED, hipEventQuery)                                                                                         \
    X(REQUIRED, hipEventSynchronize)                                                                                   \
    X(REQUIRED, hipStreamSynchronize)                                                                                  \
    X(REQUIRED, hipGetErrorName)                                                                                       \
    X(REQUIRED, hipGetErrorString)                                                                                     \
    X(VMM, hipMemGetAllocationGranularity)                                                                             \
    X(VMM, hipMemAddressReserve)                                                                                       \
    X(VMM, hipMemAddressFree)                                                                                          \
    X(VMM, hipMemCreate)                                                                                               \
    X(VMM, hipMemRelease)                                                                                              \
    X(VMM, hipMemMap)                                                                                                  \
    X(VMM, hipMemUnmap)                                                                                                \
    X(VMM, hipMemSetAccess)                                                                                            \
    X(ASYNC, hipMallocAsync)                                                                                           \
    X(ASYNC, hipFreeAsync)                                                                                             \
    X(ASYNC, hipDeviceGetDefaultMemPool)                                                                               \
    X(ASYNC, hipMemPoolSetAttribute)                                                                                   \
    X(ASYNC, hipMemPoolGetAttribute)                                                                                   \
    X(ASYNC, hipMemPoolTrimTo)                                                                                         \
    X(HOST, hipHostMalloc)                                                                                             \
    X(HOST, hipHostFree)                                                                                               \
    X(HOST, hipMemcpyDtoH)                                                                                             \
    X(HOST, hipMemcpyHtoD)                                                                                             \
    X(PEER, hipDeviceCanAccessPeer)                                                                                    \
    X(PEER, hipDeviceEnablePeerAccess)                                                                                 \
    X(IPC, hipIpcGetMemHandle)                                                                                         \
    X(IPC, hipIpcOpenMemHandle)                                                                                        \
    X(IPC, hipIpcCloseMemHandle)                                                                                       \
    X(IPC, hipMemExportToShareableHandle)                                                                              \
    X(IPC, hipMemImportFromShareableHandle)                                                                            \
    X(GRAPH, hipStreamGetCaptureInfo_v2)                                                                               \
    X(GRAPH, hipGraphNodeGetDependencies)                                                                              \
    X(HOSTREG, hipHostRegister)                                                                                        \
    X(HOSTREG, hipHostUnregister)

/* The library dlopen'd when no path is configured (the soname-independent
 * link every ROCm install has, 5.x and 6.x alike). */
#define GA_HIP_DEFAULT_LIBRARY "libamdhip64.so"

#ifdef __cplusplus
}
#endif
#endif /* GA_BACKEND_HIP_API_H */
