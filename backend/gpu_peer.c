/*
 * gpu_peer.c: peer access, letting another device of the process read and
 * write this state's memory (enable_peer_access), for every vendor.
 *
 * Two kinds of memory need two mechanisms, as in PyTorch: segments from the
 * driver's plain allocator (cuMemAlloc) are reachable from a peer once the
 * peer's context has enabled access to this device's context
 * (cuCtxEnablePeerAccess with the peer's primary context current, which is
 * what cudaDeviceEnablePeerAccess does for PyTorch's enablePeerAccess in
 * c10/cuda/PeerToPeerAccess.cpp); VMM mappings ignore that switch and are
 * reachable only from the devices cuMemSetAccess named for each mapping
 * (PyTorch's ExpandableSegment::addPeer / setAccess). So enabling a peer
 * walks the live mappings now (ga_gpu_vmm_grant) and map grants the active
 * peers from then on (gpu_vmm.c).
 *
 * Steps, each remembered in the peer's record so that a failed call retried
 * redoes only what is missing: retain the peer's primary context (held until
 * close: peer access lives as long as both contexts), enable the driver's
 * peer access, grant every live mapping, then mark the peer active. A failure
 * leaves the peer inactive (new maps do not name it) and reports; mappings
 * granted before the failure keep the peer's access, which is harmless (only
 * extra reach) and which the retry sets again anyway.
 *
 * Locking: the allocator's lock is held for every call.
 */
#include <stdlib.h>

#include "backend/gpu_int.h"

static ga_gpu_peer_t *peer_find(ga_gpu_t *g, int device)
{
    for (size_t i = 0; i < g->n_peers; i++)
        if (g->peers[i].device == device)
            return &g->peers[i];
    return NULL;
}

/* Enable the driver's peer access: the peer's context current, ours named. */
static galloc_status_t link_peer(ga_gpu_t *g, ga_gpu_peer_t *p)
{
    uintptr_t prev = 0;
    ga_gpu_rc_t rc = g->v->ctx_get(g->vs, &prev);
    if (rc != 0)
        return ga_gpu_driver_fail(g, GA_GPU_FN_CTX_GET, rc, "enable_peer_access(%d)", p->device);
    if ((rc = g->v->ctx_set(g->vs, p->ctx)) != 0)
        return ga_gpu_driver_fail(g, GA_GPU_FN_CTX_SET, rc, "enable_peer_access(%d): making the peer's context current",
                                  p->device);
    rc = g->v->peer_enable(g->vs, g->ctx);
    (void)g->v->ctx_set(g->vs, prev); /* a failed restore leaves the peer's context current: harmless to galloc */
    if (rc != 0)
        return ga_gpu_driver_fail(g, GA_GPU_FN_PEER_ENABLE, rc,
                                  "enable_peer_access(%d): enabling device %d's access to device %d", p->device,
                                  p->device, g->device);
    p->linked = true;
    return GALLOC_OK;
}

galloc_status_t ga_gpu_enable_peer_access(void *state, int peer)
{
    ga_gpu_t *g = state;
    if (peer == g->device)
        return ga_gpu_fail(g, GALLOC_E_INVAL, "enable_peer_access(%d): that is this allocator's own device", peer);
    ga_gpu_peer_t *p = peer < 0 ? NULL : peer_find(g, peer);
    if (p != NULL && p->active)
        return GALLOC_OK; /* enabled before: nothing to do, no driver call */
    int count = 0;
    ga_gpu_rc_t rc = g->v->device_count(g->vs, &count);
    if (rc != 0)
        return ga_gpu_driver_fail(g, GA_GPU_FN_DEVICE_COUNT, rc, "enable_peer_access(%d): counting devices", peer);
    if (peer < 0 || peer >= count)
        return ga_gpu_fail(g, GALLOC_E_INVAL,
                           "enable_peer_access(%d): no such device: the %s driver reports %d device%s", peer,
                           g->v->name, count, count == 1 ? "" : "s");
    if (!(g->features & GA_GPU_F_PEER))
        return ga_gpu_fail(g, GALLOC_E_UNSUPPORTED, "enable_peer_access(%d): the %s driver library lacks %s", peer,
                           g->v->name, ga_dl_missing(g->vs, GA_GPU_F_PEER));
    int can = 0;
    if ((rc = g->v->peer_can_access(g->vs, peer, &can)) != 0)
        return ga_gpu_driver_fail(g, GA_GPU_FN_PEER_CAN_ACCESS, rc,
                                  "enable_peer_access(%d): asking whether device %d can access device %d", peer, peer,
                                  g->device);
    if (!can)
        return ga_gpu_fail(g, GALLOC_E_UNSUPPORTED,
                           "enable_peer_access(%d): device %d cannot access device %d's memory (%s says no: no "
                           "peer-to-peer path between them)",
                           peer, peer, g->device, g->v->fn_name[GA_GPU_FN_PEER_CAN_ACCESS]);
    if (p == NULL) { /* room first, so that recording a retained context cannot fail */
        if (!ga_gpu_grow((void **)&g->peers, &g->cap_peers, g->n_peers + 1, sizeof(ga_gpu_peer_t)))
            return ga_gpu_fail(g, GALLOC_E_NOMEM, "enable_peer_access(%d): cannot grow the peer table", peer);
        int *act = realloc(g->active_peers, (g->n_peers + 1) * sizeof(int));
        if (act == NULL)
            return ga_gpu_fail(g, GALLOC_E_NOMEM, "enable_peer_access(%d): cannot grow the peer table", peer);
        g->active_peers = act;
        p = &g->peers[g->n_peers++];
        *p = (ga_gpu_peer_t){.device = peer};
    }
    if (p->ctx == 0) {
        uintptr_t ctx = 0;
        if ((rc = g->v->peer_ctx_retain(g->vs, peer, &ctx)) != 0)
            return ga_gpu_driver_fail(g, GA_GPU_FN_PEER_CTX_RETAIN, rc,
                                      "enable_peer_access(%d): retaining the peer's primary context", peer);
        p->ctx = ctx;
    }
    galloc_status_t st;
    if (!p->linked && (st = link_peer(g, p)) != GALLOC_OK)
        return st;
    uintptr_t prev;
    if ((st = ga_gpu_enter(g, "enable_peer_access", &prev)) != GALLOC_OK)
        return st;
    st = ga_gpu_vmm_grant(g, peer);
    if (st == GALLOC_OK)
        st = ga_gpu_ipc_grant(g, peer); /* pages imported from other processes are mappings too */
    ga_gpu_leave(g, prev);
    if (st != GALLOC_OK)
        return st;
    p->active = true;
    g->active_peers[g->n_active++] = peer;
    return GALLOC_OK;
}

void ga_gpu_peer_close(ga_gpu_t *g)
{
    for (size_t i = 0; i < g->n_peers; i++)
        if (g->peers[i].ctx != 0)
            (void)GA_GPU_TWICE(g->v->peer_ctx_release(g->vs, g->peers[i].device));
    free(g->peers);
    free(g->active_peers);
    g->peers = NULL;
    g->active_peers = NULL;
    g->n_peers = g->cap_peers = g->n_active = 0;
}
