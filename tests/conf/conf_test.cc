// conf_test: the config grammar (newest PyTorch main's rules), every key with
// valid and boundary values, the roundup_power2_divisions lists, per-parse
// resets and ga_conf_load precedence (exact error texts, all-or-nothing:
// conf_errors_test.cc).
#include "tests/conf/conf_test_util.h"

namespace conf_test {
namespace {

TEST(ConfDefaults, PyTorchAndGallocDefaults)
{
    ga_conf_t c;
    memset(&c, 0xab, sizeof(c));
    ga_conf_defaults(&c);
    EXPECT_EQ(c.backend, GA_CONF_BACKEND_NATIVE);
    EXPECT_EQ(c.max_split_size, UINT64_MAX);
    EXPECT_EQ(c.max_non_split_rounding_size, 20971520u);
    EXPECT_EQ(c.large_segment_size, 20971520u);
    EXPECT_EQ(c.garbage_collection_threshold, 0.0);
    EXPECT_EQ(divs(c), std::vector<uint32_t>(16, 0));
    EXPECT_FALSE(c.expandable_segments || c.release_lock_on_cudamalloc || c.pinned_use_cuda_host_register ||
                 c.pinned_use_background_threads || c.retry_pool_after_sync);
    EXPECT_EQ(c.pinned_num_register_threads, 1u);
    EXPECT_EQ(c.per_process_memory_fraction, 1.0);
    // The pinned host cache's: no reserve, both caps off (PR #171662's defaults,
    // SIZE_MAX in AcceleratorAllocatorConfig).
    EXPECT_EQ(c.pinned_reserve_segment_size, 0u);
    EXPECT_EQ(c.pinned_max_round_threshold, UINT64_MAX);
    EXPECT_EQ(c.pinned_max_cached_size, UINT64_MAX);
    EXPECT_STREQ(c.device_backend, "sim");
    EXPECT_STREQ(c.backend_options, "");
    EXPECT_EQ(c.n_options, 0u);
    EXPECT_EQ(c.set, 0u);
}

// Every stored integer or boolean key: value read, set bit, nothing else changed.
struct U64Case {
    const char *s;
    uint64_t (*get)(const ga_conf_t &);
    uint64_t want;
    uint32_t bit;
};
#define GET(f) [](const ga_conf_t &c) { return (uint64_t)c.f; }

TEST(ConfKeys, ValidAndBoundaryValues)
{
    const U64Case cases[] = {
        {"backend:native", GET(backend), GA_CONF_BACKEND_NATIVE, GA_CONF_SET_BACKEND},
        {"backend:cudaMallocAsync", GET(backend), GA_CONF_BACKEND_ASYNC, GA_CONF_SET_BACKEND},
        {"backend:hipMallocAsync", GET(backend), GA_CONF_BACKEND_ASYNC, GA_CONF_SET_BACKEND},
        {"max_split_size_mb:20", GET(max_split_size), 20 * kMiB, GA_CONF_SET_MAX_SPLIT}, // newest main: >= 20
        {"max_split_size_mb:21", GET(max_split_size), 21 * kMiB, GA_CONF_SET_MAX_SPLIT},
        {"max_split_size_mb:512", GET(max_split_size), 536870912, GA_CONF_SET_MAX_SPLIT},
        {"max_split_size_mb:0020", GET(max_split_size), 20 * kMiB, GA_CONF_SET_MAX_SPLIT},
        {"max_split_size_mb:17592186044415", GET(max_split_size), 18446744073708503040u, GA_CONF_SET_MAX_SPLIT},
        // PyTorch clamps to SIZE_MAX / 2^20 MiB rather than failing
        {"max_split_size_mb:18446744073709551615", GET(max_split_size), 18446744073708503040u, GA_CONF_SET_MAX_SPLIT},
        // Numbers read as PyTorch's std::stoull reads them: the rest of the word is
        // ignored, and "-1" wraps to 2^64 - 1, which clamps as above.
        {"max_split_size_mb:512MB", GET(max_split_size), 536870912, GA_CONF_SET_MAX_SPLIT},
        {"max_split_size_mb:+64", GET(max_split_size), 64 * kMiB, GA_CONF_SET_MAX_SPLIT},
        {"max_split_size_mb:-1", GET(max_split_size), 18446744073708503040u, GA_CONF_SET_MAX_SPLIT},
        {"max_non_split_rounding_mb:64MiB", GET(max_non_split_rounding_size), 64 * kMiB,
         GA_CONF_SET_MAX_NON_SPLIT_ROUNDING},
        {"large_segment_size_mb:32MB", GET(large_segment_size), 32 * kMiB, GA_CONF_SET_LARGE_SEGMENT},
        {"pinned_num_register_threads:8threads", GET(pinned_num_register_threads), 8, GA_CONF_SET_PINNED_THREADS},
        {"max_non_split_rounding_mb:20", GET(max_non_split_rounding_size), 20 * kMiB,
         GA_CONF_SET_MAX_NON_SPLIT_ROUNDING},
        {"max_non_split_rounding_mb:64", GET(max_non_split_rounding_size), 64 * kMiB,
         GA_CONF_SET_MAX_NON_SPLIT_ROUNDING},
        {"large_segment_size_mb:11", GET(large_segment_size), 11 * kMiB, GA_CONF_SET_LARGE_SEGMENT},
        {"large_segment_size_mb:11", GET(max_non_split_rounding_size), 11 * kMiB, GA_CONF_SET_LARGE_SEGMENT},
        {"expandable_segments:True", GET(expandable_segments), 1, GA_CONF_SET_EXPANDABLE},
        {"expandable_segments:False", GET(expandable_segments), 0, GA_CONF_SET_EXPANDABLE},
        {"release_lock_on_cudamalloc:True", GET(release_lock_on_cudamalloc), 1, GA_CONF_SET_RELEASE_LOCK},
        {"release_lock_on_hipmalloc:True", GET(release_lock_on_cudamalloc), 1, GA_CONF_SET_RELEASE_LOCK},
        {"pinned_use_cuda_host_register:True", GET(pinned_use_cuda_host_register), 1, GA_CONF_SET_PINNED_REGISTER},
        {"pinned_use_hip_host_register:True", GET(pinned_use_cuda_host_register), 1, GA_CONF_SET_PINNED_REGISTER},
        {"pinned_num_register_threads:1", GET(pinned_num_register_threads), 1, GA_CONF_SET_PINNED_THREADS},
        {"pinned_num_register_threads:8", GET(pinned_num_register_threads), 8, GA_CONF_SET_PINNED_THREADS},
        {"pinned_num_register_threads:128", GET(pinned_num_register_threads), 128, GA_CONF_SET_PINNED_THREADS},
        {"pinned_use_background_threads:True", GET(pinned_use_background_threads), 1, GA_CONF_SET_PINNED_BACKGROUND},
        {"retry_pool_after_sync:True", GET(retry_pool_after_sync), 1, GA_CONF_SET_RETRY_POOL},
        {"retry_pool_after_sync:False", GET(retry_pool_after_sync), 0, GA_CONF_SET_RETRY_POOL},
        // The pinned host cache's keys, in MiB (c10/cuda/CUDAAllocatorConfig.cpp,
        // parsePinnedReserveSegmentSize: toSizeT, > 0; PR #171662 for the two caps).
        {"pinned_reserve_segment_size_mb:1", GET(pinned_reserve_segment_size), kMiB, GA_CONF_SET_PINNED_RESERVE},
        {"pinned_reserve_segment_size_mb:4096", GET(pinned_reserve_segment_size), 4096 * kMiB,
         GA_CONF_SET_PINNED_RESERVE},
        {"pinned_max_round_threshold_mb:0", GET(pinned_max_round_threshold), 0, GA_CONF_SET_PINNED_ROUND_THRESHOLD},
        {"pinned_max_round_threshold_mb:128", GET(pinned_max_round_threshold), 128 * kMiB,
         GA_CONF_SET_PINNED_ROUND_THRESHOLD},
        {"pinned_max_round_threshold_mb:-1", GET(pinned_max_round_threshold), 18446744073708503040u,
         GA_CONF_SET_PINNED_ROUND_THRESHOLD},
        {"pinned_max_cached_size_mb:0", GET(pinned_max_cached_size), 0, GA_CONF_SET_PINNED_MAX_CACHED},
        {"pinned_max_cached_size_mb:1024MB", GET(pinned_max_cached_size), 1024 * kMiB, GA_CONF_SET_PINNED_MAX_CACHED},
    };
    for (const U64Case &k : cases) {
        SCOPED_TRACE(k.s);
        Parsed p = parse(k.s);
        ASSERT_EQ(p.st, GALLOC_OK) << p.err;
        EXPECT_EQ(k.get(p.c), k.want);
        EXPECT_EQ(p.c.set, k.bit);
        EXPECT_EQ(p.err, "");
    }
}

TEST(ConfKeys, DecimalAndStringValues)
{
    const struct {
        const char *s;
        double gc, fraction;
    } dec[] = {
        {"garbage_collection_threshold:0.5", 0.5, 1.0},
        {"garbage_collection_threshold:0.8", 0.8, 1.0},
        {"garbage_collection_threshold:.25", 0.25, 1.0},
        {"garbage_collection_threshold:5e-1", 0.5, 1.0},
        {"garbage_collection_threshold:+0.000001", 1e-6, 1.0},
        {"garbage_collection_threshold:0.999999", 0.999999, 1.0},
        {"per_process_memory_fraction:0", 0.0, 0.0},
        {"per_process_memory_fraction:1", 0.0, 1.0},
        {"per_process_memory_fraction:1.0", 0.0, 1.0},
        {"per_process_memory_fraction:0.75", 0.0, 0.75},
        // As std::stod reads them: the longest decimal prefix.
        {"garbage_collection_threshold:0.8x", 0.8, 1.0},
        {"garbage_collection_threshold:6e-1e", 0.6, 1.0},
        {"per_process_memory_fraction:0.5GB", 0.0, 0.5},
        {"per_process_memory_fraction:1.", 0.0, 1.0},
    };
    for (const auto &d : dec) {
        SCOPED_TRACE(d.s);
        Parsed p = parse(d.s);
        ASSERT_EQ(p.st, GALLOC_OK) << p.err;
        EXPECT_EQ(p.c.garbage_collection_threshold, d.gc);
        EXPECT_EQ(p.c.per_process_memory_fraction, d.fraction);
    }
    Parsed p = parse("device_backend:cuda,driver_path:/usr/lib/x86_64-linux-gnu/libcuda.so.1");
    ASSERT_EQ(p.st, GALLOC_OK) << p.err;
    EXPECT_STREQ(p.c.device_backend, "cuda");
    EXPECT_STREQ(p.c.backend_options, "driver_path:/usr/lib/x86_64-linux-gnu/libcuda.so.1"); // the backend's key
    EXPECT_EQ(p.c.set, (uint32_t)GA_CONF_SET_DEVICE_BACKEND);
    std::string name31(31, 'a');
    p = parse(("device_backend:" + name31).c_str());
    ASSERT_EQ(p.st, GALLOC_OK) << p.err;
    EXPECT_EQ(std::string(p.c.device_backend), name31);
}

// A key the allocator's table lacks starts an item of the device backend's:
// kept as written (up to the next ',' outside brackets), in order, one item
// per key, with where it was written; the backend reads and refuses them.
TEST(ConfOptions, UnclaimedItemsAreTheBackendsOptions)
{
    Parsed p = parse("foo:123,max_split_size_mb:512, bar : [1,2] ,x,Max_split_size_mb:7,foo:9:9");
    ASSERT_EQ(p.st, GALLOC_OK) << p.err;
    EXPECT_EQ(p.c.max_split_size, 512 * kMiB);
    EXPECT_STREQ(p.c.backend_options, "bar : [1,2],x,Max_split_size_mb:7,foo:9:9"); // foo:123 replaced
    ASSERT_EQ(p.c.n_options, 4u);
    EXPECT_EQ(p.c.option_origin[0].src_off, 31u);
    EXPECT_EQ(p.c.option_origin[0].off, 0u);
    EXPECT_EQ(p.c.option_origin[0].len, 11u);
    EXPECT_EQ(p.c.option_origin[3].src_off, 66u);
    EXPECT_EQ(p.c.option_origin[3].off, 34u);
    EXPECT_EQ(p.c.option_origin[0].source, nullptr);
    EXPECT_EQ(p.c.set, (uint32_t)GA_CONF_SET_MAX_SPLIT);
    EXPECT_EQ(format(p.c), "max_split_size_mb:512,bar:[1,2],x,Max_split_size_mb:7,foo:9:9");

    // Layers: a later source replaces an item of the same key, and each item remembers its source.
    ga_conf_t c;
    char err[512];
    ASSERT_EQ(ga_conf_load(&c, "sim_backed:True", "sim_capacity:1GiB,sim_backed:False", "sim_capacity:2GiB", nullptr,
                           err, sizeof err),
              GALLOC_OK)
        << err;
    EXPECT_STREQ(c.backend_options, "sim_capacity:1GiB,sim_backed:True");
    EXPECT_STREQ(c.option_origin[0].source, "GALLOC_CONF");
    EXPECT_STREQ(c.option_origin[1].source, "create string");

    // A refusal by the backend, offset into backend_options, is pointed back at what the user wrote.
    char out[256];
    ga_conf_option_error(&c, "sim_backed: expected True or False, got \"True\" (offset 29)", out, sizeof out);
    EXPECT_STREQ(out, "create string: sim_backed: expected True or False, got \"True\" (offset 11)");
    ga_conf_option_error(&c, "Unrecognized key 'sim_capacity' in CUDA allocator config (offset 0)", out, sizeof out);
    EXPECT_STREQ(out, "GALLOC_CONF: Unrecognized key 'sim_capacity' in CUDA allocator config (offset 0)");
    ga_conf_option_error(&c, "no offset here", out, sizeof out);
    EXPECT_STREQ(out, "no offset here");
    ga_conf_option_error(&c, "far away (offset 999)", out, sizeof out);
    EXPECT_STREQ(out, "far away (offset 999)");
    ga_conf_option_error(&p.c, "x: bad (offset 12)", out, sizeof out); // ga_conf_parse's string: no name
    EXPECT_STREQ(out, "x: bad (offset 44)");
}

// A list left open would take in the items a later source adds after it.
TEST(ConfOptions, AnOpenListIsRefused)
{
    Parsed p = parse("foo:[1,2,max_split_size_mb:64");
    EXPECT_EQ(p.st, GALLOC_E_CONFIG);
    EXPECT_EQ(p.err, "foo: expected ']' to close the list, got the end of the string (offset 29)");
    p = parse("foo:[[1],2]],bar:]");
    ASSERT_EQ(p.st, GALLOC_OK) << p.err;
    EXPECT_STREQ(p.c.backend_options, "foo:[[1],2]],bar:]");
}

TEST(ConfOptions, BackendOptionsHaveALimit)
{
    std::string s;
    for (int i = 0; i < GA_CONF_OPTION_ITEMS; i++)
        s += "k" + std::to_string(i) + ":1,";
    Parsed p = parse(s.c_str());
    ASSERT_EQ(p.st, GALLOC_OK) << p.err;
    EXPECT_EQ(p.c.n_options, uint32_t(GA_CONF_OPTION_ITEMS));
    p = parse((s + "k0:2,one_more:1").c_str()); // k0 replaced, then one too many
    EXPECT_EQ(p.st, GALLOC_E_CONFIG);
    EXPECT_EQ(p.err, "config: expected backend options of at most 1023 bytes and 32 items in all, got "
                     "\"one_more:1\" (offset " +
                         std::to_string(s.size() + 5) + ")");
    p = parse(("long:" + std::string(1020, 'v')).c_str());
    EXPECT_EQ(p.st, GALLOC_E_CONFIG);
    EXPECT_NE(p.err.find("at most 1023 bytes"), std::string::npos) << p.err;
}

// Keys PyTorch accepts that galloc checks but does not store.
TEST(ConfKeys, AcceptedButNotStored)
{
    for (const char *s : {"pinned_free_catch_all:False", "pinned_free_catch_all:True"}) {
        SCOPED_TRACE(s);
        Parsed p = parse(s);
        ga_conf_t d;
        ga_conf_defaults(&d);
        ASSERT_EQ(p.st, GALLOC_OK) << p.err;
        EXPECT_TRUE(Same(p.c, d));
    }
}

// A rounding threshold below the cache cap: the configuration whose heap
// overflow PyTorch fixed in get_free_block (PR #192722, its example
// pinned_max_round_threshold_mb:128 with pinned_max_cached_size_mb:1024), not by
// refusing it in the parser, so galloc accepts it too (host/ follows the fix).
TEST(ConfKeys, PinnedThresholdBelowTheCapIsAccepted)
{
    Parsed p = parse("pinned_max_round_threshold_mb:128,pinned_max_cached_size_mb:1024");
    ASSERT_EQ(p.st, GALLOC_OK) << p.err;
    EXPECT_EQ(p.c.pinned_max_round_threshold, 128 * kMiB);
    EXPECT_EQ(p.c.pinned_max_cached_size, 1024 * kMiB);
    EXPECT_EQ(p.c.set, (uint32_t)(GA_CONF_SET_PINNED_ROUND_THRESHOLD | GA_CONF_SET_PINNED_MAX_CACHED));
    // Each assignment overwrites (the torch_npu port's tests call it "overwrite-assign, not min").
    p = parse("pinned_max_cached_size_mb:64,pinned_max_cached_size_mb:4096");
    ASSERT_EQ(p.st, GALLOC_OK) << p.err;
    EXPECT_EQ(p.c.pinned_max_cached_size, 4096 * kMiB);
}

// graph_capture_record_stream_reuse is stored (pool/capture.c honours it), off
// by default, and written back in PyTorch's allocator_settings form when given.
TEST(ConfKeys, GraphCaptureRecordStreamReuseIsStored)
{
    ga_conf_t d;
    ga_conf_defaults(&d);
    EXPECT_FALSE(d.graph_capture_record_stream_reuse);
    Parsed on = parse("graph_capture_record_stream_reuse:True");
    ASSERT_EQ(on.st, GALLOC_OK) << on.err;
    EXPECT_TRUE(on.c.graph_capture_record_stream_reuse);
    EXPECT_TRUE(on.c.set & GA_CONF_SET_CAPTURE_REUSE);
    Parsed off = parse("graph_capture_record_stream_reuse:True,graph_capture_record_stream_reuse:False");
    ASSERT_EQ(off.st, GALLOC_OK) << off.err;
    EXPECT_FALSE(off.c.graph_capture_record_stream_reuse);
    EXPECT_EQ(format(on.c), "graph_capture_record_stream_reuse:True");
    EXPECT_EQ(format(off.c), "graph_capture_record_stream_reuse:False"); // given, so written
    char buf[256];
    ga_conf_format_pytorch(&on.c, buf, sizeof(buf));
    EXPECT_STREQ(buf, "graph_capture_record_stream_reuse:True");
}

TEST(ConfGrammar, WhitespaceCaseAndCommas)
{
    Parsed p = parse("  max_split_size_mb : 512 ");
    ASSERT_EQ(p.st, GALLOC_OK) << p.err;
    EXPECT_EQ(p.c.max_split_size, 512 * kMiB);
    p = parse("max_split _size_mb:5 12"); // newest main drops whitespace inside words too
    ASSERT_EQ(p.st, GALLOC_OK) << p.err;
    EXPECT_EQ(p.c.max_split_size, 512 * kMiB);
    p = parse("\tgarbage_collection_threshold:\n0.6\r,\vexpandable_segments:\fTrue");
    ASSERT_EQ(p.st, GALLOC_OK) << p.err;
    EXPECT_EQ(p.c.garbage_collection_threshold, 0.6);
    EXPECT_TRUE(p.c.expandable_segments);
    p = parse("Max_split_size_mb:512"); // not an allocator key: the backend's, which refuses it at open
    ASSERT_EQ(p.st, GALLOC_OK) << p.err;
    EXPECT_EQ(p.c.max_split_size, UINT64_MAX);
    EXPECT_STREQ(p.c.backend_options, "Max_split_size_mb:512");
    p = parse("expandable_segments:False,"); // trailing comma (newest main's own test)
    ASSERT_EQ(p.st, GALLOC_OK) << p.err;
    EXPECT_EQ(p.c.set, (uint32_t)GA_CONF_SET_EXPANDABLE);
    p = parse("max_split_size_mb:512, ,");
    EXPECT_EQ(p.err, "config: expected a key, got \",\" (offset 23)");
    ga_conf_t d;
    ga_conf_defaults(&d);
    for (const char *empty : {"", "   ", " \t\n\v\f\r ", (const char *)nullptr}) {
        p = parse(empty);
        ASSERT_EQ(p.st, GALLOC_OK) << p.err;
        EXPECT_TRUE(Same(p.c, d));
    }
}

TEST(ConfGrammar, PyTorchUsersStrings)
{
    const struct {
        const char *s, *normalized;
        uint64_t max_split;
        double gc;
        uint32_t div1g;
        bool expandable;
        ga_conf_backend_t backend;
    } cases[] = {
        {"expandable_segments:True", "expandable_segments:True", UINT64_MAX, 0, 0, true, GA_CONF_BACKEND_NATIVE},
        {"max_split_size_mb:512", "max_split_size_mb:512", 512 * kMiB, 0, 0, false, GA_CONF_BACKEND_NATIVE},
        {"max_split_size_mb:512,roundup_power2_divisions:4,garbage_collection_threshold:0.8",
         "max_split_size_mb:512,garbage_collection_threshold:0.8,roundup_power2_divisions:4", 512 * kMiB, 0.8, 4, false,
         GA_CONF_BACKEND_NATIVE},
        {"garbage_collection_threshold:0.6,max_split_size_mb:128",
         "max_split_size_mb:128,garbage_collection_threshold:0.6", 128 * kMiB, 0.6, 0, false, GA_CONF_BACKEND_NATIVE},
        {"backend:cudaMallocAsync", "backend:cudaMallocAsync", UINT64_MAX, 0, 0, false, GA_CONF_BACKEND_ASYNC},
        {"roundup_power2_divisions:[256:1,512:2,1024:4,>:8]", "roundup_power2_divisions:[256:1,512:2,1024:4,>:8]",
         UINT64_MAX, 0, 4, false, GA_CONF_BACKEND_NATIVE},
        {"expandable_segments:True,max_split_size_mb:256", "max_split_size_mb:256,expandable_segments:True", 256 * kMiB,
         0, 0, true, GA_CONF_BACKEND_NATIVE},
    };
    for (const auto &k : cases) {
        SCOPED_TRACE(k.s);
        Parsed p = parse(k.s);
        ASSERT_EQ(p.st, GALLOC_OK) << p.err;
        EXPECT_EQ(p.c.max_split_size, k.max_split);
        EXPECT_EQ(p.c.garbage_collection_threshold, k.gc);
        EXPECT_EQ(ga_conf_roundup_divisions(&p.c, 1200 * kMiB), k.div1g);
        EXPECT_EQ(p.c.expandable_segments, k.expandable);
        EXPECT_EQ(p.c.backend, k.backend);
        EXPECT_EQ(format(p.c), k.normalized);
    }
}

TEST(ConfRoundup, ListsFollowNewestMain)
{
    using V = std::vector<uint32_t>;
    const struct {
        const char *list;
        V want;
    } cases[] = {
        // newest main's test: 2048 MiB reads 8 (2.x's ">" rule would overwrite it with 2)
        {"[128:8,256:16,512:1,2048:8,>:2]", V{8, 8, 8, 8, 8, 8, 8, 8, 16, 1, 0, 8, 2, 2, 2, 2}},
        {"[64:8,128:2,256:4,512:2,1024:4,>:1]", V{8, 8, 8, 8, 8, 8, 8, 2, 4, 2, 4, 1, 1, 1, 1, 1}},
        {"[256:1,512:2,1024:4,>:8]", V{1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 4, 8, 8, 8, 8, 8}},
        {"[>:4]", V{0, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4}},
        {"[>:4,64:8]", V{8, 8, 8, 8, 8, 8, 8, 4, 4, 4, 4, 4, 4, 4, 4, 4}},
        {"[1:2,65536:4]", V{2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4}},
        {"[64:8,]", V{8, 8, 8, 8, 8, 8, 8, 0, 0, 0, 0, 0, 0, 0, 0, 0}},
        {"[ 64 : 8 , 128 : 0 ]", V{8, 8, 8, 8, 8, 8, 8, 0, 0, 0, 0, 0, 0, 0, 0, 0}},
        {"[]", V(16, 0)},
        {"4", V(16, 4)},
        {"1", V(16, 1)},
        {"2147483648", V(16, 2147483648u)},
    };
    for (const auto &k : cases) {
        SCOPED_TRACE(k.list);
        Parsed p = parse((std::string("roundup_power2_divisions:") + k.list).c_str());
        ASSERT_EQ(p.st, GALLOC_OK) << p.err;
        EXPECT_EQ(divs(p.c), k.want);
        EXPECT_EQ(p.c.set, (uint32_t)GA_CONF_SET_ROUNDUP);
    }
    Parsed p = parse("roundup_power2_divisions:[128:8,256:16,512:1,2048:8,>:2]");
    const uint64_t mib[] = {64, 128, 256, 512, 1024, 2048, 4096};
    const uint32_t want[] = {8, 8, 16, 1, 0, 8, 2};
    for (int i = 0; i < 7; i++)
        EXPECT_EQ(ga_conf_roundup_divisions(&p.c, mib[i] * kMiB), want[i]) << mib[i] << " MiB";
    // Two roundup keys in one string add up, as in PyTorch (no reset between them).
    p = parse("roundup_power2_divisions:[64:8],roundup_power2_divisions:[>:2]");
    EXPECT_EQ(divs(p.c), (V{8, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2}));
}

TEST(ConfRoundup, IntervalOfASize)
{
    ga_conf_t c;
    ga_conf_defaults(&c);
    for (uint32_t i = 0; i < GA_CONF_DIVISION_INTERVALS; i++)
        c.roundup_power2_divisions[i] = 100 + i;
    const struct {
        size_t size;
        uint32_t want;
    } cases[] = {{0, 100},         {1, 100},        {kMiB, 100}, {2 * kMiB - 1, 100},  {2 * kMiB, 101},
                 {4 * kMiB, 102},  {kGiB - 1, 109}, {kGiB, 110}, {32 * kGiB - 1, 114}, {32 * kGiB, 115},
                 {64 * kGiB, 115}, {SIZE_MAX, 115}};
    for (const auto &k : cases)
        EXPECT_EQ(ga_conf_roundup_divisions(&c, k.size), k.want) << k.size;
}

// Each parse resets PyTorch's four per-parse keys; the others stay.
TEST(ConfParse, PerParseResetsAndLargeSegment)
{
    Parsed p = parse("max_split_size_mb:512,max_non_split_rounding_mb:64,garbage_collection_threshold:0.5,"
                     "roundup_power2_divisions:4,expandable_segments:True,large_segment_size_mb:30");
    ASSERT_EQ(p.st, GALLOC_OK) << p.err;
    char err[256];
    ASSERT_EQ(ga_conf_parse("pinned_use_background_threads:True", &p.c, err, sizeof(err)), GALLOC_OK) << err;
    EXPECT_EQ(p.c.max_split_size, UINT64_MAX);
    EXPECT_EQ(p.c.max_non_split_rounding_size, 30 * kMiB); // back to large_segment_size, which is kept
    EXPECT_EQ(p.c.large_segment_size, 30 * kMiB);
    EXPECT_EQ(p.c.garbage_collection_threshold, 0.0);
    EXPECT_EQ(divs(p.c), std::vector<uint32_t>(16, 0));
    EXPECT_TRUE(p.c.expandable_segments);
    EXPECT_EQ(p.c.set, (uint32_t)(GA_CONF_SET_EXPANDABLE | GA_CONF_SET_LARGE_SEGMENT | GA_CONF_SET_PINNED_BACKGROUND));
    ASSERT_EQ(ga_conf_parse(nullptr, &p.c, err, sizeof(err)), GALLOC_OK);
    EXPECT_TRUE(p.c.pinned_use_background_threads);
    // newest main's allocator_config_test figures
    p = parse("large_segment_size_mb:15,max_split_size_mb:20,max_non_split_rounding_mb:40,"
              "garbage_collection_threshold:0.8");
    ASSERT_EQ(p.st, GALLOC_OK) << p.err;
    EXPECT_EQ(p.c.large_segment_size, 15 * kMiB);
    EXPECT_EQ(p.c.max_split_size, 20 * kMiB);
    EXPECT_EQ(p.c.max_non_split_rounding_size, 40 * kMiB);
    EXPECT_EQ(p.c.garbage_collection_threshold, 0.8);
    p = parse("max_split_size_mb:15,large_segment_size_mb:15"); // large_segment_size_mb applies wherever it stands
    ASSERT_EQ(p.st, GALLOC_OK) << p.err;
    EXPECT_EQ(p.c.max_split_size, 15 * kMiB);
    p = parse("large_segment_size_mb:12,max_non_split_rounding_mb:12,max_split_size_mb:12");
    ASSERT_EQ(p.st, GALLOC_OK) << p.err;
    EXPECT_EQ(p.c.max_non_split_rounding_size, 12 * kMiB);
    p = parse("max_non_split_rounding_mb:30,large_segment_size_mb:31");
    EXPECT_EQ(p.err, "max_non_split_rounding_mb: expected a whole number of MiB >= 31 (large_segment_size_mb), got "
                     "\"30\" (offset 26)");
}

TEST(ConfLoad, PrecedenceAndNoResetBetweenSources)
{
    ga_conf_t c;
    char err[512];
    ASSERT_EQ(ga_conf_load(&c, "max_split_size_mb:512", "max_split_size_mb:256,expandable_segments:True",
                           "max_split_size_mb:128,garbage_collection_threshold:0.6", nullptr, err, sizeof(err)),
              GALLOC_OK)
        << err;
    EXPECT_EQ(c.max_split_size, 512 * kMiB); // create string > GALLOC_CONF > PyTorch variable
    EXPECT_TRUE(c.expandable_segments);
    EXPECT_EQ(c.garbage_collection_threshold, 0.6); // no PyTorch reset between layers
    EXPECT_EQ(format(c), "max_split_size_mb:512,garbage_collection_threshold:0.6,expandable_segments:True");
    // Only the first PyTorch variable that is set is read; PYTORCH_ALLOC_CONF comes first, even when empty.
    ASSERT_EQ(ga_conf_load(&c, nullptr, nullptr, "expandable_segments:True", "max_split_size_mb:64", err, 512),
              GALLOC_OK);
    EXPECT_EQ(format(c), "expandable_segments:True");
    ASSERT_EQ(ga_conf_load(&c, nullptr, nullptr, "", "max_split_size_mb:64", err, 512), GALLOC_OK);
    EXPECT_EQ(format(c), "");
    ASSERT_EQ(ga_conf_load(&c, nullptr, nullptr, nullptr, "max_split_size_mb:64", err, 512), GALLOC_OK);
    EXPECT_EQ(format(c), "max_split_size_mb:64");
    // The result starts from the defaults, not from *c.
    ASSERT_EQ(ga_conf_load(&c, nullptr, nullptr, nullptr, nullptr, err, 512), GALLOC_OK);
    EXPECT_EQ(format(c), "");
    // A later layer naming a list replaces it; one naming large_segment_size_mb moves an unnamed max_non_split.
    ASSERT_EQ(ga_conf_load(&c, "large_segment_size_mb:32", "roundup_power2_divisions:[>:2]",
                           "roundup_power2_divisions:[64:8]", nullptr, err, 512),
              GALLOC_OK);
    EXPECT_EQ(divs(c), (std::vector<uint32_t>{0, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2}));
    EXPECT_EQ(c.max_non_split_rounding_size, 32 * kMiB);
    ASSERT_EQ(ga_conf_load(&c, "large_segment_size_mb:32", nullptr, "max_non_split_rounding_mb:64", nullptr, err, 512),
              GALLOC_OK);
    EXPECT_EQ(c.max_non_split_rounding_size, 64 * kMiB);
    // Errors name the source.
    const struct {
        const char *create, *galloc, *alloc, *cuda, *msg;
    } bad[] = {
        {nullptr, "max_split_size_mb:1", nullptr, nullptr,
         "GALLOC_CONF: max_split_size_mb: expected a whole number of MiB >= 20, got \"1\" (offset 18)"},
        {"expandable_segments:1", nullptr, nullptr, nullptr,
         "create string: expandable_segments: expected True or False, got \"1\" (offset 20)"},
        {nullptr, nullptr, "foo:1,max_split_size_mb:x", nullptr,
         "PYTORCH_ALLOC_CONF: max_split_size_mb: expected a whole number of MiB >= 20, got \"x\" (offset 24)"},
        {nullptr, nullptr, nullptr, ",", "PYTORCH_CUDA_ALLOC_CONF: config: expected a key, got \",\" (offset 0)"},
        {nullptr, "large_segment_size_mb:64", "max_split_size_mb:32", nullptr,
         "GALLOC_CONF: large_segment_size_mb: expected a whole number of MiB > 10 and <= max_split_size_mb (32, set "
         "earlier), got \"64\" (offset 22)"},
    };
    for (const auto &k : bad) {
        EXPECT_EQ(ga_conf_load(&c, k.create, k.galloc, k.alloc, k.cuda, err, sizeof(err)), GALLOC_E_CONFIG);
        EXPECT_STREQ(err, k.msg);
    }
}

} // namespace
} // namespace conf_test
