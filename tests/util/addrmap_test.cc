// addrmap_test: util/addrmap.h, galloc's one address map. Exact positions for
// backward-shift deletion (colliding keys are found through the map itself),
// growth sizes, a reserve failure leaving everything as it was, and a
// randomized run against std::unordered_map (seed printed; GA_SEED repeats it).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

extern "C" {
#include "util/addrmap.h"
}

// An allocation too large for any host (and above ASan's limit, which then
// returns NULL instead of aborting) must come back as GALLOC_E_NOMEM.
extern "C" const char *__asan_default_options()
{
    return "allocator_may_return_null=1";
}

namespace {

struct Entry {
    uintptr_t key;
    uint64_t value;
    uint64_t check; // a third word: moves must copy the whole entry
};

class AddrMap : public ::testing::Test {
  protected:
    void SetUp() override { ga_addrmap_init(&m_, sizeof(Entry)); }
    void TearDown() override
    {
        EXPECT_TRUE(ga_addrmap_valid(&m_));
        ga_addrmap_destroy(&m_);
        EXPECT_EQ(m_.slots, nullptr);
        EXPECT_EQ(ga_addrmap_count(&m_), 0u);
    }

    Entry *Insert(uintptr_t key, uint64_t value)
    {
        EXPECT_EQ(ga_addrmap_reserve(&m_, 1), GALLOC_OK);
        auto *e = static_cast<Entry *>(ga_addrmap_insert(&m_, key));
        EXPECT_EQ(e->key, key);
        e->value = value;
        e->check = ~value;
        return e;
    }

    Entry *Find(uintptr_t key) { return static_cast<Entry *>(ga_addrmap_find(&m_, key)); }

    size_t SlotOf(uintptr_t key)
    {
        Entry *e = Find(key);
        EXPECT_NE(e, nullptr) << "key " << key;
        return e == nullptr ? SIZE_MAX
                            : static_cast<size_t>(reinterpret_cast<unsigned char *>(e) - m_.slots) / sizeof(Entry);
    }

    // The home slot of key in a table of m_.cap slots: where it lands alone.
    size_t HomeOf(uintptr_t key)
    {
        ga_addrmap_t t;
        ga_addrmap_init(&t, sizeof(Entry));
        EXPECT_EQ(ga_addrmap_reserve(&t, m_.cap / 2), GALLOC_OK);
        EXPECT_EQ(t.cap, m_.cap);
        auto *e = static_cast<unsigned char *>(ga_addrmap_insert(&t, key));
        size_t home = static_cast<size_t>(e - t.slots) / sizeof(Entry);
        ga_addrmap_destroy(&t);
        return home;
    }

    // n distinct 512-aligned keys (device-block-like) whose home is `home`.
    std::vector<uintptr_t> KeysHomedAt(size_t home, size_t n, uintptr_t start = 0x7f0000000000)
    {
        std::vector<uintptr_t> keys;
        for (uintptr_t k = start; keys.size() < n; k += 512)
            if (HomeOf(k) == home)
                keys.push_back(k);
        return keys;
    }

    void ExpectEntry(uintptr_t key, uint64_t value)
    {
        Entry *e = Find(key);
        ASSERT_NE(e, nullptr) << "key " << key;
        EXPECT_EQ(e->key, key);
        EXPECT_EQ(e->value, value);
        EXPECT_EQ(e->check, ~value);
    }

    ga_addrmap_t m_;
};

TEST_F(AddrMap, EmptyMapFindsNothingAndAllocatesNothing)
{
    EXPECT_EQ(m_.cap, 0u);
    EXPECT_EQ(m_.slots, nullptr);
    EXPECT_EQ(Find(0x1000), nullptr);
    EXPECT_EQ(Find(0), nullptr);
    EXPECT_EQ(ga_addrmap_reserve(&m_, 0), GALLOC_OK);
    EXPECT_EQ(m_.slots, nullptr);
}

TEST_F(AddrMap, InsertFindRemove)
{
    Insert(0x7f0000000200, 512);
    Insert(0x7f0000000400, 1024);
    Insert(1, 7); // small ids are keys too (the replay tool's trace ids)
    EXPECT_EQ(ga_addrmap_count(&m_), 3u);
    EXPECT_EQ(m_.cap, 16u); // the first growth: 16 slots
    ExpectEntry(0x7f0000000200, 512);
    ExpectEntry(0x7f0000000400, 1024);
    ExpectEntry(1, 7);
    EXPECT_EQ(Find(0x7f0000000600), nullptr);
    EXPECT_EQ(Find(0), nullptr);

    ga_addrmap_remove(&m_, Find(0x7f0000000200));
    EXPECT_EQ(ga_addrmap_count(&m_), 2u);
    EXPECT_EQ(Find(0x7f0000000200), nullptr);
    ExpectEntry(0x7f0000000400, 1024);
    ExpectEntry(1, 7);

    ga_addrmap_remove(&m_, Find(1));
    ga_addrmap_remove(&m_, Find(0x7f0000000400));
    EXPECT_EQ(ga_addrmap_count(&m_), 0u);
    EXPECT_EQ(Find(0x7f0000000400), nullptr);
    EXPECT_EQ(m_.cap, 16u); // removal never shrinks

    Insert(0x7f0000000200, 9); // a removed key can come back
    ExpectEntry(0x7f0000000200, 9);
}

TEST_F(AddrMap, RemoveShiftsTheProbeRunBack)
{
    ASSERT_EQ(ga_addrmap_reserve(&m_, 1), GALLOC_OK);
    ASSERT_EQ(m_.cap, 16u);
    // A, B, C share home 3; D's home is 4. Linear probing puts them at 3..6.
    std::vector<uintptr_t> h3 = KeysHomedAt(3, 3);
    uintptr_t d = KeysHomedAt(4, 1)[0];
    Insert(h3[0], 10);
    Insert(h3[1], 11);
    Insert(h3[2], 12);
    Insert(d, 13);
    EXPECT_EQ(SlotOf(h3[0]), 3u);
    EXPECT_EQ(SlotOf(h3[1]), 4u);
    EXPECT_EQ(SlotOf(h3[2]), 5u);
    EXPECT_EQ(SlotOf(d), 6u);

    // Removing A pulls each later entry back one slot (D may move to 5, its
    // home 4 being before the hole).
    ga_addrmap_remove(&m_, Find(h3[0]));
    EXPECT_EQ(Find(h3[0]), nullptr);
    EXPECT_EQ(SlotOf(h3[1]), 3u);
    EXPECT_EQ(SlotOf(h3[2]), 4u);
    EXPECT_EQ(SlotOf(d), 5u);
    EXPECT_EQ(ga_addrmap_slot(&m_, 6), nullptr); // no tombstone
    ExpectEntry(h3[1], 11);
    ExpectEntry(h3[2], 12);
    ExpectEntry(d, 13);
    EXPECT_TRUE(ga_addrmap_valid(&m_));
}

TEST_F(AddrMap, RemoveLeavesAnEntryAtItsHome)
{
    ASSERT_EQ(ga_addrmap_reserve(&m_, 1), GALLOC_OK);
    // P and R have home 8, Q home 9: P at 8, Q at 9 (its home), R at 10.
    std::vector<uintptr_t> h8 = KeysHomedAt(8, 2);
    uintptr_t q = KeysHomedAt(9, 1)[0];
    Insert(h8[0], 1);
    Insert(q, 2);
    Insert(h8[1], 3);
    EXPECT_EQ(SlotOf(h8[0]), 8u);
    EXPECT_EQ(SlotOf(q), 9u);
    EXPECT_EQ(SlotOf(h8[1]), 10u);

    // Q must not move before its home; R skips over it into the hole.
    ga_addrmap_remove(&m_, Find(h8[0]));
    EXPECT_EQ(SlotOf(h8[1]), 8u);
    EXPECT_EQ(SlotOf(q), 9u);
    EXPECT_EQ(ga_addrmap_slot(&m_, 10), nullptr);
    ExpectEntry(q, 2);
    ExpectEntry(h8[1], 3);
}

TEST_F(AddrMap, RemoveShiftsAcrossTheEndOfTheArray)
{
    ASSERT_EQ(ga_addrmap_reserve(&m_, 1), GALLOC_OK);
    // X1 and X2 have home 15 (the last slot): X2 wraps to 0; Y's home 0 puts it at 1.
    std::vector<uintptr_t> h15 = KeysHomedAt(15, 2);
    uintptr_t y = KeysHomedAt(0, 1)[0];
    Insert(h15[0], 1);
    Insert(h15[1], 2);
    Insert(y, 3);
    EXPECT_EQ(SlotOf(h15[0]), 15u);
    EXPECT_EQ(SlotOf(h15[1]), 0u);
    EXPECT_EQ(SlotOf(y), 1u);

    ga_addrmap_remove(&m_, Find(h15[0]));
    EXPECT_EQ(SlotOf(h15[1]), 15u);
    EXPECT_EQ(SlotOf(y), 0u);
    EXPECT_EQ(ga_addrmap_slot(&m_, 1), nullptr);
    ExpectEntry(h15[1], 2);
    ExpectEntry(y, 3);
}

TEST_F(AddrMap, GrowsByDoublingAndKeepsHalfEmpty)
{
    std::vector<size_t> caps;
    for (uintptr_t i = 1; i <= 1000; i++) {
        Insert(0x7f0000000000 + i * 512, i);
        if (caps.empty() || caps.back() != m_.cap)
            caps.push_back(m_.cap);
        ASSERT_LE(ga_addrmap_count(&m_) * 2, m_.cap);
    }
    EXPECT_EQ(caps, (std::vector<size_t>{16, 32, 64, 128, 256, 512, 1024, 2048}));
    EXPECT_EQ(ga_addrmap_count(&m_), 1000u);
    for (uintptr_t i = 1; i <= 1000; i++)
        ExpectEntry(0x7f0000000000 + i * 512, i);
}

TEST_F(AddrMap, ReserveTakesRoomForManyAtOnceAndIsFreeWhenThereIsRoom)
{
    ASSERT_EQ(ga_addrmap_reserve(&m_, 100), GALLOC_OK);
    EXPECT_EQ(m_.cap, 256u); // the smallest power of two at most half full with 100
    unsigned char *slots = m_.slots;
    for (uintptr_t i = 1; i <= 100; i++)
        static_cast<Entry *>(ga_addrmap_insert(&m_, i * 16))->value = i;
    EXPECT_EQ(ga_addrmap_reserve(&m_, 28), GALLOC_OK);
    EXPECT_EQ(m_.slots, slots); // 128 of 256: still room, nothing allocated
    EXPECT_EQ(ga_addrmap_reserve(&m_, 29), GALLOC_OK);
    EXPECT_EQ(m_.cap, 512u);
    for (uintptr_t i = 1; i <= 100; i++)
        ASSERT_EQ(Find(i * 16)->value, i);
}

TEST_F(AddrMap, FailedReserveChangesNothing)
{
    for (uintptr_t i = 1; i <= 8; i++)
        Insert(i * 0x200000, i); // 8 of 16: full up to the load limit
    ASSERT_EQ(m_.cap, 16u);
    const ga_addrmap_t before = m_;
    std::vector<unsigned char> bytes(m_.slots, m_.slots + m_.cap * sizeof(Entry));

    // A size that would overflow, and one no host can allocate (2 PiB).
    for (size_t n : {SIZE_MAX, SIZE_MAX / 2, static_cast<size_t>(1) << 46}) {
        EXPECT_EQ(ga_addrmap_reserve(&m_, n), GALLOC_E_NOMEM) << n;
        EXPECT_EQ(m_.slots, before.slots);
        EXPECT_EQ(m_.cap, before.cap);
        EXPECT_EQ(m_.count, before.count);
        EXPECT_EQ(m_.shift, before.shift);
        EXPECT_EQ(std::vector<unsigned char>(m_.slots, m_.slots + m_.cap * sizeof(Entry)), bytes);
    }
    for (uintptr_t i = 1; i <= 8; i++)
        ExpectEntry(i * 0x200000, i);
}

TEST_F(AddrMap, WalkSeesEveryEntryOnceAndMayRemoveAsItGoes)
{
    std::unordered_map<uintptr_t, uint64_t> ref;
    for (uintptr_t i = 1; i <= 300; i++) {
        Insert(i * 4096, i);
        ref[i * 4096] = i;
    }
    std::unordered_map<uintptr_t, int> seen;
    for (size_t i = 0; i < m_.cap; i++)
        if (auto *e = static_cast<Entry *>(ga_addrmap_slot(&m_, i)))
            seen[e->key]++;
    EXPECT_EQ(seen.size(), ref.size());
    for (const auto &kv : seen)
        EXPECT_EQ(kv.second, 1) << kv.first;

    // Empty the map the way an owner's destroy does: look at slot i again
    // after each removal, since the shift may have moved an entry into it.
    size_t removed = 0;
    for (size_t i = 0; i < m_.cap; i++)
        while (auto *e = static_cast<Entry *>(ga_addrmap_slot(&m_, i))) {
            ASSERT_EQ(ref.erase(e->key), 1u);
            ga_addrmap_remove(&m_, e);
            removed++;
        }
    EXPECT_EQ(removed, 300u);
    EXPECT_TRUE(ref.empty());
    EXPECT_EQ(ga_addrmap_count(&m_), 0u);
}

bool ValueIs(const void *entry, const void *ctx)
{
    return static_cast<const Entry *>(entry)->value == *static_cast<const uint64_t *>(ctx);
}

TEST(AddrMapIndex, EntriesThatShareAHashKeyAreToldApartByTheMatch)
{
    // An index by hash (trace/'s strings, frames, stacks): colliding hashes
    // share a key, and the caller's test picks the record it wants.
    ga_addrmap_t m;
    ga_addrmap_init(&m, sizeof(Entry));
    const uintptr_t key = ga_addrmap_hash_key(0xFFFFFFFFFFFFFFFFull);
    EXPECT_NE(key, 0u);
    EXPECT_NE(ga_addrmap_hash_key(0), 0u);
    uint64_t one = 1;
    EXPECT_EQ(ga_addrmap_find_match(&m, key, ValueIs, &one), nullptr); // nothing allocated yet
    ASSERT_EQ(ga_addrmap_reserve(&m, 40), GALLOC_OK);
    for (uint64_t v = 1; v <= 3; v++)
        static_cast<Entry *>(ga_addrmap_insert(&m, key))->value = v;
    for (uint64_t v = 100; v < 130; v++) // other keys (v and v + 1 share one), some in the same run
        static_cast<Entry *>(ga_addrmap_insert(&m, ga_addrmap_hash_key(v)))->value = v;
    for (uint64_t v = 1; v <= 3; v++) {
        auto *e = static_cast<Entry *>(ga_addrmap_find_match(&m, key, ValueIs, &v));
        ASSERT_NE(e, nullptr) << v;
        EXPECT_EQ(e->key, key);
        EXPECT_EQ(e->value, v);
    }
    uint64_t absent = 4;
    EXPECT_EQ(ga_addrmap_find_match(&m, key, ValueIs, &absent), nullptr);
    uint64_t two = 2;
    ga_addrmap_remove(&m, ga_addrmap_find_match(&m, key, ValueIs, &two));
    EXPECT_EQ(ga_addrmap_find_match(&m, key, ValueIs, &two), nullptr);
    for (uint64_t v : {1, 3}) {
        auto *e = static_cast<Entry *>(ga_addrmap_find_match(&m, key, ValueIs, &v));
        ASSERT_NE(e, nullptr) << v;
        EXPECT_EQ(e->value, v);
    }
    for (uint64_t v = 100; v < 130; v++) {
        auto *e = static_cast<Entry *>(ga_addrmap_find_match(&m, ga_addrmap_hash_key(v), ValueIs, &v));
        ASSERT_NE(e, nullptr) << v;
        EXPECT_EQ(e->value, v);
    }
    EXPECT_EQ(ga_addrmap_count(&m), 32u);
    ga_addrmap_destroy(&m);
}

TEST_F(AddrMap, RandomOperationsMatchUnorderedMap)
{
    const char *env = std::getenv("GA_SEED");
    const uint64_t seed = env != nullptr ? std::strtoull(env, nullptr, 0) : std::random_device{}();
    std::printf("addrmap random seed %llu (rerun with GA_SEED=%llu)\n", static_cast<unsigned long long>(seed),
                static_cast<unsigned long long>(seed));
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937_64 rng(seed);
    std::unordered_map<uintptr_t, uint64_t> ref;
    // Key shapes the map serves: 512-byte blocks in 2 MiB segments, 2 MiB
    // segments, 16-byte host pointers and small trace ids, drawn from small
    // ranges so that the same keys come and go and probe runs collide.
    auto draw = [&]() -> uintptr_t {
        switch (rng() % 4) {
        case 0: return 0x7f0000000000 + (rng() % 64) * (2u << 20) + (rng() % 64) * 512;
        case 1: return 0x7e0000000000 + (rng() % 512) * (2u << 20);
        case 2: return 0x555500000000 + (rng() % 2048) * 16;
        default: return 1 + rng() % 1024;
        }
    };
    for (int step = 0; step < 200000; step++) {
        uintptr_t k = draw();
        Entry *e = Find(k);
        auto it = ref.find(k);
        ASSERT_EQ(e != nullptr, it != ref.end()) << "step " << step << " key " << k;
        // Grow while young, then churn near a steady size.
        bool insert = ref.size() < 1500 ? rng() % 3 != 0 : rng() % 2 == 0;
        if (e == nullptr && insert) {
            uint64_t v = rng();
            ASSERT_EQ(ga_addrmap_reserve(&m_, 1), GALLOC_OK);
            e = static_cast<Entry *>(ga_addrmap_insert(&m_, k));
            e->value = v;
            e->check = ~v;
            ref[k] = v;
        } else if (e != nullptr && !insert) {
            ASSERT_EQ(e->value, it->second) << "step " << step;
            ASSERT_EQ(e->check, ~it->second) << "step " << step;
            ga_addrmap_remove(&m_, e);
            ref.erase(it);
        }
        ASSERT_EQ(ga_addrmap_count(&m_), ref.size()) << "step " << step;
        if (step % 4096 == 0) {
            ASSERT_TRUE(ga_addrmap_valid(&m_)) << "step " << step;
        }
    }
    for (const auto &kv : ref)
        ExpectEntry(kv.first, kv.second);
}

} // namespace
