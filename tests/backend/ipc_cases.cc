// ipc_cases: the GPU backends' sharing of device memory between processes
// (ipc_export / ipc_open / ipc_close for plain segments, export_page /
// import_pages for VMM pages) below the pool, on the fake drivers, written
// once over a Vendor (vendor_cases.h) and instantiated by cuda_ipc_test.cc and
// hip_ipc_test.cc.
//
// Two real processes: the test forks, and each side opens its own backend
// state on its own copy of the fake driver. The fake keeps device memory in
// memfds (tests/fake_cuda/fake_gpu.h, IPC), so bytes one process writes the
// other reads. After fork the child first resets its fake (a CUDA process
// cannot use its parent's context either), which unmaps the memory it
// inherited: what it reads afterwards can only come through the handle it was
// sent. Handles travel over a pipe and descriptors over a unix socket
// (SCM_RIGHTS), as torch.multiprocessing sends them. A child reports by its
// exit status (0, or the number of the check that failed) and leaves with
// _exit, running no destructor of the parent's objects.
//
// The sweeps fail the k-th driver call, k = 1, 2, ... until a run completes
// unfaulted: each failure is a clean status with a message, leaves no driver
// resource behind, and the retry succeeds; after close the fake counts no
// leak. (gpu_sweeps.h's sweeps drive the allocator, which has no IPC yet:
// these drive the backend's members directly.)
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "tests/backend/ipc_util.h"

namespace cuda_test {

#define OPEN(f, o)                                                                                                     \
    ASSERT_TRUE((f).ok()) << (f).error();                                                                              \
    Opened o(f, v().name);                                                                                             \
    ASSERT_EQ(o.status(), GALLOC_OK) << o.open_error()

// The whole exchange: the child sends a segment's handle and its pages'
// descriptors; the parent opens both, reads the child's bytes, writes its
// own, closes; the child sees them. Nothing leaks on either side.
TEST_P(Ipc, PlainSegmentAndPagesRoundTripBetweenProcesses)
{
    FakeCuda f(v().Fake(), v().name);
    ASSERT_TRUE(f.ok()) << f.error();
    int pipe_up[2], pipe_down[2], sock[2];
    ASSERT_EQ(pipe(pipe_up), 0);
    ASSERT_EQ(pipe(pipe_down), 0);
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sock), 0);
    pid_t child = Fork([&]() -> int {
        f.fake_cuda_reset();
        Opened o(f, v().name);
        Exported e;
        if (o.status() != GALLOC_OK)
            return 2;
        if (int rc = Export(o, e))
            return rc;
        if (!WriteAll(pipe_up[1], e.handle, sizeof e.handle) || !SendFds(sock[1], e.fds, kPages))
            return 3;
        char done = 0;
        if (!ReadAll(pipe_down[0], &done, 1)) // the parent has written and closed
            return 4;
        if (!AllBytes(e.seg, kSeg / 2, 0xa5) || !AllBytes(e.seg + kSeg / 2, kSeg / 2, 0x5a))
            return 5; // the parent's half, and ours untouched
        for (size_t i = 0; i < kPages; i++)
            if (!AllBytes(e.resv + i * kPage, kPage, (unsigned char)(0x80 + i)))
                return 6;
        if (int rc = Release(o, e))
            return rc;
        o.Close();
        return f.Stats().leaks == 0 && f.Stats().violations == 0 ? 0 : 7;
    });
    ASSERT_GT(child, 0);
    unsigned char handle[GALLOC_BACKEND_IPC_BYTES];
    int fds[kPages];
    ASSERT_TRUE(ReadAll(pipe_up[0], handle, sizeof handle)) << "child exit " << Wait(child);
    ASSERT_TRUE(RecvFds(sock[0], fds, kPages));
    {
        OPEN(f, o);
        uintptr_t seg = 0, pages = 0;
        ASSERT_EQ(ga_backend_ipc_open(o.b(), handle, kSeg, &seg), GALLOC_OK) << o.Error();
        EXPECT_TRUE(AllBytes(seg, kSeg, 0x5a)) << "the child's bytes";
        Fill(seg, kSeg / 2, 0xa5);
        ASSERT_EQ(ga_backend_import_pages(o.b(), fds, kPages, kPage, &pages), GALLOC_OK) << o.Error();
        for (size_t i = 0; i < kPages; i++) {
            EXPECT_TRUE(AllBytes(pages + i * kPage, kPage, (unsigned char)(0x10 + i))) << "page " << i;
            Fill(pages + i * kPage, kPage, (unsigned char)(0x80 + i));
            EXPECT_EQ(f.fake_cuda_access(pages + i * kPage, 0), 3) << "read-write for the device";
        }
        ASSERT_EQ(ga_backend_enable_peer_access(o.b(), 1), GALLOC_OK) << o.Error();
        for (size_t i = 0; i < kPages; i++)
            EXPECT_EQ(f.fake_cuda_access(pages + i * kPage, 1), 3) << "a peer enabled later reaches imported pages";
        fake_gpu_stats_t s = f.Stats();
        EXPECT_EQ(s.live_ipc_opens, 1u);
        EXPECT_EQ(s.live_handles, kPages);
        EXPECT_EQ(s.live_mappings, kPages);
        EXPECT_EQ(s.device_used[0], 0u) << "opened memory is the exporter's device's to pay";
        for (int fd : fds)
            close(fd); // the imported handles keep the memory
        EXPECT_EQ(ga_backend_ipc_close(o.b(), seg), GALLOC_OK) << o.Error();
        EXPECT_EQ(ga_backend_ipc_close(o.b(), pages), GALLOC_OK) << o.Error();
        s = f.Stats();
        EXPECT_EQ(s.live_ipc_opens + s.live_handles + s.live_mappings + s.live_reservations, 0u);
    }
    ASSERT_TRUE(WriteAll(pipe_down[1], "d", 1));
    EXPECT_EQ(Wait(child), 0) << "the child's checks (see the step numbers in ipc_cases.cc)";
    EXPECT_EQ(f.Stats().leaks, 0u);
    EXPECT_EQ(f.Stats().violations, 0u) << f.Violation();
    for (int fd : {pipe_up[0], pipe_up[1], pipe_down[0], pipe_down[1], sock[0], sock[1]})
        close(fd);
}

// What the caller leaves open, close releases: the child opens and imports
// and closes its backend without ipc_close.
TEST_P(Ipc, CloseReleasesWhatIsStillOpen)
{
    FakeCuda f(v().Fake(), v().name);
    OPEN(f, o);
    Exported e;
    ASSERT_EQ(Export(o, e), 0) << o.Error();
    pid_t child = Fork([&]() -> int {
        f.fake_cuda_reset(); // the fds in e are inherited: no socket needed here
        Opened c(f, v().name);
        uintptr_t seg = 0, pages = 0;
        if (c.status() != GALLOC_OK || ga_backend_ipc_open(c.b(), e.handle, kSeg, &seg) != GALLOC_OK ||
            ga_backend_import_pages(c.b(), e.fds, kPages, kPage, &pages) != GALLOC_OK)
            return 2;
        if (!AllBytes(seg, kSeg, 0x5a) || !AllBytes(pages, kPage, 0x10))
            return 3;
        if (f.Stats().live_ipc_opens != 1 || f.Stats().live_handles != kPages)
            return 4;
        c.Close();
        fake_gpu_stats_t s = f.Stats();
        return s.leaks == 0 && s.violations == 0 && s.live_ipc_opens == 0 ? 0 : 5;
    });
    EXPECT_EQ(Wait(child), 0);
    EXPECT_EQ(Release(o, e), 0) << o.Error();
    o.Close();
    EXPECT_EQ(f.Stats().leaks, 0u);
    EXPECT_EQ(f.Stats().violations, 0u) << f.Violation();
}

// The driver refuses a handle of the process's own: a device error, nothing recorded.
TEST_P(Ipc, OpeningOnesOwnHandleIsRefusedByTheDriver)
{
    FakeCuda f(v().Fake(), v().name);
    OPEN(f, o);
    Exported e;
    ASSERT_EQ(Export(o, e), 0) << o.Error();
    uintptr_t a = 0;
    EXPECT_EQ(ga_backend_ipc_open(o.b(), e.handle, kSeg, &a), GALLOC_E_DEVICE);
    EXPECT_NE(o.Error().find(std::string("ipc_open(3145728 bytes): ") + v().ipc_open + " failed: "), std::string::npos)
        << o.Error();
    EXPECT_EQ(f.Stats().live_ipc_opens, 0u);
    EXPECT_EQ(Release(o, e), 0) << o.Error();
    o.Close();
    EXPECT_EQ(f.Stats().leaks, 0u);
    EXPECT_EQ(f.Stats().violations, 0u) << f.Violation();
}

// HIP's runtime takes only its own header's lazy-peer-access flag, which
// changed in ROCm 6.0: the backend passes the loaded runtime's (the fake
// refuses any other as a violation); CUDA has one value.
TEST_P(Ipc, TheOpenFlagIsTheLoadedRuntimes)
{
    for (int version : {50200000, 60200000}) {
        SCOPED_TRACE(version);
        FakeCuda f(v().Fake(), v().name);
        ASSERT_TRUE(f.ok()) << f.error();
        if (std::string(v().name) == "hip")
            f.Sym<void (*)(int)>("fake_hip_set_version")(version);
        Opened o(f, v().name);
        ASSERT_EQ(o.status(), GALLOC_OK) << o.open_error();
        uintptr_t seg = 0, a = 0;
        unsigned char h[GALLOC_BACKEND_IPC_BYTES];
        ASSERT_EQ(ga_backend_segment_alloc(o.b(), kSeg, 0, &seg), GALLOC_OK) << o.Error();
        ASSERT_EQ(ga_backend_ipc_export(o.b(), seg, h), GALLOC_OK) << o.Error();
        EXPECT_EQ(ga_backend_ipc_open(o.b(), h, kSeg, &a), GALLOC_E_DEVICE) << "own handle: refused past the flag";
        EXPECT_EQ(f.Stats().violations, 0u) << f.Violation();
        EXPECT_EQ(ga_backend_segment_free(o.b(), seg, kSeg, 0), GALLOC_OK) << o.Error();
    }
}

// Addresses that are not what each member takes: GALLOC_E_INVAL with the call
// and the address in the message, and no driver call.
TEST_P(Ipc, UnknownAddressesAreRefused)
{
    FakeCuda f(v().Fake(), v().name);
    OPEN(f, o);
    Exported e;
    ASSERT_EQ(Export(o, e), 0) << o.Error();
    uint64_t calls = f.fake_cuda_calls("*");
    unsigned char h[GALLOC_BACKEND_IPC_BYTES];
    int fd = -1;
    char hex[32];
    std::snprintf(hex, sizeof hex, "%#lx", (unsigned long)(e.seg + 4096));
    EXPECT_EQ(ga_backend_ipc_export(o.b(), e.seg + 4096, h), GALLOC_E_INVAL);
    EXPECT_EQ(o.Error(), std::string("ipc_export(") + hex + "): not the base of a live segment from segment_alloc");
    EXPECT_EQ(ga_backend_ipc_export(o.b(), e.resv, h), GALLOC_E_INVAL) << "a VMM page is not a segment";
    EXPECT_EQ(ga_backend_export_page(o.b(), e.resv + 4096, &fd), GALLOC_E_INVAL);
    EXPECT_NE(o.Error().find("not the start of a live mapping"), std::string::npos) << o.Error();
    EXPECT_EQ(ga_backend_export_page(o.b(), e.seg, &fd), GALLOC_E_INVAL) << "a segment is not a page";
    EXPECT_EQ(ga_backend_ipc_close(o.b(), e.seg), GALLOC_E_INVAL);
    EXPECT_NE(o.Error().find("not an address ipc_open or import_pages returned"), std::string::npos) << o.Error();
    uintptr_t a = 0;
    EXPECT_EQ(ga_backend_import_pages(o.b(), e.fds, kPages, 4096, &a), GALLOC_E_INVAL) << "not whole pages";
    EXPECT_EQ(f.fake_cuda_calls("*"), calls) << "refused before any driver call";
    EXPECT_EQ(Release(o, e), 0) << o.Error();
    o.Close();
    EXPECT_EQ(f.Stats().leaks, 0u);
    EXPECT_EQ(f.Stats().violations, 0u) << f.Violation();
}

// A library without the IPC group: every member says which symbol is missing.
TEST_P(Ipc, ALibraryWithoutIpcIsUnsupported)
{
    FakeCuda f(v().Fake("_noipc"), v().name);
    OPEN(f, o);
    uintptr_t seg = 0, a = 0;
    unsigned char h[GALLOC_BACKEND_IPC_BYTES] = {};
    int fd = -1;
    ASSERT_EQ(ga_backend_segment_alloc(o.b(), kSeg, 0, &seg), GALLOC_OK) << o.Error();
    EXPECT_EQ(ga_backend_ipc_export(o.b(), seg, h), GALLOC_E_UNSUPPORTED);
    EXPECT_NE(o.Error().find(std::string("lacks ") + v().ipc_open), std::string::npos) << o.Error();
    EXPECT_EQ(ga_backend_ipc_open(o.b(), h, kSeg, &a), GALLOC_E_UNSUPPORTED);
    EXPECT_EQ(ga_backend_export_page(o.b(), seg, &fd), GALLOC_E_UNSUPPORTED);
    EXPECT_EQ(ga_backend_import_pages(o.b(), &fd, 1, kPage, &a), GALLOC_E_UNSUPPORTED);
    EXPECT_EQ(ga_backend_segment_free(o.b(), seg, kSeg, 0), GALLOC_OK) << o.Error();
    o.Close();
    EXPECT_EQ(f.Stats().leaks, 0u);
}

// Every driver call of the exporter's side failing in turn (nth mode): a
// clean status, nothing leaked, and the retry succeeds.
TEST_P(Ipc, FaultSweepOfTheExports)
{
    FakeCuda f(v().Fake(), v().name);
    ASSERT_TRUE(f.ok()) << f.error();
    uint64_t runs = 0;
    for (uint64_t n = 1; n < 1000; n++) {
        SCOPED_TRACE("failing call #" + std::to_string(n));
        f.fake_cuda_reset();
        Opened o(f, v().name);
        ASSERT_EQ(o.status(), GALLOC_OK) << o.open_error();
        Exported e;
        ASSERT_EQ(ga_backend_segment_alloc(o.b(), kSeg, 0, &e.seg), GALLOC_OK);
        ASSERT_EQ(ga_backend_va_reserve(o.b(), kPage, &e.resv), GALLOC_OK);
        ASSERT_EQ(ga_backend_map(o.b(), e.resv, kPage), GALLOC_OK);
        f.fake_cuda_fail("*", n, 0, kUnknown);
        auto step = [&](const char *what, const std::function<galloc_status_t()> &call) {
            galloc_status_t st = call();
            if (st != GALLOC_OK) {
                EXPECT_EQ(st, GALLOC_E_DEVICE) << what;
                EXPECT_NE(o.Error(), "") << what;
                EXPECT_EQ(call(), GALLOC_OK) << what << ": the retry: " << o.Error();
            }
        };
        step("ipc_export", [&] { return ga_backend_ipc_export(o.b(), e.seg, e.handle); });
        step("export_page", [&] { return ga_backend_export_page(o.b(), e.resv, &e.fds[0]); });
        uint64_t faults = f.Stats().faults;
        f.fake_cuda_fail_clear();
        EXPECT_GE(e.fds[0], 0);
        close(e.fds[0]);
        EXPECT_EQ(ga_backend_unmap(o.b(), e.resv, kPage), GALLOC_OK) << o.Error();
        EXPECT_EQ(ga_backend_va_release(o.b(), e.resv, kPage), GALLOC_OK) << o.Error();
        EXPECT_EQ(ga_backend_segment_free(o.b(), e.seg, kSeg, 0), GALLOC_OK) << o.Error();
        o.Close();
        EXPECT_EQ(f.Stats().leaks, 0u);
        EXPECT_EQ(f.Stats().violations, 0u) << f.Violation();
        if (faults == 0)
            break;
        runs++;
        if (::testing::Test::HasFailure())
            return;
    }
    EXPECT_GE(runs, 2u);
    std::printf("%s export sweep: %llu calls failed one at a time, 0 leaks\n", v().name, (unsigned long long)runs);
}

// Every driver call of the importer's side (open, import, both closes)
// failing in turn, against a live exporter process: each failure leaves no
// driver resource behind (a failed import undoes every step), the retry
// succeeds, and close leaves no leak; in the exporter either.
TEST_P(Ipc, FaultSweepOfOpenImportAndClose)
{
    FakeCuda f(v().Fake(), v().name);
    ASSERT_TRUE(f.ok()) << f.error();
    int pipe_up[2], pipe_down[2], sock[2];
    ASSERT_EQ(pipe(pipe_up), 0);
    ASSERT_EQ(pipe(pipe_down), 0);
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sock), 0);
    pid_t child = Fork([&]() -> int {
        f.fake_cuda_reset();
        Opened o(f, v().name);
        Exported e;
        if (o.status() != GALLOC_OK)
            return 2;
        if (int rc = Export(o, e))
            return rc;
        if (!WriteAll(pipe_up[1], e.handle, sizeof e.handle) || !SendFds(sock[1], e.fds, kPages))
            return 3;
        char done = 0;
        if (!ReadAll(pipe_down[0], &done, 1))
            return 4;
        if (int rc = Release(o, e))
            return rc;
        o.Close();
        return f.Stats().leaks == 0 && f.Stats().violations == 0 ? 0 : 7;
    });
    ASSERT_GT(child, 0);
    unsigned char handle[GALLOC_BACKEND_IPC_BYTES];
    int fds[kPages];
    ASSERT_TRUE(ReadAll(pipe_up[0], handle, sizeof handle)) << "child exit " << Wait(child);
    ASSERT_TRUE(RecvFds(sock[0], fds, kPages));
    uint64_t runs = 0, failures = 0;
    for (uint64_t n = 1; n < 1000; n++) {
        SCOPED_TRACE("failing call #" + std::to_string(n));
        f.fake_cuda_reset();
        Opened o(f, v().name);
        ASSERT_EQ(o.status(), GALLOC_OK) << o.open_error();
        f.fake_cuda_fail("*", n, 0, kUnknown);
        auto step = [&](const char *what, const std::function<galloc_status_t()> &call) {
            galloc_status_t st = call();
            if (st != GALLOC_OK) {
                failures++;
                EXPECT_EQ(st, GALLOC_E_DEVICE) << what;
                EXPECT_NE(o.Error(), "") << what;
                st = call();
                EXPECT_EQ(st, GALLOC_OK) << what << ": the retry: " << o.Error();
            }
            return st;
        };
        uintptr_t seg = 0, pages = 0;
        step("ipc_open", [&] { return ga_backend_ipc_open(o.b(), handle, kSeg, &seg); });
        fake_gpu_stats_t before = f.Stats();
        galloc_status_t st = ga_backend_import_pages(o.b(), fds, kPages, kPage, &pages);
        if (st != GALLOC_OK) {
            failures++;
            fake_gpu_stats_t after = f.Stats();
            EXPECT_EQ(after.live_handles, before.live_handles) << "a failed import leaves nothing: " << o.Error();
            EXPECT_EQ(after.live_mappings, before.live_mappings);
            EXPECT_EQ(after.live_reservations, before.live_reservations);
            EXPECT_EQ(ga_backend_import_pages(o.b(), fds, kPages, kPage, &pages), GALLOC_OK) << o.Error();
        }
        EXPECT_TRUE(AllBytes(seg, kSeg, 0x5a));
        EXPECT_TRUE(AllBytes(pages + kPage, kPage, 0x11));
        step("ipc_close(segment)", [&] { return ga_backend_ipc_close(o.b(), seg); });
        step("ipc_close(pages)", [&] { return ga_backend_ipc_close(o.b(), pages); });
        uint64_t faults = f.Stats().faults;
        f.fake_cuda_fail_clear();
        o.Close();
        EXPECT_EQ(f.Stats().leaks, 0u);
        EXPECT_EQ(f.Stats().violations, 0u) << f.Violation();
        if (faults == 0)
            break;
        runs++;
        if (::testing::Test::HasFailure())
            break;
    }
    EXPECT_GE(runs, 10u) << "open, reserve, three imports, maps and accesses, unmaps, releases, closes";
    EXPECT_GE(failures, 5u);
    std::printf("%s open/import/close sweep: %llu calls failed one at a time, %llu failures seen, 0 leaks\n", v().name,
                (unsigned long long)runs, (unsigned long long)failures);
    // Every call from the Nth on failing (the driver dies): undos fail too,
    // and what they leave (a dead import, an open mapping) close releases.
    uint64_t from_runs = 0;
    for (uint64_t n = 1; n < 1000 && !::testing::Test::HasFailure(); n++, from_runs++) {
        SCOPED_TRACE("failing every call from #" + std::to_string(n));
        f.fake_cuda_reset();
        Opened o(f, v().name);
        ASSERT_EQ(o.status(), GALLOC_OK) << o.open_error();
        f.fake_cuda_fail("*", 0, n, kUnknown);
        uintptr_t seg = 0, pages = 0;
        bool opened = ga_backend_ipc_open(o.b(), handle, kSeg, &seg) == GALLOC_OK;
        bool imported = ga_backend_import_pages(o.b(), fds, kPages, kPage, &pages) == GALLOC_OK;
        bool closed = (!opened || ga_backend_ipc_close(o.b(), seg) == GALLOC_OK) &&
                      (!imported || ga_backend_ipc_close(o.b(), pages) == GALLOC_OK);
        f.fake_cuda_fail_clear();
        o.Close();
        EXPECT_EQ(f.Stats().leaks, 0u);
        EXPECT_EQ(f.Stats().violations, 0u) << f.Violation();
        if (opened && imported && closed && f.Stats().faults == 0)
            break;
    }
    EXPECT_GE(from_runs, 10u);
    std::printf("%s open/import/close sweep, every call from the Nth on: %llu runs, 0 leaks\n", v().name,
                (unsigned long long)from_runs);
    for (int fd : fds)
        close(fd);
    ASSERT_TRUE(WriteAll(pipe_down[1], "d", 1));
    EXPECT_EQ(Wait(child), 0) << "the exporter's checks";
    for (int fd : {pipe_up[0], pipe_up[1], pipe_down[0], pipe_down[1], sock[0], sock[1]})
        close(fd);
}

} // namespace cuda_test
