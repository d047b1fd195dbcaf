// format_test: the normalized string (ga_conf_format), its round trip through
// ga_conf_parse over random settings and decimals, and a seeded fuzz of the
// parser with random and mutated strings (run under --config=asan too).
#include "tests/conf/conf_test_util.h"

#include <algorithm>
#include <cmath>
#include <random>

namespace conf_test {
namespace {

TEST(ConfFormat, NormalizedStrings)
{
    const struct {
        const char *in, *out;
    } cases[] = {
        {"", ""},
        {"backend:hipMallocAsync", "backend:cudaMallocAsync"},
        {"release_lock_on_hipmalloc:True,pinned_use_hip_host_register:False",
         "release_lock_on_cudamalloc:True,pinned_use_cuda_host_register:False"},
        {"roundup_power2_divisions:[64:8,128:2,256:4,512:2,1024:4,>:1]",
         "roundup_power2_divisions:[64:8,128:2,256:4,512:2,1024:4,>:1]"},
        {"roundup_power2_divisions:[128:8,256:16,512:1,2048:8,>:2]",
         "roundup_power2_divisions:[128:8,256:16,512:1,2048:8,>:2]"},
        {"roundup_power2_divisions:[>:4]", "roundup_power2_divisions:[1:0,>:4]"},
        {"roundup_power2_divisions:[1:2,65536:4]", "roundup_power2_divisions:[1:2,32768:4]"},
        {"roundup_power2_divisions:[>:4,64:8]", "roundup_power2_divisions:[64:8,>:4]"},
        {"roundup_power2_divisions:[4:4,8:0,>:8]", "roundup_power2_divisions:[4:4,8:0,>:8]"},
        {"roundup_power2_divisions:[1:8,2:8,4:8,8:8]", "roundup_power2_divisions:[8:8]"},
        {"roundup_power2_divisions:[]", "roundup_power2_divisions:[]"},
        {"garbage_collection_threshold:5e-1", "garbage_collection_threshold:0.5"},
        {"garbage_collection_threshold:0.000001", "garbage_collection_threshold:0.000001"},
        {"garbage_collection_threshold:1e-30", "garbage_collection_threshold:1e-30"},
        {"per_process_memory_fraction:1.0", "per_process_memory_fraction:1"},
        {"large_segment_size_mb:32", "large_segment_size_mb:32"},
        {"max_non_split_rounding_mb:20", "max_non_split_rounding_mb:20"},
        {"pinned_num_register_threads:1,pinned_use_background_threads:False",
         "pinned_num_register_threads:1,pinned_use_background_threads:False"},
        {"max_split_size_mb:18446744073709551615", "max_split_size_mb:17592186044415"},
        {"pinned_max_cached_size_mb:1024,pinned_reserve_segment_size_mb:64MB,pinned_max_round_threshold_mb:0",
         "pinned_reserve_segment_size_mb:64,pinned_max_round_threshold_mb:0,pinned_max_cached_size_mb:1024"},
        // The backend's options follow the allocator's keys as given (only the backend knows their
        // spelling), whitespace aside, one item per key in the order of their last mention.
        {"sim_capacity:24576MiB", "sim_capacity:24576MiB"},
        {" sim_capacity : 1.5 GB ", "sim_capacity:1.5GB"},
        {"sim_fail_from:0", "sim_fail_from:0"},
        {"sim_backed:True,retry_pool_after_sync:True", "retry_pool_after_sync:True,sim_backed:True"},
        {"retry_pool_after_sync:False", "retry_pool_after_sync:False"},
        {"sim_capacity:1GiB,sim_backed:True,sim_capacity:2GiB", "sim_backed:True,sim_capacity:2GiB"},
        {"driver_path:/x/libcuda.so.1,sim_fail_above:1GiB,sim_fail_from:5,sim_fail_nth:2,sim_manual_events:True,"
         "sim_backed:False,sim_capacity:80GiB,device_backend:sim,expandable_segments:True",
         "expandable_segments:True,device_backend:sim,driver_path:/x/libcuda.so.1,sim_fail_above:1GiB,"
         "sim_fail_from:5,sim_fail_nth:2,sim_manual_events:True,sim_backed:False,sim_capacity:80GiB"},
    };
    for (const auto &k : cases) {
        SCOPED_TRACE(k.in);
        Parsed p = parse(k.in);
        ASSERT_EQ(p.st, GALLOC_OK) << p.err;
        EXPECT_EQ(format(p.c), k.out);
    }
    // snprintf-like: the full length is returned, the buffer is cut and NUL-terminated.
    Parsed p = parse("expandable_segments:True");
    char small[10];
    memset(small, 'x', sizeof(small));
    EXPECT_EQ(ga_conf_format(&p.c, small, sizeof(small)), 24u);
    EXPECT_STREQ(small, "expandabl");
    EXPECT_EQ(ga_conf_format(&p.c, nullptr, 0), 24u);
    EXPECT_EQ(ga_conf_format(&p.c, small, 1), 24u);
    EXPECT_STREQ(small, "");
}

// What a snapshot's allocator_settings records: PyTorch's keys only, so the
// string can be handed to PyTorch; galloc's keys and the backend's are dropped.
TEST(ConfFormat, PyTorchKeysOnly)
{
    Parsed p = parse("sim_capacity:80GiB,sim_placement:recorded,max_split_size_mb:512,retry_pool_after_sync:True,"
                     "per_process_memory_fraction:0.5,device_backend:sim,expandable_segments:True,"
                     "garbage_collection_threshold:0.8");
    ASSERT_EQ(p.st, GALLOC_OK) << p.err;
    char buf[256];
    EXPECT_EQ(ga_conf_format_pytorch(&p.c, buf, sizeof(buf)), 79u);
    EXPECT_STREQ(buf, "max_split_size_mb:512,garbage_collection_threshold:0.8,expandable_segments:True");
    Parsed d = parse("sim_capacity:1GiB");
    EXPECT_EQ(ga_conf_format_pytorch(&d.c, buf, sizeof(buf)), 0u);
    EXPECT_STREQ(buf, "");
}

// A random valid string per iteration: parse, format, parse again must agree.
TEST(ConfFormat, RoundTripOverRandomSettings)
{
    const unsigned seed = 20240611;
    std::mt19937_64 rng(seed);
    auto pick = [&](std::initializer_list<const char *> v) { return std::string(v.begin()[rng() % v.size()]); };
    auto num = [&](uint64_t lo, uint64_t hi) { return std::to_string(lo + rng() % (hi - lo + 1)); };
    for (int it = 0; it < 3000; it++) {
        std::vector<std::string> items;
        if (rng() % 2)
            items.push_back("backend:" + pick({"native", "cudaMallocAsync", "hipMallocAsync"}));
        if (rng() % 3 == 0)
            items.push_back("large_segment_size_mb:" + num(11, 40));
        if (rng() % 2)
            items.push_back("max_split_size_mb:" + num(40, 1u << 20));
        if (rng() % 3 == 0)
            items.push_back("max_non_split_rounding_mb:" + num(40, 4096));
        if (rng() % 2)
            items.push_back("garbage_collection_threshold:0." + num(1, 999999));
        if (rng() % 2) {
            std::string l = "[";
            for (int e = 0, n = (int)(rng() % 6); e < n; e++)
                l += std::to_string(1ull << (rng() % 18)) + ":" + std::to_string(rng() % 3 ? 1u << (rng() % 6) : 0) +
                     ",";
            l += rng() % 2 ? ">:" + std::to_string(1u << (rng() % 5)) + "]" : "]";
            items.push_back("roundup_power2_divisions:" + (rng() % 4 ? l : std::to_string(1u << (rng() % 8))));
        }
        for (const char *b : {"expandable_segments", "release_lock_on_cudamalloc", "release_lock_on_hipmalloc",
                              "pinned_use_cuda_host_register", "pinned_use_background_threads", "sim_backed",
                              "sim_manual_events", "retry_pool_after_sync"})
            if (rng() % 3 == 0)
                items.push_back(std::string(b) + ":" + pick({"True", "False"}));
        if (rng() % 3 == 0)
            items.push_back("per_process_memory_fraction:" + pick({"0", "1", "0.25", "0.9"}));
        if (rng() % 3 == 0)
            items.push_back("pinned_num_register_threads:" + std::to_string(1u << (rng() % 8)));
        if (rng() % 4 == 0)
            items.push_back("pinned_reserve_segment_size_mb:" + num(1, 4096));
        for (const char *k : {"pinned_max_round_threshold_mb:", "pinned_max_cached_size_mb:"})
            if (rng() % 4 == 0)
                items.push_back(std::string(k) + num(0, 4096));
        if (rng() % 3 == 0)
            items.push_back("device_backend:" + pick({"sim", "cuda", "hip", "my_2"}));
        if (rng() % 4 == 0)
            items.push_back("throw_on_cudamalloc_oom:" + pick({"True", "False"}));
        if (rng() % 4 == 0)
            items.push_back("expandable_segments_reserve:" + pick({"0.5", "1.125", "40G", "1e20G", "0.05g"}));
        if (rng() % 4 == 0)
            items.push_back("expandable_segments_reserve_by_class:" +
                            pick({"[]", "[capture:0.25]", "[serving:0.25,ads_sparse:8G]", "[a:1,b:2,a:3]"}));
        if (rng() % 3 == 0)
            items.push_back("sim_capacity:" + num(1, 4096) + pick({"", "B", "KB", "MiB", "GiB"}));
        if (rng() % 3 == 0)
            items.push_back(pick({"sim_fail_nth:", "sim_fail_from:"}) + num(0, 9));
        if (rng() % 4 == 0)
            items.push_back("sim_fail_above:" + num(0, 64) + pick({"", "MiB"}));
        if (rng() % 4 == 0)
            items.push_back("driver_path:/lib/" + pick({"libcuda.so.1", "libamdhip64.so"}));
        std::shuffle(items.begin(), items.end(), rng);
        std::string s;
        for (const std::string &i : items)
            s += (s.empty() ? "" : ",") + i;
        Parsed a = parse(s.c_str());
        ASSERT_EQ(a.st, GALLOC_OK) << "seed " << seed << " iteration " << it << ": " << s << ": " << a.err;
        std::string n = format(a.c);
        Parsed b = parse(n.c_str());
        ASSERT_EQ(b.st, GALLOC_OK) << "seed " << seed << ": " << n << ": " << b.err;
        ASSERT_TRUE(Same(a.c, b.c)) << "seed " << seed << ": " << s << " -> " << n;
        ASSERT_EQ(format(b.c), n) << "seed " << seed;
    }
}

// Any double the struct holds prints as the shortest text that reads back exactly.
TEST(ConfFormat, DecimalsRoundTripExactly)
{
    const unsigned seed = 7;
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    for (int it = 0; it < 20000; it++) {
        ga_conf_t c;
        ga_conf_defaults(&c);
        c.garbage_collection_threshold = it == 0 ? 0.1 + 0.2 : unit(rng);
        c.per_process_memory_fraction = it % 2 ? unit(rng) : std::ldexp(1.0, -(int)(rng() % 1000));
        c.set = GA_CONF_SET_GC_THRESHOLD | GA_CONF_SET_MEMORY_FRACTION;
        if (c.garbage_collection_threshold == 0.0)
            continue;
        std::string n = format(c);
        Parsed p = parse(n.c_str());
        ASSERT_EQ(p.st, GALLOC_OK) << "seed " << seed << ": " << n << ": " << p.err;
        ASSERT_TRUE(Same(c, p.c)) << "seed " << seed << ": " << n;
    }
}

// Random bytes and mutated valid strings: never a crash or an out-of-bounds read
// (asan), on error nothing changes, on success the normalized string round-trips.
TEST(ConfFuzz, RandomAndMutatedStrings)
{
    const unsigned seed = 99;
    std::mt19937_64 rng(seed);
    const std::string alphabet = ",,,:::[[]]>> \t0123456789.eE-+_abkmgtiBKMGTsTrueFalse\x01\xff\"\\";
    const std::vector<std::string> seeds = {
        "max_split_size_mb:512,roundup_power2_divisions:[256:1,512:2,1024:4,>:8]",
        "garbage_collection_threshold:0.6,sim_capacity:1.5GiB,large_segment_size_mb:30",
        "expandable_segments:True,pinned_num_register_threads:8,driver_path:/x/y,device_backend:cuda"};
    Parsed base = parse("expandable_segments:True,sim_capacity:3GiB,max_split_size_mb:64");
    ASSERT_EQ(base.st, GALLOC_OK);
    int accepted = 0;
    for (int it = 0; it < 30000; it++) {
        std::string s = seeds[rng() % seeds.size()];
        if (it % 2) {
            s.resize(rng() % 80);
            for (char &ch : s)
                ch = alphabet[rng() % alphabet.size()];
        } else {
            for (int m = 0, n = 1 + (int)(rng() % 4); m < n && !s.empty(); m++)
                s[rng() % s.size()] = alphabet[rng() % alphabet.size()];
        }
        ga_conf_t c = base.c;
        char err[256] = "";
        galloc_status_t st = ga_conf_parse(s.c_str(), &c, err, sizeof(err));
        if (st != GALLOC_OK) {
            ASSERT_EQ(st, GALLOC_E_CONFIG) << s;
            ASSERT_EQ(memcmp(&c, &base.c, sizeof(c)), 0) << "seed " << seed << ": " << s;
            ASSERT_NE(std::string(err).find("(offset "), std::string::npos) << s << ": " << err;
            continue;
        }
        accepted++;
        std::string n = format(c);
        ga_conf_t d;
        ga_conf_defaults(&d);
        ASSERT_EQ(ga_conf_parse(n.c_str(), &d, err, sizeof(err)), GALLOC_OK) << s << " -> " << n << ": " << err;
        ASSERT_EQ(format(d), n) << "seed " << seed << ": " << s;
    }
    EXPECT_GT(accepted, 300); // the mutations also reach the accepting paths (382 with this seed)
}

} // namespace
} // namespace conf_test
