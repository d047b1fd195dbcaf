// storm_test: the concurrency storm (storm.h) on the sim device, seen through
// simwatch so that destroy must leave nothing live on the device. Streams and
// events exist on sim; with manual events a record_stream'd block stays
// pending until its streams are synchronized, as on a busy GPU.
//
// Tagged "concurrency": CI runs it in every stage, under ThreadSanitizer too,
// for its budget (GALLOC_CI_STORM_SECONDS in .ci/budgets) per configuration;
// tests/reliability/storm.sh runs it longer. Environment:
// GALLOC_STORM_SECONDS (default 3), GALLOC_STORM_SEED (default: from the
// clock, printed), GALLOC_STORM_THREADS (workers, default 8).
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "tests/reliability/storm.h"

extern "C" {
#include <galloc/galloc.h>
#include "tests/reliability/simwatch.h"
}

namespace {

// The allocator's settings, one storm each: PyTorch's defaults; expandable
// segments (map and unmap beside sleep's, the stripe path's growable best
// fit); garbage collection under the moving fraction with a split limit
// (oversize blocks, the GC clock that closes the stripe path).
class Storm : public ::testing::TestWithParam<const char *> {};

TEST_P(Storm, SimWorkersAndControlThreadsKeepTheStatsOfOneSerialOrder)
{
    ASSERT_EQ(simwatch_register(), GALLOC_OK);
    storm::Config c;
    char err[GALLOC_ERROR_MAX] = "";
    std::string conf = std::string("sim_capacity:8GiB,sim_manual_events:True") + (*GetParam() ? "," : "") + GetParam();
    ASSERT_EQ(galloc_allocator_create_ex("simwatch", 0, conf.c_str(), GALLOC_CREATE_NO_ENV, &c.a, err, sizeof err),
              GALLOC_OK)
        << err;
    int workers = storm::ThreadsFromEnv(8);
    ASSERT_GE(workers, 1);
    for (int t = 0; t < workers; t++)
        c.streams.push_back((galloc_stream_t)(t + 1)); // sim streams are any handle; 0 stays the default stream
    storm::Result r = storm::RunInTest(c, 3);
    EXPECT_GT(r.ops[storm::kSleep], 0u);

    galloc_allocator_destroy(c.a);
    ga_sim_counters_t sim;
    ASSERT_TRUE(simwatch_last_close(&sim));
    EXPECT_TRUE(simwatch_counters_clean(&sim))
        << "leak: segments " << sim.live_segments << ", mapped " << sim.live_mapped_bytes << ", reservations "
        << sim.live_reservations << ", events " << sim.live_events << ", host blocks " << sim.live_host_allocs;
    EXPECT_EQ(sim.violations, 0u);
    if (HasFailure())
        std::printf("storm failed with GALLOC_STORM_SEED=%llu\n", (unsigned long long)c.seed);
}

const char *const kConfs[] = {"", "expandable_segments:True", "garbage_collection_threshold:0.6,max_split_size_mb:40"};
const char *const kConfNames[] = {"Defaults", "Expandable", "GcAndSplitLimit"};

std::string ConfName(const ::testing::TestParamInfo<const char *> &info)
{
    return kConfNames[info.index];
}

INSTANTIATE_TEST_SUITE_P(Confs, Storm, ::testing::ValuesIn(kConfs), ConfName);

} // namespace
