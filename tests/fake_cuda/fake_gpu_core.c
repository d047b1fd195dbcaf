/*
 * fake_gpu_core.c: the fake driver's state, devices and primary contexts,
 * call counting, fault rules, the call trace, violations, leak accounting and
 * the test controls (see fake_gpu.h for the model).
 */
#include "tests/fake_cuda/fake_gpu_int.h"

#define DEFAULT_DEVICES 2
#define DEFAULT_CAPACITY ((uint64_t)80 << 30)
#define DEFAULT_GRANULARITY ((size_t)2 << 20)

struct fg_state fg = {.ndev = DEFAULT_DEVICES, .gran = DEFAULT_GRANULARITY};
pthread_mutex_t fg_lock = PTHREAD_MUTEX_INITIALIZER;
_Thread_local const char *fg_current_fn;

/* Each thread's current context, valid only while its epoch is the driver's:
 * fg_reset starts a new epoch, so every thread has no context current in the
 * fresh driver, as in a new process. Without it a context left current by a
 * run (a faulted restore in galloc leaves it so) stayed current after the
 * reset, galloc found it already current, never called cuCtxSetCurrent again,
 * and a fault sweep could no longer reach that call. Guarded by fg_lock. */
static _Thread_local fg_ctx_t *thread_ctx;
static _Thread_local uint64_t thread_ctx_epoch;
static uint64_t ctx_epoch = 1; /* survives fg_reset's memset of fg: it is not in fg */

static fg_ctx_t *current(void)
{
    return thread_ctx_epoch == ctx_epoch ? thread_ctx : NULL;
}

static void set_current(fg_ctx_t *c)
{
    thread_ctx = c;
    thread_ctx_epoch = ctx_epoch;
}

/* The device table starts configured: capacities and pool defaults. */
static void devices_default(void)
{
    for (int i = 0; i < FAKE_GPU_MAX_DEVICES; i++) {
        uint64_t cap = fg.dev[i].capacity ? fg.dev[i].capacity : DEFAULT_CAPACITY;
        fg.dev[i] = (fg_device_t){.ctx = {.magic = FG_MAGIC_CTX, .device = i},
                                  .capacity = cap,
                                  .stream0 = {.magic = FG_MAGIC_STREAM, .device = i},
                                  .pool = {.device = i, .reuse = {1, 1, 1}}};
    }
}

__attribute__((constructor)) static void fg_boot(void)
{
    devices_default();
}

bool fgi_grow(void **array, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return true;
    size_t n = *cap ? *cap * 2 : 16;
    while (n < need)
        n *= 2;
    void *p = realloc(*array, n * elem);
    if (p == NULL)
        return false;
    *array = p;
    *cap = n;
    return true;
}

static void record_violation(const char *fmt, va_list ap)
{
    char text[400];
    vsnprintf(text, sizeof(text), fmt, ap);
    snprintf(fg.violation, sizeof(fg.violation), "%s: %s", fg_current_fn ? fg_current_fn : "?", text);
    fg.violations++;
}

fg_rc_t fgi_violation(fg_rc_t rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    record_violation(fmt, ap);
    va_end(ap);
    return rc;
}

fg_rc_t fg_violation(fg_rc_t rc, const char *fmt, ...)
{
    FG_LOCK();
    va_list ap;
    va_start(ap, fmt);
    record_violation(fmt, ap);
    va_end(ap);
    FG_UNLOCK();
    return rc;
}

fg_rc_t fgi_need_device(int device)
{
    if (!fg.initialized)
        return fgi_violation(FG_NOT_INITIALIZED, "the driver is not initialized");
    if (device < 0 || device >= fg.ndev)
        return fgi_violation(FG_INVALID_DEVICE, "device %d does not exist (%d devices)", device, fg.ndev);
    return FG_OK;
}

fg_rc_t fgi_need_ctx(int *device)
{
    if (!fg.initialized)
        return fgi_violation(FG_NOT_INITIALIZED, "the driver is not initialized");
    fg_ctx_t *c = current();
    if (c == NULL)
        return fgi_violation(FG_INVALID_CONTEXT, "no context is current on this thread");
    if (fg.dev[c->device].refs == 0)
        return fgi_violation(FG_INVALID_CONTEXT, "the current context (device %d) has been destroyed", c->device);
    *device = c->device;
    return FG_OK;
}

bool fgi_map(size_t size, int prot, bool shared, void **base, size_t *len, uint64_t *aligned)
{
    size_t n = size + fg.gran;
    int flags = (shared ? MAP_SHARED : MAP_PRIVATE) | MAP_ANONYMOUS | MAP_NORESERVE;
    void *p = mmap(NULL, n, prot, flags, -1, 0);
    if (p == MAP_FAILED)
        return false;
    *base = p;
    *len = n;
    *aligned = fgi_round((uintptr_t)p, fg.gran);
    return true;
}

/* ---- Calls, faults and the trace. ---- */

bool fg_enter(const char *fn, int *code)
{
    FG_LOCK();
    fg_current_fn = fn;
    fg.calls++;
    size_t i = 0;
    while (i < fg.n_counters && strcmp(fg.counters[i].fn, fn) != 0)
        i++;
    if (i == fg.n_counters && i < FG_MAX_COUNTERS)
        fg.counters[fg.n_counters++] = (fg_counter_t){.fn = fn, .n = 0};
    if (i < fg.n_counters)
        fg.counters[i].n++;
    size_t n = strlen(fn);
    if (fg.trace_len + n + 2 <= FG_TRACE_MAX) {
        memcpy(fg.trace + fg.trace_len, fn, n);
        fg.trace_len += n;
        fg.trace[fg.trace_len++] = ',';
        fg.trace[fg.trace_len] = '\0';
    }
    bool fail = false;
    for (size_t r = 0; r < fg.n_rules; r++) {
        fg_rule_t *rule = &fg.rules[r];
        if (strcmp(rule->fn, "*") != 0 && strcmp(rule->fn, fn) != 0)
            continue;
        rule->seen++;
        if (!fail && ((rule->nth != 0 && rule->seen == rule->nth) || (rule->from != 0 && rule->seen >= rule->from))) {
            fail = true;
            *code = rule->code;
        }
    }
    if (fail)
        fg.faults++;
    FG_UNLOCK();
    return fail;
}

/* ---- Initialization, devices and contexts. ---- */

fg_rc_t fg_init(unsigned flags)
{
    FG_LOCK();
    fg_rc_t rc = flags != 0 ? fgi_violation(FG_INVALID_VALUE, "flags must be 0, not %u", flags) : FG_OK;
    if (rc == FG_OK)
        fg.initialized = true;
    FG_UNLOCK();
    return rc;
}

fg_rc_t fg_device_count(int *count)
{
    FG_LOCK();
    fg_rc_t rc = !fg.initialized ? fgi_violation(FG_NOT_INITIALIZED, "the driver is not initialized")
                 : count == NULL ? fgi_violation(FG_INVALID_VALUE, "count is NULL")
                                 : FG_OK;
    if (rc == FG_OK)
        *count = fg.ndev;
    FG_UNLOCK();
    return rc;
}

fg_rc_t fg_device_get(int *device, int ordinal)
{
    FG_LOCK();
    fg_rc_t rc = device == NULL ? fgi_violation(FG_INVALID_VALUE, "device is NULL") : fgi_need_device(ordinal);
    if (rc == FG_OK)
        *device = ordinal;
    FG_UNLOCK();
    return rc;
}

fg_rc_t fg_ctx_retain(void **ctx, int device)
{
    FG_LOCK();
    fg_rc_t rc = ctx == NULL ? fgi_violation(FG_INVALID_VALUE, "ctx is NULL") : fgi_need_device(device);
    if (rc == FG_OK) {
        fg.dev[device].refs++;
        *ctx = &fg.dev[device].ctx;
    }
    FG_UNLOCK();
    return rc;
}

/* The last reference destroys the context: whatever its device still holds
 * is leaked (counted) and freed, as the driver frees a context's memory. */
fg_rc_t fg_ctx_release(int device)
{
    FG_LOCK();
    fg_rc_t rc = fgi_need_device(device);
    if (rc == FG_OK && fg.dev[device].refs == 0)
        rc = fgi_violation(FG_INVALID_CONTEXT, "device %d's primary context is not retained", device);
    if (rc == FG_OK && --fg.dev[device].refs == 0) {
        fg.leaked_at_destroy += fgi_mem_release_all(device) + fgi_vmm_release_all(device) +
                                fgi_sync_release_all(device) + fgi_host_release_all(device) +
                                fgi_ipc_release_all(device);
        fgi_peer_forget(device);
        fg_device_t *d = &fg.dev[device];
        d->pool = (fg_pool_t){.device = device, .reuse = {1, 1, 1}};
        d->stream0.submitted = d->stream0.completed = 0;
    }
    FG_UNLOCK();
    return rc;
}

fg_rc_t fg_ctx_get(void **ctx)
{
    FG_LOCK();
    fg_rc_t rc = !fg.initialized ? fgi_violation(FG_NOT_INITIALIZED, "the driver is not initialized")
                 : ctx == NULL   ? fgi_violation(FG_INVALID_VALUE, "pctx is NULL")
                                 : FG_OK;
    if (rc == FG_OK)
        *ctx = current();
    FG_UNLOCK();
    return rc;
}

fg_rc_t fg_ctx_set(void *ctx)
{
    FG_LOCK();
    fg_rc_t rc = fg.initialized ? FG_OK : fgi_violation(FG_NOT_INITIALIZED, "the driver is not initialized");
    if (rc == FG_OK && ctx != NULL) {
        int i = 0;
        while (i < fg.ndev && ctx != (void *)&fg.dev[i].ctx)
            i++;
        if (i == fg.ndev)
            rc = fgi_violation(FG_INVALID_CONTEXT, "%p is not a context", ctx);
        else if (fg.dev[i].refs == 0)
            rc = fgi_violation(FG_INVALID_CONTEXT, "device %d's primary context has been destroyed", i);
    }
    if (rc == FG_OK)
        set_current(ctx);
    FG_UNLOCK();
    return rc;
}

fg_rc_t fg_ctx_synchronize(void)
{
    FG_LOCK();
    int device = 0;
    fg_rc_t rc = fgi_need_ctx(&device);
    if (rc == FG_OK) {
        fgi_complete(&fg.dev[device].stream0, UINT64_MAX);
        for (size_t i = 0; i < fg.n_streams; i++)
            if (fg.streams[i]->device == device)
                fgi_complete(fg.streams[i], UINT64_MAX);
        fgi_pool_settle(device);
    }
    FG_UNLOCK();
    return rc;
}

/* ---- A runtime API's implicit contexts. ---- */

static void rt_activate(int device)
{
    fg_device_t *d = &fg.dev[device];
    if (!d->rt_held) {
        d->rt_held = true;
        d->refs++;
    }
    set_current(&d->ctx);
}

fg_rc_t fg_rt_set_device(int device)
{
    FG_LOCK();
    fg_rc_t rc = fgi_need_device(device);
    if (rc == FG_OK)
        rt_activate(device);
    FG_UNLOCK();
    return rc;
}

fg_rc_t fg_rt_get_device(int *device)
{
    FG_LOCK();
    fg_rc_t rc = !fg.initialized  ? fgi_violation(FG_NOT_INITIALIZED, "the runtime is not initialized")
                 : device == NULL ? fgi_violation(FG_INVALID_VALUE, "deviceId is NULL")
                                  : FG_OK;
    if (rc == FG_OK) {
        fg_ctx_t *c = current();
        *device = c != NULL && c->device < fg.ndev ? c->device : 0;
    }
    FG_UNLOCK();
    return rc;
}

/* A thread's device stays usable for the process; after a reset no context
 * is current (a new epoch), so the runtime binds device 0 on first use. */
void fg_rt_bind(void)
{
    FG_LOCK();
    if (fg.initialized && fg.ndev > 0) {
        fg_ctx_t *c = current();
        int device = c != NULL && c->device < fg.ndev ? c->device : 0;
        if (c == NULL || !fg.dev[device].rt_held || c != &fg.dev[device].ctx)
            rt_activate(device);
    }
    FG_UNLOCK();
}

/* ---- Controls. ---- */

void fg_reset(void)
{
    FG_LOCK();
    (void)fgi_mem_release_all(-1);
    (void)fgi_vmm_release_all(-1);
    (void)fgi_sync_release_all(-1);
    (void)fgi_host_release_all(-1);
    (void)fgi_ipc_release_all(-1);
    fgi_graph_release_all(); /* frees the streams' frontiers too */
    for (size_t i = 0; i < fg.n_streams; i++) {
        fg.streams[i]->magic = 0;
        free(fg.streams[i]);
    }
    free(fg.allocs);
    free(fg.resvs);
    free(fg.handles);
    free(fg.maps);
    free(fg.events);
    free(fg.streams);
    free(fg.hosts);
    free(fg.regs);
    free(fg.ipcs);
    memset(&fg, 0, sizeof(fg));
    ctx_epoch++; /* every thread's current context is forgotten (current()) */
    fg.ndev = DEFAULT_DEVICES;
    fg.gran = DEFAULT_GRANULARITY;
    devices_default();
    FG_UNLOCK();
}

int fg_configure(int devices, uint64_t bytes_per_device, uint64_t granularity)
{
    FG_LOCK();
    int rc = 0;
    for (int i = 0; i < FAKE_GPU_MAX_DEVICES; i++)
        if (fg.dev[i].refs != 0)
            rc = -1;
    if (devices < 0 || devices > FAKE_GPU_MAX_DEVICES || bytes_per_device == 0 || granularity == 0 ||
        (granularity & (granularity - 1)) != 0 || fg.n_allocs || fg.n_resvs || fg.n_handles)
        rc = -1;
    if (rc == 0) {
        fg.ndev = devices;
        fg.gran = granularity;
        for (int i = 0; i < FAKE_GPU_MAX_DEVICES; i++)
            fg.dev[i].capacity = bytes_per_device;
    }
    FG_UNLOCK();
    return rc;
}

int fg_fail(const char *fn, uint64_t nth, uint64_t from, int code)
{
    FG_LOCK();
    int rc = -1;
    if (fn != NULL && strlen(fn) < sizeof(fg.rules[0].fn) && fg.n_rules < FG_MAX_RULES) {
        fg_rule_t *r = &fg.rules[fg.n_rules++];
        *r = (fg_rule_t){.nth = nth, .from = from, .code = code};
        snprintf(r->fn, sizeof(r->fn), "%s", fn);
        rc = 0;
    }
    FG_UNLOCK();
    return rc;
}

void fg_fail_clear(void)
{
    FG_LOCK();
    fg.n_rules = 0;
    FG_UNLOCK();
}

uint64_t fg_calls(const char *fn)
{
    FG_LOCK();
    uint64_t n = 0;
    if (fn != NULL && strcmp(fn, "*") == 0)
        n = fg.calls;
    for (size_t i = 0; fn != NULL && i < fg.n_counters; i++)
        if (strcmp(fg.counters[i].fn, fn) == 0)
            n = fg.counters[i].n;
    FG_UNLOCK();
    return n;
}

void fg_stats(fake_gpu_stats_t *out)
{
    FG_LOCK();
    fake_gpu_stats_t s = {.calls = fg.calls,
                          .faults = fg.faults,
                          .violations = fg.violations,
                          .leaked_at_destroy = fg.leaked_at_destroy,
                          .events_with_timing = fg.events_with_timing,
                          .live_mappings = fg.n_maps,
                          .live_reservations = fg.n_resvs,
                          .live_events = fg.n_events,
                          .live_streams = fg.n_streams,
                          .live_host_blocks = fg.n_hosts,
                          .live_host_bytes = fg.host_bytes,
                          .peak_host_bytes = fg.peak_host_bytes,
                          .copied_d2h_bytes = fg.copied_d2h,
                          .copied_h2d_bytes = fg.copied_h2d,
                          .live_ipc_opens = fg.n_ipcs,
                          .live_host_registered = fg.n_regs,
                          .live_registered_bytes = fg.reg_bytes,
                          .peak_registered_bytes = fg.peak_reg_bytes};
    for (size_t i = 0; i < fg.n_allocs; i++) {
        const fg_alloc_t *a = &fg.allocs[i];
        if (a->kind == FG_SEGMENT) {
            s.live_segments++;
            s.live_segment_bytes += a->size;
        } else if (a->kind == FG_ASYNC_LIVE) {
            s.live_async++;
            s.live_async_bytes += a->size;
        }
    }
    for (size_t i = 0; i < fg.n_handles; i++) {
        if (!fg.handles[i].released) {
            s.live_handles++;
            s.live_handle_bytes += fg.handles[i].size;
        }
    }
    for (size_t i = 0; i < fg.n_maps; i++)
        s.live_mapped_bytes += fg.maps[i].size;
    for (size_t i = 0; i < fg.n_resvs; i++)
        s.live_reserved_bytes += fg.resvs[i].size;
    s.last_reserved_bytes = fg.last_resv_size;
    for (int i = 0; i < FAKE_GPU_MAX_DEVICES; i++) {
        s.ctx_refs += (uint64_t)(fg.dev[i].refs - fg.dev[i].rt_held); /* the runtime's are not the caller's */
        s.device_used[i] = fg.dev[i].used;
    }
    s.leaks = s.leaked_at_destroy + s.live_segments + s.live_async + s.live_handles + s.live_mappings +
              s.live_reservations + s.live_events + s.ctx_refs + s.live_host_blocks + s.live_ipc_opens +
              s.live_host_registered;
    FG_UNLOCK();
    *out = s;
}

size_t fg_trace(char *buf, size_t len)
{
    FG_LOCK();
    size_t n = fg.trace_len;
    if (buf != NULL && len > 0)
        snprintf(buf, len, "%s", fg.trace);
    FG_UNLOCK();
    return n;
}

void fg_trace_clear(void)
{
    FG_LOCK();
    fg.trace_len = 0;
    fg.trace[0] = '\0';
    FG_UNLOCK();
}

size_t fg_last_violation(char *buf, size_t len)
{
    FG_LOCK();
    size_t n = strlen(fg.violation);
    if (buf != NULL && len > 0)
        snprintf(buf, len, "%s", fg.violation);
    FG_UNLOCK();
    return n;
}

void fg_set_manual_streams(bool on)
{
    FG_LOCK();
    if (!on) {
        for (int i = 0; i < FAKE_GPU_MAX_DEVICES; i++)
            fgi_complete(&fg.dev[i].stream0, UINT64_MAX);
        for (size_t i = 0; i < fg.n_streams; i++)
            fgi_complete(fg.streams[i], UINT64_MAX);
    }
    fg.manual = on;
    FG_UNLOCK();
}
