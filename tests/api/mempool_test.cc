// mempool_test: private pools through the public API (PyTorch's MemPool and
// graph pools): isolation, routing by thread and by stream, release, the
// capture-like behaviour while routing, and the OOM message's private part.
// The flags of galloc_mempool_set_flags, PyTorch's torch.cuda.MemPool(
// use_on_oom=..., no_split=...), with exact stats. PyTorch's documented
// behaviour: use_on_oom "indicates if this pool can be used as a last resort
// if a memory allocation outside of the pool fails due to Out Of Memory
// error"; no_split "indicates if this pool should not split segments". Its
// sources (c10/cuda/CUDACachingAllocator.cpp, main): the fallback runs right
// after the first device allocation fails, before any cached block is freed,
// and only takes a free cached block (get_free_block), never a new segment;
// setNoSplit makes should_split false for the pool's blocks, small and large.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <thread>

extern "C" {
#include <galloc/galloc.h>
}

namespace {

constexpr uint64_t MiB = 1 << 20;

class MemPool : public ::testing::Test {
  protected:
    void Make(const char *conf)
    {
        if (a_ != nullptr)
            galloc_allocator_destroy(a_);
        char err[GALLOC_ERROR_MAX] = "";
        ASSERT_EQ(galloc_allocator_create("sim", 0, conf, &a_, err, sizeof err), GALLOC_OK) << err;
    }
    void SetUp() override { Make(""); }
    void TearDown() override
    {
        EXPECT_EQ(galloc_check(a_), GALLOC_OK) << Err();
        galloc_allocator_destroy(a_);
    }
    std::string Err()
    {
        char m[GALLOC_ERROR_MAX];
        galloc_last_error(a_, m, sizeof m);
        return m;
    }
    void *Alloc(size_t n, galloc_stream_t s = 0)
    {
        void *p = nullptr;
        EXPECT_EQ(galloc_malloc(a_, n, s, &p), GALLOC_OK) << Err();
        return p;
    }
    // A route of stream S to a new pool *id, in which 4 MiB at *p, used on S1
    // too (record_stream), is freed.
    static constexpr galloc_stream_t S = 0x10, S1 = 0x11;
    void FreeUsedOnS1DuringARoute(galloc_mempool_id_t *id, void **p)
    {
        ASSERT_EQ(galloc_mempool_create(a_, id), GALLOC_OK);
        ASSERT_EQ(galloc_mempool_begin_allocate(a_, *id, GALLOC_ROUTE_STREAM, S), GALLOC_OK);
        *p = Alloc(4 * MiB, S);
        ASSERT_EQ(galloc_record_stream(a_, *p, S1), GALLOC_OK);
        ASSERT_EQ(galloc_free(a_, *p), GALLOC_OK);
    }
    galloc_stats_t Stats()
    {
        galloc_stats_t st;
        st.struct_size = sizeof st;
        galloc_memory_stats(a_, &st);
        return st;
    }
    // A pool with flags whose cache holds one free 20 MiB segment (an 8 MiB
    // request's), made on a device of capacity bytes; returns its address.
    void *PoolWithCachedSegment(const char *capacity, unsigned flags, galloc_mempool_id_t *id)
    {
        Make(capacity);
        EXPECT_EQ(galloc_mempool_create(a_, id), GALLOC_OK);
        EXPECT_EQ(galloc_mempool_set_flags(a_, *id, flags), GALLOC_OK) << Err();
        EXPECT_EQ(galloc_mempool_begin_allocate(a_, *id, GALLOC_ROUTE_THREAD, 0), GALLOC_OK);
        void *p = Alloc(8 * MiB);
        EXPECT_EQ(galloc_mempool_end_allocate(a_, *id), GALLOC_OK);
        EXPECT_EQ(galloc_free(a_, p), GALLOC_OK);
        return p;
    }
    galloc_allocator_t *a_ = nullptr;
};

TEST_F(MemPool, IdsCountUpFromOne)
{
    galloc_mempool_id_t x, y;
    ASSERT_EQ(galloc_mempool_create(a_, &x), GALLOC_OK);
    ASSERT_EQ(galloc_mempool_create(a_, &y), GALLOC_OK);
    EXPECT_EQ(x.a, 0u);
    EXPECT_EQ(x.b, 1u);
    EXPECT_EQ(y.b, 2u);
}

// galloc_mempool_create_id: a replayer recreates a recorded run's pools with
// their ids (a graph's {0, 2} before its {0, 1}, a MemPool's {7, 0});
// galloc_mempool_create counts on from above them; the default pool's id and
// one in use are refused. A segment allocated through a route names its pool.
int SegmentPool(void *ctx, const galloc_segment_view_t *v)
{
    *static_cast<galloc_mempool_id_t *>(ctx) = v->pool;
    return 1;
}

TEST_F(MemPool, CreateWithTheRecordedId)
{
    galloc_mempool_id_t x;
    ASSERT_EQ(galloc_mempool_create_id(a_, {0, 2}), GALLOC_OK);
    ASSERT_EQ(galloc_mempool_create_id(a_, {0, 1}), GALLOC_OK);
    ASSERT_EQ(galloc_mempool_create_id(a_, {7, 0}), GALLOC_OK);
    ASSERT_EQ(galloc_mempool_create(a_, &x), GALLOC_OK);
    EXPECT_EQ(x.a, 0u);
    EXPECT_EQ(x.b, 3u);
    EXPECT_EQ(galloc_mempool_create_id(a_, {0, 2}), GALLOC_E_INVAL);
    EXPECT_NE(Err().find("(0, 2) is in use"), std::string::npos) << Err();
    EXPECT_EQ(galloc_mempool_create_id(a_, {0, 0}), GALLOC_E_INVAL);
    EXPECT_EQ(galloc_mempool_create_id(nullptr, {0, 9}), GALLOC_E_INVAL);
    ASSERT_EQ(galloc_mempool_begin_allocate(a_, {0, 2}, GALLOC_ROUTE_THREAD, 0), GALLOC_OK);
    void *p = Alloc(4 * MiB);
    ASSERT_EQ(galloc_mempool_end_allocate(a_, {0, 2}), GALLOC_OK);
    galloc_mempool_id_t seen = {};
    ASSERT_EQ(galloc_segments_visit(a_, SegmentPool, &seen), GALLOC_OK);
    EXPECT_EQ(seen.a, 0u);
    EXPECT_EQ(seen.b, 2u);
    ASSERT_EQ(galloc_free(a_, p), GALLOC_OK);
    for (galloc_mempool_id_t id : {galloc_mempool_id_t{0, 2}, galloc_mempool_id_t{0, 1}, galloc_mempool_id_t{7, 0}, x})
        ASSERT_EQ(galloc_mempool_release(a_, id), GALLOC_OK);
}

TEST_F(MemPool, BlocksNeverCrossBetweenPools)
{
    galloc_mempool_id_t id;
    ASSERT_EQ(galloc_mempool_create(a_, &id), GALLOC_OK);
    ASSERT_EQ(galloc_mempool_begin_allocate(a_, id, GALLOC_ROUTE_THREAD, 0), GALLOC_OK);
    void *in_pool = Alloc(4096);
    ASSERT_EQ(galloc_mempool_end_allocate(a_, id), GALLOC_OK);
    ASSERT_EQ(galloc_free(a_, in_pool), GALLOC_OK);
    void *outside = Alloc(4096); // the pool's cached block is not the default pool's
    EXPECT_NE(outside, in_pool);
    EXPECT_EQ(Stats().segment[GALLOC_STAT_SMALL_POOL].current, 2);
    ASSERT_EQ(galloc_free(a_, outside), GALLOC_OK);
    ASSERT_EQ(galloc_mempool_begin_allocate(a_, id, GALLOC_ROUTE_THREAD, 0), GALLOC_OK);
    void *again = Alloc(4096); // ...and the pool reuses its own
    EXPECT_EQ(again, in_pool);
    ASSERT_EQ(galloc_mempool_end_allocate(a_, id), GALLOC_OK);
    ASSERT_EQ(galloc_free(a_, again), GALLOC_OK);
}

TEST_F(MemPool, ThreadRouteOnlyCoversItsThread)
{
    galloc_mempool_id_t id;
    ASSERT_EQ(galloc_mempool_create(a_, &id), GALLOC_OK);
    ASSERT_EQ(galloc_mempool_begin_allocate(a_, id, GALLOC_ROUTE_THREAD, 0), GALLOC_OK);
    void *mine = Alloc(4096);
    void *theirs = nullptr;
    std::thread t([&] { EXPECT_EQ(galloc_malloc(a_, 4096, 0, &theirs), GALLOC_OK); });
    t.join();
    ASSERT_EQ(galloc_mempool_end_allocate(a_, id), GALLOC_OK);
    // Different pools, so different segments: not 512 bytes apart in one segment.
    EXPECT_NE(static_cast<char *>(theirs) - static_cast<char *>(mine), 4096);
    EXPECT_EQ(Stats().segment[GALLOC_STAT_ALL].current, 2);
    galloc_free(a_, mine);
    galloc_free(a_, theirs);
}

TEST_F(MemPool, StreamRouteOnlyCoversItsStream)
{
    galloc_mempool_id_t id;
    ASSERT_EQ(galloc_mempool_create(a_, &id), GALLOC_OK);
    ASSERT_EQ(galloc_mempool_begin_allocate(a_, id, GALLOC_ROUTE_STREAM, 5), GALLOC_OK);
    void *p5 = Alloc(4096, 5);
    void *p0 = Alloc(4096, 0);
    ASSERT_EQ(galloc_mempool_end_allocate(a_, id), GALLOC_OK);
    galloc_free(a_, p5);
    ASSERT_EQ(galloc_mempool_release(a_, id), GALLOC_OK);
    ASSERT_EQ(galloc_empty_cache(a_), GALLOC_OK);
    // The released pool's segment went back; the default one holds p0.
    EXPECT_EQ(Stats().segment[GALLOC_STAT_ALL].current, 1);
    galloc_free(a_, p0);
}

TEST_F(MemPool, ReleasedPoolKeepsLiveBlocksThenDisappears)
{
    galloc_mempool_id_t id;
    ASSERT_EQ(galloc_mempool_create(a_, &id), GALLOC_OK);
    ASSERT_EQ(galloc_mempool_begin_allocate(a_, id, GALLOC_ROUTE_THREAD, 0), GALLOC_OK);
    void *p = Alloc(30 * MiB);
    ASSERT_EQ(galloc_mempool_end_allocate(a_, id), GALLOC_OK);
    ASSERT_EQ(galloc_mempool_release(a_, id), GALLOC_OK);
    ASSERT_EQ(galloc_empty_cache(a_), GALLOC_OK);
    EXPECT_EQ(Stats().reserved_bytes[GALLOC_STAT_ALL].current, (int64_t)(30 * MiB)); // still in use
    ASSERT_EQ(galloc_free(a_, p), GALLOC_OK);
    ASSERT_EQ(galloc_empty_cache(a_), GALLOC_OK);
    EXPECT_EQ(Stats().reserved_bytes[GALLOC_STAT_ALL].current, 0);
    EXPECT_EQ(galloc_mempool_begin_allocate(a_, id, GALLOC_ROUTE_THREAD, 0), GALLOC_E_INVAL); // gone
}

TEST_F(MemPool, MisuseIsRefused)
{
    galloc_mempool_id_t id, bogus = {7, 7};
    ASSERT_EQ(galloc_mempool_create(a_, &id), GALLOC_OK);
    EXPECT_EQ(galloc_mempool_create(a_, nullptr), GALLOC_E_INVAL);
    EXPECT_EQ(galloc_mempool_begin_allocate(a_, bogus, GALLOC_ROUTE_THREAD, 0), GALLOC_E_INVAL);
    EXPECT_EQ(galloc_mempool_begin_allocate(a_, id, (galloc_route_t)9, 0), GALLOC_E_INVAL);
    ASSERT_EQ(galloc_mempool_begin_allocate(a_, id, GALLOC_ROUTE_THREAD, 0), GALLOC_OK);
    EXPECT_EQ(galloc_mempool_begin_allocate(a_, id, GALLOC_ROUTE_STREAM, 1), GALLOC_E_INVAL);
    EXPECT_NE(Err().find("already recording to mempool_id"), std::string::npos) << Err();
    EXPECT_EQ(galloc_mempool_release(a_, id), GALLOC_E_INVAL); // still routed to
    ASSERT_EQ(galloc_mempool_end_allocate(a_, id), GALLOC_OK);
    EXPECT_EQ(galloc_mempool_end_allocate(a_, id), GALLOC_E_INVAL);
    EXPECT_NE(Err().find("not currently recording"), std::string::npos) << Err();
    ASSERT_EQ(galloc_mempool_release(a_, id), GALLOC_OK);
    EXPECT_EQ(galloc_mempool_release(a_, id), GALLOC_E_INVAL);
    EXPECT_EQ(galloc_mempool_release(nullptr, id), GALLOC_E_INVAL);
}

TEST_F(MemPool, NoFlushWhileRoutingAndThePrivatePartOfTheOomMessage)
{
    Make("sim_capacity:64MiB");
    galloc_mempool_id_t id;
    ASSERT_EQ(galloc_mempool_create(a_, &id), GALLOC_OK);
    ASSERT_EQ(galloc_mempool_begin_allocate(a_, id, GALLOC_ROUTE_THREAD, 0), GALLOC_OK);
    void *p = Alloc(30 * MiB);
    ASSERT_EQ(galloc_free(a_, p), GALLOC_OK); // 30 MiB cached in the private pool
    void *q = nullptr;
    // 40 MiB does not fit next to the cached 30 MiB, and during routing there is no flush.
    EXPECT_EQ(galloc_malloc(a_, 40 * MiB, 0, &q), GALLOC_E_OOM);
    galloc_stats_t st = Stats();
    EXPECT_EQ(st.num_alloc_retries, 0);
    EXPECT_EQ(st.num_sync_all_streams, 0);
    EXPECT_EQ(st.num_ooms, 1);
    EXPECT_NE(Err().find("Of the allocated memory 30.00 MiB is allocated by PyTorch, with 30.00 MiB allocated in "
                         "private pools (e.g., CUDA Graphs), and 0 bytes is reserved by PyTorch but unallocated."),
              std::string::npos)
        << Err();
    ASSERT_EQ(galloc_mempool_end_allocate(a_, id), GALLOC_OK);
}

// A block freed with stream uses while a route is active records no event:
// PyTorch defers it (deferred_blocks), since an event queried during a
// capture invalidates the capture. It stays active pending free through the
// route, and the first malloc after the route records its events, so work
// the using stream finished during the route does not count: the block comes
// back once that stream is synchronized after the route. sim has no capture
// graph, so graph_capture_record_stream_reuse changes nothing here.
TEST_F(MemPool, StreamUsesFreedDuringARouteWaitForItsEnd)
{
    constexpr int ALL = GALLOC_STAT_ALL;
    for (const char *conf :
         {"sim_manual_events:True", "sim_manual_events:True,graph_capture_record_stream_reuse:True"}) {
        SCOPED_TRACE(conf);
        Make(conf);
        galloc_settings_t set = {};
        set.struct_size = sizeof set;
        ASSERT_EQ(galloc_settings_get(a_, &set), GALLOC_OK);
        EXPECT_EQ(set.graph_capture_record_stream_reuse, strstr(conf, "graph_capture") != nullptr);
        galloc_mempool_id_t id;
        void *p = nullptr;
        ASSERT_NO_FATAL_FAILURE(FreeUsedOnS1DuringARoute(&id, &p));
        galloc_stats_t st = Stats();
        EXPECT_EQ(st.allocation[ALL].current, 0);
        EXPECT_EQ(st.allocated_bytes[ALL].current, 0);
        EXPECT_EQ(st.active[ALL].current, 1);
        EXPECT_EQ(st.active_bytes[ALL].current, (int64_t)(4 * MiB));
        ASSERT_EQ(galloc_stream_synchronize(a_, S1), GALLOC_OK); // no event recorded yet: nothing to wait for
        void *q = Alloc(4 * MiB, S);
        EXPECT_EQ(q, (char *)p + 4 * MiB); // p is still deferred: the rest of its segment serves
        ASSERT_EQ(galloc_free(a_, q), GALLOC_OK);
        EXPECT_EQ(galloc_check(a_), GALLOC_OK) << Err();
        ASSERT_EQ(galloc_mempool_end_allocate(a_, id), GALLOC_OK);

        void *r = Alloc(512, S); // records p's event now; S1 has not been synchronized since
        EXPECT_EQ(Stats().active_bytes[ALL].current, (int64_t)(4 * MiB + 512));
        ASSERT_EQ(galloc_stream_synchronize(a_, S1), GALLOC_OK);
        void *t = Alloc(512, S); // p's event is done: p returns to the private pool
        st = Stats();
        EXPECT_EQ(st.active[ALL].current, 2);
        EXPECT_EQ(st.active_bytes[ALL].current, 1024);
        EXPECT_EQ(st.num_sync_all_streams, 0);
        EXPECT_EQ(galloc_check(a_), GALLOC_OK) << Err();
        ASSERT_EQ(galloc_free(a_, r), GALLOC_OK);
        ASSERT_EQ(galloc_free(a_, t), GALLOC_OK);
        ASSERT_EQ(galloc_mempool_release(a_, id), GALLOC_OK);
    }
}

// empty_cache during a route leaves a deferred block deferred; after the
// route it records the block's event and waits for it (num_sync_all_streams
// counts the call), and the block's segment is released.
TEST_F(MemPool, EmptyCacheTakesDeferredFreesOnlyAfterTheRoute)
{
    constexpr int ALL = GALLOC_STAT_ALL;
    Make("sim_manual_events:True");
    galloc_mempool_id_t id;
    void *p = nullptr;
    ASSERT_NO_FATAL_FAILURE(FreeUsedOnS1DuringARoute(&id, &p));
    ASSERT_EQ(galloc_empty_cache(a_), GALLOC_OK);
    galloc_stats_t st = Stats();
    EXPECT_EQ(st.active_bytes[ALL].current, (int64_t)(4 * MiB)); // still deferred
    EXPECT_EQ(st.reserved_bytes[ALL].current, (int64_t)(20 * MiB));
    ASSERT_EQ(galloc_mempool_end_allocate(a_, id), GALLOC_OK);
    ASSERT_EQ(galloc_mempool_release(a_, id), GALLOC_OK);
    uint64_t syncs = (uint64_t)st.num_sync_all_streams;
    ASSERT_EQ(galloc_empty_cache(a_), GALLOC_OK);
    st = Stats();
    EXPECT_EQ((uint64_t)st.num_sync_all_streams, syncs + 1);
    EXPECT_EQ(st.active_bytes[ALL].current, 0);
    EXPECT_EQ(st.reserved_bytes[ALL].current, 0);
}

// The device is full (one 20 MiB segment, the pool's): a default-pool 4 MiB
// request takes the front of the pool's cached block; the rest stays cached
// in the pool, and the block goes back to the pool when freed.
TEST_F(MemPool, UseOnOomServesTheDefaultPoolFromThePoolsCache)
{
    galloc_mempool_id_t id;
    void *cached = PoolWithCachedSegment("sim_capacity:20MiB", GALLOC_MEMPOOL_USE_ON_OOM, &id);
    void *p = Alloc(4 * MiB);
    EXPECT_EQ(p, cached);
    galloc_stats_t st = Stats();
    EXPECT_EQ(st.allocation[GALLOC_STAT_LARGE_POOL].current, 1);
    EXPECT_EQ(st.allocated_bytes[GALLOC_STAT_LARGE_POOL].current, (int64_t)(4 * MiB));
    EXPECT_EQ(st.requested_bytes[GALLOC_STAT_LARGE_POOL].current, (int64_t)(4 * MiB));
    EXPECT_EQ(st.reserved_bytes[GALLOC_STAT_ALL].current, (int64_t)(20 * MiB));
    EXPECT_EQ(st.segment[GALLOC_STAT_ALL].current, 1);
    EXPECT_EQ(st.inactive_split[GALLOC_STAT_LARGE_POOL].current, 1);
    EXPECT_EQ(st.inactive_split_bytes[GALLOC_STAT_LARGE_POOL].current, (int64_t)(16 * MiB));
    EXPECT_EQ(st.num_device_alloc, 1);
    EXPECT_EQ(st.num_device_free, 0);
    EXPECT_EQ(st.num_alloc_retries, 0); // the fallback is not a retry (PyTorch main)
    EXPECT_EQ(st.num_ooms, 0);
    ASSERT_EQ(galloc_free(a_, p), GALLOC_OK);
    // Back in the pool, which empty_cache leaves alone while it is live.
    ASSERT_EQ(galloc_empty_cache(a_), GALLOC_OK);
    st = Stats();
    EXPECT_EQ(st.reserved_bytes[GALLOC_STAT_ALL].current, (int64_t)(20 * MiB));
    EXPECT_EQ(st.inactive_split[GALLOC_STAT_ALL].current, 0);
    EXPECT_EQ(Alloc(4 * MiB), cached); // and serves the next one the same way
}

TEST_F(MemPool, WithoutUseOnOomTheSameRequestIsAnOom)
{
    galloc_mempool_id_t id;
    PoolWithCachedSegment("sim_capacity:20MiB", 0, &id);
    void *p = nullptr;
    EXPECT_EQ(galloc_malloc(a_, 4 * MiB, 0, &p), GALLOC_E_OOM);
    galloc_stats_t st = Stats();
    EXPECT_EQ(st.num_ooms, 1);
    EXPECT_EQ(st.num_alloc_retries, 1); // the flush and retry found nothing freeable
    EXPECT_EQ(st.allocation[GALLOC_STAT_ALL].current, 0);
    EXPECT_EQ(st.reserved_bytes[GALLOC_STAT_ALL].current, (int64_t)(20 * MiB));
}

// The fallback comes before any cache is freed: the default pool's own
// cached 2 MiB small segment, which cannot serve 4 MiB, stays.
TEST_F(MemPool, UseOnOomComesBeforeTheCacheFlush)
{
    galloc_mempool_id_t id;
    void *cached = PoolWithCachedSegment("sim_capacity:22MiB", GALLOC_MEMPOOL_USE_ON_OOM, &id);
    ASSERT_EQ(galloc_free(a_, Alloc(4096)), GALLOC_OK); // a cached small segment of the default pool
    EXPECT_EQ(Alloc(4 * MiB), cached);
    galloc_stats_t st = Stats();
    EXPECT_EQ(st.segment[GALLOC_STAT_SMALL_POOL].current, 1);
    EXPECT_EQ(st.num_device_free, 0);
    EXPECT_EQ(st.num_alloc_retries, 0);
}

// Only cached blocks: a use_on_oom pool is never grown for the default pool.
TEST_F(MemPool, UseOnOomNeverGrowsThePool)
{
    Make("sim_capacity:20MiB");
    galloc_mempool_id_t id;
    ASSERT_EQ(galloc_mempool_create(a_, &id), GALLOC_OK);
    ASSERT_EQ(galloc_mempool_set_flags(a_, id, GALLOC_MEMPOOL_USE_ON_OOM), GALLOC_OK);
    void *big = Alloc(20 * MiB); // the whole device, default pool
    void *p = nullptr;
    EXPECT_EQ(galloc_malloc(a_, 4 * MiB, 0, &p), GALLOC_E_OOM);
    galloc_stats_t st = Stats();
    EXPECT_EQ(st.segment[GALLOC_STAT_ALL].current, 1);
    EXPECT_EQ(st.num_device_alloc, 1);
    EXPECT_EQ(st.num_ooms, 1);
    ASSERT_EQ(galloc_free(a_, big), GALLOC_OK);
}

// A released pool (MemPool's destructor) is no longer a fallback: PyTorch
// removes it from use_on_oom_pools first. Its cached segment is then freed by
// the flush, and the retry gets a default-pool segment.
TEST_F(MemPool, AReleasedPoolIsNoFallback)
{
    galloc_mempool_id_t id;
    void *cached = PoolWithCachedSegment("sim_capacity:20MiB", GALLOC_MEMPOOL_USE_ON_OOM, &id);
    ASSERT_EQ(galloc_mempool_release(a_, id), GALLOC_OK);
    void *p = Alloc(4 * MiB);
    EXPECT_NE(p, nullptr);
    galloc_stats_t st = Stats();
    EXPECT_EQ(st.num_alloc_retries, 1);
    EXPECT_EQ(st.num_device_free, 1);
    EXPECT_EQ(st.num_device_alloc, 2);
    EXPECT_EQ(st.allocated_bytes[GALLOC_STAT_LARGE_POOL].current, (int64_t)(4 * MiB));
    EXPECT_EQ(galloc_mempool_set_flags(a_, id, 0), GALLOC_E_INVAL); // released
    (void)cached;
    ASSERT_EQ(galloc_free(a_, p), GALLOC_OK);
}

// Clearing the flag (flags 0) turns the fallback off again.
TEST_F(MemPool, ClearingTheFlagEndsTheFallback)
{
    galloc_mempool_id_t id;
    PoolWithCachedSegment("sim_capacity:20MiB", GALLOC_MEMPOOL_USE_ON_OOM, &id);
    ASSERT_EQ(galloc_mempool_set_flags(a_, id, 0), GALLOC_OK);
    void *p = nullptr;
    EXPECT_EQ(galloc_malloc(a_, 4 * MiB, 0, &p), GALLOC_E_OOM);
}

// no_split: every allocation takes a whole block; allocated_bytes counts it
// whole, requested_bytes what was asked for, and nothing is inactive_split.
TEST_F(MemPool, NoSplitHandsOutWholeBlocks)
{
    Make("");
    galloc_mempool_id_t id;
    ASSERT_EQ(galloc_mempool_create(a_, &id), GALLOC_OK);
    ASSERT_EQ(galloc_mempool_set_flags(a_, id, GALLOC_MEMPOOL_NO_SPLIT), GALLOC_OK);
    ASSERT_EQ(galloc_mempool_begin_allocate(a_, id, GALLOC_ROUTE_THREAD, 0), GALLOC_OK);
    void *large = Alloc(4 * MiB);
    void *s1 = Alloc(512);
    void *s2 = Alloc(512);
    galloc_stats_t st = Stats();
    EXPECT_EQ(st.allocated_bytes[GALLOC_STAT_LARGE_POOL].current, (int64_t)(20 * MiB));
    EXPECT_EQ(st.requested_bytes[GALLOC_STAT_LARGE_POOL].current, (int64_t)(4 * MiB));
    EXPECT_EQ(st.allocated_bytes[GALLOC_STAT_SMALL_POOL].current, (int64_t)(4 * MiB)); // two whole 2 MiB segments
    EXPECT_EQ(st.requested_bytes[GALLOC_STAT_SMALL_POOL].current, 1024);
    EXPECT_EQ(st.segment[GALLOC_STAT_SMALL_POOL].current, 2);
    EXPECT_EQ(st.inactive_split[GALLOC_STAT_ALL].current, 0);
    EXPECT_EQ(st.inactive_split_bytes[GALLOC_STAT_ALL].current, 0);
    // A freed whole block serves a smaller request whole.
    ASSERT_EQ(galloc_free(a_, large), GALLOC_OK);
    EXPECT_EQ(Alloc(1536 * 1024), large);
    st = Stats();
    EXPECT_EQ(st.allocated_bytes[GALLOC_STAT_LARGE_POOL].current, (int64_t)(20 * MiB));
    EXPECT_EQ(st.segment[GALLOC_STAT_LARGE_POOL].current, 1);
    ASSERT_EQ(galloc_mempool_end_allocate(a_, id), GALLOC_OK);
    // The default pool still splits.
    void *d = Alloc(4 * MiB);
    st = Stats();
    EXPECT_EQ(st.allocated_bytes[GALLOC_STAT_LARGE_POOL].current, (int64_t)(24 * MiB));
    EXPECT_EQ(st.inactive_split[GALLOC_STAT_LARGE_POOL].current, 1);
    EXPECT_EQ(st.inactive_split_bytes[GALLOC_STAT_LARGE_POOL].current, (int64_t)(16 * MiB));
    ASSERT_EQ(galloc_free(a_, d), GALLOC_OK);
    ASSERT_EQ(galloc_free(a_, s1), GALLOC_OK);
    ASSERT_EQ(galloc_free(a_, s2), GALLOC_OK);
}

// A use_on_oom pool that is also no_split gives its cached block whole.
TEST_F(MemPool, AFallbackIntoANoSplitPoolTakesTheWholeBlock)
{
    galloc_mempool_id_t id;
    void *cached =
        PoolWithCachedSegment("sim_capacity:20MiB", GALLOC_MEMPOOL_USE_ON_OOM | GALLOC_MEMPOOL_NO_SPLIT, &id);
    EXPECT_EQ(Alloc(4 * MiB), cached);
    galloc_stats_t st = Stats();
    EXPECT_EQ(st.allocated_bytes[GALLOC_STAT_LARGE_POOL].current, (int64_t)(20 * MiB));
    EXPECT_EQ(st.requested_bytes[GALLOC_STAT_LARGE_POOL].current, (int64_t)(4 * MiB));
    EXPECT_EQ(st.inactive_split[GALLOC_STAT_ALL].current, 0);
}

TEST_F(MemPool, BadCallsAreRefused)
{
    Make("");
    galloc_mempool_id_t id, unknown = {0, 99};
    ASSERT_EQ(galloc_mempool_create(a_, &id), GALLOC_OK);
    EXPECT_EQ(galloc_mempool_set_flags(a_, id, 4), GALLOC_E_INVAL);
    EXPECT_NE(Err().find("unknown flags"), std::string::npos) << Err();
    EXPECT_EQ(galloc_mempool_set_flags(a_, unknown, 0), GALLOC_E_INVAL);
    EXPECT_EQ(galloc_mempool_set_flags(nullptr, id, 0), GALLOC_E_INVAL);
    // An allocator without private pools: user_allocator_test (GALLOC_E_UNSUPPORTED).
}

} // namespace
