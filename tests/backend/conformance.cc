// conformance.cc: the backend-independent checks (see conformance.h).
#include "tests/backend/conformance.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

extern "C" {
#include <galloc/galloc_status.h>
#include "backend/backend.h"
}

namespace {

constexpr size_t kMiB = size_t{1} << 20;

// Closes the backend however the checks end (an ASSERT returns early).
struct Closer {
    ga_backend_t *b;
    ~Closer() { ga_backend_close(b); }
};

std::string last_error(ga_backend_t *b)
{
    char buf[512];
    ga_backend_error_string(b, buf, sizeof(buf));
    return buf;
}

void check_segments(ga_backend_t *b)
{
    size_t free0 = 0, total = 0;
    ASSERT_EQ(ga_backend_mem_info(b, &free0, &total), GALLOC_OK);
    ASSERT_GT(total, 0u);
    ASSERT_LE(free0, total);
    ASSERT_GE(free0, 22 * kMiB) << "the device needs 22 MiB free for the checks";

    uintptr_t small = 0, large = 0;
    ASSERT_EQ(ga_backend_segment_alloc(b, 2 * kMiB, 0, &small), GALLOC_OK) << last_error(b);
    ASSERT_EQ(ga_backend_segment_alloc(b, 20 * kMiB, 0, &large), GALLOC_OK) << last_error(b);
    EXPECT_NE(small, 0u);
    EXPECT_EQ(small % 512, 0u); // PyTorch's block rounding assumes at least 512-byte alignment
    EXPECT_EQ(large % 512, 0u);
    EXPECT_TRUE(small + 2 * kMiB <= large || large + 20 * kMiB <= small) << "segments overlap";

    size_t free1 = 0;
    ASSERT_EQ(ga_backend_mem_info(b, &free1, &total), GALLOC_OK);
    EXPECT_LE(free1, free0 - 22 * kMiB);

    EXPECT_EQ(ga_backend_segment_free(b, large, 20 * kMiB, 0), GALLOC_OK) << last_error(b);
    EXPECT_EQ(ga_backend_segment_free(b, small, 2 * kMiB, 0), GALLOC_OK) << last_error(b);
    EXPECT_NE(ga_backend_segment_free(b, small, 2 * kMiB, 0), GALLOC_OK) << "a double free must be refused";

    // More than the whole device is out of memory (so the pool frees cache and
    // retries), never another failure.
    uintptr_t huge = 0;
    EXPECT_EQ(ga_backend_segment_alloc(b, total + 2 * kMiB, 0, &huge), GALLOC_E_OOM);
    EXPECT_FALSE(last_error(b).empty());
}

void check_virtual_memory(ga_backend_t *b)
{
    size_t g = 0;
    galloc_status_t st = ga_backend_granularity(b, &g);
    if (st == GALLOC_E_UNSUPPORTED)
        return;
    ASSERT_EQ(st, GALLOC_OK);
    ASSERT_GT(g, 0u);
    uintptr_t base = 0;
    ASSERT_EQ(ga_backend_va_reserve(b, 4 * g, &base), GALLOC_OK) << last_error(b);
    EXPECT_EQ(base % g, 0u);
    size_t free0 = 0, free1 = 0, total = 0;
    ASSERT_EQ(ga_backend_mem_info(b, &free0, &total), GALLOC_OK);
    ASSERT_EQ(ga_backend_map(b, base + g, 2 * g), GALLOC_OK) << last_error(b);
    ASSERT_EQ(ga_backend_mem_info(b, &free1, &total), GALLOC_OK);
    EXPECT_LE(free1, free0 - 2 * g);
    EXPECT_EQ(ga_backend_unmap(b, base + g, 2 * g), GALLOC_OK) << last_error(b);
    EXPECT_EQ(ga_backend_va_release(b, base, 4 * g), GALLOC_OK) << last_error(b);
}

void check_events(ga_backend_t *b)
{
    uintptr_t e = 0;
    galloc_status_t st = ga_backend_event_create(b, &e);
    if (st == GALLOC_E_UNSUPPORTED)
        return;
    ASSERT_EQ(st, GALLOC_OK) << last_error(b);
    EXPECT_EQ(ga_backend_event_record(b, e, 0), GALLOC_OK);
    EXPECT_EQ(ga_backend_event_synchronize(b, e), GALLOC_OK);
    EXPECT_EQ(ga_backend_event_query(b, e), GALLOC_OK) << "an event waited for is complete";
    EXPECT_EQ(ga_backend_event_destroy(b, e), GALLOC_OK);
}

// A pattern that differs at every offset of a page (and from any fill byte).
std::vector<unsigned char> pattern(size_t n, unsigned seed)
{
    std::vector<unsigned char> v(n);
    for (size_t i = 0; i < n; i++)
        v[i] = (unsigned char)((i * 131 + seed) ^ (i >> 12));
    return v;
}

// Host -> device -> host through pinned memory: the bytes come back exact.
void round_trip(ga_backend_t *b, void *h, uintptr_t dev, size_t n, unsigned seed, bool holds_bytes)
{
    std::vector<unsigned char> want = pattern(n, seed);
    std::memcpy(h, want.data(), n);
    ASSERT_EQ(ga_backend_copy_h2d(b, dev, h, n), GALLOC_OK) << last_error(b);
    std::memset(h, 0, n);
    ASSERT_EQ(ga_backend_copy_d2h(b, h, dev, n), GALLOC_OK) << last_error(b);
    if (holds_bytes) {
        EXPECT_EQ(std::memcmp(h, want.data(), n), 0) << "the bytes copied back differ";
    }
    // A part from the middle into the middle: offsets are honoured both ways.
    std::vector<unsigned char> part(1000, 0);
    ASSERT_EQ(ga_backend_copy_d2h(b, part.data(), dev + 777, part.size()), GALLOC_OK) << last_error(b);
    if (holds_bytes) {
        EXPECT_EQ(std::memcmp(part.data(), want.data() + 777, part.size()), 0);
    }
    // From pageable memory too (a framework's own buffer).
    std::vector<unsigned char> other = pattern(n, seed + 1);
    ASSERT_EQ(ga_backend_copy_h2d(b, dev, other.data(), n), GALLOC_OK) << last_error(b);
    ASSERT_EQ(ga_backend_copy_d2h(b, h, dev, n), GALLOC_OK) << last_error(b);
    if (holds_bytes) {
        EXPECT_EQ(std::memcmp(h, other.data(), n), 0);
    }
}

void check_host_memory(ga_backend_t *b, bool holds_bytes)
{
    if (!ga_backend_can_offload(b))
        return;
    void *h = nullptr;
    EXPECT_EQ(ga_backend_host_alloc(b, 0, &h), GALLOC_E_INVAL) << "a zero-byte block is refused";
    const size_t n = 3 * kMiB + 17; // not a page multiple
    galloc_status_t st = ga_backend_host_alloc(b, n, &h);
    if (st == GALLOC_E_UNSUPPORTED) { // the library lacks the feature: the backend says which
        EXPECT_FALSE(last_error(b).empty());
        return;
    }
    ASSERT_EQ(st, GALLOC_OK) << last_error(b);
    ASSERT_NE(h, nullptr);
    uintptr_t seg = 0;
    EXPECT_EQ(ga_backend_segment_alloc(b, 4 * kMiB, 0, &seg), GALLOC_OK) << last_error(b);
    if (seg != 0) {
        SCOPED_TRACE("a segment");
        round_trip(b, h, seg + 512, n, 7, holds_bytes);
        EXPECT_EQ(ga_backend_segment_free(b, seg, 4 * kMiB, 0), GALLOC_OK) << last_error(b);
    }
    size_t g = 0;
    if (ga_backend_granularity(b, &g) == GALLOC_OK) {
        SCOPED_TRACE("a mapped range");
        uintptr_t base = 0;
        size_t len = (n + g - 1) / g * g;
        ASSERT_EQ(ga_backend_va_reserve(b, len + g, &base), GALLOC_OK) << last_error(b);
        ASSERT_EQ(ga_backend_map(b, base + g, len), GALLOC_OK) << last_error(b);
        round_trip(b, h, base + g, n, 11, holds_bytes);
        EXPECT_EQ(ga_backend_unmap(b, base + g, len), GALLOC_OK) << last_error(b);
        EXPECT_EQ(ga_backend_va_release(b, base, len + g), GALLOC_OK) << last_error(b);
    }
    EXPECT_EQ(ga_backend_copy_d2h(b, nullptr, seg, 1), GALLOC_E_INVAL);
    EXPECT_EQ(ga_backend_host_free(b, h, n + 1), GALLOC_E_INVAL) << "a wrong size must be refused";
    EXPECT_EQ(ga_backend_host_free(b, h, n), GALLOC_OK) << last_error(b);
    EXPECT_EQ(ga_backend_host_free(b, h, n), GALLOC_E_INVAL) << "a double free must be refused";
    EXPECT_FALSE(last_error(b).empty());
}

} // namespace

void ga_test_backend_conformance(const char *name, const galloc_backend_args_t &args, bool holds_bytes)
{
    ga_backend_t b = {};
    char err[512] = "";
    galloc_status_t st = ga_backend_open(&b, name, &args, err, sizeof(err));
    if (st == GALLOC_E_UNAVAILABLE)
        GTEST_SKIP() << err;
    ASSERT_EQ(st, GALLOC_OK) << err;
    Closer closer{&b};
    ASSERT_NE(b.ops, nullptr);
    EXPECT_STREQ(b.ops->name, name);
    {
        SCOPED_TRACE("segments");
        check_segments(&b);
    }
    {
        SCOPED_TRACE("virtual memory");
        check_virtual_memory(&b);
    }
    {
        SCOPED_TRACE("events");
        check_events(&b);
    }
    {
        SCOPED_TRACE("pinned host memory and copies");
        check_host_memory(&b, holds_bytes);
    }
}
