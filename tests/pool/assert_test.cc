// assert_test: GA_ASSERT (util/assert.h) is on in the builds the tests run in
// (fastbuild, and the ASan and TSan stages on top of it), and a violated
// assertion prints file, line and condition, then aborts.
#include <gtest/gtest.h>

extern "C" {
#include "tests/pool/assert_shim.h"
}

namespace {

TEST(Assert, IsOnWhereTheTestsRun)
{
    EXPECT_EQ(assert_shim_on(), 1) << "NDEBUG is defined: GA_ASSERT is compiled out of this build";
}

TEST(Assert, HoldsQuietly)
{
    assert_shim_check(1);
}

TEST(AssertDeathTest, ViolatedAbortsWithFileLineAndCondition)
{
    if (!assert_shim_on())
        GTEST_SKIP() << "GA_ASSERT is off (NDEBUG)";
    EXPECT_DEATH(assert_shim_check(0), "galloc: tests/pool/assert_shim\\.c:[0-9]+: assertion failed: value == 1");
}

TEST(AssertDeathTest, SplitAndItsBounds)
{
    if (!assert_shim_on())
        GTEST_SKIP() << "GA_ASSERT is off (NDEBUG)";
    assert_shim_split_whole(512); // a valid split returns
    assert_shim_split_whole((2u << 20) - 512);
    EXPECT_DEATH(assert_shim_split_whole(2u << 20), "assertion failed: size > 0 && size < rest->size");
    EXPECT_DEATH(assert_shim_split_whole(1000), "assertion failed: size > 0 && size < rest->size");
    EXPECT_DEATH(assert_shim_split_whole(0), "assertion failed: size > 0");
}

TEST(AssertDeathTest, BlockPoolInsertTakesOnlyAFreeBlockOfItsSetsStream)
{
    if (!assert_shim_on())
        GTEST_SKIP() << "GA_ASSERT is off (NDEBUG)";
    EXPECT_DEATH(assert_shim_insert_allocated(), "pool/blockpool\\.h:[0-9]+: assertion failed: !b->allocated");
    EXPECT_DEATH(assert_shim_insert_other_stream(),
                 "assertion failed: b->seg->set != NULL && b->seg->set->stream == b->stream");
}

TEST(AssertDeathTest, MergeOnlyOfNeighboursThatTouch)
{
    if (!assert_shim_on())
        GTEST_SKIP() << "GA_ASSERT is off (NDEBUG)";
    EXPECT_DEATH(assert_shim_merge_apart(), "pool/split\\.h:[0-9]+: assertion failed: dst->prev == src");
}

} // namespace
