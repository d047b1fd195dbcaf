// host_fixture.h: the host cache tests' allocator on the sim device, seen
// through simwatch (the device's counters: pinned host blocks and registered
// ranges, events; leaks at destroy), with the host stats as a map keyed by
// torch.cuda.host_memory_stats()'s names, so an expected figure is written
// as PyTorch's test_host_memory_stats writes it.
#ifndef GA_TESTS_HOST_HOST_FIXTURE_H
#define GA_TESTS_HOST_HOST_FIXTURE_H

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <string>

extern "C" {
#include <galloc/galloc.h>
#include "tests/reliability/simwatch.h"
}

namespace host_test {

constexpr uint64_t KiB = 1 << 10;
constexpr uint64_t MiB = 1 << 20;

using HostStats = std::map<std::string, int64_t>;

inline int CollectKey(void *ctx, const char *key, int64_t value)
{
    (*static_cast<HostStats *>(ctx))[key] = value;
    return 0;
}

// Every key at 0, as PyTorch's test_host_memory_stats' empty_stats().
inline HostStats Empty()
{
    galloc_host_stats_t s = {};
    s.struct_size = sizeof s;
    HostStats m;
    galloc_host_stats_foreach(&s, CollectKey, &m);
    return m;
}

class HostTest : public ::testing::Test {
  protected:
    void Make(const std::string &extra = "")
    {
        Destroy();
        ASSERT_EQ(simwatch_register(), GALLOC_OK);
        std::string conf = "sim_capacity:1GiB,sim_manual_events:True" + (extra.empty() ? "" : "," + extra);
        char err[GALLOC_ERROR_MAX] = "";
        ASSERT_EQ(galloc_allocator_create("simwatch", 0, conf.c_str(), &a_, err, sizeof err), GALLOC_OK) << err;
        sim_ = simwatch_last_state();
    }
    void Destroy()
    {
        if (a_ == nullptr)
            return;
        EXPECT_EQ(galloc_check(a_), GALLOC_OK) << Err();
        galloc_allocator_destroy(a_);
        a_ = nullptr;
        ga_sim_counters_t c;
        ASSERT_TRUE(simwatch_last_close(&c));
        EXPECT_TRUE(simwatch_counters_clean(&c))
            << "leak: host blocks " << c.live_host_allocs << " (" << c.live_host_bytes << " bytes), registered "
            << c.live_host_registered << ", events " << c.live_events;
        EXPECT_EQ(c.violations, 0u) << "galloc broke the sim device's contract";
    }
    void SetUp() override { Make(); }
    void TearDown() override { Destroy(); }

    std::string Err()
    {
        char msg[GALLOC_ERROR_MAX] = "";
        galloc_last_error(a_, msg, sizeof msg);
        return msg;
    }
    HostStats Stats()
    {
        galloc_host_stats_t s = {};
        s.struct_size = sizeof s;
        EXPECT_EQ(galloc_host_memory_stats(a_, &s), GALLOC_OK);
        HostStats m;
        EXPECT_EQ(galloc_host_stats_foreach(&s, CollectKey, &m), (size_t)GALLOC_HOST_STATS_KEY_COUNT);
        return m;
    }
    // Every key of want equals the allocator's figure, timing totals aside
    // (host_alloc_time.{total,max,min,avg} are wall time; .count is exact).
    void Expect(const HostStats &want, const std::string &where)
    {
        HostStats got = Stats();
        for (const auto &kv : want) {
            bool timed = kv.first.find("_time.") != std::string::npos && kv.first.find(".count") == std::string::npos;
            if (!timed) {
                EXPECT_EQ(got[kv.first], kv.second) << where << ": " << kv.first;
            }
        }
        EXPECT_EQ(galloc_check(a_), GALLOC_OK) << where << ": " << Err();
    }
    void *Pin(size_t n)
    {
        void *p = nullptr;
        EXPECT_EQ(galloc_host_malloc(a_, n, &p), GALLOC_OK) << Err();
        EXPECT_NE(p, nullptr);
        return p;
    }
    void Unpin(void *p) { EXPECT_EQ(galloc_host_free(a_, p), GALLOC_OK) << Err(); }
    ga_sim_counters_t Sim()
    {
        ga_sim_counters_t c = {};
        EXPECT_EQ(ga_sim_counters(sim_, &c), GALLOC_OK);
        return c;
    }
    void Complete(galloc_stream_t s) { ASSERT_EQ(ga_sim_stream_complete(sim_, s), GALLOC_OK); }

    galloc_allocator_t *a_ = nullptr;
    void *sim_ = nullptr;
};

// PyTorch's Stat moved by n: allocated, current and peak grow (a first rise).
inline void Rise(HostStats &m, const std::string &stat, int64_t n)
{
    m[stat + ".allocated"] += n;
    m[stat + ".current"] += n;
    if (m[stat + ".current"] > m[stat + ".peak"])
        m[stat + ".peak"] = m[stat + ".current"];
}

inline void Fall(HostStats &m, const std::string &stat, int64_t n)
{
    m[stat + ".freed"] += n;
    m[stat + ".current"] -= n;
}

} // namespace host_test

#endif // GA_TESTS_HOST_HOST_FIXTURE_H
