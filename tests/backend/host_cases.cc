// host_cases: the GPU backends' pinned host memory and copies (host_alloc,
// host_free, copy_d2h, copy_h2d: galloc_sleep's offload and the host cache)
// and registered host memory (host_register, host_unregister: the host
// cache's pinned_use_cuda_host_register path) on the fake drivers, below the
// pool: every failure's status and exact message, what stays recorded after
// a refused free, what close releases, and libraries without the HOST or
// HOSTREG symbol group. Written once over a Vendor (vendor_cases.h) and
// instantiated by cuda_host_test.cc and hip_host_test.cc. The byte-exact round
// trips are the conformance suite's (conformance.cc, run by malloc_cases.cc).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

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

} // namespace

TEST_P(Host, ARefusedPinnedAllocationIsNoMemoryOrADeviceError)
{
    FakeCuda f(v().Fake(), v().name);
    OPEN(f, o);
    ASSERT_EQ(f.fake_cuda_fail(v().host_alloc, 1, 0, kOutOfMemory), 0);
    ASSERT_EQ(f.fake_cuda_fail(v().host_alloc, 2, 0, kUnknown), 0);
    void *h = reinterpret_cast<void *>(1);
    EXPECT_EQ(ga_backend_host_alloc(o.b(), 4096, &h), GALLOC_E_NOMEM) << "host memory ran out, not the device's";
    EXPECT_EQ(h, nullptr);
    const std::string what = "host_alloc(4096 bytes of pinned host memory): ";
    EXPECT_EQ(o.Error(), what + DriverWords(v().host_alloc, kOutOfMemory, v()));
    EXPECT_EQ(ga_backend_host_alloc(o.b(), 4096, &h), GALLOC_E_DEVICE);
    EXPECT_EQ(o.Error(), what + DriverWords(v().host_alloc, kUnknown, v()));
    EXPECT_EQ(f.Stats().live_host_blocks, 0u);
    ASSERT_EQ(ga_backend_host_alloc(o.b(), 4096, &h), GALLOC_OK) << o.Error();
    EXPECT_EQ(f.Stats().live_host_bytes, 4096u);
    EXPECT_EQ(ga_backend_host_free(o.b(), h, 4096), GALLOC_OK) << o.Error();
    EXPECT_EQ(f.Stats().live_host_blocks, 0u);
    EXPECT_EQ(f.Stats().live_host_bytes, 0u);
}

TEST_P(Host, AFailedCopyIsADeviceErrorNeverAnOom)
{
    FakeCuda f(v().Fake(), v().name);
    OPEN(f, o);
    void *h = nullptr;
    uintptr_t d = 0;
    ASSERT_EQ(ga_backend_host_alloc(o.b(), 8192, &h), GALLOC_OK) << o.Error();
    ASSERT_EQ(ga_backend_segment_alloc(o.b(), 2 * kMiB, 0, &d), GALLOC_OK) << o.Error();
    std::memset(h, 0x3e, 8192);
    // An out-of-memory answer to a copy must not make the pool free cache and retry.
    ASSERT_EQ(f.fake_cuda_fail(v().copy_h2d, 1, 0, kOutOfMemory), 0);
    ASSERT_EQ(f.fake_cuda_fail(v().copy_d2h, 1, 0, kUnknown), 0);
    EXPECT_EQ(ga_backend_copy_h2d(o.b(), d, h, 8192), GALLOC_E_DEVICE);
    char at[64];
    snprintf(at, sizeof at, "%#lx", (unsigned long)d);
    EXPECT_EQ(o.Error(), "copy_h2d(8192 bytes to device 0 at " + std::string(at) +
                             "): " + DriverWords(v().copy_h2d, kOutOfMemory, v()));
    EXPECT_EQ(reinterpret_cast<unsigned char *>(d)[0], 0) << "the failed copy wrote nothing";
    ASSERT_EQ(ga_backend_copy_h2d(o.b(), d, h, 8192), GALLOC_OK) << o.Error();
    std::memset(h, 0, 8192);
    EXPECT_EQ(ga_backend_copy_d2h(o.b(), h, d + 100, 4000), GALLOC_E_DEVICE);
    EXPECT_EQ(o.Error(), "copy_d2h(4000 bytes from device 0 at " +
                             (snprintf(at, sizeof at, "%#lx", (unsigned long)(d + 100)), std::string(at)) +
                             "): " + DriverWords(v().copy_d2h, kUnknown, v()));
    EXPECT_EQ(static_cast<unsigned char *>(h)[0], 0);
    ASSERT_EQ(ga_backend_copy_d2h(o.b(), h, d + 100, 4000), GALLOC_OK) << o.Error();
    EXPECT_EQ(static_cast<unsigned char *>(h)[3999], 0x3e);
    EXPECT_EQ(f.Stats().copied_h2d_bytes, 8192u);
    EXPECT_EQ(f.Stats().copied_d2h_bytes, 4000u);
    // Nothing to copy: no driver call.
    uint64_t calls = f.fake_cuda_calls(v().copy_d2h);
    EXPECT_EQ(ga_backend_copy_d2h(o.b(), h, d, 0), GALLOC_OK);
    EXPECT_EQ(f.fake_cuda_calls(v().copy_d2h), calls);
    EXPECT_EQ(ga_backend_segment_free(o.b(), d, 2 * kMiB, 0), GALLOC_OK);
    EXPECT_EQ(ga_backend_host_free(o.b(), h, 8192), GALLOC_OK);
    EXPECT_EQ(f.Stats().violations, 0u) << f.Violation();
}

TEST_P(Host, ARefusedFreeKeepsTheBlockAndCloseFreesWhatIsLeft)
{
    FakeCuda f(v().Fake(), v().name);
    {
        OPEN(f, o);
        void *h = nullptr, *k = nullptr;
        ASSERT_EQ(ga_backend_host_alloc(o.b(), 100, &h), GALLOC_OK) << o.Error();
        ASSERT_EQ(ga_backend_host_alloc(o.b(), 200, &k), GALLOC_OK) << o.Error();
        ASSERT_EQ(f.fake_cuda_fail(v().host_free, 1, 0, kUnknown), 0);
        EXPECT_EQ(ga_backend_host_free(o.b(), h, 100), GALLOC_E_DEVICE);
        char hp[32];
        snprintf(hp, sizeof hp, "%p", h);
        EXPECT_EQ(o.Error(), "host_free(" + std::string(hp) + ", 100): " + DriverWords(v().host_free, kUnknown, v()));
        EXPECT_EQ(f.Stats().live_host_blocks, 2u);
        EXPECT_EQ(ga_backend_host_free(o.b(), h, 100), GALLOC_OK) << "still recorded: the retry frees it";
        // Refused before the driver: a size that is not the block's, a foreign pointer.
        uint64_t calls = f.fake_cuda_calls(v().host_free);
        EXPECT_EQ(ga_backend_host_free(o.b(), k, 100), GALLOC_E_INVAL);
        int local = 0;
        EXPECT_EQ(ga_backend_host_free(o.b(), &local, 4), GALLOC_E_INVAL);
        EXPECT_EQ(f.fake_cuda_calls(v().host_free), calls);
        // k is left to close, whose first try the driver refuses: the second frees it.
        ASSERT_EQ(f.fake_cuda_fail(v().host_free, 1, 0, kUnknown), 0);
    }
    fake_gpu_stats_t s = f.Stats();
    EXPECT_EQ(s.live_host_blocks, 0u);
    EXPECT_EQ(s.leaks, 0u);
    EXPECT_EQ(s.violations, 0u) << f.Violation();
}

TEST_P(Host, ALibraryWithoutTheHostGroupIsUnsupportedAndNamesTheSymbol)
{
    FakeCuda f(v().Fake("_nohost"), v().name);
    OPEN(f, o);
    EXPECT_TRUE(ga_backend_can_offload(o.b())) << "the table has the ops; the library decides";
    void *h = nullptr;
    const std::string lacks = std::string(": pinned host memory and copies are unavailable: the ") + v().name +
                              " driver library lacks " + v().host_alloc;
    EXPECT_EQ(ga_backend_host_alloc(o.b(), 4096, &h), GALLOC_E_UNSUPPORTED);
    EXPECT_EQ(o.Error(), "host_alloc" + lacks);
    char buf[16];
    EXPECT_EQ(ga_backend_copy_d2h(o.b(), buf, 0x1000, sizeof buf), GALLOC_E_UNSUPPORTED);
    EXPECT_EQ(o.Error(), "copy_d2h" + lacks);
    // Everything else works.
    uintptr_t d = 0;
    EXPECT_EQ(ga_backend_segment_alloc(o.b(), 2 * kMiB, 0, &d), GALLOC_OK) << o.Error();
    EXPECT_EQ(ga_backend_segment_free(o.b(), d, 2 * kMiB, 0), GALLOC_OK);
    EXPECT_EQ(f.fake_cuda_calls(v().host_alloc), 0u);
}

TEST_P(Host, RegisteredRangesAreCheckedRecordedAndReleasedAtClose)
{
    FakeCuda f(v().Fake(), v().name);
    std::vector<char> mem(64 * 1024);
    {
        OPEN(f, o);
        ASSERT_EQ(ga_backend_host_register(o.b(), mem.data(), 32768), GALLOC_OK) << o.Error();
        EXPECT_EQ(f.Stats().live_host_registered, 1u);
        EXPECT_EQ(f.Stats().live_registered_bytes, 32768u);
        // An overlap, an empty range and a NULL pointer are refused before the driver.
        uint64_t calls = f.fake_cuda_calls(v().host_register);
        EXPECT_EQ(ga_backend_host_register(o.b(), mem.data() + 4096, 4096), GALLOC_E_INVAL);
        char at[32];
        snprintf(at, sizeof at, "%p", static_cast<void *>(mem.data() + 4096));
        EXPECT_EQ(o.Error().rfind("host_register(" + std::string(at) + ", 4096 bytes): overlaps the registered ", 0),
                  0u)
            << o.Error();
        EXPECT_EQ(ga_backend_host_register(o.b(), mem.data() + 32768, 0), GALLOC_E_INVAL);
        EXPECT_EQ(ga_backend_host_register(o.b(), nullptr, 4096), GALLOC_E_INVAL);
        EXPECT_EQ(f.fake_cuda_calls(v().host_register), calls);
        // Refused by the driver: out of memory is the host's (NOMEM), anything else the driver's.
        ASSERT_EQ(f.fake_cuda_fail(v().host_register, 1, 0, kOutOfMemory), 0);
        ASSERT_EQ(f.fake_cuda_fail(v().host_register, 2, 0, kUnknown), 0);
        char *second = mem.data() + 32768;
        EXPECT_EQ(ga_backend_host_register(o.b(), second, 8192), GALLOC_E_NOMEM);
        snprintf(at, sizeof at, "%p", static_cast<void *>(second));
        const std::string what = "host_register(" + std::string(at) + ", 8192 bytes of host memory): ";
        EXPECT_EQ(o.Error(), what + DriverWords(v().host_register, kOutOfMemory, v()));
        EXPECT_EQ(ga_backend_host_register(o.b(), second, 8192), GALLOC_E_DEVICE);
        EXPECT_EQ(o.Error(), what + DriverWords(v().host_register, kUnknown, v()));
        EXPECT_EQ(f.Stats().live_host_registered, 1u) << "a refused register records nothing";
        ASSERT_EQ(ga_backend_host_register(o.b(), second, 8192), GALLOC_OK) << o.Error();
        // Unregister: only a live range with its size; a refusal keeps it recorded.
        calls = f.fake_cuda_calls(v().host_unregister);
        EXPECT_EQ(ga_backend_host_unregister(o.b(), second, 4096), GALLOC_E_INVAL);
        EXPECT_EQ(ga_backend_host_unregister(o.b(), second + 4096, 4096), GALLOC_E_INVAL);
        EXPECT_EQ(f.fake_cuda_calls(v().host_unregister), calls);
        ASSERT_EQ(f.fake_cuda_fail(v().host_unregister, 1, 0, kUnknown), 0);
        EXPECT_EQ(ga_backend_host_unregister(o.b(), second, 8192), GALLOC_E_DEVICE);
        snprintf(at, sizeof at, "%p", static_cast<void *>(second));
        EXPECT_EQ(o.Error(),
                  "host_unregister(" + std::string(at) + ", 8192): " + DriverWords(v().host_unregister, kUnknown, v()));
        EXPECT_EQ(f.Stats().live_host_registered, 2u);
        EXPECT_EQ(ga_backend_host_unregister(o.b(), second, 8192), GALLOC_OK) << "the retry unregisters it";
        EXPECT_EQ(f.Stats().live_host_registered, 1u);
        // The first range is left to close, whose first try the driver refuses: the second releases it.
        ASSERT_EQ(f.fake_cuda_fail(v().host_unregister, 1, 0, kUnknown), 0);
    }
    fake_gpu_stats_t s = f.Stats();
    EXPECT_EQ(s.live_host_registered, 0u);
    EXPECT_EQ(s.peak_registered_bytes, 32768u + 8192u);
    EXPECT_EQ(s.leaks, 0u);
    EXPECT_EQ(s.violations, 0u) << f.Violation();
}

TEST_P(Host, ALibraryWithoutTheRegisterGroupIsUnsupportedAndNamesTheSymbol)
{
    FakeCuda f(v().Fake("_nohostreg"), v().name);
    OPEN(f, o);
    EXPECT_TRUE(ga_backend_has_host_register(o.b())) << "the table has the ops; the library decides";
    std::vector<char> mem(8192);
    EXPECT_EQ(ga_backend_host_register(o.b(), mem.data(), mem.size()), GALLOC_E_UNSUPPORTED);
    EXPECT_EQ(o.Error(), std::string("host_register: registering host memory is unavailable: the ") + v().name +
                             " driver library lacks " + v().host_register);
    // The pinned allocations of the HOST group still work.
    void *h = nullptr;
    ASSERT_EQ(ga_backend_host_alloc(o.b(), 4096, &h), GALLOC_OK) << o.Error();
    EXPECT_EQ(ga_backend_host_free(o.b(), h, 4096), GALLOC_OK);
    EXPECT_EQ(f.fake_cuda_calls(v().host_unregister), 0u);
}

} // namespace cuda_test
