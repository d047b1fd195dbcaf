// inspect_segments_test: galloc_segments_visit through the public API on the
// sim device (segments tile reserved memory, blocks tile segments, states,
// pool ids, expandable segments' mapped ranges, sleeping tags left out), and
// threads on their own streams with a walker beside them. Tagged
// "concurrency" with inspect_test.cc: CI also runs it under TSan.
#include "tests/api/inspect_fixture.h"

namespace {

using namespace inspect_fixture; // the fixture (inspect_fixture.h)

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

} // namespace
