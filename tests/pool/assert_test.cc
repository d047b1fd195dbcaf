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

} // namespace
