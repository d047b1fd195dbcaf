// random_threads_test: the multi-stream randomized test (random_model.h) on
// several threads at once, through the public API so the allocator's lock and
// every global on the way (backend registry, sim, stats) are exercised.
// Tagged "concurrency": CI runs it under ThreadSanitizer (--config=tsan).
//
// Own: each thread drives an allocator of its own against its own model, with
// every stat compared after every step (the single-threaded test's checks,
// OOMs and empty_cache included).
//
// Shared: the threads share one allocator, each on streams of its own. Blocks
// live in per-(pool, stream) free sets and a segment serves one stream, so a
// thread's best-fit choices depend on its own calls only and its model stays
// exact about which address each malloc returns. Global stats are not any
// one thread's, and a thread's malloc also returns other threads' finished
// blocks; so after every step only the invariant check runs, and at
// quiescent points (all threads at a barrier, every stream synchronized, one
// probe malloc to return every pending block) the global stats must equal the
// sum of the threads' models. No empty_cache and a device too large to fill:
// either would let one thread's call release another's segments.
#include <condition_variable>
#include <mutex>
#include <thread>

#include "tests/pool/random_api.h"

extern "C" {
#include <galloc/galloc.h>
}

namespace {

using namespace galloc_random;

constexpr int kThreads = 4;
// ThreadSanitizer slows this ~10x and the test machines have 2 cores: fewer
// steps keep the run under ~30 s while 4 threads still interleave thousands
// of locked calls. The shared case is the slower per step: with no
// empty_cache the cache only grows, and every step's check walks all four
// threads' segments.
#if defined(__SANITIZE_THREAD__)
constexpr int kSteps = 5000, kSharedSteps = 2000, kRound = 250;
#else
constexpr int kSteps = 10000, kSharedSteps = 4000, kRound = 500;
#endif

galloc_allocator_t *Create(const char *conf)
{
    galloc_allocator_t *a = nullptr;
    char err[GALLOC_ERROR_MAX] = "";
    EXPECT_EQ(galloc_allocator_create("sim", 0, conf, &a, err, sizeof err), GALLOC_OK) << err;
    return a;
}

uint64_t SeedOf(int t)
{
    return seed_for(100) + (uint64_t)t;
}

TEST(RandomThreads, EachThreadOwnAllocatorMatchesItsModel)
{
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; t++)
        threads.emplace_back([t] {
            SCOPED_TRACE("thread " + std::to_string(t) + " seed " + std::to_string(SeedOf(t)) +
                         " (GALLOC_SEED + thread)");
            galloc_allocator_t *a = Create("sim_manual_events:True,sim_capacity:512MiB");
            if (a == nullptr)
                return;
            {
                ApiTarget target(a);
                Model m;
                m.capacity = 512 * MiB;
                Options o;
                o.streams = true;
                Harness h(target, m, SeedOf(t), o);
                for (int i = 0; i < kSteps && !::testing::Test::HasFatalFailure(); i++)
                    h.step(i);
                EXPECT_GT(h.model().ooms, 0); // the cold paths ran on every thread
                EXPECT_GT(h.model().syncs, 0);
            }
            galloc_allocator_destroy(a);
        });
    for (auto &th : threads)
        th.join();
}

// A reusable barrier that also tells every thread whether any of them failed
// in the phase just ended, so all stop together instead of waiting forever.
class Barrier {
  public:
    explicit Barrier(int n) : n_(n) {}
    bool Wait(bool failed)
    {
        std::unique_lock<std::mutex> l(mu_);
        any_ = any_ || failed;
        uint64_t gen = gen_;
        if (++arrived_ == n_) {
            result_ = any_;
            any_ = false;
            arrived_ = 0;
            gen_++;
            cv_.notify_all();
        } else {
            cv_.wait(l, [&] { return gen_ != gen; });
        }
        return result_; // the next phase cannot end before this thread arrives again
    }

  private:
    std::mutex mu_;
    std::condition_variable cv_;
    int n_, arrived_ = 0;
    uint64_t gen_ = 0;
    bool any_ = false, result_ = false;
};

TEST(RandomThreads, SharedAllocatorOwnStreamsMatchesTheSumOfModels)
{
    galloc_allocator_t *a = Create("sim_manual_events:True");
    ASSERT_NE(a, nullptr);
    ApiTarget target(a);
    constexpr uintptr_t kProbe = 0xfff; // thread 0's probe malloc, on no thread's streams
    std::vector<Harness *> hs(kThreads, nullptr);
    Barrier barrier(kThreads);

    auto quiescent = [&](int round) {
        // Every thread has synchronized its streams and the probe has returned
        // every pending block; the models have returned theirs too.
        Recount sum;
        int64_t dev_alloc = 1, mallocs = 0; // the probe's one segment
        for (Harness *h : hs) {
            Recount rc = h->recount();
            for (int f = 0; f < 11; f++)
                for (int p = 0; p < 3; p++)
                    sum.v[f][p] += rc.v[f][p];
            dev_alloc += h->model().dev_alloc;
            mallocs += h->model().mallocs;
        }
        // The probe's 512 bytes were freed: its 2 MiB small segment is cached whole.
        for (int p : {0, 1}) {
            sum.v[SEG][p] += 1;
            sum.v[RES][p] += (int64_t)(2 * MiB);
        }
        galloc_stats_t st;
        st.struct_size = sizeof st;
        target.stats(&st);
        const galloc_stat_t *arr[9] = {st.segment,         st.reserved_bytes, st.allocation,
                                       st.allocated_bytes, st.active,         st.active_bytes,
                                       st.requested_bytes, st.inactive_split, st.inactive_split_bytes};
        for (int f = 0; f < 9; f++)
            for (int p = 0; p < 3; p++)
                EXPECT_EQ(arr[f][p].current, sum.v[f][p]) << "round " << round << " stat " << f << " pool " << p;
        EXPECT_EQ(st.num_device_alloc, dev_alloc) << "round " << round;
        EXPECT_EQ(st.num_device_free, 0);
        EXPECT_EQ(st.num_sync_all_streams, 0);
        EXPECT_EQ(st.num_ooms, 0);
        EXPECT_EQ(st.allocation[0].allocated, mallocs + round + 1); // one probe per round
        EXPECT_EQ(galloc_check(a), GALLOC_OK) << target.error();
    };

    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; t++)
        threads.emplace_back([&, t] {
            SCOPED_TRACE("thread " + std::to_string(t) + " seed " + std::to_string(SeedOf(t)));
            Model m;
            m.capacity = UINT64_MAX / 2; // never full: an OOM would release other threads' segments
            Options o;
            o.streams = true;
            o.empty_cache = false;
            o.exact_stats = false;
            uintptr_t base = 0x100 * (uintptr_t)(t + 1);
            o.ids = {base, base + 1, base + 2};
            Harness h(target, m, SeedOf(t), o);
            hs[t] = &h;
            bool stop = barrier.Wait(false);
            for (int round = 0; !stop && round * kRound < kSharedSteps; round++) {
                for (int i = round * kRound; i < (round + 1) * kRound && !::testing::Test::HasFatalFailure(); i++)
                    h.step(i);
                for (uintptr_t s : o.ids)
                    h.sync(s);
                if ((stop = barrier.Wait(::testing::Test::HasFailure())))
                    break;
                if (t == 0) {
                    uintptr_t p = 0;
                    EXPECT_EQ(target.malloc(512, kProbe, &p), GALLOC_OK) << target.error();
                    EXPECT_EQ(target.free(p), GALLOC_OK) << target.error();
                }
                if ((stop = barrier.Wait(::testing::Test::HasFailure())))
                    break;
                h.poll_elsewhere();
                if ((stop = barrier.Wait(false)))
                    break;
                if (t == 0)
                    quiescent(round);
                stop = barrier.Wait(::testing::Test::HasFailure());
            }
        });
    for (auto &th : threads)
        th.join();
    galloc_allocator_destroy(a);
}

} // namespace
