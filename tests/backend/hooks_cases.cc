// hooks_cases: device-memory hooks (api/galloc_hooks.h) on the "cuda" and
// "hip" backends through the public API, on the strict fake drivers, written
// once over a Vendor (vendor_cases.h) and instantiated by cuda_hooks_test.cc
// and hip_hooks_test.cc.
//
// What the sim suite (tests/api/hooks_test.cc) shows against galloc's own
// figures, these show against the driver's books: every ALLOC is a
// cuMemAlloc / hipMalloc the driver made (its address, its size), every MAP
// one page the driver mapped (cuMemCreate + cuMemMap), every FREE and UNMAP
// one the driver then released; the hook's ledger (hook_ledger.h) equals the
// bytes the driver holds for the allocator after every call; a refused free
// or unmap is told back; a refused addition leaves the driver with nothing.
// The sweeps run the GPU layers' fault sweeps (gpu_sweeps.h) with a hook
// registered, then fail the hook's own events one at a time.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "tests/backend/gpu_sweeps.h"
#include "tests/backend/vendor_cases.h"
#include "tests/util/hook_ledger.h"

extern "C" {
#include <galloc/galloc_hooks.h>
#include <galloc/galloc_sleep.h>
}

namespace cuda_test {

using hook_test::Describe;
using hook_test::Ledger;

namespace {

// The bytes the driver holds for the allocator: linear allocations and mappings.
uint64_t DriverBytes(FakeCuda &f)
{
    fake_gpu_stats_t s = f.Stats();
    return s.live_segment_bytes + s.live_mapped_bytes;
}

} // namespace

// The ledger against galloc and the driver.
void Hooks::Balanced(Ledger &l, const std::string &where)
{
    EXPECT_EQ(galloc_check(a_), GALLOC_OK) << where << ": " << LastError(a_);
    int64_t reserved = Stats().reserved_bytes[ALL].current;
    EXPECT_EQ(l.Bytes(), reserved) << where;
    EXPECT_EQ((uint64_t)l.Bytes(), DriverBytes(f_)) << where;
    EXPECT_EQ(l.errors(), "") << where;
}

TEST_P(Hooks, EverySegmentIsADriverAllocation)
{
    Make();
    Ledger l;
    ASSERT_EQ(l.Add(a_), GALLOC_OK);
    uint64_t allocs = f_.fake_cuda_calls(v().mem_alloc);
    void *small = Alloc(1), *mid = Alloc(5 * kMiB), *big = Alloc(30 * kMiB);
    Balanced(l, "three segments");
    auto added = l.Of(GALLOC_HOOK_SEGMENT_ALLOC);
    ASSERT_EQ(added.size(), 3u);
    EXPECT_EQ(f_.fake_cuda_calls(v().mem_alloc) - allocs, 3u);
    EXPECT_EQ(added[0].addr, (uintptr_t)small);
    EXPECT_EQ(added[0].size, 2 * kMiB);
    EXPECT_EQ(added[1].addr, (uintptr_t)mid);
    EXPECT_EQ(added[1].size, 20 * kMiB);
    EXPECT_EQ(added[2].addr, (uintptr_t)big);
    EXPECT_EQ(added[2].size, 30 * kMiB);
    Free(small);
    Free(mid);
    Free(big);
    uint64_t frees = f_.fake_cuda_calls(v().mem_free);
    ASSERT_EQ(galloc_empty_cache(a_), GALLOC_OK) << LastError(a_);
    EXPECT_EQ(f_.fake_cuda_calls(v().mem_free) - frees, 3u);
    EXPECT_EQ(l.Of(GALLOC_HOOK_SEGMENT_FREE).size(), 3u);
    Balanced(l, "empty");
    EXPECT_EQ(l.Ranges(), 0u);
}

TEST_P(Hooks, EveryPageIsADriverMapping)
{
    Make("expandable_segments:True");
    Ledger l;
    ASSERT_EQ(l.Add(a_), GALLOC_OK);
    char *a = static_cast<char *>(Alloc(5 * kMiB));
    char *b = static_cast<char *>(Alloc(75 * kMiB)); // 15 MiB left + 3 pages in one mapping
    Balanced(l, "grown");
    auto maps = l.Of(GALLOC_HOOK_SEGMENT_MAP);
    ASSERT_EQ(maps.size(), 4u);
    EXPECT_EQ(f_.fake_cuda_calls(v().mem_map), 4u) << "one MAP per driver mapping";
    EXPECT_EQ(f_.fake_cuda_calls(v().mem_create), 4u);
    for (size_t i = 0; i < maps.size(); i++) {
        EXPECT_EQ(maps[i].addr, (uintptr_t)(a + i * 20 * kMiB)) << Describe(maps[i]);
        EXPECT_EQ(maps[i].size, 20 * kMiB);
    }
    std::memset(b, 0x5c, 75 * kMiB); // the pages told are mapped read-write
    Free(b);
    ASSERT_EQ(galloc_empty_cache(a_), GALLOC_OK) << LastError(a_);
    EXPECT_EQ(l.Of(GALLOC_HOOK_SEGMENT_UNMAP).size(), 3u);
    EXPECT_EQ(f_.fake_cuda_calls(v().mem_unmap), 3u) << "one UNMAP per driver unmapping";
    Balanced(l, "shrunk");
    Free(a);
}

TEST_P(Hooks, SleepAndWakeAreTheDriversUnmapsAndMaps)
{
    for (const char *conf : {"", "expandable_segments:True"}) {
        SCOPED_TRACE(conf);
        Make(conf);
        Ledger l;
        ASSERT_EQ(l.Add(a_), GALLOC_OK);
        ASSERT_EQ(galloc_tag_begin(a_, "w"), GALLOC_OK);
        void *w = Alloc(25 * kMiB);
        ASSERT_EQ(galloc_tag_end(a_, "w"), GALLOC_OK);
        Balanced(l, "tagged");
        size_t units = l.events().size();
        uint64_t unmaps = f_.fake_cuda_calls(v().mem_unmap), maps = f_.fake_cuda_calls(v().mem_map);
        ASSERT_EQ(galloc_sleep(a_, "w", nullptr), GALLOC_OK) << LastError(a_);
        Balanced(l, "asleep");
        EXPECT_EQ(l.Of(GALLOC_HOOK_SEGMENT_UNMAP).size(), units);
        EXPECT_EQ(f_.fake_cuda_calls(v().mem_unmap) - unmaps, units);
        ASSERT_EQ(galloc_wake(a_, "w"), GALLOC_OK) << LastError(a_);
        Balanced(l, "awake");
        // Expandable: the tag's pages were MAPs already; plain: its segment was an ALLOC.
        EXPECT_EQ(l.Of(GALLOC_HOOK_SEGMENT_MAP).size(), conf[0] ? 2 * units : units);
        EXPECT_EQ(f_.fake_cuda_calls(v().mem_map) - maps, units);
        Free(w);
        TearDown(); // destroy: the ledger told away, the driver clean
        l.Forget();
        EXPECT_EQ(l.Bytes(), 0);
        EXPECT_EQ(l.errors(), "");
    }
}

TEST_P(Hooks, ADriverRefusingAnUnmapOrFreeIsToldBack)
{
    for (const char *conf : {"", "expandable_segments:True"}) {
        SCOPED_TRACE(conf);
        Make(conf);
        Ledger l;
        ASSERT_EQ(l.Add(a_), GALLOC_OK);
        Free(Alloc(50 * kMiB));
        const char *fn = conf[0] ? v().mem_unmap : v().mem_free;
        ASSERT_EQ(f_.fake_cuda_fail(fn, 1, 0, kUnknown), 0);
        size_t before = l.events().size();
        EXPECT_EQ(galloc_empty_cache(a_), GALLOC_E_DEVICE);
        f_.fake_cuda_fail_clear();
        Balanced(l, "refused");
        ASSERT_GE(l.events().size(), before + 2);
        const galloc_hook_event_t &back = l.events()[before + 1];
        EXPECT_EQ(back.flags, GALLOC_HOOK_F_RESTORED) << Describe(back);
        EXPECT_EQ(back.addr, l.events()[before].addr);
        ASSERT_EQ(galloc_empty_cache(a_), GALLOC_OK) << LastError(a_);
        Balanced(l, "released");
        EXPECT_EQ(l.Ranges(), 0u);
        TearDown();
        l.Forget();
    }
}

TEST_P(Hooks, ARefusedAdditionLeavesTheDriverWithNothing)
{
    for (const char *conf : {"", "expandable_segments:True"}) {
        SCOPED_TRACE(conf);
        Make(conf);
        Ledger l;
        ASSERT_EQ(l.Add(a_), GALLOC_OK);
        l.RefuseAll(true);
        void *p = nullptr;
        EXPECT_EQ(galloc_malloc(a_, 50 * kMiB, 0, &p), GALLOC_E_HOOK);
        EXPECT_EQ(p, nullptr);
        EXPECT_EQ(DriverBytes(f_), 0u);
        EXPECT_EQ(f_.Stats().live_handles, 0u);
        EXPECT_EQ(f_.Stats().violations, 0u) << f_.Violation();
        Balanced(l, "refused");
        galloc_stats_t st = Stats();
        EXPECT_EQ(st.num_device_alloc + st.num_device_free + st.num_ooms + st.num_alloc_retries, 0);
        l.RefuseAll(false);
        Free(Alloc(50 * kMiB));
        Balanced(l, "accepted");
        TearDown();
        l.Forget();
    }
}

// The GPU layers' driver fault sweeps (gpu_sweeps.h) with a hook registered:
// after each run's workload the ledger equals reserved_bytes, after destroy
// it is empty, and it never saw a removal of a range it was not told of.
TEST_P(HooksSweep, DriverFaultsKeepTheLedgerExact)
{
    for (Layer layer : {Layer::kNative, Layer::kExpandable}) {
        for (bool from : {false, true}) {
            SCOPED_TRACE(std::string(LayerName(layer)) + (from ? " from the nth on" : " once"));
            FakeCuda f(v().Fake(), v().name);
            ASSERT_TRUE(f.ok()) << f.error();
            std::vector<std::unique_ptr<Ledger>> ledgers;
            uintptr_t s1 = 0;
            std::string extra = layer == Layer::kExpandable ? "expandable_segments:True" : "";
            auto setup = [&](FakeCuda &fc) {
                if (layer == Layer::kExpandable) {
                    EXPECT_EQ(fc.fake_cuda_configure(2, 4 * kGiB, 2 * kMiB), 0);
                }
                EXPECT_EQ(fc.fake_cuda_stream_create(0, &s1), 0);
            };
            auto workload = [&](cuda_test::Run &r) {
                ledgers.emplace_back(new Ledger());
                ASSERT_EQ(ledgers.back()->Add(r.a()), GALLOC_OK);
                if (layer == Layer::kNative)
                    NativeWorkload(r, s1);
                else
                    ExpandableWorkload(r, s1);
            };
            auto recount = [&](cuda_test::Run &r, FakeCuda &) {
                EXPECT_EQ(ledgers.back()->Bytes(), Stats(r.a()).reserved_bytes[ALL].current);
                EXPECT_EQ(ledgers.back()->errors(), "");
            };
            SweepResult res = Sweep(f, CudaConf(f, extra), kUnknown, from, setup, workload, recount);
            EXPECT_GT(res.runs, 10u);
            EXPECT_EQ(res.max_leaks, 0u);
            for (const auto &l : ledgers) {
                l->Forget(); // Sweep destroyed its allocator
                EXPECT_EQ(l->Bytes(), 0) << "destroy tells every range away";
                EXPECT_EQ(l->errors(), "");
            }
        }
    }
}

// The hook fails its n-th event, n = 1, 2, ... (once, then from the n-th on):
// a refused call fails with GALLOC_E_HOOK and changes no current figure, the
// ledger equals the driver's bytes after every call, and after destroy the
// driver counts no leak and no broken contract.
TEST_P(HooksSweep, EveryHookEventFailing)
{
    for (const char *conf : {"", "expandable_segments:True"}) {
        for (bool from : {false, true}) {
            uint64_t runs = 0, refused = 0;
            for (uint64_t n = 1; n < 500; n++) {
                SCOPED_TRACE(std::string(conf) + (from ? " failing from event #" : " failing event #") +
                             std::to_string(n));
                FakeCuda f(v().Fake(), v().name);
                ASSERT_TRUE(f.ok()) << f.error();
                galloc_allocator_t *a = nullptr;
                char err[GALLOC_ERROR_MAX] = "";
                ASSERT_EQ(galloc_allocator_create(nullptr, 0, CudaConf(f, conf).c_str(), &a, err, sizeof err),
                          GALLOC_OK)
                    << err;
                Ledger l;
                ASSERT_EQ(l.Add(a), GALLOC_OK);
                if (from)
                    l.RefuseFrom(n);
                else
                    l.RefuseAt(n);
                std::vector<void *> live;
                auto step = [&](const char *what, galloc_status_t st) {
                    EXPECT_TRUE(st == GALLOC_OK || st == GALLOC_E_HOOK) << what << ": " << LastError(a);
                    refused += st == GALLOC_E_HOOK;
                    EXPECT_EQ(galloc_check(a), GALLOC_OK) << what << ": " << LastError(a);
                    EXPECT_EQ(l.Bytes(), Stats(a).reserved_bytes[ALL].current) << what;
                    EXPECT_EQ((uint64_t)l.Bytes(), DriverBytes(f)) << what;
                };
                for (size_t size : {size_t{1}, 5 * kMiB, 30 * kMiB, 70 * kMiB, 3 * kMiB}) {
                    void *p = nullptr;
                    int64_t reserved = Stats(a).reserved_bytes[ALL].current;
                    galloc_status_t st = galloc_malloc(a, size, 0, &p);
                    if (st == GALLOC_E_HOOK) {
                        EXPECT_EQ(Stats(a).reserved_bytes[ALL].current, reserved);
                    }
                    step("malloc", st);
                    if (p != nullptr)
                        live.push_back(p);
                }
                if (live.size() > 2) {
                    step("free", galloc_free(a, live[1]));
                    live.erase(live.begin() + 1);
                }
                step("empty_cache", galloc_empty_cache(a));
                for (void *p : live)
                    step("free", galloc_free(a, p));
                step("empty_cache", galloc_empty_cache(a));
                bool reached = l.told() >= n;
                galloc_allocator_destroy(a);
                l.Forget();
                EXPECT_EQ(l.Bytes(), 0);
                EXPECT_EQ(l.errors(), "");
                fake_gpu_stats_t fs = f.Stats();
                EXPECT_EQ(fs.leaks, 0u);
                EXPECT_EQ(fs.violations, 0u) << f.Violation();
                if (::testing::Test::HasFailure() || !reached)
                    break;
                runs++;
            }
            EXPECT_GE(runs, 8u) << conf; // one per event of the clean run: 8 segments or pages at least
            EXPECT_GT(refused, 0u) << conf;
        }
    }
}

} // namespace cuda_test
