// cuda_malloc_test: the native caching pool on the "cuda" backend, through the
// public API, on the strict fake driver (tests/fake_cuda). The scenarios the
// hip backend runs the same way (the sim suites' exact figures, the driver
// calls behind them, loading and its failures, devices, the conformance suite
// and the fault sweep) are malloc_cases.cc's, instantiated here with the CUDA
// names; below them the tests only CUDA has: settings, the memory fraction,
// real device memory, the driver context, the absent driver.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "tests/backend/cuda_fixture.h"
#include "tests/backend/vendor_cases.h"

extern "C" {
#include "backend/cuda_api.h"
}

namespace cuda_test {

INSTANTIATE_TEST_SUITE_P(Cuda, Malloc, ::testing::Values(&kCudaVendor), VendorName);
INSTANTIATE_TEST_SUITE_P(Cuda, MallocLoad, ::testing::Values(&kCudaVendor), VendorName);
INSTANTIATE_TEST_SUITE_P(Cuda, MallocSweep, ::testing::Values(&kCudaVendor), VendorName);

namespace {

class CudaMalloc : public CudaTest {};

TEST_F(CudaMalloc, SettingsGivenAsStrings)
{
    Make("roundup_power2_divisions:4,max_split_size_mb:2048");
    void *p = Alloc(1200 * kMiB);
    galloc_stats_t st = Stats();
    EXPECT_EQ(st.allocated_bytes[ALL].current, (int64_t)(1280 * kMiB));
    EXPECT_EQ(st.max_split_size, (int64_t)(2048 * kMiB));
    Free(p);
}

TEST_F(CudaMalloc, FractionHalfOf80GiBRefuses41GiB)
{
    Make();
    ASSERT_EQ(galloc_set_memory_fraction(a_, 0.5), GALLOC_OK);
    void *p = reinterpret_cast<void *>(1);
    EXPECT_EQ(galloc_malloc(a_, 41 * kGiB, 0, &p), GALLOC_E_OOM);
    EXPECT_EQ(p, nullptr);
    EXPECT_EQ(Stats().num_ooms, 1);
    EXPECT_EQ(LastError(a_).rfind("CUDA out of memory. Tried to allocate 41.00 GiB. GPU 0 has a total capacity of "
                                  "80.00 GiB of which 80.00 GiB is free. 40.00 GiB allowed; ",
                                  0),
              0u)
        << LastError(a_);
    EXPECT_EQ(f_.fake_cuda_calls("cuMemAlloc_v2"), 0u) << "the cap is checked before the device is asked";
}

TEST_F(CudaMalloc, DeviceMemoryIsRealAndBlocksDoNotOverlap)
{
    Make();
    const size_t sizes[] = {1, 512, 4096, 1 * kMiB, 1 * kMiB + 1, 3 * kMiB, 12 * kMiB, 700, 2 * kMiB};
    std::vector<void *> p;
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        p.push_back(Alloc(sizes[i]));
        std::memset(p.back(), (int)(0x10 + i), sizes[i]);
    }
    for (size_t i = 0; i < p.size(); i++) {
        const unsigned char *c = static_cast<const unsigned char *>(p[i]);
        EXPECT_EQ(c[0], 0x10 + i);
        EXPECT_EQ(c[sizes[i] - 1], 0x10 + i) << "block " << i << " was overwritten by a neighbour";
    }
    for (void *x : p)
        Free(x);
}

TEST_F(CudaMalloc, TheCallersContextIsRestoredOnEveryThread)
{
    Make();
    auto get_current = f_.Sym<ga_cuCtxGetCurrent_fn *>("cuCtxGetCurrent");
    ga_cu_context_t c = reinterpret_cast<ga_cu_context_t>(1);
    void *p = Alloc(1);
    ASSERT_EQ(get_current(&c), GA_CUDA_SUCCESS);
    EXPECT_EQ(c, nullptr) << "galloc set its context for the call and restored none";
    std::thread t([&] { // another thread has no context current: galloc sets it there too
        void *q = nullptr;
        EXPECT_EQ(galloc_malloc(a_, 100, 0, &q), GALLOC_OK) << LastError(a_);
        EXPECT_EQ(galloc_free(a_, q), GALLOC_OK);
    });
    t.join();
    Free(p);
    EXPECT_EQ(f_.Stats().violations, 0u) << f_.Violation();
}

TEST(CudaLoad, NoDriverIsUnavailableNamingLibcudaAndSimKeepsWorking)
{
    galloc_allocator_t *a = nullptr;
    char err[GALLOC_ERROR_MAX] = "";
    galloc_status_t st = galloc_allocator_create("cuda", 0, "", &a, err, sizeof err);
    if (st == GALLOC_OK) {
        galloc_allocator_destroy(a);
        GTEST_SKIP() << "a CUDA driver is installed here";
    }
    EXPECT_EQ(st, GALLOC_E_UNAVAILABLE);
    EXPECT_EQ(a, nullptr);
    EXPECT_NE(std::string(err).find("libcuda.so.1"), std::string::npos) << err;
    ASSERT_EQ(galloc_allocator_create("sim", 0, "", &a, err, sizeof err), GALLOC_OK) << err;
    void *p = nullptr;
    EXPECT_EQ(galloc_malloc(a, 1, 0, &p), GALLOC_OK);
    EXPECT_EQ(galloc_free(a, p), GALLOC_OK);
    galloc_allocator_destroy(a);
}

} // namespace
} // namespace cuda_test
