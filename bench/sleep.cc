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
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdio>
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

double Ms(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b)
{
    return std::chrono::duration<double, std::milli>(b - a).count();
}

// args: 0 small_1MiB / 1 large_20MiB; expandable; backed; offload.
void BM_SleepWake(benchmark::State &state)
{
    RegisterCounted();
    bool large = state.range(0) != 0, expandable = state.range(1) != 0, backed = state.range(2) != 0;
    bool offload = state.range(3) != 0;
    std::string conf = std::string("sim_capacity:4GiB,sim_backed:") + (backed ? "True" : "False") +
                       (expandable ? ",expandable_segments:True" : "");
    galloc_allocator_t *a = nullptr;
    char err[GALLOC_ERROR_MAX];
    galloc_status_t st = galloc_allocator_create("sim_counted", 0, conf.c_str(), &a, err, sizeof err);
    if (st != GALLOC_OK) {
        std::fprintf(stderr, "bench: galloc_allocator_create(sim_counted, \"%s\"): %s\n", conf.c_str(), err);
        std::abort();
    }
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
    state.counters["map_per_GiB"] = per_gib((double)g_counts.map);
    state.counters["unmap_per_GiB"] = per_gib((double)g_counts.unmap);
    state.counters["va_per_GiB"] = per_gib((double)g_counts.va);
    state.counters["d2h_per_GiB"] = per_gib((double)g_counts.d2h);
    state.counters["h2d_per_GiB"] = per_gib((double)g_counts.h2d);
    state.counters["host_alloc_per_GiB"] = per_gib((double)g_counts.host_alloc);
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

} // namespace
} // namespace bench
