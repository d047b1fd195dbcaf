// peer_cases: galloc_enable_peer_access on the "cuda" and "hip" backends
// through the public API, on the strict fake drivers' two devices, written
// once over a Vendor (vendor_cases.h) and instantiated by cuda_peer_test.cc
// and hip_peer_test.cc. The allocator lives on device 0; device 1 is the peer.
//
// The fake keeps, per mapped page, each device's access (fake_cuda_access,
// fake_cuda_mappings_without) and, per context pair, whether peer access is
// enabled (fake_cuda_peer_enabled), so the tests read from the driver's own
// books what galloc did: every VMM page (expandable segments, tags' segments)
// read-write for device 1, whether mapped before the call, by growth after
// it, or again by a wake after a sleep; and the driver's peer access from
// device 1's context toward device 0's for plain segments.
//
// The sweeps fail the k-th driver call inside galloc_enable_peer_access,
// k = 1, 2, ... until the call completes unfaulted: each failure is a clean
// status with a message, galloc_check passes, a retry succeeds and leaves
// everything reachable, and nothing leaks.
#include <gtest/gtest.h>

#include <string>

#include "tests/backend/vendor_cases.h"

extern "C" {
#include <galloc/galloc_sleep.h>
}

namespace cuda_test {

namespace {

// One block from tag's pool (a tag's segments are VMM mappings too).
void *TagAlloc(galloc_allocator_t *a, const char *tag, size_t n)
{
    void *p = nullptr;
    EXPECT_EQ(galloc_tag_begin(a, tag), GALLOC_OK) << LastError(a);
    EXPECT_EQ(galloc_malloc(a, n, 0, &p), GALLOC_OK) << LastError(a);
    EXPECT_EQ(galloc_tag_end(a, tag), GALLOC_OK) << LastError(a);
    return p;
}

// Device dev's access to every 2 MiB page (the fake's granularity) of [p, p + n).
void ExpectPagesReachable(FakeCuda &f, void *p, size_t n, int dev, int prot = 3)
{
    uintptr_t lo = (uintptr_t)p & ~(uintptr_t)(2 * kMiB - 1);
    for (uintptr_t pg = lo; pg < (uintptr_t)p + n; pg += 2 * kMiB)
        EXPECT_EQ(f.fake_cuda_access(pg, dev), prot) << "device " << dev << ", page " << std::hex << pg;
}

} // namespace

// Expandable segments: pages mapped before the call, then growth of the
// large and the small pool's segments after it.
TEST_P(Peer, ExpandableEveryPageBeforeAndAfterGrowth)
{
    Make("expandable_segments:True");
    void *big = Alloc(5 * kMiB), *small = Alloc(4096);
    ASSERT_GT(f_.Stats().live_mappings, 0u);
    EXPECT_EQ(f_.fake_cuda_access((uintptr_t)big, 1), 0) << "no peer before the call";
    EXPECT_EQ(f_.fake_cuda_mappings_without(1), (int)f_.Stats().live_mappings);
    galloc_stats_t s0 = Stats();

    ASSERT_EQ(galloc_enable_peer_access(a_, 1), GALLOC_OK) << LastError(a_);
    EXPECT_EQ(f_.fake_cuda_mappings_without(1), 0) << "every page mapped before the call";
    EXPECT_EQ(f_.fake_cuda_mappings_without(0), 0) << "the own device keeps its access";
    ExpectPagesReachable(f_, big, 5 * kMiB, 1);
    ExpectPagesReachable(f_, small, 4096, 1);
    EXPECT_EQ(f_.fake_cuda_peer_enabled(1, 0), 1) << "plain segments: the driver's peer access";
    EXPECT_EQ(f_.fake_cuda_peer_enabled(0, 1), 0) << "one way only";
    galloc_stats_t s1 = Stats();
    EXPECT_EQ(s1.reserved_bytes[ALL].current, s0.reserved_bytes[ALL].current) << "stats do not change";
    EXPECT_EQ(s1.num_device_alloc, s0.num_device_alloc);

    uint64_t maps0 = f_.Stats().live_mappings;
    void *grown = Alloc(45 * kMiB); // the large pool's segment grows by new pages
    void *more_small[600];
    for (void *&q : more_small) // 600 x 4 KiB: past the small segment's first 2 MiB page
        q = Alloc(4096);
    EXPECT_GT(f_.Stats().live_mappings, maps0) << "growth mapped new pages";
    EXPECT_EQ(f_.fake_cuda_mappings_without(1), 0) << "every page mapped after the call";
    ExpectPagesReachable(f_, grown, 45 * kMiB, 1);
    for (void *q : more_small)
        Free(q);
    Free(grown);
    Free(small);
    Free(big);
    ASSERT_EQ(galloc_empty_cache(a_), GALLOC_OK);
    void *again = Alloc(3 * kMiB); // pages unmapped and mapped anew
    ExpectPagesReachable(f_, again, 3 * kMiB, 1);
    EXPECT_EQ(f_.fake_cuda_mappings_without(1), 0);
    Free(again);
}

// Tags' segments through a sleep and a wake: the wake maps new pages, which
// must carry the peer's access too; with and without expandable segments.
TEST_P(Peer, TagPagesAfterSleepAndWake)
{
    for (const char *conf : {"", "expandable_segments:True"}) {
        SCOPED_TRACE(conf);
        if (a_ != nullptr) {
            ASSERT_EQ(galloc_check(a_), GALLOC_OK) << LastError(a_);
            galloc_allocator_destroy(a_);
            a_ = nullptr;
        }
        Make(conf);
        void *w = TagAlloc(a_, "weights", 3 * kMiB);
        void *kv = TagAlloc(a_, "kv", 1 * kMiB);
        ASSERT_TRUE(w && kv);
        ASSERT_EQ(galloc_enable_peer_access(a_, 1), GALLOC_OK) << LastError(a_);
        ExpectPagesReachable(f_, w, 3 * kMiB, 1);
        void *later = TagAlloc(a_, "weights", 6 * kMiB); // a tag segment mapped after the call
        ExpectPagesReachable(f_, later, 6 * kMiB, 1);
        ASSERT_EQ(galloc_sleep(a_, "weights,kv", "weights"), GALLOC_OK) << LastError(a_);
        ASSERT_EQ(galloc_wake(a_, nullptr), GALLOC_OK) << LastError(a_);
        ExpectPagesReachable(f_, w, 3 * kMiB, 1);
        ExpectPagesReachable(f_, kv, 1 * kMiB, 1);
        ExpectPagesReachable(f_, later, 6 * kMiB, 1);
        EXPECT_EQ(f_.fake_cuda_mappings_without(1), 0) << "every page the wake mapped";
        for (void *p : {w, kv, later})
            Free(p);
    }
}

// Plain segments (cuMemAlloc / hipMalloc): the driver's peer access, from
// device 1's context toward device 0's; a second call makes no driver call.
TEST_P(Peer, PlainSegmentsAndIdempotence)
{
    Make();
    void *p = Alloc(1 * kMiB);
    EXPECT_EQ(f_.Stats().live_mappings, 0u) << "no VMM: a plain segment";
    EXPECT_EQ(f_.fake_cuda_peer_enabled(1, 0), 0);
    ASSERT_EQ(galloc_enable_peer_access(a_, 1), GALLOC_OK) << LastError(a_);
    EXPECT_EQ(f_.fake_cuda_peer_enabled(1, 0), 1);
    EXPECT_EQ(f_.fake_cuda_peer_enabled(0, 1), 0);
    EXPECT_EQ(f_.fake_cuda_calls(v().enable_peer), 1u);
    uint64_t calls = f_.fake_cuda_calls("*");
    EXPECT_EQ(galloc_enable_peer_access(a_, 1), GALLOC_OK) << LastError(a_);
    EXPECT_EQ(f_.fake_cuda_calls("*"), calls) << "enabled before: nothing to do";
    void *q = Alloc(30 * kMiB); // a new segment: the context pair covers it
    EXPECT_EQ(f_.fake_cuda_peer_enabled(1, 0), 1);
    Free(q);
    Free(p);
}

// Another allocator (or the framework) enabled the pair first: "already
// enabled" from the driver is success, and both allocators keep working.
TEST_P(Peer, AlreadyEnabledByAnotherAllocator)
{
    Make("expandable_segments:True");
    galloc_allocator_t *other = nullptr;
    char err[GALLOC_ERROR_MAX] = "";
    ASSERT_EQ(galloc_allocator_create(nullptr, 0, CudaConf(f_).c_str(), &other, err, sizeof err), GALLOC_OK) << err;
    ASSERT_EQ(galloc_enable_peer_access(other, 1), GALLOC_OK) << LastError(other);
    void *p = Alloc(3 * kMiB);
    ASSERT_EQ(galloc_enable_peer_access(a_, 1), GALLOC_OK) << LastError(a_);
    EXPECT_EQ(f_.fake_cuda_calls(v().enable_peer), 2u) << "the second was refused as already enabled";
    ExpectPagesReachable(f_, p, 3 * kMiB, 1);
    EXPECT_EQ(galloc_check(other), GALLOC_OK) << LastError(other);
    galloc_allocator_destroy(other);
    Free(p);
}

TEST_P(Peer, BadPeerRefused)
{
    Make("expandable_segments:True");
    EXPECT_EQ(galloc_enable_peer_access(nullptr, 1), GALLOC_E_INVAL);
    EXPECT_EQ(galloc_enable_peer_access(a_, 0), GALLOC_E_INVAL);
    EXPECT_NE(LastError(a_).find("own device"), std::string::npos) << LastError(a_);
    EXPECT_EQ(galloc_enable_peer_access(a_, 2), GALLOC_E_INVAL);
    EXPECT_NE(LastError(a_).find("reports 2 devices"), std::string::npos) << LastError(a_);
    EXPECT_EQ(galloc_enable_peer_access(a_, -1), GALLOC_E_INVAL);
    EXPECT_EQ(f_.fake_cuda_calls(v().can_access_peer), 0u);
    EXPECT_EQ(f_.fake_cuda_peer_enabled(1, 0), 0);
}

// Devices without a path between them: GALLOC_E_UNSUPPORTED, a message that
// says so, and nothing changed (no peer access, pages mapped before or after
// without device 1's access).
TEST_P(Peer, UnreachableDevicesRefusedAndNothingChanged)
{
    ASSERT_EQ(f_.fake_cuda_peer_block(0, 1, 1), 0);
    Make("expandable_segments:True");
    void *p = Alloc(3 * kMiB);
    galloc_stats_t s0 = Stats();
    EXPECT_EQ(galloc_enable_peer_access(a_, 1), GALLOC_E_UNSUPPORTED);
    std::string msg = LastError(a_);
    EXPECT_NE(msg.find("device 1 cannot access device 0's memory"), std::string::npos) << msg;
    EXPECT_NE(msg.find(v().can_access_peer), std::string::npos) << msg;
    EXPECT_EQ(f_.fake_cuda_calls(v().enable_peer), 0u);
    EXPECT_EQ(f_.fake_cuda_peer_enabled(1, 0), 0);
    ExpectPagesReachable(f_, p, 3 * kMiB, 1, 0);
    galloc_stats_t s1 = Stats();
    EXPECT_EQ(s1.reserved_bytes[ALL].current, s0.reserved_bytes[ALL].current);
    EXPECT_EQ(s1.num_device_alloc, s0.num_device_alloc);
    uint64_t maps0 = f_.Stats().live_mappings;
    void *q = Alloc(30 * kMiB); // later maps name no peer either (the fake would refuse them)
    EXPECT_GT(f_.Stats().live_mappings, maps0);
    ExpectPagesReachable(f_, q, 30 * kMiB, 1, 0);
    Free(q);
    Free(p);
}

// The fault sweep: fail the k-th driver call of the enable (nth mode: that
// call only; from mode: every call from it on), then check the contract and
// retry; also after an injected failure the allocator keeps allocating.
TEST_P(PeerPlain, FaultSweepLeavesAllocatorConsistentAndRetrySucceeds)
{
    for (const char *conf : {"", "expandable_segments:True"}) {
        for (bool from_mode : {false, true}) {
            FakeCuda f(v().Fake(), v().name);
            ASSERT_TRUE(f.ok()) << f.error();
            uint64_t runs = 0, failures = 0;
            for (uint64_t n = 1; n < 1000; n++) {
                SCOPED_TRACE(std::string(conf) + (from_mode ? ": failing every call from #" : ": failing call #") +
                             std::to_string(n));
                f.fake_cuda_reset();
                galloc_allocator_t *a = nullptr;
                char err[GALLOC_ERROR_MAX] = "";
                ASSERT_EQ(galloc_allocator_create(nullptr, 0, CudaConf(f, conf).c_str(), &a, err, sizeof err),
                          GALLOC_OK)
                    << err;
                void *p = nullptr, *t = nullptr, *q = nullptr;
                ASSERT_EQ(galloc_malloc(a, 5 * kMiB, 0, &p), GALLOC_OK) << LastError(a);
                t = TagAlloc(a, "weights", 3 * kMiB); // VMM pages in either configuration
                f.fake_cuda_fail("*", from_mode ? 0 : n, from_mode ? n : 0, kUnknown);
                galloc_status_t st = galloc_enable_peer_access(a, 1);
                uint64_t faults = f.Stats().faults;
                f.fake_cuda_fail_clear();
                if (st != GALLOC_OK) {
                    EXPECT_NE(st, GALLOC_E_INVAL);
                    EXPECT_NE(LastError(a), "") << "a failure says why";
                    failures++;
                } else {
                    EXPECT_EQ(f.fake_cuda_mappings_without(1), 0) << "done means done";
                    EXPECT_EQ(f.fake_cuda_peer_enabled(1, 0), 1);
                }
                EXPECT_EQ(galloc_check(a), GALLOC_OK) << LastError(a);
                EXPECT_EQ(galloc_malloc(a, 1 * kMiB, 0, &q), GALLOC_OK) << "still allocates: " << LastError(a);
                EXPECT_EQ(galloc_enable_peer_access(a, 1), GALLOC_OK) << "the retry: " << LastError(a);
                EXPECT_EQ(f.fake_cuda_mappings_without(1), 0) << "every page, after the retry";
                EXPECT_EQ(f.fake_cuda_peer_enabled(1, 0), 1);
                void *r = nullptr;
                EXPECT_EQ(galloc_malloc(a, 9 * kMiB, 0, &r), GALLOC_OK) << LastError(a);
                EXPECT_EQ(f.fake_cuda_mappings_without(1), 0) << "and every page mapped later";
                for (void *x : {p, t, q, r}) {
                    if (x != nullptr) {
                        EXPECT_EQ(galloc_free(a, x), GALLOC_OK) << LastError(a);
                    }
                }
                EXPECT_EQ(galloc_check(a), GALLOC_OK) << LastError(a);
                galloc_allocator_destroy(a);
                fake_gpu_stats_t fs = f.Stats();
                EXPECT_EQ(fs.leaks, 0u);
                EXPECT_EQ(fs.violations, 0u) << f.Violation();
                if (faults == 0)
                    break;
                runs++;
                if (::testing::Test::HasFailure())
                    return; // the first failing run is the one to read
            }
            EXPECT_GE(runs, 4u) << "the enable makes several driver calls";
            EXPECT_GE(failures, 1u);
        }
    }
}

} // namespace cuda_test
