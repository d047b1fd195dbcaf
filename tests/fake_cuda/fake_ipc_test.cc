// fake_ipc_test: the fake driver's sharing between processes, through its
// exported CUDA symbols (typed with galloc's declarations) and its controls
// (tests/fake_cuda/fake_gpu.h, IPC): IPC handles of linear memory, opened in
// a forked child (which resets its fake first), POSIX descriptors of physical
// handles, and the contracts, counters and fault injection around them. A
// child reports by its exit status: 0, or the number of its failed check.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <functional>

extern "C" {
#include "tests/util/child_exit.h"
#include "backend/cuda_api.h"
}
#include "tests/fake_cuda/fake_cuda_util.h"

namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;

class FakeIpc : public ::testing::Test {
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
        BIND_(cuIpcGetMemHandle);
        BIND_(cuIpcOpenMemHandle_v2);
        BIND_(cuIpcCloseMemHandle);
        BIND_(cuMemExportToShareableHandle);
        BIND_(cuMemImportFromShareableHandle);
#undef BIND_
        ASSERT_TRUE(f_.ok()) << f_.error();
    }
    // cuInit + retain device 0's primary context + make it current.
    void Open()
    {
        ga_cu_context_t ctx = nullptr;
        ASSERT_EQ(cuInit(0), GA_CUDA_SUCCESS);
        ASSERT_EQ(cuDevicePrimaryCtxRetain(&ctx, 0), GA_CUDA_SUCCESS);
        ASSERT_EQ(cuCtxSetCurrent(ctx), GA_CUDA_SUCCESS);
    }
    void Close()
    {
        EXPECT_EQ(cuCtxSetCurrent(nullptr), GA_CUDA_SUCCESS);
        EXPECT_EQ(cuDevicePrimaryCtxRelease_v2(0), GA_CUDA_SUCCESS);
    }
    // A 2 MiB physical handle, exportable or not, mapped read-write at *at.
    ga_cu_mem_handle_t MapNew(ga_cu_deviceptr_t *at, bool exportable)
    {
        ga_cu_mem_allocation_prop_t p = {};
        p.type = GA_CU_MEM_ALLOCATION_TYPE_PINNED;
        p.location.type = GA_CU_MEM_LOCATION_TYPE_DEVICE;
        p.requested_handle_types =
            exportable ? GA_CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR : GA_CU_MEM_HANDLE_TYPE_NONE;
        ga_cu_mem_handle_t h = 0;
        EXPECT_EQ(cuMemCreate(&h, 2 * kMiB, &p, 0), GA_CUDA_SUCCESS);
        MapAt(at, h);
        return h;
    }
    void MapAt(ga_cu_deviceptr_t *at, ga_cu_mem_handle_t h)
    {
        EXPECT_EQ(cuMemAddressReserve(at, 2 * kMiB, 0, 0, 0), GA_CUDA_SUCCESS);
        EXPECT_EQ(cuMemMap(*at, 2 * kMiB, 0, h, 0), GA_CUDA_SUCCESS);
        ga_cu_mem_access_desc_t d = {{GA_CU_MEM_LOCATION_TYPE_DEVICE, 0}, GA_CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
        EXPECT_EQ(cuMemSetAccess(*at, 2 * kMiB, &d, 1), GA_CUDA_SUCCESS);
    }
    void Unmap(ga_cu_deviceptr_t at, ga_cu_mem_handle_t h)
    {
        EXPECT_EQ(cuMemUnmap(at, 2 * kMiB), GA_CUDA_SUCCESS);
        EXPECT_EQ(cuMemAddressFree(at, 2 * kMiB), GA_CUDA_SUCCESS);
        EXPECT_EQ(cuMemRelease(h), GA_CUDA_SUCCESS);
    }
    // Run body in a forked child on a fresh fake; its exit status.
    int InChild(const std::function<int()> &body)
    {
        pid_t pid = fork();
        if (pid == 0) {
            f_.fake_cuda_reset();
            ga_cu_context_t ctx = nullptr;
            if (cuInit(0) != GA_CUDA_SUCCESS || cuDevicePrimaryCtxRetain(&ctx, 0) != GA_CUDA_SUCCESS ||
                cuCtxSetCurrent(ctx) != GA_CUDA_SUCCESS)
                ga_test_child_exit(100);
            ga_test_child_exit(body());
        }
        int status = 0;
        if (pid < 0 || waitpid(pid, &status, 0) != pid)
            return -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }

    FakeCuda f_;
#define DECL_(name) ga_##name##_fn *name = nullptr
    DECL_(cuInit);
    DECL_(cuDevicePrimaryCtxRetain);
    DECL_(cuDevicePrimaryCtxRelease_v2);
    DECL_(cuCtxSetCurrent);
    DECL_(cuMemAlloc_v2);
    DECL_(cuMemFree_v2);
    DECL_(cuMemAddressReserve);
    DECL_(cuMemAddressFree);
    DECL_(cuMemCreate);
    DECL_(cuMemRelease);
    DECL_(cuMemMap);
    DECL_(cuMemUnmap);
    DECL_(cuMemSetAccess);
    DECL_(cuIpcGetMemHandle);
    DECL_(cuIpcOpenMemHandle_v2);
    DECL_(cuIpcCloseMemHandle);
    DECL_(cuMemExportToShareableHandle);
    DECL_(cuMemImportFromShareableHandle);
#undef DECL_
};

TEST_F(FakeIpc, HandlesOnlyForTheBaseOfLiveLinearMemory)
{
    Open();
    ga_cu_deviceptr_t p = 0;
    ga_cu_ipc_mem_handle_t h;
    ASSERT_EQ(cuMemAlloc_v2(&p, 3 * kMiB), GA_CUDA_SUCCESS);
    EXPECT_EQ(cuIpcGetMemHandle(&h, p), GA_CUDA_SUCCESS);
    EXPECT_EQ(f_.Stats().violations, 0u);
    EXPECT_EQ(cuIpcGetMemHandle(&h, p + 4096), GA_CUDA_ERROR_INVALID_VALUE);
    EXPECT_NE(f_.Violation().find("not the base of a live linear allocation"), std::string::npos) << f_.Violation();
    EXPECT_EQ(cuIpcGetMemHandle(nullptr, p), GA_CUDA_ERROR_INVALID_VALUE);
    ASSERT_EQ(cuMemFree_v2(p), GA_CUDA_SUCCESS);
    EXPECT_EQ(cuIpcGetMemHandle(&h, p), GA_CUDA_ERROR_INVALID_VALUE) << "freed";
    EXPECT_EQ(f_.Stats().violations, 3u);
    Close();
    EXPECT_EQ(f_.Stats().leaks, 0u);
}

TEST_F(FakeIpc, OpeningOnesOwnHandleIsInvalidContextNotAViolation)
{
    Open();
    ga_cu_deviceptr_t p = 0, q = 0;
    ga_cu_ipc_mem_handle_t h;
    ASSERT_EQ(cuMemAlloc_v2(&p, 2 * kMiB), GA_CUDA_SUCCESS);
    ASSERT_EQ(cuIpcGetMemHandle(&h, p), GA_CUDA_SUCCESS);
    EXPECT_EQ(cuIpcOpenMemHandle_v2(&q, h, GA_CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS), GA_CUDA_ERROR_INVALID_CONTEXT);
    EXPECT_EQ(f_.Stats().violations, 0u);
    EXPECT_EQ(f_.Stats().live_ipc_opens, 0u);
    EXPECT_EQ(cuMemFree_v2(p), GA_CUDA_SUCCESS);
    Close();
    EXPECT_EQ(f_.Stats().leaks, 0u);
}

// The child maps the parent's pages: each sees the other's writes; a second
// open of one handle and a close of a stranger are violations; a live open
// is counted, and leaked when its context goes.
TEST_F(FakeIpc, AnotherProcessSharesTheBytes)
{
    Open();
    ga_cu_deviceptr_t p = 0;
    ga_cu_ipc_mem_handle_t h;
    ASSERT_EQ(cuMemAlloc_v2(&p, 3 * kMiB), GA_CUDA_SUCCESS);
    std::memset(reinterpret_cast<void *>(p), 0x42, 3 * kMiB);
    ASSERT_EQ(cuIpcGetMemHandle(&h, p), GA_CUDA_SUCCESS);
    uint64_t used = f_.Stats().device_used[0];
    int rc = InChild([&]() -> int {
        ga_cu_deviceptr_t q = 0, q2 = 0;
        if (cuIpcOpenMemHandle_v2(&q, h, 2) != GA_CUDA_ERROR_INVALID_VALUE)
            return 1; // flags beyond lazy peer access
        if (cuIpcOpenMemHandle_v2(&q, h, GA_CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS) != GA_CUDA_SUCCESS || q % (2 * kMiB))
            return 2;
        const unsigned char *b = reinterpret_cast<const unsigned char *>(q);
        if (b[0] != 0x42 || b[3 * kMiB - 1] != 0x42)
            return 3;
        std::memset(reinterpret_cast<void *>(q), 0x24, kMiB);
        fake_gpu_stats_t s = f_.Stats();
        if (s.live_ipc_opens != 1 || s.device_used[0] != 0 || s.leaks != 2) // the open and the context
            return 4;
        if (cuIpcOpenMemHandle_v2(&q2, h, 0) != GA_CUDA_ERROR_INVALID_VALUE)
            return 5; // the same handle twice
        if (cuIpcCloseMemHandle(q + 4096) != GA_CUDA_ERROR_INVALID_VALUE)
            return 6;
        if (cuIpcCloseMemHandle(q) != GA_CUDA_SUCCESS || f_.Stats().live_ipc_opens != 0)
            return 7;
        if (cuIpcOpenMemHandle_v2(&q, h, 0) != GA_CUDA_SUCCESS)
            return 8; // open again after a close
        if (cuDevicePrimaryCtxRelease_v2(0) != GA_CUDA_SUCCESS)
            return 9;
        s = f_.Stats();
        return s.leaked_at_destroy == 1 && s.live_ipc_opens == 0 && s.violations == 3 ? 0 : 10;
    });
    EXPECT_EQ(rc, 0) << "the child's failed check";
    const unsigned char *b = reinterpret_cast<const unsigned char *>(p);
    EXPECT_EQ(b[0], 0x24) << "the child's write";
    EXPECT_EQ(b[kMiB], 0x42);
    EXPECT_EQ(f_.Stats().device_used[0], used) << "the child's open charged nothing here";
    EXPECT_EQ(cuMemFree_v2(p), GA_CUDA_SUCCESS);
    Close();
    EXPECT_EQ(f_.Stats().leaks, 0u);
    EXPECT_EQ(f_.Stats().violations, 0u) << f_.Violation();
}

// A handle outliving its allocation names a file that is gone or another one.
TEST_F(FakeIpc, AHandleOfFreedMemoryIsRefused)
{
    Open();
    ga_cu_deviceptr_t p = 0, again = 0;
    ga_cu_ipc_mem_handle_t h;
    ASSERT_EQ(cuMemAlloc_v2(&p, 2 * kMiB), GA_CUDA_SUCCESS);
    ASSERT_EQ(cuIpcGetMemHandle(&h, p), GA_CUDA_SUCCESS);
    ASSERT_EQ(cuMemFree_v2(p), GA_CUDA_SUCCESS);
    ASSERT_EQ(cuMemAlloc_v2(&again, 2 * kMiB), GA_CUDA_SUCCESS); // likely reuses the descriptor number
    int rc = InChild([&]() -> int {
        ga_cu_deviceptr_t q = 0;
        if (cuIpcOpenMemHandle_v2(&q, h, 0) != GA_CUDA_ERROR_INVALID_HANDLE)
            return 1;
        return f_.Stats().live_ipc_opens == 0 && f_.Stats().violations == 1 ? 0 : 2;
    });
    EXPECT_EQ(rc, 0);
    EXPECT_EQ(cuMemFree_v2(again), GA_CUDA_SUCCESS);
    Close();
    EXPECT_EQ(f_.Stats().leaks, 0u);
}

// Export needs the POSIX type at creation; an import is a new handle over the
// same pages, with the exporter's contents (garbage included, not re-applied),
// charged nothing; the caller's descriptors stay its own.
TEST_F(FakeIpc, ExportedDescriptorsImportAsHandlesOverTheSamePages)
{
    Open();
    ga_cu_deviceptr_t a = 0, b = 0, c = 0;
    ga_cu_mem_handle_t plain = MapNew(&a, false);
    int fd = -1;
    EXPECT_EQ(cuMemExportToShareableHandle(&fd, plain, GA_CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
              GA_CUDA_ERROR_INVALID_VALUE);
    EXPECT_NE(f_.Violation().find("not created exportable"), std::string::npos) << f_.Violation();
    ga_cu_mem_handle_t h = MapNew(&b, true);
    unsigned char *pb = reinterpret_cast<unsigned char *>(b);
    EXPECT_EQ(pb[0], FAKE_GPU_GARBAGE);
    pb[FAKE_GPU_GARBAGE_RUN] = 0x77;
    EXPECT_EQ(cuMemExportToShareableHandle(&fd, h, GA_CU_MEM_HANDLE_TYPE_NONE, 0), GA_CUDA_ERROR_INVALID_VALUE);
    ASSERT_EQ(cuMemExportToShareableHandle(&fd, h, GA_CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0), GA_CUDA_SUCCESS);
    ASSERT_GE(fd, 0);
    uint64_t used = f_.Stats().device_used[0];
    ga_cu_mem_handle_t imported = 0;
    ASSERT_EQ(
        cuMemImportFromShareableHandle(&imported, (void *)(uintptr_t)fd, GA_CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
        GA_CUDA_SUCCESS);
    EXPECT_EQ(close(fd), 0) << "the caller's descriptor stays its own";
    EXPECT_EQ(f_.Stats().live_handles, 3u);
    EXPECT_EQ(f_.Stats().device_used[0], used) << "an import is charged nothing";
    MapAt(&c, imported);
    unsigned char *pc = reinterpret_cast<unsigned char *>(c);
    EXPECT_EQ(pc[0], FAKE_GPU_GARBAGE) << "the exporter's contents, not new garbage";
    EXPECT_EQ(pc[FAKE_GPU_GARBAGE_RUN], 0x77);
    pc[1] = 0x31;
    EXPECT_EQ(pb[1], 0x31) << "one memory, two handles";
    EXPECT_EQ(
        cuMemImportFromShareableHandle(&imported, (void *)(uintptr_t)-1, GA_CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
        GA_CUDA_ERROR_INVALID_VALUE);
    Unmap(c, imported);
    Unmap(b, h);
    Unmap(a, plain);
    EXPECT_EQ(f_.Stats().violations, 3u);
    Close();
    EXPECT_EQ(f_.Stats().leaks, 0u);
}

// Every new symbol enters through fault injection: an injected failure
// returns the code and changes nothing.
TEST_F(FakeIpc, FaultsReachEveryIpcCall)
{
    Open();
    ga_cu_deviceptr_t p = 0, b = 0, q = 0;
    ga_cu_ipc_mem_handle_t h;
    ASSERT_EQ(cuMemAlloc_v2(&p, 2 * kMiB), GA_CUDA_SUCCESS);
    ga_cu_mem_handle_t mh = MapNew(&b, true);
    for (const char *fn : {"cuIpcGetMemHandle", "cuIpcOpenMemHandle_v2", "cuIpcCloseMemHandle",
                           "cuMemExportToShareableHandle", "cuMemImportFromShareableHandle"})
        ASSERT_EQ(f_.fake_cuda_fail(fn, 1, 0, 999), 0);
    int fd = -1;
    ga_cu_mem_handle_t imported = 0;
    EXPECT_EQ(cuIpcGetMemHandle(&h, p), 999);
    EXPECT_EQ(cuIpcOpenMemHandle_v2(&q, h, 0), 999);
    EXPECT_EQ(cuIpcCloseMemHandle(q), 999);
    EXPECT_EQ(cuMemExportToShareableHandle(&fd, mh, GA_CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0), 999);
    EXPECT_EQ(fd, -1);
    EXPECT_EQ(
        cuMemImportFromShareableHandle(&imported, (void *)(uintptr_t)0, GA_CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
        999);
    EXPECT_EQ(f_.Stats().faults, 5u);
    EXPECT_EQ(f_.Stats().live_handles, 1u);
    Unmap(b, mh);
    EXPECT_EQ(cuMemFree_v2(p), GA_CUDA_SUCCESS);
    Close();
    EXPECT_EQ(f_.Stats().leaks, 0u);
    EXPECT_EQ(f_.Stats().violations, 0u) << f_.Violation();
}

} // namespace
