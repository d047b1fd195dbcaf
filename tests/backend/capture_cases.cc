// capture_cases: graph_capture_record_stream_reuse through the public API on
// the "cuda" and "hip" backends, over the fake drivers' capture model
// (fake_gpu.h, "Capture"), written once over a Vendor (vendor_cases.h) and
// instantiated by cuda_capture_test.cc and hip_capture_test.cc.
//
// The scenario is PyTorch's (CUDACachingAllocator.cpp, free_safe_blocks_in_capture):
// a capture on stream S routes its allocations to a private pool; block a is
// allocated on S, used on side stream S1 (record_stream), and freed while S1's
// use is not yet joined back into S. It is reused by a malloc on S only once
// S's frontier has every use of a behind it. The fake's books show that galloc
// records, queries and waits for no event during the capture (a violation
// there fails TearDown), and nothing leaks.
#include <gtest/gtest.h>

#include <string>

#include "tests/backend/vendor_cases.h"

extern "C" {
#include <galloc/galloc_mempool.h>
}

namespace cuda_test {

namespace {

constexpr int kUnknownCode = 999;

} // namespace

// A capture on S routed to a private pool, with side streams S1 and S2.
void Capture::Begin(const std::string &conf)
{
    Make(conf);
    ASSERT_EQ(f_.fake_cuda_stream_create(0, &s_), 0);
    ASSERT_EQ(f_.fake_cuda_stream_create(0, &s1_), 0);
    ASSERT_EQ(f_.fake_cuda_stream_create(0, &s2_), 0);
    ASSERT_EQ(galloc_mempool_create(a_, &pool_), GALLOC_OK) << LastError(a_);
    ASSERT_EQ(f_.fake_cuda_capture_begin(s_), 0);
    ASSERT_EQ(galloc_mempool_begin_allocate(a_, pool_, GALLOC_ROUTE_STREAM, S()), GALLOC_OK) << LastError(a_);
}

// The route and the capture end; the pool goes once its blocks are free.
void Capture::End()
{
    ASSERT_EQ(galloc_mempool_end_allocate(a_, pool_), GALLOC_OK) << LastError(a_);
    ASSERT_EQ(f_.fake_cuda_capture_end(s_), 0);
    ASSERT_EQ(galloc_mempool_release(a_, pool_), GALLOC_OK) << LastError(a_);
}

// a on S, used by a kernel on S1 (joined from S), freed before S1 joins back.
void *Capture::FreeUsedOnS1(uintptr_t *use)
{
    uintptr_t n = 0;
    EXPECT_EQ(f_.fake_cuda_capture_launch(s_, &n), 0); // the kernel that writes a
    void *a = Alloc(4 * kMiB, S());
    EXPECT_EQ(galloc_record_stream(a_, a, (galloc_stream_t)s1_), GALLOC_OK) << LastError(a_);
    EXPECT_EQ(f_.fake_cuda_capture_join(s_, s1_), 0);
    EXPECT_EQ(f_.fake_cuda_capture_launch(s1_, use), 0); // S1 reads a
    Free(a);
    return a;
}

TEST_P(Capture, ReusedOnceTheGraphOrdersEveryUse)
{
    Begin("graph_capture_record_stream_reuse:True");
    uintptr_t use = 0;
    void *a = FreeUsedOnS1(&use);
    galloc_stats_t st = Stats();
    EXPECT_EQ(st.allocation[ALL].current, 0);
    EXPECT_EQ(st.allocated_bytes[ALL].current, 0);
    EXPECT_EQ(st.active[ALL].current, 1) << "a is active pending free";
    EXPECT_EQ(st.active_bytes[ALL].current, (int64_t)(4 * kMiB));

    // S1's kernel is not behind S's frontier: a stays out, the rest of its segment serves.
    void *b = Alloc(4 * kMiB, S());
    EXPECT_EQ(b, (char *)a + 4 * kMiB);
    Free(b);
    uintptr_t later = 0;
    ASSERT_EQ(f_.fake_cuda_capture_launch(s_, &later), 0); // more work on S alone changes nothing
    void *c = Alloc(4 * kMiB, S());
    EXPECT_EQ(c, b);
    Free(c);
    EXPECT_EQ(Stats().active[ALL].current, 1);

    ASSERT_EQ(f_.fake_cuda_capture_join(s1_, s_), 0); // S now waits for S1's kernel
    void *d = Alloc(4 * kMiB, S());
    EXPECT_EQ(d, a) << "every use of a is behind S's frontier: a is free again";
    st = Stats();
    EXPECT_EQ(st.allocation[ALL].current, 1);
    EXPECT_EQ(st.active[ALL].current, 1);
    EXPECT_EQ(st.active_bytes[ALL].current, (int64_t)(4 * kMiB));
    EXPECT_EQ(st.segment[ALL].current, 1) << "no second segment";
    EXPECT_EQ(st.num_sync_all_streams, 0);
    EXPECT_EQ(f_.fake_cuda_calls(v().event_record), 0u) << "no event for a: the graph orders its uses";
    Free(d);
    End();
}

// Without the setting a waits for the end of the capture (PyTorch's
// deferred_blocks); its event is recorded by the first malloc after it.
TEST_P(Capture, WithoutTheSettingTheBlockWaitsForTheEnd)
{
    Begin("");
    uintptr_t use = 0;
    void *a = FreeUsedOnS1(&use);
    ASSERT_EQ(f_.fake_cuda_capture_join(s1_, s_), 0);
    void *d = Alloc(4 * kMiB, S());
    EXPECT_NE(d, a);
    EXPECT_EQ(f_.fake_cuda_calls(v().event_record), 0u) << "nothing recorded during the capture";
    Free(d);
    EXPECT_EQ(Stats().active[ALL].current, 1);
    EXPECT_EQ(f_.fake_cuda_calls(v().capture_info), 0u) << "the capture graph is not read";
    End();
    void *e = Alloc(512); // records a's event, which the fake's streams complete at once: a is free
    EXPECT_EQ(f_.fake_cuda_calls(v().event_record), 1u);
    EXPECT_EQ(Stats().active[ALL].current, 1);
    void *g = Alloc(512);
    galloc_stats_t st = Stats();
    EXPECT_EQ(st.active[ALL].current, 2);
    EXPECT_EQ(st.active_bytes[ALL].current, 1024);
    Free(e);
    Free(g);
}

// A use on a stream that is not being captured: the graph cannot order it,
// so a waits for the end even after S1 joins back.
TEST_P(Capture, AUseOutsideTheCaptureWaitsForTheEnd)
{
    Begin("graph_capture_record_stream_reuse:True");
    void *a = Alloc(4 * kMiB, S());
    ASSERT_EQ(galloc_record_stream(a_, a, (galloc_stream_t)s2_), GALLOC_OK); // S2 never captures
    uintptr_t n = 0;
    ASSERT_EQ(f_.fake_cuda_capture_launch(s_, &n), 0);
    Free(a);
    ASSERT_EQ(f_.fake_cuda_capture_launch(s_, &n), 0);
    void *d = Alloc(4 * kMiB, S());
    EXPECT_NE(d, a);
    Free(d);
    EXPECT_EQ(Stats().active[ALL].current, 1);
    End();
    void *e = Alloc(512), *g = Alloc(512);
    EXPECT_EQ(Stats().active[ALL].current, 2) << "after the capture a's event completes";
    Free(e);
    Free(g);
}

// A failed capture query costs memory, never an error or a wrong reuse: at
// the free, a keeps no markers and waits for the end; at a malloc, the walk
// frees nothing, and the next malloc walks again.
TEST_P(Capture, FailedQueriesOnlyDelayTheReuse)
{
    Begin("graph_capture_record_stream_reuse:True");
    f_.fake_cuda_fail(v().capture_info, 1, 0, kUnknownCode); // the free's query of S
    uintptr_t use = 0;
    void *a = FreeUsedOnS1(&use);
    f_.fake_cuda_fail_clear();
    ASSERT_EQ(f_.fake_cuda_capture_join(s1_, s_), 0);
    void *b = FreeUsedOnS1(&use); // a second block, with markers
    ASSERT_EQ(f_.fake_cuda_capture_join(s1_, s_), 0);

    f_.fake_cuda_fail(v().node_deps, 1, 0, kUnknownCode);
    void *c = Alloc(4 * kMiB, S());
    EXPECT_NE(c, a);
    EXPECT_NE(c, b) << "the failed walk freed nothing";
    f_.fake_cuda_fail_clear();
    EXPECT_EQ(Stats().active[ALL].current, 3);
    void *d = Alloc(4 * kMiB, S());
    EXPECT_EQ(d, b) << "walked again: b is free, a still waits";
    EXPECT_EQ(Stats().active[ALL].current, 3);
    Free(c);
    Free(d);
    End();
    void *e = Alloc(512), *g = Alloc(512);
    EXPECT_EQ(Stats().active[ALL].current, 2) << "a came back after the capture";
    Free(e);
    Free(g);
}

// An invalidated capture is no graph to trust: no reuse, no error.
TEST_P(Capture, AnInvalidatedCaptureReusesNothing)
{
    Begin("graph_capture_record_stream_reuse:True");
    uintptr_t use = 0;
    void *a = FreeUsedOnS1(&use);
    ASSERT_EQ(f_.fake_cuda_capture_join(s1_, s_), 0);
    ASSERT_EQ(f_.fake_cuda_capture_invalidate(s_), 0);
    void *d = Alloc(4 * kMiB, S());
    EXPECT_NE(d, a);
    Free(d);
    End();
    void *e = Alloc(512), *g = Alloc(512);
    EXPECT_EQ(Stats().active[ALL].current, 2);
    Free(e);
    Free(g);
}

// A frontier with nothing on it (the capture has no work yet on S or S1)
// gives no markers: the block waits for the end, as PyTorch's empty vector.
TEST_P(Capture, AnEmptyFrontierWaitsForTheEnd)
{
    Begin("graph_capture_record_stream_reuse:True");
    void *a = Alloc(4 * kMiB, S());
    ASSERT_EQ(galloc_record_stream(a_, a, (galloc_stream_t)s1_), GALLOC_OK);
    ASSERT_EQ(f_.fake_cuda_capture_join(s_, s1_), 0); // S1 joins with S's empty frontier
    Free(a);
    uintptr_t n = 0;
    ASSERT_EQ(f_.fake_cuda_capture_launch(s_, &n), 0);
    void *d = Alloc(4 * kMiB, S());
    EXPECT_NE(d, a);
    EXPECT_EQ(f_.fake_cuda_calls(v().node_deps), 0u) << "no markers: no walk";
    Free(d);
    End();
}

// Seventy side streams: S's frontier, and the dependencies of the node
// launched after they join back, pass the walk's first 64 entries.
TEST_P(Capture, WideFrontiersAreReadWhole)
{
    Begin("graph_capture_record_stream_reuse:True");
    constexpr int kSides = 70;
    uintptr_t side[kSides], n = 0;
    ASSERT_EQ(f_.fake_cuda_capture_launch(s_, &n), 0);
    void *a = Alloc(4 * kMiB, S());
    for (uintptr_t &s : side) {
        ASSERT_EQ(f_.fake_cuda_stream_create(0, &s), 0);
        ASSERT_EQ(galloc_record_stream(a_, a, (galloc_stream_t)s), GALLOC_OK);
        ASSERT_EQ(f_.fake_cuda_capture_join(s_, s), 0);
        ASSERT_EQ(f_.fake_cuda_capture_launch(s, &n), 0); // each reads a
        ASSERT_EQ(f_.fake_cuda_capture_join(s, s1_), 0);  // S1's frontier gathers them
    }
    Free(a); // markers: S's node and the 70 side nodes (S1's frontier repeats them)
    ASSERT_EQ(f_.fake_cuda_capture_join(s1_, s_), 0);
    ASSERT_EQ(f_.fake_cuda_capture_launch(s_, &n), 0); // depends on 71 nodes
    void *d = Alloc(4 * kMiB, S());
    EXPECT_EQ(d, a);
    Free(d);
    End();
}

// Each stream walks its own frontier: a default-pool block of S1 used on S,
// and the pool's block of S used on S1, come back to their own streams' mallocs.
TEST_P(Capture, EachStreamWalksItsOwnFrontier)
{
    Begin("graph_capture_record_stream_reuse:True");
    uintptr_t use = 0, n = 0;
    void *a = FreeUsedOnS1(&use);
    void *b = Alloc(8 * kMiB, (galloc_stream_t)s1_); // not routed: the default pool
    ASSERT_EQ(galloc_record_stream(a_, b, S()), GALLOC_OK);
    ASSERT_EQ(f_.fake_cuda_capture_launch(s_, &n), 0);
    Free(b);
    ASSERT_EQ(f_.fake_cuda_capture_join(s_, s1_), 0); // S1 waits for S: b's uses are behind S1
    void *b2 = Alloc(8 * kMiB, (galloc_stream_t)s1_);
    EXPECT_EQ(b2, b);
    ASSERT_EQ(f_.fake_cuda_capture_join(s1_, s_), 0);
    void *d = Alloc(4 * kMiB, S());
    EXPECT_EQ(d, a);
    Free(d);
    Free(b2);
    End();
}

// A new capture on S while the route lasts: the old graph's nodes are not
// behind the new frontier, so the block freed in the old capture waits for
// the end of the route.
TEST_P(Capture, ANewCaptureOnTheStreamStartsAFreshWalk)
{
    Begin("graph_capture_record_stream_reuse:True");
    uintptr_t use = 0, n = 0;
    void *a = FreeUsedOnS1(&use);
    ASSERT_EQ(f_.fake_cuda_capture_join(s1_, s_), 0);
    void *d = Alloc(4 * kMiB, S()); // walks the first capture: a comes back
    EXPECT_EQ(d, a);
    Free(d);
    void *b = FreeUsedOnS1(&use); // S1's use of b is never joined back in this capture
    ASSERT_EQ(f_.fake_cuda_capture_end(s_), 0);
    ASSERT_EQ(f_.fake_cuda_capture_begin(s_), 0);
    ASSERT_EQ(f_.fake_cuda_capture_launch(s_, &n), 0);
    void *c = FreeUsedOnS1(&use); // freed in the second capture
    ASSERT_EQ(f_.fake_cuda_capture_join(s1_, s_), 0);
    void *e = Alloc(4 * kMiB, S()); // c comes back; b, whose markers are the first graph's, does not
    EXPECT_EQ(e, c);
    EXPECT_NE(e, b);
    galloc_stats_t st = Stats();
    EXPECT_EQ(st.active[ALL].current, 2) << "e and b";
    Free(e);
    End();
}

// After the capture, recording a deferred block's event fails: that malloc
// fails with the driver's error and the block stays deferred; the next
// malloc records it.
TEST_P(Capture, AFailedEventRecordAfterTheCaptureKeepsTheBlockDeferred)
{
    Begin("");
    uintptr_t use = 0;
    (void)FreeUsedOnS1(&use);
    End();
    ASSERT_EQ(f_.fake_cuda_fail(v().event_record, 1, 0, kUnknownCode), 0);
    void *p = nullptr;
    EXPECT_EQ(galloc_malloc(a_, 512, 0, &p), GALLOC_E_DEVICE);
    EXPECT_EQ(p, nullptr);
    EXPECT_EQ(galloc_check(a_), GALLOC_OK) << LastError(a_);
    EXPECT_EQ(Stats().active[ALL].current, 1) << "still deferred";
    f_.fake_cuda_fail_clear();
    void *e = Alloc(512);
    EXPECT_EQ(Stats().active[ALL].current, 1) << "recorded and done: only e is active";
    Free(e);
}

// Destroying the allocator in the middle of a capture frees what the
// deferred blocks hold (ASan's leak check), and the driver's books balance.
TEST_P(Capture, DestroyedMidCaptureLeavesNothing)
{
    Begin("graph_capture_record_stream_reuse:True");
    uintptr_t use = 0;
    (void)FreeUsedOnS1(&use);
    ASSERT_EQ(galloc_mempool_end_allocate(a_, pool_), GALLOC_OK);
    ASSERT_EQ(f_.fake_cuda_capture_end(s_), 0);
    ASSERT_EQ(galloc_mempool_begin_allocate(a_, pool_, GALLOC_ROUTE_STREAM, S()), GALLOC_OK);
    ASSERT_EQ(f_.fake_cuda_capture_begin(s_), 0);
    (void)FreeUsedOnS1(&use); // deferred with markers, the route still active
    galloc_allocator_destroy(a_);
    a_ = nullptr;
    ASSERT_EQ(f_.fake_cuda_capture_end(s_), 0);
    fake_gpu_stats_t s = f_.Stats();
    EXPECT_EQ(s.leaks, 0u);
    EXPECT_EQ(s.violations, 0u) << f_.Violation();
}

} // namespace cuda_test
