// random_test: >= 100,000 mixed operations, each checked against a naive
// reference model of PyTorch's policy (random_model.h) and followed by the
// pool's own invariant check. The seed is printed on failure; GALLOC_SEED
// overrides it.
#include "tests/pool/random_api.h"

namespace {

using namespace galloc_random;

TEST(Random, DefaultPolicyMatchesModel)
{
    Model m;
    m.capacity = 512 * MiB; // small enough that OOM and the flush-and-retry path run often
    run("", m, 100000, seed_for(1));
}

// The same 100,000 steps through the public API: cache hits and plain frees
// take the stripe path (pool/stripe_path.c), and the model still predicts every
// address and every stat after every step.
TEST(Random, DefaultPolicyThroughTheApiMatchesModel)
{
    Model m;
    m.capacity = 512 * MiB;
    run_api("", m, 100000, seed_for(1), false);
}

TEST(Random, StreamsThroughTheApiMatchModel)
{
    Model m;
    m.capacity = 512 * MiB;
    run_api("sim_manual_events:True", m, 25000, seed_for(4), true);
}

TEST(Random, MemoryFractionMatchesModel)
{
    // The fraction caps reserved memory below the device: alloc_block fails
    // before the device is asked, and the flush-and-retry path runs as for a
    // full device.
    Model m;
    m.capacity = 1024 * MiB;
    m.frac = 0.5;
    run("per_process_memory_fraction:0.5", m, 25000, seed_for(6));
}

TEST(Random, GarbageCollectionMatchesModel)
{
    // GC acts only with a fraction set; it frees whole cached large segments
    // by age before asking for a new one, once reserved memory passes 60% of
    // the allowed 512 MiB.
    Model m;
    m.capacity = 1024 * MiB;
    m.frac = 0.5;
    m.gc = 0.6;
    Model r = run("per_process_memory_fraction:0.5,garbage_collection_threshold:0.6", m, 25000, seed_for(7));
    EXPECT_GT(r.gc_freed, 100) << "the collector must have run, not only the flush";
}

TEST(Random, MaxSplitSizeMatchesModel)
{
    Model m;
    m.capacity = 512 * MiB;
    m.mss = 40 * MiB;
    run("max_split_size_mb:40", m, 25000, seed_for(2));
}

TEST(Random, RoundupDivisionsMatchModel)
{
    Model m;
    m.capacity = 768 * MiB;
    m.div = 4;
    run("roundup_power2_divisions:4", m, 25000, seed_for(3));
}

} // namespace

namespace {

TEST(Random, MultiStreamMatchesModel)
{
    Model m;
    m.capacity = 512 * MiB;
    run("sim_manual_events:True", m, 25000, seed_for(4), true);
}

TEST(Random, MultiStreamRetryPoolAfterSyncMatchesModel)
{
    Model m;
    m.capacity = 512 * MiB;
    m.retry_pool = true;
    run("sim_manual_events:True,retry_pool_after_sync:True", m, 25000, seed_for(5), true);
}

} // namespace
