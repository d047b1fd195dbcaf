// cuda_fixture.h: what the GPU backends' tests share (cuda on the fake CUDA
// driver, hip on the fake HIP runtime; both fakes are one core): an allocator
// created through the public API ("device_backend:<vendor>,driver_path:<the
// fake in runfiles>"), shorthands for stats, and the fault-injection sweep.
// The hip-only tests derive HipTest (below), the tests both vendors share
// vendor_cases.h's VendorTest, and all reuse everything else unchanged: the
// result codes injected (2 = out of memory, 999 = unknown) are the same
// numbers in CUresult and hipError_t.
//
// The sweep runs a scripted workload once per driver call it makes: run N fails
// the Nth call (counted from the allocator's creation, destroy included) with a
// chosen result code, until a run completes with no fault injected. Every public
// call must then return OK, or a clean failure (GALLOC_E_OOM or
// GALLOC_E_DEVICE with a message) that succeeds when retried; galloc_check must
// pass after every call; at the end the stats must equal a recount (the test's
// own and the fake's), galloc must never have broken a driver contract, and
// after destroy the fake must count no leak. The "from" variant fails every
// call from the Nth on while the workload runs (not create or destroy), then
// clears the fault and checks the same.
#ifndef GA_TESTS_BACKEND_CUDA_FIXTURE_H
#define GA_TESTS_BACKEND_CUDA_FIXTURE_H

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

extern "C" {
#include <galloc/galloc.h>
}
#include "tests/fake_cuda/fake_cuda_util.h"

namespace cuda_test {

constexpr uint64_t kMiB = uint64_t{1} << 20, kGiB = uint64_t{1} << 30;
constexpr int ALL = GALLOC_STAT_ALL, SMALL = GALLOC_STAT_SMALL_POOL, LARGE = GALLOC_STAT_LARGE_POOL;
constexpr int kOutOfMemory = 2, kUnknown = 999; // CUresult and hipError_t values injected

// The config string selecting f's backend ("cuda" or "hip") on f's library.
inline std::string CudaConf(const FakeCuda &f, const std::string &extra = "")
{
    return "device_backend:" + f.vendor() + ",driver_path:" + f.path() + (extra.empty() ? "" : "," + extra);
}

inline std::string LastError(galloc_allocator_t *a)
{
    char msg[GALLOC_ERROR_MAX] = "";
    galloc_last_error(a, msg, sizeof msg);
    return msg;
}

inline galloc_stats_t Stats(galloc_allocator_t *a)
{
    galloc_stats_t st;
    st.struct_size = sizeof st;
    EXPECT_EQ(galloc_memory_stats(a, &st), GALLOC_OK);
    return st;
}

// An allocator on the fake driver; checked and destroyed by TearDown.
class CudaTest : public ::testing::Test {
  protected:
    explicit CudaTest(const std::string &lib = "libfake_cuda.so", const std::string &vendor = "cuda") : f_(lib, vendor)
    {}
    void SetUp() override { ASSERT_TRUE(f_.ok()) << f_.error(); }
    void TearDown() override
    {
        if (a_ != nullptr) {
            EXPECT_EQ(galloc_check(a_), GALLOC_OK) << LastError(a_);
            galloc_allocator_destroy(a_);
            a_ = nullptr;
            fake_gpu_stats_t s = f_.Stats();
            EXPECT_EQ(s.leaks, 0u) << "the fake driver counts leaks after destroy";
            EXPECT_EQ(s.violations, 0u) << f_.Violation();
        }
    }
    galloc_status_t Create(const std::string &extra = "", int device = 0)
    {
        char err[GALLOC_ERROR_MAX] = "";
        galloc_status_t st =
            galloc_allocator_create(nullptr, device, CudaConf(f_, extra).c_str(), &a_, err, sizeof err);
        err_ = err;
        return st;
    }
    void Make(const std::string &extra = "", int device = 0) { ASSERT_EQ(Create(extra, device), GALLOC_OK) << err_; }
    void *Alloc(size_t n, galloc_stream_t s = 0)
    {
        void *p = nullptr;
        EXPECT_EQ(galloc_malloc(a_, n, s, &p), GALLOC_OK) << LastError(a_);
        EXPECT_EQ(galloc_check(a_), GALLOC_OK) << LastError(a_);
        return p;
    }
    void Free(void *p)
    {
        EXPECT_EQ(galloc_free(a_, p), GALLOC_OK) << LastError(a_);
        EXPECT_EQ(galloc_check(a_), GALLOC_OK) << LastError(a_);
    }
    galloc_stats_t Stats() { return cuda_test::Stats(a_); }

    FakeCuda f_;
    galloc_allocator_t *a_ = nullptr;
    std::string err_;
};

// ---- The fault sweep. ----

// One run of a workload: the allocator, the live pointers and the sizes the
// test asked for (its own recount), and the step checker.
class Run {
  public:
    Run(galloc_allocator_t *a, bool retry) : a_(a), retry_(retry) {}
    galloc_allocator_t *a() { return a_; }

    // A public call: OK, or a clean failure retried once (nth mode).
    galloc_status_t Step(const std::string &what, const std::function<galloc_status_t()> &call)
    {
        galloc_status_t st = call();
        if (st != GALLOC_OK) {
            // GALLOC_E_NOMEM: pinned host memory refused (the host cache's pins).
            EXPECT_TRUE(st == GALLOC_E_OOM || st == GALLOC_E_DEVICE || st == GALLOC_E_NOMEM)
                << what << ": " << galloc_status_name(st);
            char msg[GALLOC_ERROR_MAX] = "";
            EXPECT_EQ(galloc_last_error(a_, msg, sizeof msg), st) << what;
            EXPECT_STRNE(msg, "") << what;
            failures_++;
            if (retry_) {
                st = call();
                EXPECT_EQ(st, GALLOC_OK) << what << ": the retry must succeed: " << msg;
            }
        }
        EXPECT_EQ(galloc_check(a_), GALLOC_OK) << what << ": " << LastError(a_);
        return st;
    }
    // Shorthands that keep the recount: slot i holds one live pointer or null.
    void Malloc(size_t i, size_t n, galloc_stream_t s = 0)
    {
        if (ptr_.size() <= i)
            ptr_.resize(i + 1), size_.resize(i + 1);
        void *p = nullptr;
        if (Step("malloc(" + std::to_string(n) + ")", [&] { return galloc_malloc(a_, n, s, &p); }) == GALLOC_OK) {
            ptr_[i] = p;
            size_[i] = n;
        }
    }
    void Free(size_t i)
    {
        if (i >= ptr_.size() || ptr_[i] == nullptr)
            return;
        if (Step("free", [&] { return galloc_free(a_, ptr_[i]); }) == GALLOC_OK)
            ptr_[i] = nullptr;
    }
    void RecordStream(size_t i, galloc_stream_t s)
    {
        if (i < ptr_.size() && ptr_[i] != nullptr)
            Step("record_stream", [&] { return galloc_record_stream(a_, ptr_[i], s); });
    }
    void EmptyCache()
    {
        Step("empty_cache", [&] { return galloc_empty_cache(a_); });
    }
    // Live pointers and the bytes the pool rounds them to (512-byte blocks).
    int64_t LiveCount() const
    {
        int64_t n = 0;
        for (void *p : ptr_)
            n += p != nullptr;
        return n;
    }
    int64_t LiveRounded() const
    {
        int64_t n = 0;
        for (size_t i = 0; i < ptr_.size(); i++)
            n += ptr_[i] != nullptr ? (int64_t)((size_[i] + 511) / 512 * 512) : 0;
        return n;
    }
    int failures() const { return failures_; }

  private:
    galloc_allocator_t *a_;
    bool retry_;
    int failures_ = 0;
    std::vector<void *> ptr_;
    std::vector<size_t> size_;
};

struct SweepResult {
    uint64_t runs = 0;        // workload runs with a fault injected
    uint64_t clean_calls = 0; // driver calls of the run without a fault
    uint64_t visible = 0;     // public calls that reported a failure
    uint64_t max_leaks = 0;   // the worst leak count after destroy (must be 0)
};

// Runs the workload under every single fault (nth mode) or every fault tail
// (from mode). `setup` configures the fake after each reset; `recount` checks
// the stats against the fake after the workload, faults cleared.
inline SweepResult Sweep(FakeCuda &f, const std::string &conf, int code, bool from_mode,
                         const std::function<void(FakeCuda &)> &setup, const std::function<void(Run &)> &workload,
                         const std::function<void(Run &, FakeCuda &)> &recount)
{
    SweepResult r;
    for (uint64_t n = 1; n < 100000; n++) {
        SCOPED_TRACE((from_mode ? "failing every call from #" : "failing call #") + std::to_string(n) +
                     " with result code " + std::to_string(code));
        f.fake_cuda_reset();
        setup(f);
        if (!from_mode)
            f.fake_cuda_fail("*", n, 0, code);
        galloc_allocator_t *a = nullptr;
        char err[GALLOC_ERROR_MAX] = "";
        galloc_status_t st = galloc_allocator_create(nullptr, 0, conf.c_str(), &a, err, sizeof err);
        if (st != GALLOC_OK) {
            EXPECT_FALSE(from_mode) << err;
            EXPECT_TRUE(st == GALLOC_E_UNAVAILABLE || st == GALLOC_E_UNSUPPORTED || st == GALLOC_E_DEVICE ||
                        st == GALLOC_E_OOM)
                << galloc_status_name(st) << ": " << err;
            EXPECT_STRNE(err, "");
            EXPECT_EQ(f.Stats().leaks, 0u) << "a failed create must release everything: " << err;
            r.visible++;
            st = galloc_allocator_create(nullptr, 0, conf.c_str(), &a, err, sizeof err);
            EXPECT_EQ(st, GALLOC_OK) << "the retry must succeed: " << err;
            if (st != GALLOC_OK)
                return r;
        }
        if (from_mode)
            f.fake_cuda_fail("*", 0, n, code);
        Run run(a, !from_mode);
        workload(run);
        r.visible += (uint64_t)run.failures();
        if (from_mode)
            f.fake_cuda_fail_clear();
        EXPECT_EQ(galloc_check(a), GALLOC_OK) << LastError(a);
        (void)Stats(a); /* may absorb the fault (async stats read the driver); the next read is exact */
        galloc_stats_t s = Stats(a);
        EXPECT_EQ(s.allocated_bytes[ALL].current, run.LiveRounded());
        recount(run, f);
        galloc_allocator_destroy(a);
        fake_gpu_stats_t fs = f.Stats();
        EXPECT_EQ(fs.leaks, 0u);
        EXPECT_EQ(fs.violations, 0u) << f.Violation();
        r.max_leaks = fs.leaks > r.max_leaks ? fs.leaks : r.max_leaks;
        if (fs.faults == 0) {
            r.clean_calls = fs.calls;
            break;
        }
        r.runs++;
        if (::testing::Test::HasFailure())
            break; // the first failing run is the one to read
    }
    return r;
}

// The same fixture on the fake HIP runtime and the "hip" backend.
class HipTest : public CudaTest {
  protected:
    HipTest() : CudaTest("libfake_hip.so", "hip") {}
};

} // namespace cuda_test

#endif // GA_TESTS_BACKEND_CUDA_FIXTURE_H
