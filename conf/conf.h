/*
 * conf.h: the conf layer's interface. Parses PYTORCH_CUDA_ALLOC_CONF-style
 * strings ("key:value,key:value") into a ga_conf_t and formats it back.
 *
 * Pure: reads no environment and no globals, allocates nothing, so it can be
 * fuzzed; api/ reads the environment variables and passes their strings here.
 * Thread-safety: every function works only on its arguments.
 *
 * PyTorch reference: c10/cuda/CUDAAllocatorConfig.cpp (2.x) and
 * c10/core/AllocatorConfig.cpp (newest main); see
 * ../shared/reference/torch-allocator-spec-pool.md section 8.
 */
#ifndef GA_CONF_H
#define GA_CONF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <galloc/galloc_status.h>

#include "conf/options.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GA_CONF_DIVISION_INTERVALS 16 /* kRoundUpPowerOfTwoIntervals */
#define GA_CONF_NAME_MAX 32

/* backend: which allocator implementation serves the device. */
typedef enum ga_conf_backend {
    GA_CONF_BACKEND_NATIVE = 0, /* "native": the caching pool */
    GA_CONF_BACKEND_ASYNC = 1   /* "cudaMallocAsync" (also "hipMallocAsync") */
} ga_conf_backend_t;

/* Bits of ga_conf_t.set: which keys a parsed string named explicitly (the
 * normalized string lists only these, plus keys that differ from defaults). */
enum {
    GA_CONF_SET_BACKEND = 1u << 0,
    GA_CONF_SET_MAX_SPLIT = 1u << 1,
    GA_CONF_SET_MAX_NON_SPLIT_ROUNDING = 1u << 2,
    GA_CONF_SET_GC_THRESHOLD = 1u << 3,
    GA_CONF_SET_ROUNDUP = 1u << 4,
    GA_CONF_SET_EXPANDABLE = 1u << 5,
    GA_CONF_SET_RELEASE_LOCK = 1u << 6,
    GA_CONF_SET_PINNED_REGISTER = 1u << 7,
    GA_CONF_SET_PINNED_THREADS = 1u << 8,
    GA_CONF_SET_PINNED_BACKGROUND = 1u << 9,
    GA_CONF_SET_DEVICE_BACKEND = 1u << 10,
    GA_CONF_SET_SIM_CAPACITY = 1u << 11,
    GA_CONF_SET_SIM_BACKED = 1u << 12,
    GA_CONF_SET_SIM_FAULTS = 1u << 13,
    GA_CONF_SET_DRIVER_PATH = 1u << 14,
    GA_CONF_SET_LARGE_SEGMENT = 1u << 15,
    GA_CONF_SET_MEMORY_FRACTION = 1u << 16,
    GA_CONF_SET_SIM_MANUAL_EVENTS = 1u << 17,
    GA_CONF_SET_RETRY_POOL = 1u << 18
};

/* The effective settings. Defaults are PyTorch's (ga_conf_defaults). */
typedef struct ga_conf {
    /* PyTorch's keys. */
    ga_conf_backend_t backend;             /* backend: native | cudaMallocAsync */
    uint64_t max_split_size;               /* bytes; UINT64_MAX = unlimited (default) */
    uint64_t max_non_split_rounding_size;  /* bytes; default 20 MiB (kLargeBuffer) */
    double garbage_collection_threshold;   /* 0 = off (default); else in (0, 1) */
    uint32_t roundup_power2_divisions[GA_CONF_DIVISION_INTERVALS]; /* per interval, 0 = off */
    bool expandable_segments;              /* default false */
    bool release_lock_on_cudamalloc;       /* default false */
    bool pinned_use_cuda_host_register;    /* recorded; no pinned pool yet */
    uint32_t pinned_num_register_threads;  /* default 1 */
    bool pinned_use_background_threads;    /* recorded; no pinned pool yet */
    /* galloc's own keys. */
    char device_backend[GA_CONF_NAME_MAX]; /* device_backend: sim | cuda | hip | registered name; default "sim" */
    uint64_t sim_capacity;                 /* sim_capacity: bytes; default 80 GiB */
    bool sim_backed;                       /* sim_backed: real host memory behind sim segments */
    bool sim_manual_events;                /* sim_manual_events: events complete only when their stream is synchronized */
    uint64_t sim_fail_nth;                 /* sim_fail_nth: Nth device allocation fails (0 off) */
    uint64_t sim_fail_from;                /* sim_fail_from: every device allocation from the Nth fails */
    uint64_t sim_fail_above;               /* sim_fail_above: device allocations above this size fail */
    char driver_path[GA_CONF_PATH_MAX];    /* driver_path: library to dlopen ("" = vendor default) */
    uint32_t set;                          /* GA_CONF_SET_* bits of keys given explicitly */
    /* Newest PyTorch main's keys (c10/core/AllocatorConfig.h, c10/cuda/CUDAAllocatorConfig.h). */
    uint64_t large_segment_size;           /* large_segment_size_mb: bytes; default 20 MiB (kLargeBuffer): the
                                              segment for requests in (1 MiB, 10 MiB), the minimum of
                                              max_split_size and the default of max_non_split_rounding_size */
    double per_process_memory_fraction;    /* per_process_memory_fraction: [0, 1]; default 1.0 = no cap */
    bool retry_pool_after_sync;            /* retry_pool_after_sync (galloc's): after the OOM path's
                                              synchronize-and-flush, search the pool again before the last
                                              device allocation (pytorch/pytorch#189504); default false =
                                              PyTorch's released behaviour */
} ga_conf_t;

/* ga_conf_defaults: PyTorch's defaults plus galloc's (sim, 80 GiB). */
void ga_conf_defaults(ga_conf_t *c);

/*
 * ga_conf_parse: apply the string s (may be NULL or "") on top of *c, with
 * PyTorch's rule that every parse first resets max_split_size,
 * max_non_split_rounding_size, roundup_power2_divisions and
 * garbage_collection_threshold to their defaults while other keys keep their
 * values unless named. All or nothing: on error *c is untouched, the status is
 * GALLOC_E_CONFIG and err (errlen bytes) names the key, the offending value,
 * what is allowed and the byte offset. Never reads outside s.
 * As in newest PyTorch main, max_non_split_rounding_size resets to
 * large_segment_size (20 MiB unless large_segment_size_mb is given), which is
 * not itself reset. The set bits of the four reset keys are cleared too.
 * GALLOC_E_INVAL if c is NULL. err may be NULL.
 */
galloc_status_t ga_conf_parse(const char *s, ga_conf_t *c, char *err, size_t errlen);

/*
 * ga_conf_format: the normalized string of c (keys in a fixed order, values in
 * canonical spelling, e.g. "max_split_size_mb:512,expandable_segments:True"),
 * such that parsing it onto defaults gives back the same settings. Writes at
 * most len bytes including the NUL; returns the length the full string needs
 * (excluding the NUL), like snprintf.
 */
size_t ga_conf_format(const ga_conf_t *c, char *buf, size_t len);

/*
 * ga_conf_load: the effective settings from every source, lowest precedence
 * first: defaults, then the PyTorch variable (PyTorch reads only the first SET of
 * PYTORCH_ALLOC_CONF, PYTORCH_CUDA_ALLOC_CONF: pass their values, NULL when
 * unset), then GALLOC_CONF, then the string given at create time. Each layer
 * overrides only the keys it names (no PyTorch reset between layers). Any
 * argument may be NULL. All or nothing: on error *c is untouched and err names
 * the source ("GALLOC_CONF: ...", "PYTORCH_ALLOC_CONF: ...",
 * "PYTORCH_CUDA_ALLOC_CONF: ...", "create string: ...") as well as key, value
 * and offset. GALLOC_E_INVAL if c is NULL. Note: the newest PyTorch main read
 * tries PYTORCH_CUDA_ALLOC_CONF before PYTORCH_ALLOC_CONF (see conf/load.c).
 */
galloc_status_t ga_conf_load(ga_conf_t *c, const char *create_str, const char *galloc_conf,
                             const char *pytorch_alloc_conf, const char *pytorch_cuda_alloc_conf, char *err,
                             size_t errlen);

/* ga_conf_roundup_divisions: the divisions that apply to a request of `size`
 * bytes (PyTorch's roundup_power2_divisions(size): interval floor(log2(size)) - 20
 * clamped to [0, 15]). */
uint32_t ga_conf_roundup_divisions(const ga_conf_t *c, size_t size);

#ifdef __cplusplus
}
#endif
#endif /* GA_CONF_H */
