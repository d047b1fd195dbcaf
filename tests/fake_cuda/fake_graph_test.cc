// fake_graph_test: the fake driver's stream capture model (fake_gpu_graph.c,
// "Capture" in fake_gpu.h) through its exported CUDA symbols and its
// controls: frontiers as launches and joins move them, the dependencies of
// each node, the end and invalidation of a capture, what the real driver
// refuses during a capture (each a violation), counting and fault injection
// of the two driver calls. The backend's capture_info and node_deps tests
// (tests/backend/graph_cases.cc) rely on every one of these.
#include <gtest/gtest.h>

#include <string>
#include <vector>

extern "C" {
#include "backend/cuda_api.h"
}
#include "tests/fake_cuda/fake_cuda_util.h"

namespace {

using Nodes = std::vector<uintptr_t>;

class FakeGraph : public ::testing::Test {
  protected:
    void SetUp() override
    {
        ASSERT_TRUE(f_.ok()) << f_.error();
#define BIND_(name) name = f_.Sym<ga_##name##_fn *>(#name)
        BIND_(cuInit);
        BIND_(cuDevicePrimaryCtxRetain);
        BIND_(cuDevicePrimaryCtxRelease_v2);
        BIND_(cuCtxSetCurrent);
        BIND_(cuStreamSynchronize);
        BIND_(cuEventCreate);
        BIND_(cuEventDestroy_v2);
        BIND_(cuEventRecord);
        BIND_(cuEventQuery);
        BIND_(cuEventSynchronize);
        BIND_(cuStreamGetCaptureInfo_v2);
        BIND_(cuGraphNodeGetDependencies);
#undef BIND_
        ASSERT_TRUE(f_.ok()) << f_.error();
        ASSERT_EQ(cuInit(0), GA_CUDA_SUCCESS);
        ga_cu_context_t ctx = nullptr;
        ASSERT_EQ(cuDevicePrimaryCtxRetain(&ctx, 0), GA_CUDA_SUCCESS);
        ASSERT_EQ(cuCtxSetCurrent(ctx), GA_CUDA_SUCCESS);
        ASSERT_EQ(f_.fake_cuda_stream_create(0, &s1_), 0);
        ASSERT_EQ(f_.fake_cuda_stream_create(0, &s2_), 0);
        ASSERT_EQ(f_.fake_cuda_stream_create(0, &s3_), 0);
    }
    void TearDown() override
    {
        EXPECT_EQ(cuDevicePrimaryCtxRelease_v2(0), GA_CUDA_SUCCESS);
        EXPECT_EQ(f_.Stats().leaks, 0u);
    }

    // The stream's status, id and frontier, from the driver call.
    struct Info {
        int status = -1;
        uint64_t id = 0;
        Nodes frontier;
        bool graph = false;
    };
    Info CaptureInfo(uintptr_t s)
    {
        Info out;
        ga_cu_stream_capture_status_t st = GA_CU_STREAM_CAPTURE_STATUS_INVALIDATED;
        ga_cu_graph_t graph = nullptr;
        const ga_cu_graph_node_t *deps = nullptr;
        size_t n = 99;
        EXPECT_EQ(cuStreamGetCaptureInfo_v2(reinterpret_cast<ga_cu_stream_t>(s), &st, &out.id, &graph, &deps, &n),
                  GA_CUDA_SUCCESS);
        out.status = st;
        out.graph = graph != nullptr;
        for (size_t i = 0; i < n; i++)
            out.frontier.push_back(reinterpret_cast<uintptr_t>(deps[i]));
        return out;
    }
    // A node's dependencies, counted first, then read with exactly that room.
    Nodes Deps(uintptr_t node)
    {
        size_t n = 0;
        auto h = reinterpret_cast<ga_cu_graph_node_t>(node);
        EXPECT_EQ(cuGraphNodeGetDependencies(h, nullptr, &n), GA_CUDA_SUCCESS);
        std::vector<ga_cu_graph_node_t> d(n);
        size_t got = n;
        EXPECT_EQ(cuGraphNodeGetDependencies(h, d.data(), &got), GA_CUDA_SUCCESS);
        EXPECT_EQ(got, n);
        Nodes out;
        for (auto p : d)
            out.push_back(reinterpret_cast<uintptr_t>(p));
        return out;
    }
    uintptr_t Launch(uintptr_t s)
    {
        uintptr_t node = 0;
        EXPECT_EQ(f_.fake_cuda_capture_launch(s, &node), 0);
        EXPECT_NE(node, 0u);
        return node;
    }

    FakeCuda f_;
    uintptr_t s1_ = 0, s2_ = 0, s3_ = 0;
    ga_cuInit_fn *cuInit = nullptr;
    ga_cuDevicePrimaryCtxRetain_fn *cuDevicePrimaryCtxRetain = nullptr;
    ga_cuDevicePrimaryCtxRelease_v2_fn *cuDevicePrimaryCtxRelease_v2 = nullptr;
    ga_cuCtxSetCurrent_fn *cuCtxSetCurrent = nullptr;
    ga_cuStreamSynchronize_fn *cuStreamSynchronize = nullptr;
    ga_cuEventCreate_fn *cuEventCreate = nullptr;
    ga_cuEventDestroy_v2_fn *cuEventDestroy_v2 = nullptr;
    ga_cuEventRecord_fn *cuEventRecord = nullptr;
    ga_cuEventQuery_fn *cuEventQuery = nullptr;
    ga_cuEventSynchronize_fn *cuEventSynchronize = nullptr;
    ga_cuStreamGetCaptureInfo_v2_fn *cuStreamGetCaptureInfo_v2 = nullptr;
    ga_cuGraphNodeGetDependencies_fn *cuGraphNodeGetDependencies = nullptr;
};

TEST_F(FakeGraph, AStreamNotCapturingHasNoIdAndNoFrontier)
{
    for (uintptr_t s : {uintptr_t{0}, s1_}) {
        Info i = CaptureInfo(s);
        EXPECT_EQ(i.status, GA_CU_STREAM_CAPTURE_STATUS_NONE);
        EXPECT_EQ(i.id, 0u);
        EXPECT_FALSE(i.graph);
        EXPECT_TRUE(i.frontier.empty());
    }
    // Every output but the status is optional.
    ga_cu_stream_capture_status_t st = GA_CU_STREAM_CAPTURE_STATUS_ACTIVE;
    EXPECT_EQ(cuStreamGetCaptureInfo_v2(reinterpret_cast<ga_cu_stream_t>(s1_), &st, nullptr, nullptr, nullptr, nullptr),
              GA_CUDA_SUCCESS);
    EXPECT_EQ(st, GA_CU_STREAM_CAPTURE_STATUS_NONE);
    EXPECT_EQ(f_.Stats().violations, 0u);
}

TEST_F(FakeGraph, EachLaunchDependsOnTheFrontierAndBecomesIt)
{
    ASSERT_EQ(f_.fake_cuda_capture_begin(s1_), 0);
    Info i = CaptureInfo(s1_);
    EXPECT_EQ(i.status, GA_CU_STREAM_CAPTURE_STATUS_ACTIVE);
    EXPECT_NE(i.id, 0u);
    EXPECT_TRUE(i.graph);
    EXPECT_TRUE(i.frontier.empty()) << "a new capture has an empty frontier";
    uintptr_t a = Launch(s1_);
    EXPECT_EQ(CaptureInfo(s1_).frontier, Nodes{a});
    uintptr_t b = Launch(s1_);
    EXPECT_EQ(CaptureInfo(s1_).frontier, Nodes{b});
    EXPECT_EQ(CaptureInfo(s1_).id, i.id);
    EXPECT_EQ(Deps(a), Nodes{});
    EXPECT_EQ(Deps(b), Nodes{a});
    // More room than dependencies: the rest is NULL and the count is what was filled.
    ga_cu_graph_node_t d[3] = {reinterpret_cast<ga_cu_graph_node_t>(1), reinterpret_cast<ga_cu_graph_node_t>(1),
                               reinterpret_cast<ga_cu_graph_node_t>(1)};
    size_t n = 3;
    EXPECT_EQ(cuGraphNodeGetDependencies(reinterpret_cast<ga_cu_graph_node_t>(b), d, &n), GA_CUDA_SUCCESS);
    EXPECT_EQ(n, 1u);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(d[0]), a);
    EXPECT_EQ(d[1], nullptr);
    EXPECT_EQ(d[2], nullptr);
    EXPECT_EQ(f_.fake_cuda_capture_end(s1_), 0);
}

TEST_F(FakeGraph, AJoinUnitesTheFrontiersWithoutANode)
{
    ASSERT_EQ(f_.fake_cuda_capture_begin(s1_), 0);
    uintptr_t a = Launch(s1_);
    // s2 was not capturing: it joins s1's capture with s1's frontier.
    ASSERT_EQ(f_.fake_cuda_capture_join(s1_, s2_), 0);
    Info i2 = CaptureInfo(s2_);
    EXPECT_EQ(i2.status, GA_CU_STREAM_CAPTURE_STATUS_ACTIVE);
    EXPECT_EQ(i2.id, CaptureInfo(s1_).id);
    EXPECT_EQ(i2.frontier, Nodes{a});
    uintptr_t b = Launch(s2_);
    EXPECT_EQ(Deps(b), Nodes{a});
    ASSERT_EQ(f_.fake_cuda_capture_join(s2_, s1_), 0);
    EXPECT_EQ(CaptureInfo(s1_).frontier, (Nodes{a, b}));
    ASSERT_EQ(f_.fake_cuda_capture_join(s2_, s1_), 0);
    EXPECT_EQ(CaptureInfo(s1_).frontier, (Nodes{a, b})) << "a node already in the frontier is not added twice";
    uintptr_t c = Launch(s1_);
    EXPECT_EQ(Deps(c), (Nodes{a, b}));
    // Room for one of two: one filled, and the count says one (CUDA's documented semantics).
    ga_cu_graph_node_t d = nullptr;
    size_t n = 1;
    EXPECT_EQ(cuGraphNodeGetDependencies(reinterpret_cast<ga_cu_graph_node_t>(c), &d, &n), GA_CUDA_SUCCESS);
    EXPECT_EQ(n, 1u);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(d), a);
    EXPECT_EQ(f_.fake_cuda_calls("cuGraphNodeGetDependencies"), 5u);
    EXPECT_EQ(f_.fake_cuda_capture_end(s1_), 0);
}

TEST_F(FakeGraph, EndingTheCaptureEndsItForEveryStreamAndKeepsTheGraph)
{
    ASSERT_EQ(f_.fake_cuda_capture_begin(s1_), 0);
    uint64_t id = CaptureInfo(s1_).id;
    uintptr_t a = Launch(s1_);
    ASSERT_EQ(f_.fake_cuda_capture_join(s1_, s2_), 0);
    uintptr_t b = Launch(s2_);
    EXPECT_EQ(f_.fake_cuda_capture_end(s2_), -1) << "only the stream that began the capture ends it";
    ASSERT_EQ(f_.fake_cuda_capture_end(s1_), 0);
    for (uintptr_t s : {s1_, s2_}) {
        Info i = CaptureInfo(s);
        EXPECT_EQ(i.status, GA_CU_STREAM_CAPTURE_STATUS_NONE);
        EXPECT_EQ(i.id, 0u);
        EXPECT_TRUE(i.frontier.empty());
    }
    EXPECT_EQ(Deps(b), Nodes{a}) << "the graph outlives its capture";
    EXPECT_EQ(f_.fake_cuda_capture_end(s1_), -1);
    EXPECT_EQ(f_.fake_cuda_capture_launch(s1_, &a), -1);
    ASSERT_EQ(f_.fake_cuda_capture_begin(s2_), 0);
    EXPECT_NE(CaptureInfo(s2_).id, id) << "every capture has its own id";
    EXPECT_TRUE(CaptureInfo(s2_).frontier.empty());
    // Destroying the stream that began a capture ends it.
    ASSERT_EQ(f_.fake_cuda_capture_join(s2_, s3_), 0);
    ASSERT_EQ(f_.fake_cuda_stream_destroy(s2_), 0);
    EXPECT_EQ(CaptureInfo(s3_).status, GA_CU_STREAM_CAPTURE_STATUS_NONE);
    EXPECT_EQ(f_.Stats().violations, 0u);
}

TEST_F(FakeGraph, TheControlsRefuseWhatNoCaptureCouldDo)
{
    uintptr_t node = 0;
    EXPECT_EQ(f_.fake_cuda_capture_begin(0), -1) << "the legacy stream never captures";
    EXPECT_EQ(f_.fake_cuda_capture_begin(12345), -1);
    EXPECT_EQ(f_.fake_cuda_capture_launch(s1_, &node), -1);
    EXPECT_EQ(f_.fake_cuda_capture_join(s1_, s2_), -1);
    EXPECT_EQ(f_.fake_cuda_capture_invalidate(s1_), -1);
    EXPECT_EQ(f_.fake_cuda_capture_end(s1_), -1);
    ASSERT_EQ(f_.fake_cuda_capture_begin(s1_), 0);
    EXPECT_EQ(f_.fake_cuda_capture_begin(s1_), -1) << "already capturing";
    EXPECT_EQ(f_.fake_cuda_capture_join(s1_, s1_), -1);
    ASSERT_EQ(f_.fake_cuda_capture_begin(s2_), 0);
    EXPECT_EQ(f_.fake_cuda_capture_join(s1_, s2_), -1) << "s2 is in another capture";
    EXPECT_EQ(f_.fake_cuda_capture_end(s1_), 0);
    EXPECT_EQ(f_.fake_cuda_capture_end(s2_), 0);
}

TEST_F(FakeGraph, AnInvalidatedCaptureSaysSoUntilItEnds)
{
    ASSERT_EQ(f_.fake_cuda_capture_begin(s1_), 0);
    uintptr_t a = Launch(s1_);
    ASSERT_EQ(f_.fake_cuda_capture_invalidate(s1_), 0);
    Info i = CaptureInfo(s1_);
    EXPECT_EQ(i.status, GA_CU_STREAM_CAPTURE_STATUS_INVALIDATED);
    EXPECT_EQ(i.id, 0u) << "only an active capture's data is valid";
    EXPECT_TRUE(i.frontier.empty());
    EXPECT_EQ(f_.fake_cuda_capture_launch(s1_, &a), -1);
    EXPECT_EQ(f_.fake_cuda_capture_join(s1_, s2_), -1);
    ASSERT_EQ(f_.fake_cuda_capture_end(s1_), 0);
    EXPECT_EQ(CaptureInfo(s1_).status, GA_CU_STREAM_CAPTURE_STATUS_NONE);
}

TEST_F(FakeGraph, SynchronizingACapturingStreamIsRefusedAndInvalidatesTheCapture)
{
    ASSERT_EQ(f_.fake_cuda_capture_begin(s1_), 0);
    ASSERT_EQ(f_.fake_cuda_capture_join(s1_, s2_), 0);
    EXPECT_EQ(cuStreamSynchronize(reinterpret_cast<ga_cu_stream_t>(s2_)), GA_CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    EXPECT_EQ(f_.Stats().violations, 1u);
    EXPECT_NE(f_.Violation().find("cuStreamSynchronize"), std::string::npos) << f_.Violation();
    EXPECT_NE(f_.Violation().find("is capturing"), std::string::npos) << f_.Violation();
    EXPECT_EQ(CaptureInfo(s1_).status, GA_CU_STREAM_CAPTURE_STATUS_INVALIDATED) << "the whole capture is lost";
    ASSERT_EQ(f_.fake_cuda_capture_end(s1_), 0);
    EXPECT_EQ(cuStreamSynchronize(reinterpret_cast<ga_cu_stream_t>(s2_)), GA_CUDA_SUCCESS);
    EXPECT_EQ(f_.Stats().violations, 1u);
}

TEST_F(FakeGraph, AnEventRecordedDuringACaptureCannotBeQueriedOrWaitedFor)
{
    ga_cu_event_t e = nullptr;
    ASSERT_EQ(cuEventCreate(&e, GA_CU_EVENT_DISABLE_TIMING), GA_CUDA_SUCCESS);
    ASSERT_EQ(f_.fake_cuda_capture_begin(s1_), 0);
    ASSERT_EQ(cuEventRecord(e, reinterpret_cast<ga_cu_stream_t>(s1_)), GA_CUDA_SUCCESS);
    EXPECT_EQ(cuEventQuery(e), GA_CUDA_ERROR_CAPTURED_EVENT);
    EXPECT_EQ(cuEventSynchronize(e), GA_CUDA_ERROR_CAPTURED_EVENT);
    EXPECT_EQ(f_.Stats().violations, 2u);
    EXPECT_NE(f_.Violation().find("last recorded on a capturing stream"), std::string::npos) << f_.Violation();
    ASSERT_EQ(f_.fake_cuda_capture_end(s1_), 0);
    EXPECT_EQ(cuEventQuery(e), GA_CUDA_ERROR_CAPTURED_EVENT) << "until recorded again outside a capture";
    ASSERT_EQ(cuEventRecord(e, reinterpret_cast<ga_cu_stream_t>(s1_)), GA_CUDA_SUCCESS);
    EXPECT_EQ(cuEventQuery(e), GA_CUDA_SUCCESS);
    EXPECT_EQ(cuEventSynchronize(e), GA_CUDA_SUCCESS);
    EXPECT_EQ(f_.Stats().violations, 3u);
    EXPECT_EQ(cuEventDestroy_v2(e), GA_CUDA_SUCCESS);
}

TEST_F(FakeGraph, AnUnknownNodeOrAMissingOutputIsAViolation)
{
    int not_a_node = 0;
    size_t n = 0;
    EXPECT_EQ(cuGraphNodeGetDependencies(reinterpret_cast<ga_cu_graph_node_t>(&not_a_node), nullptr, &n),
              GA_CUDA_ERROR_INVALID_HANDLE);
    EXPECT_EQ(f_.Stats().violations, 1u);
    EXPECT_NE(f_.Violation().find("is not a node of a graph"), std::string::npos) << f_.Violation();
    ASSERT_EQ(f_.fake_cuda_capture_begin(s1_), 0);
    uintptr_t a = Launch(s1_);
    EXPECT_EQ(cuGraphNodeGetDependencies(reinterpret_cast<ga_cu_graph_node_t>(a), nullptr, nullptr),
              GA_CUDA_ERROR_INVALID_VALUE);
    EXPECT_EQ(
        cuStreamGetCaptureInfo_v2(reinterpret_cast<ga_cu_stream_t>(s1_), nullptr, nullptr, nullptr, nullptr, nullptr),
        GA_CUDA_ERROR_INVALID_VALUE);
    ga_cu_stream_capture_status_t st;
    EXPECT_EQ(cuStreamGetCaptureInfo_v2(reinterpret_cast<ga_cu_stream_t>(uintptr_t{77}), &st, nullptr, nullptr, nullptr,
                                        nullptr),
              GA_CUDA_ERROR_INVALID_HANDLE);
    EXPECT_EQ(f_.Stats().violations, 4u);
    // Left capturing on purpose: reset frees the graph (the leak checker sees it).
}

TEST_F(FakeGraph, BothCallsAreCountedAndAFaultRuleReturnsItsCodeAndChangesNothing)
{
    ASSERT_EQ(f_.fake_cuda_capture_begin(s1_), 0);
    uintptr_t a = Launch(s1_);
    uintptr_t b = Launch(s1_);
    ASSERT_EQ(f_.fake_cuda_fail("cuStreamGetCaptureInfo_v2", 1, 0, 999), 0);
    ASSERT_EQ(f_.fake_cuda_fail("cuGraphNodeGetDependencies", 1, 0, 2), 0);
    ga_cu_stream_capture_status_t st = GA_CU_STREAM_CAPTURE_STATUS_INVALIDATED;
    uint64_t id = 5;
    size_t n = 7;
    EXPECT_EQ(cuStreamGetCaptureInfo_v2(reinterpret_cast<ga_cu_stream_t>(s1_), &st, &id, nullptr, nullptr, &n),
              GA_CUDA_ERROR_UNKNOWN);
    EXPECT_EQ(st, GA_CU_STREAM_CAPTURE_STATUS_INVALIDATED);
    EXPECT_EQ(id, 5u);
    EXPECT_EQ(n, 7u);
    EXPECT_EQ(cuGraphNodeGetDependencies(reinterpret_cast<ga_cu_graph_node_t>(b), nullptr, &n),
              GA_CUDA_ERROR_OUT_OF_MEMORY);
    EXPECT_EQ(n, 7u);
    EXPECT_EQ(f_.Stats().faults, 2u);
    EXPECT_EQ(CaptureInfo(s1_).frontier, Nodes{b});
    EXPECT_EQ(Deps(b), Nodes{a});
    EXPECT_EQ(f_.fake_cuda_calls("cuStreamGetCaptureInfo_v2"), 2u);
    EXPECT_EQ(f_.fake_cuda_calls("cuGraphNodeGetDependencies"), 3u);
    EXPECT_EQ(f_.Stats().violations, 0u);
    EXPECT_EQ(f_.fake_cuda_capture_end(s1_), 0);
}

} // namespace
