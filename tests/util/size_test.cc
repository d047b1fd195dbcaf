// size_test: util/size.h, the one parser of sizes and scaled counts, under the
// three dialects its callers use (conf's exact one, the command line's rounding
// one, galloc gen's counts): syntax, units, rounding, range, exactness, and
// that it reads no byte past the length it is given.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "util/size.h"

namespace {

const ga_size_unit_t kDecimalAndBinary[] = {{"b", 1},          {"kb", 1000},      {"gb", 1000000000}, {"kib", 1u << 10},
                                            {"mib", 1u << 20}, {"gib", 1u << 30}, {"tib", 1ull << 40}};
const ga_size_unit_t kBinary[] = {{"bytes", 1}, {"k", 1u << 10}, {"KiB", 1u << 10}, {"GiB", 1u << 30}};
const ga_size_unit_t kCount[] = {{"K", 1000}, {"B", 1000000000}};

ga_size_rules_t Strict()
{
    ga_size_rules_t r = {};
    r.units = kDecimalAndBinary;
    r.n_units = sizeof(kDecimalAndBinary) / sizeof(kDecimalAndBinary[0]);
    r.round = GA_SIZE_EXACT;
    r.frac_digits = 18;
    r.strict = true;
    return r;
}

ga_size_rules_t Lenient(ga_size_round_t round)
{
    ga_size_rules_t r = {};
    r.units = kBinary;
    r.n_units = sizeof(kBinary) / sizeof(kBinary[0]);
    r.round = round;
    r.frac_digits = 15;
    r.blank_before_unit = true;
    return r;
}

ga_size_status_t Parse(const std::string &s, const ga_size_rules_t &r, uint64_t *v)
{
    return ga_size_parse(s.data(), s.size(), &r, v);
}

uint64_t Value(const std::string &s, const ga_size_rules_t &r)
{
    uint64_t v = 0;
    EXPECT_EQ(Parse(s, r, &v), GA_SIZE_OK) << s;
    return v;
}

TEST(Size, StrictReadsExactWholeBytes)
{
    ga_size_rules_t r = Strict();
    EXPECT_EQ(Value("80GiB", r), 85899345920u);
    EXPECT_EQ(Value("80gib", r), 85899345920u);
    EXPECT_EQ(Value("1.5GB", r), 1500000000u);
    EXPECT_EQ(Value("0.5KiB", r), 512u);
    EXPECT_EQ(Value("1kb", r), 1000u);
    EXPECT_EQ(Value("18446744073709551615", r), UINT64_MAX);
    uint64_t v = 7;
    EXPECT_EQ(Parse("1.5", r, &v), GA_SIZE_INEXACT);
    EXPECT_EQ(Parse("5.", r, &v), GA_SIZE_SYNTAX);
    EXPECT_EQ(Parse(".5KiB", r, &v), GA_SIZE_SYNTAX);
    EXPECT_EQ(Parse("1.0000000000000000000", r, &v), GA_SIZE_SYNTAX); // 19 fraction digits
    EXPECT_EQ(Parse("16777216TiB", r, &v), GA_SIZE_RANGE);
    EXPECT_EQ(Parse("18446744073709551616", r, &v), GA_SIZE_RANGE);
    EXPECT_EQ(Parse("99999999999999999999x", r, &v), GA_SIZE_SYNTAX); // syntax is reported before range
    EXPECT_EQ(Parse("8EiB", r, &v), GA_SIZE_SYNTAX);
    EXPECT_EQ(Parse("80 GiB", r, &v), GA_SIZE_SYNTAX); // no blank before the unit in this dialect
    EXPECT_EQ(v, 7u) << "a refused value leaves *out alone";
}

TEST(Size, LenientRoundsAndTakesBlanks)
{
    ga_size_rules_t r = Lenient(GA_SIZE_ROUND_NEAREST);
    EXPECT_EQ(Value("512 GiB", r), 549755813888u);
    EXPECT_EQ(Value(".5k", r), 512u);
    EXPECT_EQ(Value("5.", r), 5u);
    EXPECT_EQ(Value("7 bytes", r), 7u);
    EXPECT_EQ(Value("4 ", r), 4u);
    EXPECT_EQ(Value("0.1GiB", r), 107374182u);     // 107374182.4
    EXPECT_EQ(Value("0.3GiB", r), 322122547u);     // 322122547.2
    EXPECT_EQ(Value("0.7GiB", r), 751619277u);     // 751619276.8
    EXPECT_EQ(Value("2.5", r), 3u);                // halves round up
    EXPECT_EQ(Value("1.0000000000000009", r), 1u); // the 16th fraction digit does not count
    ga_size_rules_t down = Lenient(GA_SIZE_ROUND_DOWN);
    EXPECT_EQ(Value("0.7GiB", down), 751619276u);
    EXPECT_EQ(Value("2.5", down), 2u);
    uint64_t v;
    for (const char *bad : {"", ".", "GiB", "-1", "+3", "1e3", "0x10", "1.5.5", "12XB", "1,5"})
        EXPECT_EQ(Parse(bad, r, &v), GA_SIZE_SYNTAX) << bad;
    EXPECT_EQ(Parse("18446744073709551615.5", r, &v), GA_SIZE_RANGE); // rounds past 64 bits
    EXPECT_EQ(Value("18446744073709551615.4", r), UINT64_MAX);
    EXPECT_EQ(Parse("17179869184GiB", r, &v), GA_SIZE_RANGE);
}

TEST(Size, ExactCounts)
{
    ga_size_rules_t r = {};
    r.units = kCount;
    r.n_units = 2;
    r.round = GA_SIZE_EXACT;
    r.frac_digits = 18;
    EXPECT_EQ(Value("21.875B", r), 21875000000u);
    EXPECT_EQ(Value("125K", r), 125000u);
    EXPECT_EQ(Value("7b", r), 7000000000u);
    uint64_t v;
    EXPECT_EQ(Parse("1.5", r, &v), GA_SIZE_INEXACT);
    EXPECT_EQ(Parse("1.0000000005B", r, &v), GA_SIZE_INEXACT);
}

TEST(Size, ReadsOnlyTheLengthGiven)
{
    ga_size_rules_t r = Lenient(GA_SIZE_ROUND_NEAREST);
    const char text[] = "12GiB";
    uint64_t v = 0;
    EXPECT_EQ(ga_size_parse(text, 2, &r, &v), GA_SIZE_OK);
    EXPECT_EQ(v, 12u);
    EXPECT_EQ(ga_size_parse(text, 4, &r, &v), GA_SIZE_SYNTAX); // "12Gi"
}

} // namespace
