// hip_vmm_test: expandable_segments:True on the "hip" backend through the
// public API, on the strict fake HIP runtime. cuda_vmm_test's page-exact
// scenarios, with HIP's virtual memory calls underneath (hipMemAddressReserve,
// hipMemCreate + hipMemMap + hipMemSetAccess per page, ...), are
// vmm_cases.cc's, instantiated here with the HIP names; below them what HIP
// has alone: hipMemAllocationProp in ROCm 6's layout or HIP 5's, as the
// runtime reports its version, and a runtime that refuses the VMM calls.
#include <gtest/gtest.h>

#include <cstring>

#include "tests/backend/cuda_fixture.h"
#include "tests/backend/vendor_cases.h"

extern "C" {
#include "tests/fake_hip/fake_hip_control.h"
}

namespace cuda_test {

INSTANTIATE_TEST_SUITE_P(Hip, Vmm, ::testing::Values(&kHipVendor), VendorName);
INSTANTIATE_TEST_SUITE_P(Hip, VmmSweep, ::testing::Values(&kHipVendor), VendorName);

namespace {

// Debian's ROCm 5.2 runtime reads hipMemAllocationProp in HIP 5's layout: the
// backend builds that one when the runtime reports a 5.x version, and the
// fake refuses the other as a contract violation (TearDown checks none).
TEST(HipVmmVersion, AHip5RuntimeGetsHip5sPropLayout)
{
    FakeCuda f("libfake_hip.so", "hip");
    ASSERT_TRUE(f.ok()) << f.error();
    auto set_version = f.Sym<decltype(&::fake_hip_set_version)>("fake_hip_set_version");
    ASSERT_TRUE(f.ok()) << f.error();
    set_version(50221153);
    galloc_allocator_t *a = nullptr;
    char err[GALLOC_ERROR_MAX] = "";
    ASSERT_EQ(galloc_allocator_create(nullptr, 1, CudaConf(f, "expandable_segments:True").c_str(), &a, err, sizeof err),
              GALLOC_OK)
        << err;
    void *p = nullptr;
    ASSERT_EQ(galloc_malloc(a, 5 * kMiB, 0, &p), GALLOC_OK) << LastError(a);
    std::memset(p, 0x5a, 5 * kMiB);
    EXPECT_EQ(f.Stats().device_used[1], 20 * kMiB) << "the prop named device 1";
    EXPECT_EQ(galloc_free(a, p), GALLOC_OK);
    galloc_allocator_destroy(a);
    fake_gpu_stats_t fs = f.Stats();
    EXPECT_EQ(fs.violations, 0u) << f.Violation();
    EXPECT_EQ(fs.leaks, 0u);
    EXPECT_EQ(f.fake_cuda_calls("hipMemCreate"), 1u);
}

// A runtime that exports the VMM calls but refuses them (hipErrorNotSupported,
// as a ROCm build or device without virtual memory answers) is the same clear
// error at create as a runtime that lacks them, not an OOM at the first malloc.
TEST(HipVmmVersion, ARuntimeThatRefusesVmmIsUnsupportedAtCreate)
{
    FakeCuda f("libfake_hip.so", "hip");
    ASSERT_TRUE(f.ok()) << f.error();
    ASSERT_EQ(f.fake_cuda_fail("hipMemGetAllocationGranularity", 0, 1, 801), 0); // hipErrorNotSupported
    galloc_allocator_t *a = nullptr;
    char err[GALLOC_ERROR_MAX] = "";
    EXPECT_EQ(galloc_allocator_create(nullptr, 0, CudaConf(f, "expandable_segments:True").c_str(), &a, err, sizeof err),
              GALLOC_E_UNSUPPORTED);
    EXPECT_STREQ(err, "expandable_segments:True needs virtual memory management: granularity: querying the page "
                      "granularity: hipMemGetAllocationGranularity failed: hipErrorNotSupported: operation not "
                      "supported");
    EXPECT_EQ(f.Stats().leaks, 0u);
    EXPECT_EQ(f.Stats().violations, 0u) << f.Violation();
}

} // namespace
} // namespace cuda_test
