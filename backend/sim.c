/*
 * sim.c: the simulated device ("sim"): the caching pool, its tests and the
 * trace replay tool run on it without a GPU, on a device of any size. Modes,
 * address layout, fault injection and event semantics are described in sim.h.
 *
 * Like a strict driver it checks the contract; a violation returns
 * GALLOC_E_INVAL, changes nothing and is counted.
 *
 * No peer access: sim is one device alone, so enable_peer_access is left
 * NULL and galloc_enable_peer_access answers GALLOC_E_UNSUPPORTED with a
 * message; a model of a second device would test nothing the fake drivers'
 * two devices do not (tests/backend/peer_cases.cc).
 *
 * Invariants: seg_bytes + mapped_bytes <= capacity <= INT64_MAX; a
 * reservation's mapped_pages equals the bits set in its page bitmap; every live
 * segment is in the hash table exactly once; in unbacked mode sim->used holds
 * every live segment and reservation, ascending and disjoint, and under
 * sim_placement:rising addresses only grow.
 * Host memory is allocated on cold paths only (segment_alloc, va_reserve and
 * event_create may grow a table); frees and the event path allocate nothing.
 */
#include "backend/sim_int.h"

/* Human-readable size for messages, in PyTorch's style ("40.00 GiB"). */
static const char *human(char *buf, size_t len, uint64_t n)
{
    static const char *const unit[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    double v = (double)n;
    size_t u = 0;
    for (; v >= 1024 && u + 1 < sizeof(unit) / sizeof(unit[0]); u++)
        v /= 1024;
    snprintf(buf, len, u == 0 ? "%.0f %s" : "%.2f %s", v, unit[u]);
    return buf;
}

galloc_status_t ga_sim_fail(sim_t *sim, galloc_status_t st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sim->msg, sizeof(sim->msg), fmt, ap);
    va_end(ap);
    if (st == GALLOC_E_INVAL)
        sim->violations++;
    return st;
}

static galloc_status_t os_fail(sim_t *sim, galloc_status_t st, const char *call, uint64_t bytes)
{
    char e[128], h[32];
    const char *text = strerror_r(errno, e, sizeof(e));
    return ga_sim_fail(sim, st, "backed mode: %s of %s failed: %s", call, human(h, sizeof(h), bytes), text);
}

galloc_status_t ga_sim_op_fault(sim_t *sim, const char *op, galloc_status_t st)
{
    uint64_t n = ++sim->op_calls;
    if (n != sim->op_fail_nth && (sim->op_fail_from == 0 || n < sim->op_fail_from))
        return GALLOC_OK;
    sim->faults_injected++;
    return ga_sim_fail(sim, st, "injected fault on device op #%" PRIu64 " (%s)", n, op);
}

/* Every device allocation (segment_alloc, map) passes here once its arguments
 * are valid, so attempts are numbered alike whether they succeed or not. */
static galloc_status_t charge(sim_t *sim, const char *what, uint64_t bytes)
{
    char h1[32], h2[32], h3[32];
    uint64_t n = ++sim->alloc_calls;
    if (n == sim->fail_nth || (sim->fail_from != 0 && n >= sim->fail_from) ||
        (sim->fail_above != 0 && bytes > sim->fail_above)) {
        sim->faults_injected++;
        return ga_sim_fail(sim, GALLOC_E_OOM, "injected fault on device allocation #%" PRIu64 " (%s of %s)", n, what,
                           human(h1, sizeof(h1), bytes));
    }
    uint64_t avail = sim->capacity - sim->seg_bytes - sim->mapped_bytes;
    if (bytes > avail)
        return ga_sim_fail(sim, GALLOC_E_OOM, "out of memory: %s requested, %s free (device %d, %s total)",
                           human(h1, sizeof(h1), bytes), human(h2, sizeof(h2), avail), sim->device,
                           human(h3, sizeof(h3), sim->capacity));
    return GALLOC_OK;
}

/* Index of the first entry of sim->used whose base is >= addr. */
static size_t used_at(const sim_t *sim, uintptr_t addr)
{
    size_t lo = 0, hi = sim->n_used;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (sim->used[mid].base < addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Whether [addr, addr + span) is free of used ranges (and not address 0). */
static bool range_free(const sim_t *sim, uintptr_t addr, uint64_t span)
{
    if (addr == 0 || span > UINTPTR_MAX - addr)
        return false;
    size_t i = used_at(sim, addr);
    if (i < sim->n_used && sim->used[i].base < addr + span)
        return false;
    return i == 0 || sim->used[i - 1].base + sim->used[i - 1].span <= addr;
}

/* Descending placement: the highest granularity-aligned hole of span bytes
 * in the window, scanning the holes between used ranges from the top (first
 * fit from the top), so a freed range is reused before lower memory is taken.
 * Returns 0 when no hole fits. */
static uintptr_t place_descending(const sim_t *sim, uint64_t span)
{
    uint64_t top = sim->va_end;
    for (size_t i = sim->n_used + 1; i-- > 0;) {
        uint64_t bottom = sim->va_base;
        if (i > 0) {
            const range_t *u = &sim->used[i - 1];
            bottom = u->base + u->span > bottom ? u->base + u->span : bottom;
        }
        if (top > bottom && top - bottom >= span) {
            uint64_t a = (top - span) & ~(GRAN - 1);
            if (a >= bottom)
                return (uintptr_t)a;
        }
        if (i > 0 && sim->used[i - 1].base < top)
            top = sim->used[i - 1].base;
    }
    return 0;
}

/* A granularity-aligned address range of span bytes (a multiple of GRAN):
 * placed by sim_placement, or in backed mode an mmap trimmed to alignment.
 * seg: a segment_alloc's bytes (0 for a reservation). Either takes the
 * recorded address when one is set: a segment its bytes rounded to 512, a
 * reservation its whole span at a granularity-aligned address (map and
 * unmap work in whole pages from the reservation's base). */
static galloc_status_t range_get(sim_t *sim, uint64_t span, uint64_t seg, int prot, uintptr_t *addr)
{
    char h1[32], h2[32];
    if (!sim->backed) {
        range_t *t = ga_grow(sim->used, &sim->used_cap, sim->n_used, sizeof(range_t), 16);
        if (t == NULL)
            return ga_sim_fail(sim, GALLOC_E_NOMEM, "address table: cannot grow past %zu entries", sim->used_cap);
        sim->used = t;
        uintptr_t a = 0;
        uint64_t take = span;
        if (sim->placement == PLACE_RECORDED && sim->place_next != 0) {
            /* a real device's segment may sit closer than a page to the next
             * one: the recorded range is what the driver held */
            uint64_t exact = seg != 0 ? (seg + 511) & ~(uint64_t)511 : span;
            if ((seg != 0 || sim->place_next % GRAN == 0) && range_free(sim, sim->place_next, exact)) {
                a = sim->place_next;
                take = exact;
            }
            sim->place_next = 0; /* one allocation per address */
        }
        if (a == 0 && sim->placement != PLACE_RISING)
            a = place_descending(sim, span);
        if (a == 0 && sim->placement == PLACE_RISING) {
            if (span > sim->va_end - sim->va_next)
                return ga_sim_fail(sim, GALLOC_E_OOM, "simulated address space exhausted: %s requested, %s left",
                                   human(h1, sizeof(h1), span), human(h2, sizeof(h2), sim->va_end - sim->va_next));
            a = (uintptr_t)sim->va_next;
            sim->va_next += span;
        }
        if (a == 0)
            return ga_sim_fail(sim, GALLOC_E_OOM, "simulated address space exhausted: no free range of %s",
                               human(h1, sizeof(h1), span));
        size_t i = used_at(sim, a);
        memmove(&sim->used[i + 1], &sim->used[i], (sim->n_used - i) * sizeof(range_t));
        sim->used[i] = (range_t){.base = a, .span = take};
        sim->n_used++;
        *addr = a;
        return GALLOC_OK;
    }
    char *p = mmap(NULL, span + GRAN, prot, MAP_FLAGS, -1, 0);
    if (p == MAP_FAILED)
        return os_fail(sim, GALLOC_E_OOM, "mmap", span);
    uintptr_t a = ((uintptr_t)p + GRAN - 1) & ~(uintptr_t)(GRAN - 1);
    size_t head = a - (uintptr_t)p;
    if (head != 0)
        munmap(p, head);
    munmap((char *)a + span, GRAN - head);
    *addr = a;
    return GALLOC_OK;
}

static galloc_status_t range_put(sim_t *sim, uintptr_t addr, uint64_t span)
{
    if (sim->backed && munmap((void *)addr, span) != 0)
        return os_fail(sim, GALLOC_E_DEVICE, "munmap", span);
    if (!sim->backed) { /* the range may be placed again (not by rising: va_next only grows) */
        size_t i = used_at(sim, addr);
        if (i < sim->n_used && sim->used[i].base == addr) {
            memmove(&sim->used[i], &sim->used[i + 1], (sim->n_used - i - 1) * sizeof(range_t));
            sim->n_used--;
        }
    }
    return GALLOC_OK;
}

/* ---- Required members. ---- */

#define ARG_HAS(a, f) (offsetof(galloc_backend_args_t, f) + sizeof((a)->f) <= (a)->struct_size)
/* snprintf(NULL, 0, ...) is valid, so a caller without a buffer is fine */
#define OPEN_FAIL(st, ...) return (snprintf(err, err ? errlen : 0, __VA_ARGS__), (st))

/* What sim reads from its options (the keys are listed in sim.h). */
typedef struct sim_opts {
    uint64_t capacity;                        /* sim_capacity: bytes, <= INT64_MAX */
    bool backed;                              /* sim_backed */
    bool manual_events;                       /* sim_manual_events */
    uint64_t fail_nth, fail_from, fail_above; /* sim_fail_*: 0 = off */
    uint64_t fail_op_nth, fail_op_from;       /* sim_fail_op_*: 0 = off */
    char placement[GA_CONF_PATH_MAX];         /* sim_placement: rising, descending or recorded */
} sim_opts_t;

#define OPT(f) offsetof(sim_opts_t, f)
static const ga_conf_key_t sim_keys[] = {
    {"sim_capacity", GA_CONF_SIZE, OPT(capacity), 1, INT64_MAX,
     "a size from 1 to 9223372036854775807 bytes: bytes, or a number with unit " GA_CONF_SIZE_UNITS, 0},
    {"sim_backed", GA_CONF_BOOL, OPT(backed), 0, 0, NULL, 0},
    {"sim_manual_events", GA_CONF_BOOL, OPT(manual_events), 0, 0, NULL, 0},
    {"sim_fail_nth", GA_CONF_WHOLE, OPT(fail_nth), 0, UINT64_MAX, "a whole number (0 = off)", 0},
    {"sim_fail_from", GA_CONF_WHOLE, OPT(fail_from), 0, UINT64_MAX, "a whole number (0 = off)", 0},
    {"sim_fail_above", GA_CONF_SIZE, OPT(fail_above), 0, UINT64_MAX,
     "a size (0 = off): bytes, or a number with unit " GA_CONF_SIZE_UNITS, 0},
    {"sim_fail_op_nth", GA_CONF_WHOLE, OPT(fail_op_nth), 0, UINT64_MAX, "a whole number (0 = off)", 0},
    {"sim_fail_op_from", GA_CONF_WHOLE, OPT(fail_op_from), 0, UINT64_MAX, "a whole number (0 = off)", 0},
    {"sim_placement", GA_CONF_PATH, OPT(placement), 0, 0, NULL, 0},
};

static const char *const placement_names[] = {
    [PLACE_RISING] = "rising", [PLACE_DESCENDING] = "descending", [PLACE_RECORDED] = "recorded"};

static galloc_status_t sim_open(const galloc_backend_args_t *args, void **state, char *err, size_t errlen)
{
    if (args == NULL || state == NULL)
        OPEN_FAIL(GALLOC_E_INVAL, "args and state must not be NULL");
    if (!ARG_HAS(args, device))
        OPEN_FAIL(GALLOC_E_INVAL, "args->struct_size %" PRIu32 " is too small", args->struct_size);
    if (args->device < 0)
        OPEN_FAIL(GALLOC_E_INVAL, "device index %d is negative", args->device);
    /* each index owns an address window, and only so many fit below INT64_MAX */
    if (args->device >= GA_SIM_MAX_DEVICES)
        OPEN_FAIL(GALLOC_E_INVAL, "device index %d is out of range (sim has devices 0 to %d)", args->device,
                  GA_SIM_MAX_DEVICES - 1);
    sim_opts_t o = {.capacity = GA_SIM_DEFAULT_CAPACITY}; /* the table keeps it in [1, INT64_MAX] */
    if (ARG_HAS(args, options)) {
        galloc_status_t st =
            ga_conf_options_parse(args->options, sim_keys, sizeof(sim_keys) / sizeof(sim_keys[0]), &o, err, errlen);
        if (st != GALLOC_OK)
            return st;
    }
    int placement = -1;
    for (int i = 0; i < 3; i++)
        if (o.placement[0] == '\0' ? i == PLACE_RISING : strcmp(o.placement, placement_names[i]) == 0)
            placement = i;
    if (placement < 0)
        OPEN_FAIL(GALLOC_E_CONFIG, "sim_placement: '%s' is not one of rising, descending, recorded", o.placement);
    sim_t *sim = malloc(sizeof(*sim));
    if (sim == NULL)
        OPEN_FAIL(GALLOC_E_NOMEM, "cannot allocate the simulator state");
    /* Disjoint windows per device: two devices' allocators must never hand out
     * the same pointer, or a free on the wrong one would release a block of
     * the other instead of being refused as not owned. */
    uint64_t window = GA_SIM_VA_BASE + (uint64_t)args->device * GA_SIM_DEVICE_STRIDE;
    *sim = (sim_t){.magic = SIM_MAGIC,
                   .device = args->device,
                   .capacity = o.capacity,
                   .va_next = window,
                   .va_end = window + GA_SIM_DEVICE_STRIDE,
                   .va_base = window,
                   .placement = placement,
                   .backed = o.backed,
                   .manual_events = o.manual_events,
                   .fail_nth = o.fail_nth,
                   .fail_from = o.fail_from,
                   .fail_above = o.fail_above,
                   .op_fail_nth = o.fail_op_nth,
                   .op_fail_from = o.fail_op_from};
    ga_addrmap_init(&sim->segs, sizeof(seg_t));
    ga_addrmap_init(&sim->host, sizeof(host_t));
    ga_addrmap_init(&sim->reg, sizeof(host_t));
    *state = sim;
    return GALLOC_OK;
}

/* Frees whatever is still live without complaint: tests read ga_sim_counters
 * first to see leaks. */
static void sim_close(void *state)
{
    sim_t *sim = state;
    for (size_t i = 0; i < sim->segs.cap; i++) {
        const seg_t *seg = ga_addrmap_slot(&sim->segs, i);
        if (seg != NULL)
            range_put(sim, seg->addr, ROUND_GRAN(seg->bytes));
    }
    for (size_t i = 0; i < sim->n_resv; i++) {
        range_put(sim, sim->resv[i].base, sim->resv[i].bytes);
        free(sim->resv[i].map);
    }
    ga_addrmap_destroy(&sim->segs);
    ga_sim_host_close(sim);
    free(sim->used);
    free(sim->resv);
    free(sim->ev);
    free(sim);
}

static galloc_status_t sim_segment_alloc(void *state, size_t bytes, galloc_stream_t s, uintptr_t *addr)
{
    sim_t *sim = state;
    (void)s; /* every stream sees all memory */
    if (addr == NULL || bytes == 0)
        return ga_sim_fail(sim, GALLOC_E_INVAL, "segment_alloc(%zu bytes): %s", bytes,
                           addr == NULL ? "addr is NULL" : "zero-byte segment");
    galloc_status_t st = ga_sim_op_fault(sim, "segment_alloc", GALLOC_E_OOM);
    if (st == GALLOC_OK)
        st = charge(sim, "segment_alloc", bytes);
    /* Room in the table before the range is taken, so a failed growth leaves the device untouched. */
    if (st == GALLOC_OK && ga_addrmap_reserve(&sim->segs, 1) != GALLOC_OK)
        st = ga_sim_fail(sim, GALLOC_E_NOMEM, "segment table: cannot grow past %zu entries", sim->segs.cap / 2);
    uintptr_t a = 0;
    if (st == GALLOC_OK)
        st = range_get(sim, ROUND_GRAN(bytes), bytes, PROT_READ | PROT_WRITE, &a); /* bytes <= capacity: no wrap */
    if (st != GALLOC_OK)
        return st;
    *(seg_t *)ga_addrmap_insert(&sim->segs, a) = (seg_t){.addr = a, .bytes = bytes};
    sim->seg_bytes += bytes;
    *addr = a;
    return GALLOC_OK;
}

static galloc_status_t sim_segment_free(void *state, uintptr_t addr, size_t bytes, galloc_stream_t s)
{
    sim_t *sim = state;
    (void)s;
    seg_t *seg = ga_addrmap_find(&sim->segs, addr);
    if (seg == NULL)
        return ga_sim_fail(sim, GALLOC_E_INVAL, "segment_free(0x%" PRIxPTR ", %zu): not a live segment", addr, bytes);
    if (seg->bytes != bytes)
        return ga_sim_fail(sim, GALLOC_E_INVAL, "segment_free(0x%" PRIxPTR ", %zu): the segment is %zu bytes", addr,
                           bytes, seg->bytes);
    galloc_status_t st = ga_sim_op_fault(sim, "segment_free", GALLOC_E_DEVICE);
    if (st == GALLOC_OK)
        st = range_put(sim, addr, ROUND_GRAN(bytes));
    if (st != GALLOC_OK)
        return st;
    ga_addrmap_remove(&sim->segs, seg);
    sim->seg_bytes -= bytes;
    return GALLOC_OK;
}

static galloc_status_t sim_mem_info(void *state, size_t *free_bytes, size_t *total_bytes)
{
    sim_t *sim = state;
    if (free_bytes == NULL || total_bytes == NULL)
        return ga_sim_fail(sim, GALLOC_E_INVAL, "mem_info: NULL output");
    *free_bytes = sim->capacity - sim->seg_bytes - sim->mapped_bytes;
    *total_bytes = sim->capacity;
    return GALLOC_OK;
}

/* ---- Virtual memory. ---- */

static galloc_status_t sim_granularity(void *state, size_t *bytes)
{
    if (bytes == NULL)
        return ga_sim_fail(state, GALLOC_E_INVAL, "granularity: NULL output");
    *bytes = GRAN;
    return GALLOC_OK;
}

/* The reservation holding addr, or NULL. A linear scan: reservations are few
 * (expandable segments reserve one range per stream) and map / unmap are device
 * calls, not the allocator's hot path. */
resv_t *ga_sim_resv_find(sim_t *sim, uintptr_t addr)
{
    for (size_t i = 0; i < sim->n_resv; i++)
        if (addr - sim->resv[i].base < sim->resv[i].bytes) /* wraps high when addr < base */
            return &sim->resv[i];
    return NULL;
}

static galloc_status_t sim_va_reserve(void *state, size_t bytes, uintptr_t *addr)
{
    sim_t *sim = state;
    char h[32];
    if (addr == NULL || bytes == 0)
        return ga_sim_fail(sim, GALLOC_E_INVAL, "va_reserve(%zu bytes): %s", bytes,
                           addr == NULL ? "addr is NULL" : "empty range");
    if (bytes > GA_SIM_MAX_RESERVATION)
        return ga_sim_fail(sim, GALLOC_E_OOM, "va_reserve: %s exceeds the simulated limit of 128.00 TiB per range",
                           human(h, sizeof(h), bytes));
    galloc_status_t st = ga_sim_op_fault(sim, "va_reserve", GALLOC_E_OOM);
    if (st != GALLOC_OK)
        return st;
    uint64_t span = ROUND_GRAN(bytes);
    size_t pages = span / GRAN;
    resv_t *t = ga_grow(sim->resv, &sim->resv_cap, sim->n_resv, sizeof(resv_t), 16);
    if (t == NULL)
        return ga_sim_fail(sim, GALLOC_E_NOMEM, "reservation table: cannot grow past %zu entries", sim->resv_cap);
    sim->resv = t;
    uint64_t *map = calloc((pages + 63) / 64, sizeof(uint64_t));
    if (map == NULL)
        return ga_sim_fail(sim, GALLOC_E_NOMEM, "va_reserve: cannot allocate the page bitmap of %zu pages", pages);
    uintptr_t base;
    st = range_get(sim, span, 0, PROT_NONE, &base);
    if (st != GALLOC_OK) {
        free(map);
        return st;
    }
    sim->resv[sim->n_resv++] = (resv_t){.base = base, .bytes = span, .mapped_pages = 0, .map = map};
    *addr = base;
    return GALLOC_OK;
}

static galloc_status_t sim_va_release(void *state, uintptr_t addr, size_t bytes)
{
    sim_t *sim = state;
    resv_t *r = ga_sim_resv_find(sim, addr);
    if (r == NULL || r->base != addr || bytes == 0 || bytes > r->bytes || ROUND_GRAN(bytes) != r->bytes)
        return ga_sim_fail(sim, GALLOC_E_INVAL, "va_release(0x%" PRIxPTR ", %zu): not a reserved range of that size",
                           addr, bytes);
    if (r->mapped_pages != 0)
        return ga_sim_fail(sim, GALLOC_E_INVAL, "va_release(0x%" PRIxPTR ", %zu): %zu pages are still mapped", addr,
                           bytes, r->mapped_pages);
    galloc_status_t st = ga_sim_op_fault(sim, "va_release", GALLOC_E_DEVICE);
    if (st == GALLOC_OK)
        st = range_put(sim, r->base, r->bytes);
    if (st != GALLOC_OK)
        return st;
    free(r->map);
    *r = sim->resv[--sim->n_resv]; /* order does not matter: move the last entry into the hole */
    return GALLOC_OK;
}

/* map (on) or unmap (off) whole pages of one reservation. Pages are tracked one
 * by one, so any run of mapped pages may be unmapped, including part of what
 * one map call mapped (a driver backend matches this with one handle per page). */
static galloc_status_t remap(sim_t *sim, const char *op, uintptr_t addr, size_t bytes, bool on)
{
    if (bytes == 0 || addr % GRAN != 0 || bytes % GRAN != 0)
        return ga_sim_fail(sim, GALLOC_E_INVAL,
                           "%s(0x%" PRIxPTR ", %zu): address and size must be non-zero multiples of %s", op, addr,
                           bytes, "the 2 MiB granularity");
    resv_t *r = ga_sim_resv_find(sim, addr);
    if (r == NULL || bytes > r->bytes - (addr - r->base))
        return ga_sim_fail(sim, GALLOC_E_INVAL, "%s(0x%" PRIxPTR ", %zu): not inside one reserved range", op, addr,
                           bytes);
    size_t first = (addr - r->base) / GRAN, n = bytes / GRAN, mapped = 0;
    for (size_t p = first; p < first + n; p++)
        mapped += (size_t)(r->map[p / 64] >> (p % 64)) & 1u;
    if (mapped != (on ? 0 : n))
        return ga_sim_fail(sim, GALLOC_E_INVAL, "%s(0x%" PRIxPTR ", %zu): %zu of its %zu pages are mapped", op, addr,
                           bytes, mapped, n);
    galloc_status_t st = ga_sim_op_fault(sim, op, on ? GALLOC_E_OOM : GALLOC_E_DEVICE);
    if (st == GALLOC_OK && on)
        st = charge(sim, "map", bytes);
    if (st != GALLOC_OK)
        return st;
    if (sim->backed && on && mprotect((void *)addr, bytes, PROT_READ | PROT_WRITE) != 0)
        return os_fail(sim, GALLOC_E_OOM, "mprotect", bytes);
    /* unmap drops the host pages first: if that fails the range is still mapped and intact */
    if (sim->backed && !on &&
        (madvise((void *)addr, bytes, MADV_DONTNEED) != 0 || mprotect((void *)addr, bytes, PROT_NONE) != 0))
        return os_fail(sim, GALLOC_E_DEVICE, "madvise/mprotect", bytes);
    for (size_t p = first; p < first + n; p++)
        r->map[p / 64] ^= (uint64_t)1 << (p % 64); /* all were unmapped, or all mapped: each page flips */
    r->mapped_pages = on ? r->mapped_pages + n : r->mapped_pages - n;
    sim->mapped_bytes = on ? sim->mapped_bytes + bytes : sim->mapped_bytes - bytes;
    return GALLOC_OK;
}

static galloc_status_t sim_map(void *state, uintptr_t addr, size_t bytes)
{
    return remap(state, "map", addr, bytes, true);
}

static galloc_status_t sim_unmap(void *state, uintptr_t addr, size_t bytes)
{
    return remap(state, "unmap", addr, bytes, false);
}

static void sim_error_string(void *state, char *buf, size_t len)
{
    const sim_t *sim = state;
    if (buf != NULL && len > 0)
        snprintf(buf, len, "%s", sim->msg);
}

const galloc_backend_ops_t ga_backend_sim = {
    .struct_size = sizeof(galloc_backend_ops_t),
    .version = GALLOC_BACKEND_OPS_V1,
    .name = "sim",
    .open = sim_open,
    .close = sim_close,
    .segment_alloc = sim_segment_alloc,
    .segment_free = sim_segment_free,
    .mem_info = sim_mem_info,
    .granularity = sim_granularity,
    .va_reserve = sim_va_reserve,
    .va_release = sim_va_release,
    .map = sim_map,
    .unmap = sim_unmap,
    .event_create = ga_sim_event_create,
    .event_destroy = ga_sim_event_destroy,
    .event_record = ga_sim_event_record,
    .event_query = ga_sim_event_query,
    .event_synchronize = ga_sim_event_synchronize,
    .error_string = sim_error_string,
    .stream_synchronize = ga_sim_stream_synchronize,
    .device_synchronize = ga_sim_device_synchronize,
    .host_alloc = ga_sim_host_alloc,
    .host_free = ga_sim_host_free,
    .copy_d2h = ga_sim_copy_d2h,
    .copy_h2d = ga_sim_copy_h2d,
    .place = ga_sim_place,
    .host_register = ga_sim_host_register,
    .host_unregister = ga_sim_host_unregister,
};

/* ---- Controls for tests and tools (sim.h). ---- */

galloc_status_t ga_sim_set_faults(void *state, uint64_t fail_nth, uint64_t fail_from, uint64_t fail_above)
{
    sim_t *sim = ga_sim_of(state);
    if (sim == NULL)
        return GALLOC_E_INVAL;
    sim->fail_nth = fail_nth;
    sim->fail_from = fail_from;
    sim->fail_above = fail_above;
    return GALLOC_OK;
}

galloc_status_t ga_sim_set_op_faults(void *state, uint64_t nth, uint64_t from)
{
    sim_t *sim = ga_sim_of(state);
    if (sim == NULL)
        return GALLOC_E_INVAL;
    sim->op_fail_nth = nth;
    sim->op_fail_from = from;
    return GALLOC_OK;
}

galloc_status_t ga_sim_counters(void *state, ga_sim_counters_t *out)
{
    sim_t *sim = ga_sim_of(state);
    if (sim == NULL || out == NULL)
        return GALLOC_E_INVAL;
    *out = (ga_sim_counters_t){.alloc_calls = sim->alloc_calls,
                               .faults_injected = sim->faults_injected,
                               .live_segments = ga_addrmap_count(&sim->segs),
                               .live_mapped_bytes = sim->mapped_bytes,
                               .used_bytes = sim->seg_bytes + sim->mapped_bytes,
                               .violations = sim->violations,
                               .live_reservations = sim->n_resv,
                               .live_events = sim->live_events,
                               .sync_calls = sim->sync_calls,
                               .query_calls = sim->query_calls,
                               .op_calls = sim->op_calls,
                               .live_host_allocs = ga_addrmap_count(&sim->host),
                               .live_host_bytes = sim->host_bytes,
                               .live_host_registered = ga_addrmap_count(&sim->reg),
                               .live_registered_bytes = sim->reg_bytes};
    return GALLOC_OK;
}

galloc_status_t ga_sim_place(void *state, uintptr_t addr)
{
    sim_t *sim = ga_sim_of(state);
    if (sim == NULL || sim->placement != PLACE_RECORDED || sim->backed)
        return sim == NULL ? GALLOC_E_INVAL : GALLOC_E_UNSUPPORTED;
    sim->place_next = addr;
    return GALLOC_OK;
}
