// fault_sweep_test: every device allocation of a scripted workload made to fail
// in turn, SQLite-style (house style section 11). For N = 1, 2, ... the sim
// device fails its Nth allocation (sim_fail_nth), then in a second sweep every
// allocation from the Nth on (sim_fail_from), until N is past the last device
// allocation and the run completes untouched. After every call: the status is
// one the call may return (a fault ends in GALLOC_E_OOM or in a successful
// retry, never another code), galloc_check passes (it recounts every stat),
// and a failed malloc changed no block stat. At the end of every run, with
// everything freed and the cache emptied, reserved memory is 0, and when the
// allocator is destroyed the device holds nothing (simwatch reads the sim
// counters just before close).
#include <gtest/gtest.h>

#include <cinttypes>
#include <cstdio>
#include <string>
#include <vector>

extern "C" {
#include <galloc/galloc.h>
#include "tests/reliability/simwatch.h"
}

namespace {

constexpr size_t KiB = 1024, MiB = 1024 * KiB;

// Fault-free device of 256 MiB with manual events, so frees recorded on other
// streams stay pending until a stream_synchronize or empty_cache.
const char *const kBase = "sim_capacity:256MiB,sim_manual_events:True";

// The settings swept: the plain pool, expandable segments, max_split_size_mb
// with a GC threshold (active once the fraction is set), and two with
// roundup_power2_divisions. ooms: the script's failed mallocs without faults.
// Two are planned in every config. With expandable segments the 140 MiB
// request fails too, because 20 MiB pages still partly used hold 124 MiB, and
// so does the 100 MiB request that would have reused its segment; with 2
// divisions above 64 MiB, 140 MiB rounds up to 192 MiB and fails.
struct Config {
    const char *conf;
    size_t ooms;
};
const Config kConfigs[] = {
    {"", 2},
    {",expandable_segments:True", 4},
    {",max_split_size_mb:40,garbage_collection_threshold:0.5", 2},
    {",expandable_segments:True,max_split_size_mb:40,roundup_power2_divisions:4", 4},
    {",roundup_power2_divisions:[1:4,64:8,>:2],large_segment_size_mb:32", 3},
};

enum class Mode { kNone, kNth, kFrom, kAbove };

struct RunStats {
    std::vector<galloc_status_t> statuses; // one per call, in order
    uint64_t alloc_calls = 0;              // device allocations attempted (sim's count)
    uint64_t faults = 0;                   // of those, failed by injection
    uint64_t retried_ok = 0;               // mallocs that met a fault and still succeeded
    uint64_t clean_ooms = 0;               // mallocs that met a fault and returned GALLOC_E_OOM
};

// The block stats a failed malloc must leave alone. The OOM path may release
// cached segments (reserved_bytes, segment fall) and waits for pending frees,
// which then leave the active and requested counts; no block is handed out.
bool SameBlocks(const galloc_stats_t &x, const galloc_stats_t &y)
{
    for (int i = 0; i < GALLOC_STAT_POOLS; i++)
        if (x.allocation[i].current != y.allocation[i].current ||
            x.allocated_bytes[i].current != y.allocated_bytes[i].current)
            return false;
    return true;
}

class Workload {
  public:
    Workload(std::string conf, Mode mode, uint64_t n) : conf_(std::move(conf)), mode_(mode), n_(n) {}

    // Runs the script; test failures name the run and the call.
    RunStats Run()
    {
        std::string c = std::string(kBase) + conf_;
        char num[64];
        if (mode_ == Mode::kNth)
            std::snprintf(num, sizeof num, ",sim_fail_nth:%" PRIu64, n_);
        else if (mode_ == Mode::kFrom)
            std::snprintf(num, sizeof num, ",sim_fail_from:%" PRIu64, n_);
        else if (mode_ == Mode::kAbove)
            std::snprintf(num, sizeof num, ",sim_fail_above:%" PRIu64, n_);
        else
            num[0] = '\0';
        c += num;
        name_ = "conf \"" + c + "\"";
        char err[GALLOC_ERROR_MAX] = "";
        EXPECT_EQ(simwatch_register(), GALLOC_OK);
        EXPECT_EQ(galloc_allocator_create("simwatch", 0, c.c_str(), &a_, err, sizeof err), GALLOC_OK) << err;
        if (a_ == nullptr)
            return out_;
        sim_ = simwatch_last_state();
        Script();
        Finish();
        return out_;
    }

  private:
    ga_sim_counters_t Counters()
    {
        ga_sim_counters_t c{};
        EXPECT_EQ(ga_sim_counters(sim_, &c), GALLOC_OK);
        return c;
    }
    galloc_stats_t Stats()
    {
        galloc_stats_t s;
        s.struct_size = sizeof s;
        EXPECT_EQ(galloc_memory_stats(a_, &s), GALLOC_OK);
        return s;
    }
    std::string Where(const char *what)
    {
        return name_ + ", call " + std::to_string(out_.statuses.size()) + " " + what;
    }

    // After every call: a permitted status and a consistent allocator.
    void After(const char *what, galloc_status_t st, std::initializer_list<galloc_status_t> allowed)
    {
        out_.statuses.push_back(st);
        bool ok = false;
        for (galloc_status_t s : allowed)
            ok = ok || s == st;
        char msg[GALLOC_ERROR_MAX];
        galloc_last_error(a_, msg, sizeof msg);
        EXPECT_TRUE(ok) << Where(what) << " returned " << galloc_status_name(st) << ": " << msg;
        EXPECT_EQ(galloc_check(a_), GALLOC_OK) << Where(what) << ": " << (galloc_last_error(a_, msg, sizeof msg), msg);
    }

    void *Malloc(size_t size, galloc_stream_t s)
    {
        galloc_stats_t before = Stats();
        uint64_t faults = Counters().faults_injected;
        void *p = reinterpret_cast<void *>(1);
        galloc_status_t st = galloc_malloc(a_, size, s, &p);
        After("malloc", st, {GALLOC_OK, GALLOC_E_OOM});
        bool faulted = Counters().faults_injected > faults;
        if (st == GALLOC_OK) {
            EXPECT_NE(p, nullptr) << Where("malloc");
            out_.retried_ok += faulted;
            live_.push_back(p);
        } else {
            EXPECT_EQ(p, nullptr) << Where("malloc");
            out_.clean_ooms += faulted;
            galloc_stats_t after = Stats();
            EXPECT_TRUE(SameBlocks(before, after)) << Where("malloc") << ": a failed malloc changed block stats";
            EXPECT_EQ(after.num_ooms, before.num_ooms + 1) << Where("malloc");
            p = nullptr;
        }
        return p;
    }
    void Free(void *&p)
    {
        if (p == nullptr)
            return;
        After("free", galloc_free(a_, p), {GALLOC_OK});
        for (auto it = live_.begin(); it != live_.end(); ++it)
            if (*it == p) {
                live_.erase(it);
                break;
            }
        p = nullptr;
    }
    void RecordStream(void *p, galloc_stream_t s)
    {
        if (p != nullptr)
            After("record_stream", galloc_record_stream(a_, p, s), {GALLOC_OK});
    }
    void Sync(galloc_stream_t s) { After("stream_synchronize", galloc_stream_synchronize(a_, s), {GALLOC_OK}); }
    void EmptyCache() { After("empty_cache", galloc_empty_cache(a_), {GALLOC_OK}); }
    void Fraction(double f) { After("set_memory_fraction", galloc_set_memory_fraction(a_, f), {GALLOC_OK}); }

    // The script: small and large pools, several streams, splits and merges,
    // frees pending on other streams, a private pool, an OOM that happens with
    // or without faults, a fraction cap, and requests large enough that the
    // pool must free its cache and retry.
    void Script()
    {
        void *tiny = Malloc(1, 0);       // small pool, 2 MiB segment
        void *page = Malloc(4096, 0);    // same segment, split
        void *s1 = Malloc(700 * KiB, 1); // small pool on stream 1
        void *l3 = Malloc(3 * MiB, 0);   // large pool: 20 MiB segment, split
        void *l12 = Malloc(12 * MiB, 0); // rest of that segment
        void *l30 = Malloc(30 * MiB, 0); // a segment of its own
        RecordStream(l3, 2);             // used on stream 2 too: its free waits for stream 2
        RecordStream(page, 3);
        Free(l3);
        Free(page);
        void *l5 = Malloc(5 * MiB, 0); // cannot take l3's pending block
        Sync(2);                       // l3's block becomes reusable at the next malloc
        void *l8 = Malloc(8 * MiB, 0);
        Free(l12);
        Free(tiny);
        EmptyCache(); // waits for stream 3, releases whole free segments

        galloc_mempool_id_t pool{};
        After("mempool_create", galloc_mempool_create(a_, &pool), {GALLOC_OK});
        After("mempool_begin", galloc_mempool_begin_allocate(a_, pool, GALLOC_ROUTE_THREAD, 0), {GALLOC_OK});
        void *m2 = Malloc(2 * MiB, 0); // private pool's own segments
        void *m100 = Malloc(100, 0);
        After("mempool_end", galloc_mempool_end_allocate(a_, pool), {GALLOC_OK});

        void *huge = Malloc(300 * MiB, 0); // more than the device: OOM in every run
        EXPECT_EQ(huge, nullptr) << Where("malloc 300 MiB");
        Fraction(0.5);                      // 128 MiB cap, ~94 MiB reserved; GC applies from now on
        void *capped = Malloc(80 * MiB, 0); // over the cap, no whole segment to free: OOM in every run
        EXPECT_EQ(capped, nullptr) << Where("malloc 80 MiB over the cap");
        void *c20 = Malloc(20 * MiB, 1);
        Free(c20);
        void *c24 = Malloc(24 * MiB, 1); // under the cap only once c20's segment is freed (GC or flush)
        Fraction(1.0);
        Free(l5);
        Free(l8);
        void *big1 = Malloc(140 * MiB, 0); // fits only once l5's and l8's segments are freed
        Free(m2);
        Free(m100);
        After("mempool_release", galloc_mempool_release(a_, pool), {GALLOC_OK});
        void *big2 = Malloc(50 * MiB, 3); // fits only once the released pool's segments are freed
        Free(big1);
        void *again = Malloc(100 * MiB, 0); // big1's cached segment, split or (max_split_size_mb) freed
        Free(s1);
        Free(l30);
        Free(c24);
        Free(big2);
        Free(again);
    }

    // Everything freed and the cache emptied: nothing reserved, the device
    // agrees, and nothing is left on it after destroy.
    void Finish()
    {
        for (void *p : std::vector<void *>(live_))
            Free(p);
        EmptyCache();
        galloc_stats_t st = Stats();
        for (int i = 0; i < GALLOC_STAT_POOLS; i++) {
            EXPECT_EQ(st.reserved_bytes[i].current, 0) << name_ << " pool " << i;
            EXPECT_EQ(st.allocation[i].current, 0) << name_ << " pool " << i;
        }
        ga_sim_counters_t c = Counters();
        EXPECT_EQ(c.used_bytes, 0u) << name_;
        EXPECT_EQ(c.violations, 0u) << name_ << ": galloc broke the device contract";
        out_.alloc_calls = c.alloc_calls;
        out_.faults = c.faults_injected;
        uint64_t leaky = simwatch_leaky_closes();
        galloc_allocator_destroy(a_);
        a_ = nullptr;
        ga_sim_counters_t closed{};
        ASSERT_TRUE(simwatch_last_close(&closed));
        EXPECT_TRUE(simwatch_counters_clean(&closed))
            << name_ << ": left on the device at destroy: " << closed.live_segments << " segments, "
            << closed.live_mapped_bytes << " mapped bytes, " << closed.live_reservations << " reservations, "
            << closed.live_events << " events";
        EXPECT_EQ(simwatch_leaky_closes(), leaky);
        EXPECT_EQ(closed.violations, 0u) << name_;
    }

    std::string conf_, name_;
    Mode mode_;
    uint64_t n_;
    galloc_allocator_t *a_ = nullptr;
    void *sim_ = nullptr;
    std::vector<void *> live_;
    RunStats out_;
};

// Sweeps N for one config and mode; returns the faults injected in all runs.
uint64_t Sweep(const Config &config, Mode mode, uint64_t *runs)
{
    const char *conf = config.conf;
    RunStats base = Workload(conf, Mode::kNone, 0).Run();
    // Without faults only the expected OOMs fail: otherwise the script would
    // not exercise the paths it claims to.
    size_t oom = 0;
    for (galloc_status_t s : base.statuses)
        oom += s == GALLOC_E_OOM;
    EXPECT_EQ(oom, config.ooms) << conf;
    EXPECT_GE(base.alloc_calls, 10u) << conf;
    uint64_t total = 0, retried = 0, ooms = 0;
    for (uint64_t n = 1;; n++) {
        RunStats r = Workload(conf, mode, n).Run();
        if (::testing::Test::HasFailure())
            return total;
        ++*runs;
        total += r.faults;
        retried += r.retried_ok;
        ooms += r.clean_ooms;
        if (r.faults == 0) {
            // Past the last device allocation: the run is the fault-free one.
            EXPECT_EQ(n, base.alloc_calls + 1) << conf;
            EXPECT_EQ(r.statuses, base.statuses) << conf << ": an untouched run differs from the baseline";
            break;
        }
        if (n > 100000) {
            ADD_FAILURE() << conf << ": the sweep does not end";
            break;
        }
    }
    std::printf("fault sweep %-14s %-55s: %3" PRIu64 " device allocations, %5" PRIu64 " faults injected, %4" PRIu64
                " mallocs retried to success, %4" PRIu64 " clean OOMs\n",
                mode == Mode::kNth ? "sim_fail_nth" : "sim_fail_from", conf[0] ? conf + 1 : "(defaults)",
                base.alloc_calls, total, retried, ooms);
    return total;
}

TEST(FaultSweep, EachDeviceAllocationFailsOnce)
{
    uint64_t faults = 0, runs = 0;
    for (const Config &c : kConfigs)
        faults += Sweep(c, Mode::kNth, &runs);
    std::printf("sim_fail_nth: %" PRIu64 " runs, %" PRIu64 " faults injected\n", runs, faults);
    ::testing::Test::RecordProperty("faults_injected", std::to_string(faults));
    EXPECT_GT(faults, 0u);
}

TEST(FaultSweep, EveryLaterDeviceAllocationFails)
{
    uint64_t faults = 0, runs = 0;
    for (const Config &c : kConfigs)
        faults += Sweep(c, Mode::kFrom, &runs);
    std::printf("sim_fail_from: %" PRIu64 " runs, %" PRIu64 " faults injected\n", runs, faults);
    ::testing::Test::RecordProperty("faults_injected", std::to_string(faults));
    EXPECT_GT(faults, 0u);
}

// Allocations above a size fail however often they are retried: the large
// requests end in OOM, the small pool keeps working, and nothing leaks.
TEST(FaultSweep, LargeAllocationsFailAboveASize)
{
    for (const Config &c : kConfigs) {
        RunStats r = Workload(c.conf, Mode::kAbove, 4 * MiB).Run();
        EXPECT_GT(r.faults, 0u) << c.conf;
        EXPECT_GT(r.clean_ooms, 0u) << c.conf;
    }
}

} // namespace

namespace {

// A device that faults while a cross-stream free waits (PyTorch throws from
// cudaEventSynchronize): the public calls return GALLOC_E_DEVICE with the
// backend's text, the block is not reused, and the device ends clean.
TEST(EventFaults, PublicCallsReturnTheDeviceErrorAndKeepTheBlock)
{
    ASSERT_EQ(simwatch_register(), GALLOC_OK);
    galloc_allocator_t *a = nullptr;
    char err[GALLOC_ERROR_MAX] = "";
    ASSERT_EQ(galloc_allocator_create("simwatch", 0, "sim_capacity:40MiB,sim_manual_events:True", &a, err, sizeof err),
              GALLOC_OK)
        << err;
    void *sim = simwatch_last_state();
    const galloc_stream_t side = 0x1001;
    void *p = nullptr, *big = nullptr, *q = nullptr;
    ASSERT_EQ(galloc_malloc(a, 20 * MiB, 0, &p), GALLOC_OK);
    ASSERT_EQ(galloc_malloc(a, 20 * MiB, 0, &big), GALLOC_OK); // the device is full
    ASSERT_EQ(galloc_record_stream(a, p, side), GALLOC_OK);
    ASSERT_EQ(galloc_free(a, p), GALLOC_OK);
    ASSERT_EQ(ga_sim_set_event_faults(sim, 0, 1, 0, 0), GALLOC_OK); // every wait fails

    char msg[GALLOC_ERROR_MAX];
    EXPECT_EQ(galloc_empty_cache(a), GALLOC_E_DEVICE);
    galloc_last_error(a, msg, sizeof msg);
    EXPECT_STREQ(msg, "waiting for an event on stream 0x1001 failed: injected fault on event_synchronize #1 "
                      "(event 0x1)");                              // the sim's first event handle
    EXPECT_EQ(galloc_malloc(a, 20 * MiB, 0, &q), GALLOC_E_DEVICE); // the OOM path's wait fails too
    EXPECT_EQ(q, nullptr);
    EXPECT_EQ(galloc_check(a), GALLOC_OK);
    galloc_stats_t s;
    s.struct_size = sizeof s;
    ASSERT_EQ(galloc_memory_stats(a, &s), GALLOC_OK);
    EXPECT_EQ(s.num_sync_all_streams, 2);
    EXPECT_EQ(s.num_alloc_retries, 0);
    EXPECT_EQ(s.num_ooms, 0);
    EXPECT_EQ(s.num_device_free, 0);
    EXPECT_EQ(s.active[GALLOC_STAT_ALL].current, 2); // big, and p still pending
    EXPECT_EQ(s.reserved_bytes[GALLOC_STAT_ALL].current, (int64_t)(40 * MiB));

    ASSERT_EQ(ga_sim_set_event_faults(sim, 0, 0, 0, 0), GALLOC_OK);
    // p's wait succeeds: its segment goes back and a new one is made (PyTorch's path).
    EXPECT_EQ(galloc_malloc(a, 20 * MiB, 0, &q), GALLOC_OK);
    EXPECT_NE(q, nullptr);
    ASSERT_EQ(galloc_memory_stats(a, &s), GALLOC_OK);
    EXPECT_EQ(s.num_sync_all_streams, 3);
    EXPECT_EQ(s.num_alloc_retries, 1);
    EXPECT_EQ(s.num_device_free, 1);
    EXPECT_EQ(s.num_ooms, 0);
    EXPECT_EQ(galloc_check(a), GALLOC_OK);
    EXPECT_EQ(galloc_free(a, q), GALLOC_OK);
    EXPECT_EQ(galloc_free(a, big), GALLOC_OK);
    EXPECT_EQ(galloc_empty_cache(a), GALLOC_OK);
    uint64_t leaky = simwatch_leaky_closes();
    galloc_allocator_destroy(a);
    EXPECT_EQ(simwatch_leaky_closes(), leaky);
}

} // namespace
