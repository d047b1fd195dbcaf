/* pool_shim.c: see pool_shim.h. */
#include "tests/pool/pool_shim.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "backend/backend.h"
#include "backend/sim.h"
#include "conf/conf.h"
#include "pool/avl.h"
#include "pool/blockpool.h"
#include "pool/ops.h"
#include "pool/round.h"

struct pool_shim {
    ga_backend_t backend;
    ga_err_t err;
    ga_pool_t *pool;
};

pool_shim_t *pool_shim_new(const char *conf, uint64_t capacity, char *err, size_t errlen)
{
    ga_conf_t c;
    ga_conf_defaults(&c);
    if (ga_conf_parse(conf, &c, err, errlen) != GALLOC_OK)
        return NULL;
    pool_shim_t *s = calloc(1, sizeof(*s));
    char options[sizeof(c.backend_options) + 64]; /* the capacity first: a sim_capacity in conf wins */
    snprintf(options, sizeof(options), "sim_capacity:%" PRIu64 "%s%s", capacity, c.n_options ? "," : "",
             c.backend_options);
    galloc_backend_args_t args = {0};
    args.struct_size = sizeof(args);
    args.options = options;
    if (s == NULL || ga_backend_open(&s->backend, "sim", &args, err, errlen) != GALLOC_OK) {
        free(s);
        return NULL;
    }
    void *pool = NULL;
    if (ga_pool_create(&c, &s->backend, 0, &s->err, &pool) != GALLOC_OK) {
        snprintf(err, errlen, "%s", s->err.msg);
        ga_backend_close(&s->backend);
        free(s);
        return NULL;
    }
    s->pool = pool;
    return s;
}

void pool_shim_delete(pool_shim_t *s)
{
    if (s == NULL)
        return;
    ga_pool_destroy(s->pool);
    ga_backend_close(&s->backend);
    free(s);
}

galloc_status_t pool_shim_malloc(pool_shim_t *s, size_t size, uintptr_t stream, uintptr_t *addr)
{
    void *p = NULL;
    galloc_status_t st = ga_pool_malloc(s->pool, size, stream, &p);
    *addr = (uintptr_t)p;
    return st;
}

galloc_status_t pool_shim_free(pool_shim_t *s, uintptr_t addr)
{
    return ga_pool_free(s->pool, (void *)addr);
}

galloc_status_t pool_shim_empty_cache(pool_shim_t *s)
{
    return ga_pool_empty_cache(s->pool);
}

galloc_status_t pool_shim_record_stream(pool_shim_t *s, uintptr_t addr, uintptr_t stream)
{
    return ga_pool_record_stream(s->pool, (void *)addr, stream);
}

galloc_status_t pool_shim_stream_sync(pool_shim_t *s, uintptr_t stream)
{
    return ga_pool_stream_synchronize(s->pool, stream);
}

size_t pool_shim_pending_blocks(pool_shim_t *s)
{
    return s->pool->pending_blocks;
}

galloc_status_t pool_shim_set_fraction(pool_shim_t *s, double f)
{
    return ga_pool_set_fraction(s->pool, f);
}

galloc_status_t pool_shim_check(pool_shim_t *s)
{
    return ga_pool_check(s->pool);
}

void pool_shim_stats(pool_shim_t *s, galloc_stats_t *out)
{
    out->struct_size = sizeof(*out);
    ga_pool_stats(s->pool, out);
}

const char *pool_shim_error(pool_shim_t *s)
{
    return s->err.msg;
}

size_t pool_shim_block_records(pool_shim_t *s)
{
    size_t n = 0;
    for (unsigned i = 0; i < GA_STRIPES; i++)
        n += s->pool->stripes[i].records.blocks_total;
    return n;
}

size_t pool_shim_free_blocks(pool_shim_t *s, int small)
{
    return ga_pool_blockpool_count(small ? &s->pool->small : &s->pool->large);
}

size_t pool_shim_segments(pool_shim_t *s)
{
    size_t n = 0;
    for (ga_segment_t *g = s->pool->segments; g != NULL; g = g->next)
        n++;
    return n;
}

size_t pool_shim_round(const char *conf, size_t size)
{
    ga_conf_t c;
    ga_conf_defaults(&c);
    char err[256];
    if (ga_conf_parse(conf, &c, err, sizeof(err)) != GALLOC_OK)
        return 0;
    return ga_round_size(&c, size);
}

size_t pool_shim_alloc_size(size_t rounded)
{
    ga_conf_t c;
    ga_conf_defaults(&c);
    return ga_allocation_size(&c, rounded);
}

void pool_shim_format_size(uint64_t bytes, char *buf, size_t len)
{
    ga_format_size(bytes, buf, len);
}

void pool_shim_fail_from(pool_shim_t *s, uint64_t nth)
{
    ga_sim_set_faults(s->backend.state, 0, nth, 0);
}

void pool_shim_event_faults(pool_shim_t *s, uint64_t sync_nth, uint64_t sync_from, uint64_t query_nth,
                            uint64_t query_from)
{
    ga_sim_set_event_faults(s->backend.state, sync_nth, sync_from, query_nth, query_from);
}

typedef struct avl_item {
    ga_avl_node_t node;
    int key;
    bool in;
} avl_item_t;

static int avl_item_cmp(const ga_avl_node_t *a, const ga_avl_node_t *b)
{
    int ka = ((const avl_item_t *)a)->key, kb = ((const avl_item_t *)b)->key;
    return ka < kb ? -1 : ka > kb;
}

int pool_shim_avl_exercise(int keys, int ops, unsigned seed, int *depth, int *caught)
{
    avl_item_t *items = calloc((size_t)keys, sizeof(*items));
    if (items == NULL)
        return -1;
    ga_avl_t t;
    ga_pool_avl_init(&t, avl_item_cmp);
    int failures = 0;
    *depth = 0;
    for (int i = 0; i < keys; i++)
        items[i].key = i;
    for (int op = 0; op < ops; op++) {
        seed = seed * 1103515245u + 12345u;
        avl_item_t *it = &items[(seed >> 8) % (unsigned)keys];
        if (it->in)
            ga_pool_avl_remove(&t, &it->node);
        else
            ga_pool_avl_insert(&t, &it->node);
        it->in = !it->in;
        if (!ga_pool_avl_check(&t))
            failures++;
        if (t.root != NULL && t.root->height > *depth)
            *depth = t.root->height;
        /* In-order walk visits exactly the members, ascending. */
        int prev = -1;
        size_t seen = 0;
        for (ga_avl_node_t *n = ga_pool_avl_first(&t); n != NULL; n = ga_pool_avl_next(n), seen++) {
            const avl_item_t *x = (const avl_item_t *)n;
            if (!x->in || x->key <= prev)
                failures++;
            prev = x->key;
        }
        if (seen != t.count)
            failures++;
    }
    *caught = -1;
    if (t.root != NULL) {
        t.root->height += 1;
        *caught = !ga_pool_avl_check(&t);
        t.root->height -= 1;
    }
    free(items);
    return failures;
}

int pool_shim_stripe_malloc(pool_shim_t *s, size_t size, uintptr_t stream, uintptr_t *addr)
{
    void *p = NULL;
    bool done = ga_pool_stripe_malloc(s->pool, size, stream, &p);
    *addr = (uintptr_t)p;
    return done;
}

int pool_shim_stripe_free(pool_shim_t *s, uintptr_t addr)
{
    return ga_pool_stripe_free(s->pool, (void *)addr);
}

int pool_shim_stripe_usable_size(pool_shim_t *s, uintptr_t addr, size_t *size)
{
    return ga_pool_stripe_usable_size(s->pool, (const void *)addr, size);
}

galloc_status_t pool_shim_usable_size(pool_shim_t *s, uintptr_t addr, size_t *size)
{
    return ga_pool_usable_size(s->pool, (const void *)addr, size);
}

void pool_shim_quiesce(pool_shim_t *s)
{
    ga_pool_quiesce(s->pool);
}

void pool_shim_resume(pool_shim_t *s)
{
    ga_pool_resume(s->pool);
}

unsigned pool_shim_stripe_of(uintptr_t stream)
{
    return ga_stripe_of(stream);
}

galloc_status_t pool_shim_record_history(pool_shim_t *s, int on)
{
    galloc_history_options_t o = {.struct_size = sizeof(o),
                                  .enabled = on ? GALLOC_HISTORY_ALL : GALLOC_HISTORY_NONE,
                                  .context = GALLOC_CONTEXT_NONE};
    return ga_pool_record_history(s->pool, &o);
}
