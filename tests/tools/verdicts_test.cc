// verdicts_test.cc: one verdict per state (issue 38), in the engine every
// command calls. A mid-run snapshot whose state at the first entry holds more
// than the device is an OOM before the first event (genuine, the state's
// figures, PyTorch's message whole), the same in a column, a fit row, its
// bisection and its owners; a state that fits on exactly its size replays.
// The device size a unit is replayed on and what the trace shows it held;
// a --reserve that leaves the allocator nothing is refused; frag@peak is of
// the reserved peak's moment when that is the seeded state.
//
// data/state_larger.pickle (make_verdict_shapes.py): 10 GiB live and
// 11,844,714,496 bytes (11296 MiB) reserved at the first entry, in a 6 GiB
// segment and a 5152 MiB one; no device size recorded.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <utility>

#include "tests/tools/fit_util.h"

extern "C" {
#include <galloc/galloc.h>
#include "tools/engine/owners.h"
#include "tools/engine/replay.h"
#include "tools/fit/fit.h"
}

namespace {

constexpr uint64_t MiB = uint64_t{1} << 20, GiB = uint64_t{1} << 30;
constexpr uint64_t kStateReserved = 11296 * MiB; // 6 GiB + 5152 MiB
constexpr uint64_t kStateLive = 10 * GiB;        // 6 GiB + 4 GiB

std::string Data(const char *name)
{
    return std::string("tests/tools/data/") + name;
}

// One column of u's own run on its device (device_memory 0) or another.
struct Column {
    ga_replay_column_t c = {};
    int rc = -1;
    Column(const ga_job_unit_t *u, bool owners)
    {
        ga_replay_opts_t o = {};
        o.owners = owners;
        o.watch_peak = true;
        o.check = true;
        ga_replay_spec_t spec = ga_replay_default_spec(u);
        rc = ga_replay_column(u, &o, &spec, nullptr, &c);
    }
    ~Column() { ga_replay_column_release(&c); }
    Column(const Column &) = delete;
    Column &operator=(const Column &) = delete;
};

TEST(StateLargerThanDevice, IsAnOomBeforeTheFirstEvent)
{
    LoadedJob j(Data("state_larger.pickle"), 11 * GiB);
    ASSERT_TRUE(j.ok) << j.error;
    const ga_job_unit_t *u = j.unit();
    ASSERT_TRUE(u->seeded);
    EXPECT_EQ(u->seed.reserved_bytes, kStateReserved);
    EXPECT_EQ(u->seed.live_bytes, kStateLive);
    Column col(u, true);
    ASSERT_EQ(col.rc, 0);
    const ga_replay_column_t &c = col.c;
    EXPECT_EQ(c.create_status, GALLOC_OK);
    EXPECT_EQ(c.errors, 0u) << c.first_error;
    EXPECT_EQ(c.events, 0u); // the replay ends there: nothing ran from a state that never existed
    EXPECT_EQ(c.ooms_total, 1u);
    ASSERT_EQ(c.n_ooms, 1u);
    EXPECT_FALSE(ga_replay_fits(&c));
    const ga_replay_oom_t &o = c.ooms[0];
    EXPECT_TRUE(o.facts.at_start);
    EXPECT_EQ(o.facts.cls, GA_OOM_GENUINE);
    EXPECT_EQ(o.event, 0u);
    EXPECT_TRUE(o.prologue);
    EXPECT_EQ(o.size, 5152 * MiB); // the second segment, after the 6 GiB one: 5 GiB were free
    EXPECT_EQ(o.facts.live, static_cast<int64_t>(kStateLive));
    EXPECT_EQ(o.facts.cached_free, static_cast<int64_t>(1056 * MiB));
    EXPECT_EQ(o.facts.limit, 11 * GiB);
    EXPECT_EQ(o.facts.device_free, 5 * GiB);
    EXPECT_EQ(o.allocated, static_cast<int64_t>(6 * GiB));
    // PyTorch's message whole (a failed call's first_error cut it at 1 KiB less its prefix)
    std::string msg = o.message;
    EXPECT_EQ(msg.rfind("CUDA out of memory. Tried to allocate 5.03 GiB. GPU 0 has a total capacity of 11.00 GiB "
                        "of which 5.00 GiB is free.",
                        0),
              0u)
        << msg;
    EXPECT_NE(msg.find("#optimizing-memory-usage-with-pytorch-cuda-alloc-conf)"), std::string::npos) << msg;
    // the owners: what was seeded before the failed request, adding up
    ASSERT_NE(c.owners, nullptr);
    ASSERT_EQ(c.owners->n_ooms, 1u);
    const ga_owners_moment_t &m = c.owners->ooms[0];
    EXPECT_EQ(m.event, GA_OWNERS_BEFORE_EVENTS);
    EXPECT_EQ(m.request_cls, UINT32_MAX);
    EXPECT_EQ(m.request_size, 5152 * MiB);
    EXPECT_EQ(m.allocated, static_cast<int64_t>(6 * GiB));
    EXPECT_EQ(m.reserved, static_cast<int64_t>(6 * GiB));
    char why[256] = "";
    EXPECT_TRUE(ga_owners_moment_check(&m, why, sizeof why)) << why;
}

TEST(StateLargerThanDevice, LiveBytesAloneLargerThanTheDevice)
{
    LoadedJob j(Data("state_larger.pickle"), 9 * GiB);
    ASSERT_TRUE(j.ok) << j.error;
    Column col(j.unit(), false);
    ASSERT_EQ(col.rc, 0);
    ASSERT_EQ(col.c.n_ooms, 1u);
    const ga_oom_facts_t &f = col.c.ooms[0].facts;
    EXPECT_TRUE(f.at_start);
    EXPECT_EQ(f.limit, 9 * GiB);
    EXPECT_GT(static_cast<uint64_t>(f.live), f.limit);
    EXPECT_EQ(col.c.ooms[0].size, 5152 * MiB); // 6 GiB made, 3 GiB left
}

TEST(StateLargerThanDevice, FitsOnExactlyItsSize)
{
    LoadedJob j(Data("state_larger.pickle"), kStateReserved);
    ASSERT_TRUE(j.ok) << j.error;
    Column col(j.unit(), true);
    ASSERT_EQ(col.rc, 0);
    EXPECT_EQ(col.c.errors, 0u) << col.c.first_error;
    EXPECT_EQ(col.c.ooms_total, 0u);
    EXPECT_EQ(col.c.events, 6u);
    EXPECT_EQ(col.c.stats.reserved_bytes[GALLOC_STAT_ALL].peak, static_cast<int64_t>(kStateReserved));
}

TEST(StateLargerThanDevice, SeedApplySaysOutOfMemory)
{
    LoadedJob j(Data("state_larger.pickle"));
    ASSERT_TRUE(j.ok) << j.error;
    galloc_allocator_t *a = nullptr;
    char err[1024] = "";
    ASSERT_EQ(
        galloc_allocator_create_ex("sim", 0, "sim_capacity:11811160064", GALLOC_CREATE_NO_ENV, &a, err, sizeof err),
        GALLOC_OK)
        << err;
    ga_idmap_t map;
    ga_idmap_init(&map);
    ga_replay_oom_t oom;
    EXPECT_EQ(ga_seed_apply(a, &map, &j.unit()->seed, err, sizeof err, &oom), GA_SEED_OOM);
    EXPECT_NE(std::string(err).find("galloc_malloc(5402263552): out of device memory"), std::string::npos) << err;
    EXPECT_EQ(oom.size, 5152 * MiB);
    // what is left: the 6 GiB block seeded before, mapped by its trace id, and nothing else
    EXPECT_EQ(ga_idmap_size(&map), 1u);
    galloc_stats_t s = {};
    s.struct_size = sizeof s;
    ASSERT_EQ(galloc_memory_stats(a, &s), GALLOC_OK);
    EXPECT_EQ(s.allocated_bytes[GALLOC_STAT_ALL].current, static_cast<int64_t>(6 * GiB));
    EXPECT_EQ(galloc_check(a), GALLOC_OK);
    ga_idmap_free(&map);
    galloc_allocator_destroy(a);
}

TEST(StateLargerThanDevice, FitRowsDoNotFitAndTheSmallestDeviceIsTheState)
{
    FitJob f(Data("state_larger.pickle"), 11 * GiB);
    ASSERT_TRUE(f.ok) << f.error;
    // expandable_segments maps whole 20 MiB pages: the 6 GiB segment takes 6160 MiB, the state 11300 MiB
    const std::pair<const char *, uint64_t> confs[] = {
        {"", kStateReserved}, {"max_split_size_mb:1024", kStateReserved}, {"expandable_segments:True", 11300 * MiB}};
    for (const auto &[conf, smallest] : confs) {
        ga_fit_run_t r;
        EXPECT_EQ(ga_fit_replay(&f.job, conf, false, &r), 0) << conf << ": " << r.error;
        EXPECT_FALSE(r.failed) << conf << ": " << r.error;
        EXPECT_EQ(r.refused, GALLOC_OK);
        EXPECT_FALSE(r.fits) << conf;
        EXPECT_TRUE(r.oom.at_start) << conf;
        EXPECT_EQ(r.fail_event, 0u) << conf;
        EXPECT_EQ(r.oom.cls, GA_OOM_GENUINE) << conf;
        uint32_t replays = 0;
        EXPECT_EQ(ga_fit_min_memory(&f.job, conf, false, &r, &replays), smallest) << conf;
    }
}

TEST(DeviceSize, AssumedInferredAndGiven)
{
    LoadedJob assumed(Data("state_larger.pickle"));
    ASSERT_TRUE(assumed.ok) << assumed.error;
    const ga_job_unit_t *u = assumed.unit();
    EXPECT_EQ(u->memory_source, GA_JOB_MEM_DEFAULT);
    EXPECT_EQ(u->memory, 80 * GiB);
    EXPECT_EQ(u->recorded_memory, 0u);
    EXPECT_STREQ(ga_job_memory_source_text(u->memory_source), "not recorded: assumed, --device-memory sets it");
    // what the snapshot shows the device held, whatever size it is replayed on
    EXPECT_EQ(u->reserved_first, kStateReserved);
    EXPECT_EQ(u->reserved_last, kStateReserved);
    EXPECT_EQ(u->reserved_peak, kStateReserved);
    EXPECT_EQ(u->max_alloc, 6 * GiB); // the 6 GiB block live before the trace is a request of the job too
    EXPECT_EQ(u->n, 6u);
    EXPECT_EQ(u->notes.prologue, 2u); // 4 events of the trace, 2 blocks live before it

    LoadedJob inferred(Data("oom_entry.pickle"));
    ASSERT_TRUE(inferred.ok) << inferred.error;
    u = inferred.unit();
    EXPECT_EQ(u->memory_source, GA_JOB_MEM_OOM_ENTRIES);
    EXPECT_EQ(u->memory, kStateReserved + GiB); // reserved then + device_free of its oom entry
    EXPECT_EQ(u->reserved_peak, kStateReserved);
    EXPECT_EQ(u->max_alloc, 6 * GiB);

    LoadedJob given(Data("oom_entry.pickle"), 16 * GiB);
    ASSERT_TRUE(given.ok) << given.error;
    u = given.unit();
    EXPECT_EQ(u->memory_source, GA_JOB_MEM_OPTION);
    EXPECT_EQ(u->memory, 16 * GiB);
    EXPECT_EQ(u->recorded_memory, kStateReserved + GiB);
}

TEST(DeviceSize, ReserveNotLessThanTheDeviceIsRefused)
{
    for (uint64_t reserve : {80 * GiB, 100 * 1024 * GiB}) {
        FitJob f({Data("state_larger.pickle")}, 0, reserve);
        EXPECT_FALSE(f.ok) << reserve;
        EXPECT_NE(f.error.find("--reserve "), std::string::npos) << f.error;
        EXPECT_NE(f.error.find(" is not less than the device's 80.00 GiB (not recorded: assumed, --device-memory "
                               "sets it): the allocator would have no memory"),
                  std::string::npos)
            << f.error;
    }
    FitJob ok({Data("state_larger.pickle")}, 0, 80 * GiB - 2 * MiB);
    ASSERT_TRUE(ok.ok) << ok.error;
    EXPECT_EQ(ok.loaded.units[0].memory, 2 * MiB);
    // a snapshot's size from its oom entries is the allocator's already: a reserve only adds to the answer
    FitJob snap({Data("oom_entry.pickle")}, 0, 100 * 1024 * GiB);
    EXPECT_TRUE(snap.ok) << snap.error;
}

// The reserved peak is the seeded state (1044 MiB, all of it allocated):
// frag@peak is of that moment, 0, not of a later, smaller one (it read 97.3 %).
TEST(FragAtPeak, OfTheSeededStateWhenItIsThePeak)
{
    FitJob f(Data("shrinking_window.pickle"));
    ASSERT_TRUE(f.ok) << f.error;
    ga_fit_run_t r;
    ASSERT_EQ(ga_fit_replay(&f.job, "", true, &r), 0) << r.error;
    EXPECT_EQ(r.peak_reserved, static_cast<int64_t>(1044 * MiB));
    EXPECT_EQ(r.peak_allocated, static_cast<int64_t>(1044 * MiB));
    EXPECT_EQ(r.allocated_at_peak, static_cast<int64_t>(1044 * MiB));
    EXPECT_EQ(ga_fit_frag_at_peak(&r), 0.0);
}

} // namespace
