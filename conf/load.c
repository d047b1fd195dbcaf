/*
 * load.c: defaults, ga_conf_parse, ga_conf_load (the layering of sources) and
 * the interval lookup the pool's rounding asks for.
 *
 * PyTorch reference: AcceleratorAllocatorConfig's member defaults and
 * roundup_power2_divisions(size) (c10/core/AllocatorConfig.{h,cpp}),
 * CUDAAllocatorConfig::pinned_num_register_threads' default of 1 and
 * per_process_memory_fraction's default of 1.0 (c10/cuda/CUDAAllocatorConfig.h).
 */
#include <stdio.h>
#include <string.h>

#include "conf/conf_int.h"

void ga_conf_defaults(ga_conf_t *c)
{
    memset(c, 0, sizeof(*c));
    c->backend = GA_CONF_BACKEND_NATIVE;
    c->max_split_size = UINT64_MAX;
    c->large_segment_size = GA_CONF_LARGE_BUFFER;
    c->max_non_split_rounding_size = GA_CONF_LARGE_BUFFER;
    c->garbage_collection_threshold = 0.0;
    c->pinned_num_register_threads = 1;
    c->per_process_memory_fraction = 1.0;
    c->pinned_max_round_threshold = UINT64_MAX; /* PR #171662: both caps off by default */
    c->pinned_max_cached_size = UINT64_MAX;
    snprintf(c->device_backend, sizeof(c->device_backend), "sim");
}

galloc_status_t ga_conf_parse(const char *s, ga_conf_t *c, char *err, size_t errlen)
{
    if (c == NULL) {
        if (err != NULL && errlen > 0)
            snprintf(err, errlen, "ga_conf_parse: the settings pointer is NULL");
        return GALLOC_E_INVAL;
    }
    return ga_conf_parse_onto(s, c, true, NULL, err, errlen);
}

/*
 * PyTorch parses only the first of its variables that is set, even if set to
 * "". Following conf.h's contract, PYTORCH_ALLOC_CONF is tried first, as in
 * the first AcceleratorAllocatorConfig::instance() (which warned that
 * PYTORCH_CUDA_ALLOC_CONF is deprecated). NOTE: the newest main read for this
 * file (AcceleratorAllocatorConfig::instance() and
 * CUDAAllocatorConfig::instance()) tries PYTORCH_CUDA_ALLOC_CONF, then
 * PYTORCH_HIP_ALLOC_CONF, then PYTORCH_ALLOC_CONF, "for backward
 * compatibility"; swap the two conditions below to follow it.
 */
galloc_status_t ga_conf_load(ga_conf_t *c, const char *create_str, const char *galloc_conf,
                             const char *pytorch_alloc_conf, const char *pytorch_cuda_alloc_conf, char *err,
                             size_t errlen)
{
    if (c == NULL) {
        if (err != NULL && errlen > 0)
            snprintf(err, errlen, "ga_conf_load: the settings pointer is NULL");
        return GALLOC_E_INVAL;
    }
    const struct {
        const char *name;
        const char *s;
    } layers[] = {
        {pytorch_alloc_conf != NULL ? "PYTORCH_ALLOC_CONF" : "PYTORCH_CUDA_ALLOC_CONF",
         pytorch_alloc_conf != NULL ? pytorch_alloc_conf : pytorch_cuda_alloc_conf},
        {"GALLOC_CONF", galloc_conf},
        {"create string", create_str},
    };
    ga_conf_t tmp;
    ga_conf_defaults(&tmp);
    for (size_t i = 0; i < sizeof(layers) / sizeof(layers[0]); i++) {
        if (layers[i].s == NULL)
            continue;
        char msg[512];
        galloc_status_t st = ga_conf_parse_onto(layers[i].s, &tmp, false, layers[i].name, msg, sizeof(msg));
        if (st != GALLOC_OK) {
            if (err != NULL && errlen > 0)
                snprintf(err, errlen, "%s: %s", layers[i].name, msg);
            return st;
        }
    }
    *c = tmp;
    if (err != NULL && errlen > 0)
        err[0] = '\0';
    return GALLOC_OK;
}

uint32_t ga_conf_roundup_divisions(const ga_conf_t *c, size_t size)
{
    /* AcceleratorAllocatorConfig::roundup_power2_divisions(size): interval
     * floor(log2(size)) - 20 clamped to [0, 15]; size 0 (never asked by the
     * pool, which rounds it to 512 first) reads interval 0. */
    unsigned lg = size == 0 ? 0 : ga_conf_floor_log2((uint64_t)size);
    unsigned idx = lg > 20 ? lg - 20 : 0;
    if (idx > GA_CONF_DIVISION_INTERVALS - 1)
        idx = GA_CONF_DIVISION_INTERVALS - 1;
    return c->roundup_power2_divisions[idx];
}
