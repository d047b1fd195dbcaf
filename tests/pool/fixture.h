// fixture.h: the pool tests' common fixture: a pool on a fresh sim device,
// checked (blocks tile segments, stats equal a recount) after every call the
// helpers make and again at TearDown.
#ifndef GALLOC_TESTS_POOL_FIXTURE_H
#define GALLOC_TESTS_POOL_FIXTURE_H

#include <gtest/gtest.h>

extern "C" {
#include <galloc/galloc_stats.h>
#include "tests/pool/pool_shim.h"
}

class PoolFixture : public ::testing::Test {
  protected:
    // Replace the pool with one configured by conf on a device of `capacity` bytes.
    void Make(const char *conf, uint64_t capacity = 80ull << 30)
    {
        char err[512] = "";
        if (s_ != nullptr)
            pool_shim_delete(s_);
        s_ = pool_shim_new(conf, capacity, err, sizeof err);
        ASSERT_NE(s_, nullptr) << err;
    }
    void TearDown() override
    {
        if (s_ != nullptr) {
            EXPECT_EQ(pool_shim_check(s_), GALLOC_OK) << pool_shim_error(s_);
            pool_shim_delete(s_);
        }
    }
    uintptr_t Alloc(size_t n, uintptr_t stream = 0)
    {
        uintptr_t a = 0;
        EXPECT_EQ(pool_shim_malloc(s_, n, stream, &a), GALLOC_OK) << pool_shim_error(s_);
        EXPECT_EQ(pool_shim_check(s_), GALLOC_OK) << pool_shim_error(s_);
        return a;
    }
    void Free(uintptr_t a)
    {
        EXPECT_EQ(pool_shim_free(s_, a), GALLOC_OK) << pool_shim_error(s_);
        EXPECT_EQ(pool_shim_check(s_), GALLOC_OK) << pool_shim_error(s_);
    }
    galloc_stats_t Stats()
    {
        galloc_stats_t st;
        pool_shim_stats(s_, &st);
        return st;
    }
    pool_shim_t *s_ = nullptr;
};

#endif
