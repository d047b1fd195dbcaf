// sleep_faults_test: a device fault at each device call inside galloc_sleep
// and, separately, inside galloc_wake (sim's op faults number every memory,
// host, copy and sync call). After each: every tag is fully awake with its
// contents intact or fully asleep with every offloaded byte held; reserved
// bytes equal the device's mapped bytes; galloc_check passes; a later sleep
// and wake succeed and restore the offloaded contents byte for byte; nothing
// leaks at destroy.
#include "tests/api/sleep_fixture.h"

namespace {

class SleepFaults : public SleepBase {
  protected:
    // Tag w (offloaded): three blocks, one freed so that a segment is split
    // and holds a free block; tag kv (discarded): one block.
    void Populate()
    {
        w_[0] = TagAlloc("w", 4 * KiB);
        void *gap = TagAlloc("w", 64 * KiB);
        w_[1] = TagAlloc("w", 1 * MiB);
        w_[2] = TagAlloc("w", 30 * MiB); // expandable: two 20 MiB pages, one run
        ASSERT_EQ(galloc_free(a_, gap), GALLOC_OK);
        kv_ = TagAlloc("kv", 6 * MiB);
        for (int i = 0; i < 3; i++)
            Fill(w_[i], kSizes[i], 1 + i);
        Fill(kv_, 6 * MiB, 9);
    }
    void ExpectW()
    {
        for (int i = 0; i < 3; i++) {
            if (!(freed1_ && i == 1)) {
                EXPECT_EQ(Mismatch(w_[i], kSizes[i], 1 + i), kSizes[i]) << "block " << i;
            }
        }
    }
    uint64_t Offloaded() const { return kOffloaded - (freed1_ ? kSizes[1] : 0); }
    // Each tag fully awake (contents intact; kv's only if it never slept) or
    // fully asleep (w's copies all held); the books agree with the device.
    void ExpectWhole(bool kv_slept)
    {
        ASSERT_EQ(galloc_check(a_), GALLOC_OK) << Err();
        if (Asleep("w") == 0) {
            ExpectW();
        } else {
            EXPECT_EQ(SleepStats().bytes_offloaded, Offloaded());
        }
        if (Asleep("kv") == 0 && !kv_slept) {
            EXPECT_EQ(Mismatch(kv_, 6 * MiB, 9), 6 * MiB);
        }
        EXPECT_EQ(Sim().live_mapped_bytes, (uint64_t)Reserved());
        EXPECT_GE(Sim().live_host_bytes, SleepStats().bytes_offloaded); // a refused host_free is kept
        EXPECT_EQ(SleepStats().tags_asleep, (uint64_t)(Asleep("w") + Asleep("kv")));
    }
    // Run op with a fault at its k-th device call; false once op made fewer calls.
    bool Faulted(uint64_t k, galloc_status_t *st, const std::function<galloc_status_t()> &op)
    {
        ga_sim_counters_t c = Sim();
        EXPECT_EQ(ga_sim_set_op_faults(sim_, c.op_calls + k, 0), GALLOC_OK);
        *st = op();
        EXPECT_EQ(ga_sim_set_op_faults(sim_, 0, 0), GALLOC_OK);
        return Sim().faults_injected > c.faults_injected;
    }
    static constexpr size_t kSizes[3] = {4 * KiB, 1 * MiB, 30 * MiB};
    static constexpr uint64_t kOffloaded = 4 * KiB + 1 * MiB + 30 * MiB;
    void *w_[3] = {};
    void *kv_ = nullptr;
    bool freed1_ = false; // w_[1] was freed while asleep
};

constexpr size_t SleepFaults::kSizes[3];

TEST_P(SleepFaults, EveryDeviceCallOfSleep)
{
    uint64_t k = 1;
    for (;; k++) {
        SCOPED_TRACE("fault at sleep's device call " + std::to_string(k));
        Make();
        Populate();
        galloc_status_t st;
        bool hit = Faulted(k, &st, [&] { return galloc_sleep(a_, "w,kv", "w"); });
        if (!hit) {
            EXPECT_EQ(st, GALLOC_OK) << Err();
            break;
        }
        EXPECT_NE(st, GALLOC_OK);
        EXPECT_EQ(SleepStats().num_failed, 1u);
        ExpectWhole(false);
        // A second sleep finishes the job (retrying refused unmaps)...
        ASSERT_EQ(galloc_sleep(a_, "w,kv", "w"), GALLOC_OK) << Err();
        EXPECT_EQ(Sim().live_mapped_bytes, 0u);
        EXPECT_EQ(Reserved(), 0);
        ExpectWhole(true);
        // ...and the wake restores the copies.
        ASSERT_EQ(galloc_wake(a_, nullptr), GALLOC_OK) << Err();
        ExpectW();
        ExpectWhole(true);
        Destroy();
    }
    // sync, 3 host_alloc + 3 copies, then the unmaps: w's small segment or
    // page, its large segment (plain) or two pages, kv's one.
    EXPECT_EQ(k, Expandable() ? 12u : 11u);
}

TEST_P(SleepFaults, EveryDeviceCallOfWake)
{
    uint64_t k = 1;
    for (;; k++) {
        SCOPED_TRACE("fault at wake's device call " + std::to_string(k));
        Make();
        Populate();
        ASSERT_EQ(galloc_sleep(a_, "w,kv", "w"), GALLOC_OK) << Err();
        int64_t allocs = Stats().num_device_alloc;
        galloc_status_t st;
        bool hit = Faulted(k, &st, [&] { return galloc_wake(a_, "w,kv"); });
        if (!hit) {
            EXPECT_EQ(st, GALLOC_OK) << Err();
            ExpectW();
            break;
        }
        ExpectWhole(true);
        if (st != GALLOC_OK) // the failing tag stays asleep; a refused host_free fails nothing
            EXPECT_GT(Asleep("w") + Asleep("kv"), 0);
        else
            EXPECT_EQ(Asleep("w") + Asleep("kv"), 0);
        EXPECT_GE(Stats().num_device_alloc, allocs);
        ASSERT_EQ(galloc_wake(a_, nullptr), GALLOC_OK) << Err();
        ExpectW();
        ExpectWhole(true);
        EXPECT_EQ(Sim().live_host_bytes, SleepStats().bytes_host_cached); // kept for the next sleep
        ASSERT_EQ(galloc_empty_cache(a_), GALLOC_OK) << Err();
        EXPECT_EQ(Sim().live_host_bytes, 0u);
        Destroy();
    }
    EXPECT_EQ(k, Expandable() ? 8u : 7u); // the maps as the unmaps, 3 copies back (the host blocks are kept)
}

// The wake sweep again after a free while asleep: the freed block's copy is
// gone, it is free after the wake, and the rest is restored.
TEST_P(SleepFaults, EveryDeviceCallOfWakeAfterAFreeWhileAsleep)
{
    freed1_ = true;
    uint64_t k = 1;
    for (;; k++) {
        SCOPED_TRACE("fault at wake's device call " + std::to_string(k));
        Make();
        Populate();
        ASSERT_EQ(galloc_sleep(a_, "w,kv", "w"), GALLOC_OK) << Err();
        ASSERT_EQ(galloc_free(a_, w_[1]), GALLOC_OK) << Err();
        galloc_status_t st;
        bool hit = Faulted(k, &st, [&] { return galloc_wake(a_, "w,kv"); });
        ExpectWhole(true);
        if (!hit) {
            EXPECT_EQ(st, GALLOC_OK) << Err();
            break;
        }
        ASSERT_EQ(galloc_wake(a_, nullptr), GALLOC_OK) << Err();
        ExpectW();
        ExpectWhole(true);
        EXPECT_EQ(Stats().allocation[GALLOC_STAT_ALL].current, 3); // w's two and kv's
        Destroy();
    }
    EXPECT_EQ(k, Expandable() ? 7u : 6u); // one copy fewer
}

// A refused unmap, in figures: the unit stays mapped and reserved, the tag
// is asleep, and the next sleep of the tag unmaps it.
TEST_P(SleepFaults, ARefusedUnmapIsCountedAndRetried)
{
    void *w = TagAlloc("w", 4 * KiB);    // small: a 2 MiB segment or page
    void *big = TagAlloc("w", 12 * MiB); // large: 12 MiB segment, or a 20 MiB page; newest, unmapped first
    Fill(big, 12 * MiB, 3);
    int64_t unit = Expandable() ? 20 * MiB : 12 * MiB;
    // sync, 2 host_alloc + 2 copies, then the first unmap: call 6.
    ASSERT_EQ(ga_sim_set_op_faults(sim_, Sim().op_calls + 6, 0), GALLOC_OK);
    EXPECT_EQ(galloc_sleep(a_, "w", "w"), GALLOC_E_DEVICE);
    ASSERT_EQ(ga_sim_set_op_faults(sim_, 0, 0), GALLOC_OK);
    EXPECT_NE(Err().find("refused to unmap"), std::string::npos) << Err();
    EXPECT_EQ(Asleep("w"), 1);
    EXPECT_EQ(Reserved(), unit);
    EXPECT_EQ(Stats().reserved_bytes[GALLOC_STAT_LARGE_POOL].current, unit);
    EXPECT_EQ(Stats().num_device_free, 1);
    galloc_sleep_stats_t s = SleepStats();
    EXPECT_EQ(s.bytes_asleep, 2 * MiB);
    EXPECT_EQ(s.bytes_slept, 2 * MiB);
    EXPECT_EQ(s.num_sleep, 1u);
    EXPECT_EQ(s.num_failed, 1u);
    ASSERT_EQ(galloc_check(a_), GALLOC_OK) << Err();
    ASSERT_EQ(galloc_sleep(a_, "w", "w"), GALLOC_OK) << Err(); // the retry
    EXPECT_EQ(Reserved(), 0);
    EXPECT_EQ(Stats().num_device_free, 2);
    s = SleepStats();
    EXPECT_EQ(s.bytes_asleep, (uint64_t)unit + 2 * MiB);
    EXPECT_EQ(s.bytes_slept, (uint64_t)unit + 2 * MiB);
    EXPECT_EQ(s.num_sleep, 1u); // the tag was asleep already
    EXPECT_EQ(s.bytes_offloaded, 4 * KiB + 12 * MiB);
    // record_stream on a sleeping block: it is live
    EXPECT_EQ(galloc_record_stream(a_, big, 7), GALLOC_OK) << Err();
    ASSERT_EQ(galloc_wake(a_, "w"), GALLOC_OK) << Err();
    EXPECT_EQ(Mismatch(big, 12 * MiB, 3), 12 * MiB);
    EXPECT_EQ(galloc_free(a_, w), GALLOC_OK);
    EXPECT_EQ(galloc_free(a_, big), GALLOC_OK);
}

INSTANTIATE_TEST_SUITE_P(Modes, SleepFaults, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool> &i) { return i.param ? "Expandable" : "Plain"; });

} // namespace
