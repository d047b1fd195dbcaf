// graph_cases: the GPU backends' stream capture graph members (capture_info,
// node_deps: what the pool reads for PyTorch's
// graph_capture_record_stream_reuse) on the fake drivers' capture model,
// below the pool: a stream not capturing, the frontier as launches and joins
// move it, a frontier or dependency list larger than the caller's room, an
// invalidated capture, each driver call failing (status, exact message, and
// the next call working), the caller's mistakes, and a library without the
// GRAPH symbol group. Written once over a Vendor (vendor_cases.h) and
// instantiated by cuda_graph_test.cc and hip_graph_test.cc.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "tests/backend/backend_opened.h"
#include "tests/backend/vendor_cases.h"

extern "C" {
#include "backend/backend.h"
}

namespace cuda_test {

namespace {

#define OPEN(f, o)                                                                                                     \
    ASSERT_TRUE((f).ok()) << (f).error();                                                                              \
    Opened o(f, v().name);                                                                                             \
    ASSERT_EQ(o.status(), GALLOC_OK) << o.open_error()

constexpr uintptr_t kUntouched = 0x5a5a; // what an entry the backend must not write holds

std::string Hex(uintptr_t x)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%#lx", (unsigned long)x);
    return buf;
}

// A test-owned stream of device 0 (the allocator's device).
uintptr_t NewStream(FakeCuda &f)
{
    uintptr_t s = 0;
    EXPECT_EQ(f.fake_cuda_stream_create(0, &s), 0);
    return s;
}

uintptr_t Launch(FakeCuda &f, uintptr_t s)
{
    uintptr_t node = 0;
    EXPECT_EQ(f.fake_cuda_capture_launch(s, &node), 0);
    return node;
}

} // namespace

TEST_P(Graph, AStreamNotCapturingHasCaptureIdZeroAndNoNodes)
{
    FakeCuda f(v().Fake(), v().name);
    OPEN(f, o);
    uintptr_t s = NewStream(f);
    for (uintptr_t stream : {uintptr_t{0}, s}) {
        uint64_t id = 7;
        uintptr_t nodes[2] = {kUntouched, kUntouched};
        size_t n = 7;
        ASSERT_EQ(ga_backend_capture_info(o.b(), stream, &id, nodes, 2, &n), GALLOC_OK) << o.Error();
        EXPECT_EQ(id, 0u);
        EXPECT_EQ(n, 0u);
        EXPECT_EQ(nodes[0], kUntouched);
    }
    // No room asked for: nodes may be NULL.
    uint64_t id = 7;
    size_t n = 7;
    ASSERT_EQ(ga_backend_capture_info(o.b(), s, &id, nullptr, 0, &n), GALLOC_OK) << o.Error();
    EXPECT_EQ(id, 0u);
    EXPECT_EQ(n, 0u);
    EXPECT_EQ(f.fake_cuda_calls(v().capture_info), 3u);
    EXPECT_EQ(f.Stats().violations, 0u) << f.Violation();
}

TEST_P(Graph, ALaunchedNodeIsTheFrontierAndDependsOnThePreviousOne)
{
    FakeCuda f(v().Fake(), v().name);
    OPEN(f, o);
    uintptr_t s = NewStream(f);
    ASSERT_EQ(f.fake_cuda_capture_begin(s), 0);
    uint64_t id = 0;
    size_t n = 7;
    ASSERT_EQ(ga_backend_capture_info(o.b(), s, &id, nullptr, 0, &n), GALLOC_OK) << o.Error();
    EXPECT_NE(id, 0u) << "a capture has a nonzero id";
    EXPECT_EQ(n, 0u) << "an empty frontier";
    uintptr_t a = Launch(f, s);
    uintptr_t nodes[4] = {kUntouched, kUntouched, kUntouched, kUntouched};
    uint64_t id2 = 0;
    ASSERT_EQ(ga_backend_capture_info(o.b(), s, &id2, nodes, 4, &n), GALLOC_OK) << o.Error();
    EXPECT_EQ(id2, id);
    ASSERT_EQ(n, 1u);
    EXPECT_EQ(nodes[0], a);
    EXPECT_EQ(nodes[1], kUntouched);
    uintptr_t b = Launch(f, s);
    uintptr_t deps[4] = {kUntouched, kUntouched, kUntouched, kUntouched};
    ASSERT_EQ(ga_backend_node_deps(o.b(), b, deps, 4, &n), GALLOC_OK) << o.Error();
    ASSERT_EQ(n, 1u);
    EXPECT_EQ(deps[0], a);
    EXPECT_EQ(deps[1], kUntouched) << "only min(cap, n) entries are written";
    ASSERT_EQ(ga_backend_node_deps(o.b(), a, deps, 4, &n), GALLOC_OK) << o.Error();
    EXPECT_EQ(n, 0u) << "the first node of a capture depends on nothing";
    // The graph outlives its capture: its nodes still answer.
    ASSERT_EQ(f.fake_cuda_capture_end(s), 0);
    ASSERT_EQ(ga_backend_capture_info(o.b(), s, &id, nodes, 4, &n), GALLOC_OK) << o.Error();
    EXPECT_EQ(id, 0u);
    EXPECT_EQ(n, 0u);
    ASSERT_EQ(ga_backend_node_deps(o.b(), b, deps, 4, &n), GALLOC_OK) << o.Error();
    EXPECT_EQ(n, 1u);
    EXPECT_EQ(f.Stats().violations, 0u) << f.Violation();
}

TEST_P(Graph, AJoinedFrontierLargerThanTheRoomGivesItsSizeAndFillsTheRoom)
{
    FakeCuda f(v().Fake(), v().name);
    OPEN(f, o);
    uintptr_t s1 = NewStream(f), s2 = NewStream(f);
    ASSERT_EQ(f.fake_cuda_capture_begin(s1), 0);
    uintptr_t a = Launch(f, s1);
    ASSERT_EQ(f.fake_cuda_capture_join(s1, s2), 0); // s2 forks off s1 after a
    uintptr_t b = Launch(f, s2);
    ASSERT_EQ(f.fake_cuda_capture_join(s2, s1), 0); // and joins back: s1 waits for a and b
    uint64_t id1 = 0, id2 = 0;
    uintptr_t nodes[2] = {kUntouched, kUntouched};
    size_t n = 0;
    ASSERT_EQ(ga_backend_capture_info(o.b(), s1, &id1, nodes, 1, &n), GALLOC_OK) << o.Error();
    EXPECT_EQ(n, 2u) << "the frontier's size, beyond the room";
    EXPECT_EQ(nodes[0], a);
    EXPECT_EQ(nodes[1], kUntouched);
    ASSERT_EQ(ga_backend_capture_info(o.b(), s1, &id1, nodes, 2, &n), GALLOC_OK) << o.Error();
    EXPECT_EQ(n, 2u);
    EXPECT_EQ(nodes[0], a);
    EXPECT_EQ(nodes[1], b);
    ASSERT_EQ(ga_backend_capture_info(o.b(), s2, &id2, nodes, 2, &n), GALLOC_OK) << o.Error();
    EXPECT_EQ(id2, id1) << "a joined stream takes part in the same capture";
    EXPECT_EQ(n, 1u);
    EXPECT_EQ(nodes[0], b);
    // A node launched after the join depends on both; room for one still counts both.
    uintptr_t c = Launch(f, s1);
    uintptr_t deps[2] = {kUntouched, kUntouched};
    uint64_t before = f.fake_cuda_calls(v().node_deps);
    ASSERT_EQ(ga_backend_node_deps(o.b(), c, deps, 1, &n), GALLOC_OK) << o.Error();
    EXPECT_EQ(n, 2u);
    EXPECT_EQ(deps[0], a);
    EXPECT_EQ(deps[1], kUntouched);
    EXPECT_EQ(f.fake_cuda_calls(v().node_deps), before + 2) << "one call counts, one fills";
    ASSERT_EQ(ga_backend_node_deps(o.b(), c, nullptr, 0, &n), GALLOC_OK) << o.Error();
    EXPECT_EQ(n, 2u);
    EXPECT_EQ(f.fake_cuda_calls(v().node_deps), before + 3) << "no room: the count only";
    ASSERT_EQ(f.fake_cuda_capture_end(s1), 0);
    EXPECT_EQ(f.Stats().violations, 0u) << f.Violation();
}

TEST_P(Graph, AnInvalidatedCaptureIsADeviceError)
{
    FakeCuda f(v().Fake(), v().name);
    OPEN(f, o);
    uintptr_t s = NewStream(f);
    ASSERT_EQ(f.fake_cuda_capture_begin(s), 0);
    Launch(f, s);
    ASSERT_EQ(f.fake_cuda_capture_invalidate(s), 0);
    uint64_t id = 7;
    uintptr_t nodes[1] = {kUntouched};
    size_t n = 7;
    EXPECT_EQ(ga_backend_capture_info(o.b(), s, &id, nodes, 1, &n), GALLOC_E_DEVICE);
    EXPECT_EQ(o.Error(), "capture_info(stream " + Hex(s) + "): the stream's capture was invalidated (" +
                             v().capture_info +
                             ": status INVALIDATED): an operation during the capture was not permitted");
    EXPECT_EQ(id, 7u) << "a failed call changes nothing";
    EXPECT_EQ(n, 7u);
    EXPECT_EQ(nodes[0], kUntouched);
    ASSERT_EQ(f.fake_cuda_capture_end(s), 0);
    ASSERT_EQ(ga_backend_capture_info(o.b(), s, &id, nodes, 1, &n), GALLOC_OK) << o.Error();
    EXPECT_EQ(id, 0u);
    EXPECT_EQ(f.Stats().violations, 0u) << f.Violation();
}

TEST_P(Graph, EachFailedDriverCallIsADeviceErrorNamingItAndTheNextCallWorks)
{
    FakeCuda f(v().Fake(), v().name);
    OPEN(f, o);
    uintptr_t s = NewStream(f);
    ASSERT_EQ(f.fake_cuda_capture_begin(s), 0);
    uintptr_t a = Launch(f, s);
    uintptr_t b = Launch(f, s);
    uint64_t id = 7;
    uintptr_t nodes[1] = {kUntouched};
    size_t n = 7;
    ASSERT_EQ(f.fake_cuda_fail(v().capture_info, 1, 0, kUnknown), 0);
    EXPECT_EQ(ga_backend_capture_info(o.b(), s, &id, nodes, 1, &n), GALLOC_E_DEVICE);
    EXPECT_EQ(o.Error(), "capture_info(stream " + Hex(s) + "): " + DriverWords(v().capture_info, kUnknown, v()));
    EXPECT_EQ(id, 7u);
    EXPECT_EQ(n, 7u);
    EXPECT_EQ(nodes[0], kUntouched);
    ASSERT_EQ(ga_backend_capture_info(o.b(), s, &id, nodes, 1, &n), GALLOC_OK) << o.Error();
    EXPECT_EQ(n, 1u);
    EXPECT_EQ(nodes[0], b);
    // node_deps makes two calls, the count then the fill: each one failing.
    for (uint64_t nth : {1, 2}) {
        SCOPED_TRACE(nth);
        f.fake_cuda_fail_clear();
        ASSERT_EQ(f.fake_cuda_fail(v().node_deps, nth, 0, kUnknown), 0);
        n = 7;
        EXPECT_EQ(ga_backend_node_deps(o.b(), b, nodes, 1, &n), GALLOC_E_DEVICE);
        EXPECT_EQ(o.Error(), "node_deps(node " + Hex(b) + "): " + DriverWords(v().node_deps, kUnknown, v()));
        EXPECT_EQ(n, 7u);
        nodes[0] = kUntouched;
        ASSERT_EQ(ga_backend_node_deps(o.b(), b, nodes, 1, &n), GALLOC_OK) << o.Error();
        EXPECT_EQ(n, 1u);
        EXPECT_EQ(nodes[0], a);
    }
    EXPECT_EQ(f.Stats().faults, 3u);
    ASSERT_EQ(f.fake_cuda_capture_end(s), 0);
    EXPECT_EQ(f.Stats().violations, 0u) << f.Violation();
}

TEST_P(Graph, TheCallersMistakesAreInvalidWithoutADriverCall)
{
    FakeCuda f(v().Fake(), v().name);
    OPEN(f, o);
    uintptr_t s = NewStream(f);
    ASSERT_EQ(f.fake_cuda_capture_begin(s), 0);
    uintptr_t a = Launch(f, s);
    uint64_t id = 0;
    uintptr_t nodes[1];
    size_t n = 0;
    EXPECT_EQ(ga_backend_capture_info(o.b(), s, nullptr, nodes, 1, &n), GALLOC_E_INVAL);
    EXPECT_EQ(o.Error(), "capture_info(stream " + Hex(s) + "): capture_id or n is NULL");
    EXPECT_EQ(ga_backend_capture_info(o.b(), s, &id, nodes, 1, nullptr), GALLOC_E_INVAL);
    EXPECT_EQ(ga_backend_capture_info(o.b(), s, &id, nullptr, 1, &n), GALLOC_E_INVAL);
    EXPECT_EQ(o.Error(), "capture_info(stream " + Hex(s) + "): nodes is NULL with room for entries");
    EXPECT_EQ(ga_backend_node_deps(o.b(), 0, nodes, 1, &n), GALLOC_E_INVAL);
    EXPECT_EQ(o.Error(), "node_deps(node 0): node is 0");
    EXPECT_EQ(ga_backend_node_deps(o.b(), a, nodes, 1, nullptr), GALLOC_E_INVAL);
    EXPECT_EQ(o.Error(), "node_deps(node " + Hex(a) + "): n is NULL");
    EXPECT_EQ(ga_backend_node_deps(o.b(), a, nullptr, 1, &n), GALLOC_E_INVAL);
    EXPECT_EQ(o.Error(), "node_deps(node " + Hex(a) + "): deps is NULL with room for entries");
    EXPECT_EQ(f.fake_cuda_calls(v().capture_info), 0u);
    EXPECT_EQ(f.fake_cuda_calls(v().node_deps), 0u);
    ASSERT_EQ(f.fake_cuda_capture_end(s), 0);
}

TEST_P(Graph, ALibraryWithoutTheGraphCallsIsUnsupportedNamingTheSymbol)
{
    FakeCuda f(v().Fake("_nograph"), v().name);
    OPEN(f, o);
    uint64_t id = 7;
    size_t n = 7;
    const std::string lacks = std::string(": stream capture graphs are unavailable: the ") + v().name +
                              " driver library lacks " + v().capture_info;
    EXPECT_EQ(ga_backend_capture_info(o.b(), 0, &id, nullptr, 0, &n), GALLOC_E_UNSUPPORTED);
    EXPECT_EQ(o.Error(), "capture_info" + lacks);
    EXPECT_EQ(ga_backend_node_deps(o.b(), 1, nullptr, 0, &n), GALLOC_E_UNSUPPORTED);
    EXPECT_EQ(o.Error(), "node_deps" + lacks);
    EXPECT_EQ(id, 7u);
    EXPECT_EQ(n, 7u);
    EXPECT_EQ(f.fake_cuda_calls(v().node_deps), 0u);
}

} // namespace cuda_test
