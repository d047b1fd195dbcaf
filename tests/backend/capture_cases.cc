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

} // namespace cuda_test
