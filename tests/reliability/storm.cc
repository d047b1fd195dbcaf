// storm.cc: the storm's threads (see storm.h). Every thread keeps its own
// counts and joins them into the result at the end, so the only shared state
// besides the allocator is the stop flag and the first error.
#include "tests/reliability/storm.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <random>
#include <thread>

namespace storm {

namespace {

constexpr size_t kMiB = size_t{1} << 20;
constexpr size_t kSmallSize = kMiB; // PyTorch's kSmallSize: rounded sizes up to it are the small pool's

const char *const kOpNames[kOpCount] = {
    "malloc", "tag_malloc", "free",       "record_stream", "sync_own", "sync_other", "oom",  "asleep",   "empty_cache",
    "stats",  "check",      "reset_peak", "snapshot",      "history",  "sleep",      "wake", "wake_oom", "fraction",
};

// PyTorch's round_size without roundup_power2_divisions (the storm's
// allocators use the defaults): at least 512 bytes, in 512-byte steps.
size_t RoundSize(size_t n)
{
    return n < 512 ? 512 : 512 * ((n + 511) / 512);
}

int PoolOf(size_t rounded)
{
    return rounded <= kSmallSize ? GALLOC_STAT_SMALL_POOL : GALLOC_STAT_LARGE_POOL;
}

// Everything the threads share: the config, the stop flag, the first error.
class Shared {
  public:
    explicit Shared(const Config &c) : c_(c) {}
    const Config &c() const { return c_; }
    bool stopped() const { return stop_.load(std::memory_order_relaxed); }
    void Stop() { stop_.store(true); }
    // A call returned st where it must not: count it, keep the first message.
    void Error(const char *what, galloc_status_t st)
    {
        char msg[GALLOC_ERROR_MAX] = "";
        galloc_last_error(c_.a, msg, sizeof msg); // best effort: another thread may have failed since
        std::lock_guard<std::mutex> lock(mu_);
        if (errors_++ == 0)
            first_ = std::string(what) + ": " + galloc_status_name(st) + " (last error: " + msg + ")";
    }
    void Merge(Result *r)
    {
        std::lock_guard<std::mutex> lock(mu_);
        r->errors += errors_;
        if (r->first_error.empty())
            r->first_error = first_;
    }

  private:
    const Config &c_;
    std::atomic<bool> stop_{false};
    std::mutex mu_;
    uint64_t errors_ = 0; // guarded by mu_
    std::string first_;   // guarded by mu_
};

void Pause(std::mt19937_64 &rng, unsigned max_us)
{
    std::this_thread::sleep_for(std::chrono::microseconds(rng() % max_us));
}

std::string TagName(size_t t)
{
    return "storm" + std::to_string(t);
}

// ---- Workers ----

struct WorkerOut {
    uint64_t ops[kOpCount] = {};
    Recount recount;
    std::vector<Live> live;
};

// Sizes: mostly small-pool blocks, a quarter large, a few of up to 64 MiB.
size_t DrawSize(std::mt19937_64 &rng)
{
    uint64_t r = rng() % 100;
    if (r < 70)
        return 1 + rng() % kMiB;
    if (r < 97)
        return kMiB + 1 + rng() % (7 * kMiB);
    return 8 * kMiB + rng() % (56 * kMiB);
}

void Worker(Shared *sh, size_t t, WorkerOut *out)
{
    const Config &c = sh->c();
    galloc_allocator_t *a = c.a;
    const size_t n = c.streams.size();
    const galloc_stream_t own = c.streams[t];
    const std::string tag = TagName(t);
    std::mt19937_64 rng(c.seed + t);
    std::vector<Live> &live = out->live;
    auto free_one = [&] {
        size_t k = rng() % live.size();
        galloc_status_t st = galloc_free(a, live[k].p);
        if (st != GALLOC_OK)
            return sh->Error("free", st);
        out->recount.Free(live[k]);
        out->ops[kFree]++;
        live[k] = live.back();
        live.pop_back();
    };
    while (!sh->stopped()) {
        uint64_t op = rng() % 100;
        if (op < 42) {
            if (live.size() >= c.max_live) {
                free_one();
                continue;
            }
            size_t bytes = DrawSize(rng);
            bool tagged = rng() % 5 == 0;
            galloc_status_t st;
            if (tagged && (st = galloc_tag_begin(a, tag.c_str())) != GALLOC_OK) {
                sh->Error("tag_begin", st);
                continue;
            }
            void *p = nullptr;
            galloc_status_t ms = galloc_malloc(a, bytes, own, &p);
            if (tagged && (st = galloc_tag_end(a, tag.c_str())) != GALLOC_OK)
                sh->Error("tag_end", st);
            if (ms == GALLOC_OK) {
                Live b{p, bytes, RoundSize(bytes)};
                live.push_back(b);
                out->recount.Alloc(b);
                out->ops[tagged ? kTagMalloc : kMalloc]++;
            } else if (ms == GALLOC_E_OOM) {
                out->ops[kOom]++;
            } else if (ms == GALLOC_E_ASLEEP && tagged) {
                out->ops[kAsleep]++;
            } else {
                sh->Error(tagged ? "tag malloc" : "malloc", ms);
            }
        } else if (op < 80) {
            if (!live.empty())
                free_one();
        } else if (op < 90) {
            if (live.empty() || n < 2)
                continue;
            galloc_stream_t other = c.streams[(t + 1 + rng() % (n - 1)) % n];
            galloc_status_t st = galloc_record_stream(a, live[rng() % live.size()].p, other);
            if (st != GALLOC_OK)
                sh->Error("record_stream", st);
            else
                out->ops[kRecordStream]++;
        } else {
            bool mine = op < 96 || n < 2;
            galloc_stream_t s = mine ? own : c.streams[rng() % n];
            galloc_status_t st = galloc_stream_synchronize(a, s);
            if (st != GALLOC_OK)
                sh->Error("stream_synchronize", st);
            else
                out->ops[mine ? kSyncOwn : kSyncOther]++;
        }
    }
}

// ---- Control threads: each loops on its call with a short pause. ----

using Counts = uint64_t[kOpCount];

// Per-stat invariants of one consistent copy: nothing resets the
// accumulated totals during a storm, so current = allocated - freed.
void CheckCopy(Shared *sh, const galloc_stats_t &s)
{
    std::string bad;
    auto one = [&](const char *name, int p, const galloc_stat_t &x) {
        if (bad.empty() && (x.current < 0 || x.peak < x.current || x.current != x.allocated - x.freed))
            bad = std::string(name) + "[" + std::to_string(p) + "]: current " + std::to_string(x.current) + ", peak " +
                  std::to_string(x.peak) + ", allocated " + std::to_string(x.allocated) + ", freed " +
                  std::to_string(x.freed);
    };
#define STORM_ARRAY_(name)                                                                                             \
    for (int p = 0; p < GALLOC_STAT_POOLS; p++)                                                                        \
        one(#name, p, s.name[p]);
#define STORM_STAT_(name) one(#name, -1, s.name);
#define STORM_INT_(name)
    GALLOC_STATS_FIELDS(STORM_ARRAY_, STORM_STAT_, STORM_INT_)
#undef STORM_ARRAY_
#undef STORM_STAT_
#undef STORM_INT_
    // PyTorch's free() takes allocation and allocated_bytes down at once, and
    // free_block() (after the block's stream events) active, active_bytes
    // and requested_bytes: so each of the latter is at least the former.
    for (int p = 0; p < GALLOC_STAT_POOLS && bad.empty(); p++)
        if (s.allocated_bytes[p].current > s.active_bytes[p].current ||
            s.requested_bytes[p].current > s.active_bytes[p].current || s.allocation[p].current > s.active[p].current)
            bad = "pool " + std::to_string(p) + ": allocated_bytes " + std::to_string(s.allocated_bytes[p].current) +
                  " and requested_bytes " + std::to_string(s.requested_bytes[p].current) + " <= active_bytes " +
                  std::to_string(s.active_bytes[p].current) + ", allocation " +
                  std::to_string(s.allocation[p].current) + " <= active " + std::to_string(s.active[p].current) +
                  " fails";
    if (!bad.empty())
        sh->Error(("memory_stats copy: " + bad).c_str(), GALLOC_E_CORRUPT);
}

void EmptyCacheLoop(Shared *sh, std::mt19937_64 &rng, Counts ops)
{
    while (!sh->stopped()) {
        galloc_status_t st = galloc_empty_cache(sh->c().a);
        if (st != GALLOC_OK)
            sh->Error("empty_cache", st);
        ops[kEmptyCache]++;
        Pause(rng, 2000);
    }
}

void StatsLoop(Shared *sh, std::mt19937_64 &rng, Counts ops)
{
    galloc_allocator_t *a = sh->c().a;
    while (!sh->stopped()) {
        galloc_stats_t s;
        s.struct_size = sizeof s;
        galloc_status_t st = galloc_memory_stats(a, &s);
        if (st != GALLOC_OK)
            sh->Error("memory_stats", st);
        else
            CheckCopy(sh, s);
        ops[kStats]++;
        if (rng() % 8 == 0) {
            if ((st = galloc_check(a)) != GALLOC_OK)
                sh->Error("galloc_check during the storm", st);
            galloc_fragmentation_t f;
            f.struct_size = sizeof f;
            if ((st = galloc_fragmentation(a, &f)) != GALLOC_OK)
                sh->Error("fragmentation", st);
            ops[kCheck]++;
        }
        Pause(rng, 1000);
    }
}

void ResetPeakLoop(Shared *sh, std::mt19937_64 &rng, Counts ops)
{
    while (!sh->stopped()) {
        galloc_status_t st = galloc_stats_reset_peak(sh->c().a);
        if (st != GALLOC_OK)
            sh->Error("reset_peak", st);
        ops[kResetPeak]++;
        Pause(rng, 1000);
    }
}

void SnapshotLoop(Shared *sh, std::mt19937_64 &rng, Counts ops)
{
    const std::string base = sh->c().snapshot_dir + "/storm_snapshot";
    while (!sh->stopped()) {
        bool json = rng() % 2;
        galloc_status_t st = galloc_snapshot_write(sh->c().a, (base + (json ? ".json" : ".pickle")).c_str(),
                                                   json ? GALLOC_SNAPSHOT_JSON : GALLOC_SNAPSHOT_PICKLE);
        if (st != GALLOC_OK)
            sh->Error("snapshot_write", st);
        ops[kSnapshot]++;
        Pause(rng, 5000);
    }
}

void HistoryLoop(Shared *sh, std::mt19937_64 &rng, Counts ops)
{
    galloc_allocator_t *a = sh->c().a;
    while (!sh->stopped()) {
        galloc_history_options_t h = {};
        h.struct_size = sizeof h;
        h.enabled = (galloc_history_t)(rng() % 3);
        h.context = (galloc_context_t)(rng() % 3); // not ALL: native stacks of frees would slow TSan runs most
        h.stacks = GALLOC_STACKS_PYTHON;
        h.max_entries = rng() % 2 ? 4096 : 512;
        galloc_status_t st = galloc_record_memory_history(a, &h);
        if (st != GALLOC_OK)
            sh->Error("record_memory_history", st);
        if ((st = galloc_record_annotation(a, "START", "storm")) != GALLOC_OK)
            sh->Error("record_annotation", st);
        ops[kHistory]++;
        Pause(rng, 3000);
    }
    galloc_history_options_t off = {};
    off.struct_size = sizeof off;
    galloc_status_t st = galloc_record_memory_history(a, &off);
    if (st != GALLOC_OK)
        sh->Error("record_memory_history off", st);
}

// Sleep one tag or all, offloading them or not; hold; wake the same list,
// again later while the fraction refuses it.
void SleepLoop(Shared *sh, std::mt19937_64 &rng, Counts ops)
{
    galloc_allocator_t *a = sh->c().a;
    const size_t n = sh->c().streams.size();
    while (!sh->stopped()) {
        std::string tags = rng() % 3 == 0 ? "" : TagName(rng() % n);
        const char *offload = rng() % 2 ? tags.c_str() : nullptr; // "" offloads all, NULL none
        galloc_status_t st = galloc_sleep(a, tags.c_str(), offload);
        if (st != GALLOC_OK)
            sh->Error("sleep", st);
        else
            ops[kSleep]++;
        Pause(rng, 3000);
        while (!sh->stopped()) {
            st = galloc_wake(a, tags.c_str());
            if (st == GALLOC_OK) {
                ops[kWake]++;
                break;
            }
            if (st != GALLOC_E_OOM) {
                sh->Error("wake", st);
                break;
            }
            ops[kWakeOom]++;
            Pause(rng, 2000);
        }
        Pause(rng, 3000);
    }
}

void FractionLoop(Shared *sh, std::mt19937_64 &rng, Counts ops)
{
    const double fractions[] = {1.0, 0.5, 0.25, 0.1, sh->c().min_fraction};
    while (!sh->stopped()) {
        galloc_status_t st = galloc_set_memory_fraction(sh->c().a, fractions[rng() % 5]);
        if (st != GALLOC_OK)
            sh->Error("set_memory_fraction", st);
        ops[kFraction]++;
        Pause(rng, 5000);
    }
}

using Loop = void (*)(Shared *, std::mt19937_64 &, Counts);
const Loop kLoops[] = {EmptyCacheLoop, StatsLoop, ResetPeakLoop, SnapshotLoop, HistoryLoop, SleepLoop, FractionLoop};
constexpr size_t kLoopCount = sizeof kLoops / sizeof kLoops[0];

} // namespace

const char *OpName(int op)
{
    return op >= 0 && op < kOpCount ? kOpNames[op] : "?";
}

void Recount::Alloc(const Live &b)
{
    for (int p : {(int)GALLOC_STAT_ALL, PoolOf(b.rounded)}) {
        allocs[p]++;
        bytes_alloc[p] += (int64_t)b.rounded;
        requested_alloc[p] += (int64_t)b.requested;
    }
}

void Recount::Free(const Live &b)
{
    for (int p : {(int)GALLOC_STAT_ALL, PoolOf(b.rounded)}) {
        frees[p]++;
        bytes_freed[p] += (int64_t)b.rounded;
        requested_freed[p] += (int64_t)b.requested;
    }
}

void Recount::Add(const Recount &o)
{
    for (int p = 0; p < GALLOC_STAT_POOLS; p++) {
        allocs[p] += o.allocs[p];
        frees[p] += o.frees[p];
        bytes_alloc[p] += o.bytes_alloc[p];
        bytes_freed[p] += o.bytes_freed[p];
        requested_alloc[p] += o.requested_alloc[p];
        requested_freed[p] += o.requested_freed[p];
    }
}

Result Run(const Config &c)
{
    Result r;
    Shared sh(c);
    const size_t n = c.streams.size();
    for (size_t t = 0; t < n; t++) {
        r.tags.push_back(TagName(t));
        // Create each tag before the storm, so that a sleep naming it finds it.
        galloc_status_t st = galloc_tag_begin(c.a, r.tags.back().c_str());
        if (st == GALLOC_OK)
            st = galloc_tag_end(c.a, r.tags.back().c_str());
        if (st != GALLOC_OK)
            sh.Error("creating a tag", st);
    }
    std::vector<WorkerOut> outs(n);
    uint64_t control_ops[kLoopCount][kOpCount] = {};
    std::vector<std::thread> threads;
    auto t0 = std::chrono::steady_clock::now();
    for (size_t t = 0; t < n; t++)
        threads.emplace_back(Worker, &sh, t, &outs[t]);
    for (size_t k = 0; k < kLoopCount; k++)
        threads.emplace_back([&, k] {
            std::mt19937_64 rng(c.seed + 1000 + k);
            kLoops[k](&sh, rng, control_ops[k]);
        });
    std::this_thread::sleep_for(std::chrono::duration<double>(c.seconds));
    sh.Stop();
    for (auto &th : threads)
        th.join();
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    for (auto &o : outs) {
        for (int k = 0; k < kOpCount; k++)
            r.ops[k] += o.ops[k];
        r.recount.Add(o.recount);
        r.live.insert(r.live.end(), o.live.begin(), o.live.end());
    }
    for (auto &ops : control_ops)
        for (int k = 0; k < kOpCount; k++)
            r.ops[k] += ops[k];
    sh.Merge(&r);
    return r;
}

void Print(const Config &c, const Result &r)
{
    uint64_t total = 0;
    std::printf("storm: %zu workers, seed %" PRIu64 ", %.2f s\n", c.streams.size(), c.seed, r.seconds);
    for (int k = 0; k < kOpCount; k++) {
        std::printf("  %-14s %10" PRIu64 "\n", OpName(k), r.ops[k]);
        total += r.ops[k];
    }
    std::printf("  %-14s %10" PRIu64 "  (%.0f/s), %zu blocks live at the end\n", "total", total,
                r.seconds > 0 ? (double)total / r.seconds : 0.0, r.live.size());
    std::fflush(stdout);
}

double SecondsFromEnv(double def)
{
    const char *s = std::getenv("GALLOC_STORM_SECONDS");
    return s != nullptr && *s != '\0' ? std::strtod(s, nullptr) : def;
}

uint64_t SeedFromEnv()
{
    const char *s = std::getenv("GALLOC_STORM_SEED");
    if (s != nullptr && *s != '\0')
        return std::strtoull(s, nullptr, 0);
    return (uint64_t)std::chrono::system_clock::now().time_since_epoch().count() % 1000000007u;
}

int ThreadsFromEnv(int def)
{
    const char *s = std::getenv("GALLOC_STORM_THREADS");
    return s != nullptr && *s != '\0' ? std::atoi(s) : def;
}

} // namespace storm
