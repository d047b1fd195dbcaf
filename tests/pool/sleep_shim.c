/* sleep_shim.c: see sleep_shim.h. */
#include "tests/pool/sleep_shim.h"

#include <stdlib.h>

#include "backend/backend.h"
#include "conf/conf.h"
#include "pool/ops.h"
#include "pool/sleep_int.h"
#include "pool/tags.h"
#include "pool/stripe.h"
#include "stats/stats.h"

struct sleep_shim {
    ga_backend_t backend;
    ga_err_t err;
    ga_pool_t *pool;
    sleep_corruption_t what;
    ga_tag_t *tag;
    ga_sleep_entry_t saved; /* SLEEP_HELD_MISSING: the entry taken out */
};

static ga_segment_t *first_segment(ga_pool_t *p, const ga_tag_t *t)
{
    for (ga_segment_t *s = p->segments; s != NULL; s = s->next)
        if (s->pool->owner == t->pool)
            return s;
    return NULL;
}

/* Break (on) or repair (off) the sleeping state. */
static void corrupt(sleep_shim_t *s, bool on)
{
    ga_tag_t *t = s->tag;
    ga_segment_t *seg = first_segment(s->pool, t);
    int64_t d = on ? 1 : -1;
    switch (s->what) {
    case SLEEP_INTACT: break;
    case SLEEP_OFFLOADED_COUNT: t->bytes_offloaded += (size_t)(d * 512); break;
    case SLEEP_ASLEEP_COUNT: t->bytes_asleep += (size_t)(d * (int64_t)ga_sleep_unit_bytes(seg)); break;
    case SLEEP_HELD_MISSING:
        if (on) {
            ga_sleep_entry_t *e = ga_addrmap_find(&t->held, seg->head->addr);
            s->saved = *e;
            ga_addrmap_remove(&t->held, e);
        } else {
            *(ga_sleep_entry_t *)ga_addrmap_insert(&t->held, s->saved.addr) = s->saved;
        }
        break;
    case SLEEP_BACK_IN_PTRS:
        if (on) {
            (void)ga_addrmap_reserve(&s->pool->stripes[ga_stripe_of(seg->head->stream)].ptrs, 1);
            ga_pool_ptr_insert(s->pool, seg->head);
        } else {
            ga_pool_ptr_remove(s->pool, seg->head->addr);
        }
        break;
    case SLEEP_BIT_FLIPPED:
        seg->slept[0] ^= 1u; /* the first unit: the segment's head is allocated */
        break;
    case SLEEP_POOL_AWAKE: t->pool->asleep = !on; break;
    case SLEEP_RESERVED_STAT:
        ga_stat_update(s->pool->stats.reserved_bytes, seg->pool->stat, d * (int64_t)ga_sleep_unit_bytes(seg));
        s->pool->total_allocated_memory += (size_t)(d * (int64_t)ga_sleep_unit_bytes(seg));
        break;
    }
}

sleep_shim_t *sleep_shim_new(int expandable, sleep_corruption_t what)
{
    ga_conf_t c;
    ga_conf_defaults(&c);
    char err[256];
    if (ga_conf_parse(expandable ? "expandable_segments:True" : "", &c, err, sizeof(err)) != GALLOC_OK)
        return NULL;
    sleep_shim_t *s = calloc(1, sizeof(*s));
    galloc_backend_args_t args = {0};
    args.struct_size = sizeof(args);
    args.options = "sim_capacity:256MiB,sim_backed:True";
    if (s == NULL || ga_backend_open(&s->backend, "sim", &args, err, sizeof(err)) != GALLOC_OK) {
        free(s);
        return NULL;
    }
    void *pool = NULL;
    if (ga_pool_create(&c, &s->backend, 0, &s->err, &pool) != GALLOC_OK) {
        ga_backend_close(&s->backend);
        free(s);
        return NULL;
    }
    s->pool = pool;
    void *p = NULL;
    size_t sizes[3] = {4096, 1 << 20, 12 << 20};
    galloc_status_t st = ga_pool_tag_begin(s->pool, "w");
    for (int i = 0; i < 3 && st == GALLOC_OK; i++)
        st = ga_pool_malloc(s->pool, sizes[i], 0, &p);
    (void)ga_pool_tag_end(s->pool, "w");
    s->tag = ga_tag_find(s->pool, "w", 1);
    if (st == GALLOC_OK)
        st = ga_pool_sleep(s->pool, "w", "w");
    if (st != GALLOC_OK || s->tag == NULL || first_segment(s->pool, s->tag) == NULL) {
        sleep_shim_delete(s);
        return NULL;
    }
    s->what = what;
    corrupt(s, true);
    return s;
}

galloc_status_t sleep_shim_check(sleep_shim_t *s)
{
    return ga_pool_check(s->pool);
}

const char *sleep_shim_error(sleep_shim_t *s)
{
    return s->err.msg;
}

void sleep_shim_delete(sleep_shim_t *s)
{
    if (s == NULL)
        return;
    if (s->tag != NULL && s->tag->asleep)
        corrupt(s, false);
    ga_pool_destroy(s->pool);
    ga_backend_close(&s->backend);
    free(s);
}
