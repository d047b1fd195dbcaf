// ring_test: the trace ring buffer behaves as PyTorch's RingBuffer: appends
// until max_entries, then overwrites the oldest; read back oldest first.
#include <gtest/gtest.h>

#include <cstring>

extern "C" {
#include "trace/ring.h"
}

namespace {

void push(ga_trace_ring_t *r, uint64_t addr)
{
    ga_trace_entry_t *e = ga_trace_ring_push(r);
    ASSERT_NE(e, nullptr);
    memset(e, 0, sizeof(*e));
    e->addr = addr;
}

TEST(Ring, EntryIsOneCacheLine)
{
    EXPECT_EQ(sizeof(ga_trace_entry_t), 64u);
}

TEST(Ring, StoppedRingRecordsNothing)
{
    ga_trace_ring_t r;
    ga_trace_ring_init(&r);
    EXPECT_EQ(ga_trace_ring_push(&r), nullptr);
    EXPECT_EQ(ga_trace_ring_size(&r), 0u);
    ga_trace_ring_stop(&r);
}

TEST(Ring, BelowMaxKeepsEverythingInOrder)
{
    ga_trace_ring_t r;
    ga_trace_ring_init(&r);
    ASSERT_EQ(ga_trace_ring_start(&r, 10, 0), GALLOC_OK);
    for (uint64_t i = 0; i < 7; i++)
        push(&r, i);
    ASSERT_EQ(ga_trace_ring_size(&r), 7u);
    for (size_t i = 0; i < 7; i++)
        EXPECT_EQ(ga_trace_ring_at(&r, i)->addr, i);
    EXPECT_EQ(r.overwritten, 0u);
    ga_trace_ring_stop(&r);
}

TEST(Ring, WrapsAtMaxEntriesAndYieldsOldestFirst)
{
    ga_trace_ring_t r;
    ga_trace_ring_init(&r);
    ASSERT_EQ(ga_trace_ring_start(&r, 5, 0), GALLOC_OK);
    ga_trace_entry_t *buf = r.buf;
    for (uint64_t i = 0; i < 12; i++) {
        push(&r, i);
        // At every step the ring holds the newest min(i + 1, 5) entries.
        size_t n = ga_trace_ring_size(&r);
        ASSERT_EQ(n, i + 1 < 5 ? i + 1 : 5);
        for (size_t k = 0; k < n; k++)
            ASSERT_EQ(ga_trace_ring_at(&r, k)->addr, i + 1 - n + k);
    }
    EXPECT_EQ(r.overwritten, 7u);
    EXPECT_EQ(r.buf, buf); // steady state: no reallocation
    ga_trace_ring_stop(&r);
}

TEST(Ring, MaxEntriesZeroMeansOne)
{
    // PyTorch's setMaxEntries(max(1, size)).
    ga_trace_ring_t r;
    ga_trace_ring_init(&r);
    ASSERT_EQ(ga_trace_ring_start(&r, 0, 0), GALLOC_OK);
    push(&r, 1);
    push(&r, 2);
    ASSERT_EQ(ga_trace_ring_size(&r), 1u);
    EXPECT_EQ(ga_trace_ring_at(&r, 0)->addr, 2u);
    ga_trace_ring_stop(&r);
}

TEST(Ring, GrowsOnColdPathThenWraps)
{
    // A ring whose max is beyond what is preallocated grows by doubling;
    // `initial` stands in for the 2^20-slot preallocation to keep this small.
    ga_trace_ring_t r;
    ga_trace_ring_init(&r);
    ASSERT_EQ(ga_trace_ring_start(&r, 100, 4), GALLOC_OK);
    EXPECT_EQ(r.cap, 4u);
    for (uint64_t i = 0; i < 250; i++)
        push(&r, i);
    EXPECT_EQ(r.cap, 100u);
    ASSERT_EQ(ga_trace_ring_size(&r), 100u);
    for (size_t k = 0; k < 100; k++)
        ASSERT_EQ(ga_trace_ring_at(&r, k)->addr, 150 + k);
    EXPECT_EQ(r.overwritten, 150u);
    EXPECT_EQ(r.grow_failures, 0u);
    ga_trace_ring_stop(&r);
}

TEST(Ring, BoundedRingsArePreallocatedUnboundedGrow)
{
    ga_trace_ring_t r;
    ga_trace_ring_init(&r);
    ASSERT_EQ(ga_trace_ring_start(&r, 100000, 0), GALLOC_OK); // a typical max_entries: whole
    EXPECT_EQ(r.cap, 100000u);
    ASSERT_EQ(ga_trace_ring_start(&r, SIZE_MAX, 0), GALLOC_OK); // restart, unbounded: a start size
    EXPECT_EQ(r.cap, (size_t)GA_TRACE_RING_GROW_START);
    EXPECT_EQ(r.max, SIZE_MAX);
    for (size_t i = 0; i < GA_TRACE_RING_GROW_START + 1; i++)
        push(&r, i);
    EXPECT_EQ(r.cap, 2 * (size_t)GA_TRACE_RING_GROW_START);
    EXPECT_EQ(ga_trace_ring_at(&r, 0)->addr, 0u);
    ga_trace_ring_stop(&r);
}

TEST(Ring, ClearKeepsSlotsAndStartsOver)
{
    ga_trace_ring_t r;
    ga_trace_ring_init(&r);
    ASSERT_EQ(ga_trace_ring_start(&r, 3, 0), GALLOC_OK);
    for (uint64_t i = 0; i < 5; i++)
        push(&r, i);
    ga_trace_entry_t *buf = r.buf;
    ga_trace_ring_clear(&r);
    EXPECT_EQ(ga_trace_ring_size(&r), 0u);
    push(&r, 42);
    push(&r, 43);
    ASSERT_EQ(ga_trace_ring_size(&r), 2u);
    EXPECT_EQ(ga_trace_ring_at(&r, 0)->addr, 42u);
    EXPECT_EQ(ga_trace_ring_at(&r, 1)->addr, 43u);
    EXPECT_EQ(r.buf, buf);
    ga_trace_ring_stop(&r);
}

TEST(Ring, ActionNamesArePyTorchs)
{
    EXPECT_STREQ(ga_trace_action_name(GA_TRACE_ALLOC), "alloc");
    EXPECT_STREQ(ga_trace_action_name(GA_TRACE_FREE_REQUESTED), "free_requested");
    EXPECT_STREQ(ga_trace_action_name(GA_TRACE_FREE_COMPLETED), "free_completed");
    EXPECT_STREQ(ga_trace_action_name(GA_TRACE_SEGMENT_ALLOC), "segment_alloc");
    EXPECT_STREQ(ga_trace_action_name(GA_TRACE_SEGMENT_FREE), "segment_free");
    EXPECT_STREQ(ga_trace_action_name(GA_TRACE_SEGMENT_MAP), "segment_map");
    EXPECT_STREQ(ga_trace_action_name(GA_TRACE_SEGMENT_UNMAP), "segment_unmap");
    EXPECT_STREQ(ga_trace_action_name(GA_TRACE_SNAPSHOT), "snapshot");
    EXPECT_STREQ(ga_trace_action_name(GA_TRACE_OOM), "oom");
    EXPECT_STREQ(ga_trace_action_name(GA_TRACE_ANNOTATE), "annotate");
    EXPECT_STREQ(ga_trace_action_name((ga_trace_action_t)99), "unknown");
}

} // namespace
