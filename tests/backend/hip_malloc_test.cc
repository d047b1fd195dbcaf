// hip_malloc_test: the native caching pool on the "hip" backend, through the
// public API, on the strict fake HIP runtime (tests/fake_hip, the fake CUDA
// driver's core under the HIP runtime API). The generic GPU layer is the
// cuda backend's, only the vendor table differs, so the figures of
// cuda_malloc_test, loading and its failures, the conformance suite and the
// fault sweep are malloc_cases.cc's, instantiated here with the HIP names;
// below them what only HIP has: the runtime calls at open, and the
// per-thread current device HIP has instead of contexts.
#include <gtest/gtest.h>

#include <string>
#include <thread>

#include "tests/backend/cuda_fixture.h"
#include "tests/backend/vendor_cases.h"

extern "C" {
#include "backend/hip_api.h"
}

namespace cuda_test {

INSTANTIATE_TEST_SUITE_P(Hip, Malloc, ::testing::Values(&kHipVendor), VendorName);
INSTANTIATE_TEST_SUITE_P(Hip, MallocLoad, ::testing::Values(&kHipVendor), VendorName);
INSTANTIATE_TEST_SUITE_P(Hip, MallocSweep, ::testing::Values(&kHipVendor), VendorName);

namespace {

class HipMalloc : public HipTest {};

TEST_F(HipMalloc, OpenMakesTheRuntimeCallsAndNoContextCall)
{
    Make();
    // Open, then the allocator reads the device's capacity: no primary-context
    // retain (the runtime holds it) and no hipSetDevice (device 0 is current).
    EXPECT_EQ(f_.Trace(), "hipInit,hipRuntimeGetVersion,hipGetDeviceCount,hipDeviceGet,hipGetDevice,hipMemGetInfo,");
    f_.fake_cuda_trace_clear();
    Free(Alloc(1));
    EXPECT_EQ(f_.Trace(), "hipGetDevice,hipMalloc,") << "device 0 already current: no hipSetDevice";
}

// HIP's equivalent of the CUDA context: the calling thread's current device.
// galloc makes its device current for each call and gives the thread its own
// back, on any thread.
TEST_F(HipMalloc, TheCallersDeviceIsRestoredOnEveryThread)
{
    Make("", 1);
    auto set_device = f_.Sym<ga_hipSetDevice_fn *>("hipSetDevice");
    auto get_device = f_.Sym<ga_hipGetDevice_fn *>("hipGetDevice");
    ASSERT_TRUE(f_.ok()) << f_.error();
    int d = -1;
    void *p = Alloc(1);
    ASSERT_EQ(get_device(&d), GA_HIP_SUCCESS);
    EXPECT_EQ(d, 0) << "the thread's device 0 was given back";
    EXPECT_EQ(f_.Stats().device_used[1], 2 * kMiB);
    ASSERT_EQ(set_device(0), GA_HIP_SUCCESS);
    std::thread t([&] { // a thread that never chose a device: device 0, restored after the call
        void *q = nullptr;
        EXPECT_EQ(galloc_malloc(a_, 100, 0, &q), GALLOC_OK) << LastError(a_);
        EXPECT_EQ(galloc_free(a_, q), GALLOC_OK);
        int td = -1;
        EXPECT_EQ(get_device(&td), GA_HIP_SUCCESS);
        EXPECT_EQ(td, 0);
    });
    t.join();
    Free(p);
    EXPECT_EQ(f_.Stats().device_used[0], 0u) << "nothing was allocated on the caller's device";
    EXPECT_EQ(f_.Stats().violations, 0u) << f_.Violation();
}

TEST_F(HipMalloc, ASetDeviceFailureIsADeviceErrorNamingHipSetDevice)
{
    Make("", 1);
    ASSERT_EQ(f_.fake_cuda_fail("hipSetDevice", 1, 0, GA_HIP_ERROR_INVALID_DEVICE), 0);
    void *p = reinterpret_cast<void *>(1);
    EXPECT_EQ(galloc_malloc(a_, 1, 0, &p), GALLOC_E_DEVICE);
    EXPECT_NE(LastError(a_).find("hipSetDevice failed: hipErrorInvalidDevice: invalid device ordinal"),
              std::string::npos)
        << LastError(a_);
    EXPECT_EQ(f_.Stats().live_segments, 0u);
    Free(Alloc(1));
}

} // namespace
} // namespace cuda_test
