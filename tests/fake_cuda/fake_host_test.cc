// fake_host_test: the fake driver's contents model and its pinned host memory
// and copies, through the exported CUDA symbols (cuMemHostAlloc,
// cuMemFreeHost, cuMemcpyDtoH_v2, cuMemcpyHtoD_v2, and registered memory:
// cuMemHostRegister_v2, cuMemHostUnregister): bytes survive a round
// trip, new physical memory reads FAKE_GPU_GARBAGE, a handle keeps its bytes
// until released, the copies' contracts, faults and leak accounting. The
// sleep tests (tests/backend/sleep_cases.cc) rely on every one of these.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

extern "C" {
#include "backend/cuda_api.h"
}
#include "tests/fake_cuda/fake_cuda_util.h"

namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;

class FakeHost : public ::testing::Test {
  protected:
    void SetUp() override
    {
        ASSERT_TRUE(f_.ok()) << f_.error();
#define BIND_(name) name = f_.Sym<ga_##name##_fn *>(#name)
        BIND_(cuInit);
        BIND_(cuDevicePrimaryCtxRetain);
        BIND_(cuDevicePrimaryCtxRelease_v2);
        BIND_(cuCtxSetCurrent);
        BIND_(cuMemAlloc_v2);
        BIND_(cuMemFree_v2);
        BIND_(cuMemAddressReserve);
        BIND_(cuMemAddressFree);
        BIND_(cuMemCreate);
        BIND_(cuMemRelease);
        BIND_(cuMemMap);
        BIND_(cuMemUnmap);
        BIND_(cuMemSetAccess);
        BIND_(cuMemHostAlloc);
        BIND_(cuMemFreeHost);
        BIND_(cuMemcpyDtoH_v2);
        BIND_(cuMemcpyHtoD_v2);
        BIND_(cuMemHostRegister_v2);
        BIND_(cuMemHostUnregister);
#undef BIND_
        ASSERT_TRUE(f_.ok()) << f_.error();
        ASSERT_EQ(cuInit(0), GA_CUDA_SUCCESS);
        ASSERT_EQ(cuDevicePrimaryCtxRetain(&ctx_, 0), GA_CUDA_SUCCESS);
        ASSERT_EQ(cuCtxSetCurrent(ctx_), GA_CUDA_SUCCESS);
    }
    void Close()
    {
        EXPECT_EQ(cuCtxSetCurrent(nullptr), GA_CUDA_SUCCESS);
        EXPECT_EQ(cuDevicePrimaryCtxRelease_v2(0), GA_CUDA_SUCCESS);
    }
    // A fresh handle of n bytes mapped read-write at addr.
    ga_cu_mem_handle_t MapNew(ga_cu_deviceptr_t addr, size_t n)
    {
        ga_cu_mem_allocation_prop_t p = {};
        p.type = GA_CU_MEM_ALLOCATION_TYPE_PINNED;
        p.location.type = GA_CU_MEM_LOCATION_TYPE_DEVICE;
        ga_cu_mem_handle_t h = 0;
        EXPECT_EQ(cuMemCreate(&h, n, &p, 0), GA_CUDA_SUCCESS);
        EXPECT_EQ(cuMemMap(addr, n, 0, h, 0), GA_CUDA_SUCCESS);
        ga_cu_mem_access_desc_t d = {{GA_CU_MEM_LOCATION_TYPE_DEVICE, 0}, GA_CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
        EXPECT_EQ(cuMemSetAccess(addr, n, &d, 1), GA_CUDA_SUCCESS);
        return h;
    }
    uint64_t Violations()
    {
        return f_.Stats().violations;
    }

    FakeCuda f_;
    ga_cu_context_t ctx_ = nullptr;
#define FIELD_(name) ga_##name##_fn *name = nullptr
    FIELD_(cuInit);
    FIELD_(cuDevicePrimaryCtxRetain);
    FIELD_(cuDevicePrimaryCtxRelease_v2);
    FIELD_(cuCtxSetCurrent);
    FIELD_(cuMemAlloc_v2);
    FIELD_(cuMemFree_v2);
    FIELD_(cuMemAddressReserve);
    FIELD_(cuMemAddressFree);
    FIELD_(cuMemCreate);
    FIELD_(cuMemRelease);
    FIELD_(cuMemMap);
    FIELD_(cuMemUnmap);
    FIELD_(cuMemSetAccess);
    FIELD_(cuMemHostAlloc);
    FIELD_(cuMemFreeHost);
    FIELD_(cuMemcpyDtoH_v2);
    FIELD_(cuMemcpyHtoD_v2);
    FIELD_(cuMemHostRegister_v2);
    FIELD_(cuMemHostUnregister);
#undef FIELD_
};

TEST_F(FakeHost, PinnedBlocksAndCopiesHoldBytes)
{
    void *h = nullptr;
    ASSERT_EQ(cuMemHostAlloc(&h, 5000, GA_CU_MEMHOSTALLOC_PORTABLE), GA_CUDA_SUCCESS);
    fake_gpu_stats_t s = f_.Stats();
    EXPECT_EQ(s.live_host_blocks, 1u);
    EXPECT_EQ(s.live_host_bytes, 5000u);
    EXPECT_EQ(s.leaks, 2u) << "the block and the context reference";
    ga_cu_deviceptr_t d = 0;
    ASSERT_EQ(cuMemAlloc_v2(&d, 8192), GA_CUDA_SUCCESS);
    auto *hb = static_cast<unsigned char *>(h);
    for (size_t i = 0; i < 5000; i++)
        hb[i] = (unsigned char)(i * 7 + 1);
    ASSERT_EQ(cuMemcpyHtoD_v2(d + 100, h, 5000), GA_CUDA_SUCCESS);
    std::memset(h, 0, 5000);
    ASSERT_EQ(cuMemcpyDtoH_v2(h, d + 100, 5000), GA_CUDA_SUCCESS);
    for (size_t i = 0; i < 5000; i++)
        ASSERT_EQ(hb[i], (unsigned char)(i * 7 + 1)) << "byte " << i;
    std::vector<unsigned char> pageable(10);
    EXPECT_EQ(cuMemcpyDtoH_v2(pageable.data(), d + 100, 10), GA_CUDA_SUCCESS) << "pageable memory is allowed";
    EXPECT_EQ(pageable[9], (unsigned char)(9 * 7 + 1));
    EXPECT_EQ(cuMemcpyDtoH_v2(h, d, 0), GA_CUDA_SUCCESS) << "nothing to copy";
    s = f_.Stats();
    EXPECT_EQ(s.copied_h2d_bytes, 5000u);
    EXPECT_EQ(s.copied_d2h_bytes, 5010u);
    EXPECT_EQ(Violations(), 0u) << f_.Violation();

    // Contracts: each refusal is a violation and copies nothing.
    EXPECT_EQ(cuMemcpyDtoH_v2(h, d + 8190, 4), GA_CUDA_ERROR_INVALID_VALUE) << "past the allocation";
    EXPECT_EQ(cuMemcpyHtoD_v2(d, hb + 4990, 20), GA_CUDA_ERROR_INVALID_VALUE) << "past the pinned block";
    EXPECT_EQ(cuMemcpyDtoH_v2(reinterpret_cast<void *>(d), d + 100, 4), GA_CUDA_ERROR_INVALID_VALUE)
        << "a device address as the host side";
    void *z = nullptr;
    EXPECT_EQ(cuMemHostAlloc(&z, 0, 0), GA_CUDA_ERROR_INVALID_VALUE);
    EXPECT_EQ(cuMemHostAlloc(&z, 10, 0x8), GA_CUDA_ERROR_INVALID_VALUE) << "an unknown flag";
    EXPECT_EQ(Violations(), 5u);
    EXPECT_EQ(f_.Stats().copied_d2h_bytes, 5010u);

    ASSERT_EQ(cuMemFree_v2(d), GA_CUDA_SUCCESS);
    EXPECT_EQ(cuMemcpyHtoD_v2(d, h, 4), GA_CUDA_ERROR_INVALID_VALUE) << "freed memory";
    EXPECT_EQ(cuMemFreeHost(h), GA_CUDA_SUCCESS);
    EXPECT_EQ(cuMemFreeHost(h), GA_CUDA_ERROR_INVALID_VALUE) << "double free";
    EXPECT_EQ(Violations(), 7u);
    Close();
    s = f_.Stats();
    EXPECT_EQ(s.leaks, 0u);
    EXPECT_EQ(s.peak_host_bytes, 5000u);
}

TEST_F(FakeHost, NewPhysicalMemoryIsGarbageAndBytesStayWithTheirHandle)
{
    ga_cu_deviceptr_t r = 0;
    ASSERT_EQ(cuMemAddressReserve(&r, 4 * kMiB, 0, 0, 0), GA_CUDA_SUCCESS);
    ga_cu_mem_handle_t h = MapNew(r, 4 * kMiB); // two granularity pages
    ASSERT_EQ(reinterpret_cast<unsigned char *>(r)[2 * kMiB], FAKE_GPU_GARBAGE) << "the second page's start";
    ASSERT_EQ(cuMemUnmap(r, 4 * kMiB), GA_CUDA_SUCCESS);
    ASSERT_EQ(cuMemRelease(h), GA_CUDA_SUCCESS);
    h = MapNew(r, 2 * kMiB);
    auto *p = reinterpret_cast<unsigned char *>(r);
    EXPECT_EQ(p[0], FAKE_GPU_GARBAGE);
    EXPECT_EQ(p[FAKE_GPU_GARBAGE_RUN - 1], FAKE_GPU_GARBAGE);
    EXPECT_EQ(p[FAKE_GPU_GARBAGE_RUN], 0);
    EXPECT_EQ(p[2 * kMiB - 1], 0);
    std::memset(p, 0x11, 2 * kMiB);
    // Unmapped, the handle keeps its bytes: mapped again elsewhere, they are there.
    ASSERT_EQ(cuMemUnmap(r, 2 * kMiB), GA_CUDA_SUCCESS);
    unsigned char byte = 0;
    EXPECT_EQ(cuMemcpyDtoH_v2(&byte, r, 1), GA_CUDA_ERROR_INVALID_VALUE) << "an unmapped range";
    ASSERT_EQ(cuMemMap(r + 2 * kMiB, 2 * kMiB, 0, h, 0), GA_CUDA_SUCCESS);
    EXPECT_EQ(cuMemcpyDtoH_v2(&byte, r + 2 * kMiB, 1), GA_CUDA_ERROR_INVALID_VALUE) << "mapped, no access yet";
    ga_cu_mem_access_desc_t d = {{GA_CU_MEM_LOCATION_TYPE_DEVICE, 0}, GA_CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    ASSERT_EQ(cuMemSetAccess(r + 2 * kMiB, 2 * kMiB, &d, 1), GA_CUDA_SUCCESS);
    ASSERT_EQ(cuMemcpyDtoH_v2(&byte, r + 2 * kMiB + 77, 1), GA_CUDA_SUCCESS);
    EXPECT_EQ(byte, 0x11);
    // Released, they are gone: a new handle at the old address is garbage again.
    ASSERT_EQ(cuMemUnmap(r + 2 * kMiB, 2 * kMiB), GA_CUDA_SUCCESS);
    ASSERT_EQ(cuMemRelease(h), GA_CUDA_SUCCESS);
    h = MapNew(r, 2 * kMiB);
    ASSERT_EQ(cuMemcpyDtoH_v2(&byte, r + 77, 1), GA_CUDA_SUCCESS);
    EXPECT_EQ(byte, FAKE_GPU_GARBAGE);
    ASSERT_EQ(cuMemUnmap(r, 2 * kMiB), GA_CUDA_SUCCESS);
    ASSERT_EQ(cuMemRelease(h), GA_CUDA_SUCCESS);
    ASSERT_EQ(cuMemAddressFree(r, 4 * kMiB), GA_CUDA_SUCCESS);
    EXPECT_EQ(Violations(), 2u);
    Close();
    EXPECT_EQ(f_.Stats().leaks, 0u);
}

TEST_F(FakeHost, FaultsReachTheNewCallsAndChangeNothing)
{
    ASSERT_EQ(f_.fake_cuda_fail("cuMemHostAlloc", 1, 0, GA_CUDA_ERROR_OUT_OF_MEMORY), 0);
    ASSERT_EQ(f_.fake_cuda_fail("cuMemcpyHtoD_v2", 1, 0, GA_CUDA_ERROR_UNKNOWN), 0);
    void *h = nullptr;
    EXPECT_EQ(cuMemHostAlloc(&h, 4096, 0), GA_CUDA_ERROR_OUT_OF_MEMORY);
    EXPECT_EQ(h, nullptr);
    EXPECT_EQ(f_.Stats().live_host_blocks, 0u);
    ASSERT_EQ(cuMemHostAlloc(&h, 4096, 0), GA_CUDA_SUCCESS);
    ga_cu_deviceptr_t d = 0;
    ASSERT_EQ(cuMemAlloc_v2(&d, 4096), GA_CUDA_SUCCESS);
    std::memset(h, 0x42, 4096);
    EXPECT_EQ(cuMemcpyHtoD_v2(d, h, 4096), GA_CUDA_ERROR_UNKNOWN);
    EXPECT_EQ(reinterpret_cast<unsigned char *>(d)[0], 0) << "the failed copy wrote nothing";
    fake_gpu_stats_t s = f_.Stats();
    EXPECT_EQ(s.faults, 2u);
    EXPECT_EQ(s.copied_h2d_bytes, 0u);
    EXPECT_EQ(f_.fake_cuda_calls("cuMemHostAlloc"), 2u);
    ASSERT_EQ(cuMemFree_v2(d), GA_CUDA_SUCCESS);
    // A block alive when its context is destroyed is a leak the driver frees.
    Close();
    s = f_.Stats();
    EXPECT_EQ(s.leaked_at_destroy, 1u);
    EXPECT_EQ(s.live_host_blocks, 0u);
    EXPECT_EQ(s.leaks, 1u);
}

// cuMemHostRegister_v2 / cuMemHostUnregister as the driver documents them:
// a range of the caller's memory, never device memory or memory pinned or
// registered already (CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED), unregistered
// by its start (CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED otherwise); counted,
// faultable, and a leak when its context goes.
TEST_F(FakeHost, RegisteredRangesFollowTheDriversContract)
{
    std::vector<char> mem(64 * 1024);
    ASSERT_EQ(cuMemHostRegister_v2(mem.data(), 16384, GA_CU_MEMHOSTREGISTER_PORTABLE), GA_CUDA_SUCCESS);
    fake_gpu_stats_t s = f_.Stats();
    EXPECT_EQ(s.live_host_registered, 1u);
    EXPECT_EQ(s.live_registered_bytes, 16384u);
    EXPECT_EQ(s.leaks, 2u) << "the context's reference, and a live range is the caller's to unregister";
    EXPECT_EQ(cuMemHostRegister_v2(mem.data() + 8192, 16384, 0), GA_CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
    void *h = nullptr;
    ASSERT_EQ(cuMemHostAlloc(&h, 4096, 0), GA_CUDA_SUCCESS);
    EXPECT_EQ(cuMemHostRegister_v2(h, 4096, 0), GA_CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED) << "pinned already";
    ga_cu_deviceptr_t d = 0;
    ASSERT_EQ(cuMemAlloc_v2(&d, 4096), GA_CUDA_SUCCESS);
    EXPECT_EQ(cuMemHostRegister_v2(reinterpret_cast<void *>(d), 4096, 0), GA_CUDA_ERROR_INVALID_VALUE);
    EXPECT_EQ(cuMemHostRegister_v2(mem.data() + 32768, 0, 0), GA_CUDA_ERROR_INVALID_VALUE);
    EXPECT_EQ(cuMemHostRegister_v2(mem.data() + 32768, 4096, 0x10), GA_CUDA_ERROR_INVALID_VALUE) << "unknown flag";
    EXPECT_EQ(cuMemHostUnregister(mem.data() + 4096), GA_CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
    EXPECT_EQ(Violations(), 6u);
    // An injected failure changes nothing.
    ASSERT_EQ(f_.fake_cuda_fail("cuMemHostRegister_v2", 1, 0, GA_CUDA_ERROR_OUT_OF_MEMORY), 0);
    EXPECT_EQ(cuMemHostRegister_v2(mem.data() + 32768, 4096, 0), GA_CUDA_ERROR_OUT_OF_MEMORY);
    EXPECT_EQ(f_.Stats().live_host_registered, 1u);
    ASSERT_EQ(f_.fake_cuda_fail("cuMemHostUnregister", 1, 0, GA_CUDA_ERROR_UNKNOWN), 0);
    EXPECT_EQ(cuMemHostUnregister(mem.data()), GA_CUDA_ERROR_UNKNOWN);
    EXPECT_EQ(f_.Stats().live_host_registered, 1u);
    ASSERT_EQ(cuMemHostUnregister(mem.data()), GA_CUDA_SUCCESS);
    // Copies from a registered range stay inside it, as from a pinned block.
    ASSERT_EQ(cuMemHostRegister_v2(mem.data() + 32768, 4096, 0), GA_CUDA_SUCCESS);
    std::memset(mem.data() + 32768, 0x21, 4096);
    ASSERT_EQ(cuMemcpyHtoD_v2(d, mem.data() + 32768, 4096), GA_CUDA_SUCCESS);
    EXPECT_EQ(reinterpret_cast<unsigned char *>(d)[4095], 0x21);
    ASSERT_EQ(cuMemFree_v2(d), GA_CUDA_SUCCESS);
    ASSERT_EQ(cuMemFreeHost(h), GA_CUDA_SUCCESS);
    s = f_.Stats();
    EXPECT_EQ(s.peak_registered_bytes, 16384u) << "never both ranges at once: 16 KiB was gone first";
    // A range alive when its context is destroyed is a leak the driver forgets.
    Close();
    s = f_.Stats();
    EXPECT_EQ(s.leaked_at_destroy, 1u);
    EXPECT_EQ(s.live_host_registered, 0u);
    EXPECT_EQ(s.leaks, 1u);
}

} // namespace
