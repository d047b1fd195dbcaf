// conf_errors_test: the config grammar's refusals: exact messages naming the
// key, the value and its offset for every key's invalid values, all or
// nothing (a refused string changes nothing), NULL arguments and buffers too
// small for the message.
#include "tests/conf/conf_test_util.h"

namespace conf_test {
namespace {

TEST(ConfErrors, ExactMessagesNameKeyValueAndOffset)
{
    const std::string long_num(10000, '9');
    const struct {
        std::string s, msg;
    } cases[] = {
        {"max_split_size_mb:19", "max_split_size_mb: expected a whole number of MiB >= 20, got \"19\" (offset 18)"},
        {"max_split_size_mb:abc", "max_split_size_mb: expected a whole number of MiB >= 20, got \"abc\" (offset 18)"},
        // std::stoull stops at the '.': PyTorch reads 1 and refuses it.
        {"max_split_size_mb:1.5e3",
         "max_split_size_mb: expected a whole number of MiB >= 20, got \"1.5e3\" (read as 1) (offset 18)"},
        {"max_split_size_mb:0x400", "max_split_size_mb: expected a whole number of MiB >= 20, got \"0x400\" "
                                    "(offset 18)"},
        {"max_split_size_mb:-", "max_split_size_mb: expected a whole number of MiB >= 20, got \"-\" (offset 18)"},
        {"max_split_size_mb:99999999999999999999999", "max_split_size_mb: expected a whole number of MiB >= 20 (this "
                                                      "one does not fit in 64 bits), got \"99999999999999999999999\" "
                                                      "(offset 18)"},
        {"max_split_size_mb:" + long_num, "max_split_size_mb: expected a whole number of MiB >= 20 (this one does not "
                                          "fit in 64 bits), got \"" +
                                              std::string(48, '9') + "...\" (offset 18)"},
        {"   max_split_size_mb : 5 x",
         "max_split_size_mb: expected a whole number of MiB >= 20, got \"5 x\" (read as 5) (offset 23)"},
        {"max_split_size_mb:\x01\"\\", "max_split_size_mb: expected a whole number of MiB >= 20, got "
                                       "\"\\x01\\x22\\x5c\" (offset 18)"},
        {"max_split_size_mb:", "max_split_size_mb: expected a value after ':', got the end of the string (offset 18)"},
        {"max_split_size_mb", "max_split_size_mb: expected ':' after the key, got the end of the string (offset 17)"},
        {"max_split_size_mb,512", "max_split_size_mb: expected ':' after the key, got \",\" (offset 17)"},
        {"max_split_size_mb:512:", "max_split_size_mb: expected ',' or the end of the string after the value, got "
                                   "\":\" (offset 21)"},
        {"max_split_size_mb:[512]", "max_split_size_mb: expected a value after ':', got \"[\" (offset 18)"},
        {"max_non_split_rounding_mb:19", "max_non_split_rounding_mb: expected a whole number of MiB >= 20, got \"19\" "
                                         "(offset 26)"},
        {"large_segment_size_mb:10",
         "large_segment_size_mb: expected a whole number of MiB > 10, got \"10\" (offset 22)"},
        {"max_split_size_mb:20,large_segment_size_mb:25", "max_split_size_mb: expected a whole number of MiB >= 25 "
                                                          "(large_segment_size_mb), got \"20\" (offset 18)"},
        {"garbage_collection_threshold:0", "garbage_collection_threshold: expected a number in (0.0, 1.0), both ends "
                                           "excluded, got \"0\" (offset 29)"},
        {"garbage_collection_threshold:1", "garbage_collection_threshold: expected a number in (0.0, 1.0), both ends "
                                           "excluded, got \"1\" (offset 29)"},
        {"garbage_collection_threshold:abc", "garbage_collection_threshold: expected a number in (0.0, 1.0), both "
                                             "ends excluded, got \"abc\" (offset 29)"},
        {"garbage_collection_threshold:1.0x", "garbage_collection_threshold: expected a number in (0.0, 1.0), both "
                                              "ends excluded, got \"1.0x\" (offset 29)"},
        {"garbage_collection_threshold:0x0.8p0", "garbage_collection_threshold: expected a number in (0.0, 1.0), "
                                                 "both ends excluded, got \"0x0.8p0\" (offset 29)"},
        {"garbage_collection_threshold:nan", "garbage_collection_threshold: expected a number in (0.0, 1.0), both "
                                             "ends excluded, got \"nan\" (offset 29)"},
        {"garbage_collection_threshold:-0.5", "garbage_collection_threshold: expected a number in (0.0, 1.0), both "
                                              "ends excluded, got \"-0.5\" (offset 29)"},
        {"garbage_collection_threshold:1e-400", "garbage_collection_threshold: expected a number in (0.0, 1.0), both "
                                                "ends excluded, got \"1e-400\" (offset 29)"},
        {"per_process_memory_fraction:1.5", "per_process_memory_fraction: expected a number in [0.0, 1.0], got "
                                            "\"1.5\" (offset 28)"},
        {"roundup_power2_divisions:3", "roundup_power2_divisions: expected a power of two from 1 to 2147483648, or a "
                                       "list such as [256:1,512:2,1024:4,>:8], got \"3\" (offset 25)"},
        {"roundup_power2_divisions:0", "roundup_power2_divisions: expected a power of two from 1 to 2147483648, or a "
                                       "list such as [256:1,512:2,1024:4,>:8], got \"0\" (offset 25)"},
        {"roundup_power2_divisions:4294967296", "roundup_power2_divisions: expected a power of two from 1 to "
                                                "2147483648, or a list such as [256:1,512:2,1024:4,>:8], got "
                                                "\"4294967296\" (offset 25)"},
        {"roundup_power2_divisions:[256:3]", "roundup_power2_divisions: expected 0 or a power of two up to 2147483648 "
                                             "(divisions), got \"3\" (offset 30)"},
        {"roundup_power2_divisions:[3:4]", "roundup_power2_divisions: expected an interval: a power of two in MiB, or "
                                           "'>', got \"3\" (offset 26)"},
        {"roundup_power2_divisions:[0:4]", "roundup_power2_divisions: expected an interval: a power of two in MiB, or "
                                           "'>', got \"0\" (offset 26)"},
        {"roundup_power2_divisions:[256 1]", "roundup_power2_divisions: expected an interval: a power of two in MiB, "
                                             "or '>', got \"256 1\" (offset 26)"},
        {"roundup_power2_divisions:[256]", "roundup_power2_divisions: expected ':' after the interval, got \"]\" "
                                           "(offset 29)"},
        {"roundup_power2_divisions:[256:1", "roundup_power2_divisions: expected ',' or ']' after the entry, got the "
                                            "end of the string (offset 31)"},
        {"roundup_power2_divisions:[256:1,", "roundup_power2_divisions: expected an interval (a power of two in MiB, "
                                             "or '>') or ']', got the end of the string (offset 32)"},
        {"roundup_power2_divisions:[[256:1]]", "roundup_power2_divisions: expected an interval (a power of two in "
                                               "MiB, or '>') or ']', got \"[\" (offset 26)"},
        {"expandable_segments:true", "expandable_segments: expected True or False, got \"true\" (offset 20)"},
        {"expandable_segments:TRUE", "expandable_segments: expected True or False, got \"TRUE\" (offset 20)"},
        {"expandable_segments:1", "expandable_segments: expected True or False, got \"1\" (offset 20)"},
        {"release_lock_on_cudamalloc:yes",
         "release_lock_on_cudamalloc: expected True or False, got \"yes\" (offset 27)"},
        {"release_lock_on_hipmalloc:no", "release_lock_on_hipmalloc: expected True or False, got \"no\" (offset 26)"},
        {"pinned_use_cuda_host_register:x",
         "pinned_use_cuda_host_register: expected True or False, got \"x\" (offset 30)"},
        {"pinned_use_background_threads:0",
         "pinned_use_background_threads: expected True or False, got \"0\" (offset 30)"},
        {"pinned_num_register_threads:3", "pinned_num_register_threads: expected a power of two from 1 to 128, got "
                                          "\"3\" (offset 28)"},
        {"pinned_num_register_threads:256", "pinned_num_register_threads: expected a power of two from 1 to 128, got "
                                            "\"256\" (offset 28)"},
        {"pinned_num_register_threads:0", "pinned_num_register_threads: expected a power of two from 1 to 128, got "
                                          "\"0\" (offset 28)"},
        {"pinned_reserve_segment_size_mb:0", "pinned_reserve_segment_size_mb: expected a whole number of MiB > 0, got "
                                             "\"0\" (offset 31)"},
        // PR #171662's caps take any whole number (std::stoull), nothing else.
        {"pinned_max_round_threshold_mb:abc", "pinned_max_round_threshold_mb: expected a whole number of MiB, got "
                                              "\"abc\" (offset 30)"},
        {"pinned_max_cached_size_mb:", "pinned_max_cached_size_mb: expected a value after ':', got the end of the "
                                       "string (offset 26)"},
        {"pinned_max_cached_size_mb:0x10", "pinned_max_cached_size_mb: expected a whole number of MiB, got \"0x10\" "
                                           "(offset 26)"},
        {"pinned_max_cached_size_mb:99999999999999999999", "pinned_max_cached_size_mb: expected a whole number of "
                                                           "MiB (this one does not fit in 64 bits), got "
                                                           "\"99999999999999999999\" (offset 26)"},
        {"graph_capture_record_stream_reuse:maybe", "graph_capture_record_stream_reuse: expected True or False, got "
                                                    "\"maybe\" (offset 34)"},
        {"backend:cudamallocasync", "backend: expected native, cudaMallocAsync or hipMallocAsync, got "
                                    "\"cudamallocasync\" (offset 8)"},
        {",expandable_segments:True", "config: expected a key, got \",\" (offset 0)"},
        {"expandable_segments:True,,max_split_size_mb:512", "config: expected a key, got \",\" (offset 25)"},
        {":", "config: expected a key, got \":\" (offset 0)"},
        {"device_backend:si-m", "device_backend: expected a backend name of 1 to 31 letters, digits or '_', got "
                                "\"si-m\" (offset 15)"},
        {"device_backend:" + std::string(32, 'a'), "device_backend: expected a backend name of 1 to 31 letters, "
                                                   "digits or '_', got \"" +
                                                       std::string(32, 'a') + "\" (offset 15)"},
        {"retry_pool_after_sync:true", "retry_pool_after_sync: expected True or False, got \"true\" (offset 22)"},
    };
    for (const auto &k : cases) {
        SCOPED_TRACE(k.s.substr(0, 80));
        Parsed p = parse(k.s.c_str());
        EXPECT_EQ(p.st, GALLOC_E_CONFIG);
        EXPECT_EQ(p.err, k.msg);
    }
}

TEST(ConfErrors, AllOrNothing)
{
    Parsed p = parse("expandable_segments:True,max_split_size_mb:512,roundup_power2_divisions:4,sim_capacity:1GiB");
    ASSERT_EQ(p.st, GALLOC_OK) << p.err;
    ga_conf_t before = p.c;
    char err[256];
    // The valid prefix (and the per-parse resets) must not leak into the settings.
    EXPECT_EQ(
        ga_conf_parse("expandable_segments:False,device_backend:cuda,max_split_size_mb:abc", &p.c, err, sizeof(err)),
        GALLOC_E_CONFIG);
    EXPECT_EQ(memcmp(&before, &p.c, sizeof(before)), 0);
    EXPECT_EQ(ga_conf_load(&p.c, "expandable_segments:False,sim_capacity:0", "max_split_size_mb:0", nullptr, nullptr,
                           err, sizeof(err)),
              GALLOC_E_CONFIG);
    EXPECT_EQ(memcmp(&before, &p.c, sizeof(before)), 0);
}

TEST(ConfErrors, NullArgumentsAndSmallBuffers)
{
    ga_conf_t c;
    ga_conf_defaults(&c);
    char err[16] = "untouched";
    EXPECT_EQ(ga_conf_parse("x", nullptr, err, sizeof(err)), GALLOC_E_INVAL);
    EXPECT_STREQ(err, "ga_conf_parse: ");
    EXPECT_EQ(ga_conf_load(nullptr, nullptr, nullptr, nullptr, nullptr, err, sizeof(err)), GALLOC_E_INVAL);
    EXPECT_EQ(ga_conf_parse("expandable_segments:1", &c, nullptr, 0), GALLOC_E_CONFIG);
    EXPECT_EQ(ga_conf_parse("expandable_segments:1", &c, err, 1), GALLOC_E_CONFIG);
    EXPECT_STREQ(err, "");
    EXPECT_EQ(ga_conf_parse("expandable_segments:1", &c, err, 12), GALLOC_E_CONFIG);
    EXPECT_STREQ(err, "expandable_");
    EXPECT_EQ(ga_conf_parse("expandable_segments:True", &c, err, sizeof(err)), GALLOC_OK);
    EXPECT_STREQ(err, ""); // success clears a previous message
}

} // namespace
} // namespace conf_test
