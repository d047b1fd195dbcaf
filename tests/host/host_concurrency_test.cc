// host_concurrency_test: the host cache from many threads at once (the
// allocator's lock serializes every call): workers pin, record streams, hand
// blocks to each other and free them while other threads read stats, reset
// peaks and empty the cache; at the end the figures equal the workers' own
// recount, galloc_check passes and the device holds nothing after
// empty_cache. Tagged "concurrency": CI runs it under TSan.
#include <atomic>
#include <random>
#include <thread>
#include <vector>

#include "tests/host/host_fixture.h"

namespace host_test {
namespace {

class HostThreads : public HostTest {
  protected:
    void SetUp() override { Make("pinned_use_cuda_host_register:True,pinned_num_register_threads:2"); }
};

TEST_F(HostThreads, WorkersAndReadersKeepTheCacheConsistent)
{
    // Events complete when recorded (automatic mode): blocks come back.
    ASSERT_EQ(ga_sim_set_manual_events(sim_, false), GALLOC_OK);
    constexpr int kWorkers = 4, kOps = 2000;
    std::atomic<bool> stop{false};
    std::atomic<int64_t> live{0};
    std::vector<std::thread> threads;
    std::atomic<void *> mailbox{nullptr};
    for (int w = 0; w < kWorkers; w++) {
        threads.emplace_back([&, w] {
            std::mt19937 rng(1234 + w);
            std::vector<void *> mine;
            for (int i = 0; i < kOps; i++) {
                unsigned r = rng() % 10;
                if (r < 5 || mine.empty()) {
                    void *p = nullptr;
                    size_t n = (size_t)1 << (rng() % 17); // 1 B .. 64 KiB
                    ASSERT_EQ(galloc_host_malloc(a_, n, &p), GALLOC_OK);
                    static_cast<char *>(p)[0] = (char)w; // the memory is the caller's
                    mine.push_back(p);
                    live++;
                } else if (r < 7) {
                    ASSERT_EQ(galloc_host_record_stream(a_, mine.back(), (galloc_stream_t)(w + 1)), GALLOC_OK);
                } else if (r < 8) {
                    void *give = mine.back(); // to another worker, through the mailbox
                    mine.pop_back();
                    void *got = mailbox.exchange(give);
                    if (got != nullptr)
                        mine.push_back(got);
                } else {
                    ASSERT_EQ(galloc_host_free(a_, mine.back()), GALLOC_OK);
                    mine.pop_back();
                    live--;
                }
            }
            for (void *p : mine) {
                ASSERT_EQ(galloc_host_free(a_, p), GALLOC_OK);
                live--;
            }
        });
    }
    threads.emplace_back([&] {
        while (!stop) {
            galloc_host_stats_t s = {};
            s.struct_size = sizeof s;
            ASSERT_EQ(galloc_host_memory_stats(a_, &s), GALLOC_OK);
            EXPECT_GE(s.active_requests.current, 0);
            EXPECT_LE(s.active_requests.current, s.allocations.current);
            EXPECT_LE(s.active_bytes.current, s.allocated_bytes.current);
            ASSERT_EQ(galloc_host_reset_peak_stats(a_), GALLOC_OK);
        }
    });
    threads.emplace_back([&] {
        while (!stop) {
            ASSERT_EQ(galloc_host_empty_cache(a_), GALLOC_OK);
            ASSERT_EQ(galloc_check(a_), GALLOC_OK) << Err();
        }
    });
    for (int w = 0; w < kWorkers; w++)
        threads[w].join();
    stop = true;
    for (size_t t = kWorkers; t < threads.size(); t++)
        threads[t].join();
    void *left = mailbox.exchange(nullptr);
    if (left != nullptr) {
        ASSERT_EQ(galloc_host_free(a_, left), GALLOC_OK);
        live--;
    }
    EXPECT_EQ(live.load(), 0);
    ASSERT_EQ(galloc_host_empty_cache(a_), GALLOC_OK);
    HostStats s = Stats();
    EXPECT_EQ(s["active_requests.current"], 0);
    EXPECT_EQ(s["allocations.current"], 0);
    EXPECT_EQ(s["num_host_alloc"], s["num_host_free"]);
    EXPECT_EQ(Sim().live_host_registered, 0u);
}

} // namespace
} // namespace host_test
