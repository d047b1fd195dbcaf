// sleep_fixture.h: the sleep and wake tests' allocator on the sim device in
// backed mode (device addresses are host memory, so a test writes patterns
// through its pointers) seen through simwatch, which reads the device's
// counters and finds leaks at destroy. Parameter: expandable_segments.
#ifndef GA_TESTS_API_SLEEP_FIXTURE_H
#define GA_TESTS_API_SLEEP_FIXTURE_H

#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <string>

extern "C" {
#include <galloc/galloc.h>
#include "tests/reliability/simwatch.h"
}

constexpr uint64_t KiB = 1 << 10;
constexpr uint64_t MiB = 1 << 20;

class SleepBase : public ::testing::TestWithParam<bool> {
  protected:
    bool Expandable() const { return GetParam(); }
    // A fresh allocator: capacity and extra settings appended to the mode's.
    void Make(const std::string &capacity = "256MiB", const std::string &extra = "")
    {
        Destroy();
        ASSERT_EQ(simwatch_register(), GALLOC_OK);
        std::string conf = std::string(backed_ ? "sim_backed:True" : "sim_backed:False") + ",sim_capacity:" + capacity;
        if (Expandable())
            conf += ",expandable_segments:True";
        if (!extra.empty())
            conf += "," + extra;
        char err[GALLOC_ERROR_MAX] = "";
        ASSERT_EQ(galloc_allocator_create(backend_.c_str(), 0, conf.c_str(), &a_, err, sizeof err), GALLOC_OK) << err;
        sim_ = simwatch_last_state();
    }
    // Destroy, and the device must hold nothing: segments, mappings,
    // reservations, events, host copies.
    void Destroy()
    {
        if (a_ == nullptr)
            return;
        galloc_allocator_destroy(a_);
        a_ = nullptr;
        ga_sim_counters_t c;
        ASSERT_TRUE(simwatch_last_close(&c));
        EXPECT_TRUE(simwatch_counters_clean(&c))
            << "leak: segments " << c.live_segments << ", mapped " << c.live_mapped_bytes << ", reservations "
            << c.live_reservations << ", host blocks " << c.live_host_allocs << " (" << c.live_host_bytes << " bytes)";
    }
    void SetUp() override { Make(); }
    void TearDown() override
    {
        if (a_ != nullptr) {
            EXPECT_EQ(galloc_check(a_), GALLOC_OK) << Err();
        }
        Destroy();
    }
    std::string Err()
    {
        char m[GALLOC_ERROR_MAX];
        galloc_last_error(a_, m, sizeof m);
        return m;
    }
    void *TagAlloc(const char *tag, size_t n)
    {
        void *p = nullptr;
        EXPECT_EQ(galloc_tag_begin(a_, tag), GALLOC_OK) << Err();
        EXPECT_EQ(galloc_malloc(a_, n, 0, &p), GALLOC_OK) << Err();
        EXPECT_EQ(galloc_tag_end(a_, tag), GALLOC_OK) << Err();
        return p;
    }
    // A pattern that differs per 8-byte word (each of its bytes too), per
    // block and per seed, written and checked a word at a time: these tests
    // fill and check tens of MiB per step, and a call per byte made the suite
    // spend most of its time here (34 s unoptimized, 70 s under coverage).
    static uint64_t Word(const void *p, size_t w, unsigned seed)
    {
        uint64_t x =
            ((uint64_t)(uintptr_t)p >> 9) * 0x9e3779b97f4a7c15ull + w * 0xbf58476d1ce4e5b9ull + seed * 0x85ebca6bull;
        return x ^ (x >> 29);
    }
    static unsigned char Byte(const void *p, size_t i, unsigned seed)
    {
        uint64_t x = Word(p, i / 8, seed);
        unsigned char b[8];
        std::memcpy(b, &x, 8); // the word's bytes in memory order, as Fill stores them
        return b[i % 8];
    }
    static void Fill(void *p, size_t n, unsigned seed)
    {
        unsigned char *c = static_cast<unsigned char *>(p);
        size_t w = 0;
        for (; (w + 1) * 8 <= n; w++) {
            uint64_t x = Word(p, w, seed);
            std::memcpy(c + w * 8, &x, 8);
        }
        for (size_t i = w * 8; i < n; i++)
            c[i] = Byte(p, i, seed);
    }
    // The index of the first byte that differs from the pattern, or n.
    static size_t Mismatch(const void *p, size_t n, unsigned seed)
    {
        const unsigned char *c = static_cast<const unsigned char *>(p);
        size_t w = 0;
        for (; (w + 1) * 8 <= n; w++) {
            uint64_t x = Word(p, w, seed);
            if (std::memcmp(c + w * 8, &x, 8) != 0)
                break;
        }
        for (size_t i = w * 8; i < n; i++)
            if (c[i] != Byte(p, i, seed))
                return i;
        return n;
    }
    galloc_stats_t Stats()
    {
        galloc_stats_t st;
        st.struct_size = sizeof st;
        galloc_memory_stats(a_, &st);
        return st;
    }
    int64_t Reserved() { return Stats().reserved_bytes[GALLOC_STAT_ALL].current; }
    galloc_sleep_stats_t SleepStats()
    {
        galloc_sleep_stats_t s;
        EXPECT_EQ(galloc_sleep_stats(a_, &s), GALLOC_OK);
        return s;
    }
    ga_sim_counters_t Sim()
    {
        ga_sim_counters_t c;
        EXPECT_EQ(ga_sim_counters(sim_, &c), GALLOC_OK);
        return c;
    }
    int Asleep(const char *tag)
    {
        int asleep = -1;
        EXPECT_EQ(galloc_tag_asleep(a_, tag, &asleep), GALLOC_OK) << Err();
        return asleep;
    }
    galloc_allocator_t *a_ = nullptr;
    void *sim_ = nullptr;
    bool backed_ = true;               // sim_backed for the next Make
    std::string backend_ = "simwatch"; // simwatch or a table wrapping its ops (registered by the test)
};

#endif // GA_TESTS_API_SLEEP_FIXTURE_H
