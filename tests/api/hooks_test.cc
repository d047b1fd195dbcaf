// hooks_test: device-memory hooks (galloc_hooks.h) through the public API on
// the sim device, seen through simwatch (its live bytes, leaks at destroy,
// refused device calls). Every test keeps hook_ledger.h's ledger and checks
// after each call that its bytes equal reserved_bytes.all.current and the
// device's own used bytes, and after destroy that nothing is left in it.
//
// Figures are PyTorch's: 2 MiB small segments, 20 MiB large segments for 1 to
// 10 MiB requests, larger requests rounded to 2 MiB; expandable segments map
// 20 MiB pages in the large pool, 2 MiB in the small one.
#include "tests/api/hooks_fixture.h"

namespace {

using hooks_fixture::ALL;
using hooks_fixture::Describe;
using hooks_fixture::Hooks;
using hooks_fixture::HooksBoth;
using hooks_fixture::Ledger;
using hooks_fixture::MiB;

// ---- Registration. ----

TEST_F(Hooks, BadArgumentsAreRefused)
{
    Make();
    Ledger l;
    galloc_hook_t h = {};
    h.struct_size = sizeof h;
    h.fn = [](void *, const galloc_hook_event_t *) { return 0; };
    galloc_hook_id_t id = 99;
    EXPECT_EQ(galloc_hook_add(nullptr, &h, &id), GALLOC_E_INVAL);
    EXPECT_EQ(id, 0u);
    EXPECT_EQ(galloc_hook_add(a_, nullptr, &id), GALLOC_E_INVAL);
    EXPECT_EQ(galloc_hook_add(a_, &h, nullptr), GALLOC_E_INVAL);
    galloc_hook_t bad = h;
    bad.fn = nullptr;
    EXPECT_EQ(galloc_hook_add(a_, &bad, &id), GALLOC_E_INVAL);
    EXPECT_EQ(Err(), "galloc_hook_add: fn is NULL");
    bad = h;
    bad.struct_size = sizeof h - 1;
    EXPECT_EQ(galloc_hook_add(a_, &bad, &id), GALLOC_E_INVAL);
    bad = h;
    bad.kinds = 1u << 5;
    EXPECT_EQ(galloc_hook_add(a_, &bad, &id), GALLOC_E_INVAL);
    EXPECT_EQ(Err(), "galloc_hook_add: unknown kind bits");
    bad = h;
    bad.flags = 2;
    EXPECT_EQ(galloc_hook_add(a_, &bad, &id), GALLOC_E_INVAL);
    EXPECT_EQ(id, 0u);
    EXPECT_EQ(galloc_hook_remove(a_, 1), GALLOC_E_INVAL) << "nothing registered";
    EXPECT_EQ(Err(), "galloc_hook_remove: no hook 1 on this allocator");
    galloc_hook_stats_t st = {};
    st.struct_size = sizeof st;
    EXPECT_EQ(galloc_hook_stats(a_, 1, &st), GALLOC_E_INVAL);
    EXPECT_EQ(galloc_hook_stats(a_, 1, nullptr), GALLOC_E_INVAL);
    // Registered, ids count up and are never reused.
    ASSERT_EQ(galloc_hook_add(a_, &h, &id), GALLOC_OK);
    EXPECT_EQ(id, 1u);
    EXPECT_EQ(galloc_hook_remove(a_, id), GALLOC_OK);
    EXPECT_EQ(galloc_hook_remove(a_, id), GALLOC_E_INVAL) << "removed already";
    ASSERT_EQ(galloc_hook_add(a_, &h, &id), GALLOC_OK);
    EXPECT_EQ(id, 2u);
}

TEST_F(Hooks, AUserAllocatorHasNoHooks)
{
    galloc_user_allocator_t u = {};
    u.struct_size = sizeof u;
    u.version = GALLOC_USER_ALLOCATOR_V1;
    u.malloc_fn = [](void *, size_t n, int, galloc_stream_t) { return malloc(n); };
    u.free_fn = [](void *, void *p, size_t, int, galloc_stream_t) { free(p); };
    char err[GALLOC_ERROR_MAX] = "";
    ASSERT_EQ(galloc_allocator_create_user(&u, 0, &a_, err, sizeof err), GALLOC_OK) << err;
    Ledger l;
    EXPECT_EQ(l.Add(a_), GALLOC_E_UNSUPPORTED);
    EXPECT_EQ(galloc_hook_remove(a_, 1), GALLOC_E_UNSUPPORTED);
    galloc_allocator_destroy(a_);
    a_ = nullptr;
}

TEST_F(Hooks, ADestroyedAllocatorSaysSo)
{
    Make();
    galloc_allocator_t *a = a_;
    Destroy();
    Ledger l;
    EXPECT_EQ(l.Add(a), GALLOC_E_DESTROYED);
}

// ---- What the hooks are told. ----

TEST_F(Hooks, SegmentsAreToldInOrderWithExactAddressesAndSizes)
{
    Make();
    Ledger &l = Hook();
    void *small = Alloc(1);
    void *mid = Alloc(5 * MiB);
    void *big = Alloc(30 * MiB, 7);
    Balanced("three segments");
    ASSERT_EQ(l.events().size(), 3u);
    ExpectEvent(l.events()[0], GALLOC_HOOK_SEGMENT_ALLOC, small, 2 * MiB);
    ExpectEvent(l.events()[1], GALLOC_HOOK_SEGMENT_ALLOC, mid, 20 * MiB);
    ExpectEvent(l.events()[2], GALLOC_HOOK_SEGMENT_ALLOC, big, 30 * MiB, 0, 7);
    for (size_t i = 0; i < 3; i++) {
        EXPECT_EQ(l.events()[i].seq, i + 1);
        EXPECT_EQ(l.events()[i].device, 0);
        EXPECT_EQ(l.events()[i].pool.a + l.events()[i].pool.b, 0u) << "the default pools";
    }
    // Cache hits and frees make and release nothing: no event.
    Free(Alloc(1));
    Free(small);
    Free(mid);
    Free(big);
    EXPECT_EQ(l.events().size(), 3u);
    EmptyCache();
    Balanced("empty cache");
    ASSERT_EQ(l.events().size(), 6u);
    // release_cached_blocks: the large pool first, in its free-set order
    // (stream, size, address), then the small pool.
    ExpectEvent(l.events()[3], GALLOC_HOOK_SEGMENT_FREE, mid, 20 * MiB);
    ExpectEvent(l.events()[4], GALLOC_HOOK_SEGMENT_FREE, big, 30 * MiB, 0, 7);
    ExpectEvent(l.events()[5], GALLOC_HOOK_SEGMENT_FREE, small, 2 * MiB);
    galloc_hook_stats_t st = {};
    st.struct_size = sizeof st;
    ASSERT_EQ(galloc_hook_stats(a_, l.id(), &st), GALLOC_OK);
    EXPECT_EQ(st.events, 6u);
    EXPECT_EQ(st.refused + st.ignored, 0u);
}

TEST_F(Hooks, AnExpandableSegmentIsToldPageByPageGrowingAndShrinking)
{
    Make("expandable_segments:True");
    Ledger &l = Hook();
    char *a = static_cast<char *>(Alloc(5 * MiB));  // maps page 0
    char *b = static_cast<char *>(Alloc(30 * MiB)); // 15 MiB left + page 1
    char *c = static_cast<char *>(Alloc(50 * MiB)); // 5 MiB left + pages 2, 3, 4 in one mapping
    ASSERT_EQ(b, a + 5 * MiB);
    ASSERT_EQ(c, a + 35 * MiB);
    Balanced("grown");
    auto maps = l.Of(GALLOC_HOOK_SEGMENT_MAP);
    ASSERT_EQ(maps.size(), 5u);
    ASSERT_EQ(l.events().size(), 5u);
    for (size_t i = 0; i < 5; i++)
        ExpectEvent(maps[i], GALLOC_HOOK_SEGMENT_MAP, a + i * 20 * MiB, 20 * MiB);
    EXPECT_EQ(Stats().num_device_alloc, 3) << "PyTorch's count: one per map_block, whatever its pages";
    // Shrinking: only the pages wholly free go, one UNMAP each, in order.
    Free(b);
    Free(c);
    EmptyCache();
    Balanced("shrunk");
    auto unmaps = l.Of(GALLOC_HOOK_SEGMENT_UNMAP);
    ASSERT_EQ(unmaps.size(), 4u);
    for (size_t i = 0; i < 4; i++)
        ExpectEvent(unmaps[i], GALLOC_HOOK_SEGMENT_UNMAP, a + (i + 1) * 20 * MiB, 20 * MiB);
    EXPECT_TRUE(l.Present((uintptr_t)a, 20 * MiB)) << "page 0 holds a";
    // The small pool's pages are 2 MiB.
    char *s = static_cast<char *>(Alloc(1));
    ExpectEvent(l.events().back(), GALLOC_HOOK_SEGMENT_MAP, s, 2 * MiB);
    Free(s);
    Free(a);
    EmptyCache();
    Balanced("empty");
    EXPECT_EQ(l.Ranges(), 0u);
    for (size_t i = 1; i < l.events().size(); i++)
        EXPECT_EQ(l.events()[i].seq, l.events()[i - 1].seq + 1);
}

TEST_F(Hooks, TheOomPathToldItsReleasesThenTheOomWithPyTorchsFigures)
{
    Make("", "64MiB");
    Ledger &l = Hook();
    void *a = Alloc(30 * MiB);
    Free(a);                      // cached
    void *b = Alloc(50 * MiB, 3); // the device is short: the cache goes back, the retry succeeds
    EXPECT_EQ(Stats().num_alloc_retries, 1);
    ASSERT_EQ(l.events().size(), 3u);
    ExpectEvent(l.events()[0], GALLOC_HOOK_SEGMENT_ALLOC, a, 30 * MiB);
    ExpectEvent(l.events()[1], GALLOC_HOOK_SEGMENT_FREE, a, 30 * MiB);
    ExpectEvent(l.events()[2], GALLOC_HOOK_SEGMENT_ALLOC, b, 50 * MiB, 0, 3);
    void *p = nullptr;
    EXPECT_EQ(galloc_malloc(a_, 50 * MiB + 1, 3, &p), GALLOC_E_OOM);
    Balanced("after the OOM");
    ASSERT_EQ(l.events().size(), 4u);
    const galloc_hook_event_t &e = l.events()[3];
    EXPECT_EQ(e.kind, (uint32_t)GALLOC_HOOK_OOM);
    EXPECT_EQ(e.addr, 0u);
    EXPECT_EQ(e.size, 50 * MiB + 512) << "the request rounded as PyTorch rounds it (params.size())";
    EXPECT_EQ(e.stream, 3u);
    EXPECT_EQ(e.oom_alloc_size, 52 * MiB) << "the segment asked for: 2 MiB rounding";
    EXPECT_EQ(e.oom_device_total, 64 * MiB);
    EXPECT_EQ(e.oom_device_free, 14 * MiB);
    EXPECT_EQ(e.oom_allowed, 0u);
    EXPECT_EQ(e.oom_allocated_bytes, (int64_t)(50 * MiB));
    EXPECT_EQ(e.oom_reserved_bytes, (int64_t)(50 * MiB));
    EXPECT_NE(Err().find("Tried to allocate 52.00 MiB"), std::string::npos) << Err();
    // Under a memory fraction the cap is the observer's "total".
    ASSERT_EQ(galloc_set_memory_fraction(a_, 0.5), GALLOC_OK);
    EXPECT_EQ(galloc_malloc(a_, 20 * MiB, 0, &p), GALLOC_E_OOM);
    EXPECT_EQ(l.events().back().kind, (uint32_t)GALLOC_HOOK_OOM);
    EXPECT_EQ(l.events().back().oom_allowed, 32 * MiB);
    Free(b);
}

TEST_F(Hooks, APrivatePoolsSegmentsCarryItsId)
{
    Make();
    Ledger &l = Hook();
    galloc_mempool_id_t id;
    ASSERT_EQ(galloc_mempool_create(a_, &id), GALLOC_OK);
    ASSERT_EQ(galloc_mempool_begin_allocate(a_, id, GALLOC_ROUTE_THREAD, 0), GALLOC_OK);
    void *p = Alloc(5 * MiB);
    ASSERT_EQ(galloc_mempool_end_allocate(a_, id), GALLOC_OK);
    void *q = Alloc(5 * MiB); // the default pool's own segment
    ASSERT_EQ(l.events().size(), 2u);
    ExpectEvent(l.events()[0], GALLOC_HOOK_SEGMENT_ALLOC, p, 20 * MiB);
    EXPECT_EQ(l.events()[0].pool.a, id.a);
    EXPECT_EQ(l.events()[0].pool.b, id.b);
    EXPECT_NE(id.a + id.b, 0u);
    EXPECT_EQ(l.events()[1].pool.a + l.events()[1].pool.b, 0u);
    Free(p);
    Free(q);
    ASSERT_EQ(galloc_mempool_release(a_, id), GALLOC_OK);
    EmptyCache();
    Balanced("released");
    auto frees = l.Of(GALLOC_HOOK_SEGMENT_FREE);
    ASSERT_EQ(frees.size(), 2u);
    bool seen = false;
    for (const auto &e : frees)
        if (e.addr == (uintptr_t)p) {
            EXPECT_EQ(e.pool.a, id.a);
            EXPECT_EQ(e.pool.b, id.b);
            seen = true;
        }
    EXPECT_TRUE(seen);
}

INSTANTIATE_TEST_SUITE_P(Segments, HooksBoth, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool> &i) { return i.param ? "expandable" : "plain"; });

TEST_P(HooksBoth, SleepUnmapsAndWakeMapsTheSameRanges)
{
    Make(Conf());
    Ledger &l = Hook();
    char *w = static_cast<char *>(TagAlloc("w", 25 * MiB)); // plain: one 26 MiB VMM segment; expandable: 2 pages
    Balanced("tagged");
    std::vector<galloc_hook_event_t> added = l.events();
    ASSERT_EQ(added.size(), Expandable() ? 2u : 1u);
    EXPECT_EQ(added[0].addr, (uintptr_t)w);
    EXPECT_EQ(added[0].kind, Expandable() ? (uint32_t)GALLOC_HOOK_SEGMENT_MAP : (uint32_t)GALLOC_HOOK_SEGMENT_ALLOC);
    EXPECT_NE(added[0].pool.a + added[0].pool.b, 0u) << "a tag is a private pool";
    l.Clear();
    ASSERT_EQ(galloc_sleep(a_, "w", nullptr), GALLOC_OK) << Err();
    Balanced("asleep");
    EXPECT_EQ(Reserved(), 0);
    ASSERT_EQ(l.events().size(), added.size());
    for (size_t i = 0; i < added.size(); i++) {
        EXPECT_EQ(l.events()[i].kind, (uint32_t)GALLOC_HOOK_SEGMENT_UNMAP);
        EXPECT_EQ(l.events()[i].addr, added[i].addr);
        EXPECT_EQ(l.events()[i].size, added[i].size);
    }
    l.Clear();
    ASSERT_EQ(galloc_wake(a_, "w"), GALLOC_OK) << Err();
    Balanced("awake");
    ASSERT_EQ(l.events().size(), added.size());
    for (size_t i = 0; i < added.size(); i++) {
        EXPECT_EQ(l.events()[i].kind, (uint32_t)GALLOC_HOOK_SEGMENT_MAP);
        EXPECT_EQ(l.events()[i].addr, added[i].addr);
        EXPECT_EQ(l.events()[i].size, added[i].size);
    }
    // A refused wake: the tag stays asleep, what the wake mapped goes back.
    ASSERT_EQ(galloc_sleep(a_, "w", nullptr), GALLOC_OK) << Err();
    l.RefuseAt(l.told() + added.size()); // the last unit
    EXPECT_EQ(galloc_wake(a_, "w"), GALLOC_E_HOOK);
    EXPECT_NE(Err().find("refused SEGMENT_MAP"), std::string::npos) << Err();
    int asleep = 0;
    ASSERT_EQ(galloc_tag_asleep(a_, "w", &asleep), GALLOC_OK);
    EXPECT_EQ(asleep, 1);
    Balanced("refused wake");
    l.RefuseAt(0);
    ASSERT_EQ(galloc_wake(a_, "w"), GALLOC_OK) << Err();
    Balanced("woken again");
    Free(w);
    EmptyCache(); // the tag's pool is in use: its segments stay cached, destroy tells them away
    Balanced("freed");
}

TEST_P(HooksBoth, DestroyTellsEveryRangeStillPresent)
{
    Make(Conf());
    Ledger &l = Hook();
    (void)Alloc(1);
    (void)Alloc(5 * MiB);
    void *c = Alloc(50 * MiB, 2);
    Free(c); // cached
    (void)TagAlloc("w", 3 * MiB);
    (void)TagAlloc("k", 3 * MiB);
    ASSERT_EQ(galloc_sleep(a_, "k", nullptr), GALLOC_OK) << Err(); // its memory is told away already
    Balanced("before destroy");
    size_t before = l.events().size();
    int64_t present = l.Bytes();
    Destroy(); // checks the ledger is empty
    int64_t told = 0;
    for (size_t i = before; i < l.events().size(); i++) {
        const auto &e = l.events()[i];
        EXPECT_EQ(e.flags, GALLOC_HOOK_F_DESTROY) << Describe(e);
        EXPECT_TRUE(e.kind == GALLOC_HOOK_SEGMENT_FREE || e.kind == GALLOC_HOOK_SEGMENT_UNMAP) << Describe(e);
        told += (int64_t)e.size;
    }
    EXPECT_EQ(told, present);
}

TEST_P(HooksBoth, ReplayTellsANewHookWhatIsPresent)
{
    Make(Conf());
    void *a = Alloc(1);
    void *b = Alloc(5 * MiB);
    void *c = Alloc(50 * MiB);
    (void)TagAlloc("k", 3 * MiB);
    ASSERT_EQ(galloc_sleep(a_, "k", nullptr), GALLOC_OK) << Err(); // not present: not replayed
    Ledger &l = Hook(0, GALLOC_HOOK_ADD_REPLAY);
    Balanced("replayed");
    for (const auto &e : l.events())
        EXPECT_EQ(e.flags, GALLOC_HOOK_F_REPLAY) << Describe(e);
    EXPECT_TRUE(l.Present((uintptr_t)a, 2 * MiB));
    if (!Expandable()) {
        ASSERT_EQ(l.events().size(), 3u);
        ExpectEvent(l.events()[0], GALLOC_HOOK_SEGMENT_ALLOC, a, 2 * MiB, GALLOC_HOOK_F_REPLAY);
        ExpectEvent(l.events()[1], GALLOC_HOOK_SEGMENT_ALLOC, b, 20 * MiB, GALLOC_HOOK_F_REPLAY);
        ExpectEvent(l.events()[2], GALLOC_HOOK_SEGMENT_ALLOC, c, 50 * MiB, GALLOC_HOOK_F_REPLAY);
    } else {
        EXPECT_EQ(l.Of(GALLOC_HOOK_SEGMENT_MAP).size(), 1u + 3u) << "the small page, then 60 MiB in 3 pages";
    }
    // Later events come as usual.
    Free(c);
    EmptyCache();
    Balanced("after");
    // A replay refused on its second range: the first is taken back, the
    // hook is not registered.
    Ledger late;
    late.RefuseAt(2);
    EXPECT_EQ(late.Add(a_, 0, GALLOC_HOOK_ADD_REPLAY), GALLOC_E_HOOK);
    EXPECT_NE(Err().find("refused"), std::string::npos) << Err();
    ASSERT_EQ(late.events().size(), 3u);
    EXPECT_EQ(late.events()[2].flags, GALLOC_HOOK_F_UNDO);
    EXPECT_EQ(late.events()[2].addr, late.events()[0].addr);
    EXPECT_EQ(late.Bytes(), 0);
    EXPECT_EQ(late.errors(), "");
    Free(Alloc(200 * MiB));
    EXPECT_EQ(late.events().size(), 3u) << "not registered";
}

TEST_F(Hooks, TwoHooksAreToldInRegistrationOrderAndARemovedOneNoMore)
{
    Make();
    std::vector<std::pair<int, uint64_t>> order;
    Ledger &first = Hook();
    Ledger &second = Hook();
    Ledger &oom_only = Hook(GALLOC_HOOK_KIND_BIT(GALLOC_HOOK_OOM));
    first.ShareOrder(&order, 1);
    second.ShareOrder(&order, 2);
    void *p = Alloc(5 * MiB);
    Free(p);
    EmptyCache();
    ASSERT_EQ(order.size(), 4u);
    EXPECT_EQ(order[0], std::make_pair(1, uint64_t{1}));
    EXPECT_EQ(order[1], std::make_pair(2, uint64_t{1}));
    EXPECT_EQ(order[2], std::make_pair(1, uint64_t{2}));
    EXPECT_EQ(order[3], std::make_pair(2, uint64_t{2}));
    EXPECT_EQ(oom_only.events().size(), 0u) << "its mask has OOM only";
    ASSERT_EQ(galloc_hook_remove(a_, first.id()), GALLOC_OK);
    first.Forget();
    ledgers_.erase(ledgers_.begin()); // it keeps no ledger from now on
    order.clear();
    p = Alloc(5 * MiB);
    ASSERT_EQ(order.size(), 1u);
    EXPECT_EQ(order[0].first, 2);
    void *q = nullptr;
    EXPECT_EQ(galloc_malloc(a_, 2000 * MiB, 0, &q), GALLOC_E_OOM);
    ASSERT_EQ(oom_only.events().size(), 1u);
    EXPECT_EQ(oom_only.events()[0].kind, (uint32_t)GALLOC_HOOK_OOM);
    Free(p);
    second.ShareOrder(nullptr, 0); // `order` dies with this body; destroy still tells `second`
}

// ---- Hooks that fail. ----

} // namespace
