/*
 * fake_hip_share.c: the fake HIP runtime's sharing between processes (IPC
 * handles, POSIX file descriptors of VMM handles) and stream capture graphs,
 * on the core's models; fake_hip.c has the rest of the runtime. The same
 * FAKE_HIP_NO_IPC and FAKE_HIP_NO_GRAPH variants apply.
 */
#include <stdatomic.h>

#include "tests/fake_hip/fake_hip_int.h"

/* ---- Sharing between processes. ---- */

EXPORT ga_hipIpcGetMemHandle_fn hipIpcGetMemHandle;
EXPORT ga_hipIpcCloseMemHandle_fn hipIpcCloseMemHandle;
EXPORT ga_hipMemExportToShareableHandle_fn hipMemExportToShareableHandle;
EXPORT ga_hipMemImportFromShareableHandle_fn hipMemImportFromShareableHandle;

ga_hip_error_t hipIpcGetMemHandle(ga_hip_ipc_mem_handle_t *handle, void *dev_ptr)
{
    ENTER(hipIpcGetMemHandle);
    return hip(fg_ipc_get((uintptr_t)dev_ptr, handle != NULL ? handle->reserved : NULL));
}

#ifndef FAKE_HIP_NO_IPC
EXPORT ga_hipIpcOpenMemHandle_fn hipIpcOpenMemHandle;
ga_hip_error_t hipIpcOpenMemHandle(void **dev_ptr, ga_hip_ipc_mem_handle_t handle, unsigned int flags)
{
    ENTER(hipIpcOpenMemHandle);
    /* The runtime takes exactly its own header's hipIpcMemLazyEnablePeerAccess: 0 before ROCm 6, 1 from it. */
    unsigned want = atomic_load(&fake_hip_version) >= GA_HIP_VERSION_6_0 ? 1u : 0u;
    if (flags != want)
        return hip(fg_violation(FG_INVALID_VALUE, "flags %u: this runtime takes only %u", flags, want));
    uint64_t a = 0;
    fg_rc_t rc = fg_ipc_open(dev_ptr != NULL ? &a : NULL, handle.reserved, flags);
    if (rc == FG_OK)
        *dev_ptr = (void *)(uintptr_t)a;
    return hip(rc);
}
#endif

ga_hip_error_t hipIpcCloseMemHandle(void *dev_ptr)
{
    ENTER(hipIpcCloseMemHandle);
    return hip(fg_ipc_close((uintptr_t)dev_ptr));
}

/* POSIX file descriptors only: shareable_handle is an int *, os_handle the descriptor cast to a pointer. */
ga_hip_error_t hipMemExportToShareableHandle(void *shareable_handle, ga_hip_mem_handle_t handle,
                                             ga_hip_mem_handle_type_t handle_type, unsigned long long flags)
{
    ENTER(hipMemExportToShareableHandle);
    if (handle_type != GA_HIP_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR || flags != 0)
        return hip(fg_violation(FG_INVALID_VALUE, "handle type %d, flags %llu: want a POSIX file descriptor, flags 0",
                                (int)handle_type, flags));
    return hip(fg_export_fd((uintptr_t)handle, shareable_handle));
}

ga_hip_error_t hipMemImportFromShareableHandle(ga_hip_mem_handle_t *handle, void *os_handle,
                                               ga_hip_mem_handle_type_t sh_handle_type)
{
    ENTER(hipMemImportFromShareableHandle);
    if (sh_handle_type != GA_HIP_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
        return hip(fg_violation(FG_INVALID_VALUE, "handle type %d: want a POSIX file descriptor", (int)sh_handle_type));
    uint64_t h = 0;
    fg_rc_t rc = fg_import_fd(handle != NULL ? &h : NULL, (int)(uintptr_t)os_handle);
    if (rc == FG_OK)
        *handle = (ga_hip_mem_handle_t)(uintptr_t)h;
    return hip(rc);
}

/* ---- Stream capture graphs (the core's Capture model). ---- */

#ifndef FAKE_HIP_NO_GRAPH
EXPORT ga_hipStreamGetCaptureInfo_v2_fn hipStreamGetCaptureInfo_v2;
/* The optional outputs may be NULL; the frontier array is the core's. */
ga_hip_error_t hipStreamGetCaptureInfo_v2(ga_hip_stream_t stream, ga_hip_stream_capture_status_t *capture_status_out,
                                          unsigned long long *id_out, ga_hip_graph_t *graph_out,
                                          const ga_hip_graph_node_t **dependencies_out, size_t *num_dependencies_out)
{
    ENTER(hipStreamGetCaptureInfo_v2);
    int st = 0;
    uint64_t id = 0;
    void *graph = NULL;
    void *const *deps = NULL;
    fg_rc_t rc = fg_capture_info(stream_of(stream), capture_status_out != NULL ? &st : NULL, &id,
                                 graph_out != NULL ? &graph : NULL, dependencies_out != NULL ? &deps : NULL,
                                 num_dependencies_out);
    if (rc == FG_OK) {
        *capture_status_out = (ga_hip_stream_capture_status_t)st;
        if (id_out != NULL)
            *id_out = id;
        if (graph_out != NULL)
            *graph_out = graph;
        if (dependencies_out != NULL)
            *dependencies_out = (const ga_hip_graph_node_t *)deps;
    }
    return hip(rc);
}
#endif

EXPORT ga_hipGraphNodeGetDependencies_fn hipGraphNodeGetDependencies;
ga_hip_error_t hipGraphNodeGetDependencies(ga_hip_graph_node_t node, ga_hip_graph_node_t *dependencies,
                                           size_t *num_dependencies)
{
    ENTER(hipGraphNodeGetDependencies);
    return hip(fg_node_deps(node, (void **)dependencies, num_dependencies));
}
