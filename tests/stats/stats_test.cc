// stats_test: PyTorch's Stat algebra, resets, and the 123 flattened keys in
// torch.cuda.memory_stats() order.
#include <gtest/gtest.h>

#include <string>
#include <vector>

extern "C" {
#include <galloc/galloc_stats.h>
#include "stats/stats.h"
}

namespace {

int collect(void *ctx, const char *key, int64_t value)
{
    auto *v = static_cast<std::vector<std::pair<std::string, int64_t>> *>(ctx);
    v->emplace_back(key, value);
    return 0;
}

TEST(Stats, IncreaseMovesPeakAndAllocated)
{
    galloc_stat_t s = {};
    ga_stat_increase(&s, 10);
    ga_stat_decrease(&s, 4);
    ga_stat_increase(&s, 2);
    EXPECT_EQ(s.current, 8);
    EXPECT_EQ(s.peak, 10);
    EXPECT_EQ(s.allocated, 12);
    EXPECT_EQ(s.freed, 4);
}

TEST(Stats, UpdateCountsAllAndPool)
{
    galloc_stats_t st;
    ga_stats_init(&st, UINT64_MAX);
    ga_stat_update(st.allocated_bytes, GALLOC_STAT_SMALL_POOL, 512);
    ga_stat_update(st.allocated_bytes, GALLOC_STAT_LARGE_POOL, 2048);
    ga_stat_update(st.allocated_bytes, GALLOC_STAT_SMALL_POOL, -512);
    ga_stat_update(st.allocated_bytes, GALLOC_STAT_SMALL_POOL, 0); // a zero change records nothing
    EXPECT_EQ(st.allocated_bytes[GALLOC_STAT_ALL].current, 2048);
    EXPECT_EQ(st.allocated_bytes[GALLOC_STAT_ALL].peak, 2560);
    EXPECT_EQ(st.allocated_bytes[GALLOC_STAT_ALL].allocated, 2560);
    EXPECT_EQ(st.allocated_bytes[GALLOC_STAT_ALL].freed, 512);
    EXPECT_EQ(st.allocated_bytes[GALLOC_STAT_SMALL_POOL].current, 0);
    EXPECT_EQ(st.allocated_bytes[GALLOC_STAT_SMALL_POOL].peak, 512);
    EXPECT_EQ(st.allocated_bytes[GALLOC_STAT_LARGE_POOL].current, 2048);
}

TEST(Stats, KeysAreTorchsInTorchsOrder)
{
    galloc_stats_t st;
    ga_stats_init(&st, UINT64_MAX);
    std::vector<std::pair<std::string, int64_t>> kv;
    ASSERT_EQ(galloc_stats_foreach(&st, collect, &kv), 123u);
    ASSERT_EQ(kv.size(), 123u);
    // Positions from torch.cuda.memory_stats(): 1 active.all.allocated, 25 allocated_bytes,
    // 37 allocation, 73 max_split_size ... 123 segment.small_pool.peak. num_oom_rejections
    // (DeviceStats in c10/core/CachingDeviceAllocator.h, listed by memory_stats' docstring in
    // torch/cuda/memory.py since PR #179473) sorts between num_device_free and num_ooms: '_' < 's'.
    EXPECT_EQ(kv[0].first, "active.all.allocated");
    EXPECT_EQ(kv[3].first, "active.all.peak");
    EXPECT_EQ(kv[4].first, "active.large_pool.allocated");
    EXPECT_EQ(kv[12].first, "active_bytes.all.allocated");
    EXPECT_EQ(kv[24].first, "allocated_bytes.all.allocated");
    EXPECT_EQ(kv[36].first, "allocation.all.allocated");
    EXPECT_EQ(kv[72].first, "max_split_size");
    EXPECT_EQ(kv[72].second, -1); // unlimited reads as -1, as in PyTorch
    EXPECT_EQ(kv[73].first, "num_alloc_retries");
    EXPECT_EQ(kv[74].first, "num_device_alloc");
    EXPECT_EQ(kv[75].first, "num_device_free");
    EXPECT_EQ(kv[76].first, "num_oom_rejections");
    EXPECT_EQ(kv[77].first, "num_ooms");
    EXPECT_EQ(kv[78].first, "num_sync_all_streams");
    EXPECT_EQ(kv[79].first, "oversize_allocations.allocated");
    EXPECT_EQ(kv[83].first, "oversize_segments.allocated");
    EXPECT_EQ(kv[87].first, "requested_bytes.all.allocated");
    EXPECT_EQ(kv[99].first, "reserved_bytes.all.allocated");
    EXPECT_EQ(kv[111].first, "segment.all.allocated");
    EXPECT_EQ(kv[122].first, "segment.small_pool.peak");
    for (size_t i = 1; i < kv.size(); i++)
        EXPECT_LT(kv[i - 1].first, kv[i].first) << "PyTorch sorts keys; " << kv[i].first;
}

TEST(Stats, LookupFindsEveryKeyAndRejectsOthers)
{
    galloc_stats_t st;
    ga_stats_init(&st, 100u << 20);
    st.reserved_bytes[GALLOC_STAT_LARGE_POOL].peak = 42;
    int64_t v = 0;
    ASSERT_EQ(galloc_stats_lookup(&st, "reserved_bytes.large_pool.peak", &v), GALLOC_OK);
    EXPECT_EQ(v, 42);
    ASSERT_EQ(galloc_stats_lookup(&st, "max_split_size", &v), GALLOC_OK);
    EXPECT_EQ(v, 104857600);
    v = 7;
    EXPECT_EQ(galloc_stats_lookup(&st, "num_cudaMalloc_retries", &v), GALLOC_E_INVAL);
    EXPECT_EQ(v, 7);
    EXPECT_EQ(galloc_stats_lookup(&st, nullptr, &v), GALLOC_E_INVAL);
    EXPECT_EQ(galloc_stats_lookup(nullptr, "max_split_size", &v), GALLOC_E_INVAL);
    std::vector<std::pair<std::string, int64_t>> kv;
    galloc_stats_foreach(&st, collect, &kv);
    for (auto &p : kv)
        EXPECT_EQ(galloc_stats_lookup(&st, p.first.c_str(), &v), GALLOC_OK) << p.first;
}

TEST(Stats, ForeachStopsWhenAsked)
{
    galloc_stats_t st;
    ga_stats_init(&st, UINT64_MAX);
    int n = 0;
    auto stop_at_5 = [](void *ctx, const char *, int64_t) -> int { return ++*static_cast<int *>(ctx) == 5; };
    EXPECT_EQ(galloc_stats_foreach(&st, stop_at_5, &n), 5u);
    EXPECT_EQ(galloc_stats_foreach(nullptr, stop_at_5, &n), 0u);
}

TEST(Stats, ResetsFollowPyTorch)
{
    galloc_stats_t st;
    ga_stats_init(&st, 1u << 30);
    ga_stat_update(st.segment, GALLOC_STAT_LARGE_POOL, 3);
    ga_stat_update(st.segment, GALLOC_STAT_LARGE_POOL, -2);
    ga_stat_increase(&st.oversize_segments, 2);
    ga_stat_decrease(&st.oversize_segments, 1);
    st.num_ooms = 4;
    st.num_device_alloc = 3;
    st.num_oom_rejections = 2;
    ga_stats_reset_peak(&st);
    EXPECT_EQ(st.segment[GALLOC_STAT_ALL].peak, 1);
    EXPECT_EQ(st.oversize_segments.peak, 1);
    EXPECT_EQ(st.segment[GALLOC_STAT_ALL].allocated, 3); // peak reset keeps totals
    ga_stats_reset_accumulated(&st);
    EXPECT_EQ(st.segment[GALLOC_STAT_ALL].allocated, 0);
    EXPECT_EQ(st.segment[GALLOC_STAT_ALL].freed, 0);
    EXPECT_EQ(st.segment[GALLOC_STAT_ALL].current, 1);
    EXPECT_EQ(st.oversize_segments.freed, 0);
    EXPECT_EQ(st.num_ooms, 0);
    EXPECT_EQ(st.num_device_alloc, 0);
    EXPECT_EQ(st.num_oom_rejections, 0);   // DeviceCachingAllocator::resetAccumulatedStats zeroes it
    EXPECT_EQ(st.max_split_size, 1 << 30); // never reset
}

TEST(Stats, CopyHonoursCallersStructSize)
{
    galloc_stats_t src;
    ga_stats_init(&src, UINT64_MAX);
    src.active[0].current = 9;
    src.segment[2].peak = 5;
    galloc_stats_t dst;
    memset(&dst, 0xab, sizeof(dst));
    dst.struct_size = offsetof(galloc_stats_t, active_bytes); // an "older" caller
    ga_stats_copy(&dst, &src);
    EXPECT_EQ(dst.struct_size, offsetof(galloc_stats_t, active_bytes));
    EXPECT_EQ(dst.active[0].current, 9);
    EXPECT_NE(dst.segment[2].peak, 5); // beyond the caller's struct: untouched
}

// num_oom_rejections came after the first release: its member is appended, so
// every older member keeps its offset, while its key keeps PyTorch's place.
TEST(Stats, AddedCounterIsAppended)
{
    EXPECT_EQ(offsetof(galloc_stats_t, num_oom_rejections), sizeof(galloc_stats_t) - sizeof(int64_t));
    EXPECT_LT(offsetof(galloc_stats_t, segment), offsetof(galloc_stats_t, num_oom_rejections));
    EXPECT_EQ(offsetof(galloc_stats_t, num_ooms), offsetof(galloc_stats_t, num_device_free) + sizeof(int64_t));
    galloc_stats_t st;
    ga_stats_init(&st, UINT64_MAX);
    st.num_oom_rejections = 3;
    int64_t v = 0;
    ASSERT_EQ(galloc_stats_lookup(&st, "num_oom_rejections", &v), GALLOC_OK);
    EXPECT_EQ(v, 3);
    galloc_stats_t old;
    memset(&old, 0xab, sizeof old);
    old.struct_size = offsetof(galloc_stats_t, num_oom_rejections); // a caller built before it existed
    ga_stats_copy(&old, &st);
    EXPECT_NE(old.num_oom_rejections, 3);
}

} // namespace
