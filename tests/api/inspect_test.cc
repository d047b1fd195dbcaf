// inspect_test: galloc_inspect.h through the public API on the sim device:
// galloc_usable_size (what allocated_bytes counts for a block: PyTorch's
// rounding, unsplit remainders, roundup_power2_divisions; not owned after a
// free, inside a block, for another allocator's pointer; the stripe path from
// threads on their own streams) and galloc_segments_visit (segments tile
// reserved memory, blocks tile segments, states, pool ids, expandable
// segments' mapped ranges, sleeping tags left out), and galloc_memory_reserved
// (every segment made and released, from another thread). Tagged "concurrency":
// CI also runs it under TSan.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <string>
#include <thread>
#include <vector>

extern "C" {
#include <galloc/galloc.h>
}

namespace {

constexpr size_t KiB = size_t{1} << 10;
constexpr size_t MiB = size_t{1} << 20;

struct Block {
    uintptr_t address;
    size_t size, requested;
    galloc_block_state_t state;
};

struct Segment {
    uintptr_t address;
    size_t size;
    galloc_stream_t stream;
    bool small, expandable;
    galloc_mempool_id_t pool;
    std::vector<Block> blocks;
};

// The callback: copies each segment out (its block list is valid during the call only).
int Collect(void *ctx, const galloc_segment_view_t *s)
{
    auto *out = static_cast<std::vector<Segment> *>(ctx);
    Segment g{s->address, s->size, s->stream, s->small, s->expandable, s->pool, {}};
    for (size_t i = 0; i < s->n_blocks; i++)
        g.blocks.push_back({s->blocks[i].address, s->blocks[i].size, s->blocks[i].requested, s->blocks[i].state});
    out->push_back(g);
    return 0;
}

// The first way segs breaks the walk's contract, or "": blocks tile each
// segment in address order, and no two segments overlap.
std::string TileViolation(std::vector<Segment> segs)
{
    std::sort(segs.begin(), segs.end(), [](const Segment &x, const Segment &y) { return x.address < y.address; });
    uintptr_t last_end = 0;
    for (const Segment &s : segs) {
        if (s.address < last_end)
            return "segment " + std::to_string(s.address) + " overlaps the one before";
        if (s.blocks.empty())
            return "segment " + std::to_string(s.address) + " has no blocks";
        uintptr_t at = s.address;
        for (const Block &b : s.blocks) {
            if (b.address != at || b.size == 0 || b.size % 512 != 0)
                return "segment " + std::to_string(s.address) + ": block at " + std::to_string(b.address) + " where " +
                       std::to_string(at) + " was expected";
            at += b.size;
        }
        if (at != s.address + s.size)
            return "segment " + std::to_string(s.address) + ": blocks end at " + std::to_string(at);
        last_end = at;
    }
    return "";
}

size_t SegmentBytes(const std::vector<Segment> &segs)
{
    size_t n = 0;
    for (const Segment &s : segs)
        n += s.size;
    return n;
}

size_t BlockBytes(const std::vector<Segment> &segs, galloc_block_state_t state)
{
    size_t n = 0;
    for (const Segment &s : segs)
        for (const Block &b : s.blocks)
            n += b.state == state ? b.size : 0;
    return n;
}

galloc_stats_t StatsOf(galloc_allocator_t *a)
{
    galloc_stats_t st;
    st.struct_size = sizeof st;
    EXPECT_EQ(galloc_memory_stats(a, &st), GALLOC_OK);
    return st;
}

class Inspect : public ::testing::Test {
  protected:
    void SetUp() override { Make("sim_capacity:1GiB"); }
    void TearDown() override
    {
        if (a_ != nullptr) {
            EXPECT_EQ(galloc_check(a_), GALLOC_OK) << Err();
            galloc_allocator_destroy(a_);
        }
    }
    void Make(const char *conf)
    {
        if (a_ != nullptr)
            galloc_allocator_destroy(a_);
        a_ = nullptr;
        char err[GALLOC_ERROR_MAX] = "";
        ASSERT_EQ(galloc_allocator_create("sim", 0, conf, &a_, err, sizeof err), GALLOC_OK) << err;
    }
    std::string Err()
    {
        char m[GALLOC_ERROR_MAX] = "";
        galloc_last_error(a_, m, sizeof m);
        return m;
    }
    void *Malloc(size_t n, galloc_stream_t s = 0)
    {
        void *p = nullptr;
        EXPECT_EQ(galloc_malloc(a_, n, s, &p), GALLOC_OK) << Err();
        return p;
    }
    // The usable size, or 0 with a failure recorded.
    size_t Usable(const void *p)
    {
        size_t n = 12345;
        EXPECT_EQ(galloc_usable_size(a_, p, &n), GALLOC_OK) << Err();
        return n;
    }
    std::vector<Segment> Visit()
    {
        std::vector<Segment> segs;
        EXPECT_EQ(galloc_segments_visit(a_, Collect, &segs), GALLOC_OK) << Err();
        std::sort(segs.begin(), segs.end(), [](const Segment &x, const Segment &y) { return x.address < y.address; });
        EXPECT_EQ(TileViolation(segs), "");
        return segs;
    }
    // The walk's sums against the stats, read with nothing running beside.
    void ExpectSums(const std::vector<Segment> &segs)
    {
        galloc_stats_t st = StatsOf(a_);
        EXPECT_EQ((int64_t)SegmentBytes(segs), st.reserved_bytes[GALLOC_STAT_ALL].current);
        EXPECT_EQ((int64_t)BlockBytes(segs, GALLOC_BLOCK_ALLOCATED), st.allocated_bytes[GALLOC_STAT_ALL].current);
    }
    galloc_allocator_t *a_ = nullptr;
};

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

// ---- galloc_segments_visit ----

// One small and one large segment, each tiled by its blocks, with the
// requests, states and pools snapshots give.
TEST_F(Inspect, SegmentsAndBlocksAsSnapshotsListThem)
{
    void *s = Malloc(1, 3);
    void *l1 = Malloc(MiB + 1, 3);
    void *l2 = Malloc(3 * MiB, 3);
    std::vector<Segment> segs = Visit();
    ASSERT_EQ(segs.size(), 2u);
    const Segment &sm = segs[0].small ? segs[0] : segs[1];
    const Segment &lg = segs[0].small ? segs[1] : segs[0];
    EXPECT_TRUE(sm.small);
    EXPECT_FALSE(lg.small);
    EXPECT_EQ(sm.size, 2 * MiB);
    EXPECT_EQ(lg.size, 20 * MiB);
    for (const Segment *g : {&sm, &lg}) {
        EXPECT_EQ(g->stream, 3u);
        EXPECT_FALSE(g->expandable);
        EXPECT_EQ(g->pool.a, 0u);
        EXPECT_EQ(g->pool.b, 0u);
    }
    ASSERT_EQ(sm.blocks.size(), 2u);
    EXPECT_EQ(sm.blocks[0].address, (uintptr_t)s);
    EXPECT_EQ(sm.blocks[0].size, 512u);
    EXPECT_EQ(sm.blocks[0].requested, 1u);
    EXPECT_EQ(sm.blocks[0].state, GALLOC_BLOCK_ALLOCATED);
    EXPECT_EQ(sm.blocks[1].size, 2 * MiB - 512);
    EXPECT_EQ(sm.blocks[1].requested, 0u);
    EXPECT_EQ(sm.blocks[1].state, GALLOC_BLOCK_FREE);
    ASSERT_EQ(lg.blocks.size(), 3u);
    EXPECT_EQ(lg.blocks[0].address, (uintptr_t)l1);
    EXPECT_EQ(lg.blocks[0].size, 1049088u);
    EXPECT_EQ(lg.blocks[0].requested, MiB + 1);
    EXPECT_EQ(lg.blocks[1].address, (uintptr_t)l2);
    EXPECT_EQ(lg.blocks[1].size, 3 * MiB);
    EXPECT_EQ(lg.blocks[1].state, GALLOC_BLOCK_ALLOCATED);
    EXPECT_EQ(lg.blocks[2].size, 20 * MiB - 1049088 - 3 * MiB);
    EXPECT_EQ(lg.blocks[2].state, GALLOC_BLOCK_FREE);
    ExpectSums(segs);
    EXPECT_EQ(SegmentBytes(segs), 22 * MiB);
    EXPECT_EQ(BlockBytes(segs, GALLOC_BLOCK_ALLOCATED), 512 + 1049088 + 3 * MiB);
    for (void *p : {s, l1, l2})
        EXPECT_EQ(galloc_free(a_, p), GALLOC_OK);
    segs = Visit();
    ExpectSums(segs);
    EXPECT_EQ(BlockBytes(segs, GALLOC_BLOCK_FREE), 22 * MiB);
    ASSERT_EQ(galloc_empty_cache(a_), GALLOC_OK);
    EXPECT_TRUE(Visit().empty());
}

// A nonzero return stops the walk; the call still succeeds.
TEST_F(Inspect, TheCallbackStopsTheWalk)
{
    void *p = Malloc(1), *q = Malloc(MiB + 1), *r = Malloc(30 * MiB);
    int calls = 0;
    auto stop = [](void *ctx, const galloc_segment_view_t *) -> int {
        ++*static_cast<int *>(ctx);
        return 7;
    };
    EXPECT_EQ(galloc_segments_visit(a_, stop, &calls), GALLOC_OK);
    EXPECT_EQ(calls, 1);
    EXPECT_EQ(Visit().size(), 3u);
    for (void *x : {p, q, r})
        EXPECT_EQ(galloc_free(a_, x), GALLOC_OK);
}

// Expandable segments: one segment per contiguous mapped range. Three
// 20 MiB blocks map three 20 MiB pages of one range; freeing the middle one
// and emptying the cache unmaps its page, which splits the range in two.
TEST_F(Inspect, ExpandableSegmentsSplitAtUnmappedRanges)
{
    Make("sim_capacity:1GiB,expandable_segments:True");
    void *x = Malloc(20 * MiB), *y = Malloc(20 * MiB), *z = Malloc(20 * MiB);
    EXPECT_EQ(Usable(y), 20 * MiB);
    std::vector<Segment> segs = Visit();
    ASSERT_EQ(segs.size(), 1u);
    EXPECT_TRUE(segs[0].expandable);
    EXPECT_EQ(segs[0].address, (uintptr_t)x);
    EXPECT_EQ(segs[0].size, 60 * MiB);
    ExpectSums(segs);
    ASSERT_EQ(galloc_free(a_, y), GALLOC_OK);
    ASSERT_EQ(galloc_empty_cache(a_), GALLOC_OK);
    segs = Visit();
    ASSERT_EQ(segs.size(), 2u);
    EXPECT_EQ(segs[0].address, (uintptr_t)x);
    EXPECT_EQ(segs[0].size, 20 * MiB);
    EXPECT_EQ(segs[1].address, (uintptr_t)z);
    EXPECT_EQ(segs[1].size, 20 * MiB);
    for (const Segment &s : segs) {
        EXPECT_TRUE(s.expandable);
        EXPECT_FALSE(s.small);
        ASSERT_EQ(s.blocks.size(), 1u);
        EXPECT_EQ(s.blocks[0].state, GALLOC_BLOCK_ALLOCATED);
    }
    ExpectSums(segs);
    EXPECT_EQ(StatsOf(a_).reserved_bytes[GALLOC_STAT_ALL].current, (int64_t)(40 * MiB));
    EXPECT_EQ(galloc_free(a_, x), GALLOC_OK);
    EXPECT_EQ(galloc_free(a_, z), GALLOC_OK);
}

// A block freed while used on another stream waits, active, for that
// stream's work: pending free until the stream is synchronized and the next
// malloc sees its event complete.
TEST_F(Inspect, APendingFreeBlock)
{
    Make("sim_capacity:1GiB,sim_manual_events:True");
    void *p = Malloc(1000, 1);
    ASSERT_EQ(galloc_record_stream(a_, p, 2), GALLOC_OK);
    ASSERT_EQ(galloc_free(a_, p), GALLOC_OK);
    size_t n = 99;
    EXPECT_EQ(galloc_usable_size(a_, p, &n), GALLOC_E_NOT_OWNED); // freed by the caller
    std::vector<Segment> segs = Visit();
    ASSERT_EQ(segs.size(), 1u);
    ASSERT_EQ(segs[0].blocks.size(), 2u);
    EXPECT_EQ(segs[0].blocks[0].address, (uintptr_t)p);
    EXPECT_EQ(segs[0].blocks[0].size, 1024u);
    EXPECT_EQ(segs[0].blocks[0].requested, 1000u);
    EXPECT_EQ(segs[0].blocks[0].state, GALLOC_BLOCK_PENDING_FREE);
    EXPECT_EQ(segs[0].blocks[1].state, GALLOC_BLOCK_FREE);
    EXPECT_EQ(BlockBytes(segs, GALLOC_BLOCK_PENDING_FREE), 1024u);
    EXPECT_EQ(StatsOf(a_).active_bytes[GALLOC_STAT_ALL].current, 1024);
    ExpectSums(segs);
    ASSERT_EQ(galloc_stream_synchronize(a_, 2), GALLOC_OK);
    void *q = Malloc(1, 1);
    segs = Visit();
    ASSERT_EQ(segs.size(), 1u);
    EXPECT_EQ(BlockBytes(segs, GALLOC_BLOCK_PENDING_FREE), 0u);
    EXPECT_EQ(BlockBytes(segs, GALLOC_BLOCK_ALLOCATED), 512u);
    ExpectSums(segs);
    EXPECT_EQ(galloc_free(a_, q), GALLOC_OK);
}

// A MemPool's segment reports the pool's id, the default pools' {0, 0}.
TEST_F(Inspect, AMemPoolSegmentReportsItsId)
{
    galloc_mempool_id_t id{};
    ASSERT_EQ(galloc_mempool_create(a_, &id), GALLOC_OK);
    ASSERT_EQ(id.a, 0u);
    ASSERT_EQ(id.b, 1u);
    ASSERT_EQ(galloc_mempool_begin_allocate(a_, id, GALLOC_ROUTE_THREAD, 0), GALLOC_OK);
    void *in = Malloc(4096);
    ASSERT_EQ(galloc_mempool_end_allocate(a_, id), GALLOC_OK);
    void *out = Malloc(4096);
    std::vector<Segment> segs = Visit();
    ASSERT_EQ(segs.size(), 2u);
    for (const Segment &s : segs) {
        EXPECT_TRUE(s.small);
        EXPECT_EQ(s.size, 2 * MiB);
        bool mine = s.blocks[0].address == (uintptr_t)in;
        EXPECT_EQ(s.blocks[0].address, (uintptr_t)(mine ? in : out));
        EXPECT_EQ(s.pool.a, 0u);
        EXPECT_EQ(s.pool.b, mine ? 1u : 0u);
    }
    ExpectSums(segs);
    EXPECT_EQ(galloc_free(a_, in), GALLOC_OK);
    EXPECT_EQ(galloc_free(a_, out), GALLOC_OK);
    EXPECT_EQ(galloc_mempool_release(a_, id), GALLOC_OK);
    ASSERT_EQ(galloc_empty_cache(a_), GALLOC_OK);
    EXPECT_TRUE(Visit().empty());
}

// A sleeping tag's memory is not device memory: its segments are left out
// of the walk (reserved_bytes drops by them), and its allocated blocks keep
// their size (allocated_bytes still counts them).
TEST_F(Inspect, ASleepingTagIsNotVisited)
{
    void *plain = Malloc(1);
    void *w = nullptr;
    ASSERT_EQ(galloc_tag_begin(a_, "w"), GALLOC_OK) << Err();
    ASSERT_EQ(galloc_malloc(a_, 4 * MiB, 0, &w), GALLOC_OK) << Err();
    ASSERT_EQ(galloc_tag_end(a_, "w"), GALLOC_OK) << Err();
    std::vector<Segment> segs = Visit();
    ASSERT_EQ(segs.size(), 2u);
    ExpectSums(segs);
    ASSERT_EQ(galloc_sleep(a_, "w", nullptr), GALLOC_OK) << Err();
    segs = Visit();
    ASSERT_EQ(segs.size(), 1u);
    EXPECT_EQ(segs[0].blocks[0].address, (uintptr_t)plain);
    galloc_stats_t st = StatsOf(a_);
    EXPECT_EQ((int64_t)SegmentBytes(segs), st.reserved_bytes[GALLOC_STAT_ALL].current);
    EXPECT_EQ(st.reserved_bytes[GALLOC_STAT_ALL].current, (int64_t)(2 * MiB));
    EXPECT_EQ((int64_t)BlockBytes(segs, GALLOC_BLOCK_ALLOCATED),
              st.allocated_bytes[GALLOC_STAT_ALL].current - 4 * (int64_t)MiB);
    EXPECT_EQ(Usable(w), 4 * MiB); // asleep, still the caller's
    ASSERT_EQ(galloc_wake(a_, "w"), GALLOC_OK) << Err();
    segs = Visit();
    EXPECT_EQ(segs.size(), 2u);
    ExpectSums(segs);
    EXPECT_EQ(galloc_free(a_, w), GALLOC_OK);
    EXPECT_EQ(galloc_free(a_, plain), GALLOC_OK);
}

// ---- the stripe path, with the locked path beside it ----

// Workers on streams of their own malloc, ask the size of and free small
// blocks (exactly the rounded request: small blocks split at any remainder),
// while another thread walks the segments and reads the stats. Each walk
// must tile; at the end the walk equals the stats.
TEST_F(Inspect, ThreadsOnTheirOwnStreamsWithAWalkerBeside)
{
#if defined(__SANITIZE_THREAD__)
    constexpr int kOps = 2000;
#else
    constexpr int kOps = 20000;
#endif
    constexpr int kWorkers = 4;
    std::atomic<int> running{kWorkers}, errors{0}, walks{0};
    std::vector<std::thread> ts;
    for (int w = 0; w < kWorkers; w++)
        ts.emplace_back([&, w] {
            std::vector<std::pair<void *, size_t>> live;
            uint64_t x = 88172645463325252ull + (uint64_t)w;
            for (int i = 0; i < kOps; i++) {
                x ^= x << 13, x ^= x >> 7, x ^= x << 17;
                if (live.size() < 16 && (live.empty() || x % 3 != 0)) {
                    size_t n = 1 + x % (64 * KiB);
                    void *p = nullptr;
                    errors += galloc_malloc(a_, n, (galloc_stream_t)(w + 1), &p) != GALLOC_OK;
                    live.emplace_back(p, (n + 511) / 512 * 512);
                } else {
                    size_t k = x % live.size();
                    size_t got = 0;
                    errors += galloc_usable_size(a_, live[k].first, &got) != GALLOC_OK;
                    errors += got != live[k].second;
                    errors += galloc_free(a_, live[k].first) != GALLOC_OK;
                    live[k] = live.back();
                    live.pop_back();
                }
            }
            for (auto &b : live)
                errors += galloc_free(a_, b.first) != GALLOC_OK;
            running--;
        });
    std::thread walker([&] {
        while (running.load() > 0) {
            std::vector<Segment> segs;
            errors += galloc_segments_visit(a_, Collect, &segs) != GALLOC_OK;
            std::string why = TileViolation(segs);
            if (!why.empty()) {
                ADD_FAILURE() << why;
                errors++;
            }
            galloc_stats_t st;
            st.struct_size = sizeof st;
            errors += galloc_memory_stats(a_, &st) != GALLOC_OK;
            walks++;
        }
    });
    for (auto &t : ts)
        t.join();
    walker.join();
    EXPECT_EQ(errors.load(), 0);
    EXPECT_GT(walks.load(), 0);
    EXPECT_EQ(galloc_check(a_), GALLOC_OK) << Err();
    std::vector<Segment> segs = Visit();
    ExpectSums(segs);
    EXPECT_EQ(BlockBytes(segs, GALLOC_BLOCK_ALLOCATED), 0u);
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
    EXPECT_EQ(galloc_free(a, p), GALLOC_OK);
    EXPECT_EQ(galloc_usable_size(a, p, &n), GALLOC_E_NOT_OWNED);
    EXPECT_EQ(galloc_check(a), GALLOC_OK);
    galloc_allocator_destroy(a);
}

} // namespace
