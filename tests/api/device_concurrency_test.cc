// device_concurrency_test: the device registry and a user allocator from many
// threads at once: the creation race, malloc/free beside stats, resets and
// empty_cache on several devices, configure racing first use. Tagged
// "concurrency": CI runs it under --config=tsan.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

extern "C" {
#include <galloc/galloc.h>
}

namespace {

constexpr int kThreads = 16;
constexpr int kDevices = 8;

class DeviceThreads : public ::testing::Test {
  protected:
    void SetUp() override { galloc_devices_shutdown(); }
    void TearDown() override { galloc_devices_shutdown(); }
};

// Start every thread's work at once, so that creation really races.
class StartLine {
  public:
    explicit StartLine(int n) : waiting_(n) {}
    void arrive_and_wait()
    {
        waiting_.fetch_sub(1);
        while (waiting_.load() > 0)
            std::this_thread::yield();
    }

  private:
    std::atomic<int> waiting_;
};

TEST_F(DeviceThreads, CreationRaceYieldsOneAllocatorPerDevice)
{
    ASSERT_EQ(galloc_device_configure("sim_capacity:1GiB"), GALLOC_OK);
    std::vector<std::vector<galloc_allocator_t *>> seen(kThreads, std::vector<galloc_allocator_t *>(kDevices));
    StartLine start(kThreads);
    std::vector<std::thread> ts;
    for (int t = 0; t < kThreads; t++)
        ts.emplace_back([&, t] {
            start.arrive_and_wait();
            for (int i = 0; i < kDevices; i++) {
                int d = (t + i) % kDevices; // threads start on different devices
                EXPECT_EQ(galloc_device_get(d, &seen[t][d]), GALLOC_OK);
            }
        });
    for (auto &th : ts)
        th.join();
    std::set<galloc_allocator_t *> distinct;
    for (int d = 0; d < kDevices; d++) {
        for (int t = 1; t < kThreads; t++)
            EXPECT_EQ(seen[t][d], seen[0][d]) << "device " << d << " thread " << t;
        distinct.insert(seen[0][d]);
    }
    EXPECT_EQ(distinct.size(), size_t(kDevices));
}

TEST_F(DeviceThreads, MallocBesideStatsResetsAndEmptyCache)
{
    ASSERT_EQ(galloc_device_configure("sim_capacity:4GiB"), GALLOC_OK);
    std::atomic<bool> stop{false};
    std::vector<std::thread> workers, readers;
    for (int t = 0; t < kThreads; t++)
        workers.emplace_back([t] {
            int d = t % kDevices;
            unsigned seed = unsigned(t) * 2654435761u;
            void *live[8] = {};
            for (int i = 0; i < 2000; i++) {
                int k = i % 8;
                if (live[k] != nullptr) {
                    EXPECT_EQ(galloc_device_free(d, live[k]), GALLOC_OK);
                    live[k] = nullptr;
                }
                seed = seed * 1103515245u + 12345u;
                size_t size = 1 + (seed >> 8) % (3 << 20); // both pools
                ASSERT_EQ(galloc_device_malloc(d, size, galloc_stream_t(t % 3), &live[k]), GALLOC_OK);
            }
            for (void *p : live)
                EXPECT_EQ(galloc_device_free(d, p), GALLOC_OK);
        });
    for (int t = 0; t < 4; t++)
        readers.emplace_back([&stop, t] {
            int n = 0;
            while (!stop.load()) {
                int d = (t + n++) % kDevices;
                galloc_stats_t s;
                s.struct_size = sizeof s;
                int64_t v = 0;
                EXPECT_EQ(galloc_device_memory_stats(d, &s), GALLOC_OK);
                EXPECT_LE(s.allocated_bytes[GALLOC_STAT_ALL].current, s.reserved_bytes[GALLOC_STAT_ALL].current);
                EXPECT_EQ(galloc_device_max_memory_allocated(d, &v), GALLOC_OK);
                switch (n % 3) {
                case 0: EXPECT_EQ(galloc_device_empty_cache(d), GALLOC_OK); break;
                case 1: EXPECT_EQ(galloc_device_reset_peak_memory_stats(d), GALLOC_OK); break;
                default: EXPECT_EQ(galloc_device_reset_accumulated_memory_stats(d), GALLOC_OK);
                }
            }
        });
    for (auto &th : workers)
        th.join();
    stop.store(true);
    for (auto &th : readers)
        th.join();
    for (int d = 0; d < kDevices; d++) {
        int64_t v = -1;
        ASSERT_EQ(galloc_device_memory_allocated(d, &v), GALLOC_OK);
        EXPECT_EQ(v, 0) << "device " << d;
        galloc_allocator_t *a = nullptr;
        ASSERT_EQ(galloc_device_get(d, &a), GALLOC_OK);
        EXPECT_EQ(galloc_check(a), GALLOC_OK);
        EXPECT_EQ(galloc_device_empty_cache(d), GALLOC_OK);
        ASSERT_EQ(galloc_device_memory_reserved(d, &v), GALLOC_OK);
        EXPECT_EQ(v, 0) << "device " << d;
    }
}

TEST_F(DeviceThreads, ConfigureRacingFirstUseIsEitherBeforeOrRefused)
{
    for (int round = 0; round < 20; round++) {
        galloc_devices_shutdown();
        StartLine start(2);
        galloc_status_t configured = GALLOC_OK;
        galloc_allocator_t *a = nullptr;
        std::thread user([&] {
            start.arrive_and_wait();
            EXPECT_EQ(galloc_device_get(0, &a), GALLOC_OK);
        });
        std::thread config([&] {
            start.arrive_and_wait();
            configured = galloc_device_configure("max_split_size_mb:64");
        });
        user.join();
        config.join();
        galloc_settings_t set;
        set.struct_size = sizeof set;
        ASSERT_EQ(galloc_settings_get(a, &set), GALLOC_OK);
        // Either the string came first and applies, or it was refused and does not.
        if (configured == GALLOC_OK) {
            EXPECT_EQ(set.max_split_size, uint64_t(64) << 20);
        } else {
            EXPECT_EQ(configured, GALLOC_E_INVAL);
            EXPECT_EQ(set.max_split_size, UINT64_MAX);
        }
    }
}

// A user allocator shared by threads: its hooks run one at a time.
struct Host {
    std::atomic<int> inside{0};
    std::atomic<long> calls{0};
};

void *host_malloc(void *ctx, size_t size, int, galloc_stream_t)
{
    Host *h = static_cast<Host *>(ctx);
    EXPECT_EQ(h->inside.fetch_add(1), 0); // the allocator's lock serializes hooks
    h->calls++;
    void *p = std::malloc(size);
    h->inside.fetch_sub(1);
    return p;
}

void host_free(void *ctx, void *ptr, size_t, int, galloc_stream_t)
{
    Host *h = static_cast<Host *>(ctx);
    EXPECT_EQ(h->inside.fetch_add(1), 0);
    h->calls++;
    std::free(ptr);
    h->inside.fetch_sub(1);
}

TEST_F(DeviceThreads, UserAllocatorHooksAreSerialized)
{
    Host host;
    galloc_user_allocator_t u = {};
    u.struct_size = sizeof u;
    u.version = GALLOC_USER_ALLOCATOR_V1;
    u.name = "host";
    u.ctx = &host;
    u.malloc_fn = host_malloc;
    u.free_fn = host_free;
    galloc_allocator_t *a = nullptr;
    ASSERT_EQ(galloc_allocator_create_user(&u, 0, &a, nullptr, 0), GALLOC_OK);
    galloc_history_options_t opt = {sizeof opt, GALLOC_HISTORY_ALL, GALLOC_CONTEXT_NONE, GALLOC_STACKS_PYTHON, 4096};
    ASSERT_EQ(galloc_record_memory_history(a, &opt), GALLOC_OK);
    std::vector<std::thread> ts;
    for (int t = 0; t < 8; t++)
        ts.emplace_back([a, t] {
            for (int i = 0; i < 1000; i++) {
                void *p = nullptr;
                ASSERT_EQ(galloc_malloc(a, size_t(1 + (i * 37 + t) % 4096), 0, &p), GALLOC_OK);
                galloc_stats_t s;
                s.struct_size = sizeof s;
                EXPECT_EQ(galloc_memory_stats(a, &s), GALLOC_OK);
                EXPECT_EQ(galloc_free(a, p), GALLOC_OK);
            }
        });
    for (auto &th : ts)
        th.join();
    EXPECT_EQ(host.calls.load(), 16000);
    galloc_stats_t s;
    s.struct_size = sizeof s;
    ASSERT_EQ(galloc_memory_stats(a, &s), GALLOC_OK);
    EXPECT_EQ(s.allocation[GALLOC_STAT_ALL].current, 0);
    EXPECT_EQ(s.allocation[GALLOC_STAT_ALL].allocated, 8000);
    EXPECT_EQ(s.num_device_free, 8000);
    EXPECT_EQ(galloc_check(a), GALLOC_OK);
    galloc_allocator_destroy(a);
}

} // namespace
