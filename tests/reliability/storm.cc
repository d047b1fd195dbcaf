// storm.cc: the storm's workers and its run (see storm.h). Every thread
// keeps its own counts and joins them into the result at the end; besides the
// allocator, threads share only what storm_int.h's Shared holds.
#include "tests/reliability/storm.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <random>
#include <string>
#include <thread>

#include "tests/reliability/storm_int.h"

namespace storm {

namespace {

constexpr size_t kMiB = size_t{1} << 20;
constexpr size_t kSmallSize = kMiB; // PyTorch's kSmallSize: rounded sizes up to it are the small pool's

const char *const kOpNames[kOpCount] = {
    "malloc",      "tag_malloc", "free",        "record_stream", "sync_own", "sync_other",  "oom",   "asleep",
    "empty_cache", "stats",      "check",       "reset_peak",    "snapshot", "history",     "sleep", "wake",
    "wake_oom",    "fraction",   "calm_malloc", "phase",         "handoff",  "free_handed",
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
        const bool calm = sh->calm();
        uint64_t op = rng() % 100;
        if (calm && op >= 80)
            op = op < 95 ? op - 40 : 90; // a free or malloc, or a sync of its own stream
        if (op < 42) {
            if (live.size() >= c.max_live) {
                free_one();
                continue;
            }
            size_t bytes = DrawSize(rng);
            bool tagged = !calm && rng() % 5 == 0;
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
                out->ops[tagged ? kTagMalloc : calm ? kCalmMalloc : kMalloc]++;
            } else if (ms == GALLOC_E_OOM) {
                out->ops[kOom]++;
            } else if (ms == GALLOC_E_ASLEEP && tagged) {
                out->ops[kAsleep]++;
            } else {
                sh->Error(tagged ? "tag malloc" : "malloc", ms);
            }
        } else if (op < 80) {
            Live b;
            if (sh->Take(t, &b)) {
                galloc_status_t st = galloc_free(a, b.p);
                if (st != GALLOC_OK) {
                    sh->Error("free of a block from another worker", st);
                } else {
                    out->recount.Free(b);
                    out->ops[kFreeHanded]++;
                }
            } else if (!live.empty() && n > 1 && rng() % 8 == 0) {
                size_t k = rng() % live.size();
                sh->Post((t + 1 + rng() % (n - 1)) % n, live[k]);
                out->ops[kHandoff]++;
                live[k] = live.back();
                live.pop_back();
            } else if (!live.empty()) {
                free_one();
            }
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
    std::vector<std::array<uint64_t, kOpCount>> control_ops(kLoopCount); // value-initialized: zeros
    std::vector<std::thread> threads;
    auto t0 = std::chrono::steady_clock::now();
    for (size_t t = 0; t < n; t++)
        threads.emplace_back(Worker, &sh, t, &outs[t]);
    for (size_t k = 0; k < kLoopCount; k++)
        threads.emplace_back([&, k] {
            std::mt19937_64 rng(c.seed + 1000 + k);
            kLoops[k](&sh, rng, control_ops[k].data());
        });
    // Storm and calm phases of about 150 ms in turn. In a calm one, workers
    // only malloc and free in the default pools and synchronize their own
    // streams, history is off and no tag sleeps: the stripe path (Note:
    // per-stream locking, docs/architecture.md) opens once the pending
    // frees drain, and its escrowed stats meet empty_cache, stats reads,
    // reset_peak, snapshots, checks and fraction changes.
    const auto end =
        t0 + std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(c.seconds));
    for (bool calm = false; std::chrono::steady_clock::now() < end; calm = !calm) {
        std::this_thread::sleep_until(std::min(end, std::chrono::steady_clock::now() + std::chrono::milliseconds(150)));
        sh.SetCalm(!calm);
        r.ops[kPhase]++;
    }
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

Result RunInTest(Config &c, double default_seconds)
{
    c.seconds = SecondsFromEnv(default_seconds);
    c.seed = SeedFromEnv();
    const char *tmp = std::getenv("TEST_TMPDIR");
    c.snapshot_dir = tmp != nullptr ? tmp : "/tmp";
    ::testing::Test::RecordProperty("seed", std::to_string(c.seed));
    Result r = Run(c);
    Print(c, r);
    Finish(c, r);
    EXPECT_GT(r.ops[kMalloc], 0u);
    if (::testing::Test::HasFailure())
        std::printf("storm failed with GALLOC_STORM_SEED=%llu\n", (unsigned long long)c.seed);
    return r;
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
