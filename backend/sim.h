/*
 * sim.h: controls of the simulated device ("sim" backend) for tests and tools.
 *
 * The sim backend itself is reached through its ops table (ga_backend_sim,
 * normally via the registry and backend/backend.h). This header adds what no
 * real device has: fault injection changed at run time, counters a test can
 * assert on, and manual completion of stream work for event tests and replay.
 *
 * Modes. Unbacked (the default) backs nothing: addresses come from device
 * index d's own window, [GA_SIM_VA_BASE + d * GA_SIM_DEVICE_STRIDE,
 * GA_SIM_VA_BASE + (d + 1) * GA_SIM_DEVICE_STRIDE), each segment or
 * reservation aligned to GA_SIM_GRANULARITY, placed deterministically (a replay
 * gets the same addresses on every run; an 80 GiB device costs a few KiB of
 * host memory) by the sim_placement option:
 *   rising (the default): a bump allocator from the window's start, never
 *     reused. Most library tests pin these addresses.
 *   descending: like the CUDA driver as real PyTorch snapshots show it: first
 *     fit from the top of the window over the holes between live ranges, so
 *     addresses mostly go down and a freed range is reused first. What it rests
 *     on: in real 2.1-2.6 snapshots only 160 of 583, 60 of 151 and 115 of 781
 *     successive segment_allocs went up in address, and freed ranges came back.
 *     PyTorch breaks best-fit ties between equal free blocks by address and
 *     empty_cache releases in address order, so this decides which segment is
 *     used and freed.
 *   recorded: as descending, except that a segment_alloc or va_reserve takes
 *     the address set by ga_sim_place (sim's place op: galloc_sim_place
 *     through the public API) when that range is free (a segment's size rounded to 512 bytes; a
 *     reservation's whole span, at a granularity-aligned address); a replay of
 *     a trace that recorded its device addresses (segment_alloc, and the
 *     first segment_map of an expandable segment, at its reservation's base)
 *     so reproduces them. Recorded addresses are
 *     the traced device's and need not lie in the window. The windows are disjoint, as device pointers are under
 * CUDA's unified addressing, so a pointer of one device is never a live block of
 * another by value and a free on the wrong device is refused, not obeyed.
 * Running out of the window (or asking va_reserve for more than
 * GA_SIM_MAX_RESERVATION) is GALLOC_E_OOM, as with a real driver.
 * Backed (sim_backed:True) hands out real host mmaps aligned the same
 * way, so tests can write through them; addresses are then the kernel's, and
 * live mappings never overlap, whichever device holds them. Both modes charge
 * the same bytes: a segment its requested size, a map its range. Device
 * indices run 0 .. GA_SIM_MAX_DEVICES - 1 in both modes.
 *
 * Contract checks. Like a strict driver, sim rejects with GALLOC_E_INVAL, and
 * counts as a violation, a segment_free of anything but a live segment of that
 * exact size, a map / unmap not in whole 2 MiB pages of one reservation, a map
 * over a mapped page, an unmap of an unmapped page, a va_release of anything but
 * a whole reservation or with pages still mapped, an unknown event handle, and
 * NULL outputs. Unmap may cover any run of mapped pages, including part of
 * what one map call mapped.
 *
 * Host memory and copies (sim_host.c): host_alloc is plain host memory,
 * counted in live_host_allocs / live_host_bytes; host_free must name a live
 * block with its size. host_register records a range of the caller's
 * memory (live_host_registered / live_registered_bytes; one overlapping a
 * live range is a violation), host_unregister must name a live range with
 * its size; neither touches the memory. copy_d2h / copy_h2d need their device range inside one
 * live segment or on mapped pages of one reservation (else a violation): in
 * backed mode they copy the bytes, in unbacked mode, which has no contents,
 * they copy nothing. device_synchronize finishes the work of every stream.
 *
 * Events. A handle names a slot and its generation, so a destroyed handle is
 * rejected. See ga_sim_set_manual_events for completion.
 *
 * Options (galloc_backend_args_t.options, read once at open): sim_capacity:SIZE
 * (the device's size, 1 byte to INT64_MAX, default GA_SIM_DEFAULT_CAPACITY),
 * sim_backed:True (backed mode), sim_manual_events:True (as
 * ga_sim_set_manual_events), sim_fail_nth:N, sim_fail_from:N and
 * sim_fail_above:SIZE (fault injection, as ga_sim_set_faults; 0 = off),
 * sim_fail_op_nth:N and sim_fail_op_from:N (as ga_sim_set_op_faults),
 * sim_placement:rising|descending|recorded (see Modes; unbacked only). Any
 * other key, or a bad value, fails open with GALLOC_E_CONFIG.
 *
 * Locking: none. The backend is entered under the owning allocator's lock;
 * these functions take no lock, so call them only when no other thread is
 * inside the backend (between allocator calls, on the thread that drives it).
 *
 * Every function takes the `state` that ops->open returned (ga_backend_t.state)
 * and returns GALLOC_E_INVAL if state is NULL or not a sim state.
 */
#ifndef GA_BACKEND_SIM_H
#define GA_BACKEND_SIM_H

#include <stdbool.h>
#include <stdint.h>

#include <galloc/galloc_backend.h>
#include <galloc/galloc_status.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The ops table; registered as "sim" through backends.def. */
extern const galloc_backend_ops_t ga_backend_sim;

/* The simulated device's page size: segments are aligned to it, va_reserve
 * rounds to it, map/unmap work in whole pages of it (CUDA's usual granularity). */
#define GA_SIM_GRANULARITY ((uint64_t)2 << 20)
/* Capacity without a sim_capacity option: an 80 GiB device. */
#define GA_SIM_DEFAULT_CAPACITY ((uint64_t)80 << 30)
/* Unbacked mode: the first address device 0 hands out. Addresses grow upward
 * from here and are never reused, so a replay gives the same addresses every
 * run. Device d starts GA_SIM_DEVICE_STRIDE * d higher. */
#define GA_SIM_VA_BASE ((uint64_t)0x7f0000000000)
/* Unbacked mode: each device's address window, 16 PiB: 128 of the largest
 * reservations, far more than any device's capacity needs. */
#define GA_SIM_DEVICE_STRIDE ((uint64_t)1 << 54)
/* Device indices sim accepts: 256 windows end below 2^62 + GA_SIM_VA_BASE, so
 * every address fits an int64_t (and 256 is well above GALLOC_DEVICE_MAX). */
#define GA_SIM_MAX_DEVICES 256
/* The largest va_reserve: the per-page bitmap of a reservation stays <= 8 MiB. */
#define GA_SIM_MAX_RESERVATION ((uint64_t)1 << 47)

/* What the simulated device has seen since open (ga_sim_counters). */
typedef struct ga_sim_counters {
    uint64_t alloc_calls;           /* device allocations (segment_alloc + map calls that passed argument checks),
                                   the numbering fail_nth / fail_from refer to */
    uint64_t faults_injected;       /* calls failed on purpose: allocations (fail_nth / fail_from / fail_above)
                                   and event waits or queries (ga_sim_set_event_faults) */
    uint64_t live_segments;         /* segments allocated and not yet freed */
    uint64_t live_mapped_bytes;     /* bytes currently mapped into reservations */
    uint64_t used_bytes;            /* charged to capacity: live segment bytes + live mapped bytes */
    uint64_t violations;            /* calls rejected with GALLOC_E_INVAL (caller broke the contract) */
    uint64_t live_reservations;     /* va_reserve ranges not yet released */
    uint64_t live_events;           /* events created and not yet destroyed */
    uint64_t sync_calls;            /* event_synchronize calls on live events, the numbering of sync faults */
    uint64_t query_calls;           /* event_query calls on live events, the numbering of query faults */
    uint64_t op_calls;              /* calls of the ops ga_sim_set_op_faults covers, its numbering */
    uint64_t live_host_allocs;      /* host_alloc blocks not yet freed */
    uint64_t live_host_bytes;       /* their bytes */
    uint64_t live_host_registered;  /* host_register ranges not yet unregistered */
    uint64_t live_registered_bytes; /* their bytes */
} ga_sim_counters_t;

/*
 * ga_sim_place: under sim_placement:recorded (unbacked), the address the next
 * segment_alloc or va_reserve takes if its range is free (0: none; a
 * reservation also needs a granularity-aligned address); used by one of them
 * at most, then cleared whether taken or not (an occupied range falls back to
 * descending placement). GALLOC_E_UNSUPPORTED under another placement. Also
 * sim's place op (galloc_backend_ops_t.place), which galloc_sim_place calls.
 */
galloc_status_t ga_sim_place(void *state, uintptr_t addr);

/*
 * ga_sim_set_faults: replace the fault-injection settings given at open
 * (0 = off). fail_nth and fail_from count device allocations from open, 1-based
 * (read ga_sim_counters' alloc_calls: the next call is alloc_calls + 1);
 * fail_above fails every allocation of more than that many bytes. An injected
 * fault returns GALLOC_E_OOM and changes nothing but the counters.
 */
galloc_status_t ga_sim_set_faults(void *state, uint64_t fail_nth, uint64_t fail_from, uint64_t fail_above);

/*
 * ga_sim_set_op_faults: fail the nth call (nth), or every call from the
 * from-th on (from), of any of the memory ops: segment_alloc, segment_free,
 * va_reserve, va_release, map, unmap, host_alloc, host_free, copy_d2h,
 * copy_h2d, device_synchronize, host_register and host_unregister, numbered
 * together from open, 1-based,
 * counting the calls whose arguments pass the contract checks (read
 * ga_sim_counters' op_calls: the next call is op_calls + 1); 0 = off. This
 * lets a sweep fault each device call of an operation in turn. An injected
 * fault changes nothing but the counters and returns what a driver would:
 * GALLOC_E_OOM for segment_alloc, va_reserve and map, GALLOC_E_NOMEM for
 * host_alloc and host_register, GALLOC_E_DEVICE for the others. Independent of
 * ga_sim_set_faults (which numbers allocations only).
 */
galloc_status_t ga_sim_set_op_faults(void *state, uint64_t nth, uint64_t from);

/*
 * ga_sim_set_event_faults: make event_synchronize (sync_*) or event_query
 * (query_*) fail, as a driver does when the device faulted (cudaEventSynchronize
 * reporting an earlier kernel's illegal address, say), 0 = off. Calls are
 * numbered from open, 1-based, counting only calls on live events (read
 * ga_sim_counters' sync_calls / query_calls: the next call is that + 1); *_nth
 * fails that one call, *_from every call from it on. An injected fault returns
 * GALLOC_E_DEVICE and changes nothing but the counters: the event stays
 * pending, no work of its stream completes.
 */
galloc_status_t ga_sim_set_event_faults(void *state, uint64_t sync_nth, uint64_t sync_from, uint64_t query_nth,
                                        uint64_t query_from);

/* ga_sim_counters: copy the counters into *out. Read them before close to see
 * leaks: close frees whatever is still live without complaint. */
galloc_status_t ga_sim_counters(void *state, ga_sim_counters_t *out);

/*
 * ga_sim_set_manual_events: off (the default), an event completes as soon as it
 * is recorded. On, a recorded event stays pending (event_query returns
 * GALLOC_E_NOT_READY) until ga_sim_stream_complete runs for its stream, or
 * event_synchronize waits for it: a wait finishes the stream's work up to that
 * record, so it also completes the events recorded before it on the same
 * stream. Re-recording an event makes it pending again. An event never
 * recorded is complete (as in CUDA). Turning manual mode off completes every
 * pending event.
 */
galloc_status_t ga_sim_set_manual_events(void *state, bool on);

/* ga_sim_stream_complete: finish the work queued on stream s so far: every
 * event recorded on s before this call completes. Events recorded later stay
 * pending. Allocates nothing. */
galloc_status_t ga_sim_stream_complete(void *state, galloc_stream_t s);

#ifdef __cplusplus
}
#endif
#endif /* GA_BACKEND_SIM_H */
