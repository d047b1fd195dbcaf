// index_test: the free-block index (pool/sizeidx.h, pool/blockpool.c) against
// a sorted reference. PyTorch keeps a pool's free blocks in one std::set
// ordered by (stream, size, address) and searches it with lower_bound; the
// reference here is exactly that set, and every answer of the index must be
// the same block: best fit within a stream, the cross-stream lower bound that
// release_available_cached_blocks walks back from, and the full walk both
// ways. Randomized (seed printed on failure, GALLOC_SEED overrides it) with
// many equal sizes, blocks inserted at descending addresses, sizes on both
// sides of the 2 MiB edge of the exact bins and inside the TLSF classes.
#include <gtest/gtest.h>

#include <cstdlib>
#include <random>
#include <set>
#include <tuple>
#include <vector>

extern "C" {
#include "tests/pool/index_shim.h"
}

namespace {

constexpr uint64_t KiB = 1024, MiB = 1024 * KiB, GiB = 1024 * MiB;

uint64_t SeedFor(uint64_t fallback)
{
    const char *s = std::getenv("GALLOC_SEED");
    return s != nullptr ? std::strtoull(s, nullptr, 0) : fallback;
}

TEST(IndexBins, MonotonicExactThenClasses)
{
    // Exact bins: one per 512 B size up to 2 MiB.
    EXPECT_EQ(index_shim_bin(512), 0u);
    EXPECT_EQ(index_shim_bin(4 * KiB), 7u);
    EXPECT_EQ(index_shim_bin(2 * MiB), 4095u);
    EXPECT_EQ(index_shim_bin(2 * MiB + 512), 4096u); // first class
    // A key need not be a multiple of 512: it searches from the next size up.
    EXPECT_EQ(index_shim_key_bin(0), 0u);
    EXPECT_EQ(index_shim_key_bin(1), 0u);
    EXPECT_EQ(index_shim_key_bin(513), 1u);
    EXPECT_EQ(index_shim_key_bin(2 * MiB + 1), 4096u);
    // Never decreasing, across every power of two up to 2^63.
    std::set<uint64_t> sizes;
    for (int e = 9; e < 64; e++)
        for (uint64_t m = 0; m < 8; m++)
            for (int64_t d : {-512, 0, 512})
                sizes.insert((((uint64_t{1} << e) + (m << (e > 12 ? e - 3 : 9))) & ~uint64_t{511}) + d);
    unsigned prev = 0;
    for (uint64_t size : sizes) {
        if (size < 512)
            continue;
        unsigned bin = index_shim_bin(size);
        EXPECT_GE(bin, prev) << size;
        EXPECT_LT(bin, index_shim_bins()) << size;
        prev = bin;
    }
}

using Key = std::tuple<uintptr_t, uint64_t, uintptr_t, size_t>; // stream, size, address, slot

// One randomized run: `ops` inserts and removes of `slots` records on three
// streams, every query compared with the reference set after each.
void RunRandom(bool small, uint64_t seed, int ops, size_t slots)
{
    SCOPED_TRACE("seed " + std::to_string(seed) + " (GALLOC_SEED=" + std::to_string(seed) + " to rerun)");
    const uintptr_t streams[] = {0, 7, 0x7f00};
    index_shim_t *x = index_shim_new(small, slots, streams, 3);
    ASSERT_NE(x, nullptr);
    struct Deleter {
        index_shim_t *x;
        ~Deleter() { index_shim_delete(x); }
    } deleter{x};
    std::mt19937_64 rng(seed);
    auto pick = [&](uint64_t n) { return static_cast<uint64_t>(rng() % n); };

    // Sizes: a few popular ones (ties), the 2 MiB edge, random exact sizes,
    // and class sizes, some within one class and some equal.
    std::vector<uint64_t> popular = {512,      4 * KiB,        2 * MiB - 512, 2 * MiB, 2 * MiB + 512,
                                     20 * MiB, 20 * MiB + 512, 21 * MiB,      GiB,     GiB + 512};
    auto size_of = [&]() -> uint64_t {
        switch (pick(4)) {
        case 0: return popular[pick(popular.size())];
        case 1: return 512 * (1 + pick(4096));                            // every exact bin
        case 2: return 2 * MiB + 512 * (1 + pick(8192));                  // the first classes
        default: return 512 * (1 + pick(uint64_t{1} << (12 + pick(20)))); // any size up to 512 GiB
        }
    };

    std::set<Key> ref;
    std::vector<bool> in(slots, false);
    std::vector<Key> key(slots);
    uintptr_t descending = uintptr_t{1} << 50; // addresses handed out high to low
    std::set<uintptr_t> addrs;                 // every address once

    auto check_query = [&](uintptr_t s, uint64_t want) {
        auto it = ref.lower_bound(Key{s, want, 0, 0});
        long lb = it == ref.end() ? -1 : static_cast<long>(std::get<3>(*it));
        long fit = (it != ref.end() && std::get<0>(*it) == s) ? lb : -1;
        ASSERT_EQ(index_shim_lower_bound(x, s, want), lb) << "lower_bound(stream " << s << ", " << want << ")";
        ASSERT_EQ(index_shim_fit(x, s, want), fit) << "fit(stream " << s << ", " << want << ")";
        if (want >= 512 && want % 512 == 0 && want < (uint64_t{1} << 60)) { // malloc's requests
            ASSERT_EQ(index_shim_fit_rounded(x, s, want), fit) << "fit_rounded(stream " << s << ", " << want << ")";
        }
    };

    for (int op = 0; op < ops; op++) {
        size_t i = pick(slots);
        if (in[i]) {
            index_shim_remove(x, i);
            ref.erase(key[i]);
            addrs.erase(std::get<2>(key[i]));
            in[i] = false;
        } else {
            uintptr_t s = streams[pick(3)];
            uint64_t size = size_of();
            uintptr_t addr;
            do {
                addr = pick(2) ? (descending -= 512 * (1 + pick(4))) : 512 * (1 + pick(uint64_t{1} << 40));
            } while (!addrs.insert(addr).second);
            index_shim_insert(x, i, s, size, addr);
            key[i] = Key{s, size, addr, i};
            ref.insert(key[i]);
            in[i] = true;
        }
        ASSERT_TRUE(index_shim_ok(x)) << "after op " << op;
        ASSERT_EQ(index_shim_count(x), ref.size());

        // Queries at sizes of members (ties), just above and below them,
        // not multiples of 512, and at random.
        for (int q = 0; q < 4; q++) {
            uintptr_t s = streams[pick(3)];
            uint64_t want;
            if (!ref.empty() && pick(2)) {
                auto it = ref.begin();
                std::advance(it, static_cast<long>(pick(ref.size() < 64 ? ref.size() : 64)));
                want = std::get<1>(*it);
                switch (pick(4)) {
                case 0: want += 512; break;
                case 1: want -= want > 512 ? 512 : 0; break;
                case 2: want -= 1 + pick(511); break;
                default: break;
                }
            } else {
                want = pick(3) == 0 ? pick(uint64_t{1} << 63) : size_of() - pick(512);
            }
            check_query(s, want);
        }
        check_query(streams[pick(3)], 0);
        check_query(streams[pick(3)], ~uint64_t{0});
        if (::testing::Test::HasFatalFailure())
            break; // one mismatch is enough to read

        // The walks, now and then (they are O(n)).
        if (op % 97 == 0 || op == ops - 1) {
            long b = index_shim_first(x);
            for (const Key &k : ref) {
                ASSERT_EQ(b, static_cast<long>(std::get<3>(k))) << "forward walk, op " << op;
                b = index_shim_next(x, static_cast<size_t>(b));
            }
            ASSERT_EQ(b, -1);
            b = index_shim_last(x);
            for (auto it = ref.rbegin(); it != ref.rend(); ++it) {
                ASSERT_EQ(b, static_cast<long>(std::get<3>(*it))) << "backward walk, op " << op;
                b = index_shim_prev(x, static_cast<size_t>(b));
            }
            ASSERT_EQ(b, -1);
        }
    }
}

TEST(Index, SmallPoolMatchesSortedSet)
{
    RunRandom(true, SeedFor(11), 20000, 300);
}

TEST(Index, LargePoolMatchesSortedSet)
{
    RunRandom(false, SeedFor(12), 20000, 300);
}

TEST(Index, ManyEqualSizesDescendingAddresses)
{
    // Thousands of blocks of one size inserted high to low: the bin's tree
    // must still give the lowest address, and removing it the next lowest.
    const uintptr_t streams[] = {3};
    const size_t n = 4096;
    for (uint64_t size : {uint64_t{4 * KiB}, uint64_t{2 * MiB}, uint64_t{20 * MiB + 512}, uint64_t{GiB}}) {
        index_shim_t *x = index_shim_new(size <= 2 * MiB, n, streams, 1);
        ASSERT_NE(x, nullptr);
        for (size_t i = 0; i < n; i++)
            index_shim_insert(x, i, 3, size, (n - i) * 4 * GiB);
        ASSERT_TRUE(index_shim_ok(x));
        for (size_t k = 0; k < n; k++) {
            size_t lowest = n - 1 - k; // slot i sits at (n - i) * 4 GiB
            ASSERT_EQ(index_shim_fit(x, 3, size), static_cast<long>(lowest)) << size << " step " << k;
            ASSERT_EQ(index_shim_fit(x, 3, size - 512), static_cast<long>(lowest));
            ASSERT_EQ(index_shim_fit_rounded(x, 3, size), static_cast<long>(lowest));
            ASSERT_EQ(index_shim_fit(x, 3, size + 1), -1);
            index_shim_remove(x, lowest);
        }
        ASSERT_TRUE(index_shim_ok(x));
        EXPECT_EQ(index_shim_count(x), 0u);
        index_shim_delete(x);
    }
}

} // namespace
