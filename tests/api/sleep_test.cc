// sleep_test: galloc_sleep / galloc_wake on the sim device in backed mode,
// with and without expandable segments: pointers and contents across the
// pair, discarded tags, exact stats, the calls allowed and refused while
// asleep, wake without the memory, and leaks at destroy. Faults: see
// sleep_faults_test.cc.
#include "tests/api/sleep_fixture.h"

namespace {

class Sleep : public SleepBase {
  protected:
    // Tag "w": 4 KiB and 1 MiB (one small segment or page), 12 MiB (large),
    // filled with seed 1.
    void MakeWeights()
    {
        w_[0] = TagAlloc("w", 4 * KiB);
        w_[1] = TagAlloc("w", 1 * MiB);
        w_[2] = TagAlloc("w", 12 * MiB);
        for (int i = 0; i < 3; i++)
            Fill(w_[i], kSizes[i], 1 + i);
    }
    void ExpectWeights()
    {
        for (int i = 0; i < 3; i++)
            EXPECT_EQ(Mismatch(w_[i], kSizes[i], 1 + i), kSizes[i]) << "block " << i;
    }
    // Reserved bytes of tag w: plain, a 2 MiB small segment and a 12 MiB one;
    // expandable, a 2 MiB small page and a 20 MiB large page.
    int64_t WeightsReserved() const { return Expandable() ? 22 * MiB : 14 * MiB; }
    static constexpr size_t kSizes[3] = {4 * KiB, 1 * MiB, 12 * MiB};
    static constexpr uint64_t kOffloaded = 4 * KiB + 1 * MiB + 12 * MiB;
    void *w_[3] = {};
};

constexpr size_t Sleep::kSizes[3];

TEST_P(Sleep, OffloadKeepsPointersBytesAndCountsExactly)
{
    MakeWeights();
    galloc_stats_t before = Stats();
    EXPECT_EQ(before.reserved_bytes[GALLOC_STAT_ALL].current, WeightsReserved());
    EXPECT_EQ(before.num_device_alloc, 2);
    EXPECT_EQ(Sim().live_mapped_bytes, (uint64_t)WeightsReserved());

    ASSERT_EQ(galloc_sleep(a_, "w", "w"), GALLOC_OK) << Err();
    EXPECT_EQ(Asleep("w"), 1);
    ASSERT_EQ(galloc_check(a_), GALLOC_OK) << Err();
    galloc_stats_t asleep = Stats();
    EXPECT_EQ(asleep.reserved_bytes[GALLOC_STAT_ALL].current, 0);
    EXPECT_EQ(asleep.reserved_bytes[GALLOC_STAT_LARGE_POOL].current, 0);
    EXPECT_EQ(asleep.num_device_free, 2); // one per unmapped run, as expandable segments count
    EXPECT_EQ(asleep.num_device_alloc, 2);
    EXPECT_EQ(asleep.allocated_bytes[GALLOC_STAT_ALL].current, (int64_t)kOffloaded); // tensors still exist
    EXPECT_EQ(asleep.active_bytes[GALLOC_STAT_ALL].current, (int64_t)kOffloaded);
    EXPECT_EQ(asleep.allocation[GALLOC_STAT_ALL].current, 3);
    EXPECT_EQ(asleep.segment[GALLOC_STAT_ALL].current, before.segment[GALLOC_STAT_ALL].current);
    galloc_sleep_stats_t s = SleepStats();
    EXPECT_EQ(s.tags, 1u);
    EXPECT_EQ(s.tags_asleep, 1u);
    EXPECT_EQ(s.bytes_asleep, (uint64_t)WeightsReserved());
    EXPECT_EQ(s.bytes_offloaded, kOffloaded);
    EXPECT_EQ(s.peak_bytes_offloaded, kOffloaded);
    EXPECT_EQ(s.num_sleep, 1u);
    EXPECT_EQ(s.num_wake, 0u);
    EXPECT_EQ(s.bytes_slept, (uint64_t)WeightsReserved());
    EXPECT_EQ(s.num_failed, 0u);
    EXPECT_EQ(Sim().live_mapped_bytes, 0u);
    EXPECT_EQ(Sim().live_host_bytes, kOffloaded);
    EXPECT_EQ(Sim().live_host_allocs, 3u);

    ASSERT_EQ(galloc_wake(a_, "w"), GALLOC_OK) << Err();
    EXPECT_EQ(Asleep("w"), 0);
    ASSERT_EQ(galloc_check(a_), GALLOC_OK) << Err();
    ExpectWeights();
    galloc_stats_t after = Stats();
    EXPECT_EQ(after.reserved_bytes[GALLOC_STAT_ALL].current, WeightsReserved());
    EXPECT_EQ(after.num_device_alloc, 4);
    EXPECT_EQ(after.num_device_free, 2);
    EXPECT_EQ(after.allocated_bytes[GALLOC_STAT_ALL].current, (int64_t)kOffloaded);
    s = SleepStats();
    EXPECT_EQ(s.tags_asleep, 0u);
    EXPECT_EQ(s.bytes_asleep, 0u);
    EXPECT_EQ(s.bytes_offloaded, 0u);
    EXPECT_EQ(s.peak_bytes_offloaded, kOffloaded);
    EXPECT_EQ(s.num_wake, 1u);
    EXPECT_EQ(s.bytes_woken, (uint64_t)WeightsReserved());
    EXPECT_EQ(Sim().live_host_allocs, 3u); // the pinned blocks are kept for the next sleep
    EXPECT_EQ(s.bytes_host_cached, kOffloaded);
    EXPECT_EQ(Sim().live_mapped_bytes, (uint64_t)WeightsReserved());

    // Awake again: the blocks free and the pool serves as before.
    for (void *p : w_)
        ASSERT_EQ(galloc_free(a_, p), GALLOC_OK) << Err();
    EXPECT_EQ(TagAlloc("w", 12 * MiB), w_[2]);
}

// The next sleep of the same tensors pins nothing new: wake keeps the pinned
// blocks (an RL loop sleeps the same weights every iteration, and pinning is
// most of a sleep's time on a GPU); galloc_empty_cache gives them back.
TEST_P(Sleep, ASecondSleepReusesThePinnedBlocks)
{
    MakeWeights();
    ASSERT_EQ(galloc_sleep(a_, "w", "w"), GALLOC_OK) << Err();
    ASSERT_EQ(galloc_wake(a_, "w"), GALLOC_OK) << Err();
    EXPECT_EQ(SleepStats().bytes_host_cached, kOffloaded);
    for (int i = 0; i < 3; i++)
        Fill(w_[i], kSizes[i], 20 + i); // new contents since the first sleep
    ASSERT_EQ(galloc_sleep(a_, "w", "w"), GALLOC_OK) << Err();
    EXPECT_EQ(SleepStats().bytes_host_cached, 0u); // every kept block taken again
    EXPECT_EQ(SleepStats().bytes_offloaded, kOffloaded);
    EXPECT_EQ(Sim().live_host_allocs, 3u); // none pinned anew
    ASSERT_EQ(galloc_wake(a_, "w"), GALLOC_OK) << Err();
    for (int i = 0; i < 3; i++)
        EXPECT_EQ(Mismatch(w_[i], kSizes[i], 20 + i), kSizes[i]) << "block " << i;
    ASSERT_EQ(galloc_empty_cache(a_), GALLOC_OK) << Err();
    EXPECT_EQ(SleepStats().bytes_host_cached, 0u);
    EXPECT_EQ(Sim().live_host_allocs, 0u);
    EXPECT_EQ(Sim().live_host_bytes, 0u);
}

TEST_P(Sleep, DiscardedTagGetsItsAddressesBackWithoutCopies)
{
    MakeWeights();
    void *kv = TagAlloc("kv", 6 * MiB);
    Fill(kv, 6 * MiB, 9);
    int64_t reserved = Reserved();
    ASSERT_EQ(galloc_sleep(a_, "w,kv", "w"), GALLOC_OK) << Err();
    EXPECT_EQ(Asleep("kv"), 1);
    EXPECT_EQ(SleepStats().bytes_offloaded, kOffloaded); // kv's 6 MiB are not copied
    EXPECT_EQ(SleepStats().tags_asleep, 2u);
    EXPECT_EQ(Reserved(), 0);
    ASSERT_EQ(galloc_wake(a_, nullptr), GALLOC_OK) << Err(); // every tag
    EXPECT_EQ(Reserved(), reserved);
    ExpectWeights();
    Fill(kv, 6 * MiB, 10); // kv's contents are undefined, its pointer is valid
    EXPECT_EQ(Mismatch(kv, 6 * MiB, 10), 6 * MiB);
}

TEST_P(Sleep, MallocIntoASleepingTagFailsAsleepNamingIt)
{
    MakeWeights();
    ASSERT_EQ(galloc_sleep(a_, "w", "w"), GALLOC_OK) << Err();
    ASSERT_EQ(galloc_tag_begin(a_, "w"), GALLOC_OK);
    for (size_t n : {512ul, 4 * KiB, 64 * MiB}) {
        void *p = reinterpret_cast<void *>(1);
        EXPECT_EQ(galloc_malloc(a_, n, 0, &p), GALLOC_E_ASLEEP) << n;
        EXPECT_EQ(p, nullptr);
        EXPECT_NE(Err().find("\"w\""), std::string::npos) << Err();
    }
    ASSERT_EQ(galloc_tag_end(a_, "w"), GALLOC_OK);
    void *outside = nullptr; // the default pool is unaffected
    ASSERT_EQ(galloc_malloc(a_, 4 * KiB, 0, &outside), GALLOC_OK);
    ASSERT_EQ(galloc_wake(a_, "w"), GALLOC_OK) << Err();
    void *p = TagAlloc("w", 4 * KiB);
    EXPECT_NE(p, nullptr);
    ExpectWeights();
    EXPECT_EQ(galloc_free(a_, outside), GALLOC_OK);
}

TEST_P(Sleep, FreeWhileAsleepDropsTheCopyAndTheBlockIsFreeAfterWake)
{
    MakeWeights();
    ASSERT_EQ(galloc_sleep(a_, "w", "w"), GALLOC_OK) << Err();
    ASSERT_EQ(galloc_free(a_, w_[2]), GALLOC_OK) << Err();
    EXPECT_EQ(galloc_free(a_, w_[2]), GALLOC_E_NOT_OWNED); // once only
    ASSERT_EQ(galloc_check(a_), GALLOC_OK) << Err();
    EXPECT_EQ(SleepStats().bytes_offloaded, kOffloaded - 12 * MiB);
    EXPECT_EQ(SleepStats().bytes_host_cached, 12 * MiB); // its pinned block, kept for a later sleep
    EXPECT_EQ(Sim().live_host_bytes, kOffloaded);
    EXPECT_EQ(Stats().allocated_bytes[GALLOC_STAT_ALL].current, (int64_t)(kOffloaded - 12 * MiB));
    EXPECT_EQ(Stats().allocation[GALLOC_STAT_LARGE_POOL].current, 0);
    ASSERT_EQ(galloc_wake(a_, "w"), GALLOC_OK) << Err();
    EXPECT_EQ(Reserved(), WeightsReserved()); // the freed block's memory is cached, mapped
    for (int i = 0; i < 2; i++)
        EXPECT_EQ(Mismatch(w_[i], kSizes[i], 1 + i), kSizes[i]);
    EXPECT_EQ(TagAlloc("w", 12 * MiB), w_[2]); // free, not restored: served again
}

TEST_P(Sleep, EmptyCacheAndReleaseLeaveSleepingSegmentsAlone)
{
    MakeWeights();
    ASSERT_EQ(galloc_free(a_, w_[1]), GALLOC_OK); // a free block inside the tag
    void *d = nullptr;                            // a default-pool segment, cached
    ASSERT_EQ(galloc_malloc(a_, 30 * MiB, 0, &d), GALLOC_OK);
    ASSERT_EQ(galloc_free(a_, d), GALLOC_OK);
    ASSERT_EQ(galloc_sleep(a_, "w", "w"), GALLOC_OK) << Err();
    int64_t frees = Stats().num_device_free;
    uint64_t resv = Sim().live_reservations;
    ASSERT_EQ(galloc_empty_cache(a_), GALLOC_OK) << Err();
    EXPECT_EQ(Reserved(), 0);
    EXPECT_EQ(Stats().num_device_free, frees + 1); // the default pool's segment or page run only
    EXPECT_EQ(Sim().live_reservations, resv - (Expandable() ? 1 : 0));
    ASSERT_EQ(galloc_check(a_), GALLOC_OK) << Err();
    ASSERT_EQ(galloc_wake(a_, "w"), GALLOC_OK) << Err();
    EXPECT_EQ(Reserved(), WeightsReserved());
    EXPECT_EQ(Mismatch(w_[0], kSizes[0], 1), kSizes[0]);
    EXPECT_EQ(Mismatch(w_[2], kSizes[2], 3), kSizes[2]);
}

TEST_P(Sleep, BadListsAndNamesChangeNothing)
{
    MakeWeights();
    for (const char *list :
         {"nope", "w,nope", "w,", ",w", "w,,w", "bad name", "w!", "0123456789012345678901234567890x"}) {
        EXPECT_EQ(galloc_sleep(a_, list, nullptr), GALLOC_E_INVAL) << list;
        EXPECT_EQ(galloc_sleep(a_, "w", list), GALLOC_E_INVAL) << list;
        EXPECT_EQ(galloc_wake(a_, list), GALLOC_E_INVAL) << list;
        EXPECT_EQ(Asleep("w"), 0) << list;
    }
    EXPECT_EQ(Stats().num_device_free, 0);
    EXPECT_EQ(SleepStats().num_sleep, 0u);
    EXPECT_EQ(SleepStats().num_failed, 0u);
    int asleep;
    EXPECT_EQ(galloc_tag_asleep(a_, "nope", &asleep), GALLOC_E_INVAL);
    EXPECT_EQ(galloc_tag_begin(a_, ""), GALLOC_E_INVAL);
    EXPECT_EQ(galloc_tag_begin(a_, "a,b"), GALLOC_E_INVAL);
    EXPECT_EQ(galloc_tag_end(a_, "w"), GALLOC_E_INVAL); // not begun
    EXPECT_EQ(galloc_tag_end(a_, "nope"), GALLOC_E_INVAL);
    ASSERT_EQ(galloc_tag_begin(a_, "w"), GALLOC_OK);
    EXPECT_EQ(galloc_tag_begin(a_, "w"), GALLOC_E_INVAL); // begun, not ended
    ASSERT_EQ(galloc_tag_end(a_, "w"), GALLOC_OK);
    // NULL where a name or an output is needed, and no allocator at all.
    galloc_sleep_stats_t ss;
    EXPECT_EQ(galloc_tag_begin(a_, nullptr), GALLOC_E_INVAL);
    EXPECT_EQ(galloc_tag_end(a_, nullptr), GALLOC_E_INVAL);
    EXPECT_EQ(galloc_mempool_set_tag(a_, galloc_mempool_id_t{0, 1}, nullptr), GALLOC_E_INVAL);
    EXPECT_EQ(galloc_tag_asleep(a_, nullptr, &asleep), GALLOC_E_INVAL);
    EXPECT_EQ(galloc_tag_asleep(a_, "w", nullptr), GALLOC_E_INVAL);
    EXPECT_EQ(galloc_sleep_stats(a_, nullptr), GALLOC_E_INVAL);
    EXPECT_EQ(galloc_sleep(nullptr, "w", nullptr), GALLOC_E_INVAL);
    EXPECT_EQ(galloc_wake(nullptr, "w"), GALLOC_E_INVAL);
    EXPECT_EQ(galloc_sleep_stats(nullptr, &ss), GALLOC_E_INVAL);
    EXPECT_EQ(Asleep("w"), 0);
    ExpectWeights();
}

TEST_P(Sleep, SleepingTwiceAndWakingTheAwakeDoNothing)
{
    MakeWeights();
    ASSERT_EQ(galloc_wake(a_, "w"), GALLOC_OK); // awake already
    ASSERT_EQ(galloc_sleep(a_, "w", "w"), GALLOC_OK);
    ASSERT_EQ(galloc_sleep(a_, "w", "w"), GALLOC_OK);
    galloc_sleep_stats_t s = SleepStats();
    EXPECT_EQ(s.num_sleep, 1u);
    EXPECT_EQ(s.num_wake, 0u);
    EXPECT_EQ(s.bytes_slept, (uint64_t)WeightsReserved());
    EXPECT_EQ(Stats().num_device_free, 2);
    ASSERT_EQ(galloc_wake(a_, ""), GALLOC_OK);
    ASSERT_EQ(galloc_wake(a_, "w"), GALLOC_OK);
    EXPECT_EQ(SleepStats().num_wake, 1u);
    ExpectWeights();
}

TEST_P(Sleep, MarkedMemPoolSleepsAndWakes)
{
    galloc_mempool_id_t id;
    ASSERT_EQ(galloc_mempool_create(a_, &id), GALLOC_OK);
    ASSERT_EQ(galloc_mempool_set_tag(a_, id, "m"), GALLOC_OK) << Err();
    EXPECT_EQ(galloc_mempool_set_tag(a_, id, "m2"), GALLOC_E_INVAL); // has one
    galloc_mempool_id_t other;
    ASSERT_EQ(galloc_mempool_create(a_, &other), GALLOC_OK);
    EXPECT_EQ(galloc_mempool_set_tag(a_, other, "m"), GALLOC_E_INVAL); // name in use
    EXPECT_EQ(galloc_mempool_set_tag(a_, galloc_mempool_id_t{0, 99}, "z"), GALLOC_E_INVAL);
    ASSERT_EQ(galloc_mempool_begin_allocate(a_, other, GALLOC_ROUTE_THREAD, 0), GALLOC_OK);
    void *o = nullptr;
    ASSERT_EQ(galloc_malloc(a_, 4 * KiB, 0, &o), GALLOC_OK);
    ASSERT_EQ(galloc_mempool_end_allocate(a_, other), GALLOC_OK);
    EXPECT_EQ(galloc_mempool_set_tag(a_, other, "late"), GALLOC_E_INVAL); // holds a segment

    ASSERT_EQ(galloc_mempool_begin_allocate(a_, id, GALLOC_ROUTE_THREAD, 0), GALLOC_OK);
    void *p = nullptr;
    ASSERT_EQ(galloc_malloc(a_, 3 * MiB, 0, &p), GALLOC_OK) << Err();
    ASSERT_EQ(galloc_mempool_end_allocate(a_, id), GALLOC_OK);
    Fill(p, 3 * MiB, 5);
    ASSERT_EQ(galloc_sleep(a_, "m", "m"), GALLOC_OK) << Err();
    EXPECT_EQ(SleepStats().bytes_offloaded, 3 * MiB);
    ASSERT_EQ(galloc_wake(a_, "m"), GALLOC_OK) << Err();
    EXPECT_EQ(Mismatch(p, 3 * MiB, 5), 3 * MiB);
    EXPECT_EQ(galloc_free(a_, p), GALLOC_OK);
    EXPECT_EQ(galloc_free(a_, o), GALLOC_OK);
}

TEST_P(Sleep, WakeWithoutTheMemoryStaysAsleepAndHoldsTheContents)
{
    Make("64MiB");
    void *w = TagAlloc("w", 36 * MiB);
    Fill(w, 36 * MiB, 7);
    ASSERT_EQ(galloc_sleep(a_, "w", "w"), GALLOC_OK) << Err();
    void *rival = TagAlloc("rival", 36 * MiB); // the device has room for one of them
    ASSERT_NE(rival, nullptr);
    galloc_stats_t before = Stats();
    ASSERT_EQ(galloc_wake(a_, "w"), GALLOC_E_OOM);
    EXPECT_NE(Err().find("\"w\""), std::string::npos) << Err();
    EXPECT_EQ(Asleep("w"), 1);
    ASSERT_EQ(galloc_check(a_), GALLOC_OK) << Err();
    EXPECT_EQ(Reserved(), before.reserved_bytes[GALLOC_STAT_ALL].current);
    EXPECT_EQ(SleepStats().bytes_offloaded, 36 * MiB);
    EXPECT_EQ(SleepStats().num_failed, 1u);
    EXPECT_EQ(Sim().live_mapped_bytes, (uint64_t)Reserved());
    ASSERT_EQ(galloc_free(a_, rival), GALLOC_OK);
    ASSERT_EQ(galloc_sleep(a_, "rival", nullptr), GALLOC_OK); // its cached memory goes with it
    void *cached = nullptr;                                   // the default pool's cache: wake flushes it and retries
    ASSERT_EQ(galloc_malloc(a_, 36 * MiB, 0, &cached), GALLOC_OK) << Err();
    ASSERT_EQ(galloc_free(a_, cached), GALLOC_OK);
    int64_t frees = Stats().num_device_free;
    ASSERT_EQ(galloc_wake(a_, "w"), GALLOC_OK) << Err();
    // Plain: the one map fails, the flush frees the cached segment. Expandable:
    // the first of w's two pages maps (24 MiB free), the second fails, the
    // first is unmapped again, then the flush unmaps the cached pages.
    EXPECT_EQ(Stats().num_device_free, frees + (Expandable() ? 2 : 1));
    EXPECT_EQ(Mismatch(w, 36 * MiB, 7), 36 * MiB);
    EXPECT_EQ(SleepStats().num_wake, 1u);
    EXPECT_EQ(Reserved(), Expandable() ? 40 * MiB : 36 * MiB);
}

// An OOM while a tag sleeps: the message's figures are of the device (the
// sleeping blocks hold none of it), and the sleeping bytes are named apart.
TEST_P(Sleep, OutOfMemoryWhileATagSleepsCountsOnlyTheDevice)
{
    Make("64MiB");
    void *w = TagAlloc("w", 36 * MiB);
    ASSERT_NE(w, nullptr);
    ASSERT_EQ(galloc_sleep(a_, "w", "w"), GALLOC_OK) << Err();
    void *big = nullptr, *huge = nullptr;
    ASSERT_EQ(galloc_malloc(a_, 40 * MiB, 0, &big), GALLOC_OK) << Err();
    ASSERT_EQ(galloc_malloc(a_, 40 * MiB, 0, &huge), GALLOC_E_OOM);
    std::string m = Err();
    EXPECT_NE(m.find("Of the allocated memory 40.00 MiB is allocated by PyTorch, and 0 bytes is reserved by PyTorch "
                     "but unallocated. 36.00 MiB more is allocated in sleeping tags (galloc_sleep). If reserved"),
              std::string::npos)
        << m;
    ASSERT_EQ(galloc_free(a_, big), GALLOC_OK);
    ASSERT_EQ(galloc_wake(a_, "w"), GALLOC_OK) << Err();
}

TEST_P(Sleep, DestroyWhileAsleepLeaksNothing)
{
    MakeWeights();
    void *kv = TagAlloc("kv", 2 * MiB);
    ASSERT_NE(kv, nullptr);
    ASSERT_EQ(galloc_sleep(a_, "w,kv", "w"), GALLOC_OK) << Err();
    ASSERT_EQ(galloc_check(a_), GALLOC_OK) << Err();
    Destroy(); // counters read at close: nothing live
}

TEST_P(Sleep, MemorySummaryHasASleepSectionOnlyWithTags)
{
    char plain[8192], with[8192];
    size_t n_plain = 0, n_with = 0;
    ASSERT_EQ(galloc_memory_summary(a_, false, plain, sizeof plain, &n_plain), GALLOC_OK);
    EXPECT_EQ(std::string(plain).find("sleep"), std::string::npos); // PyTorch's table alone
    MakeWeights();
    ASSERT_EQ(galloc_sleep(a_, "w", "w"), GALLOC_OK) << Err();
    ASSERT_EQ(galloc_memory_summary(a_, false, with, sizeof with, &n_with), GALLOC_OK);
    std::string s(with);
    EXPECT_EQ(s.size(), n_with);
    EXPECT_NE(s.find("| Tags                  | 1 asleep of 1"), std::string::npos) << s;
    // memory_summary's units: KiB below 768 MiB.
    std::string asleep =
        Expandable() ? "22528 KiB (slept 22528 KiB, woken 0 B)" : "14336 KiB (slept 14336 KiB, woken 0 B)";
    EXPECT_NE(s.find("| Device memory asleep  | " + asleep), std::string::npos) << s;
    EXPECT_NE(s.find("| Offloaded to host     | 13316 KiB (peak 13316 KiB)"), std::string::npos) << s;
    EXPECT_NE(s.find("| Calls                 | 1 sleeps, 0 wakes, 0 failed"), std::string::npos) << s;
    size_t width = s.find('\n');
    for (size_t at = 0; at < s.size(); at = s.find('\n', at) + 1)
        EXPECT_EQ(s.find('\n', at) - at, width) << s.substr(at, s.find('\n', at) - at);
    size_t needed = 0; // measuring alone gives the same length
    ASSERT_EQ(galloc_memory_summary(a_, false, nullptr, 0, &needed), GALLOC_OK);
    EXPECT_EQ(needed, n_with);
    char cut[100];
    ASSERT_EQ(galloc_memory_summary(a_, false, cut, sizeof cut, &needed), GALLOC_OK);
    EXPECT_EQ(needed, n_with);
    EXPECT_EQ(strlen(cut), sizeof cut - 1);
}

TEST_P(Sleep, UnbackedDeviceCountsTheSameWithoutContents)
{
    backed_ = false; // no contents: the copies are accepted and copy nothing
    Make();
    void *p[3] = {TagAlloc("w", 4 * KiB), TagAlloc("w", 1 * MiB), TagAlloc("w", 12 * MiB)};
    ASSERT_EQ(galloc_sleep(a_, "w", "w"), GALLOC_OK) << Err();
    EXPECT_EQ(Reserved(), 0);
    EXPECT_EQ(SleepStats().bytes_offloaded, kOffloaded);
    EXPECT_EQ(Sim().live_host_bytes, kOffloaded);
    EXPECT_EQ(Sim().violations, 0u);
    ASSERT_EQ(galloc_wake(a_, "w"), GALLOC_OK) << Err();
    EXPECT_EQ(Reserved(), WeightsReserved());
    EXPECT_EQ(Stats().num_device_alloc, 4);
    EXPECT_EQ(Stats().num_device_free, 2);
    for (void *q : p)
        EXPECT_EQ(galloc_free(a_, q), GALLOC_OK);
}

TEST_P(Sleep, WakeRespectsTheMemoryFraction)
{
    Make("256MiB", "per_process_memory_fraction:0.25"); // 64 MiB may be reserved
    void *w = TagAlloc("w", 36 * MiB);
    Fill(w, 36 * MiB, 4);
    ASSERT_EQ(galloc_sleep(a_, "w", "w"), GALLOC_OK) << Err();
    void *d = nullptr;
    ASSERT_EQ(galloc_malloc(a_, 30 * MiB, 0, &d), GALLOC_OK) << Err();
    int64_t allocs = Stats().num_device_alloc;
    ASSERT_EQ(galloc_wake(a_, "w"), GALLOC_E_OOM);
    EXPECT_NE(Err().find("memory fraction"), std::string::npos) << Err();
    EXPECT_EQ(Stats().num_device_alloc, allocs); // refused before any map
    EXPECT_EQ(Asleep("w"), 1);
    ASSERT_EQ(galloc_free(a_, d), GALLOC_OK); // cached: wake's flush gives it back
    ASSERT_EQ(galloc_wake(a_, "w"), GALLOC_OK) << Err();
    EXPECT_EQ(Mismatch(w, 36 * MiB, 4), 36 * MiB);
}

TEST_P(Sleep, FragmentationLeavesSleepingSegmentsOut)
{
    MakeWeights();
    ASSERT_EQ(galloc_sleep(a_, "w", "w"), GALLOC_OK) << Err();
    galloc_fragmentation_t f;
    f.struct_size = sizeof f;
    ASSERT_EQ(galloc_fragmentation(a_, &f), GALLOC_OK);
    EXPECT_EQ(f.pool[GALLOC_STAT_ALL].reserved_bytes, 0);
    ASSERT_EQ(galloc_wake(a_, "w"), GALLOC_OK) << Err();
    ASSERT_EQ(galloc_fragmentation(a_, &f), GALLOC_OK);
    EXPECT_EQ(f.pool[GALLOC_STAT_ALL].reserved_bytes, WeightsReserved());
}

// A sleeping tag's segments keep their blocks in snapshots (MemoryViz
// rebuilds past states from the final blocks, which must lie in segments),
// and the trace marks the sleep with a START/END annotation pair.
TEST_P(Sleep, SnapshotsKeepSleepingBlocksAndAnnotateTheSleep)
{
    galloc_history_options_t h = {sizeof h, GALLOC_HISTORY_ALL, GALLOC_CONTEXT_NONE, GALLOC_STACKS_PYTHON, 0};
    ASSERT_EQ(galloc_record_memory_history(a_, &h), GALLOC_OK);
    MakeWeights();
    ASSERT_EQ(galloc_sleep(a_, "w", "w"), GALLOC_OK) << Err();
    const char *dir = getenv("TEST_TMPDIR");
    std::string path = std::string(dir != nullptr ? dir : "/tmp") + "/sleep_snapshot.json";
    auto read = [&] {
        EXPECT_EQ(galloc_snapshot_write(a_, path.c_str(), GALLOC_SNAPSHOT_JSON), GALLOC_OK) << Err();
        FILE *f = fopen(path.c_str(), "rb");
        std::string text;
        char buf[4096];
        size_t n;
        while (f != nullptr && (n = fread(buf, 1, sizeof buf, f)) > 0)
            text.append(buf, n);
        if (f != nullptr)
            fclose(f);
        return text;
    };
    auto count = [](const std::string &s, const std::string &what) {
        size_t n = 0;
        for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1))
            n++;
        return n;
    };
    std::string asleep = read();
    EXPECT_EQ(count(asleep, "\"segment_pool_id\""), 2u); // w's two segments (or mapped runs), whole
    EXPECT_EQ(count(asleep, "\"active_allocated\""), 3u);
    EXPECT_EQ(count(asleep, "galloc.sleep.w"), 1u);
    EXPECT_EQ(count(asleep, "\"START\""), 1u);
    EXPECT_EQ(count(asleep, "\"END\""), 0u);
    EXPECT_EQ(count(asleep, "segment_unmap"), 0u); // no trace entry the viewer would replay
    ASSERT_EQ(galloc_snapshot_write(a_, path.c_str(), GALLOC_SNAPSHOT_PICKLE), GALLOC_OK) << Err();
    ASSERT_EQ(galloc_wake(a_, "w"), GALLOC_OK) << Err();
    std::string awake = read();
    EXPECT_EQ(count(awake, "galloc.sleep.w"), 2u);
    EXPECT_EQ(count(awake, "\"END\""), 1u);
    EXPECT_EQ(count(awake, "segment_map"), count(asleep, "segment_map")); // expandable: the first maps only
}

INSTANTIATE_TEST_SUITE_P(Modes, Sleep, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool> &i) { return i.param ? "Expandable" : "Plain"; });

} // namespace
