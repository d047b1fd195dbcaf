/* assert_shim.c: see assert_shim.h. */
#include "tests/pool/assert_shim.h"

#include <string.h>

#include "pool/blockpool.h"
#include "pool/records.h"
#include "pool/split.h"
#include "util/assert.h"

int assert_shim_on(void)
{
    return GA_ASSERT_ON;
}

void assert_shim_check(int value)
{
    GA_ASSERT(value == 1);
}

/* One 2 MiB segment of the large pool on stream 7, wholly one free block,
 * filed in its stream's set: the state a pool is in after a free merged a
 * segment back, built without an allocator so one field can be broken. */
typedef struct fixture {
    ga_records_t records;
    ga_blockpool_t bp;
    ga_segment_t seg;
    ga_block_t whole;
} fixture_t;

static void fixture_init(fixture_t *f)
{
    memset(f, 0, sizeof(*f));
    ga_pool_records_init(&f->records);
    (void)ga_pool_records_grow(&f->records, 4, 0);
    ga_pool_blockpool_init(&f->bp, false);
    f->seg.base = 0x100000;
    f->seg.size = 2u << 20;
    f->seg.stream = 7;
    f->seg.pool = &f->bp;
    f->seg.set = ga_pool_blockpool_prepare(&f->bp, 7);
    f->seg.head = &f->whole;
    f->whole.addr = f->seg.base;
    f->whole.size = f->seg.size;
    f->whole.stream = 7;
    f->whole.pool = &f->bp;
    f->whole.seg = &f->seg;
    f->whole.mapped = true;
}

void assert_shim_split_whole(size_t size)
{
    fixture_t f;
    fixture_init(&f);
    ga_pool_blockpool_insert(&f.bp, &f.whole);
    ga_pool_blockpool_remove(&f.bp, &f.whole);
    ga_block_t *front = ga_pool_split_front(&f.records, &f.bp, &f.whole, size);
    (void)front;
    ga_pool_blockpool_destroy(&f.bp);
    ga_pool_records_destroy(&f.records);
}

void assert_shim_insert_allocated(void)
{
    fixture_t f;
    fixture_init(&f);
    f.whole.allocated = true;
    ga_pool_blockpool_insert(&f.bp, &f.whole);
}

void assert_shim_insert_other_stream(void)
{
    fixture_t f;
    fixture_init(&f);
    f.whole.stream = 8; /* its segment's set is stream 7's */
    ga_pool_blockpool_insert(&f.bp, &f.whole);
}

void assert_shim_merge_apart(void)
{
    fixture_t f;
    fixture_init(&f);
    /* Two free blocks linked as neighbours, with a gap between them. */
    ga_block_t *second = ga_pool_records_get_block(&f.records);
    *second = f.whole;
    f.whole.size = 1u << 20;
    second->addr = f.whole.addr + f.whole.size + 512;
    second->size = (1u << 20) - 512;
    f.whole.next = second;
    second->prev = &f.whole;
    (void)ga_pool_merge(&f.records, &f.whole, second);
}
