// conf_strings_test: the core issue's exact figures, each reached through the
// public API with its settings given only as a config string (as a user
// pastes PYTORCH_CUDA_ALLOC_CONF), including the memory fraction
// (per_process_memory_fraction) and strings as PyTorch reads them.
#include <gtest/gtest.h>

#include <string>
#include <vector>

extern "C" {
#include <galloc/galloc.h>
}

namespace {

constexpr int64_t MiB = 1 << 20, GiB = int64_t(1) << 30;

struct Case {
    const char *conf;                 // the only source of settings
    std::vector<int64_t> sizes;       // malloc'd in order, kept live
    const char *key;                  // one stat key to check after the mallocs
    int64_t want;                     // its exact value
    galloc_status_t last = GALLOC_OK; // status of the last malloc
};

class ConfStrings : public ::testing::TestWithParam<Case> {};

TEST_P(ConfStrings, ExactFigure)
{
    const Case &c = GetParam();
    galloc_allocator_t *a = nullptr;
    char err[GALLOC_ERROR_MAX] = "";
    ASSERT_EQ(galloc_allocator_create("sim", 0, c.conf, &a, err, sizeof err), GALLOC_OK) << err;
    std::vector<void *> live;
    for (size_t i = 0; i < c.sizes.size(); i++) {
        void *p = nullptr;
        galloc_status_t st = galloc_malloc(a, (size_t)c.sizes[i], 0, &p);
        if (i + 1 == c.sizes.size()) {
            EXPECT_EQ(st, c.last);
        } else {
            ASSERT_EQ(st, GALLOC_OK);
        }
        if (p != nullptr)
            live.push_back(p);
    }
    galloc_stats_t s;
    s.struct_size = sizeof s;
    ASSERT_EQ(galloc_memory_stats(a, &s), GALLOC_OK);
    int64_t v = 0;
    ASSERT_EQ(galloc_stats_lookup(&s, c.key, &v), GALLOC_OK) << c.key;
    EXPECT_EQ(v, c.want) << c.key;
    EXPECT_EQ(galloc_check(a), GALLOC_OK);
    for (void *p : live)
        EXPECT_EQ(galloc_free(a, p), GALLOC_OK);
    EXPECT_EQ(galloc_check(a), GALLOC_OK);
    galloc_allocator_destroy(a);
}

INSTANTIATE_TEST_SUITE_P(
    Core, ConfStrings,
    ::testing::Values(
        // One byte: one 512-byte block in one 2 MiB small segment, 1 byte requested.
        Case{"sim_capacity:80GiB", {1}, "allocated_bytes.all.current", 512},
        Case{"sim_capacity:80GiB", {1}, "reserved_bytes.small_pool.current", 2 * MiB},
        Case{"sim_capacity:80GiB", {1}, "requested_bytes.all.current", 1},
        // 1 MiB + 1 goes to the large pool's 20 MiB segment.
        Case{"", {MiB + 1}, "reserved_bytes.large_pool.current", 20 * MiB},
        // 30 MiB reserves exactly 30 MiB.
        Case{"", {30 * MiB}, "reserved_bytes.all.current", 30 * MiB},
        // roundup_power2_divisions:4 rounds 1200 MiB to 1280 MiB.
        Case{"roundup_power2_divisions:4", {1200 * MiB}, "allocated_bytes.all.current", 1280 * MiB},
        Case{"roundup_power2_divisions:[256:1,512:2,1024:4,>:8]",
             {1200 * MiB},
             "allocated_bytes.all.current",
             1280 * MiB},
        // Fraction 0.5 of an 80 GiB device: 41 GiB is refused, one OOM counted.
        Case{"sim_capacity:80GiB,per_process_memory_fraction:0.5", {41 * GiB}, "num_ooms", 1, GALLOC_E_OOM},
        Case{"sim_capacity:80GiB,per_process_memory_fraction:0.5", {40 * GiB}, "reserved_bytes.all.current", 40 * GiB},
        // max_split_size_mb as the stat reports it; "-1" as PyTorch reads it
        // (stoull wraps, the clamp gives 2^64 - 2^20 bytes, the int64 stat -2^20).
        Case{"max_split_size_mb:512", {MiB}, "max_split_size", 512 * MiB},
        Case{"max_split_size_mb:512MB", {MiB}, "max_split_size", 512 * MiB},
        Case{"max_split_size_mb:-1", {MiB}, "max_split_size", -MiB}, Case{"", {MiB}, "max_split_size", -1},
        // Oversize: above max_split_size_mb a block is not split and counts.
        Case{"max_split_size_mb:100", {200 * MiB}, "oversize_allocations.current", 1},
        // Whitespace is dropped, as PyTorch's tokenizer does.
        Case{" expandable_segments : True ", {MiB + 1}, "segment.all.current", 0}));

} // namespace
