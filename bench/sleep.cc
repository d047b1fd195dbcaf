// sleep.cc: the cost of sleep and wake (galloc_sleep.h) on the sim device. A
// tag holds about 1 GiB of live blocks; each iteration puts it to sleep and
// wakes it again. The sim backend is wrapped by a counting copy of itself
// (registered as "sim_counted"), so every driver call the pair makes is
// counted exactly: maps, unmaps, address reservations, host allocations and
// copies.
//
//   sleep_wake/large_20MiB:L/expandable:E/backed:B/offload:O/real_time
//     L  0: 1,024 blocks of 1 MiB (the small pool's 2 MiB segments);
//        1: 52 blocks of 20 MiB (20 MiB segments)
//     E  expandable_segments:True
//     B  sim_backed:True: device memory is host memory, copies are real
//        memcpy; 0: unbacked (nothing is copied)
//     O  the tag is in offload_tags (its contents go to the host); 0: discarded
//
// Counters, per GiB slept (the tag's physical bytes, from galloc_sleep_stats)
// and per iteration (one sleep and one wake): sleep_ms_per_GiB and
// wake_ms_per_GiB (wall time of each call), map_per_GiB, unmap_per_GiB,
// va_per_GiB (reserve + release: expected 0, the addresses are kept),
// d2h_per_GiB, h2d_per_GiB, host_alloc_per_GiB, and dev_alloc_per_GiB /
// dev_free_per_GiB (galloc_stats' num_device_alloc / num_device_free, which
// count maps and unmaps).
//
//   first_sleep/mode:M/large_20MiB:L/manual_time
//     the FIRST sleep of an offloaded tag of about 1 GiB (blocks as above), on
//     a fresh allocator each iteration, so nothing pinned is waiting:
//     M  0 cold: the sleep pins each block's host copy itself;
//        1 prepared: galloc_sleep_prepare first (timed apart: prepare_ms),
//          then the sleep, which only copies;
//        2 plain pinned copy: the backend's own ops, no allocator: one
//          host_alloc of all the bytes (pin_ms), then one copy_d2h per block
//          of the same sizes: the speed a sleep cannot beat.
//     The time is the sleep's (cold, prepared) or the copies' (plain).
//     Counters: GiB, GiB_per_s, prepare_ms / pin_ms, and on sim
//     host_alloc_in_sleep (exact: a block's count cold, 0 prepared).
//
// The device: GALLOC_BENCH_BACKEND (default sim) names the backend, e.g.
// GALLOC_BENCH_BACKEND=cuda on a GPU machine (config
// "device_backend:<name>", plus GALLOC_BENCH_CONF's items if set). sim runs
// through the counting wrapper; another backend gives wall-time rows only
// (no driver-call counters), and sleep_wake's unbacked rows are skipped.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench/galloc_util.h"

namespace bench {
namespace {

struct Counts {
    int64_t va = 0, map = 0, unmap = 0, d2h = 0, h2d = 0, host_alloc = 0;
};
Counts g_counts;
const galloc_backend_ops_t *g_sim = nullptr;
galloc_backend_ops_t g_counted;

galloc_status_t VaReserve(void *s, size_t b, uintptr_t *a)
{
    g_counts.va++;
    return g_sim->va_reserve(s, b, a);
}
galloc_status_t VaRelease(void *s, uintptr_t a, size_t b)
{
    g_counts.va++;
    return g_sim->va_release(s, a, b);
}
galloc_status_t Map(void *s, uintptr_t a, size_t b)
{
    g_counts.map++;
    return g_sim->map(s, a, b);
}
galloc_status_t Unmap(void *s, uintptr_t a, size_t b)
{
    g_counts.unmap++;
    return g_sim->unmap(s, a, b);
}
galloc_status_t HostAlloc(void *s, size_t b, void **p)
{
    g_counts.host_alloc++;
    return g_sim->host_alloc(s, b, p);
}
galloc_status_t D2h(void *s, void *dst, uintptr_t src, size_t b)
{
    g_counts.d2h++;
    return g_sim->copy_d2h(s, dst, src, b);
}
galloc_status_t H2d(void *s, uintptr_t dst, const void *src, size_t b)
{
    g_counts.h2d++;
    return g_sim->copy_h2d(s, dst, src, b);
}

// Register "sim_counted" once: sim's own table with the counted calls.
void RegisterCounted()
{
    if (g_sim != nullptr)
        return;
    g_sim = galloc_backend_find("sim");
    if (g_sim == nullptr || g_sim->host_alloc == nullptr || g_sim->copy_d2h == nullptr) {
        std::fprintf(stderr, "bench: the sim backend has no host memory and copies (sleep not implemented)\n");
        std::abort();
    }
    g_counted = *g_sim;
    g_counted.name = "sim_counted";
    g_counted.va_reserve = VaReserve;
    g_counted.va_release = VaRelease;
    g_counted.map = Map;
    g_counted.unmap = Unmap;
    g_counted.host_alloc = HostAlloc;
    g_counted.copy_d2h = D2h;
    g_counted.copy_h2d = H2d;
    galloc_status_t st = galloc_backend_register(&g_counted);
    if (st != GALLOC_OK)
        Die(nullptr, "galloc_backend_register(sim_counted)", st);
}

constexpr const char *kTag = "bench";

// GALLOC_BENCH_BACKEND, or "sim".
std::string BackendName()
{
    const char *e = std::getenv("GALLOC_BENCH_BACKEND");
    return e != nullptr && e[0] != '\0' ? e : "sim";
}

bool OnSim()
{
    return BackendName() == "sim";
}

// An allocator on the selected device: sim through "sim_counted" with
// sim_conf, another backend by name with GALLOC_BENCH_CONF's items; extra
// (allocator keys) is appended either way.
galloc_allocator_t *Open(const std::string &sim_conf, const std::string &extra)
{
    std::string name, conf;
    if (OnSim()) {
        RegisterCounted();
        name = "sim_counted";
        conf = sim_conf;
    } else {
        conf = "device_backend:" + BackendName();
        const char *more = std::getenv("GALLOC_BENCH_CONF");
        if (more != nullptr && more[0] != '\0')
            conf += std::string(",") + more;
    }
    if (!extra.empty())
        conf += (conf.empty() ? "" : ",") + extra;
    galloc_allocator_t *a = nullptr;
    char err[GALLOC_ERROR_MAX];
    galloc_status_t st =
        galloc_allocator_create(name.empty() ? nullptr : name.c_str(), 0, conf.c_str(), &a, err, sizeof err);
    if (st != GALLOC_OK) {
        std::fprintf(stderr, "bench: galloc_allocator_create(%s, \"%s\"): %s\n", name.empty() ? "NULL" : name.c_str(),
                     conf.c_str(), err);
        std::abort();
    }
    return a;
}

double Ms(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b)
{
    return std::chrono::duration<double, std::milli>(b - a).count();
}

// args: 0 small_1MiB / 1 large_20MiB; expandable; backed; offload.
void BM_SleepWake(benchmark::State &state)
{
    bool large = state.range(0) != 0, expandable = state.range(1) != 0, backed = state.range(2) != 0;
    bool offload = state.range(3) != 0;
    if (!OnSim() && !backed) {
        state.SkipWithError("unbacked memory is sim's alone");
        return;
    }
    galloc_allocator_t *a = Open(std::string("sim_capacity:4GiB,sim_backed:") + (backed ? "True" : "False"),
                                 expandable ? "expandable_segments:True" : "");
    galloc_status_t st;
    size_t size = large ? (size_t)20 << 20 : (size_t)1 << 20, n = large ? 52 : 1024;
    std::vector<void *> blocks(n);
    st = galloc_tag_begin(a, kTag);
    if (st != GALLOC_OK)
        Die(a, "galloc_tag_begin", st);
    for (size_t i = 0; i < n; i++) {
        st = galloc_malloc(a, size, 0, &blocks[i]);
        if (st != GALLOC_OK)
            Die(a, "galloc_malloc", st);
    }
    if ((st = galloc_tag_end(a, kTag)) != GALLOC_OK)
        Die(a, "galloc_tag_end", st);
    g_counts = Counts{};
    galloc_stats_t s0 = Stats(a);
    double sleep_ms = 0, wake_ms = 0;
    for (auto _ : state) {
        auto t0 = std::chrono::steady_clock::now();
        if ((st = galloc_sleep(a, kTag, offload ? kTag : nullptr)) != GALLOC_OK)
            Die(a, "galloc_sleep", st);
        auto t1 = std::chrono::steady_clock::now();
        if ((st = galloc_wake(a, kTag)) != GALLOC_OK)
            Die(a, "galloc_wake", st);
        auto t2 = std::chrono::steady_clock::now();
        sleep_ms += Ms(t0, t1);
        wake_ms += Ms(t1, t2);
    }
    galloc_stats_t s1 = Stats(a);
    galloc_sleep_stats_t ss = {};
    if ((st = galloc_sleep_stats(a, &ss)) != GALLOC_OK)
        Die(a, "galloc_sleep_stats", st);
    double iters = (double)state.iterations();
    double gib = (double)ss.bytes_slept / (double)(1u << 30); // over every iteration
    auto per_gib = [&](double v) { return gib > 0 ? v / gib : 0.0; };
    state.counters["GiB_per_sleep"] = gib / iters;
    state.counters["sleep_ms_per_GiB"] = per_gib(sleep_ms);
    state.counters["wake_ms_per_GiB"] = per_gib(wake_ms);
    if (OnSim()) { // the driver calls are counted on sim only
        state.counters["map_per_GiB"] = per_gib((double)g_counts.map);
        state.counters["unmap_per_GiB"] = per_gib((double)g_counts.unmap);
        state.counters["va_per_GiB"] = per_gib((double)g_counts.va);
        state.counters["d2h_per_GiB"] = per_gib((double)g_counts.d2h);
        state.counters["h2d_per_GiB"] = per_gib((double)g_counts.h2d);
        state.counters["host_alloc_per_GiB"] = per_gib((double)g_counts.host_alloc);
    }
    state.counters["dev_alloc_per_GiB"] = per_gib((double)(s1.num_device_alloc - s0.num_device_alloc));
    state.counters["dev_free_per_GiB"] = per_gib((double)(s1.num_device_free - s0.num_device_free));
    for (void *p : blocks)
        if ((st = galloc_free(a, p)) != GALLOC_OK)
            Die(a, "galloc_free", st);
    CheckAndDestroy(a);
}

void Args(benchmark::internal::Benchmark *b)
{
    b->ArgNames({"large_20MiB", "expandable", "backed", "offload"});
    for (int large = 0; large < 2; large++)
        for (int exp = 0; exp < 2; exp++)
            for (int backed = 0; backed < 2; backed++)
                for (int offload = 0; offload < 2; offload++)
                    b->Args({large, exp, backed, offload});
    b->Unit(benchmark::kMillisecond)->UseRealTime();
}

BENCHMARK(BM_SleepWake)->Name("sleep_wake")->Apply(Args);

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point a, Clock::time_point b)
{
    return std::chrono::duration<double>(b - a).count();
}

// The blocks of a first_sleep row: 1,024 of 1 MiB or 52 of 20 MiB.
void Blocks(bool large, size_t *size, size_t *n)
{
    *size = large ? (size_t)20 << 20 : (size_t)1 << 20;
    *n = large ? 52 : 1024;
}

[[noreturn]] void DieOps(const char *what, galloc_status_t st)
{
    std::fprintf(stderr, "bench: %s on backend %s failed: %s\n", what, BackendName().c_str(), galloc_strerror(st));
    std::abort();
}

// The plain pinned copy: the backend's own ops on a device of their own (no
// allocator): one host_alloc of all the bytes, one copy_d2h per block.
void PlainCopy(benchmark::State &state, size_t size, size_t n)
{
    const galloc_backend_ops_t *ops = galloc_backend_find(BackendName().c_str());
    if (ops == nullptr || ops->host_alloc == nullptr || ops->host_free == nullptr || ops->copy_d2h == nullptr) {
        state.SkipWithError("the backend has no pinned host memory and copies");
        return;
    }
    const char *env = std::getenv("GALLOC_BENCH_CONF");
    std::string options = OnSim() ? "sim_capacity:4GiB,sim_backed:True" : (env != nullptr ? env : "");
    galloc_backend_args_t args = {};
    args.struct_size = sizeof args;
    args.device = 0;
    args.options = options.c_str();
    void *s = nullptr;
    char err[GALLOC_ERROR_MAX] = "";
    galloc_status_t st = ops->open(&args, &s, err, sizeof err);
    if (st != GALLOC_OK) {
        std::fprintf(stderr, "bench: opening backend %s failed: %s\n", BackendName().c_str(), err);
        std::abort();
    }
    size_t total = size * n;
    uintptr_t dev = 0;
    if ((st = ops->segment_alloc(s, total, 0, &dev)) != GALLOC_OK)
        DieOps("segment_alloc", st);
    if (OnSim())
        std::memset(reinterpret_cast<void *>(dev), 0x5a, total); // backed: device memory is host memory
    double pin_s = 0, copy_s = 0;
    for (auto _ : state) {
        void *h = nullptr;
        auto t0 = Clock::now();
        if ((st = ops->host_alloc(s, total, &h)) != GALLOC_OK)
            DieOps("host_alloc", st);
        auto t1 = Clock::now();
        for (size_t i = 0; i < n; i++)
            if ((st = ops->copy_d2h(s, static_cast<char *>(h) + i * size, dev + i * size, size)) != GALLOC_OK)
                DieOps("copy_d2h", st);
        auto t2 = Clock::now();
        if ((st = ops->host_free(s, h, total)) != GALLOC_OK)
            DieOps("host_free", st);
        state.SetIterationTime(Seconds(t1, t2));
        pin_s += Seconds(t0, t1);
        copy_s += Seconds(t1, t2);
    }
    if ((st = ops->segment_free(s, dev, total, 0)) != GALLOC_OK)
        DieOps("segment_free", st);
    ops->close(s);
    double iters = (double)state.iterations(), gib = (double)total / (double)(1u << 30);
    state.counters["GiB"] = gib;
    state.counters["GiB_per_s"] = copy_s > 0 ? gib * iters / copy_s : 0.0;
    state.counters["pin_ms"] = pin_s * 1e3 / iters;
}

// args: mode (0 cold, 1 prepared, 2 plain pinned copy); 0 small_1MiB / 1 large_20MiB.
void BM_FirstSleep(benchmark::State &state)
{
    int mode = (int)state.range(0);
    size_t size, n;
    Blocks(state.range(1) != 0, &size, &n);
    if (mode == 2) {
        PlainCopy(state, size, n);
        return;
    }
    double prepare_s = 0, sleep_s = 0;
    int64_t pins_in_sleep = 0;
    std::vector<void *> blocks(n);
    for (auto _ : state) {
        // A fresh allocator: nothing pinned is waiting, as at a first sleep.
        galloc_allocator_t *a = Open("sim_capacity:4GiB,sim_backed:True", "");
        galloc_status_t st = galloc_tag_begin(a, kTag);
        if (st != GALLOC_OK)
            Die(a, "galloc_tag_begin", st);
        for (size_t i = 0; i < n; i++) {
            if ((st = galloc_malloc(a, size, 0, &blocks[i])) != GALLOC_OK)
                Die(a, "galloc_malloc", st);
            if (OnSim())
                std::memset(blocks[i], 0x5a, size); // backed: the copies read written pages
        }
        if ((st = galloc_tag_end(a, kTag)) != GALLOC_OK)
            Die(a, "galloc_tag_end", st);
        if (mode == 1) {
            auto t0 = Clock::now();
            if ((st = galloc_sleep_prepare(a, kTag, kTag)) != GALLOC_OK)
                Die(a, "galloc_sleep_prepare", st);
            prepare_s += Seconds(t0, Clock::now());
        }
        int64_t pins0 = g_counts.host_alloc;
        auto t1 = Clock::now();
        if ((st = galloc_sleep(a, kTag, kTag)) != GALLOC_OK)
            Die(a, "galloc_sleep", st);
        auto t2 = Clock::now();
        state.SetIterationTime(Seconds(t1, t2));
        sleep_s += Seconds(t1, t2);
        pins_in_sleep += g_counts.host_alloc - pins0;
        if ((st = galloc_wake(a, kTag)) != GALLOC_OK)
            Die(a, "galloc_wake", st);
        for (void *p : blocks)
            if ((st = galloc_free(a, p)) != GALLOC_OK)
                Die(a, "galloc_free", st);
        CheckAndDestroy(a);
    }
    double iters = (double)state.iterations(), gib = (double)(size * n) / (double)(1u << 30);
    state.counters["GiB"] = gib;
    state.counters["GiB_per_s"] = sleep_s > 0 ? gib * iters / sleep_s : 0.0;
    if (mode == 1)
        state.counters["prepare_ms"] = prepare_s * 1e3 / iters;
    if (OnSim())
        state.counters["host_alloc_in_sleep"] = (double)pins_in_sleep / iters;
}

void FirstSleepArgs(benchmark::internal::Benchmark *b)
{
    b->ArgNames({"mode", "large_20MiB"});
    for (int large = 0; large < 2; large++)
        for (int mode = 0; mode < 3; mode++)
            b->Args({mode, large});
    b->Unit(benchmark::kMillisecond)->UseManualTime()->Iterations(3);
}

BENCHMARK(BM_FirstSleep)->Name("first_sleep")->Apply(FirstSleepArgs);

} // namespace
} // namespace bench
