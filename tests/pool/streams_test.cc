// streams_test: blocks used on several streams (record_stream), deferred frees,
// and the synchronizing paths, on the sim device with manual events (an event
// completes only when its stream is synchronized).
#include <gtest/gtest.h>

#include "tests/pool/fixture.h"

extern "C" {
#include <galloc/galloc_stats.h>
#include "tests/pool/pool_shim.h"
}

namespace {

constexpr uint64_t MiB = 1 << 20;
constexpr int ALL = GALLOC_STAT_ALL;
constexpr uintptr_t S0 = 0, S1 = 0x1001, S2 = 0x1002;

class Streams : public PoolFixture {
  protected:
    void SetUp() override { Make("sim_manual_events:True"); }
};

TEST_F(Streams, BlockIsNotReusedUntilItsEventCompletes)
{
    uintptr_t a = Alloc(4096);
    ASSERT_EQ(pool_shim_record_stream(s_, a, S1), GALLOC_OK);
    Free(a);
    EXPECT_EQ(pool_shim_pending_blocks(s_), 1u);
    galloc_stats_t st = Stats();
    EXPECT_EQ(st.allocation[ALL].current, 0); // dropped at the free
    EXPECT_EQ(st.allocated_bytes[ALL].current, 0);
    EXPECT_EQ(st.active[ALL].current, 1); // still active until the event completes
    EXPECT_EQ(st.active_bytes[ALL].current, 4096);
    EXPECT_EQ(st.requested_bytes[ALL].current, 4096);
    uintptr_t b = Alloc(4096); // S1 has not finished: a cannot be reused
    EXPECT_NE(b, a);
    ASSERT_EQ(pool_shim_stream_sync(s_, S1), GALLOC_OK);
    EXPECT_EQ(pool_shim_pending_blocks(s_), 1u); // returned at the next malloc, as PyTorch does
    uintptr_t c = Alloc(4096);
    EXPECT_EQ(c, a);
    EXPECT_EQ(pool_shim_pending_blocks(s_), 0u);
    EXPECT_EQ(Stats().active[ALL].current, 2);
    Free(b);
    Free(c);
}

TEST_F(Streams, FreeWithoutOtherStreamsIsImmediate)
{
    uintptr_t a = Alloc(4096);
    ASSERT_EQ(pool_shim_record_stream(s_, a, S0), GALLOC_OK); // its own stream: no event
    Free(a);
    EXPECT_EQ(pool_shim_pending_blocks(s_), 0u);
    EXPECT_EQ(Stats().active[ALL].current, 0);
    EXPECT_EQ(Alloc(4096), a);
}

TEST_F(Streams, EveryUsingStreamMustFinish)
{
    uintptr_t a = Alloc(4096);
    ASSERT_EQ(pool_shim_record_stream(s_, a, S1), GALLOC_OK);
    ASSERT_EQ(pool_shim_record_stream(s_, a, S2), GALLOC_OK);
    ASSERT_EQ(pool_shim_record_stream(s_, a, S2), GALLOC_OK); // recorded once
    Free(a);
    ASSERT_EQ(pool_shim_stream_sync(s_, S1), GALLOC_OK);
    EXPECT_NE(Alloc(4096), a); // S2 still running
    ASSERT_EQ(pool_shim_stream_sync(s_, S2), GALLOC_OK);
    EXPECT_EQ(Alloc(4096), a);
}

TEST_F(Streams, EmptyCacheSynchronizesAndCounts)
{
    uintptr_t a = Alloc(4096);
    ASSERT_EQ(pool_shim_record_stream(s_, a, S1), GALLOC_OK);
    Free(a);
    ASSERT_EQ(pool_shim_empty_cache(s_), GALLOC_OK);
    galloc_stats_t st = Stats();
    EXPECT_EQ(st.num_sync_all_streams, 1);
    EXPECT_EQ(st.active[ALL].current, 0);
    EXPECT_EQ(st.reserved_bytes[ALL].current, 0); // the waited-for block made its segment whole
    EXPECT_EQ(st.num_device_free, 1);
    EXPECT_EQ(pool_shim_pending_blocks(s_), 0u);
}

TEST_F(Streams, OomSatisfiedAfterSynchronizingSucceeds)
{
    // PyTorch's path: the pending block is a whole segment; the flush waits
    // for its event, releases the segment, and the device allocation retried
    // after it succeeds.
    Make("sim_manual_events:True", 40 * MiB);
    uintptr_t a = Alloc(20 * MiB);   // one 20 MiB segment
    uintptr_t big = Alloc(20 * MiB); // the device is full
    ASSERT_EQ(pool_shim_record_stream(s_, a, S1), GALLOC_OK);
    Free(a);
    uintptr_t b = Alloc(12 * MiB); // no free block, no room: flush + sync + release, then a new segment
    EXPECT_NE(b, 0u);
    galloc_stats_t st = Stats();
    EXPECT_EQ(st.num_ooms, 0);
    EXPECT_EQ(st.num_alloc_retries, 1);
    EXPECT_EQ(st.num_sync_all_streams, 1);
    EXPECT_EQ(st.num_device_free, 1);
    EXPECT_EQ(st.num_device_alloc, 3);
    EXPECT_EQ(st.reserved_bytes[ALL].current, 32 * MiB);
    Free(b);
    Free(big);
}

TEST_F(Streams, PendingBlockInAPartlyUsedSegmentOomsAsInPyTorch)
{
    // The pending block sits in a segment that also holds a live block, so the
    // flush cannot release it and PyTorch retries only the device allocation:
    // out of memory, although the synchronized block would fit
    // (pytorch/pytorch#189504). galloc reproduces that by default.
    Make("sim_manual_events:True", 40 * MiB);
    uintptr_t keep = Alloc(4 * MiB);
    uintptr_t a = Alloc(12 * MiB);
    uintptr_t big = Alloc(18 * MiB);
    ASSERT_EQ(pool_shim_record_stream(s_, a, S1), GALLOC_OK);
    Free(a);
    uintptr_t b = 0;
    EXPECT_EQ(pool_shim_malloc(s_, 12 * MiB, 0, &b), GALLOC_E_OOM);
    galloc_stats_t st = Stats();
    EXPECT_EQ(st.num_ooms, 1);
    EXPECT_EQ(st.num_alloc_retries, 1);
    EXPECT_EQ(st.num_sync_all_streams, 1);
    // The failed call still completed the pending free: an identical retry
    // finds the block, as PyTorch's does.
    uintptr_t c = Alloc(12 * MiB);
    EXPECT_EQ(c, a);
    Free(c);
    Free(keep);
    Free(big);
}

TEST_F(Streams, RetryPoolAfterSyncServesThePendingBlock)
{
    // retry_pool_after_sync:True searches the pool again after the
    // synchronization (the fix proposed in pytorch/pytorch#191302).
    Make("sim_manual_events:True,retry_pool_after_sync:True", 40 * MiB);
    uintptr_t keep = Alloc(4 * MiB); // 20 MiB segment: keep | rest
    uintptr_t a = Alloc(12 * MiB);   // taken from the same segment
    uintptr_t big = Alloc(18 * MiB); // 18 MiB segment: device now has 2 MiB left
    ASSERT_EQ(pool_shim_record_stream(s_, a, S1), GALLOC_OK);
    Free(a);
    uintptr_t b = Alloc(12 * MiB); // no free block, no room: flush + sync, then found
    EXPECT_EQ(b, a);
    galloc_stats_t st = Stats();
    EXPECT_EQ(st.num_ooms, 0);
    EXPECT_EQ(st.num_alloc_retries, 1);
    EXPECT_EQ(st.num_sync_all_streams, 1);
    Free(b);
    Free(keep);
    Free(big);
}

TEST_F(Streams, RecordStreamOnUnknownPointers)
{
    uintptr_t a = Alloc(4096);
    Free(a);
    EXPECT_EQ(pool_shim_record_stream(s_, a, S1), GALLOC_E_NOT_OWNED);
    EXPECT_EQ(pool_shim_record_stream(s_, 0xdead000, S1), GALLOC_E_NOT_OWNED);
}

TEST_F(Streams, ImmediateEventsInDefaultMode)
{
    Make("");
    uintptr_t a = Alloc(4096);
    ASSERT_EQ(pool_shim_record_stream(s_, a, S1), GALLOC_OK);
    Free(a);
    EXPECT_EQ(pool_shim_pending_blocks(s_), 1u); // pending until the next malloc polls
    EXPECT_EQ(Alloc(4096), a);
}

TEST_F(Streams, EventRecordsAreReused)
{
    for (int i = 0; i < 1000; i++) {
        uintptr_t a = Alloc(4096);
        ASSERT_EQ(pool_shim_record_stream(s_, a, S1), GALLOC_OK);
        Free(a);
        ASSERT_EQ(pool_shim_stream_sync(s_, S1), GALLOC_OK);
    }
    EXPECT_EQ(Stats().num_device_alloc, 1);
    EXPECT_LE(pool_shim_pending_blocks(s_), 1u);
}

} // namespace
