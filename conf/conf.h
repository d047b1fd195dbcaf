/*
 * conf.h: the conf layer's interface. Parses PYTORCH_CUDA_ALLOC_CONF-style
 * strings ("key:value,key:value") into a ga_conf_t and formats it back.
 *
 * The grammar claims the allocator's keys (PyTorch's and galloc's allocator
 * keys). An item whose key it does not know belongs to the device backend:
 * it is kept as written in backend_options, which the backend receives as
 * galloc_backend_args_t.options and reads itself (options.h), refusing what
 * it does not take. As in newest PyTorch main, where a device's own config
 * parser reads the keys the accelerator-wide one leaves.
 *
 * Pure: reads no environment and no globals, allocates nothing, so it can be
 * fuzzed; front/ reads the environment variables and passes their strings here.
 * Thread-safety: every function works only on its arguments.
 *
 * PyTorch reference: c10/cuda/CUDAAllocatorConfig.cpp (2.x) and
 * c10/core/AllocatorConfig.cpp (newest main): the keys, how values are read
 * (std::stoull / std::stod) and the wording of refusals.
 */
#ifndef GA_CONF_H
#define GA_CONF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <galloc/galloc_backend.h>
#include <galloc/galloc_status.h>

#include "conf/options.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GA_CONF_DIVISION_INTERVALS 16 /* kRoundUpPowerOfTwoIntervals */
#define GA_CONF_NAME_MAX 32
#define GA_CONF_OPTION_ITEMS 32 /* backend option items a ga_conf_t keeps */

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
    GA_CONF_SET_LARGE_SEGMENT = 1u << 15,
    GA_CONF_SET_MEMORY_FRACTION = 1u << 16,
    GA_CONF_SET_RETRY_POOL = 1u << 18,
    GA_CONF_SET_CAPTURE_REUSE = 1u << 19,
    GA_CONF_SET_THROW_ON_OOM = 1u << 20,
    GA_CONF_SET_ES_RESERVE = 1u << 21,
    GA_CONF_SET_ES_RESERVE_BY_CLASS = 1u << 22,
    GA_CONF_SET_PINNED_RESERVE = 1u << 24,
    GA_CONF_SET_PINNED_ROUND_THRESHOLD = 1u << 25,
    GA_CONF_SET_PINNED_MAX_CACHED = 1u << 26
};

/* One expandable-segment reserve value, PyTorch's ExpandableSegmentReserveSpec
 * (c10/cuda/CUDAAllocatorConfig.h): "0.5" is a fraction of the device's total
 * memory, "40G" (or "40g") 40 GiB. ga_conf_reserve_bytes resolves it. */
typedef struct ga_conf_reserve {
    bool gib;     /* the value is in GiB ('G' suffix); else a fraction of device memory */
    double value; /* > 0 and finite, as written */
} ga_conf_reserve_t;

#define GA_CONF_RESERVE_CLASSES 8 /* classes expandable_segments_reserve_by_class may list */

/* One entry of expandable_segments_reserve_by_class: a stream reserve class
 * (galloc_set_expandable_reserve_class) and its reserve. */
typedef struct ga_conf_reserve_class {
    char name[GA_CONF_NAME_MAX]; /* 1 to 31 bytes, NUL-terminated */
    ga_conf_reserve_t reserve;   /* its reserve */
} ga_conf_reserve_class_t;

/* Where one item of ga_conf_t.backend_options was written, so that a
 * backend's message about it can point into that string. */
typedef struct ga_conf_origin {
    const char *source; /* the string's name as ga_conf_load gives it ("create string", "GALLOC_CONF",
                           ...; static); NULL: the string given to ga_conf_parse */
    uint32_t off;       /* the item's first byte in backend_options */
    uint32_t len;       /* its length there: as written, from its key to the end of its value */
    uint32_t src_off;   /* its first byte in the string it was written in */
} ga_conf_origin_t;

/* The effective settings. Defaults are PyTorch's (ga_conf_defaults). */
typedef struct ga_conf {
    /* PyTorch's keys. */
    ga_conf_backend_t backend;                                     /* backend: native | cudaMallocAsync */
    uint64_t max_split_size;                                       /* bytes; UINT64_MAX = unlimited (default) */
    uint64_t max_non_split_rounding_size;                          /* bytes; default 20 MiB (kLargeBuffer) */
    double garbage_collection_threshold;                           /* 0 = off (default); else in (0, 1) */
    uint32_t roundup_power2_divisions[GA_CONF_DIVISION_INTERVALS]; /* per interval, 0 = off */
    bool expandable_segments;                                      /* default false */
    bool release_lock_on_cudamalloc;                               /* default false */
    bool pinned_use_cuda_host_register;                            /* host cache: malloc + register (host/) */
    uint32_t pinned_num_register_threads;                          /* default 1 */
    bool pinned_use_background_threads;                            /* recorded; galloc runs no background thread */
    /* galloc's own keys. */
    char device_backend[GA_CONF_NAME_MAX]; /* device_backend: sim | cuda | hip | registered name; default "sim" */
    uint32_t set;                          /* GA_CONF_SET_* bits of keys given explicitly */
    /* Newest PyTorch main's keys (c10/core/AllocatorConfig.h, c10/cuda/CUDAAllocatorConfig.h). */
    uint64_t large_segment_size;            /* large_segment_size_mb: bytes; default 20 MiB (kLargeBuffer): the
                                              segment for requests in (1 MiB, 10 MiB), the minimum of
                                              max_split_size and the default of max_non_split_rounding_size */
    double per_process_memory_fraction;     /* per_process_memory_fraction: [0, 1]; default 1.0 = no cap */
    bool graph_capture_record_stream_reuse; /* during a capture, reuse a block freed with stream uses once
                                              the capture graph orders all its uses before the stream's
                                              next work (PyTorch 2.9+; pool/capture.c); default false */
    bool retry_pool_after_sync;             /* retry_pool_after_sync (galloc's): after the OOM path's
                                              synchronize-and-flush, search the pool again before the last
                                              device allocation (pytorch/pytorch#189504); default false =
                                              PyTorch's released behaviour */
    /* PyTorch main's (2026) CUDA keys, c10/cuda/CUDAAllocatorConfig.{h,cpp}. */
    bool throw_on_cudamalloc_oom; /* throw_on_cudamalloc_oom: a new segment that would take reserved
                                              memory past per_process_memory_fraction x device total is
                                              refused before the device is asked, without the free-and-retry
                                              chain (pool/reject.c); default false */
    bool es_reserve_set;          /* expandable_segments_reserve was given (PyTorch's
                                              m_expandable_segments_reserve_set); unset: 9/8 x device memory */
    ga_conf_reserve_t es_reserve; /* expandable_segments_reserve: each expandable segment's virtual
                                              range for streams without a class of their own */
    uint32_t n_reserve_classes;   /* entries in reserve_classes (expandable_segments_reserve_by_class) */
    ga_conf_reserve_class_t reserve_classes[GA_CONF_RESERVE_CLASSES]; /* in the order first named; a name given
                                              twice keeps its last value */
    /* The pinned host cache's keys (host/, docs/host.md). */
    uint64_t pinned_reserve_segment_size; /* pinned_reserve_segment_size_mb: bytes; 0 (default) = no reserve */
    uint64_t pinned_max_round_threshold;  /* pinned_max_round_threshold_mb: bytes; UINT64_MAX (default) = always
                                             round to a power of two */
    uint64_t pinned_max_cached_size;      /* pinned_max_cached_size_mb: bytes; UINT64_MAX (default) = cache every
                                             freed block */
    /* The device backend's options: the items no key above claims ("sim_capacity:80GiB",
     * "driver_path:/x.so", a registered backend's own keys). */
    char backend_options[GALLOC_BACKEND_OPTIONS_MAX];     /* each item as written (from its key to the end of
                                              its value), joined by ',', in the order given; an item whose
                                              key comes again is dropped, the new one goes last; "" = none */
    uint32_t n_options;                                   /* items in backend_options, <= GA_CONF_OPTION_ITEMS */
    ga_conf_origin_t option_origin[GA_CONF_OPTION_ITEMS]; /* where each item was written, in order */
} ga_conf_t;

/* ga_conf_defaults: PyTorch's defaults plus galloc's (device_backend sim, no backend options). */
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
 * An item whose key the grammar does not claim (everything up to the next
 * ',' outside brackets) is added to backend_options, not checked: the
 * backend reads it. GALLOC_E_CONFIG too when backend_options would pass
 * GALLOC_BACKEND_OPTIONS_MAX - 1 bytes or GA_CONF_OPTION_ITEMS items.
 * GALLOC_E_INVAL if c is NULL. err may be NULL.
 */
galloc_status_t ga_conf_parse(const char *s, ga_conf_t *c, char *err, size_t errlen);

/*
 * ga_conf_format: the normalized string of c (keys in a fixed order, values in
 * canonical spelling, e.g. "max_split_size_mb:512,expandable_segments:True",
 * then the backend options as ga_conf_options_normalized gives them), such
 * that parsing it onto defaults gives back the same settings. Writes at most
 * len bytes including the NUL; returns the length the full string needs
 * (excluding the NUL), like snprintf.
 */
size_t ga_conf_format(const ga_conf_t *c, char *buf, size_t len);

/*
 * ga_conf_format_pytorch: as ga_conf_format, with only the keys PyTorch's
 * PYTORCH_CUDA_ALLOC_CONF accepts (no per_process_memory_fraction, which
 * PyTorch sets by a call, no galloc keys, no backend options such as
 * sim_capacity): what a snapshot's allocator_settings records, so PyTorch
 * could be started with it.
 */
size_t ga_conf_format_pytorch(const ga_conf_t *c, char *buf, size_t len);

/* ga_conf_format_reserve_classes: expandable_segments_reserve_by_class's
 * value as ga_conf_format writes it ("[capture:0.25,serving:40G]"), "" when
 * the key was not given; like snprintf. */
size_t ga_conf_format_reserve_classes(const ga_conf_t *c, char *buf, size_t len);

/*
 * ga_conf_options_normalized: c->backend_options as the normalized string and
 * galloc_settings_t show them: whitespace dropped (the grammar ignores it),
 * each item as given otherwise (only the backend knows its values' canonical
 * spelling). Writes at most len bytes including the NUL (buf may be NULL if
 * len is 0); returns the full length, like snprintf.
 */
size_t ga_conf_options_normalized(const ga_conf_t *c, char *buf, size_t len);

/*
 * ga_conf_option_error: a backend's message about c->backend_options (its
 * GALLOC_E_CONFIG from open) rewritten for the user: the trailing
 * " (offset N)", N a byte offset into backend_options, becomes the offset in
 * the string the item was written in, and that string's name goes in front as
 * ga_conf_load's messages put it ("create string: ..."). A message without
 * that ending, or with an N in no item, is copied as it is. Writes at most len
 * bytes including the NUL.
 */
void ga_conf_option_error(const ga_conf_t *c, const char *msg, char *out, size_t len);

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

/*
 * ga_conf_reserve_bytes: PyTorch's expandable_segments_reserve_decision and
 * ExpandableSegmentReserveSpec::resolveBytes (c10/cuda/CUDAAllocatorConfig.h):
 * the reserve configured for a stream of reserve class cls (NULL or "" for
 * none) on a device of device_total bytes. The class's own entry if
 * expandable_segments_reserve_by_class lists it (*class_known = true), else
 * expandable_segments_reserve if given, else none: returns false (keep the
 * full 9/8 reserve). A fraction is value x device_total, a GiB value
 * value x 2^30, truncated to whole bytes and saturated at UINT64_MAX (the
 * caller clamps it to the full reserve, as clamp_reserve_bytes does).
 * class_known may be NULL.
 */
bool ga_conf_reserve_bytes(const ga_conf_t *c, const char *cls, uint64_t device_total, uint64_t *bytes,
                           bool *class_known);

/* ga_conf_reserve_configured: whether either reserve key is in force (a
 * global reserve or at least one class), i.e. whether a reserve can differ
 * from PyTorch's historical 9/8 of device memory. */
bool ga_conf_reserve_configured(const ga_conf_t *c);

/* ga_conf_roundup_divisions: the divisions that apply to a request of `size`
 * bytes (PyTorch's roundup_power2_divisions(size): interval floor(log2(size)) - 20
 * clamped to [0, 15]). */
uint32_t ga_conf_roundup_divisions(const ga_conf_t *c, size_t size);

/* floor(log2(v)) for v > 0 (0 for 0), in one instruction: the intervals of
 * roundup_power2_divisions (ga_conf_roundup_divisions, on every malloc that
 * rounds by them) and the pool's power-of-two rounding (pool/round.c). */
static inline unsigned ga_conf_floor_log2(uint64_t v)
{
    return v == 0 ? 0u : 63u - (unsigned)__builtin_clzll(v);
}

#ifdef __cplusplus
}
#endif
#endif /* GA_CONF_H */
