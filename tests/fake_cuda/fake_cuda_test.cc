// fake_cuda_test: the fake driver itself, through its exported CUDA symbols
// (typed with galloc's declarations) and its controls: the contracts it
// enforces, its host-memory model, stream-ordered pool, fault injection and
// leak accounting. The backend tests rely on every one of these.
#include <gtest/gtest.h>

#include <condition_variable>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>

extern "C" {
#include "backend/cuda_api.h"
}
#include "tests/fake_cuda/fake_cuda_util.h"

namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20, kGiB = uint64_t{1} << 30;

class Fake : public ::testing::Test {
  protected:
    void SetUp() override
    {
        ASSERT_TRUE(f_.ok()) << f_.error();
#define BIND_(name) name = f_.Sym<ga_##name##_fn *>(#name)
        BIND_(cuInit);
        BIND_(cuDeviceGet);
        BIND_(cuDeviceGetCount);
        BIND_(cuDevicePrimaryCtxRetain);
        BIND_(cuDevicePrimaryCtxRelease_v2);
        BIND_(cuCtxGetCurrent);
        BIND_(cuCtxSetCurrent);
        BIND_(cuCtxSynchronize);
        BIND_(cuMemAlloc_v2);
        BIND_(cuMemFree_v2);
        BIND_(cuMemGetInfo_v2);
        BIND_(cuMemAddressReserve);
        BIND_(cuMemAddressFree);
        BIND_(cuMemCreate);
        BIND_(cuMemRelease);
        BIND_(cuMemMap);
        BIND_(cuMemUnmap);
        BIND_(cuMemSetAccess);
        BIND_(cuMemGetAllocationGranularity);
        BIND_(cuEventCreate);
        BIND_(cuEventDestroy_v2);
        BIND_(cuEventRecord);
        BIND_(cuEventQuery);
        BIND_(cuEventSynchronize);
        BIND_(cuStreamSynchronize);
        BIND_(cuGetErrorName);
        BIND_(cuGetErrorString);
        BIND_(cuMemAllocAsync);
        BIND_(cuMemFreeAsync);
        BIND_(cuDeviceGetDefaultMemPool);
        BIND_(cuMemPoolSetAttribute);
        BIND_(cuMemPoolGetAttribute);
        BIND_(cuMemPoolTrimTo);
#undef BIND_
        ASSERT_TRUE(f_.ok()) << f_.error();
    }
    // cuInit + retain device d's primary context + make it current.
    void Open(int d = 0)
    {
        ASSERT_EQ(cuInit(0), GA_CUDA_SUCCESS);
        ASSERT_EQ(cuDevicePrimaryCtxRetain(&ctx_, d), GA_CUDA_SUCCESS);
        ASSERT_EQ(cuCtxSetCurrent(ctx_), GA_CUDA_SUCCESS);
    }
    void Close(int d = 0)
    {
        EXPECT_EQ(cuCtxSetCurrent(nullptr), GA_CUDA_SUCCESS);
        EXPECT_EQ(cuDevicePrimaryCtxRelease_v2(d), GA_CUDA_SUCCESS);
    }
    ga_cu_mem_allocation_prop_t Prop(int d = 0)
    {
        ga_cu_mem_allocation_prop_t p = {};
        p.type = GA_CU_MEM_ALLOCATION_TYPE_PINNED;
        p.location.type = GA_CU_MEM_LOCATION_TYPE_DEVICE;
        p.location.id = d;
        return p;
    }
    uint64_t Violations()
    {
        return f_.Stats().violations;
    }

    FakeCuda f_;
    ga_cu_context_t ctx_ = nullptr;
#define FIELD_(name) ga_##name##_fn *name = nullptr
    FIELD_(cuInit);
    FIELD_(cuDeviceGet);
    FIELD_(cuDeviceGetCount);
    FIELD_(cuDevicePrimaryCtxRetain);
    FIELD_(cuDevicePrimaryCtxRelease_v2);
    FIELD_(cuCtxGetCurrent);
    FIELD_(cuCtxSetCurrent);
    FIELD_(cuCtxSynchronize);
    FIELD_(cuMemAlloc_v2);
    FIELD_(cuMemFree_v2);
    FIELD_(cuMemGetInfo_v2);
    FIELD_(cuMemAddressReserve);
    FIELD_(cuMemAddressFree);
    FIELD_(cuMemCreate);
    FIELD_(cuMemRelease);
    FIELD_(cuMemMap);
    FIELD_(cuMemUnmap);
    FIELD_(cuMemSetAccess);
    FIELD_(cuMemGetAllocationGranularity);
    FIELD_(cuEventCreate);
    FIELD_(cuEventDestroy_v2);
    FIELD_(cuEventRecord);
    FIELD_(cuEventQuery);
    FIELD_(cuEventSynchronize);
    FIELD_(cuStreamSynchronize);
    FIELD_(cuGetErrorName);
    FIELD_(cuGetErrorString);
    FIELD_(cuMemAllocAsync);
    FIELD_(cuMemFreeAsync);
    FIELD_(cuDeviceGetDefaultMemPool);
    FIELD_(cuMemPoolSetAttribute);
    FIELD_(cuMemPoolGetAttribute);
    FIELD_(cuMemPoolTrimTo);
#undef FIELD_
};

TEST_F(Fake, InitAndAContextComeFirst)
{
    ga_cu_deviceptr_t p = 0;
    EXPECT_EQ(cuMemAlloc_v2(&p, 512), GA_CUDA_ERROR_NOT_INITIALIZED);
    EXPECT_EQ(f_.Violation(), "cuMemAlloc_v2: the driver is not initialized");
    EXPECT_EQ(cuInit(1), GA_CUDA_ERROR_INVALID_VALUE);
    ASSERT_EQ(cuInit(0), GA_CUDA_SUCCESS);
    EXPECT_EQ(cuMemAlloc_v2(&p, 512), GA_CUDA_ERROR_INVALID_CONTEXT);
    int n = 0;
    EXPECT_EQ(cuDeviceGetCount(&n), GA_CUDA_SUCCESS);
    EXPECT_EQ(n, 2);
    ga_cu_device_t d = -1;
    EXPECT_EQ(cuDeviceGet(&d, 2), GA_CUDA_ERROR_INVALID_DEVICE);
    EXPECT_EQ(cuDevicePrimaryCtxRelease_v2(0), GA_CUDA_ERROR_INVALID_CONTEXT) << "not retained";
    EXPECT_EQ(Violations(), 5u);
    EXPECT_EQ(f_.Stats().calls, 7u);
    EXPECT_EQ(f_.fake_cuda_calls("cuMemAlloc_v2"), 2u);
}

TEST_F(Fake, LinearMemoryIsRealAndChecked)
{
    ASSERT_EQ(f_.fake_cuda_configure(2, 1 * kGiB, 2 * kMiB), 0);
    Open();
    ga_cu_deviceptr_t p = 0, q = 0;
    ASSERT_EQ(cuMemAlloc_v2(&p, 1), GA_CUDA_SUCCESS);
    EXPECT_EQ(p % (2 * kMiB), 0u);
    std::memset(reinterpret_cast<void *>(p), 0xab, 2 * kMiB); // the whole charged page is usable
    size_t free_b = 0, total = 0;
    ASSERT_EQ(cuMemGetInfo_v2(&free_b, &total), GA_CUDA_SUCCESS);
    EXPECT_EQ(total, 1 * kGiB);
    EXPECT_EQ(free_b, 1 * kGiB - 2 * kMiB);
    EXPECT_EQ(cuMemAlloc_v2(&q, 1 * kGiB), GA_CUDA_ERROR_OUT_OF_MEMORY);
    EXPECT_EQ(cuMemAlloc_v2(&q, 0), GA_CUDA_ERROR_INVALID_VALUE);
    EXPECT_EQ(cuMemFree_v2(p), GA_CUDA_SUCCESS);
    EXPECT_EQ(cuMemFree_v2(p), GA_CUDA_ERROR_INVALID_VALUE) << "double free";
    EXPECT_NE(f_.Violation().find("double free"), std::string::npos) << f_.Violation();
    EXPECT_EQ(Violations(), 2u);
    Close();
    EXPECT_EQ(f_.Stats().leaks, 0u);
}

TEST_F(Fake, VirtualMemoryContracts)
{
    Open();
    ga_cu_mem_allocation_prop_t prop = Prop();
    size_t g = 0;
    ASSERT_EQ(cuMemGetAllocationGranularity(&g, &prop, GA_CU_MEM_ALLOC_GRANULARITY_MINIMUM), GA_CUDA_SUCCESS);
    ASSERT_EQ(g, 2 * kMiB);
    ga_cu_deviceptr_t r = 0, r2 = 0;
    EXPECT_EQ(cuMemAddressReserve(&r, 3 * kMiB, 0, 0, 0), GA_CUDA_ERROR_INVALID_VALUE) << "not a granularity multiple";
    ASSERT_EQ(cuMemAddressReserve(&r, 8 * kMiB, 0, 0, 0), GA_CUDA_SUCCESS);
    ASSERT_EQ(cuMemAddressReserve(&r2, 4 * kMiB, 0, 0, 0), GA_CUDA_SUCCESS);
    ga_cu_mem_handle_t h = 0, h2 = 0;
    EXPECT_EQ(cuMemCreate(&h, 3 * kMiB, &prop, 0), GA_CUDA_ERROR_INVALID_VALUE);
    ga_cu_mem_allocation_prop_t bad = prop;
    bad.type = GA_CU_MEM_ALLOCATION_TYPE_INVALID;
    EXPECT_EQ(cuMemCreate(&h, 4 * kMiB, &bad, 0), GA_CUDA_ERROR_INVALID_VALUE);
    ASSERT_EQ(cuMemCreate(&h, 4 * kMiB, &prop, 0), GA_CUDA_SUCCESS);
    ASSERT_EQ(cuMemCreate(&h2, 2 * kMiB, &prop, 0), GA_CUDA_SUCCESS);
    EXPECT_EQ(cuMemMap(r + 6 * kMiB, 4 * kMiB, 0, h, 0), GA_CUDA_ERROR_INVALID_VALUE) << "past the reservation";
    EXPECT_EQ(cuMemMap(r + 1 * kMiB, 4 * kMiB, 0, h, 0), GA_CUDA_ERROR_INVALID_VALUE) << "misaligned";
    ASSERT_EQ(cuMemMap(r + 2 * kMiB, 4 * kMiB, 0, h, 0), GA_CUDA_SUCCESS);
    EXPECT_EQ(cuMemMap(r + 4 * kMiB, 2 * kMiB, 0, h2, 0), GA_CUDA_ERROR_INVALID_VALUE) << "overlap";
    ga_cu_mem_access_desc_t desc = {{GA_CU_MEM_LOCATION_TYPE_DEVICE, 0}, GA_CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    EXPECT_EQ(cuMemSetAccess(r, 4 * kMiB, &desc, 1), GA_CUDA_ERROR_INVALID_VALUE) << "partly unmapped";
    ASSERT_EQ(cuMemSetAccess(r + 2 * kMiB, 4 * kMiB, &desc, 1), GA_CUDA_SUCCESS);
    std::memset(reinterpret_cast<void *>(r + 2 * kMiB), 0x5a, 4 * kMiB);
    // The same handle mapped again elsewhere shows the same bytes.
    ASSERT_EQ(cuMemMap(r2, 2 * kMiB, 2 * kMiB, h, 0), GA_CUDA_SUCCESS);
    ASSERT_EQ(cuMemSetAccess(r2, 2 * kMiB, &desc, 1), GA_CUDA_SUCCESS);
    EXPECT_EQ(reinterpret_cast<unsigned char *>(r2)[123], 0x5a);
    EXPECT_EQ(cuMemUnmap(r + 2 * kMiB, 2 * kMiB), GA_CUDA_ERROR_INVALID_VALUE) << "part of a mapping";
    EXPECT_EQ(cuMemAddressFree(r, 8 * kMiB), GA_CUDA_ERROR_INVALID_VALUE) << "unmap before release";
    EXPECT_EQ(cuMemAddressFree(r, 4 * kMiB), GA_CUDA_ERROR_INVALID_VALUE) << "not the whole range";
    EXPECT_EQ(cuMemRelease(h), GA_CUDA_SUCCESS) << "release while mapped is deferred, as in CUDA";
    EXPECT_EQ(cuMemRelease(h), GA_CUDA_ERROR_INVALID_VALUE) << "released twice";
    EXPECT_EQ(f_.Stats().live_handles, 1u);
    EXPECT_EQ(cuMemUnmap(r + 2 * kMiB, 4 * kMiB), GA_CUDA_SUCCESS);
    EXPECT_EQ(cuMemUnmap(r2, 2 * kMiB), GA_CUDA_SUCCESS);
    EXPECT_EQ(f_.Stats().device_used[0], 2 * kMiB) << "h went with its last mapping";
    EXPECT_EQ(cuMemRelease(h2), GA_CUDA_SUCCESS);
    EXPECT_EQ(cuMemAddressFree(r, 8 * kMiB), GA_CUDA_SUCCESS);
    EXPECT_EQ(cuMemAddressFree(r2, 4 * kMiB), GA_CUDA_SUCCESS);
    EXPECT_EQ(Violations(), 11u);
    Close();
    fake_gpu_stats_t s = f_.Stats();
    EXPECT_EQ(s.leaks, 0u);
    EXPECT_EQ(s.device_used[0], 0u);
}

TEST_F(Fake, EventsAndManualStreams)
{
    Open();
    uintptr_t s1 = 0;
    ASSERT_EQ(f_.fake_cuda_stream_create(0, &s1), 0);
    auto st = reinterpret_cast<ga_cu_stream_t>(s1);
    ga_cu_event_t e = nullptr, t = nullptr;
    ASSERT_EQ(cuEventCreate(&e, GA_CU_EVENT_DISABLE_TIMING), GA_CUDA_SUCCESS);
    ASSERT_EQ(cuEventCreate(&t, 0), GA_CUDA_SUCCESS);
    EXPECT_EQ(cuEventCreate(&t, 0x4), GA_CUDA_ERROR_INVALID_VALUE) << "interprocess needs DISABLE_TIMING";
    EXPECT_EQ(f_.Stats().events_with_timing, 1u);
    EXPECT_EQ(cuEventQuery(e), GA_CUDA_SUCCESS) << "never recorded";
    EXPECT_EQ(cuEventRecord(e, reinterpret_cast<ga_cu_stream_t>(0x1234)), GA_CUDA_ERROR_INVALID_HANDLE);
    f_.fake_cuda_set_manual_streams(1);
    ASSERT_EQ(cuEventRecord(e, st), GA_CUDA_SUCCESS);
    EXPECT_EQ(cuEventQuery(e), GA_CUDA_ERROR_NOT_READY);
    ASSERT_EQ(f_.fake_cuda_stream_complete(0, s1), 0);
    EXPECT_EQ(cuEventQuery(e), GA_CUDA_SUCCESS);
    ASSERT_EQ(cuEventRecord(e, GA_CU_STREAM_LEGACY), GA_CUDA_SUCCESS);
    EXPECT_EQ(cuEventQuery(e), GA_CUDA_ERROR_NOT_READY);
    EXPECT_EQ(cuStreamSynchronize(nullptr), GA_CUDA_SUCCESS) << "the legacy stream is the default stream";
    EXPECT_EQ(cuEventQuery(e), GA_CUDA_SUCCESS);
    EXPECT_EQ(cuEventDestroy_v2(e), GA_CUDA_SUCCESS);
    EXPECT_EQ(cuEventDestroy_v2(e), GA_CUDA_ERROR_INVALID_HANDLE);
    EXPECT_EQ(f_.Stats().live_events, 1u);
    EXPECT_EQ(Violations(), 3u);
    EXPECT_EQ(cuEventDestroy_v2(t), GA_CUDA_SUCCESS);
    EXPECT_EQ(f_.fake_cuda_stream_destroy(s1), 0);
    Close();
    EXPECT_EQ(f_.Stats().leaks, 0u);
}

TEST_F(Fake, StreamOrderedPool)
{
    Open();
    ga_cu_mempool_t pool = nullptr;
    ASSERT_EQ(cuDeviceGetDefaultMemPool(&pool, 0), GA_CUDA_SUCCESS);
    auto attr = [&](ga_cu_mempool_attr_t a) {
        uint64_t v = 0;
        EXPECT_EQ(cuMemPoolGetAttribute(pool, a, &v), GA_CUDA_SUCCESS);
        return v;
    };
    ga_cu_deviceptr_t a = 0, b = 0;
    ASSERT_EQ(cuMemAllocAsync(&a, 1, nullptr), GA_CUDA_SUCCESS);
    EXPECT_EQ(attr(GA_CU_MEMPOOL_ATTR_USED_MEM_CURRENT), 512u);
    EXPECT_EQ(attr(GA_CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 2 * kMiB);
    EXPECT_EQ(cuMemFree_v2(a), GA_CUDA_ERROR_INVALID_VALUE) << "not a cuMemAlloc allocation";
    ASSERT_EQ(cuMemFreeAsync(a, nullptr), GA_CUDA_SUCCESS);
    EXPECT_EQ(cuMemFreeAsync(a, nullptr), GA_CUDA_ERROR_INVALID_VALUE) << "double free";
    EXPECT_EQ(attr(GA_CU_MEMPOOL_ATTR_USED_MEM_CURRENT), 0u);
    EXPECT_EQ(attr(GA_CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 2 * kMiB) << "cached until a synchronization";
    ASSERT_EQ(cuMemAllocAsync(&b, 4096, nullptr), GA_CUDA_SUCCESS);
    EXPECT_EQ(b, a) << "the free chunk is reused";
    ASSERT_EQ(cuMemFreeAsync(b, nullptr), GA_CUDA_SUCCESS);
    ASSERT_EQ(cuCtxSynchronize(), GA_CUDA_SUCCESS);
    EXPECT_EQ(attr(GA_CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 0u) << "threshold 0 releases at synchronization";
    uint64_t max = UINT64_MAX, one = 1;
    ASSERT_EQ(cuMemPoolSetAttribute(pool, GA_CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &max), GA_CUDA_SUCCESS);
    ASSERT_EQ(cuMemAllocAsync(&a, 3 * kMiB, nullptr), GA_CUDA_SUCCESS);
    ASSERT_EQ(cuMemFreeAsync(a, nullptr), GA_CUDA_SUCCESS);
    ASSERT_EQ(cuCtxSynchronize(), GA_CUDA_SUCCESS);
    EXPECT_EQ(attr(GA_CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 4 * kMiB);
    EXPECT_EQ(attr(GA_CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH), 4 * kMiB);
    EXPECT_EQ(attr(GA_CU_MEMPOOL_ATTR_USED_MEM_HIGH), 3 * kMiB);
    EXPECT_EQ(cuMemPoolSetAttribute(pool, GA_CU_MEMPOOL_ATTR_USED_MEM_HIGH, &one), GA_CUDA_ERROR_INVALID_VALUE);
    EXPECT_EQ(cuMemPoolSetAttribute(pool, GA_CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &max), GA_CUDA_ERROR_INVALID_VALUE);
    uint64_t zero = 0;
    ASSERT_EQ(cuMemPoolSetAttribute(pool, GA_CU_MEMPOOL_ATTR_USED_MEM_HIGH, &zero), GA_CUDA_SUCCESS);
    EXPECT_EQ(attr(GA_CU_MEMPOOL_ATTR_USED_MEM_HIGH), 0u) << "reset to current";
    ASSERT_EQ(cuMemPoolTrimTo(pool, 0), GA_CUDA_SUCCESS);
    EXPECT_EQ(attr(GA_CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 0u);
    EXPECT_EQ(Violations(), 4u);
    Close();
    EXPECT_EQ(f_.Stats().leaks, 0u);
}

TEST_F(Fake, FaultsFailOneCallAndChangeNothing)
{
    Open();
    ASSERT_EQ(f_.fake_cuda_fail("cuMemAlloc_v2", 2, 0, GA_CUDA_ERROR_OUT_OF_MEMORY), 0);
    ga_cu_deviceptr_t p[3] = {};
    EXPECT_EQ(cuMemAlloc_v2(&p[0], 512), GA_CUDA_SUCCESS);
    EXPECT_EQ(cuMemAlloc_v2(&p[1], 512), GA_CUDA_ERROR_OUT_OF_MEMORY);
    EXPECT_EQ(p[1], 0u);
    EXPECT_EQ(cuMemAlloc_v2(&p[2], 512), GA_CUDA_SUCCESS);
    EXPECT_EQ(f_.Stats().live_segments, 2u);
    f_.fake_cuda_fail_clear();
    ASSERT_EQ(f_.fake_cuda_fail("*", 0, 2, GA_CUDA_ERROR_UNKNOWN), 0); // every call from the 2nd on
    EXPECT_EQ(cuMemFree_v2(p[0]), GA_CUDA_SUCCESS);
    EXPECT_EQ(cuMemFree_v2(p[2]), GA_CUDA_ERROR_UNKNOWN);
    EXPECT_EQ(cuMemFree_v2(p[2]), GA_CUDA_ERROR_UNKNOWN);
    f_.fake_cuda_fail_clear();
    EXPECT_EQ(cuMemFree_v2(p[2]), GA_CUDA_SUCCESS) << "the failed frees changed nothing";
    fake_gpu_stats_t s = f_.Stats();
    EXPECT_EQ(s.faults, 3u);
    EXPECT_EQ(s.violations, 0u);
    EXPECT_EQ(f_.Trace(), "cuInit,cuDevicePrimaryCtxRetain,cuCtxSetCurrent,cuMemAlloc_v2,cuMemAlloc_v2,cuMemAlloc_v2,"
                          "cuMemFree_v2,cuMemFree_v2,cuMemFree_v2,cuMemFree_v2,");
    const char *name = nullptr, *text = nullptr;
    EXPECT_EQ(cuGetErrorName(GA_CUDA_ERROR_OUT_OF_MEMORY, &name), GA_CUDA_SUCCESS);
    EXPECT_STREQ(name, "CUDA_ERROR_OUT_OF_MEMORY");
    EXPECT_EQ(cuGetErrorString(GA_CUDA_ERROR_OUT_OF_MEMORY, &text), GA_CUDA_SUCCESS);
    EXPECT_STREQ(text, "out of memory");
    EXPECT_EQ(cuGetErrorName(static_cast<ga_cu_result_t>(12345), &name), GA_CUDA_ERROR_INVALID_VALUE);
    EXPECT_EQ(name, nullptr);
    Close();
}

// A reset is a fresh driver for every thread: no context stays current. A
// context left current across resets made galloc skip cuCtxSetCurrent in every
// later sweep run, so its faults were never injected.
TEST_F(Fake, ResetForgetsTheCurrentContextOfEveryThread)
{
    Open();
    std::mutex m;
    std::condition_variable cv;
    int phase = 0; // 1: the other thread's context is current; 2: the driver was reset
    ga_cu_context_t seen = reinterpret_cast<ga_cu_context_t>(1);
    std::thread t([&] {
        ga_cu_context_t c = nullptr;
        EXPECT_EQ(cuDevicePrimaryCtxRetain(&c, 1), GA_CUDA_SUCCESS);
        EXPECT_EQ(cuCtxSetCurrent(c), GA_CUDA_SUCCESS);
        std::unique_lock<std::mutex> l(m);
        phase = 1;
        cv.notify_all();
        cv.wait(l, [&] { return phase == 2; });
        EXPECT_EQ(cuCtxGetCurrent(&seen), GA_CUDA_SUCCESS);
    });
    {
        std::unique_lock<std::mutex> l(m);
        cv.wait(l, [&] { return phase == 1; });
        f_.fake_cuda_reset();
        ASSERT_EQ(cuInit(0), GA_CUDA_SUCCESS);
        phase = 2;
        cv.notify_all();
    }
    t.join();
    EXPECT_EQ(seen, nullptr) << "the other thread's context";
    ga_cu_context_t mine = reinterpret_cast<ga_cu_context_t>(1);
    EXPECT_EQ(cuCtxGetCurrent(&mine), GA_CUDA_SUCCESS);
    EXPECT_EQ(mine, nullptr) << "this thread's context";
    EXPECT_EQ(f_.Stats().violations, 0u) << f_.Violation();
}

TEST_F(Fake, ResourcesAliveAtContextDestructionAreLeaks)
{
    Open(1);
    ga_cu_deviceptr_t p = 0, r = 0;
    ga_cu_event_t e = nullptr;
    ASSERT_EQ(cuMemAlloc_v2(&p, 512), GA_CUDA_SUCCESS);
    ASSERT_EQ(cuMemAddressReserve(&r, 2 * kMiB, 0, 0, 0), GA_CUDA_SUCCESS);
    ASSERT_EQ(cuEventCreate(&e, GA_CU_EVENT_DISABLE_TIMING), GA_CUDA_SUCCESS);
    EXPECT_EQ(f_.Stats().leaks, 4u) << "three resources and a context reference";
    // Device 0's context may not free device 1's memory.
    ga_cu_context_t c0 = nullptr;
    ASSERT_EQ(cuDevicePrimaryCtxRetain(&c0, 0), GA_CUDA_SUCCESS);
    ASSERT_EQ(cuCtxSetCurrent(c0), GA_CUDA_SUCCESS);
    EXPECT_EQ(cuMemFree_v2(p), GA_CUDA_ERROR_INVALID_CONTEXT);
    EXPECT_EQ(cuDevicePrimaryCtxRelease_v2(0), GA_CUDA_SUCCESS);
    EXPECT_EQ(cuMemAlloc_v2(&p, 512), GA_CUDA_ERROR_INVALID_CONTEXT) << "the current context was destroyed";
    EXPECT_EQ(cuDevicePrimaryCtxRelease_v2(1), GA_CUDA_SUCCESS);
    fake_gpu_stats_t s = f_.Stats();
    EXPECT_EQ(s.leaked_at_destroy, 3u);
    EXPECT_EQ(s.leaks, 3u);
    EXPECT_EQ(s.live_segments + s.live_reservations + s.live_events, 0u) << "the driver freed them";
    EXPECT_EQ(s.device_used[1], 0u);
}

} // namespace
