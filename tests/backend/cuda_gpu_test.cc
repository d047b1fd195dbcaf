// cuda_gpu_test: the "cuda" backend on the real driver (libcuda.so.1) and a
// real GPU. Tagged "gpu"; every test skips where the backend cannot open (no
// driver, no device), so the suite passes on machines without one.
#include <gtest/gtest.h>

#include <string>

#include "tests/backend/conformance.h"

extern "C" {
#include <galloc/galloc.h>
}

namespace {

constexpr size_t kMiB = size_t{1} << 20;

// An allocator on device 0 of the real driver, or a skip.
class Gpu : public ::testing::Test {
  protected:
    void Open(const char *conf)
    {
        char err[GALLOC_ERROR_MAX] = "";
        galloc_status_t st = galloc_allocator_create("cuda", 0, conf, &a_, err, sizeof err);
        if (st == GALLOC_E_UNAVAILABLE)
            GTEST_SKIP() << err;
        ASSERT_EQ(st, GALLOC_OK) << err;
    }
    void TearDown() override
    {
        if (a_ != nullptr) {
            char msg[GALLOC_ERROR_MAX] = "";
            EXPECT_EQ(galloc_check(a_), GALLOC_OK) << (galloc_last_error(a_, msg, sizeof msg), msg);
            galloc_allocator_destroy(a_);
        }
    }
    galloc_stats_t Stats()
    {
        galloc_stats_t st;
        st.struct_size = sizeof st;
        EXPECT_EQ(galloc_memory_stats(a_, &st), GALLOC_OK);
        return st;
    }
    galloc_allocator_t *a_ = nullptr;
};

// GTEST_SKIP in a helper returns from the helper only: the test returns too.
#define OPEN_OR_SKIP(conf)                                                                                             \
    do {                                                                                                               \
        Open(conf);                                                                                                    \
        if (IsSkipped() || HasFatalFailure())                                                                          \
            return;                                                                                                    \
    } while (0)

TEST(GpuConformance, Cuda)
{
    galloc_backend_args_t args = {};
    args.struct_size = sizeof(args);
    ga_test_backend_conformance("cuda", args); // skips when the driver is missing
}

TEST_F(Gpu, NativeOneByte)
{
    OPEN_OR_SKIP("");
    void *p = nullptr;
    ASSERT_EQ(galloc_malloc(a_, 1, 0, &p), GALLOC_OK);
    galloc_stats_t st = Stats();
    EXPECT_EQ(st.allocated_bytes[GALLOC_STAT_ALL].current, 512);
    EXPECT_EQ(st.reserved_bytes[GALLOC_STAT_SMALL_POOL].current, (int64_t)(2 * kMiB));
    EXPECT_EQ(galloc_free(a_, p), GALLOC_OK);
    EXPECT_EQ(galloc_empty_cache(a_), GALLOC_OK);
    EXPECT_EQ(Stats().reserved_bytes[GALLOC_STAT_ALL].current, 0);
}

TEST_F(Gpu, ExpandableSegmentsGrowByPages)
{
    OPEN_OR_SKIP("expandable_segments:True");
    void *a = nullptr, *b = nullptr;
    ASSERT_EQ(galloc_malloc(a_, 5 * kMiB, 0, &a), GALLOC_OK);
    ASSERT_EQ(galloc_malloc(a_, 30 * kMiB, 0, &b), GALLOC_OK);
    EXPECT_EQ(static_cast<char *>(b), static_cast<char *>(a) + 5 * kMiB);
    EXPECT_EQ(Stats().reserved_bytes[GALLOC_STAT_LARGE_POOL].current, (int64_t)(40 * kMiB));
    EXPECT_EQ(galloc_free(a_, a), GALLOC_OK);
    EXPECT_EQ(galloc_free(a_, b), GALLOC_OK);
    EXPECT_EQ(galloc_empty_cache(a_), GALLOC_OK);
    EXPECT_EQ(Stats().reserved_bytes[GALLOC_STAT_ALL].current, 0);
}

TEST_F(Gpu, StreamOrderedAllocation)
{
    OPEN_OR_SKIP("backend:cudaMallocAsync");
    void *p = nullptr;
    ASSERT_EQ(galloc_malloc(a_, 1 * kMiB, 0, &p), GALLOC_OK);
    galloc_stats_t st = Stats();
    EXPECT_GE(st.allocated_bytes[GALLOC_STAT_ALL].current, (int64_t)(1 * kMiB));
    EXPECT_GE(st.reserved_bytes[GALLOC_STAT_ALL].current, st.allocated_bytes[GALLOC_STAT_ALL].current);
    EXPECT_EQ(galloc_free(a_, p), GALLOC_OK);
    EXPECT_EQ(galloc_empty_cache(a_), GALLOC_OK);
    EXPECT_EQ(Stats().reserved_bytes[GALLOC_STAT_ALL].current, 0);
}

} // namespace
