// conf_test_util.h: helpers shared by the conf tests (parse onto defaults,
// format into a string, field-by-field comparison).
#ifndef GA_TESTS_CONF_TEST_UTIL_H
#define GA_TESTS_CONF_TEST_UTIL_H

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

extern "C" {
#include <galloc/galloc_status.h>
#include "conf/conf.h"
}

namespace conf_test {

inline constexpr uint64_t kMiB = 1ull << 20;
inline constexpr uint64_t kGiB = 1ull << 30;

struct Parsed {
    galloc_status_t st;
    ga_conf_t c;
    std::string err;
};

inline Parsed parse(const char *s)
{
    Parsed p;
    char err[512] = "untouched";
    ga_conf_defaults(&p.c);
    p.st = ga_conf_parse(s, &p.c, err, sizeof(err));
    p.err = err;
    return p;
}

inline std::string format(const ga_conf_t &c)
{
    size_t n = ga_conf_format(&c, nullptr, 0);
    std::vector<char> buf(n + 1, 'x');
    EXPECT_EQ(ga_conf_format(&c, buf.data(), buf.size()), n);
    return std::string(buf.data());
}

// The backend options, normalized (whitespace dropped).
inline std::string options(const ga_conf_t &c)
{
    char buf[GALLOC_BACKEND_OPTIONS_MAX];
    ga_conf_options_normalized(&c, buf, sizeof buf);
    return buf;
}

inline std::vector<uint32_t> divs(const ga_conf_t &c)
{
    return std::vector<uint32_t>(c.roundup_power2_divisions, c.roundup_power2_divisions + GA_CONF_DIVISION_INTERVALS);
}

// Field-by-field equality (strings compared up to their NUL), naming the first difference.
inline ::testing::AssertionResult Same(const ga_conf_t &a, const ga_conf_t &b)
{
#define SAME_FIELD(f)                                                                                                  \
    if (!(a.f == b.f))                                                                                                 \
        return ::testing::AssertionFailure() << #f " differs";
    // A list of macro calls, laid out by hand.
    // clang-format off
    SAME_FIELD(backend) SAME_FIELD(max_split_size) SAME_FIELD(max_non_split_rounding_size)
    SAME_FIELD(garbage_collection_threshold) SAME_FIELD(expandable_segments) SAME_FIELD(release_lock_on_cudamalloc)
    SAME_FIELD(pinned_use_cuda_host_register) SAME_FIELD(pinned_num_register_threads)
    SAME_FIELD(pinned_use_background_threads) SAME_FIELD(set) SAME_FIELD(large_segment_size)
    SAME_FIELD(per_process_memory_fraction) SAME_FIELD(retry_pool_after_sync) SAME_FIELD(n_options)
    SAME_FIELD(throw_on_cudamalloc_oom) SAME_FIELD(es_reserve_set) SAME_FIELD(n_reserve_classes)
#undef SAME_FIELD
        // clang-format on
        if (divs(a) != divs(b)) return ::testing::AssertionFailure()
        << "roundup_power2_divisions differ";
    if (a.es_reserve_set && (a.es_reserve.gib != b.es_reserve.gib || a.es_reserve.value != b.es_reserve.value))
        return ::testing::AssertionFailure() << "expandable_segments_reserve differs";
    for (uint32_t i = 0; i < a.n_reserve_classes; i++) {
        const ga_conf_reserve_class_t &x = a.reserve_classes[i], &y = b.reserve_classes[i];
        if (strcmp(x.name, y.name) != 0 || x.reserve.gib != y.reserve.gib || x.reserve.value != y.reserve.value)
            return ::testing::AssertionFailure() << "reserve class " << i << " differs";
    }
    if (strcmp(a.device_backend, b.device_backend) != 0)
        return ::testing::AssertionFailure() << "device_backend differs";
    if (options(a) != options(b)) // as the backend reads them: whitespace aside
        return ::testing::AssertionFailure() << "backend options differ: " << options(a) << " vs " << options(b);
    return ::testing::AssertionSuccess();
}

} // namespace conf_test

#endif // GA_TESTS_CONF_TEST_UTIL_H
