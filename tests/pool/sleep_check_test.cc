// sleep_check_test: galloc_check's part for sleeping tags (pool/sleep.c,
// pool/check.c) catches each way the sleeping state can disagree with
// itself, and passes the intact state; plain and expandable segments.
#include <gtest/gtest.h>

#include <string>

extern "C" {
#include "tests/pool/sleep_shim.h"
}

namespace {

struct Case {
    sleep_corruption_t what;
    const char *says; // a piece of the message
};

class SleepCheck : public ::testing::TestWithParam<bool> {};

TEST_P(SleepCheck, CatchesEveryCorruptionOfTheSleepingState)
{
    const Case cases[] = {
        {SLEEP_OFFLOADED_COUNT, "bytes offloaded"},
        {SLEEP_ASLEEP_COUNT, "asleep, a recount"},
        {SLEEP_HELD_MISSING, "missing from its tag's map"},
        {SLEEP_BACK_IN_PTRS, "still in the pointer map"},
        {SLEEP_BIT_FLIPPED, "asleep, a recount"},
        {SLEEP_POOL_AWAKE, "its pool's state disagrees"},
        {SLEEP_RESERVED_STAT, "reserved_bytes"},
    };
    sleep_shim_t *ok = sleep_shim_new(GetParam(), SLEEP_INTACT);
    ASSERT_NE(ok, nullptr);
    EXPECT_EQ(sleep_shim_check(ok), GALLOC_OK) << sleep_shim_error(ok);
    sleep_shim_delete(ok);
    for (const Case &c : cases) {
        sleep_shim_t *s = sleep_shim_new(GetParam(), c.what);
        ASSERT_NE(s, nullptr) << c.what;
        EXPECT_EQ(sleep_shim_check(s), GALLOC_E_CORRUPT) << c.what;
        EXPECT_NE(std::string(sleep_shim_error(s)).find(c.says), std::string::npos)
            << c.what << ": " << sleep_shim_error(s);
        sleep_shim_delete(s);
    }
}

INSTANTIATE_TEST_SUITE_P(Modes, SleepCheck, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool> &i) { return i.param ? "Expandable" : "Plain"; });

} // namespace
