// storm.h: a concurrency storm on one allocator (issue 30), through the public
// API only, shared by the sim run (storm_test, under TSan in CI) and the real
// driver's (tests/backend:storm_gpu_test).
//
// Workers, one per stream, each with a seeded generator of its own, malloc
// and free blocks of varied sizes (small pool, large pool, up to 64 MiB),
// some inside their own sleepable tag, record_stream some onto another
// worker's stream, hand some to another worker to free, and synchronize
// streams. Control threads meanwhile call empty_cache, memory_stats (each
// copy checked alone, and against the previous one when no reset_peak ran
// between), galloc_check and fragmentation, reset_peak, snapshot writes,
// history start/stop, sleep and wake of the workers' tags, and
// set_memory_fraction. Storm phases alternate with calm ones (default-pool
// malloc and free only, no history, no sleep) in which the stripe path of
// per-stream locking opens. Workers count what their successful calls must
// have done to the stats (the serial recount) and every refusal they must
// cope with (GALLOC_E_OOM under a low fraction, GALLOC_E_ASLEEP from a
// sleeping tag).
//
// Finish then frees every block, synchronizes every stream, empties the
// cache, wakes every tag and asserts (GoogleTest) that galloc_check passes
// and that the stats equal the workers' recount.
#ifndef GA_TESTS_RELIABILITY_STORM_H
#define GA_TESTS_RELIABILITY_STORM_H

#include <cstdint>
#include <string>
#include <vector>

extern "C" {
#include <galloc/galloc.h>
}

namespace storm {

// What a storm runs on and for how long.
struct Config {
    galloc_allocator_t *a = nullptr;
    std::vector<galloc_stream_t> streams; // one per worker: the worker count
    double seconds = 3;                   // wall time of the storm itself
    uint64_t seed = 1;                    // worker t uses seed + t, control thread c seed + 1000 + c
    std::string snapshot_dir;             // where snapshots are written
    double min_fraction = 0.05;           // the lowest memory fraction the fraction thread sets
    size_t max_live = 32;                 // blocks a worker holds at most
};

// Operation kinds, each counted once per call made.
enum Op {
    kMalloc,       // default-pool malloc that succeeded
    kTagMalloc,    // malloc inside the worker's tag that succeeded
    kFree,         // free of a live block
    kRecordStream, // record_stream onto another worker's stream
    kSyncOwn,      // stream_synchronize of the worker's own stream
    kSyncOther,    // stream_synchronize of another worker's stream
    kOom,          // malloc refused with GALLOC_E_OOM
    kAsleep,       // tag malloc refused with GALLOC_E_ASLEEP
    kEmptyCache,   // galloc_empty_cache
    kStats,        // galloc_memory_stats (invariants checked on the copy)
    kCheck,        // galloc_check, fragmentation, memory_summary, settings_string, last_error
    kResetPeak,    // galloc_stats_reset_peak
    kSnapshot,     // galloc_snapshot_write
    kHistory,      // galloc_record_memory_history start or stop
    kSleep,        // galloc_sleep that succeeded
    kWake,         // galloc_wake that succeeded
    kWakeOom,      // galloc_wake refused with GALLOC_E_OOM (fraction too low)
    kFraction,     // galloc_set_memory_fraction
    kCalmMalloc,   // default-pool malloc that succeeded in a calm phase (see Run)
    kPhase,        // switches between storm and calm phases
    kHandoff,      // a live block given to another worker to free
    kFreeHanded,   // free of a block another worker allocated
    kOpCount
};

// Name of an Op for the printed table.
const char *OpName(int op);

// One block a worker holds, and what it counted for it.
struct Live {
    void *p;
    size_t requested; // bytes asked
    size_t rounded;   // PyTorch's round_size: allocated_bytes counts at least this (the whole block
                      // when what is left of it is too small to split off)
};

// The recount: what the workers' successful calls must have done.
struct Recount {
    int64_t allocs[GALLOC_STAT_POOLS] = {};          // allocation.<pool>.allocated
    int64_t frees[GALLOC_STAT_POOLS] = {};           // allocation.<pool>.freed
    int64_t bytes_alloc[GALLOC_STAT_POOLS] = {};     // rounded sizes: allocated_bytes.<pool>.allocated is at least this
    int64_t bytes_freed[GALLOC_STAT_POOLS] = {};     // rounded sizes freed
    int64_t requested_alloc[GALLOC_STAT_POOLS] = {}; // requested_bytes.<pool>.allocated
    int64_t requested_freed[GALLOC_STAT_POOLS] = {}; // requested_bytes.<pool>.freed
    void Alloc(const Live &b);
    void Free(const Live &b);
    void Add(const Recount &o);
};

// What a storm did.
struct Result {
    uint64_t ops[kOpCount] = {};
    uint64_t errors = 0;           // calls that returned a status they must not
    std::string first_error;       // the first of them, with the allocator's message
    Recount recount;               // every worker's
    std::vector<Live> live;        // blocks still held when the storm stopped
    double seconds = 0;            // the storm's wall time
    std::vector<std::string> tags; // the workers' tags ("storm0", ...)
};

// Run the storm; returns when every thread has joined. Blocks the workers
// held are in result.live (StormFinish frees them).
Result Run(const Config &c);

// Print the per-kind table (one line per kind, then the total and rate).
void Print(const Config &c, const Result &r);

// Wake every tag, assert the state with blocks live, free every block,
// synchronize every stream, empty the cache and assert the end state:
// galloc_check passes, the stats equal the recount, nothing is held.
void Finish(const Config &c, Result &r);

// The storm as a test runs it: c's duration (GALLOC_STORM_SECONDS, else
// default_seconds), seed and snapshot folder (TEST_TMPDIR) from the
// environment, the seed recorded as a test property, then Run, Print and
// Finish; a failure prints the seed to rerun it with. Returns the result.
Result RunInTest(Config &c, double default_seconds);

// GALLOC_STORM_SECONDS (default def), GALLOC_STORM_SEED (default: from the
// clock), GALLOC_STORM_THREADS (default def).
double SecondsFromEnv(double def);
uint64_t SeedFromEnv();
int ThreadsFromEnv(int def);

} // namespace storm

#endif // GA_TESTS_RELIABILITY_STORM_H
