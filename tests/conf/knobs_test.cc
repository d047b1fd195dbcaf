// knobs_test: the 2026 CUDA allocator keys, throw_on_cudamalloc_oom,
// expandable_segments_reserve and expandable_segments_reserve_by_class: values
// read, bits set, the normalized string written back, refusals word for word,
// and the reserve resolved to bytes as PyTorch resolves it.
//
// PyTorch source each case follows (pytorch main as mirrored in
// cyyever/pytorch: c10/cuda/CUDAAllocatorConfig.cpp at 0b2b76de,
// c10/cuda/CUDAAllocatorConfig.h, and the test file
// c10/cuda/test/impl/CUDACachingAllocatorReserveTest.cpp at pytorch/pytorch
// 4b02d509 / cyyever 78f3d0d6); the stored copies show no line numbers, so
// each case names the function.
#include "tests/conf/conf_test_util.h"

namespace conf_test {
namespace {

constexpr uint64_t kTotal = 100ull << 30; // the 100 GiB device of PyTorch's reserve test

uint64_t Resolve(const ga_conf_t &c, const char *cls, bool *known = nullptr)
{
    uint64_t b = 0;
    return ga_conf_reserve_bytes(&c, cls, kTotal, &b, known) ? b : 0;
}

// CUDAAllocatorConfig::parseThrowOnCudaMallocOom: tokenizer.toBool, so
// exactly "True" or "False" (PR #179057 made the test use only these).
TEST(ConfThrowOnOom, StoredAndWrittenBack)
{
    ga_conf_t d;
    ga_conf_defaults(&d);
    EXPECT_FALSE(d.throw_on_cudamalloc_oom); // m_throw_on_cudamalloc_oom{false}
    Parsed on = parse("throw_on_cudamalloc_oom:True");
    ASSERT_EQ(on.st, GALLOC_OK) << on.err;
    EXPECT_TRUE(on.c.throw_on_cudamalloc_oom);
    EXPECT_EQ(on.c.set, (uint32_t)GA_CONF_SET_THROW_ON_OOM);
    EXPECT_EQ(format(on.c), "throw_on_cudamalloc_oom:True");
    char py[128];
    ga_conf_format_pytorch(&on.c, py, sizeof py); // a PyTorch key: a snapshot records it
    EXPECT_STREQ(py, "throw_on_cudamalloc_oom:True");
    Parsed off = parse("throw_on_cudamalloc_oom:False");
    ASSERT_EQ(off.st, GALLOC_OK) << off.err;
    EXPECT_FALSE(off.c.throw_on_cudamalloc_oom);
    EXPECT_EQ(format(off.c), "throw_on_cudamalloc_oom:False");
    Parsed both = parse("per_process_memory_fraction:0.5,throw_on_cudamalloc_oom:True");
    ASSERT_EQ(both.st, GALLOC_OK) << both.err;
    EXPECT_EQ(format(both.c), "per_process_memory_fraction:0.5,throw_on_cudamalloc_oom:True");
}

TEST(ConfThrowOnOom, Refusals)
{
    const struct {
        const char *s, *err;
    } cases[] = {
        {"throw_on_cudamalloc_oom:true", "throw_on_cudamalloc_oom: expected True or False, got \"true\" (offset 24)"},
        {"throw_on_cudamalloc_oom:1", "throw_on_cudamalloc_oom: expected True or False, got \"1\" (offset 24)"},
        {"throw_on_cudamalloc_oom:0", "throw_on_cudamalloc_oom: expected True or False, got \"0\" (offset 24)"},
        {"throw_on_cudamalloc_oom:", "throw_on_cudamalloc_oom: expected a value after ':', got the end of the string "
                                     "(offset 24)"},
    };
    for (const auto &k : cases) {
        SCOPED_TRACE(k.s);
        Parsed p = parse(k.s);
        EXPECT_EQ(p.st, GALLOC_E_CONFIG);
        EXPECT_EQ(p.err, k.err);
    }
}

// CUDAAllocatorConfig::parseReserveSpec + ExpandableSegmentReserveSpec::resolveBytes;
// ReserveTest DefaultFractionAndGiB: 0.5 of 100 GiB, then 40G for any class.
TEST(ConfReserve, FractionAndGiB)
{
    Parsed f = parse("expandable_segments_reserve:0.5");
    ASSERT_EQ(f.st, GALLOC_OK) << f.err;
    EXPECT_TRUE(f.c.es_reserve_set);
    EXPECT_FALSE(f.c.es_reserve.gib);
    EXPECT_EQ(f.c.es_reserve.value, 0.5);
    EXPECT_EQ(f.c.set, (uint32_t)GA_CONF_SET_ES_RESERVE);
    EXPECT_EQ(Resolve(f.c, ""), kTotal / 2);
    EXPECT_EQ(format(f.c), "expandable_segments_reserve:0.5");
    for (const char *s : {"expandable_segments_reserve:40G", "expandable_segments_reserve:40g"}) {
        Parsed g = parse(s);
        ASSERT_EQ(g.st, GALLOC_OK) << g.err;
        EXPECT_TRUE(g.c.es_reserve.gib);
        bool known = true;
        EXPECT_EQ(Resolve(g.c, "any", &known), 40 * kGiB);
        EXPECT_FALSE(known);
        EXPECT_EQ(format(g.c), "expandable_segments_reserve:40G");
    }
    // Fractions above 1 are values too: the pool clamps to 9/8 (clamp_reserve_bytes).
    Parsed big = parse("expandable_segments_reserve:1.5");
    ASSERT_EQ(big.st, GALLOC_OK) << big.err;
    EXPECT_EQ(Resolve(big.c, nullptr), kTotal / 2 * 3);
}

// ReserveTest HugeValueSaturatesInsteadOfUB: 1e20 GiB saturates at SIZE_MAX.
TEST(ConfReserve, HugeValueSaturates)
{
    Parsed p = parse("expandable_segments_reserve:1e20G");
    ASSERT_EQ(p.st, GALLOC_OK) << p.err;
    EXPECT_EQ(Resolve(p.c, ""), UINT64_MAX);
    EXPECT_EQ(format(p.c), "expandable_segments_reserve:100000000000000000000G");
}

// ReserveTest PerClassOverrideAndFallback and ReserveDecisionSnapshot
// (expandable_segments_reserve_decision): a listed class has its own reserve
// and is "known"; any other falls back to the global reserve.
TEST(ConfReserve, PerClassOverrideAndFallback)
{
    Parsed p = parse("expandable_segments_reserve:0.9,"
                     "expandable_segments_reserve_by_class:[serving:0.25,ads_sparse:8G]");
    ASSERT_EQ(p.st, GALLOC_OK) << p.err;
    ASSERT_EQ(p.c.n_reserve_classes, 2u);
    EXPECT_STREQ(p.c.reserve_classes[0].name, "serving");
    EXPECT_STREQ(p.c.reserve_classes[1].name, "ads_sparse");
    bool known = false;
    EXPECT_EQ(Resolve(p.c, "serving", &known), kTotal / 4);
    EXPECT_TRUE(known);
    EXPECT_EQ(Resolve(p.c, "ads_sparse", &known), 8 * kGiB);
    EXPECT_TRUE(known);
    EXPECT_EQ(Resolve(p.c, "other", &known), (kTotal / 10) * 9);
    EXPECT_FALSE(known);
    EXPECT_EQ(Resolve(p.c, "", &known), (kTotal / 10) * 9);
    EXPECT_EQ(format(p.c),
              "expandable_segments_reserve:0.9,expandable_segments_reserve_by_class:[serving:0.25,ads_sparse:8G]");
    // Without a global reserve an unlisted class keeps the 9/8 reserve ("unset => nullopt").
    Parsed only = parse("expandable_segments_reserve_by_class:[tiny:0.05]");
    ASSERT_EQ(only.st, GALLOC_OK) << only.err;
    uint64_t b = 7;
    EXPECT_FALSE(ga_conf_reserve_bytes(&only.c, "other", kTotal, &b, nullptr));
    EXPECT_FALSE(ga_conf_reserve_bytes(&only.c, "", kTotal, &b, nullptr));
    EXPECT_TRUE(ga_conf_reserve_bytes(&only.c, "tiny", kTotal, &b, nullptr));
    EXPECT_EQ(b, (uint64_t)(0.05 * (double)kTotal));
    EXPECT_TRUE(ga_conf_reserve_configured(&only.c));
    ga_conf_t d;
    ga_conf_defaults(&d);
    EXPECT_FALSE(ga_conf_reserve_configured(&d));
}

// parseExpandableSegmentsReserveByClass: parsed[name] = spec (the last value
// of a name wins) into a fresh map that replaces the old one; "[]" clears.
TEST(ConfReserve, ListReplacesAndLastValueWins)
{
    Parsed p = parse("expandable_segments_reserve_by_class:[a:1,b:2,a:3]");
    ASSERT_EQ(p.st, GALLOC_OK) << p.err;
    ASSERT_EQ(p.c.n_reserve_classes, 2u);
    EXPECT_EQ(format(p.c), "expandable_segments_reserve_by_class:[a:3,b:2]");
    char err[256];
    ASSERT_EQ(ga_conf_parse("expandable_segments_reserve_by_class:[c:0.5]", &p.c, err, sizeof err), GALLOC_OK) << err;
    EXPECT_EQ(format(p.c), "expandable_segments_reserve_by_class:[c:0.5]");
    // A string without the keys keeps them (PyTorch resets only the generic keys per parse).
    ASSERT_EQ(ga_conf_parse("expandable_segments_reserve:2G,max_split_size_mb:64", &p.c, err, sizeof err), GALLOC_OK);
    ASSERT_EQ(ga_conf_parse("expandable_segments:True", &p.c, err, sizeof err), GALLOC_OK) << err;
    EXPECT_EQ(format(p.c), "expandable_segments:True,expandable_segments_reserve:2G,"
                           "expandable_segments_reserve_by_class:[c:0.5]");
    Parsed empty = parse("expandable_segments_reserve_by_class:[]");
    ASSERT_EQ(empty.st, GALLOC_OK) << empty.err;
    EXPECT_EQ(empty.c.n_reserve_classes, 0u);
    EXPECT_EQ(format(empty.c), "expandable_segments_reserve_by_class:[]");
    char cls[64];
    ga_conf_format_reserve_classes(&empty.c, cls, sizeof cls);
    EXPECT_STREQ(cls, "[]");
    ga_conf_format_reserve_classes(&p.c, cls, sizeof cls);
    EXPECT_STREQ(cls, "[c:0.5]");
}

// ReserveTest InvalidValuesAreIgnoredNotFatal: PyTorch logs "Ignoring invalid
// expandable-segment reserve value ..." and keeps what it had; galloc refuses
// the string (house rule), naming the key, the value and its offset, and
// changes nothing.
TEST(ConfReserve, MalformedValuesAreRefused)
{
    const std::string allowed = "expected a fraction of device memory > 0 (0.5) or GiB with a G suffix (40G), got ";
    const struct {
        const char *s, *shown;
        int off;
    } cases[] = {
        {"expandable_segments_reserve:abc", "\"abc\"", 28},
        {"expandable_segments_reserve:G", "\"G\"", 28},
        {"expandable_segments_reserve:-1", "\"-1\"", 28},
        {"expandable_segments_reserve:0", "\"0\"", 28},
        {"expandable_segments_reserve:0G", "\"0G\"", 28},
        {"expandable_segments_reserve:inf", "\"inf\"", 28},
        {"expandable_segments_reserve:nan", "\"nan\"", 28},
        {"expandable_segments_reserve:1e400", "\"1e400\"", 28},
        {"expandable_segments_reserve:40GiB", "\"40GiB\"", 28},
        {"expandable_segments_reserve:0x10", "\"0x10\"", 28},
        {"expandable_segments_reserve:", "the end of the string", 28},
    };
    for (const auto &k : cases) {
        SCOPED_TRACE(k.s);
        Parsed p = parse(k.s);
        EXPECT_EQ(p.st, GALLOC_E_CONFIG);
        if (std::string(k.shown) == "the end of the string")
            EXPECT_EQ(p.err, "expandable_segments_reserve: expected a value after ':', got the end of the string "
                             "(offset 28)");
        else
            EXPECT_EQ(p.err,
                      "expandable_segments_reserve: " + allowed + k.shown + " (offset " + std::to_string(k.off) + ")");
    }
}

TEST(ConfReserve, MalformedListsAreRefused)
{
    const std::string key = "expandable_segments_reserve_by_class";
    const struct {
        const char *s, *err;
    } cases[] = {
        // The entry PyTorch skips (ReserveTest: "[serving:0.25,bad:12X]").
        {"expandable_segments_reserve_by_class:[serving:0.25,bad:12X]",
         "expandable_segments_reserve_by_class: expected a fraction of device memory > 0 (0.5) or GiB with a G suffix "
         "(40G), got \"12X\" (offset 55)"},
        {"expandable_segments_reserve_by_class:serving:0.25",
         "expandable_segments_reserve_by_class: expected a list such as [capture:0.25,serving:40G], got \"serving\" "
         "(offset 37)"},
        {"expandable_segments_reserve_by_class:[a:1",
         "expandable_segments_reserve_by_class: expected ',' or ']' after the entry, got the end of the string "
         "(offset 41)"},
        {"expandable_segments_reserve_by_class:[a]",
         "expandable_segments_reserve_by_class: expected ':' after the reserve class, got \"]\" (offset 39)"},
        {"expandable_segments_reserve_by_class:[:1]",
         "expandable_segments_reserve_by_class: expected a reserve class name of 1 to 31 printable bytes, or ']', "
         "got \":\" (offset 38)"},
        {"expandable_segments_reserve_by_class:[a:1,,b:2]",
         "expandable_segments_reserve_by_class: expected a reserve class name of 1 to 31 printable bytes, or ']', "
         "got \",\" (offset 42)"},
        {"expandable_segments_reserve_by_class:[a\"b:1]",
         "expandable_segments_reserve_by_class: expected a reserve class name of 1 to 31 printable bytes, or ']', "
         "got \"a\\x22b\" (offset 38)"},
    };
    for (const auto &k : cases) {
        SCOPED_TRACE(k.s);
        Parsed p = parse(k.s);
        EXPECT_EQ(p.st, GALLOC_E_CONFIG);
        EXPECT_EQ(p.err, k.err);
    }
    std::string longname = key + ":[" + std::string(32, 'n') + ":1]";
    Parsed p = parse(longname.c_str());
    EXPECT_EQ(p.st, GALLOC_E_CONFIG);
    EXPECT_NE(p.err.find("reserve class name of 1 to 31"), std::string::npos) << p.err;
    std::string nine = key + ":[c0:1,c1:1,c2:1,c3:1,c4:1,c5:1,c6:1,c7:1,c8:1]";
    p = parse(nine.c_str());
    EXPECT_EQ(p.st, GALLOC_E_CONFIG);
    EXPECT_EQ(p.err, key + ": expected at most 8 reserve classes, got \"c8\" (offset 78)");
    std::string eight = key + ":[c0:1,c1:1,c2:1,c3:1,c4:1,c5:1,c6:1,c7:1,c0:2]";
    p = parse(eight.c_str());
    ASSERT_EQ(p.st, GALLOC_OK) << p.err; // a repeated name takes no new slot
    EXPECT_EQ(p.c.n_reserve_classes, 8u);
}

// All or nothing: a refused string leaves every setting as it was.
TEST(ConfReserve, RefusalChangesNothing)
{
    Parsed p = parse("expandable_segments_reserve:0.5,expandable_segments_reserve_by_class:[x:1G]");
    ASSERT_EQ(p.st, GALLOC_OK) << p.err;
    ga_conf_t before = p.c;
    char err[256];
    EXPECT_EQ(ga_conf_parse("expandable_segments_reserve_by_class:[y:0.1,z:oops]", &p.c, err, sizeof err),
              GALLOC_E_CONFIG);
    EXPECT_EQ(memcmp(&before, &p.c, sizeof before), 0);
    EXPECT_EQ(ga_conf_parse("throw_on_cudamalloc_oom:True,expandable_segments_reserve:-2", &p.c, err, sizeof err),
              GALLOC_E_CONFIG);
    EXPECT_EQ(memcmp(&before, &p.c, sizeof before), 0);
}

// ga_conf_load's layers: each names the keys it changes.
TEST(ConfReserve, LoadLayers)
{
    ga_conf_t c;
    ga_conf_defaults(&c);
    char err[256];
    ASSERT_EQ(ga_conf_load(&c, "expandable_segments_reserve_by_class:[capture:0.25]", "expandable_segments_reserve:0.5",
                           nullptr, "throw_on_cudamalloc_oom:True", err, sizeof err),
              GALLOC_OK)
        << err;
    EXPECT_EQ(format(c), "throw_on_cudamalloc_oom:True,expandable_segments_reserve:0.5,"
                         "expandable_segments_reserve_by_class:[capture:0.25]");
}

} // namespace
} // namespace conf_test
