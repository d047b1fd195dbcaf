// hip_vmm_test: expandable_segments:True on the "hip" backend through the
// public API, on the strict fake HIP runtime: cuda_vmm_test's page-exact
// figures (pages of 20 MiB for the large pool, 2 MiB for the small one; one
// num_device_alloc per mapping of a block, one num_device_free per unmapping)
// and underneath them HIP's virtual memory calls: one hipMemAddressReserve per
// segment, per page one hipMemCreate + hipMemMap + hipMemSetAccess, on
// shrinking hipMemUnmap + hipMemRelease per page, hipMemAddressFree at the
// end; with hipMemAllocationProp in ROCm 6's layout or HIP 5's, as the runtime
// reports its version.
#include <gtest/gtest.h>

#include <cstring>

#include "tests/backend/gpu_sweeps.h"

extern "C" {
#include "tests/fake_hip/fake_hip_control.h"
}

namespace cuda_test {
namespace {

class HipVmm : public HipTest {
  protected:
    void SetUp() override
    {
        HipTest::SetUp();
        Make("expandable_segments:True");
    }
};

TEST_F(HipVmm, GrowsByPagesAndShrinksPageExactly)
{
    char *a = static_cast<char *>(Alloc(5 * kMiB)); // maps one 20 MiB page
    galloc_stats_t st = Stats();
    EXPECT_EQ(st.reserved_bytes[LARGE].current, (int64_t)(20 * kMiB));
    EXPECT_EQ(st.num_device_alloc, 1);
    EXPECT_EQ(st.segment[ALL].current, 0);
    fake_gpu_stats_t fs = f_.Stats();
    EXPECT_EQ(fs.live_reservations, 1u);
    EXPECT_EQ(fs.live_handles, 1u);
    EXPECT_EQ(fs.live_handle_bytes, 20 * kMiB);
    EXPECT_EQ(fs.device_used[0], 20 * kMiB) << "reserving address space costs no memory";
    char *b = static_cast<char *>(Alloc(30 * kMiB)); // 15 MiB free + one more page, then split
    EXPECT_EQ(b, a + 5 * kMiB);
    st = Stats();
    EXPECT_EQ(st.reserved_bytes[LARGE].current, (int64_t)(40 * kMiB));
    EXPECT_EQ(st.num_device_alloc, 2);
    EXPECT_EQ(st.allocated_bytes[LARGE].current, (int64_t)(35 * kMiB));
    EXPECT_EQ(f_.fake_cuda_calls("hipMemAddressReserve"), 1u);
    EXPECT_EQ(f_.fake_cuda_calls("hipMemCreate"), 2u);
    EXPECT_EQ(f_.fake_cuda_calls("hipMemMap"), 2u);
    EXPECT_EQ(f_.fake_cuda_calls("hipMemSetAccess"), 2u);
    std::memset(b, 0x77, 30 * kMiB); // the whole range is mapped read-write, across the page boundary
    Free(b);                         // free 5..40 MiB: page 0 still holds a, page 1 is entirely free
    ASSERT_EQ(galloc_empty_cache(a_), GALLOC_OK);
    st = Stats();
    EXPECT_EQ(st.reserved_bytes[ALL].current, (int64_t)(20 * kMiB)) << "only the page wholly free went";
    EXPECT_EQ(st.num_device_free, 1);
    fs = f_.Stats();
    EXPECT_EQ(fs.live_mapped_bytes, 20 * kMiB);
    EXPECT_EQ(fs.device_used[0], 20 * kMiB);
    EXPECT_EQ(f_.fake_cuda_calls("hipMemUnmap"), 1u);
    EXPECT_EQ(f_.fake_cuda_calls("hipMemRelease"), 1u);
    Free(a);
    ASSERT_EQ(galloc_empty_cache(a_), GALLOC_OK);
    EXPECT_EQ(Stats().reserved_bytes[ALL].current, 0);
    fs = f_.Stats();
    EXPECT_EQ(fs.live_handles + fs.live_mappings + fs.live_reservations, 0u);
    EXPECT_EQ(f_.fake_cuda_calls("hipMemAddressFree"), 1u) << "the VA range went back too";
    EXPECT_EQ(fs.device_used[0], 0u);
}

TEST_F(HipVmm, SmallPoolUsesTwoMiBPages)
{
    char *a = static_cast<char *>(Alloc(1));
    char *b = static_cast<char *>(Alloc(4096));
    EXPECT_EQ(b, a + 512);
    galloc_stats_t st = Stats();
    EXPECT_EQ(st.reserved_bytes[SMALL].current, (int64_t)(2 * kMiB));
    EXPECT_EQ(st.reserved_bytes[LARGE].current, 0);
    EXPECT_EQ(f_.Stats().live_handle_bytes, 2 * kMiB);
    Free(a);
    Free(b);
}

TEST_F(HipVmm, AMapFailureIsAnOomThatMapsNothing)
{
    ASSERT_EQ(f_.fake_cuda_fail("hipMemCreate", 0, 1, kOutOfMemory), 0);
    void *p = reinterpret_cast<void *>(1);
    EXPECT_EQ(galloc_malloc(a_, 5 * kMiB, 0, &p), GALLOC_E_OOM);
    EXPECT_EQ(p, nullptr);
    EXPECT_EQ(Stats().reserved_bytes[ALL].current, 0);
    fake_gpu_stats_t fs = f_.Stats();
    EXPECT_EQ(fs.live_handles + fs.live_mappings, 0u);
    f_.fake_cuda_fail_clear();
    Free(Alloc(5 * kMiB));
}

TEST_F(HipVmm, ARefusedUndoIsReleasedBeforeTheNextMap)
{
    // hipMemSetAccess fails and so does the hipMemUnmap undoing the map.
    ASSERT_EQ(f_.fake_cuda_fail("hipMemSetAccess", 1, 0, kUnknown), 0);
    ASSERT_EQ(f_.fake_cuda_fail("hipMemUnmap", 1, 0, kUnknown), 0);
    char *a = static_cast<char *>(Alloc(5 * kMiB));
    EXPECT_EQ(Stats().num_alloc_retries, 1);
    std::memset(a, 1, 5 * kMiB);
    fake_gpu_stats_t fs = f_.Stats();
    EXPECT_EQ(fs.live_mappings, 1u);
    EXPECT_EQ(fs.live_handles, 1u);
    EXPECT_EQ(fs.violations, 0u) << f_.Violation();
    Free(a);
}

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
    ASSERT_EQ(galloc_allocator_create(nullptr, 1, CudaConf(f, "expandable_segments:True").c_str(), &a, err,
                                      sizeof err),
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
    EXPECT_EQ(galloc_allocator_create(nullptr, 0, CudaConf(f, "expandable_segments:True").c_str(), &a, err,
                                      sizeof err),
              GALLOC_E_UNSUPPORTED);
    EXPECT_STREQ(err, "expandable_segments:True needs virtual memory management: granularity: querying the page "
                      "granularity: hipMemGetAllocationGranularity failed: hipErrorNotSupported: operation not "
                      "supported");
    EXPECT_EQ(f.Stats().leaks, 0u);
    EXPECT_EQ(f.Stats().violations, 0u) << f.Violation();
}

// ---- The fault sweep: cuda_vmm_test's workload on the HIP runtime. ----

// The fault sweeps: workloads and recounts in gpu_sweeps.h, shared by vendors.
TEST(HipVmmSweep, EveryRuntimeCallFailingOnce)
{
    FakeCuda f("libfake_hip.so", "hip");
    ASSERT_TRUE(f.ok()) << f.error();
    RecordProperty("calls_failed", (int)SweepOnce(f, Layer::kExpandable, 40u));
}

TEST(HipVmmSweep, EveryRuntimeCallFailingFromTheNthOn)
{
    FakeCuda f("libfake_hip.so", "hip");
    ASSERT_TRUE(f.ok()) << f.error();
    SweepFrom(f, Layer::kExpandable, 20u);
}

} // namespace
} // namespace cuda_test
