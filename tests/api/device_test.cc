// device_test: the process-wide device registry (galloc_device.h) from one
// thread: lazy creation, torch.accelerator-style figures with exact values,
// configuration and its precedence, and bad inputs. Threads: device_concurrency_test.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

extern "C" {
#include <galloc/galloc.h>
}

namespace {

constexpr int64_t MiB = 1 << 20;

std::string registry_error()
{
    char buf[GALLOC_ERROR_MAX];
    galloc_devices_last_error(buf, sizeof buf);
    return buf;
}

class Device : public ::testing::Test {
  protected:
    void SetUp() override { galloc_devices_shutdown(); }
    void TearDown() override
    {
        for (int d = 0; d < GALLOC_DEVICE_MAX; d++) {
            galloc_allocator_t *a = nullptr;
            if (galloc_device_is_initialized(d)) {
                ASSERT_EQ(galloc_device_get(d, &a), GALLOC_OK);
                EXPECT_EQ(galloc_check(a), GALLOC_OK) << "device " << d;
            }
        }
        galloc_devices_shutdown();
    }
    int64_t figure(galloc_status_t (*fn)(int, int64_t *), int device)
    {
        int64_t v = -1;
        EXPECT_EQ(fn(device, &v), GALLOC_OK);
        return v;
    }
};

TEST_F(Device, CreatedOnFirstUseAndThenTheSame)
{
    EXPECT_FALSE(galloc_device_is_initialized(0));
    galloc_allocator_t *a = nullptr, *b = nullptr;
    ASSERT_EQ(galloc_device_get(0, &a), GALLOC_OK);
    ASSERT_NE(a, nullptr);
    EXPECT_TRUE(galloc_device_is_initialized(0));
    EXPECT_FALSE(galloc_device_is_initialized(1));
    ASSERT_EQ(galloc_device_get(0, &b), GALLOC_OK);
    EXPECT_EQ(a, b);
    EXPECT_STREQ(galloc_allocator_backend(a), "sim"); // the default device_backend
}

TEST_F(Device, FiguresAreTorchAcceleratorsWithExactValues)
{
    void *p = nullptr;
    ASSERT_EQ(galloc_device_malloc(0, 1, 0, &p), GALLOC_OK);
    ASSERT_NE(p, nullptr);
    // One byte: a 512-byte block in a 2 MiB small-pool segment, as PyTorch.
    EXPECT_EQ(figure(galloc_device_memory_allocated, 0), 512);
    EXPECT_EQ(figure(galloc_device_max_memory_allocated, 0), 512);
    EXPECT_EQ(figure(galloc_device_memory_reserved, 0), 2 * MiB);
    EXPECT_EQ(figure(galloc_device_max_memory_reserved, 0), 2 * MiB);
    galloc_stats_t s;
    s.struct_size = sizeof s;
    ASSERT_EQ(galloc_device_memory_stats(0, &s), GALLOC_OK);
    EXPECT_EQ(s.requested_bytes[GALLOC_STAT_ALL].current, 1);
    EXPECT_EQ(s.allocation[GALLOC_STAT_SMALL_POOL].current, 1);
    EXPECT_EQ(s.num_device_alloc, 1);

    ASSERT_EQ(galloc_device_free(0, p), GALLOC_OK);
    EXPECT_EQ(figure(galloc_device_memory_allocated, 0), 0);
    EXPECT_EQ(figure(galloc_device_max_memory_allocated, 0), 512);
    EXPECT_EQ(figure(galloc_device_memory_reserved, 0), 2 * MiB); // cached
    ASSERT_EQ(galloc_device_reset_peak_memory_stats(0), GALLOC_OK);
    EXPECT_EQ(figure(galloc_device_max_memory_allocated, 0), 0);
    EXPECT_EQ(figure(galloc_device_max_memory_reserved, 0), 2 * MiB);
    ASSERT_EQ(galloc_device_empty_cache(0), GALLOC_OK);
    EXPECT_EQ(figure(galloc_device_memory_reserved, 0), 0);
    EXPECT_EQ(figure(galloc_device_max_memory_reserved, 0), 2 * MiB);
    ASSERT_EQ(galloc_device_memory_stats(0, &s), GALLOC_OK);
    EXPECT_EQ(s.num_device_free, 1);
    EXPECT_EQ(s.num_sync_all_streams, 1);
    ASSERT_EQ(galloc_device_reset_accumulated_memory_stats(0), GALLOC_OK);
    ASSERT_EQ(galloc_device_memory_stats(0, &s), GALLOC_OK);
    EXPECT_EQ(s.allocated_bytes[GALLOC_STAT_ALL].allocated, 0);
    EXPECT_EQ(s.num_device_alloc, 0);
    EXPECT_EQ(s.num_sync_all_streams, 0);
    EXPECT_EQ(s.reserved_bytes[GALLOC_STAT_ALL].peak, 2 * MiB); // resets are separate
}

TEST_F(Device, DevicesHaveTheirOwnAllocators)
{
    void *p0 = nullptr, *first3 = nullptr, *p3 = nullptr;
    ASSERT_EQ(galloc_device_malloc(0, 5 * MiB, 0, &p0), GALLOC_OK);
    ASSERT_EQ(galloc_device_malloc(3, 1000, 0, &first3), GALLOC_OK);
    ASSERT_EQ(galloc_device_malloc(3, 1000, 0, &p3), GALLOC_OK);
    EXPECT_EQ(figure(galloc_device_memory_allocated, 0), 5 * MiB);
    EXPECT_EQ(figure(galloc_device_memory_reserved, 0), 20 * MiB); // kLargeBuffer for 1-10 MiB
    EXPECT_EQ(figure(galloc_device_memory_allocated, 3), 2048);
    EXPECT_EQ(figure(galloc_device_memory_reserved, 3), 2 * MiB);
    EXPECT_FALSE(galloc_device_is_initialized(1));
    // A pointer belongs to its device only (CrossDeviceFreeIsRefused has the
    // figures): device 3's block is no block of device 0.
    EXPECT_EQ(galloc_device_free(0, p3), GALLOC_E_NOT_OWNED);
    galloc_allocator_t *a0 = nullptr;
    ASSERT_EQ(galloc_device_get(0, &a0), GALLOC_OK);
    char msg[GALLOC_ERROR_MAX];
    EXPECT_EQ(galloc_last_error(a0, msg, sizeof msg), GALLOC_E_NOT_OWNED);
    EXPECT_EQ(figure(galloc_device_memory_allocated, 0), 5 * MiB); // the refused free changed nothing
    EXPECT_EQ(galloc_device_free(0, p0), GALLOC_OK);
    EXPECT_EQ(galloc_device_free(3, p3), GALLOC_OK);
    EXPECT_EQ(galloc_device_free(3, first3), GALLOC_OK);
    EXPECT_EQ(galloc_device_free(3, nullptr), GALLOC_OK);
    EXPECT_EQ(figure(galloc_device_memory_allocated, 3), 0);
}

galloc_stats_t StatsOf(int device)
{
    galloc_stats_t s;
    std::memset(&s, 0, sizeof s); // padding too, so memcmp compares values only
    s.struct_size = sizeof s;
    EXPECT_EQ(galloc_device_memory_stats(device, &s), GALLOC_OK);
    return s;
}

// Devices hand out disjoint addresses (as CUDA's unified addressing does), so
// no pointer of one device is ever a block of another by value: equal
// pointers would let a free on the wrong device release someone else's block.
TEST_F(Device, DevicesNeverReturnOverlappingRanges)
{
    struct Range {
        uintptr_t lo, hi;
        int device;
    };
    std::vector<Range> ranges;
    std::vector<std::pair<int, void *>> live;
    for (int round = 0; round < 3; round++)
        for (int d : {0, 1, 2, GALLOC_DEVICE_MAX - 1})
            for (size_t n : {size_t(1), size_t(512), size_t(3 * MiB), size_t(25 * MiB)}) {
                void *p = nullptr;
                ASSERT_EQ(galloc_device_malloc(d, n, 0, &p), GALLOC_OK);
                ranges.push_back({reinterpret_cast<uintptr_t>(p), reinterpret_cast<uintptr_t>(p) + n, d});
                live.push_back({d, p});
            }
    for (size_t i = 0; i < ranges.size(); i++)
        for (size_t j = i + 1; j < ranges.size(); j++)
            EXPECT_TRUE(ranges[i].hi <= ranges[j].lo || ranges[j].hi <= ranges[i].lo)
                << "device " << ranges[i].device << " and device " << ranges[j].device << " overlap";
    for (auto &e : live)
        EXPECT_EQ(galloc_device_free(e.first, e.second), GALLOC_OK);
}

// The same shapes of calls on devices 0 and 1 would give equal pointers if the
// devices shared an address range: each free on the wrong device is refused
// with GALLOC_E_NOT_OWNED and a message, and touches neither device.
TEST_F(Device, CrossDeviceFreeIsRefused)
{
    void *p0 = nullptr, *p1 = nullptr, *q0 = nullptr, *q1 = nullptr;
    ASSERT_EQ(galloc_device_malloc(0, 1000, 0, &p0), GALLOC_OK);
    ASSERT_EQ(galloc_device_malloc(1, 1000, 0, &p1), GALLOC_OK);
    ASSERT_EQ(galloc_device_malloc(0, 5 * MiB, 0, &q0), GALLOC_OK);
    ASSERT_EQ(galloc_device_malloc(1, 5 * MiB, 0, &q1), GALLOC_OK);
    EXPECT_NE(p0, p1);
    EXPECT_NE(q0, q1);
    galloc_allocator_t *a0 = nullptr, *a1 = nullptr;
    ASSERT_EQ(galloc_device_get(0, &a0), GALLOC_OK);
    ASSERT_EQ(galloc_device_get(1, &a1), GALLOC_OK);
    const galloc_stats_t s0 = StatsOf(0), s1 = StatsOf(1);

    char msg[GALLOC_ERROR_MAX];
    EXPECT_EQ(galloc_device_free(1, p0), GALLOC_E_NOT_OWNED);
    EXPECT_EQ(galloc_last_error(a1, msg, sizeof msg), GALLOC_E_NOT_OWNED);
    EXPECT_NE(std::string(msg).find("not allocated by this allocator"), std::string::npos) << msg;
    EXPECT_EQ(galloc_device_free(0, p1), GALLOC_E_NOT_OWNED);
    EXPECT_EQ(galloc_last_error(a0, msg, sizeof msg), GALLOC_E_NOT_OWNED);
    EXPECT_NE(std::string(msg).find("not allocated by this allocator"), std::string::npos) << msg;
    EXPECT_EQ(galloc_free(a0, q1), GALLOC_E_NOT_OWNED); // the same through the allocator itself
    EXPECT_EQ(galloc_free(a1, q0), GALLOC_E_NOT_OWNED);
    EXPECT_EQ(galloc_record_stream(a1, q0, 1), GALLOC_E_NOT_OWNED);

    const galloc_stats_t t0 = StatsOf(0), t1 = StatsOf(1);
    EXPECT_EQ(std::memcmp(&s0, &t0, sizeof s0), 0) << "a refused free changed device 0's stats";
    EXPECT_EQ(std::memcmp(&s1, &t1, sizeof s1), 0) << "a refused free changed device 1's stats";
    EXPECT_EQ(t0.allocated_bytes[GALLOC_STAT_ALL].current, 1024 + 5 * MiB);
    EXPECT_EQ(t1.allocated_bytes[GALLOC_STAT_ALL].current, 1024 + 5 * MiB);
    EXPECT_EQ(galloc_check(a0), GALLOC_OK);
    EXPECT_EQ(galloc_check(a1), GALLOC_OK);
    // Each device still frees its own, once.
    EXPECT_EQ(galloc_device_free(0, p0), GALLOC_OK);
    EXPECT_EQ(galloc_device_free(0, q0), GALLOC_OK);
    EXPECT_EQ(galloc_device_free(1, p1), GALLOC_OK);
    EXPECT_EQ(galloc_device_free(1, q1), GALLOC_OK);
    EXPECT_EQ(figure(galloc_device_memory_allocated, 0), 0);
    EXPECT_EQ(figure(galloc_device_memory_allocated, 1), 0);
}

TEST_F(Device, ConfigureBeforeFirstUseOnly)
{
    EXPECT_EQ(galloc_device_configure("max_split_size_mb:lots"), GALLOC_E_CONFIG);
    EXPECT_NE(registry_error().find("max_split_size_mb"), std::string::npos) << registry_error();
    ASSERT_EQ(galloc_device_configure("sim_capacity:1GiB,max_split_size_mb:64"), GALLOC_OK);
    ASSERT_EQ(galloc_device_configure(nullptr), GALLOC_OK); // removes it
    ASSERT_EQ(galloc_device_configure("sim_capacity:1GiB,max_split_size_mb:64"), GALLOC_OK);
    size_t free_b = 0, total = 0;
    ASSERT_EQ(galloc_device_memory_info(2, &free_b, &total), GALLOC_OK); // first use
    EXPECT_EQ(total, size_t(1) << 30);
    galloc_allocator_t *a = nullptr;
    ASSERT_EQ(galloc_device_get(2, &a), GALLOC_OK);
    galloc_settings_t set;
    set.struct_size = sizeof set;
    ASSERT_EQ(galloc_settings_get(a, &set), GALLOC_OK);
    EXPECT_EQ(set.max_split_size, uint64_t(64 * MiB));
    // Too late now: nothing changes, for any device.
    EXPECT_EQ(galloc_device_configure("max_split_size_mb:128"), GALLOC_E_INVAL);
    EXPECT_NE(registry_error().find("already exist"), std::string::npos) << registry_error();
    galloc_stats_t s;
    s.struct_size = sizeof s;
    ASSERT_EQ(galloc_device_memory_stats(5, &s), GALLOC_OK);
    EXPECT_EQ(s.max_split_size, 64 * MiB);
    // Shutdown starts over: configure works again and the old string is gone.
    galloc_devices_shutdown();
    EXPECT_EQ(registry_error(), "");
    ASSERT_EQ(galloc_device_configure("max_split_size_mb:128"), GALLOC_OK);
    ASSERT_EQ(galloc_device_memory_stats(5, &s), GALLOC_OK);
    EXPECT_EQ(s.max_split_size, 128 * MiB);
    ASSERT_EQ(galloc_device_memory_info(5, &free_b, &total), GALLOC_OK);
    EXPECT_EQ(total, size_t(80) << 30); // the default capacity again
}

TEST_F(Device, ConfigureOverridesTheEnvironmentKeyByKey)
{
    ASSERT_EQ(setenv("GALLOC_CONF", "sim_capacity:64MiB,expandable_segments:True", 1), 0);
    ASSERT_EQ(setenv("PYTORCH_CUDA_ALLOC_CONF", "max_split_size_mb:32", 1), 0);
    ASSERT_EQ(galloc_device_configure("sim_capacity:128MiB"), GALLOC_OK);
    galloc_allocator_t *a = nullptr;
    galloc_status_t st = galloc_device_get(0, &a);
    unsetenv("GALLOC_CONF");
    unsetenv("PYTORCH_CUDA_ALLOC_CONF");
    ASSERT_EQ(st, GALLOC_OK) << registry_error();
    galloc_settings_t set;
    set.struct_size = sizeof set;
    ASSERT_EQ(galloc_settings_get(a, &set), GALLOC_OK);
    EXPECT_STREQ(set.backend_options, "sim_capacity:128MiB"); // configure beats GALLOC_CONF
    size_t free_b = 0, total = 0;
    ASSERT_EQ(galloc_memory_info(a, &free_b, &total), GALLOC_OK);
    EXPECT_EQ(total, size_t(128 * MiB));
    EXPECT_TRUE(set.expandable_segments);              // GALLOC_CONF's other key stays
    EXPECT_EQ(set.max_split_size, uint64_t(32 * MiB)); // PyTorch's variable underneath
}

TEST_F(Device, CreationFailureIsReportedAndRetried)
{
    ASSERT_EQ(galloc_device_configure("device_backend:nosuchdevice"), GALLOC_OK);
    void *p = reinterpret_cast<void *>(1);
    EXPECT_EQ(galloc_device_malloc(4, 10, 0, &p), GALLOC_E_UNAVAILABLE);
    EXPECT_EQ(p, nullptr);
    char msg[GALLOC_ERROR_MAX];
    EXPECT_EQ(galloc_devices_last_error(msg, sizeof msg), GALLOC_E_UNAVAILABLE);
    EXPECT_NE(std::string(msg).find("device 4"), std::string::npos) << msg;
    EXPECT_NE(std::string(msg).find("nosuchdevice"), std::string::npos) << msg;
    EXPECT_FALSE(galloc_device_is_initialized(4));
    // Nothing was created: configuring is still allowed, and the next call retries.
    ASSERT_EQ(galloc_device_configure("device_backend:sim"), GALLOC_OK);
    ASSERT_EQ(galloc_device_malloc(4, 10, 0, &p), GALLOC_OK);
    EXPECT_EQ(galloc_device_free(4, p), GALLOC_OK);
}

TEST_F(Device, OutOfMemoryIsTheAllocatorsError)
{
    ASSERT_EQ(galloc_device_configure("sim_capacity:64MiB"), GALLOC_OK);
    void *p = nullptr;
    EXPECT_EQ(galloc_device_malloc(0, 1 << 30, 0, &p), GALLOC_E_OOM);
    EXPECT_EQ(p, nullptr);
    galloc_allocator_t *a = nullptr;
    ASSERT_EQ(galloc_device_get(0, &a), GALLOC_OK);
    char msg[GALLOC_ERROR_MAX];
    EXPECT_EQ(galloc_last_error(a, msg, sizeof msg), GALLOC_E_OOM);
    EXPECT_NE(std::string(msg).find("CUDA out of memory. Tried to allocate 1024.00 MiB"), std::string::npos) << msg;
    char reg[GALLOC_ERROR_MAX];
    EXPECT_EQ(galloc_devices_last_error(reg, sizeof reg), GALLOC_OK); // not a registry failure
}

TEST_F(Device, BadInputsChangeNothing)
{
    void *p = reinterpret_cast<void *>(1);
    int64_t v = 7;
    size_t f = 0, t = 0;
    galloc_stats_t s;
    s.struct_size = sizeof s;
    galloc_allocator_t *a = reinterpret_cast<galloc_allocator_t *>(1);
    for (int d : {-1, GALLOC_DEVICE_MAX, 1000}) {
        EXPECT_EQ(galloc_device_get(d, &a), GALLOC_E_INVAL);
        EXPECT_EQ(a, nullptr);
        EXPECT_EQ(galloc_device_malloc(d, 16, 0, &p), GALLOC_E_INVAL);
        EXPECT_EQ(p, nullptr);
        EXPECT_EQ(galloc_device_free(d, nullptr), GALLOC_E_INVAL);
        EXPECT_EQ(galloc_device_memory_stats(d, &s), GALLOC_E_INVAL);
        EXPECT_EQ(galloc_device_memory_allocated(d, &v), GALLOC_E_INVAL);
        EXPECT_EQ(galloc_device_max_memory_reserved(d, &v), GALLOC_E_INVAL);
        EXPECT_EQ(galloc_device_reset_peak_memory_stats(d), GALLOC_E_INVAL);
        EXPECT_EQ(galloc_device_reset_accumulated_memory_stats(d), GALLOC_E_INVAL);
        EXPECT_EQ(galloc_device_empty_cache(d), GALLOC_E_INVAL);
        EXPECT_EQ(galloc_device_memory_info(d, &f, &t), GALLOC_E_INVAL);
        EXPECT_FALSE(galloc_device_is_initialized(d));
    }
    EXPECT_EQ(v, 7);
    EXPECT_NE(registry_error().find("out of range"), std::string::npos) << registry_error();
    // NULL outputs, on a valid index: refused before anything is created.
    EXPECT_EQ(galloc_device_get(0, nullptr), GALLOC_E_INVAL);
    EXPECT_EQ(galloc_device_malloc(0, 16, 0, nullptr), GALLOC_E_INVAL);
    EXPECT_EQ(galloc_device_memory_stats(0, nullptr), GALLOC_E_INVAL);
    s.struct_size = 0;
    EXPECT_EQ(galloc_device_memory_stats(0, &s), GALLOC_E_INVAL);
    EXPECT_EQ(galloc_device_memory_reserved(0, nullptr), GALLOC_E_INVAL);
    EXPECT_EQ(galloc_device_memory_info(0, nullptr, &t), GALLOC_E_INVAL);
    EXPECT_FALSE(galloc_device_is_initialized(0));
    char buf[8];
    EXPECT_EQ(galloc_devices_last_error(nullptr, 8), GALLOC_E_INVAL);
    EXPECT_EQ(galloc_devices_last_error(buf, 0), GALLOC_E_INVAL);
    // A foreign pointer on a real device: the allocator says so.
    int local = 0;
    EXPECT_EQ(galloc_device_free(0, &local), GALLOC_E_NOT_OWNED);
}

TEST_F(Device, ShutdownIsIdempotentAndStartsOver)
{
    void *p = nullptr;
    ASSERT_EQ(galloc_device_malloc(1, 4096, 0, &p), GALLOC_OK);
    galloc_devices_shutdown(); // the live block goes with its allocator (asan checks the rest)
    galloc_devices_shutdown();
    EXPECT_FALSE(galloc_device_is_initialized(1));
    int64_t v = -1;
    ASSERT_EQ(galloc_device_memory_allocated(1, &v), GALLOC_OK);
    EXPECT_EQ(v, 0);
}

} // namespace
