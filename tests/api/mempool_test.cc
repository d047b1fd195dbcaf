// mempool_test: private pools through the public API (PyTorch's MemPool and
// graph pools): isolation, routing by thread and by stream, release, the
// capture-like behaviour while routing, and the OOM message's private part.
#include <gtest/gtest.h>

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
    galloc_stats_t Stats()
    {
        galloc_stats_t st;
        st.struct_size = sizeof st;
        galloc_memory_stats(a_, &st);
        return st;
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

} // namespace
