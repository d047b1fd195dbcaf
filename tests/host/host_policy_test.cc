// host_policy_test: the pinned host cache's policy with exact
// host_memory_stats() figures, on the sim device (manual events: a stream's
// work completes when the test says so). Each test names the PyTorch source
// it follows: aten/src/ATen/core/CachingHostAllocator.h
// (CachingHostAllocatorImpl), aten/src/ATen/cuda/CachingHostAllocator.cpp
// (CUDACachingHostAllocatorImpl), test/test_cuda.py (test_host_memory_stats),
// and the PRs that changed them (#171662 the two caps, #192722 the
// get_free_block fix). docs/host.md has the rules.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "tests/host/host_fixture.h"

namespace host_test {
namespace {

// test/test_cuda.py, TestCuda.test_host_memory_stats: torch.ones(10 * 1024)
// and torch.ones(20 * 1024) pinned (float32: 40960 and 81920 bytes) round to
// 16 KiB * 4 and 32 KiB * 4 (allocate: PowerOf2Ceil), each one allocation, one
// active request, one num_host_alloc and one timed host_alloc call;
// _host_emptyCache frees nothing while both are in use.
TEST_F(HostTest, PyTorchsTestHostMemoryStatsFigures)
{
    HostStats want = Empty();
    Expect(want, "empty");
    void *t1 = Pin(10 * 1024 * 4);
    for (const char *s : {"active_requests", "allocations"})
        Rise(want, s, 1);
    for (const char *s : {"allocated_bytes", "active_bytes"})
        Rise(want, s, 16 * 1024 * 4);
    want["num_host_alloc"] = 1;
    want["host_alloc_time.count"] = 1;
    Expect(want, "t1");
    void *t2 = Pin(20 * 1024 * 4);
    for (const char *s : {"active_requests", "allocations"})
        Rise(want, s, 1);
    for (const char *s : {"allocated_bytes", "active_bytes"})
        Rise(want, s, 32 * 1024 * 4);
    want["num_host_alloc"] = 2;
    want["host_alloc_time.count"] = 2;
    Expect(want, "t2");
    ASSERT_EQ(galloc_host_empty_cache(a_), GALLOC_OK);
    Expect(want, "empty_cache with both in use");
    EXPECT_EQ(Sim().live_host_allocs, 2u);
    EXPECT_EQ(Sim().live_host_bytes, 196608u) << "the rounded sizes are what the driver pinned";
    // reset_peak_host_memory_stats: peak = current; reset_accumulated: allocated
    // and freed to 0, and with them num_host_alloc / num_host_free and the
    // timing count (HostStatsStaged's resets, DurationStat::reset_accumulated).
    Unpin(t2);
    ASSERT_EQ(galloc_host_reset_peak_stats(a_), GALLOC_OK);
    ASSERT_EQ(galloc_host_reset_accumulated_stats(a_), GALLOC_OK);
    HostStats reset = Empty();
    reset["allocations.current"] = reset["allocations.peak"] = 2;
    reset["allocated_bytes.current"] = reset["allocated_bytes.peak"] = 196608;
    reset["active_requests.current"] = reset["active_requests.peak"] = 1;
    reset["active_bytes.current"] = reset["active_bytes.peak"] = 65536;
    Expect(reset, "after both resets");
    Unpin(t1);
    ASSERT_EQ(galloc_host_empty_cache(a_), GALLOC_OK);
    reset["allocations.current"] = reset["allocated_bytes.current"] = 0;
    reset["allocations.freed"] = reset["num_host_free"] = 2;
    reset["allocated_bytes.freed"] = 196608;
    reset["active_requests.current"] = reset["active_bytes.current"] = 0;
    reset["active_requests.freed"] = 1; // t2's free came before the reset
    reset["active_bytes.freed"] = 65536;
    reset["host_free_time.count"] = 2;
    Expect(reset, "both given back");
    EXPECT_EQ(Sim().live_host_allocs, 0u);
}

// The PyTorch-shaped sequence: pin a buffer, copy on two streams (the copies'
// record_event: galloc_host_record_stream), free it; a new pin of the same size
// must not reuse it until both streams' events completed, then must
// (CachingHostAllocatorImpl::free records one event per stream,
// process_events releases a block when its event_count reaches 0,
// get_free_block takes it).
TEST_F(HostTest, ABlockUsedOnTwoStreamsIsReusedOnlyAfterBothEvents)
{
    const int64_t n = MiB;
    void *a = Pin(n);
    ASSERT_EQ(galloc_host_record_stream(a_, a, 1), GALLOC_OK) << Err();
    ASSERT_EQ(galloc_host_record_stream(a_, a, 2), GALLOC_OK) << Err();
    ASSERT_EQ(galloc_host_record_stream(a_, a, 2), GALLOC_OK) << "a stream twice is one stream";
    Unpin(a);
    EXPECT_EQ(Sim().live_events, 2u) << "one event per stream";
    HostStats want = Empty();
    Rise(want, "allocations", 1);
    Rise(want, "allocated_bytes", n);
    Rise(want, "active_requests", 1);
    Rise(want, "active_bytes", n);
    want["num_host_alloc"] = want["host_alloc_time.count"] = 1;
    Expect(want, "freed, both events pending: still active");

    void *b = Pin(n);
    EXPECT_NE(b, a) << "neither event has completed";
    Complete(1);
    void *c = Pin(n);
    EXPECT_NE(c, a) << "stream 2's event has not completed";
    EXPECT_NE(c, b);
    for (int i = 0; i < 2; i++) {
        Rise(want, "allocations", 1);
        Rise(want, "allocated_bytes", n);
        Rise(want, "active_requests", 1);
        Rise(want, "active_bytes", n);
    }
    want["num_host_alloc"] = want["host_alloc_time.count"] = 3;
    Expect(want, "a, b, c");

    Complete(2);
    void *d = Pin(n);
    EXPECT_EQ(d, a) << "both events completed: the block is reused";
    Fall(want, "active_requests", 1); // a became free (maybe_cache_block) ...
    Fall(want, "active_bytes", n);
    Rise(want, "active_requests", 1); // ... and was taken again (get_free_block)
    Rise(want, "active_bytes", n);
    Expect(want, "d reuses a");
    EXPECT_EQ(want["active_requests.allocated"], 4);
    EXPECT_EQ(want["active_requests.peak"], 3);
    EXPECT_EQ(Sim().live_host_allocs, 3u);

    for (void *p : {b, c, d})
        Unpin(p);
    ASSERT_EQ(galloc_host_empty_cache(a_), GALLOC_OK);
    EXPECT_EQ(Stats()["allocations.current"], 0);
    EXPECT_EQ(Stats()["num_host_free"], 3);
    EXPECT_EQ(Sim().live_host_allocs, 0u);
}

// process_events walks the event queue from its oldest entry and stops at the
// first event not complete: a block freed later, whose own events are done,
// waits behind it (CachingHostAllocatorImpl::process_events_for_specific_size
// with size -1: "push the event onto the back if it's not ready ... return").
TEST_F(HostTest, AnOlderPendingEventHoldsBackLaterBlocks)
{
    void *x = Pin(4096);
    void *y = Pin(4096);
    ASSERT_EQ(galloc_host_record_stream(a_, x, 1), GALLOC_OK);
    ASSERT_EQ(galloc_host_record_stream(a_, y, 2), GALLOC_OK);
    Unpin(x);
    Unpin(y);
    Complete(2); // y's event is done, x's (older) is not
    void *z = Pin(4096);
    EXPECT_NE(z, y) << "y waits behind x's event";
    EXPECT_NE(z, x);
    EXPECT_EQ(Stats()["active_requests.current"], 3);
    Complete(1);
    void *w = Pin(4096);
    EXPECT_EQ(w, y) << "both free now; the last pushed is taken first (pop from the back)";
    EXPECT_EQ(Stats()["active_requests.current"], 2);
    EXPECT_EQ(Stats()["allocations.current"], 3);
    Unpin(z);
    Unpin(w);
}

// allocate's roundSize (PR #171662): PowerOf2Ceil(size) only when size <=
// pinned_max_round_threshold and size <= pinned_max_cached_size, else size.
TEST_F(HostTest, TheRoundThresholdStopsRoundingAboveIt)
{
    Make("pinned_max_round_threshold_mb:1");
    void *p1 = Pin(MiB + 1);
    EXPECT_EQ(Stats()["allocated_bytes.current"], (int64_t)MiB + 1) << "above the threshold: exact";
    void *p2 = Pin(600 * KiB);
    EXPECT_EQ(Stats()["allocated_bytes.current"], (int64_t)(2 * MiB + 1)) << "600 KiB rounds to 1 MiB";
    void *p3 = Pin(MiB);
    EXPECT_EQ(Stats()["allocated_bytes.current"], (int64_t)(3 * MiB + 1)) << "at the threshold: rounded (to itself)";
    EXPECT_EQ(Sim().live_host_bytes, 3 * MiB + 1);
    for (void *p : {p1, p2, p3})
        Unpin(p);
}

// pinned_max_cached_size_mb (PR #171662, maybe_cache_block): a block that
// becomes free and is larger than the cap is given back at once, not cached;
// a request above the cap is not rounded either.
TEST_F(HostTest, BlocksAboveTheCacheCapAreGivenBackWhenFree)
{
    Make("pinned_max_cached_size_mb:1");
    void *big = Pin(3 * MiB / 2);
    HostStats want = Empty();
    Rise(want, "allocations", 1);
    Rise(want, "allocated_bytes", 3 * MiB / 2); // above the cap: not rounded to 2 MiB
    Rise(want, "active_requests", 1);
    Rise(want, "active_bytes", 3 * MiB / 2);
    want["num_host_alloc"] = want["host_alloc_time.count"] = 1;
    Expect(want, "1.5 MiB pinned");
    Unpin(big);
    Fall(want, "allocations", 1);
    Fall(want, "allocated_bytes", 3 * MiB / 2);
    Fall(want, "active_requests", 1);
    Fall(want, "active_bytes", 3 * MiB / 2);
    want["num_host_free"] = want["host_free_time.count"] = 1;
    Expect(want, "freed: given back at once");
    EXPECT_EQ(Sim().live_host_allocs, 0u);
    // At the cap: rounded, cached, reused.
    void *m = Pin(MiB);
    Unpin(m);
    EXPECT_EQ(Stats()["allocations.current"], 1);
    EXPECT_EQ(Pin(700 * KiB), m) << "700 KiB rounds to the cached 1 MiB block";
    Unpin(m);
    // Above the cap with a stream: given back when its event completes, at the
    // next call that processes events.
    void *s = Pin(2 * MiB);
    ASSERT_EQ(galloc_host_record_stream(a_, s, 5), GALLOC_OK);
    Unpin(s);
    EXPECT_EQ(Stats()["allocations.current"], 2) << "waiting on stream 5";
    Complete(5);
    ASSERT_EQ(galloc_host_empty_cache(a_), GALLOC_OK);
    EXPECT_EQ(Stats()["allocations.current"], 0);
    EXPECT_EQ(Stats()["num_host_free"], 3);
}

// A round threshold below the cache cap: blocks above the threshold are
// cached at their exact sizes, so one bucket (ceil(log2(size))) holds blocks
// of different sizes. Before PR #192722 get_free_block took the bucket's last
// block whatever its size (its example: a cached 150 MB block handed to a 200
// MB request, a 50 MB heap overflow); since, it scans for the first block of
// at least the request. Scaled down: threshold 1 MiB, cap 64 MiB, bucket 21.
TEST_F(HostTest, AThresholdBelowTheCapNeverHandsOutASmallerBlock)
{
    Make("pinned_max_round_threshold_mb:1,pinned_max_cached_size_mb:64");
    const size_t p_size = 3 * MiB / 2, q_size = 7 * MiB / 4, small = 5 * MiB / 4;
    void *p = Pin(p_size);
    Unpin(p); // cached, bucket 21
    void *q = Pin(q_size);
    EXPECT_NE(q, p) << "1.5 MiB cached, 1.75 MiB asked: the overflow #192722 fixed";
    EXPECT_EQ(Stats()["allocations.current"], 2);
    Unpin(q); // bucket 21: p, then q at the back
    void *r = Pin(small);
    EXPECT_EQ(r, q) << "from the back, the first block of at least 1.25 MiB (UNVERIFIED: the scan's direction)";
    EXPECT_EQ(Stats()["active_bytes.current"], (int64_t)q_size) << "active counts the block's size (#192722)";
    void *s = Pin(p_size);
    EXPECT_EQ(s, p);
    EXPECT_EQ(Stats()["active_bytes.current"], (int64_t)(p_size + q_size));
    EXPECT_EQ(Stats()["allocations.current"], 2);
    Unpin(r);
    Unpin(s);
}

// pinned_reserve_segment_size_mb (PRs #163780, #164501): one segment pinned at
// the first miss (timed like any slow-path pinning, but no block of its own);
// requests carved from it in 4 KiB steps while they fit (PinnedReserveSegment::
// allocate), the rest pinned on their own; carved blocks are counted as
// blocks and "given back" by empty_cache without a driver call
// (CUDACachingHostAllocatorImpl::free_block skips them), and their bytes
// never come back to the segment.
TEST_F(HostTest, TheReserveSegmentIsCarvedAndNeverGivenBack)
{
    Make("pinned_reserve_segment_size_mb:2");
    void *a = Pin(1000);
    HostStats want = Empty();
    Rise(want, "allocations", 1);
    Rise(want, "allocated_bytes", 1024);
    Rise(want, "active_requests", 1);
    Rise(want, "active_bytes", 1024);
    want["num_host_alloc"] = 1;
    want["host_alloc_time.count"] = 1; // the segment itself
    Expect(want, "the first carve");
    EXPECT_EQ(Sim().live_host_allocs, 1u);
    EXPECT_EQ(Sim().live_host_bytes, 2 * MiB);
    void *b = Pin(MiB);
    EXPECT_EQ(b, static_cast<char *>(a) + 4096) << "1 KiB took a 4 KiB step";
    EXPECT_EQ(Sim().live_host_allocs, 1u) << "carved too";
    void *c = Pin(MiB);
    EXPECT_EQ(Sim().live_host_allocs, 2u) << "1 MiB no longer fits: pinned on its own";
    EXPECT_EQ(Stats()["host_alloc_time.count"], 2);
    EXPECT_EQ(Stats()["num_host_alloc"], 3);
    for (void *p : {a, b, c})
        Unpin(p);
    ASSERT_EQ(galloc_host_empty_cache(a_), GALLOC_OK);
    HostStats s = Stats();
    EXPECT_EQ(s["allocations.current"], 0);
    EXPECT_EQ(s["num_host_free"], 3) << "num_host_free is allocations.freed";
    EXPECT_EQ(s["host_free_time.count"], 1) << "only the block pinned on its own reached the driver";
    EXPECT_EQ(Sim().live_host_allocs, 1u) << "the segment stays";
    void *d = Pin(1000);
    EXPECT_EQ(d, static_cast<char *>(a) + 4096 + MiB) << "the carve goes on from where it was";
    Unpin(d);
}

// pinned_use_cuda_host_register (CUDACachingHostAllocatorImpl::
// allocWithCudaHostRegister): malloc, fault every page in (over
// pinned_num_register_threads threads), register; give back with unregister
// and free. Same figures as host_alloc's.
TEST_F(HostTest, TheRegisterPathPinsMallocedMemory)
{
    Make("pinned_use_cuda_host_register:True,pinned_num_register_threads:4");
    void *p = Pin(48 * KiB);
    std::memset(p, 0x5c, 48 * KiB);
    EXPECT_EQ(Sim().live_host_registered, 1u);
    EXPECT_EQ(Sim().live_registered_bytes, 64 * KiB) << "rounded first, then registered";
    EXPECT_EQ(Sim().live_host_allocs, 0u);
    HostStats s = Stats();
    EXPECT_EQ(s["allocated_bytes.current"], (int64_t)(64 * KiB));
    EXPECT_EQ(s["host_alloc_time.count"], 1);
    Unpin(p);
    ASSERT_EQ(galloc_host_empty_cache(a_), GALLOC_OK);
    EXPECT_EQ(Sim().live_host_registered, 0u);
    EXPECT_EQ(Stats()["host_free_time.count"], 1);
}

// What galloc refuses (PyTorch's free trusts its caller and record_event
// returns false): every refusal changes no figure.
TEST_F(HostTest, MisuseIsRefusedAndChangesNothing)
{
    void *p = Pin(4096);
    HostStats before = Stats();
    int local = 0;
    EXPECT_EQ(galloc_host_free(a_, &local), GALLOC_E_NOT_OWNED);
    EXPECT_EQ(galloc_host_free(a_, static_cast<char *>(p) + 8), GALLOC_E_NOT_OWNED) << "inside a block";
    EXPECT_EQ(galloc_host_record_stream(a_, &local, 1), GALLOC_E_NOT_OWNED);
    EXPECT_EQ(galloc_host_malloc(a_, 16, nullptr), GALLOC_E_INVAL);
    void *q = &local;
    EXPECT_EQ(galloc_host_malloc(a_, 0, &q), GALLOC_OK);
    EXPECT_EQ(q, nullptr) << "size 0: nothing, counted nowhere";
    EXPECT_EQ(galloc_host_malloc(a_, SIZE_MAX, &q), GALLOC_E_NOMEM);
    EXPECT_EQ(q, nullptr);
    EXPECT_EQ(galloc_host_free(a_, nullptr), GALLOC_OK);
    Expect(before, "after the refusals");
    Unpin(p);
    EXPECT_EQ(galloc_host_free(a_, p), GALLOC_E_NOT_OWNED) << "twice";
    EXPECT_NE(Err().find("freed already"), std::string::npos) << Err();
    EXPECT_EQ(galloc_host_record_stream(a_, p, 1), GALLOC_E_NOT_OWNED) << "a cached block is no live block";
    EXPECT_EQ(galloc_host_malloc(nullptr, 16, &q), GALLOC_E_INVAL);
    galloc_host_stats_t s = {};
    EXPECT_EQ(galloc_host_memory_stats(a_, nullptr), GALLOC_E_INVAL);
    EXPECT_EQ(galloc_host_memory_stats(a_, &s), GALLOC_E_INVAL) << "struct_size unset";
}

// galloc_empty_cache is the device pools' (torch.cuda.empty_cache() leaves the
// host cache alone); galloc_host_empty_cache gives back cached blocks only,
// never one waiting on an event.
TEST_F(HostTest, EachEmptyCacheEmptiesItsOwnCache)
{
    void *p = Pin(8192), *q = Pin(8192);
    ASSERT_EQ(galloc_host_record_stream(a_, q, 3), GALLOC_OK);
    Unpin(p);
    Unpin(q);
    ASSERT_EQ(galloc_empty_cache(a_), GALLOC_OK);
    EXPECT_EQ(Stats()["allocations.current"], 2);
    ASSERT_EQ(galloc_host_empty_cache(a_), GALLOC_OK);
    EXPECT_EQ(Stats()["allocations.current"], 1) << "q waits on stream 3";
    Complete(3);
    ASSERT_EQ(galloc_host_empty_cache(a_), GALLOC_OK);
    EXPECT_EQ(Stats()["allocations.current"], 0);
    EXPECT_EQ(Sim().live_host_allocs, 0u);
}

// torch.cuda.host_memory_stats() sorts the flattened keys of at::HostStats
// (Stat: allocated, current, freed, peak; DurationStat: avg, count, max, min,
// total; torch/cuda/memory.py's _recurse_add_to_result and result.sort()).
TEST_F(HostTest, TheKeysAreHostMemoryStatsKeysInItsOrder)
{
    std::vector<std::string> keys;
    galloc_host_stats_t s = {};
    s.struct_size = sizeof s;
    ASSERT_EQ(galloc_host_memory_stats(a_, &s), GALLOC_OK);
    galloc_host_stats_foreach(
        &s,
        [](void *ctx, const char *key, int64_t) {
            static_cast<std::vector<std::string> *>(ctx)->push_back(key);
            return 0;
        },
        &keys);
    std::vector<std::string> want;
    for (const char *stat : {"active_bytes", "active_requests", "allocated_bytes", "allocations"})
        for (const char *f : {"allocated", "current", "freed", "peak"})
            want.push_back(std::string(stat) + "." + f);
    for (const char *d : {"host_alloc_time", "host_free_time"})
        for (const char *f : {"avg", "count", "max", "min", "total"})
            want.push_back(std::string(d) + "." + f);
    want.push_back("num_host_alloc");
    want.push_back("num_host_free");
    EXPECT_EQ(keys, want);
    std::vector<std::string> sorted = want;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(sorted, want);
    int64_t v = -1;
    EXPECT_EQ(galloc_host_stats_lookup(&s, "host_free_time.count", &v), GALLOC_OK);
    EXPECT_EQ(v, 0);
    EXPECT_EQ(galloc_host_stats_lookup(&s, "segment.current", &v), GALLOC_E_INVAL) << "2.6's key, renamed";
    EXPECT_EQ(galloc_host_stats_foreach(
                  &s, [](void *, const char *, int64_t) { return 1; }, nullptr),
              1u);
}

// The settings' refusals reach create with the config's words; a threshold
// below the cap is accepted (conf/conf.c; PR #192722 fixed the overflow, it
// did not refuse the configuration).
TEST(HostConf, BadPinnedSettingsFailCreate)
{
    galloc_allocator_t *a = nullptr;
    char err[GALLOC_ERROR_MAX] = "";
    EXPECT_EQ(galloc_allocator_create_ex("sim", 0, "pinned_max_round_threshold_mb:lots", GALLOC_CREATE_NO_ENV, &a, err,
                                         sizeof err),
              GALLOC_E_CONFIG);
    EXPECT_STREQ(err, "create string: pinned_max_round_threshold_mb: expected a whole number of MiB, got \"lots\" "
                      "(offset 30)");
    EXPECT_EQ(galloc_allocator_create_ex("sim", 0, "pinned_reserve_segment_size_mb:0", GALLOC_CREATE_NO_ENV, &a, err,
                                         sizeof err),
              GALLOC_E_CONFIG);
    ASSERT_EQ(galloc_allocator_create_ex("sim", 0, "pinned_max_round_threshold_mb:128,pinned_max_cached_size_mb:1024",
                                         GALLOC_CREATE_NO_ENV, &a, err, sizeof err),
              GALLOC_OK)
        << err;
    galloc_settings_t st = {};
    st.struct_size = sizeof st;
    ASSERT_EQ(galloc_settings_get(a, &st), GALLOC_OK);
    EXPECT_EQ(st.pinned_max_round_threshold, 128 * MiB);
    EXPECT_EQ(st.pinned_max_cached_size, 1024 * MiB);
    EXPECT_EQ(st.pinned_reserve_segment_size, 0u);
    galloc_allocator_destroy(a);
}

// A user allocator has no device layer: no pinned memory to cache.
TEST(HostConf, AnAllocatorWithoutPinnedMemoryRefuses)
{
    galloc_user_allocator_t u = {};
    u.struct_size = sizeof u;
    u.version = GALLOC_USER_ALLOCATOR_V1;
    u.malloc_fn = [](void *, size_t n, int, galloc_stream_t) { return malloc(n); };
    u.free_fn = [](void *, void *p, size_t, int, galloc_stream_t) { free(p); };
    galloc_allocator_t *a = nullptr;
    char err[GALLOC_ERROR_MAX] = "";
    ASSERT_EQ(galloc_allocator_create_user(&u, 0, &a, err, sizeof err), GALLOC_OK) << err;
    void *p = nullptr;
    EXPECT_EQ(galloc_host_malloc(a, 64, &p), GALLOC_E_UNSUPPORTED);
    EXPECT_EQ(p, nullptr);
    EXPECT_EQ(galloc_check(a), GALLOC_OK);
    galloc_allocator_destroy(a);
}

} // namespace
} // namespace host_test
