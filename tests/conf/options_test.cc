// options_test: ga_conf_options_parse, the reader a device backend parses its
// own options with: every kind, a key given twice, exact messages and
// offsets (into the options string), PyTorch's wording for a key the table
// lacks.
#include "tests/conf/conf_test_util.h"

#include <cstddef>

namespace conf_test {
namespace {

// A backend's settings and its table, as sim.c and gpu.c write theirs.
struct Toy {
    bool fast;
    uint64_t count;
    uint64_t bytes;
    char path[GA_CONF_PATH_MAX];
};

const ga_conf_key_t kToyKeys[] = {
    {"toy_fast", GA_CONF_BOOL, offsetof(Toy, fast), 0, 0, nullptr, 0},
    {"toy_count", GA_CONF_WHOLE, offsetof(Toy, count), 1, 8, "a whole number from 1 to 8", 0},
    {"toy_bytes", GA_CONF_SIZE, offsetof(Toy, bytes), 0, UINT64_MAX,
     "a size: bytes, or a number with unit " GA_CONF_SIZE_UNITS, 0},
    {"toy_path", GA_CONF_PATH, offsetof(Toy, path), 0, 0, nullptr, 0},
    {"toy_checked", GA_CONF_BOOL, GA_CONF_NOT_STORED, 0, 0, nullptr, 0},
};

struct Read {
    galloc_status_t st;
    Toy toy;
    std::string err;
};

Read ReadToy(const char *options)
{
    Read r = {GALLOC_OK, {false, 1, 0, ""}, ""};
    char err[512] = "untouched";
    r.st = ga_conf_options_parse(options, kToyKeys, sizeof(kToyKeys) / sizeof(kToyKeys[0]), &r.toy, err, sizeof err);
    r.err = err;
    return r;
}

TEST(ConfOptions, EveryKindIsRead)
{
    Read r = ReadToy("toy_fast:True, toy_count : 8,toy_bytes:1.5KiB,toy_path:/opt/lib.so,toy_checked:False,");
    ASSERT_EQ(r.st, GALLOC_OK) << r.err;
    EXPECT_EQ(r.err, "");
    EXPECT_TRUE(r.toy.fast);
    EXPECT_EQ(r.toy.count, 8u);
    EXPECT_EQ(r.toy.bytes, 1536u);
    EXPECT_STREQ(r.toy.path, "/opt/lib.so");
    r = ReadToy("toy_count:2,toy_count:3"); // the last value wins, as in a config string
    ASSERT_EQ(r.st, GALLOC_OK) << r.err;
    EXPECT_EQ(r.toy.count, 3u);
    for (const char *none : {"", "  ", (const char *)nullptr}) {
        r = ReadToy(none);
        ASSERT_EQ(r.st, GALLOC_OK) << r.err;
        EXPECT_EQ(r.toy.count, 1u);
    }
    char err[64] = "x";
    EXPECT_EQ(ga_conf_options_parse("anything:1", nullptr, 0, nullptr, err, sizeof err), GALLOC_E_CONFIG);
    EXPECT_EQ(ga_conf_options_parse("", nullptr, 1, nullptr, err, sizeof err), GALLOC_E_INVAL);
}

TEST(ConfOptions, RefusalsNameKeyValueAndOffset)
{
    const struct {
        std::string in, msg;
    } cases[] = {
        {"toy_fast:yes", "toy_fast: expected True or False, got \"yes\" (offset 9)"},
        {"toy_fast:True,toy_count:9", "toy_count: expected a whole number from 1 to 8, got \"9\" (offset 24)"},
        {"toy_count:99999999999999999999", "toy_count: expected a whole number from 1 to 8 (this one does not fit "
                                           "in 64 bits), got \"99999999999999999999\" (offset 10)"},
        {"toy_bytes:1.5B", "toy_bytes: expected a size: bytes, or a number with unit B, KB, MB, GB, TB, KiB, MiB, "
                           "GiB or TiB (this one is not a whole number of bytes), got \"1.5B\" (offset 10)"},
        {"toy_path:/my lib.so", "toy_path: expected a path of 1 to 255 bytes without ',', ':', '[', ']' or "
                                "whitespace, got \"/my lib.so\" (offset 9)"},
        {"toy_fast:True,Toy_fast:True", "Unrecognized key 'Toy_fast' in CUDA allocator config (offset 14)"},
        {"toy_count", "toy_count: expected ':' after the key, got the end of the string (offset 9)"},
        {"toy_count:", "toy_count: expected a value after ':', got the end of the string (offset 10)"},
        {"toy_count:1:2", "toy_count: expected ',' or the end of the string after the value, got \":\" (offset 11)"},
        {",toy_count:1", "config: expected a key, got \",\" (offset 0)"},
        {"toy_path:/" + std::string(255, 'p'), "toy_path: expected a path of 1 to 255 bytes without ',', ':', '[', "
                                               "']' or whitespace, got \"/" +
                                                   std::string(47, 'p') + "...\" (offset 9)"},
        {std::string(10000, 'k') + ":1",
         "Unrecognized key '" + std::string(48, 'k') + "...' in CUDA allocator config (offset 0)"},
    };
    for (const auto &k : cases) {
        SCOPED_TRACE(k.in.substr(0, 80));
        Read r = ReadToy(k.in.c_str());
        EXPECT_EQ(r.st, GALLOC_E_CONFIG);
        EXPECT_EQ(r.err, k.msg);
    }
}

} // namespace
} // namespace conf_test
