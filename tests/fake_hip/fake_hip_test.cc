// fake_hip_test: what the fake HIP runtime adds to the shared core (whose
// contracts tests/fake_cuda/fake_cuda_test.cc covers through the CUDA layer):
// the per-thread current device and the runtime-held primary contexts, the
// hipMemAllocationProp layout chosen by the reported version, the HIP error
// names, and its controls under the fake_hip_ prefix.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>
#include <string>
#include <thread>

extern "C" {
#include "backend/hip_api.h"
#include "tests/fake_hip/fake_hip_control.h"
}
#include "tests/fake_cuda/fake_cuda_util.h"

namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;

class FakeHip : public ::testing::Test {
  protected:
    void SetUp() override
    {
        ASSERT_TRUE(f_.ok()) << f_.error();
#define BIND_(name) name = f_.Sym<ga_##name##_fn *>(#name)
        BIND_(hipInit);
        BIND_(hipRuntimeGetVersion);
        BIND_(hipGetDeviceCount);
        BIND_(hipGetDevice);
        BIND_(hipSetDevice);
        BIND_(hipMalloc);
        BIND_(hipFree);
        BIND_(hipGetErrorName);
        BIND_(hipGetErrorString);
        BIND_(hipMemGetAllocationGranularity);
        BIND_(hipMemCreate);
        BIND_(hipMemRelease);
        BIND_(hipHostMalloc);
        BIND_(hipHostFree);
        BIND_(hipMemcpyDtoH);
        BIND_(hipMemcpyHtoD);
        BIND_(hipHostRegister);
        BIND_(hipHostUnregister);
#undef BIND_
        set_version_ = f_.Sym<decltype(&::fake_hip_set_version)>("fake_hip_set_version");
        ASSERT_TRUE(f_.ok()) << f_.error();
    }
    uint64_t Violations()
    {
        return f_.Stats().violations;
    }

    FakeCuda f_{"libfake_hip.so", "hip"};
    decltype(&::fake_hip_set_version) set_version_ = nullptr;
#define DECL_(name) ga_##name##_fn *name = nullptr
    DECL_(hipInit);
    DECL_(hipRuntimeGetVersion);
    DECL_(hipGetDeviceCount);
    DECL_(hipGetDevice);
    DECL_(hipSetDevice);
    DECL_(hipMalloc);
    DECL_(hipFree);
    DECL_(hipGetErrorName);
    DECL_(hipGetErrorString);
    DECL_(hipMemGetAllocationGranularity);
    DECL_(hipMemCreate);
    DECL_(hipMemRelease);
    DECL_(hipHostMalloc);
    DECL_(hipHostFree);
    DECL_(hipMemcpyDtoH);
    DECL_(hipMemcpyHtoD);
    DECL_(hipHostRegister);
    DECL_(hipHostUnregister);
#undef DECL_
};

TEST_F(FakeHip, NothingBeforeHipInit)
{
    int d = -1;
    EXPECT_EQ(hipGetDevice(&d), GA_HIP_ERROR_NOT_INITIALIZED);
    void *p = nullptr;
    EXPECT_EQ(hipMalloc(&p, kMiB), GA_HIP_ERROR_NOT_INITIALIZED);
    EXPECT_EQ(Violations(), 2u);
}

TEST_F(FakeHip, TheCurrentDeviceIsPerThreadAndStartsAtZero)
{
    ASSERT_EQ(hipInit(0), GA_HIP_SUCCESS);
    int n = 0, d = -1;
    ASSERT_EQ(hipGetDeviceCount(&n), GA_HIP_SUCCESS);
    EXPECT_EQ(n, 2);
    ASSERT_EQ(hipGetDevice(&d), GA_HIP_SUCCESS);
    EXPECT_EQ(d, 0);
    ASSERT_EQ(hipSetDevice(1), GA_HIP_SUCCESS);
    void *p = nullptr;
    ASSERT_EQ(hipMalloc(&p, kMiB), GA_HIP_SUCCESS);
    EXPECT_EQ(f_.Stats().device_used[1], 2 * kMiB) << "on the thread's device, rounded to the granularity";
    std::thread([&] {
        int other = -1;
        EXPECT_EQ(hipGetDevice(&other), GA_HIP_SUCCESS);
        EXPECT_EQ(other, 0) << "another thread starts on device 0";
    }).join();
    ASSERT_EQ(hipGetDevice(&d), GA_HIP_SUCCESS);
    EXPECT_EQ(d, 1);
    EXPECT_EQ(hipSetDevice(2), GA_HIP_ERROR_INVALID_DEVICE);
    EXPECT_EQ(f_.Stats().leaks, 1u) << "the allocation is live";
    ASSERT_EQ(hipFree(p), GA_HIP_SUCCESS);
    fake_gpu_stats_t s = f_.Stats();
    EXPECT_EQ(s.ctx_refs, 0u) << "the runtime's own context references are not the caller's";
    EXPECT_EQ(s.leaks, 0u);
    EXPECT_EQ(s.violations, 1u) << f_.Violation();
}

TEST_F(FakeHip, PropLayoutFollowsTheReportedVersion)
{
    ASSERT_EQ(hipInit(0), GA_HIP_SUCCESS);
    int v = 0;
    ASSERT_EQ(hipRuntimeGetVersion(&v), GA_HIP_SUCCESS);
    EXPECT_EQ(v, FAKE_HIP_DEFAULT_VERSION);
    ga_hip_mem_allocation_prop_t v6 = {};
    v6.type = GA_HIP_MEM_ALLOCATION_TYPE_PINNED;
    v6.location = {GA_HIP_MEM_LOCATION_TYPE_DEVICE, 0};
    ga_hip_mem_allocation_prop_v5_t v5 = {};
    v5.type = GA_HIP_MEM_ALLOCATION_TYPE_PINNED;
    v5.location = {GA_HIP_MEM_LOCATION_TYPE_DEVICE, 0};
    const auto *v5p = reinterpret_cast<const ga_hip_mem_allocation_prop_t *>(&v5);
    size_t g = 0;
    EXPECT_EQ(hipMemGetAllocationGranularity(&g, &v6, GA_HIP_MEM_ALLOC_GRANULARITY_MINIMUM), GA_HIP_SUCCESS);
    EXPECT_EQ(g, 2 * kMiB);
    EXPECT_EQ(hipMemGetAllocationGranularity(&g, v5p, GA_HIP_MEM_ALLOC_GRANULARITY_MINIMUM),
              GA_HIP_ERROR_INVALID_VALUE);
    EXPECT_EQ(Violations(), 1u);
    set_version_(50221153); // Debian's ROCm 5.2.3
    ga_hip_mem_handle_t h = nullptr;
    EXPECT_EQ(hipMemCreate(&h, 2 * kMiB, &v6, 0), GA_HIP_ERROR_INVALID_VALUE);
    EXPECT_NE(f_.Violation().find("HIP 5.x's layout"), std::string::npos) << f_.Violation();
    ASSERT_EQ(hipMemCreate(&h, 2 * kMiB, v5p, 0), GA_HIP_SUCCESS);
    EXPECT_EQ(f_.Stats().live_handles, 1u);
    EXPECT_EQ(hipMemRelease(h), GA_HIP_SUCCESS);
    EXPECT_EQ(Violations(), 2u);
    f_.fake_cuda_reset();
    ASSERT_EQ(hipInit(0), GA_HIP_SUCCESS);
    ASSERT_EQ(hipRuntimeGetVersion(&v), GA_HIP_SUCCESS);
    EXPECT_EQ(v, FAKE_HIP_DEFAULT_VERSION) << "a reset restores the default version";
}

TEST_F(FakeHip, ErrorNamesAreTheRuntimes)
{
    EXPECT_STREQ(hipGetErrorName(GA_HIP_ERROR_OUT_OF_MEMORY), "hipErrorOutOfMemory");
    EXPECT_STREQ(hipGetErrorString(GA_HIP_ERROR_NOT_READY), "device not ready");
    EXPECT_STREQ(hipGetErrorName(static_cast<ga_hip_error_t>(12345)), "hipErrorUnknown");
    EXPECT_EQ(f_.fake_cuda_calls("*"), 0u) << "lookups of a string are not runtime calls";
}

TEST_F(FakeHip, AnInjectedFailureChangesNothing)
{
    ASSERT_EQ(hipInit(0), GA_HIP_SUCCESS);
    ASSERT_EQ(f_.fake_cuda_fail("hipMalloc", 2, 0, GA_HIP_ERROR_OUT_OF_MEMORY), 0);
    void *p = nullptr, *q = nullptr;
    ASSERT_EQ(hipMalloc(&p, kMiB), GA_HIP_SUCCESS);
    EXPECT_EQ(hipMalloc(&q, kMiB), GA_HIP_ERROR_OUT_OF_MEMORY);
    EXPECT_EQ(q, nullptr);
    fake_gpu_stats_t s = f_.Stats();
    EXPECT_EQ(s.faults, 1u);
    EXPECT_EQ(s.live_segments, 1u);
    EXPECT_EQ(f_.fake_cuda_calls("hipMalloc"), 2u);
    EXPECT_EQ(f_.Trace(), "hipInit,hipMalloc,hipMalloc,");
    ASSERT_EQ(hipFree(p), GA_HIP_SUCCESS);
    EXPECT_EQ(f_.Stats().leaks, 0u);
}

// The core's host memory and copies (tests/fake_cuda/fake_host_test.cc) under
// HIP's names: the runtime binds device 0 itself, no context call is needed.
TEST_F(FakeHip, PinnedHostMemoryAndCopies)
{
    ASSERT_EQ(hipInit(0), GA_HIP_SUCCESS);
    void *h = nullptr, *d = nullptr;
    ASSERT_EQ(hipHostMalloc(&h, 3000, GA_HIP_HOST_MALLOC_DEFAULT), GA_HIP_SUCCESS);
    ASSERT_EQ(hipMalloc(&d, 4096), GA_HIP_SUCCESS);
    std::memset(h, 0x6b, 3000);
    ASSERT_EQ(hipMemcpyHtoD(d, h, 3000), GA_HIP_SUCCESS);
    std::memset(h, 0, 3000);
    ASSERT_EQ(hipMemcpyDtoH(h, d, 3000), GA_HIP_SUCCESS);
    EXPECT_EQ(static_cast<unsigned char *>(h)[2999], 0x6b);
    EXPECT_EQ(hipHostMalloc(&h, 10, 0x8), GA_HIP_ERROR_INVALID_VALUE) << "an unknown flag";
    fake_gpu_stats_t s = f_.Stats();
    EXPECT_EQ(s.live_host_bytes, 3000u);
    EXPECT_EQ(s.copied_h2d_bytes + s.copied_d2h_bytes, 6000u);
    EXPECT_EQ(s.leaks, 2u) << "the block and the allocation";
    ASSERT_EQ(f_.fake_cuda_fail("hipMemcpyDtoH", 1, 0, GA_HIP_ERROR_UNKNOWN), 0);
    EXPECT_EQ(hipMemcpyDtoH(h, d, 1), GA_HIP_ERROR_UNKNOWN);
    EXPECT_EQ(hipHostFree(h), GA_HIP_SUCCESS);
    EXPECT_EQ(hipFree(d), GA_HIP_SUCCESS);
    EXPECT_EQ(Violations(), 1u);
    EXPECT_EQ(f_.Stats().leaks, 0u);
}

// The core's registered ranges (tests/fake_cuda/fake_host_test.cc) through
// hipHostRegister / hipHostUnregister, with HIP's result codes.
TEST_F(FakeHip, RegisteredHostMemorySpeaksHip)
{
    ASSERT_EQ(hipInit(0), GA_HIP_SUCCESS);
    std::vector<char> mem(32768);
    ASSERT_EQ(hipHostRegister(mem.data(), 8192, GA_HIP_HOST_REGISTER_DEFAULT), GA_HIP_SUCCESS);
    EXPECT_EQ(hipHostRegister(mem.data() + 4096, 8192, 0), GA_HIP_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
    EXPECT_EQ(hipHostUnregister(mem.data() + 8192), GA_HIP_ERROR_HOST_MEMORY_NOT_REGISTERED);
    EXPECT_EQ(hipHostRegister(mem.data() + 8192, 8192, 0x10), GA_HIP_ERROR_INVALID_VALUE) << "an unknown flag";
    fake_gpu_stats_t s = f_.Stats();
    EXPECT_EQ(s.live_host_registered, 1u);
    EXPECT_EQ(s.live_registered_bytes, 8192u);
    ASSERT_EQ(f_.fake_cuda_fail("hipHostRegister", 1, 0, GA_HIP_ERROR_OUT_OF_MEMORY), 0);
    EXPECT_EQ(hipHostRegister(mem.data() + 8192, 8192, 0), GA_HIP_ERROR_OUT_OF_MEMORY);
    EXPECT_EQ(hipHostUnregister(mem.data()), GA_HIP_SUCCESS);
    EXPECT_EQ(Violations(), 3u);
    EXPECT_EQ(f_.Stats().leaks, 0u);
}

} // namespace

namespace {

// The capture model is the core's (tests/fake_cuda/fake_graph_test.cc): here
// its HIP symbols, HIP's result codes for what a capture refuses, and the
// controls under the fake_hip_ prefix.
TEST_F(FakeHip, TheCaptureCallsAndRefusalsSpeakHip)
{
    auto info = f_.Sym<ga_hipStreamGetCaptureInfo_v2_fn *>("hipStreamGetCaptureInfo_v2");
    auto node_deps = f_.Sym<ga_hipGraphNodeGetDependencies_fn *>("hipGraphNodeGetDependencies");
    auto sync = f_.Sym<ga_hipStreamSynchronize_fn *>("hipStreamSynchronize");
    auto ev_create = f_.Sym<ga_hipEventCreateWithFlags_fn *>("hipEventCreateWithFlags");
    auto ev_record = f_.Sym<ga_hipEventRecord_fn *>("hipEventRecord");
    auto ev_query = f_.Sym<ga_hipEventQuery_fn *>("hipEventQuery");
    auto ev_destroy = f_.Sym<ga_hipEventDestroy_fn *>("hipEventDestroy");
    ASSERT_TRUE(f_.ok()) << f_.error();
    ASSERT_EQ(hipInit(0), GA_HIP_SUCCESS);
    uintptr_t s = 0, a = 0, b = 0;
    ASSERT_EQ(f_.fake_cuda_stream_create(0, &s), 0);
    ASSERT_EQ(f_.fake_cuda_capture_begin(s), 0);
    ASSERT_EQ(f_.fake_cuda_capture_launch(s, &a), 0);
    ASSERT_EQ(f_.fake_cuda_capture_launch(s, &b), 0);
    auto hs = reinterpret_cast<ga_hip_stream_t>(s);
    ga_hip_stream_capture_status_t st = GA_HIP_STREAM_CAPTURE_STATUS_NONE;
    unsigned long long id = 0;
    const ga_hip_graph_node_t *deps = nullptr;
    size_t n = 0;
    ASSERT_EQ(info(hs, &st, &id, nullptr, &deps, &n), GA_HIP_SUCCESS);
    EXPECT_EQ(st, GA_HIP_STREAM_CAPTURE_STATUS_ACTIVE);
    EXPECT_NE(id, 0u);
    ASSERT_EQ(n, 1u);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(deps[0]), b);
    ga_hip_graph_node_t d = nullptr;
    n = 1;
    ASSERT_EQ(node_deps(reinterpret_cast<ga_hip_graph_node_t>(b), &d, &n), GA_HIP_SUCCESS);
    EXPECT_EQ(n, 1u);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(d), a);
    ga_hip_event_t e = nullptr;
    ASSERT_EQ(ev_create(&e, GA_HIP_EVENT_DISABLE_TIMING), GA_HIP_SUCCESS);
    ASSERT_EQ(ev_record(e, hs), GA_HIP_SUCCESS);
    EXPECT_EQ(ev_query(e), GA_HIP_ERROR_CAPTURED_EVENT);
    EXPECT_EQ(sync(hs), GA_HIP_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    EXPECT_EQ(Violations(), 2u);
    ASSERT_EQ(info(hs, &st, &id, nullptr, &deps, &n), GA_HIP_SUCCESS);
    EXPECT_EQ(st, GA_HIP_STREAM_CAPTURE_STATUS_INVALIDATED);
    EXPECT_EQ(f_.fake_cuda_capture_end(s), 0);
    EXPECT_EQ(ev_destroy(e), GA_HIP_SUCCESS);
    EXPECT_EQ(f_.fake_cuda_calls("hipStreamGetCaptureInfo_v2"), 2u);
    EXPECT_EQ(f_.Stats().leaks, 0u);
}

} // namespace
