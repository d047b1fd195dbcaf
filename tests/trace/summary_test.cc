// summary_test: memory_summary's text, character for character. The expected
// strings were produced by PyTorch's memory_summary (torch/cuda/memory.py at
// pytorch/pytorch 00b65a04a2d30e498eedcb1e3476abd547f428f1) run in python3 on
// the same stats; they exercise every unit step, the pool rows sharing the
// "all" row's unit, Python's floor division of a negative figure, and the
// oversize rows' own references.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

extern "C" {
#include <galloc/galloc_stats.h>
#include "trace/summary.h"
}

namespace {

const int64_t KiB = 1024, MiB = 1024 * KiB, GiB = 1024 * MiB;

void set(galloc_stat_t arr[3], galloc_stat_t all, galloc_stat_t large, galloc_stat_t small)
{
    arr[GALLOC_STAT_ALL] = all;
    arr[GALLOC_STAT_LARGE_POOL] = large;
    arr[GALLOC_STAT_SMALL_POOL] = small;
}

galloc_stats_t known_stats()
{
    galloc_stats_t s = {};
    s.struct_size = sizeof(s);
    set(s.allocated_bytes, {3 * GiB + 512, 4 * GiB, 123456789012, 120235563540},
        {3 * GiB, 4 * GiB, 123000000000, 119778774528}, {512, MiB, 456789012, 456788500});
    set(s.active_bytes, {3 * GiB + 1536, 4 * GiB + KiB, 123456790036, 120235564564},
        {3 * GiB, 4 * GiB, 123000000000, 119778774528}, {1536, MiB + KiB, 456790036, 456788500});
    set(s.requested_bytes, {3 * GiB - 1000, 4 * GiB - 7, 123456000000, 120234775540},
        {3 * GiB - 1100, 4 * GiB - 8, 122999300000, 119778000000}, {100, 1000, 699999, 699899});
    set(s.reserved_bytes, {3 * GiB + 20 * MiB, 5 * GiB, 10 * GiB, 7 * GiB - 20 * MiB},
        {3 * GiB + 18 * MiB, 5 * GiB - 2 * MiB, 10 * GiB - 2 * MiB, 7 * GiB - 20 * MiB},
        {2 * MiB, 2 * MiB, 2 * MiB, 0});
    set(s.inactive_split_bytes, {5 * MiB, 700 * KiB, 767 * KiB, 768 * KiB},
        {5 * MiB + 1536, 700 * KiB, 767 * KiB, 768 * KiB}, {-1536, 0, 0, 0});
    set(s.allocation, {1000, 1001, 1234567, 1233567}, {900, 950, 1000000, 999100}, {100, 101, 234567, 234467});
    set(s.active, {1001, 1002, 1234570, 1233569}, {901, 951, 1000001, 999100}, {100, 101, 234569, 234469});
    set(s.segment, {40, 50, 749999, 749959}, {30, 40, 500000, 499970}, {10, 10, 249999, 249989});
    set(s.inactive_split, {3, 9, 750000, 749997}, {2, 8, 500000, 499998}, {1, 1, 250000, 249999});
    s.oversize_allocations = {2, 5, 800000, 799998};
    s.oversize_segments = {0, 1, 3, 3};
    s.num_ooms = 3;
    s.num_alloc_retries = 17;
    return s;
}

const char *const kFull = R"(|===========================================================================|
|                  PyTorch CUDA memory summary, device ID 2                 |
|---------------------------------------------------------------------------|
|            CUDA OOMs: 3            |        cudaMalloc retries: 17        |
|===========================================================================|
|        Metric         | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  |
|---------------------------------------------------------------------------|
| Allocated memory      |   3072 MiB |   4096 MiB | 117737 MiB | 114665 MiB |
|       from large pool |   3072 MiB |   4096 MiB | 117301 MiB | 114229 MiB |
|       from small pool |      0 MiB |      1 MiB |    435 MiB |    435 MiB |
|---------------------------------------------------------------------------|
| Active memory         |   3072 MiB |   4096 MiB | 117737 MiB | 114665 MiB |
|       from large pool |   3072 MiB |   4096 MiB | 117301 MiB | 114229 MiB |
|       from small pool |      0 MiB |      1 MiB |    435 MiB |    435 MiB |
|---------------------------------------------------------------------------|
| Requested memory      |   3071 MiB |   4095 MiB | 117736 MiB | 114664 MiB |
|       from large pool |   3071 MiB |   4095 MiB | 117301 MiB | 114229 MiB |
|       from small pool |      0 MiB |      0 MiB |      0 MiB |      0 MiB |
|---------------------------------------------------------------------------|
| GPU reserved memory   |   3092 MiB |   5120 MiB |  10240 MiB |   7148 MiB |
|       from large pool |   3090 MiB |   5118 MiB |  10238 MiB |   7148 MiB |
|       from small pool |      2 MiB |      2 MiB |      2 MiB |      0 MiB |
|---------------------------------------------------------------------------|
| Non-releasable memory |   5120 KiB | 716800 B   | 785408 B   |    768 KiB |
|       from large pool |   5121 KiB | 716800 B   | 785408 B   |    768 KiB |
|       from small pool |     -2 KiB |      0 B   |      0 B   |      0 KiB |
|---------------------------------------------------------------------------|
| Allocations           |    1000    |    1001    |    1234 K  |    1233 K  |
|       from large pool |     900    |     950    |    1000 K  |     999 K  |
|       from small pool |     100    |     101    |     234 K  |     234 K  |
|---------------------------------------------------------------------------|
| Active allocs         |    1001    |    1002    |    1234 K  |    1233 K  |
|       from large pool |     901    |     951    |    1000 K  |     999 K  |
|       from small pool |     100    |     101    |     234 K  |     234 K  |
|---------------------------------------------------------------------------|
| GPU reserved segments |      40    |      50    |  749999    |  749959    |
|       from large pool |      30    |      40    |  500000    |  499970    |
|       from small pool |      10    |      10    |  249999    |  249989    |
|---------------------------------------------------------------------------|
| Non-releasable allocs |       3    |       9    |     750 K  |  749997    |
|       from large pool |       2    |       8    |     500 K  |  499998    |
|       from small pool |       1    |       1    |     250 K  |  249999    |
|---------------------------------------------------------------------------|
| Oversize allocations  |       2    |       5    |     800 K  |     799 K  |
|---------------------------------------------------------------------------|
| Oversize GPU segments |       0    |       1    |       3    |       3    |
|===========================================================================|
)";

const char *const kAbbreviated = R"(|===========================================================================|
|                  PyTorch CUDA memory summary, device ID 2                 |
|---------------------------------------------------------------------------|
|            CUDA OOMs: 3            |        cudaMalloc retries: 17        |
|===========================================================================|
|        Metric         | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  |
|---------------------------------------------------------------------------|
| Allocated memory      |   3072 MiB |   4096 MiB | 117737 MiB | 114665 MiB |
|---------------------------------------------------------------------------|
| Active memory         |   3072 MiB |   4096 MiB | 117737 MiB | 114665 MiB |
|---------------------------------------------------------------------------|
| Requested memory      |   3071 MiB |   4095 MiB | 117736 MiB | 114664 MiB |
|---------------------------------------------------------------------------|
| GPU reserved memory   |   3092 MiB |   5120 MiB |  10240 MiB |   7148 MiB |
|---------------------------------------------------------------------------|
| Non-releasable memory |   5120 KiB | 716800 B   | 785408 B   |    768 KiB |
|---------------------------------------------------------------------------|
| Allocations           |    1000    |    1001    |    1234 K  |    1233 K  |
|---------------------------------------------------------------------------|
| Active allocs         |    1001    |    1002    |    1234 K  |    1233 K  |
|---------------------------------------------------------------------------|
| GPU reserved segments |      40    |      50    |  749999    |  749959    |
|---------------------------------------------------------------------------|
| Non-releasable allocs |       3    |       9    |     750 K  |  749997    |
|---------------------------------------------------------------------------|
| Oversize allocations  |       2    |       5    |     800 K  |     799 K  |
|---------------------------------------------------------------------------|
| Oversize GPU segments |       0    |       1    |       3    |       3    |
|===========================================================================|
)";

std::string summary(const galloc_stats_t &s, int device, bool abbreviated)
{
    char buf[GA_TRACE_SUMMARY_SIZE];
    size_t n = ga_trace_summary(buf, sizeof(buf), &s, device, abbreviated);
    EXPECT_LT(n, sizeof(buf));
    EXPECT_EQ(n, strlen(buf));
    return buf;
}

TEST(Summary, MatchesPyTorchExactly)
{
    EXPECT_EQ(summary(known_stats(), 2, false), kFull);
}

TEST(Summary, AbbreviatedHasOnlyTheAllRows)
{
    EXPECT_EQ(summary(known_stats(), 2, true), kAbbreviated);
}

TEST(Summary, EveryLineIs77ColumnsPlusNewline)
{
    std::string s = summary(known_stats(), 2, false);
    size_t lines = 0;
    for (size_t pos = 0; pos < s.size(); lines++) {
        size_t nl = s.find('\n', pos);
        ASSERT_NE(nl, std::string::npos);
        EXPECT_EQ(nl - pos, 77u) << s.substr(pos, nl - pos);
        pos = nl + 1;
    }
    EXPECT_EQ(lines, 47u);
}

TEST(Summary, ZeroStatsAndSmallBuffer)
{
    galloc_stats_t z = {};
    z.struct_size = sizeof(z);
    std::string s = summary(z, 0, false);
    EXPECT_NE(s.find("| Allocated memory      |      0 B   |      0 B   |      0 B   |      0 B   |\n"),
              std::string::npos);
    EXPECT_NE(s.find("|       from small pool |       0    |       0    |       0    |       0    |\n"),
              std::string::npos);
    // snprintf semantics: cut, NUL-terminated, full length returned.
    char small[100];
    size_t n = ga_trace_summary(small, sizeof(small), &z, 0, false);
    EXPECT_EQ(n, s.size());
    EXPECT_EQ(std::string(small), s.substr(0, sizeof(small) - 1));
    EXPECT_EQ(ga_trace_summary(nullptr, 0, &z, 0, false), s.size());
    EXPECT_EQ(ga_trace_summary(small, sizeof(small), nullptr, 0, false), 0u);
}

} // namespace
