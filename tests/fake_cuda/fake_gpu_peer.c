/*
 * fake_gpu_peer.c: the fake driver's peer access between devices (see
 * fake_gpu.h): which device may reach which (every pair, unless a test
 * blocked it), and which contexts have enabled access to which, as
 * cuDeviceCanAccessPeer / cuCtxEnablePeerAccess and hipDeviceCanAccessPeer /
 * hipDeviceEnablePeerAccess see them. Access to VMM mappings is not here: it
 * is per mapping, set by set_access (fake_gpu_vmm.c), and needs only that the
 * pair can reach each other, not an enabled context pair, as on CUDA.
 */
#include "tests/fake_cuda/fake_gpu_int.h"

static bool ordinal_ok(int d)
{
    return d >= 0 && d < fg.ndev;
}

fg_rc_t fg_can_access_peer(int *can, int device, int peer)
{
    FG_LOCK();
    fg_rc_t rc = can == NULL ? fgi_violation(FG_INVALID_VALUE, "canAccessPeer is NULL") : fgi_need_device(device);
    if (rc == FG_OK)
        rc = fgi_need_device(peer);
    if (rc == FG_OK)
        *can = device != peer && !fg.peer_blocked[device][peer];
    FG_UNLOCK();
    return rc;
}

/* The current context's device gains access to peer's memory. */
static fg_rc_t enable(int peer)
{
    int device = 0;
    fg_rc_t rc = fgi_need_ctx(&device);
    if (rc == FG_OK && peer == device)
        rc = fgi_violation(FG_INVALID_DEVICE, "device %d cannot enable peer access to itself", device);
    else if (rc == FG_OK && fg.peer_blocked[device][peer])
        rc = FG_PEER_UNSUPPORTED; /* a refusal the caller must expect, not a violation */
    else if (rc == FG_OK && fg.peer_on[device][peer])
        rc = FG_PEER_ALREADY_ENABLED;
    if (rc == FG_OK)
        fg.peer_on[device][peer] = true;
    return rc;
}

fg_rc_t fg_peer_enable_ctx(void *peer_ctx)
{
    FG_LOCK();
    const fg_ctx_t *c = peer_ctx;
    fg_rc_t rc = FG_OK;
    bool ours = false;
    for (int i = 0; i < fg.ndev; i++)
        ours |= c == &fg.dev[i].ctx;
    if (!ours || fg.dev[c->device].refs == 0)
        rc = fgi_violation(FG_INVALID_CONTEXT, "peerContext %p is not a live context", peer_ctx);
    if (rc == FG_OK)
        rc = enable(c->device);
    FG_UNLOCK();
    return rc;
}

fg_rc_t fg_peer_enable_device(int peer)
{
    FG_LOCK();
    fg_rc_t rc = fgi_need_device(peer);
    if (rc == FG_OK)
        rc = enable(peer);
    FG_UNLOCK();
    return rc;
}

void fgi_peer_forget(int device)
{
    for (int i = 0; i < FAKE_GPU_MAX_DEVICES; i++)
        fg.peer_on[device][i] = fg.peer_on[i][device] = false;
}

int fg_peer_enabled(int from, int to)
{
    FG_LOCK();
    int on = ordinal_ok(from) && ordinal_ok(to) && fg.peer_on[from][to] && fg.dev[from].refs > 0 && fg.dev[to].refs > 0;
    FG_UNLOCK();
    return on;
}

int fg_peer_block(int a, int b, bool blocked)
{
    FG_LOCK();
    int rc = ordinal_ok(a) && ordinal_ok(b) && a != b ? 0 : -1;
    if (rc == 0)
        fg.peer_blocked[a][b] = fg.peer_blocked[b][a] = blocked;
    FG_UNLOCK();
    return rc;
}
