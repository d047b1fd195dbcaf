// hooks_fixture.h: the fixture of hooks_test.cc and hooks_faults_test.cc: an
// allocator on the simwatch sim device, hook_ledger.h ledgers, and checks that
// every ledger, reserved_bytes and the device agree. Named (not anonymous)
// namespace: the two files' TEST_F and TEST_P share its classes.
#ifndef GA_TESTS_API_HOOKS_FIXTURE_H
#define GA_TESTS_API_HOOKS_FIXTURE_H

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

extern "C" {
#include <galloc/galloc.h>
#include "tests/reliability/simwatch.h"
}
#include "tests/util/hook_ledger.h"

namespace hooks_fixture {

using hook_test::Describe;
using hook_test::Ledger;

constexpr size_t MiB = size_t{1} << 20;
constexpr int ALL = GALLOC_STAT_ALL;

class Hooks : public ::testing::Test {
  protected:
    void Make(const std::string &conf = "", const std::string &capacity = "1GiB")
    {
        ASSERT_EQ(simwatch_register(), GALLOC_OK);
        std::string c = "sim_backed:False,sim_capacity:" + capacity + (conf.empty() ? "" : "," + conf);
        char err[GALLOC_ERROR_MAX] = "";
        ASSERT_EQ(galloc_allocator_create("simwatch", 0, c.c_str(), &a_, err, sizeof err), GALLOC_OK) << err;
        sim_ = simwatch_last_state();
    }
    // Destroy: the ledgers told of every range still present (DESTROY), the
    // device left with nothing.
    void Destroy()
    {
        if (a_ == nullptr)
            return;
        EXPECT_EQ(galloc_check(a_), GALLOC_OK) << Err();
        galloc_allocator_destroy(a_);
        a_ = nullptr;
        ga_sim_counters_t c;
        ASSERT_TRUE(simwatch_last_close(&c));
        EXPECT_TRUE(simwatch_counters_clean(&c)) << "leak: segments " << c.live_segments << ", mapped "
                                                 << c.live_mapped_bytes << ", reservations " << c.live_reservations;
        for (Ledger *l : ledgers_) {
            l->Forget();
            EXPECT_EQ(l->Bytes(), 0) << "destroy must tell every range away";
            EXPECT_EQ(l->errors(), "");
        }
    }
    void TearDown() override { Destroy(); }

    Ledger &Hook(uint32_t kinds = 0, uint32_t flags = 0)
    {
        owned_.emplace_back(new Ledger());
        Ledger &l = *owned_.back();
        EXPECT_EQ(l.Add(a_, kinds, flags), GALLOC_OK) << Err();
        ledgers_.push_back(&l);
        return l;
    }
    std::string Err()
    {
        char m[GALLOC_ERROR_MAX] = "";
        galloc_last_error(a_, m, sizeof m);
        return m;
    }
    void *Alloc(size_t n, galloc_stream_t s = 0)
    {
        void *p = nullptr;
        EXPECT_EQ(galloc_malloc(a_, n, s, &p), GALLOC_OK) << Err();
        return p;
    }
    void Free(void *p) { EXPECT_EQ(galloc_free(a_, p), GALLOC_OK) << Err(); }
    void EmptyCache() { EXPECT_EQ(galloc_empty_cache(a_), GALLOC_OK) << Err(); }
    galloc_stats_t Stats()
    {
        galloc_stats_t st;
        st.struct_size = sizeof st;
        EXPECT_EQ(galloc_memory_stats(a_, &st), GALLOC_OK);
        return st;
    }
    int64_t Reserved() { return Stats().reserved_bytes[ALL].current; }
    ga_sim_counters_t Sim()
    {
        ga_sim_counters_t c;
        EXPECT_EQ(ga_sim_counters(sim_, &c), GALLOC_OK);
        return c;
    }
    // Every ledger holds what the allocator reserves and the device uses.
    void Balanced(const std::string &where = "")
    {
        EXPECT_EQ(galloc_check(a_), GALLOC_OK) << where << ": " << Err();
        int64_t reserved = Reserved();
        EXPECT_EQ((int64_t)Sim().used_bytes, reserved) << where;
        for (Ledger *l : ledgers_) {
            EXPECT_EQ(l->Bytes(), reserved) << where;
            EXPECT_EQ(l->errors(), "") << where;
        }
    }
    static void ExpectEvent(const galloc_hook_event_t &e, uint32_t kind, const void *addr, size_t size,
                            uint32_t flags = 0, galloc_stream_t stream = 0)
    {
        EXPECT_EQ(e.kind, kind) << Describe(e);
        EXPECT_EQ(e.addr, (uintptr_t)addr) << Describe(e);
        EXPECT_EQ(e.size, size) << Describe(e);
        EXPECT_EQ(e.flags, flags) << Describe(e);
        EXPECT_EQ(e.stream, stream) << Describe(e);
    }

    galloc_allocator_t *a_ = nullptr;
    void *sim_ = nullptr;
    std::vector<std::unique_ptr<Ledger>> owned_;
    std::vector<Ledger *> ledgers_;
};

class HooksBoth : public Hooks, public ::testing::WithParamInterface<bool> {
  protected:
    bool Expandable() const { return GetParam(); }
    std::string Conf() const { return Expandable() ? "expandable_segments:True" : ""; }
    void *TagAlloc(const char *tag, size_t n)
    {
        EXPECT_EQ(galloc_tag_begin(a_, tag), GALLOC_OK) << Err();
        void *p = Alloc(n);
        EXPECT_EQ(galloc_tag_end(a_, tag), GALLOC_OK) << Err();
        return p;
    }
};

} // namespace hooks_fixture

#endif // GA_TESTS_API_HOOKS_FIXTURE_H
