// inspect_fixture.h: the fixture of inspect_test.cc and inspect_segments_test.cc:
// an allocator on the sim device, and the segments galloc_segments_visit
// reports collected with checks that they tile (named namespace: both files'
// TEST_F share the class).
#ifndef GA_TESTS_API_INSPECT_FIXTURE_H
#define GA_TESTS_API_INSPECT_FIXTURE_H

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <string>
#include <thread>
#include <vector>

extern "C" {
#include <galloc/galloc.h>
}

namespace inspect_fixture {

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
inline int Collect(void *ctx, const galloc_segment_view_t *s)
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
inline std::string TileViolation(std::vector<Segment> segs)
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

inline size_t SegmentBytes(const std::vector<Segment> &segs)
{
    size_t n = 0;
    for (const Segment &s : segs)
        n += s.size;
    return n;
}

inline size_t BlockBytes(const std::vector<Segment> &segs, galloc_block_state_t state)
{
    size_t n = 0;
    for (const Segment &s : segs)
        for (const Block &b : s.blocks)
            n += b.state == state ? b.size : 0;
    return n;
}

inline galloc_stats_t StatsOf(galloc_allocator_t *a)
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

} // namespace inspect_fixture

#endif // GA_TESTS_API_INSPECT_FIXTURE_H
