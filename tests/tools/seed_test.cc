// seed_test.cc: the allocator state at a mid-run snapshot's first entry under
// expandable_segments:True (tools/snapshot/seed.h) and a galloc allocator
// seeded with it (ga_seed_apply). The snapshot is PyTorch 2.11's own, from an
// H200 (data/h200/torch211_h200_midrun_expandable: a window from step 2 of 8).
// Its final segments are a small run of 24 MiB and a large one of 1380 MiB;
// walking back the window's 39 segment_map and 4 segment_unmap entries leaves
// 12 small pages (2 MiB) and 61 large ones (20 MiB) mapped at the first entry,
// each reservation one run from its base. Then pending frees and private
// pools, on a start state built by hand, and a file whose state is refused.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "tests/tools/snapfile_util.h"

extern "C" {
#include <galloc/galloc.h>
#include "tools/engine/replay.h"
#include "tools/idmap.h"
#include "tools/snapshot/seed.h"
}

namespace {

constexpr uint64_t MiB = uint64_t{1} << 20;

std::string Data(const std::string &name)
{
    const char *srcdir = std::getenv("TEST_SRCDIR");
    const char *ws = std::getenv("TEST_WORKSPACE");
    std::string dir = srcdir != nullptr && ws != nullptr ? std::string(srcdir) + "/" + ws + "/" : "";
    return dir + "tests/tools/data/" + name;
}

std::string H200(const std::string &name)
{
    return Data("h200/" + name);
}

struct Seed {
    ga_seed_t s = {};
    Seed()
    {
        char err[512] = "";
        SnapFile f(H200("torch211_h200_midrun_expandable.pickle.gz"));
        EXPECT_NE(f.snap(), nullptr) << f.error;
        if (f.snap() != nullptr) {
            EXPECT_EQ(ga_seed_from_snapshot(f.snap(), "midrun_expandable", 0, &s, err, sizeof err), 0) << err;
        }
    }
    ~Seed() { ga_seed_free(&s); }
};

TEST(SeedExpandable, MappedRunsAtTheFirstEntry)
{
    Seed sd;
    const ga_seed_t &s = sd.s;
    ASSERT_EQ(s.n_seg, 2u);
    EXPECT_EQ(s.live_blocks, 147u);
    const ga_seed_segment_t &sm = s.seg[0], &lg = s.seg[1];
    EXPECT_EQ(sm.addr, 0x302000000u);
    EXPECT_EQ(sm.size, 12 * 2 * MiB);
    EXPECT_TRUE(sm.small && sm.expandable);
    EXPECT_EQ(sm.resv, 0x302000000u);
    EXPECT_EQ(sm.page, 2 * MiB);
    EXPECT_EQ(lg.addr, 0x2a54000000u);
    EXPECT_EQ(lg.size, 61 * 20 * MiB);
    EXPECT_TRUE(!lg.small && lg.expandable);
    EXPECT_EQ(lg.resv, 0x2a54000000u);
    EXPECT_EQ(lg.page, 20 * MiB);
    // The pieces tile each run in address order, live blocks and free gaps.
    uint64_t live = 0, live_bytes = 0;
    for (const ga_seed_segment_t *g : {&sm, &lg}) {
        uint64_t at = g->addr;
        for (size_t k = g->first; k < g->first + g->n; k++) {
            EXPECT_EQ(s.pc[k].addr, at) << "piece " << k;
            EXPECT_GE(s.pc[k].size, 512u);
            EXPECT_EQ(s.pc[k].size % 512, 0u);
            at += s.pc[k].size;
            live += s.pc[k].live;
            live_bytes += s.pc[k].live ? s.pc[k].size : 0;
        }
        EXPECT_EQ(at, g->addr + g->size);
    }
    EXPECT_EQ(live, 147u);
    EXPECT_EQ(live_bytes, 219471872u); // 209.3 MiB, as a plain walk back over the trace counts them
}

// Seeded, galloc holds the same mapped bytes and live blocks.
TEST(SeedExpandable, SeededAllocatorHoldsThem)
{
    Seed sd;
    galloc_allocator_t *a = nullptr;
    char err[512] = "";
    ASSERT_EQ(galloc_allocator_create_ex("sim", 0, "sim_capacity:80GiB,sim_placement:recorded,expandable_segments:True",
                                         GALLOC_CREATE_NO_ENV, &a, err, sizeof err),
              GALLOC_OK)
        << err;
    ga_idmap_t map;
    ga_idmap_init(&map);
    ASSERT_EQ(ga_seed_apply(a, &map, &sd.s, err, sizeof err, nullptr), 0) << err;
    galloc_stats_t st = {};
    st.struct_size = sizeof st;
    ASSERT_EQ(galloc_memory_stats(a, &st), GALLOC_OK);
    EXPECT_EQ(st.reserved_bytes[GALLOC_STAT_SMALL_POOL].current, (int64_t)(24 * MiB));
    EXPECT_EQ(st.reserved_bytes[GALLOC_STAT_LARGE_POOL].current, (int64_t)(1220 * MiB));
    EXPECT_EQ(st.allocated_bytes[GALLOC_STAT_ALL].current, 219471872);
    EXPECT_EQ(st.allocation[GALLOC_STAT_ALL].current, 147);
    EXPECT_EQ(st.segment[GALLOC_STAT_ALL].current, 0); // expandable segments count no segment
    // Every live block is known by its recorded address, at that address.
    ga_idmap_val_t v;
    EXPECT_TRUE(ga_idmap_get(&map, 0x2a54000000u, &v));
    EXPECT_EQ((uint64_t)(uintptr_t)v.ptr, 0x2a54000000u);
    EXPECT_TRUE(ga_idmap_get(&map, 0x302000000u, &v));
    EXPECT_EQ((uint64_t)(uintptr_t)v.ptr, 0x302000000u);
    ga_idmap_free(&map);
    galloc_allocator_destroy(a);
}

// Under PyTorch's defaults (another column of a replay) an expandable run
// cannot be made: its live blocks are allocated plainly, none is lost.
TEST(SeedExpandable, WithoutExpandableSegmentsTheBlocksArePlain)
{
    Seed sd;
    galloc_allocator_t *a = nullptr;
    char err[512] = "";
    ASSERT_EQ(galloc_allocator_create_ex("sim", 0, "sim_capacity:80GiB", GALLOC_CREATE_NO_ENV, &a, err, sizeof err),
              GALLOC_OK)
        << err;
    ga_idmap_t map;
    ga_idmap_init(&map);
    ASSERT_EQ(ga_seed_apply(a, &map, &sd.s, err, sizeof err, nullptr), 0) << err;
    galloc_stats_t st = {};
    st.struct_size = sizeof st;
    ASSERT_EQ(galloc_memory_stats(a, &st), GALLOC_OK);
    EXPECT_EQ(st.allocation[GALLOC_STAT_ALL].current, 147);
    EXPECT_EQ(st.requested_bytes[GALLOC_STAT_ALL].current, 219471872);
    // 2 MiB more in blocks: under the defaults a large block's remainder of
    // 1 MiB or less is not split off and stays with it.
    EXPECT_EQ(st.allocated_bytes[GALLOC_STAT_ALL].current, 221569024);
    EXPECT_GT(st.segment[GALLOC_STAT_ALL].current, 0); // ordinary segments hold them
    ga_idmap_val_t v;
    EXPECT_TRUE(ga_idmap_get(&map, 0x2a54000000u, &v));
    ga_idmap_free(&map);
    galloc_allocator_destroy(a);
}

// A start state built by hand, as seed.c leaves it: a default-pool segment
// with a live block, a block the user freed that waits on a stream
// (active_pending_free) and a gap; and a segment of a private pool (a CUDA
// graph's, recorded as (0, 1)) with one live block.
struct HandSeed {
    ga_seed_piece_t pc[5] = {};
    ga_seed_segment_t seg[2] = {};
    ga_seed_t s = {};
    static constexpr uint64_t X = 0x7f0040000000, G = 0x7f0020000000;
    static ga_seed_piece_t Piece(uint64_t addr, uint64_t size, bool live, bool pending)
    {
        ga_seed_piece_t p = {};
        p.addr = addr;
        p.size = size;
        p.live = live;
        p.req = live ? size : 0;
        p.pending = pending;
        return p;
    }
    HandSeed()
    {
        pc[0] = Piece(G, 8 * MiB, true, false);
        pc[1] = Piece(G + 8 * MiB, 12 * MiB, false, false);
        pc[2] = Piece(X, 4 * MiB, true, true);
        pc[3] = Piece(X + 4 * MiB, 4 * MiB, true, false);
        pc[4] = Piece(X + 8 * MiB, 12 * MiB, false, false);
        seg[0] = {};
        seg[0].addr = G;
        seg[0].size = 20 * MiB;
        seg[0].pool_id[1] = 1;
        seg[0].first = 0;
        seg[0].n = 2;
        seg[1] = {};
        seg[1].addr = X;
        seg[1].size = 20 * MiB;
        seg[1].first = 2;
        seg[1].n = 3;
        s.seg = seg;
        s.n_seg = 2;
        s.pc = pc;
        s.n_pc = 5;
        s.live_blocks = 3;
        s.pending_blocks = 1;
        s.private_segments = 1;
        s.private_pools = 1;
    }
};

struct Seeded {
    galloc_allocator_t *a = nullptr;
    ga_idmap_t map;
    Seeded() { ga_idmap_init(&map); }
    ~Seeded()
    {
        if (a != nullptr) {
            EXPECT_EQ(galloc_check(a), GALLOC_OK);
        }
        ga_idmap_free(&map);
        galloc_allocator_destroy(a);
    }
    galloc_stats_t Stats()
    {
        galloc_stats_t st = {};
        st.struct_size = sizeof st;
        EXPECT_EQ(galloc_memory_stats(a, &st), GALLOC_OK);
        return st;
    }
};

// The pending block is held active, not allocated, and no trace id maps to
// it. It goes back to the cache when an allocation polls its event and finds
// it complete: on the sim device, whose events complete when recorded, the
// next allocation, whether or not a free_completed event synchronized the
// side stream first (docs/trace-format.md, "Replay semantics").
TEST(SeedPending, StaysPendingUntilTheSideStreamIsSynchronized)
{
    HandSeed h;
    Seeded g;
    char err[512] = "";
    ASSERT_EQ(galloc_allocator_create_ex("sim", 0, "sim_capacity:1GiB,sim_placement:recorded", GALLOC_CREATE_NO_ENV,
                                         &g.a, err, sizeof err),
              GALLOC_OK)
        << err;
    ASSERT_EQ(ga_seed_apply(g.a, &g.map, &h.s, err, sizeof err, nullptr), 0) << err;
    galloc_stats_t st = g.Stats();
    EXPECT_EQ(st.reserved_bytes[GALLOC_STAT_ALL].current, (int64_t)(40 * MiB));
    EXPECT_EQ(st.allocated_bytes[GALLOC_STAT_ALL].current, (int64_t)(12 * MiB)); // the two live blocks
    EXPECT_EQ(st.active_bytes[GALLOC_STAT_ALL].current, (int64_t)(16 * MiB));    // ... and the pending one
    EXPECT_EQ(st.requested_bytes[GALLOC_STAT_ALL].current, (int64_t)(16 * MiB));
    EXPECT_EQ(st.allocation[GALLOC_STAT_ALL].current, 2);
    EXPECT_EQ(st.active_bytes[GALLOC_STAT_ALL].peak, (int64_t)(16 * MiB)); // the seeding's own peaks are reset
    ga_idmap_val_t v;
    EXPECT_FALSE(ga_idmap_get(&g.map, HandSeed::X, &v)) << "the user freed the pending block";
    EXPECT_TRUE(ga_idmap_get(&g.map, HandSeed::X + 4 * MiB, &v));
    EXPECT_EQ((uint64_t)(uintptr_t)v.ptr, HandSeed::X + 4 * MiB);
    EXPECT_TRUE(ga_idmap_get(&g.map, HandSeed::G, &v));
    // A free_completed event synchronizes the side stream; the block stays
    // pending until the next allocation, which then finds it free: an exact
    // fit at its address.
    EXPECT_EQ(ga_replay_call(g.a, GA_EV_FREE_COMPLETED, 0, 0, 1.0), GALLOC_OK);
    EXPECT_EQ(g.Stats().active_bytes[GALLOC_STAT_ALL].current, (int64_t)(16 * MiB));
    void *p = nullptr;
    ASSERT_EQ(galloc_malloc(g.a, 4 * MiB, 0, &p), GALLOC_OK);
    EXPECT_EQ((uint64_t)(uintptr_t)p, HandSeed::X);
    st = g.Stats();
    EXPECT_EQ(st.active_bytes[GALLOC_STAT_ALL].current, (int64_t)(16 * MiB));
    EXPECT_EQ(st.allocated_bytes[GALLOC_STAT_ALL].current, (int64_t)(16 * MiB));
    EXPECT_EQ(galloc_free(g.a, p), GALLOC_OK);
}

// The private pool's segment is in a galloc MemPool: a request its 12 MiB
// free block would fit best goes to the default segment's 12 MiB gap, and
// the next one to a new segment, never to the private pool.
TEST(SeedPools, PrivateSegmentsServeNoDefaultAllocation)
{
    HandSeed h;
    Seeded g;
    char err[512] = "";
    ASSERT_EQ(galloc_allocator_create_ex("sim", 0, "sim_capacity:1GiB,sim_placement:recorded", GALLOC_CREATE_NO_ENV,
                                         &g.a, err, sizeof err),
              GALLOC_OK)
        << err;
    ASSERT_EQ(ga_seed_apply(g.a, &g.map, &h.s, err, sizeof err, nullptr), 0) << err;
    void *p = nullptr, *q = nullptr; // the first allocation also returns the pending block (4 MiB at X)
    ASSERT_EQ(galloc_malloc(g.a, 12 * MiB, 0, &p), GALLOC_OK);
    EXPECT_EQ((uint64_t)(uintptr_t)p, HandSeed::X + 8 * MiB) << "the default segment's gap";
    ASSERT_EQ(galloc_malloc(g.a, 10 * MiB, 0, &q), GALLOC_OK);
    EXPECT_NE((uint64_t)(uintptr_t)q, HandSeed::G + 8 * MiB) << "a default allocation took the private pool's block";
    galloc_stats_t st = g.Stats();
    EXPECT_EQ(st.segment[GALLOC_STAT_ALL].current, 3); // a new segment for q
    EXPECT_EQ(galloc_free(g.a, p), GALLOC_OK);
    EXPECT_EQ(galloc_free(g.a, q), GALLOC_OK);
}

// A final block that is not inactive and has no size (an empty dict among a
// segment's blocks, data/make_seed_refusals.py) is refused with a message
// naming it: it used to become a live piece of 0 bytes, which seeding
// cannot allocate (found by seed_fuzz).
TEST(SeedRefuses, ALiveBlockWithoutASize)
{
    SnapFile f(Data("live_block_no_size.pickle"));
    ASSERT_NE(f.snap(), nullptr) << f.error;
    ga_seed_t s = {};
    char err[512] = "";
    EXPECT_EQ(ga_seed_from_snapshot(f.snap(), "live_block_no_size", 0, &s, err, sizeof err), -1);
    EXPECT_NE(std::string(err).find("live_block_no_size: segments[1].blocks[1]: a block that is not inactive has no "
                                    "size"),
              std::string::npos)
        << err;
    EXPECT_EQ(s.n_seg, 0u);
    EXPECT_EQ(s.n_pc, 0u);
}

} // namespace
