// inspect_test: galloc_inspect.h through the public API on the sim device:
// galloc_usable_size (what allocated_bytes counts for a block: PyTorch's
// rounding, unsplit remainders, roundup_power2_divisions; not owned after a
// free, inside a block, for another allocator's pointer; the stripe path from
// threads on their own streams), galloc_memory_reserved (every segment made
// and released, from another thread) and an allocator without segments of its
// own; galloc_segments_visit is inspect_segments_test.cc's. Tagged
// "concurrency": CI also runs it under TSan.
#include "tests/api/inspect_fixture.h"

namespace {

using namespace inspect_fixture; // the fixture (inspect_fixture.h)

// ---- galloc_usable_size ----

TEST_F(Inspect, OneByteIs512)
{
    void *p = Malloc(1);
    EXPECT_EQ(Usable(p), 512u);
    EXPECT_EQ(StatsOf(a_).allocated_bytes[GALLOC_STAT_ALL].current, 512);
    EXPECT_EQ(galloc_free(a_, p), GALLOC_OK);
}

// 1 MiB + 1 rounds to the next 512 bytes and goes to the large pool; its
// 20 MiB segment's remainder (more than 1 MiB) is split off.
TEST_F(Inspect, OneMiBPlusOneIsRoundedTo512Bytes)
{
    void *p = Malloc(MiB + 1);
    EXPECT_EQ(Usable(p), 1049088u);
    galloc_stats_t st = StatsOf(a_);
    EXPECT_EQ(st.allocated_bytes[GALLOC_STAT_LARGE_POOL].current, 1049088);
    EXPECT_EQ(st.reserved_bytes[GALLOC_STAT_ALL].current, (int64_t)(20 * MiB));
    EXPECT_EQ(galloc_free(a_, p), GALLOC_OK);
}

// A large block is split only when more than 1 MiB would remain (PyTorch's
// should_split): 19.5 MiB in a 20 MiB segment and 19 MiB (exactly 1 MiB
// left) both get the whole segment, and allocated_bytes counts it.
TEST_F(Inspect, AnUnsplitRemainderGoesWithTheBlock)
{
    void *p = Malloc(19 * MiB + 512 * KiB);
    EXPECT_EQ(Usable(p), 20 * MiB);
    void *q = Malloc(19 * MiB);
    EXPECT_EQ(Usable(q), 20 * MiB);
    EXPECT_EQ(StatsOf(a_).allocated_bytes[GALLOC_STAT_ALL].current, (int64_t)(40 * MiB));
    EXPECT_EQ(galloc_free(a_, q), GALLOC_OK);
    // The cached 20 MiB block serves 18 MiB + 1 with 2 MiB - 512 left over: split.
    void *r = Malloc(18 * MiB + 1);
    EXPECT_EQ(Usable(r), 18 * MiB + 512);
    EXPECT_EQ(galloc_free(a_, p), GALLOC_OK);
    EXPECT_EQ(galloc_free(a_, r), GALLOC_OK);
}

// roundup_power2_divisions:4: 1200 B is not above 512 * 4 and rounds to
// 512 bytes (1536); 3000 B to 3072; 5 MiB + 1 to the next quarter of 4 MiB
// above it, 6 MiB.
TEST_F(Inspect, RoundupPower2Divisions)
{
    Make("sim_capacity:1GiB,roundup_power2_divisions:4");
    void *a = Malloc(1200), *b = Malloc(3000), *c = Malloc(5 * MiB + 1);
    EXPECT_EQ(Usable(a), 1536u);
    EXPECT_EQ(Usable(b), 3072u);
    EXPECT_EQ(Usable(c), 6 * MiB);
    EXPECT_EQ(StatsOf(a_).allocated_bytes[GALLOC_STAT_ALL].current, (int64_t)(1536 + 3072 + 6 * MiB));
    for (void *p : {a, b, c})
        EXPECT_EQ(galloc_free(a_, p), GALLOC_OK);
}

// While history is recorded every call takes the locked path: same answers.
TEST_F(Inspect, TheLockedPathAnswersTheSame)
{
    void *p = Malloc(MiB + 1, 5);
    galloc_history_options_t h = {sizeof h, GALLOC_HISTORY_ALL, GALLOC_CONTEXT_NONE, GALLOC_STACKS_PYTHON, 0};
    ASSERT_EQ(galloc_record_memory_history(a_, &h), GALLOC_OK);
    EXPECT_EQ(Usable(p), 1049088u);
    EXPECT_EQ(galloc_free(a_, p), GALLOC_OK);
    size_t n = 99;
    EXPECT_EQ(galloc_usable_size(a_, p, &n), GALLOC_E_NOT_OWNED);
    EXPECT_EQ(n, 0u);
}

TEST_F(Inspect, NotOwnedAfterFreeInsideABlockAndForAnotherAllocator)
{
    void *p = Malloc(4096);
    size_t n = 99;
    EXPECT_EQ(galloc_usable_size(a_, static_cast<char *>(p) + 512, &n), GALLOC_E_NOT_OWNED);
    EXPECT_EQ(n, 0u);
    galloc_allocator_t *other = nullptr;
    char err[GALLOC_ERROR_MAX] = "";
    ASSERT_EQ(galloc_allocator_create("sim", 1, "sim_capacity:1GiB", &other, err, sizeof err), GALLOC_OK) << err;
    void *q = nullptr;
    ASSERT_EQ(galloc_malloc(other, 4096, 0, &q), GALLOC_OK);
    n = 99;
    EXPECT_EQ(galloc_usable_size(a_, q, &n), GALLOC_E_NOT_OWNED);
    EXPECT_EQ(n, 0u);
    EXPECT_EQ(galloc_usable_size(other, q, &n), GALLOC_OK);
    EXPECT_EQ(n, 4096u);
    EXPECT_EQ(galloc_free(other, q), GALLOC_OK);
    galloc_allocator_destroy(other);
    EXPECT_EQ(galloc_usable_size(other, q, &n), GALLOC_E_DESTROYED);
    EXPECT_EQ(galloc_free(a_, p), GALLOC_OK);
    n = 99;
    EXPECT_EQ(galloc_usable_size(a_, p, &n), GALLOC_E_NOT_OWNED);
    EXPECT_EQ(n, 0u);
    EXPECT_NE(Err().find("usable_size"), std::string::npos) << Err();
}

TEST_F(Inspect, NullArgumentsAreInvalid)
{
    void *p = Malloc(1);
    size_t n = 99;
    EXPECT_EQ(galloc_usable_size(nullptr, p, &n), GALLOC_E_INVAL);
    EXPECT_EQ(n, 0u);
    EXPECT_EQ(galloc_usable_size(a_, nullptr, &n), GALLOC_E_INVAL);
    EXPECT_EQ(galloc_usable_size(a_, p, nullptr), GALLOC_E_INVAL);
    std::vector<Segment> segs;
    EXPECT_EQ(galloc_segments_visit(nullptr, Collect, &segs), GALLOC_E_INVAL);
    EXPECT_EQ(galloc_segments_visit(a_, nullptr, &segs), GALLOC_E_INVAL);
    EXPECT_TRUE(segs.empty());
    EXPECT_EQ(galloc_free(a_, p), GALLOC_OK);
}

// A block allocated on one stream by one thread, asked about from another
// thread (whose search starts elsewhere), a private pool's and an oversize
// one: the size is the block's wherever the lookup finds it.
TEST_F(Inspect, AnyThreadAnyStreamAnyPool)
{
    Make("sim_capacity:1GiB,max_split_size_mb:40");
    void *p = Malloc(1000, 7);
    void *big = Malloc(50 * MiB + 1, 7); // oversize (>= max_split_size): never split, its whole 52 MiB segment
    galloc_mempool_id_t id{};
    ASSERT_EQ(galloc_mempool_create(a_, &id), GALLOC_OK);
    ASSERT_EQ(galloc_mempool_begin_allocate(a_, id, GALLOC_ROUTE_THREAD, 0), GALLOC_OK);
    void *q = Malloc(3000, 9);
    ASSERT_EQ(galloc_mempool_end_allocate(a_, id), GALLOC_OK);
    size_t sizes[3] = {};
    std::thread t([&] {
        for (int i = 0; i < 3; i++)
            EXPECT_EQ(galloc_usable_size(a_, i == 0 ? p : i == 1 ? big : q, &sizes[i]), GALLOC_OK);
    });
    t.join();
    EXPECT_EQ(sizes[0], 1024u);
    EXPECT_EQ(sizes[1], 52 * MiB);
    EXPECT_EQ(sizes[2], 3072u);
    for (void *x : {p, big, q})
        EXPECT_EQ(galloc_free(a_, x), GALLOC_OK);
    EXPECT_EQ(galloc_mempool_release(a_, id), GALLOC_OK);
}

// ---- galloc_memory_reserved ----

int64_t Reserved(galloc_allocator_t *a)
{
    int64_t r = -1;
    EXPECT_EQ(galloc_memory_reserved(a, &r), GALLOC_OK);
    return r;
}

TEST_F(Inspect, MemoryReservedFollowsEverySegment)
{
    EXPECT_EQ(Reserved(a_), 0);
    void *small = Malloc(1); // a 2 MiB small segment
    EXPECT_EQ(Reserved(a_), int64_t(2 * MiB));
    void *mid = Malloc(5 * MiB); // a 20 MiB large segment (kLargeBuffer)
    EXPECT_EQ(Reserved(a_), int64_t(22 * MiB));
    void *big = Malloc(30 * MiB + 1); // its own segment, rounded to 2 MiB
    EXPECT_EQ(Reserved(a_), int64_t(54 * MiB));
    EXPECT_EQ(Reserved(a_), StatsOf(a_).reserved_bytes[GALLOC_STAT_ALL].current);
    void *hit = Malloc(1, 7); // another stream: its own small segment ...
    ASSERT_EQ(galloc_free(a_, hit), GALLOC_OK);
    void *again = Malloc(1, 7); // ... and a cache hit on it (the stripe path): no change
    EXPECT_EQ(Reserved(a_), int64_t(56 * MiB));
    for (void *p : {small, mid, big, again})
        ASSERT_EQ(galloc_free(a_, p), GALLOC_OK);
    EXPECT_EQ(Reserved(a_), int64_t(56 * MiB)); // cached
    ASSERT_EQ(galloc_empty_cache(a_), GALLOC_OK);
    EXPECT_EQ(Reserved(a_), 0);
    EXPECT_EQ(Reserved(a_), StatsOf(a_).reserved_bytes[GALLOC_STAT_ALL].current);
    int64_t r = 5;
    EXPECT_EQ(galloc_memory_reserved(nullptr, &r), GALLOC_E_INVAL);
    EXPECT_EQ(galloc_memory_reserved(a_, nullptr), GALLOC_E_INVAL);
}

// Read from another thread while workers allocate and empty the cache: never
// more than the device, never negative; exact again once they are done.
TEST_F(Inspect, MemoryReservedFromAnotherThread)
{
    std::atomic<bool> done{false};
    std::atomic<int> bad{0};
    std::thread reader([&] {
        while (!done.load()) {
            int64_t r = Reserved(a_);
            bad += r < 0 || r > int64_t(1) << 30;
        }
    });
    std::vector<std::thread> ws;
    for (int w = 0; w < 2; w++)
        ws.emplace_back([&, w] {
            for (int i = 0; i < 500; i++) {
                void *p = nullptr;
                bad += galloc_malloc(a_, (1 + i % 7) * MiB, (galloc_stream_t)(w + 1), &p) != GALLOC_OK;
                bad += galloc_free(a_, p) != GALLOC_OK;
                if (i % 50 == 0)
                    bad += galloc_empty_cache(a_) != GALLOC_OK;
            }
        });
    for (auto &t : ws)
        t.join();
    done = true;
    reader.join();
    EXPECT_EQ(bad.load(), 0);
    EXPECT_EQ(Reserved(a_), StatsOf(a_).reserved_bytes[GALLOC_STAT_ALL].current);
}

// ---- allocators without segments of their own ----

void *HostMalloc(void *, size_t size, int, galloc_stream_t)
{
    return ::operator new(size);
}
void HostFree(void *, void *p, size_t, int, galloc_stream_t)
{
    ::operator delete(p);
}

TEST(InspectUser, UsableSizeIsTheRequestAndThereAreNoSegments)
{
    galloc_user_allocator_t u{};
    u.struct_size = sizeof u;
    u.version = GALLOC_USER_ALLOCATOR_V1;
    u.malloc_fn = HostMalloc;
    u.free_fn = HostFree;
    galloc_allocator_t *a = nullptr;
    char err[GALLOC_ERROR_MAX] = "";
    ASSERT_EQ(galloc_allocator_create_user(&u, 0, &a, err, sizeof err), GALLOC_OK) << err;
    void *p = nullptr;
    ASSERT_EQ(galloc_malloc(a, 1000, 0, &p), GALLOC_OK);
    size_t n = 0;
    EXPECT_EQ(galloc_usable_size(a, p, &n), GALLOC_OK);
    EXPECT_EQ(n, 1000u);
    EXPECT_EQ(galloc_usable_size(a, static_cast<char *>(p) + 8, &n), GALLOC_E_NOT_OWNED);
    EXPECT_EQ(n, 0u);
    std::vector<Segment> segs;
    EXPECT_EQ(galloc_segments_visit(a, Collect, &segs), GALLOC_E_UNSUPPORTED);
    EXPECT_EQ(galloc_segments_visit(a, nullptr, &segs), GALLOC_E_INVAL);
    int64_t reserved = -1; // no memory_reserved member: the stats' figure
    EXPECT_EQ(galloc_memory_reserved(a, &reserved), GALLOC_OK);
    EXPECT_EQ(reserved, StatsOf(a).reserved_bytes[GALLOC_STAT_ALL].current);
    // No sleep here (no sleep_stats member): PyTorch's summary alone; needed is optional.
    std::string sum(8192, '\0');
    EXPECT_EQ(galloc_memory_summary(a, false, &sum[0], sum.size(), nullptr), GALLOC_OK);
    EXPECT_NE(sum.find("PyTorch CUDA memory summary, device ID 0"), std::string::npos) << sum.c_str();
    EXPECT_EQ(sum.find("galloc sleep and wake"), std::string::npos) << sum.c_str();
    EXPECT_EQ(galloc_free(a, p), GALLOC_OK);
    EXPECT_EQ(galloc_usable_size(a, p, &n), GALLOC_E_NOT_OWNED);
    EXPECT_EQ(galloc_check(a), GALLOC_OK);
    galloc_allocator_destroy(a);
}

} // namespace
