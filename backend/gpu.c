/*
 * gpu.c: the GPU layer's life cycle, whole segments and messages, for every
 * vendor (see gpu.h). Segments are cudaMalloc-style allocations, as PyTorch's
 * native allocator makes them (cudaMalloc through c10's CUDACachingAllocator);
 * they are not stream-ordered, so the stream argument is not passed on.
 *
 * Open retains the device's primary context (the one the CUDA runtime and
 * PyTorch use, so memory is shared with them) and close releases it last,
 * after giving back everything still held: a real driver frees a context's
 * memory when the last reference goes, a strict fake counts it as leaked.
 * Optional features (VMM, the stream-ordered pool) are set up on first use, so
 * an allocator that does not need them makes no driver call for them.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/gpu_int.h"
#include "conf/options.h"

/* Whether args (from a caller compiled against an older header) covers a field. */
#define ARG_HAS(args, f) ((args)->struct_size >= offsetof(galloc_backend_args_t, f) + sizeof((args)->f))

/* What every GPU vendor reads from its options. */
typedef struct gpu_opts {
    char driver_path[GA_CONF_PATH_MAX]; /* driver_path: the library to dlopen; "": the vendor's default */
} gpu_opts_t;

static const ga_conf_key_t gpu_keys[] = {
    {"driver_path", GA_CONF_PATH, offsetof(gpu_opts_t, driver_path), 0, 0, NULL, 0},
};

galloc_status_t ga_gpu_fail(ga_gpu_t *g, galloc_status_t st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g->msg, sizeof(g->msg), fmt, ap);
    va_end(ap);
    return st;
}

galloc_status_t ga_gpu_driver_fail(ga_gpu_t *g, ga_gpu_fn_t fn, ga_gpu_rc_t rc, const char *fmt, ...)
{
    char what[192], why[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    g->v->describe(g->vs, rc, why, sizeof(why));
    snprintf(g->msg, sizeof(g->msg), "%s: %s failed: %s", what, g->v->fn_name[fn], why);
    return g->v->status(rc);
}

galloc_status_t ga_gpu_enter(ga_gpu_t *g, const char *what, uintptr_t *prev)
{
    ga_gpu_rc_t rc = g->v->ctx_get(g->vs, prev);
    if (rc != 0) {
        ga_gpu_driver_fail(g, GA_GPU_FN_CTX_GET, rc, "%s", what);
        return GALLOC_E_DEVICE; /* a context switch failing is never an OOM to retry */
    }
    if (*prev == g->ctx)
        return GALLOC_OK;
    rc = g->v->ctx_set(g->vs, g->ctx);
    if (rc != 0) {
        ga_gpu_driver_fail(g, GA_GPU_FN_CTX_SET, rc, "%s", what);
        return GALLOC_E_DEVICE;
    }
    return GALLOC_OK;
}

void ga_gpu_leave(ga_gpu_t *g, uintptr_t prev)
{
    /* A failed restore leaves our context current on this thread: harmless to
     * galloc, and the call's own result is what the caller needs to see. */
    if (prev != g->ctx)
        (void)g->v->ctx_set(g->vs, prev);
}

bool ga_gpu_grow(void **array, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return true;
    size_t n = *cap ? *cap : 4;
    while (n < need)
        n *= 2;
    void *p = realloc(*array, n * elem);
    if (p == NULL)
        return false;
    *array = p;
    *cap = n;
    return true;
}

/* An open failure before or after the state exists: message into err. */
static galloc_status_t open_fail(ga_gpu_t *g, ga_gpu_fn_t fn, ga_gpu_rc_t rc, char *err, size_t errlen,
                                 const char *what)
{
    ga_gpu_driver_fail(g, fn, rc, "%s", what);
    if (err != NULL && errlen > 0)
        snprintf(err, errlen, "%s", g->msg);
    return GALLOC_E_UNAVAILABLE; /* no usable device: the caller may fall back to another backend */
}

galloc_status_t ga_gpu_open(const ga_gpu_vendor_t *v, const galloc_backend_args_t *args, void **state, char *err,
                            size_t errlen)
{
    if (state != NULL)
        *state = NULL;
    if (args == NULL || state == NULL || !ARG_HAS(args, device) || args->device < 0) {
        if (err != NULL && errlen > 0)
            snprintf(err, errlen, "%s", args == NULL || state == NULL ? "NULL argument" : "bad device index");
        return GALLOC_E_INVAL;
    }
    gpu_opts_t o = {""};
    if (ARG_HAS(args, options)) {
        galloc_status_t st =
            ga_conf_options_parse(args->options, gpu_keys, sizeof(gpu_keys) / sizeof(gpu_keys[0]), &o, err, errlen);
        if (st != GALLOC_OK)
            return st;
    }
    const char *path = o.driver_path[0] != '\0' ? o.driver_path : v->lib->path;
    ga_gpu_t *g = calloc(1, sizeof(*g));
    if (g == NULL) {
        if (err != NULL && errlen > 0)
            snprintf(err, errlen, "out of host memory opening the %s backend", v->name);
        return GALLOC_E_NOMEM;
    }
    g->v = v;
    g->device = args->device;
    ga_addrmap_init(&g->segs, sizeof(ga_gpu_entry_t));
    ga_addrmap_init(&g->asyncs, sizeof(ga_gpu_entry_t));
    ga_addrmap_init(&g->events, sizeof(ga_gpu_entry_t));
    ga_addrmap_init(&g->hosts, sizeof(ga_gpu_entry_t));
    ga_addrmap_init(&g->registered, sizeof(ga_gpu_entry_t));
    galloc_status_t st = ga_dl_open(v->lib, path, &g->vs, &g->features, err, errlen);
    if (st != GALLOC_OK)
        goto err_free;
    int count = 0;
    ga_gpu_rc_t rc = v->init(g->vs);
    if (rc != 0) {
        st = open_fail(g, GA_GPU_FN_INIT, rc, err, errlen, "initializing the driver");
        goto err_unload;
    }
    rc = v->device_count(g->vs, &count);
    if (rc != 0) {
        st = open_fail(g, GA_GPU_FN_DEVICE_COUNT, rc, err, errlen, "counting devices");
        goto err_unload;
    }
    if (args->device >= count) {
        if (err != NULL && errlen > 0)
            snprintf(err, errlen, "device %d is not present: the %s driver reports %d device%s", args->device, v->name,
                     count, count == 1 ? "" : "s");
        st = GALLOC_E_UNAVAILABLE;
        goto err_unload;
    }
    rc = v->device_get(g->vs, args->device);
    if (rc != 0) {
        st = open_fail(g, GA_GPU_FN_DEVICE_GET, rc, err, errlen, "getting the device");
        goto err_unload;
    }
    rc = v->ctx_retain(g->vs, &g->ctx);
    if (rc != 0) {
        st = open_fail(g, GA_GPU_FN_CTX_RETAIN, rc, err, errlen, "retaining the primary context");
        goto err_unload;
    }
    g->magic = GA_GPU_MAGIC;
    g->msg[0] = '\0';
    *state = g;
    return GALLOC_OK;

err_unload:
    ga_dl_close(g->vs);
err_free:
    free(g);
    return st;
}

static void segments_close(ga_gpu_t *g)
{
    for (size_t i = 0; i < g->segs.cap; i++) {
        const ga_gpu_entry_t *e = ga_addrmap_slot(&g->segs, i);
        if (e != NULL)
            (void)GA_GPU_TWICE(g->v->mem_free(g->vs, e->key));
    }
    ga_addrmap_destroy(&g->segs);
}

/* Release whatever the pool left (its destroy gives everything back; what is
 * left here was refused by the driver on the way) and then the context. */
void ga_gpu_close(void *state)
{
    ga_gpu_t *g = state;
    if (g == NULL || g->magic != GA_GPU_MAGIC)
        return;
    uintptr_t prev = 0;
    bool entered = ga_gpu_enter(g, "close", &prev) == GALLOC_OK || ga_gpu_enter(g, "close", &prev) == GALLOC_OK;
    if (entered) {
        ga_gpu_ipc_close_all(g); /* other processes' memory first: it names no resource of ours */
        ga_gpu_stream_close(g);
        ga_gpu_host_close(g);
        ga_gpu_vmm_close(g);
        segments_close(g);
        ga_gpu_leave(g, prev);
    }
    ga_gpu_peer_close(g); /* after every mapping naming a peer is gone */
    (void)GA_GPU_TWICE(g->v->ctx_release(g->vs));
    ga_dl_close(g->vs);
    ga_addrmap_destroy(&g->segs);
    ga_addrmap_destroy(&g->asyncs);
    ga_addrmap_destroy(&g->events);
    ga_addrmap_destroy(&g->hosts);
    ga_addrmap_destroy(&g->registered);
    for (size_t i = 0; i < g->n_resv; i++)
        free(g->resv[i].maps);
    free(g->resv);
    free(g->orphans);
    for (size_t i = 0; i < g->n_imports; i++)
        free(g->imports[i].handles);
    free(g->imports);
    g->magic = 0;
    free(g);
}

galloc_status_t ga_gpu_segment_alloc(void *state, size_t bytes, galloc_stream_t s, uintptr_t *addr)
{
    ga_gpu_t *g = state;
    (void)s; /* not stream-ordered: usable from every stream once returned */
    if (addr == NULL || bytes == 0)
        return ga_gpu_fail(g, GALLOC_E_INVAL, "segment_alloc(%zu bytes): %s", bytes,
                           addr == NULL ? "addr is NULL" : "zero-byte segment");
    if (ga_addrmap_reserve(&g->segs, 1) != GALLOC_OK)
        return ga_gpu_fail(g, GALLOC_E_NOMEM, "segment_alloc: cannot grow the segment table");
    uintptr_t prev, a = 0;
    galloc_status_t st = ga_gpu_enter(g, "segment_alloc", &prev);
    if (st != GALLOC_OK)
        return st;
    ga_gpu_rc_t rc = g->v->mem_alloc(g->vs, bytes, &a);
    ga_gpu_leave(g, prev);
    if (rc != 0)
        return ga_gpu_driver_fail(g, GA_GPU_FN_MEM_ALLOC, rc, "segment_alloc(%zu bytes) on device %d", bytes,
                                  g->device);
    ga_gpu_put(&g->segs, a, bytes);
    *addr = a;
    return GALLOC_OK;
}

galloc_status_t ga_gpu_segment_free(void *state, uintptr_t addr, size_t bytes, galloc_stream_t s)
{
    ga_gpu_t *g = state;
    (void)s;
    const ga_gpu_entry_t *seg = ga_addrmap_find(&g->segs, addr);
    if (seg == NULL || seg->value != bytes)
        return ga_gpu_fail(g, GALLOC_E_INVAL, "segment_free(%#lx, %zu): not a live segment of that size",
                           (unsigned long)addr, bytes);
    uintptr_t prev;
    galloc_status_t st = ga_gpu_enter(g, "segment_free", &prev);
    if (st != GALLOC_OK)
        return st;
    ga_gpu_rc_t rc = g->v->mem_free(g->vs, addr);
    ga_gpu_leave(g, prev);
    if (rc != 0)
        return ga_gpu_driver_fail(g, GA_GPU_FN_MEM_FREE, rc, "segment_free(%#lx, %zu)", (unsigned long)addr, bytes);
    ga_gpu_del(&g->segs, addr);
    return GALLOC_OK;
}

galloc_status_t ga_gpu_mem_info(void *state, size_t *free_bytes, size_t *total_bytes)
{
    ga_gpu_t *g = state;
    if (free_bytes == NULL || total_bytes == NULL)
        return ga_gpu_fail(g, GALLOC_E_INVAL, "mem_info: NULL output");
    uintptr_t prev;
    galloc_status_t st = ga_gpu_enter(g, "mem_info", &prev);
    if (st != GALLOC_OK)
        return st;
    ga_gpu_rc_t rc = g->v->mem_info(g->vs, free_bytes, total_bytes);
    ga_gpu_leave(g, prev);
    if (rc != 0)
        return ga_gpu_driver_fail(g, GA_GPU_FN_MEM_INFO, rc, "mem_info on device %d", g->device);
    return GALLOC_OK;
}

void ga_gpu_error_string(void *state, char *buf, size_t len)
{
    const ga_gpu_t *g = state;
    if (buf != NULL && len > 0)
        snprintf(buf, len, "%s", g->msg);
}
