// storm_control.cc: the storm's control threads (storm.h): empty_cache,
// memory_stats with the invariants of one consistent copy and of two copies
// in order, galloc_check, reset_peak, snapshots, history, sleep and wake,
// the memory fraction.
#include <chrono>
#include <string>

#include "tests/reliability/storm_int.h"

namespace storm {

namespace {

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
    GALLOC_STATS_FIELDS(STORM_ARRAY_, STORM_STAT_, STORM_INT_, STORM_INT_)
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

// Two copies read in this order, with no reset_peak in between: in one
// serial order of every call, totals only grow, and so does each peak, which
// also covers the earlier current value.
void CheckLater(Shared *sh, const galloc_stats_t &s1, const galloc_stats_t &s2)
{
    std::string bad;
    auto one = [&](const char *name, int p, const galloc_stat_t &x, const galloc_stat_t &y) {
        if (bad.empty() && (y.allocated < x.allocated || y.freed < x.freed || y.peak < x.peak || y.peak < x.current))
            bad = std::string(name) + "[" + std::to_string(p) + "]: earlier current " + std::to_string(x.current) +
                  ", peak " + std::to_string(x.peak) + ", allocated " + std::to_string(x.allocated) + ", freed " +
                  std::to_string(x.freed) + "; later peak " + std::to_string(y.peak) + ", allocated " +
                  std::to_string(y.allocated) + ", freed " + std::to_string(y.freed);
    };
#define STORM_ARRAY_(name)                                                                                             \
    for (int p = 0; p < GALLOC_STAT_POOLS; p++)                                                                        \
        one(#name, p, s1.name[p], s2.name[p]);
#define STORM_STAT_(name) one(#name, -1, s1.name, s2.name);
#define STORM_INT_(name)
    GALLOC_STATS_FIELDS(STORM_ARRAY_, STORM_STAT_, STORM_INT_, STORM_INT_)
#undef STORM_ARRAY_
#undef STORM_STAT_
#undef STORM_INT_
    if (!bad.empty())
        sh->Error(("two memory_stats copies: " + bad).c_str(), GALLOC_E_CORRUPT);
}

void StatsLoop(Shared *sh, std::mt19937_64 &rng, Counts ops)
{
    galloc_allocator_t *a = sh->c().a;
    galloc_stats_t prev;
    uint64_t prev_resets = 1; // odd: no earlier copy to compare with
    while (!sh->stopped()) {
        galloc_stats_t s;
        s.struct_size = sizeof s;
        uint64_t resets = sh->resets();
        galloc_status_t st = galloc_memory_stats(a, &s);
        if (st != GALLOC_OK) {
            sh->Error("memory_stats", st);
            resets = 1;
        } else {
            CheckCopy(sh, s);
            // No reset_peak began or ran since before the previous copy.
            if (resets % 2 == 0 && resets == prev_resets && sh->resets() == resets)
                CheckLater(sh, prev, s);
            prev = s;
        }
        prev_resets = resets;
        ops[kStats]++;
        if (rng() % 8 == 0) {
            if ((st = galloc_check(a)) != GALLOC_OK)
                sh->Error("galloc_check during the storm", st);
            galloc_fragmentation_t f;
            f.struct_size = sizeof f;
            if ((st = galloc_fragmentation(a, &f)) != GALLOC_OK)
                sh->Error("fragmentation", st);
            char text[4096];
            size_t needed = 0;
            if ((st = galloc_memory_summary(a, rng() % 2, text, sizeof text, &needed)) != GALLOC_OK)
                sh->Error("memory_summary", st);
            if ((st = galloc_settings_string(a, text, sizeof text, &needed)) != GALLOC_OK)
                sh->Error("settings_string", st);
            galloc_last_error(a, text, sizeof text);
            ops[kCheck]++;
        }
        Pause(rng, 1000);
    }
}

void ResetPeakLoop(Shared *sh, std::mt19937_64 &rng, Counts ops)
{
    while (!sh->stopped()) {
        sh->ResetBegins();
        galloc_status_t st = galloc_stats_reset_peak(sh->c().a);
        sh->ResetEnds();
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
        h.enabled = sh->calm() ? GALLOC_HISTORY_NONE : (galloc_history_t)(rng() % 3);
        // Native stacks (stacks ALL) now and then, never under TSan: a thread
        // that called libunwind's unw_backtrace crashes TSan at exit (its
        // trace cache's TSD destructor locks a mutex after TSan finished the
        // thread: google/sanitizers#943), whatever galloc does.
#if defined(__SANITIZE_THREAD__)
        bool native = false;
#else
        bool native = rng() % 8 == 0;
#endif
        h.context = (galloc_context_t)(rng() % 4);
        h.stacks = native ? GALLOC_STACKS_ALL : GALLOC_STACKS_PYTHON;
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
        if (sh->calm()) {
            Pause(rng, 3000);
            continue;
        }
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

} // namespace

const Loop kLoops[] = {EmptyCacheLoop, StatsLoop, ResetPeakLoop, SnapshotLoop, HistoryLoop, SleepLoop, FractionLoop};
const size_t kLoopCount = sizeof kLoops / sizeof kLoops[0];

} // namespace storm
