/*
 * fake_gpu_int.h: the fake driver's state, shared by fake_gpu_core.c (init,
 * devices, contexts, counters, faults, leaks, control), fake_gpu_mem.c
 * (linear memory and the stream-ordered pool), fake_gpu_vmm.c (reservations,
 * handles, mappings), fake_gpu_sync.c (streams and events) and
 * fake_gpu_host.c (pinned host memory and copies), fake_gpu_ipc.c
 * (memfds, sharing between processes) and fake_gpu_graph.c (stream capture
 * into graphs).
 *
 * Locking: `fg_lock` guards all of `fg`; every fg_* entry point takes it and
 * every fgi_* helper expects it held. The current context is per thread.
 * Tables are small arrays searched linearly: the fake favours obviously
 * correct over fast, and tests keep a few hundred resources at most.
 */
#ifndef GA_TESTS_FAKE_GPU_INT_H
#define GA_TESTS_FAKE_GPU_INT_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* mremap, MAP_ANONYMOUS, MAP_NORESERVE */
#endif
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "tests/fake_cuda/fake_gpu.h"

#define FG_MAGIC_CTX 0x43545846u    /* "FXTC" */
#define FG_MAGIC_STREAM 0x4d525453u /* "STRM" */
#define FG_MAGIC_EVENT 0x544e5645u  /* "EVNT" */
#define FG_MAGIC_NODE 0x45444f4eu   /* "NODE" */
#define FG_MAX_RULES 16
#define FG_MAX_COUNTERS 96
#define FG_TRACE_MAX 65536

/* A stream capture and the graph it builds (fake_gpu_graph.c): alive, with
 * its nodes, until reset, as a graph outlives its capture. */
typedef struct fg_capture {
    uint64_t id;              /* nonzero, unique since the reset */
    int status;               /* FG_CAPTURE_ACTIVE, FG_CAPTURE_INVALIDATED, or FGI_CAPTURE_ENDED */
    struct fg_stream *origin; /* the stream that began it (NULL once ended) */
} fg_capture_t;

/* The capture is over: no stream takes part in it any more (internal status). */
#define FGI_CAPTURE_ENDED 3

/* A node of a capture graph: a kernel launched during the capture. */
typedef struct fg_node {
    uint32_t magic;        /* FG_MAGIC_NODE */
    fg_capture_t *graph;   /* the capture whose graph holds it */
    struct fg_node **deps; /* the nodes it depends on (the frontier at its launch) */
    size_t n_deps;
} fg_node_t;

typedef struct fg_stream {
    uint32_t magic;        /* FG_MAGIC_STREAM while live */
    int device;            /* owning device */
    uint64_t submitted;    /* work items queued (events recorded, frees) */
    uint64_t completed;    /* of those, finished */
    fg_capture_t *capture; /* the capture it takes part in (origin or joined), NULL if none */
    fg_node_t **frontier;  /* while capturing: what its next node would depend on */
    size_t n_frontier, cap_frontier;
} fg_stream_t;

typedef struct fg_event {
    uint32_t magic;      /* FG_MAGIC_EVENT while live */
    int device;          /* context it was created in */
    bool timing;         /* created without DISABLE_TIMING */
    fg_stream_t *stream; /* last record's stream, NULL if never recorded (complete) */
    uint64_t seq;        /* its position on that stream */
    bool captured;       /* last recorded on a capturing stream: query and synchronize are refused */
} fg_event_t;

typedef struct fg_pool {
    int device;         /* the device whose default pool it is */
    uint64_t threshold; /* release threshold */
    uint64_t reserved, reserved_high;
    uint64_t used, used_high;
    uint64_t reuse[3]; /* the reuse flags, default 1 */
} fg_pool_t;

typedef struct fg_ctx {
    uint32_t magic; /* FG_MAGIC_CTX */
    int device;
} fg_ctx_t;

typedef struct fg_device {
    fg_ctx_t ctx;        /* the primary context: a stable address */
    int refs;            /* its references (retains minus releases), rt_held's included */
    bool rt_held;        /* a runtime API holds one reference for the process (fg_rt_*) */
    uint64_t capacity;   /* bytes */
    uint64_t used;       /* bytes charged: linear + pool chunks + handles */
    fg_stream_t stream0; /* the default stream */
    fg_pool_t pool;      /* the default stream-ordered pool */
} fg_device_t;

enum { FG_SEGMENT, FG_ASYNC_LIVE, FG_ASYNC_FREE };

/* A linear allocation or a pool chunk. */
typedef struct fg_alloc {
    uint64_t addr;  /* granularity aligned */
    size_t size;    /* requested bytes */
    size_t charged; /* bytes charged to the device (size rounded to the granularity) */
    void *map_base; /* the mmap behind it */
    size_t map_len;
    int fd; /* FG_SEGMENT: the memfd holding its pages (ipc_get names it); -1 for pool chunks */
    int device;
    int kind;                 /* FG_SEGMENT, FG_ASYNC_LIVE, FG_ASYNC_FREE */
    fg_stream_t *free_stream; /* FG_ASYNC_FREE: stream the free was queued on */
    uint64_t free_seq;        /* its position there */
} fg_alloc_t;

typedef struct fg_resv {
    uint64_t base; /* aligned start */
    size_t size;   /* as requested (a multiple of the granularity) */
    void *map_base;
    size_t map_len;
    int device;
} fg_resv_t;

typedef struct fg_handle {
    uint64_t id;     /* the handle value, never 0 */
    size_t size;     /* bytes */
    size_t charged;  /* bytes charged to device: size, or 0 for an import (the exporter's device pays) */
    int fd;          /* the memfd holding the memory, mapped by map */
    bool exportable; /* created with the POSIX file-descriptor type requested, or imported */
    int device;
    bool released; /* released while mapped: freed with its last mapping */
    int maps;      /* live mappings of it */
} fg_handle_t;

typedef struct fg_mapping {
    uint64_t addr;
    size_t size;
    uint64_t handle;
    int prot; /* the owning device's (the handle's), which the host mapping has; 0 until set_access */
    int dev_prot[FAKE_GPU_MAX_DEVICES]; /* each device's access (0, 1 read, 3 read-write), set_access per descriptor */
} fg_mapping_t;

/* A pinned host block. */
typedef struct fg_host {
    void *ptr;   /* what host_alloc returned (page aligned) */
    size_t size; /* requested bytes */
    size_t map_len;
    int device; /* the context it was allocated in */
} fg_host_t;

/* A registered range of the caller's host memory. */
typedef struct fg_reg {
    void *ptr;   /* its start, as host_register got it */
    size_t size; /* its bytes */
    int device;  /* the context it was registered in */
} fg_reg_t;

/* An ipc_open mapping of another process's linear allocation. */
typedef struct fg_ipc {
    uint64_t addr;  /* what ipc_open returned (granularity aligned) */
    size_t size;    /* the exporter's size */
    void *map_base; /* the mmap behind it */
    size_t map_len;
    int device;        /* the context it was opened in */
    int pid;           /* the exporter */
    uint64_t ino, dev; /* its memfd's identity: one open per handle */
} fg_ipc_t;

typedef struct fg_rule {
    char fn[64];        /* function name or "*" */
    uint64_t seen;      /* matching calls since the rule was set */
    uint64_t nth, from; /* 0 = off */
    int code;           /* vendor code to return */
} fg_rule_t;

typedef struct fg_counter {
    const char *fn; /* static string from the vendor layer */
    uint64_t n;
} fg_counter_t;

#define FG_ARRAY(type, name)                                                                                           \
    type *name;                                                                                                        \
    size_t n_##name, cap_##name

struct fg_state {
    bool initialized; /* init called since reset */
    bool manual;      /* streams complete only when told */
    int ndev;         /* devices */
    size_t gran;      /* granularity */
    fg_device_t dev[FAKE_GPU_MAX_DEVICES];
    FG_ARRAY(fg_alloc_t, allocs);
    FG_ARRAY(fg_resv_t, resvs);
    FG_ARRAY(fg_handle_t, handles);
    FG_ARRAY(fg_mapping_t, maps);
    FG_ARRAY(fg_event_t *, events);
    FG_ARRAY(fg_stream_t *, streams);
    FG_ARRAY(fg_host_t, hosts);
    FG_ARRAY(fg_reg_t, regs);
    FG_ARRAY(fg_ipc_t, ipcs);
    FG_ARRAY(fg_capture_t *, captures); /* every capture since the reset, ended ones too */
    FG_ARRAY(fg_node_t *, nodes);       /* every node of their graphs */
    uint64_t next_capture_id;
    uint64_t host_bytes, peak_host_bytes, copied_d2h, copied_h2d;
    uint64_t last_resv_size;            /* the size of the last successful va_reserve */
    uint64_t reg_bytes, peak_reg_bytes; /* registered bytes now, and their high-water */
    uint64_t next_handle;
    uint64_t calls, faults, violations, leaked_at_destroy, events_with_timing;
    fg_counter_t counters[FG_MAX_COUNTERS];
    size_t n_counters;
    fg_rule_t rules[FG_MAX_RULES];
    size_t n_rules;
    char trace[FG_TRACE_MAX];
    size_t trace_len;
    char violation[512];
    bool peer_blocked[FAKE_GPU_MAX_DEVICES]
                     [FAKE_GPU_MAX_DEVICES];                  /* [a][b]: a cannot reach b's memory (fg_peer_block) */
    bool peer_on[FAKE_GPU_MAX_DEVICES][FAKE_GPU_MAX_DEVICES]; /* [from][to]: from's context may access to's */
};

extern struct fg_state fg;
extern pthread_mutex_t fg_lock;
extern _Thread_local const char *fg_current_fn; /* the exported function being served */

#define FG_LOCK() pthread_mutex_lock(&fg_lock)
#define FG_UNLOCK() pthread_mutex_unlock(&fg_lock)
/* Run a locked helper and return its result. */
#define FG_LOCKED(expr)                                                                                                \
    do {                                                                                                               \
        FG_LOCK();                                                                                                     \
        fg_rc_t rc_ = (expr);                                                                                          \
        FG_UNLOCK();                                                                                                   \
        return rc_;                                                                                                    \
    } while (0)

/* Append to a dynamic array; false when host memory runs out. */
#define FG_PUSH(arr, value)                                                                                            \
    fgi_grow((void **)&fg.arr, &fg.cap_##arr, fg.n_##arr + 1, sizeof(*fg.arr)) &&                                      \
        ((fg.arr[fg.n_##arr++] = (value)), true)
#define FG_REMOVE(arr, i) (fg.arr[i] = fg.arr[--fg.n_##arr]) /* order does not matter */

bool fgi_grow(void **array, size_t *cap, size_t need, size_t elem);
/* A contract refusal: counted, message recorded with the function's name. */
fg_rc_t fgi_violation(fg_rc_t rc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* init done and a live context current: its device into *device. */
fg_rc_t fgi_need_ctx(int *device);
/* init done and device a valid ordinal. */
fg_rc_t fgi_need_device(int device);
/* An mmap of size bytes at granularity alignment (private or shared). */
bool fgi_map(size_t size, int prot, bool shared, void **base, size_t *len, uint64_t *aligned);
static inline size_t fgi_round(size_t n, size_t to)
{
    return (n + to - 1) / to * to;
}

/* fake_gpu_ipc.c: a new memfd of size bytes (zero) into *fd. */
bool fgi_memfd(size_t size, int *fd);
/* fgi_map's reservation with the first size bytes of fd mapped shared over
 * its aligned start, with prot. */
bool fgi_map_fd(int fd, size_t size, int prot, void **base, size_t *len, uint64_t *aligned);
/* fake_gpu_mem.c, fake_gpu_vmm.c: lookups for fake_gpu_ipc.c. */
fg_alloc_t *fgi_alloc_find(uint64_t addr);
fg_handle_t *fgi_handle_find(uint64_t id);
uint64_t fgi_ipc_release_all(int device);

/* fake_gpu_sync.c: resolve a stream handle for the current device (0 = default). */
fg_stream_t *fgi_stream(uintptr_t stream, int device);
void fgi_complete(fg_stream_t *s, uint64_t upto);
/* fake_gpu_mem.c: after a synchronization, release free chunks down to the threshold. */
void fgi_pool_settle(int device);
/* Free every resource of device (all devices if device < 0); returns how many
 * were live (pool free chunks are not counted: they are cache, not leaks). */
uint64_t fgi_mem_release_all(int device);
uint64_t fgi_vmm_release_all(int device);
uint64_t fgi_sync_release_all(int device);
uint64_t fgi_host_release_all(int device);
/* fake_gpu_graph.c: a stream destroyed leaves its capture (ending it if it
 * began it) and frees its frontier; release_all frees every capture graph
 * (at reset, before the streams). */
void fgi_graph_forget_stream(fg_stream_t *s);
void fgi_graph_release_all(void);
/* fake_gpu_graph.c: a synchronization on a capturing stream, which a real
 * driver refuses and which invalidates the capture: a violation. */
fg_rc_t fgi_graph_refuse_sync(fg_stream_t *s);

/* fake_gpu_peer.c: a context destroyed takes its peer access, both ways, with it. */
void fgi_peer_forget(int device);

#endif /* GA_TESTS_FAKE_GPU_INT_H */
