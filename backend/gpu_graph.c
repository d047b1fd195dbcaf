/*
 * gpu_graph.c: what the pool reads of a stream capture graph, for every
 * vendor: the capture_info and node_deps members (api/galloc_backend.h).
 *
 * Why: PyTorch's graph_capture_record_stream_reuse
 * (CUDACachingAllocator.cpp) reuses, during a CUDA graph capture, a block
 * freed with record_stream uses once the capture graph shows that every use
 * precedes the allocating stream's current frontier. It reads the frontier
 * with cudaStreamGetCaptureInfo and walks the graph backwards with
 * cudaGraphNodeGetDependencies; these two members are those calls
 * (cuStreamGetCaptureInfo_v2 / hipStreamGetCaptureInfo_v2,
 * cuGraphNodeGetDependencies / hipGraphNodeGetDependencies) and nothing more:
 * the walk and its caching are the pool's.
 *
 * Both are an optional symbol group (GA_GPU_F_GRAPH): a library without it
 * answers GALLOC_E_UNSUPPORTED naming the missing symbol. An invalidated
 * capture is a device error: the capture is lost, no frontier is valid.
 * Nothing here holds driver resources (node handles are the driver's, valid
 * while their graph lives), so close has nothing of this file's to release.
 *
 * Locking: the allocator's lock is held for every call.
 */
#include "backend/gpu_int.h"

/* The feature, or GALLOC_E_UNSUPPORTED naming the missing symbol. */
static galloc_status_t graph_ready(ga_gpu_t *g, const char *what)
{
    if (g->features & GA_GPU_F_GRAPH)
        return GALLOC_OK;
    return ga_gpu_fail(g, GALLOC_E_UNSUPPORTED,
                       "%s: stream capture graphs are unavailable: the %s driver library lacks %s", what, g->v->name,
                       ga_dl_missing(g->vs, GA_GPU_F_GRAPH));
}

galloc_status_t ga_gpu_capture_info(void *state, galloc_stream_t s, uint64_t *capture_id, uintptr_t *nodes, size_t cap,
                                    size_t *n)
{
    ga_gpu_t *g = state;
    galloc_status_t st = graph_ready(g, "capture_info");
    if (st != GALLOC_OK)
        return st;
    if (capture_id == NULL || n == NULL || (nodes == NULL && cap > 0))
        return ga_gpu_fail(g, GALLOC_E_INVAL, "capture_info(stream %#lx): %s", (unsigned long)s,
                           nodes == NULL && cap > 0 ? "nodes is NULL with room for entries"
                                                    : "capture_id or n is NULL");
    uintptr_t prev;
    if ((st = ga_gpu_enter(g, "capture_info", &prev)) != GALLOC_OK)
        return st;
    int status = GA_GPU_CAPTURE_NONE;
    uint64_t id = 0;
    size_t total = 0;
    ga_gpu_rc_t rc = g->v->capture_info(g->vs, s, &status, &id, nodes, cap, &total);
    ga_gpu_leave(g, prev);
    if (rc != 0)
        return ga_gpu_driver_fail(g, GA_GPU_FN_CAPTURE_INFO, rc, "capture_info(stream %#lx)", (unsigned long)s);
    switch (status) {
    case GA_GPU_CAPTURE_NONE:
        *capture_id = 0;
        *n = 0;
        return GALLOC_OK;
    case GA_GPU_CAPTURE_ACTIVE:
        *capture_id = id;
        *n = total;
        return GALLOC_OK;
    case GA_GPU_CAPTURE_INVALIDATED:
        return ga_gpu_fail(g, GALLOC_E_DEVICE,
                           "capture_info(stream %#lx): the stream's capture was invalidated (%s: status "
                           "INVALIDATED): an operation during the capture was not permitted",
                           (unsigned long)s, g->v->fn_name[GA_GPU_FN_CAPTURE_INFO]);
    default:
        return ga_gpu_fail(g, GALLOC_E_DEVICE, "capture_info(stream %#lx): %s returned unknown capture status %d",
                           (unsigned long)s, g->v->fn_name[GA_GPU_FN_CAPTURE_INFO], status);
    }
}

/* The driver fills at most as many entries as it is given and reports how
 * many it filled, so only its counting form (deps NULL) tells the total: it
 * runs first, then the filling one when there is room and something to fill. */
galloc_status_t ga_gpu_node_deps(void *state, uintptr_t node, uintptr_t *deps, size_t cap, size_t *n)
{
    ga_gpu_t *g = state;
    galloc_status_t st = graph_ready(g, "node_deps");
    if (st != GALLOC_OK)
        return st;
    if (node == 0 || n == NULL || (deps == NULL && cap > 0))
        return ga_gpu_fail(g, GALLOC_E_INVAL, "node_deps(node %#lx): %s", (unsigned long)node,
                           node == 0   ? "node is 0"
                           : n == NULL ? "n is NULL"
                                       : "deps is NULL with room for entries");
    uintptr_t prev;
    if ((st = ga_gpu_enter(g, "node_deps", &prev)) != GALLOC_OK)
        return st;
    size_t total = 0;
    ga_gpu_rc_t rc = g->v->node_deps(g->vs, node, NULL, &total);
    size_t filled = total < cap ? total : cap;
    if (rc == 0 && filled > 0)
        rc = g->v->node_deps(g->vs, node, deps, &filled);
    ga_gpu_leave(g, prev);
    if (rc != 0)
        return ga_gpu_driver_fail(g, GA_GPU_FN_NODE_DEPS, rc, "node_deps(node %#lx)", (unsigned long)node);
    *n = total;
    return GALLOC_OK;
}
