// random_model.h: the randomized tests' reference model of PyTorch's caching
// policy (vectors and linear scans, stats recounted from scratch) and the
// harness that drives a pool and the model side by side, one random operation
// per step, checking the pool's invariants and (optionally) every stat after
// each. Shared by random_test (one thread) and random_threads_test (several
// threads, each with its own harness). The seed is printed on failure;
// GALLOC_SEED overrides it.
#ifndef GALLOC_TESTS_POOL_RANDOM_MODEL_H
#define GALLOC_TESTS_POOL_RANDOM_MODEL_H

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <functional>
#include <random>
#include <set>
#include <string>
#include <vector>

extern "C" {
#include <galloc/galloc_stats.h>
#include "tests/pool/pool_shim.h"
}

namespace galloc_random {

constexpr uint64_t MiB = 1 << 20;
constexpr uint64_t NONE = UINT64_MAX;

// What the harness drives: the pool through the test shim, or (threads test)
// an allocator through the public API. Calls mirror the shim's.
class Target {
  public:
    virtual ~Target() = default;
    virtual galloc_status_t malloc(size_t n, uintptr_t stream, uintptr_t *addr) = 0;
    virtual galloc_status_t free(uintptr_t addr) = 0;
    virtual galloc_status_t empty_cache() = 0;
    virtual galloc_status_t record_stream(uintptr_t addr, uintptr_t stream) = 0;
    virtual galloc_status_t stream_sync(uintptr_t stream) = 0;
    virtual galloc_status_t check() = 0;
    virtual void stats(galloc_stats_t *out) = 0;
    virtual std::string error() = 0;
};

// A pool of its own on a fresh sim device, through pool_shim.
class ShimTarget : public Target {
  public:
    ShimTarget(const char *conf, uint64_t capacity)
    {
        char err[512] = "";
        s_ = pool_shim_new(conf, capacity, err, sizeof err);
        EXPECT_NE(s_, nullptr) << err;
    }
    ~ShimTarget() override { pool_shim_delete(s_); }
    bool ok() const { return s_ != nullptr; }
    galloc_status_t malloc(size_t n, uintptr_t stream, uintptr_t *addr) override
    {
        return pool_shim_malloc(s_, n, stream, addr);
    }
    galloc_status_t free(uintptr_t addr) override { return pool_shim_free(s_, addr); }
    galloc_status_t empty_cache() override { return pool_shim_empty_cache(s_); }
    galloc_status_t record_stream(uintptr_t addr, uintptr_t stream) override
    {
        return pool_shim_record_stream(s_, addr, stream);
    }
    galloc_status_t stream_sync(uintptr_t stream) override { return pool_shim_stream_sync(s_, stream); }
    galloc_status_t check() override { return pool_shim_check(s_); }
    void stats(galloc_stats_t *out) override { pool_shim_stats(s_, out); }
    std::string error() override { return pool_shim_error(s_); }
    pool_shim_t *s_ = nullptr;
};

struct MBlock {
    uint64_t addr, size, req;
    bool alloc;
    bool pending = false;     // freed, waiting on other streams
    std::set<uintptr_t> uses; // record_stream while allocated; unfinished streams while pending
    int64_t gc_base = 0;      // its pool's GC clock when it last entered the free set
};
struct MSeg {
    uint64_t base, size;
    bool small;
    uintptr_t stream;
    std::vector<MBlock> blocks; // address order, tiling the segment
};

// Stats recounted from the model's state; indices all/small/large as galloc's.
struct Recount {
    int64_t v[11][3] = {};
};
enum { SEG, RES, ALLOCN, ALLOCB, ACT, ACTB, REQ, ISPL, ISPLB, OVA, OVS };

struct Model {
    uint64_t mss = NONE, nsr = 20 * MiB, capacity = 0;
    uint32_t div = 0;
    bool retry_pool = false; // retry_pool_after_sync:True
    double frac = 1.0;       // per_process_memory_fraction (below 1.0 it caps reserved memory)
    double gc = 0.0;         // garbage_collection_threshold (acts only with a fraction set)
    int64_t clock[2] = {};   // GC clocks of the small and large pool: their searches while GC is on
    int64_t gc_freed = 0;    // segments the garbage collector released
    std::vector<MSeg> segs;
    int64_t dev_alloc = 0, dev_free = 0, syncs = 0, retries = 0, ooms = 0;
    int64_t mallocs = 0, seg_bytes = 0, req_bytes = 0;

    uint64_t round(uint64_t n) const
    {
        if (n < 512)
            return 512;
        if (div > 1 && n > 512ull * div) {
            uint64_t k = 1;
            while (k * 2 <= n)
                k *= 2;
            if (k == n)
                return n;
            uint64_t step = k / div;
            return (n + step - 1) / step * step;
        }
        return (n + 511) / 512 * 512;
    }
    static uint64_t seg_size(uint64_t r)
    {
        if (r <= MiB)
            return 2 * MiB;
        if (r < 10 * MiB)
            return 20 * MiB;
        return (r + 2 * MiB - 1) / (2 * MiB) * (2 * MiB);
    }
    bool gc_on() const { return frac < 1.0 && gc > 0.0; }
    // PyTorch truncates fraction * total to bytes; the device is the other limit.
    uint64_t limit() const { return frac < 1.0 ? (uint64_t)(frac * (double)capacity) : capacity; }
    uint64_t used() const
    {
        uint64_t u = 0;
        for (auto &s : segs)
            u += s.size;
        return u;
    }
    // Best free block of (pool, stream) with size >= want: smallest size, then lowest address.
    bool best(bool small, uintptr_t stream, uint64_t want, size_t &si, size_t &bi) const
    {
        bool found = false;
        for (size_t i = 0; i < segs.size(); i++) {
            if (segs[i].small != small || segs[i].stream != stream)
                continue;
            for (size_t j = 0; j < segs[i].blocks.size(); j++) {
                const MBlock &b = segs[i].blocks[j];
                if (b.alloc || b.pending || b.size < want)
                    continue;
                if (!found || b.size < segs[si].blocks[bi].size ||
                    (b.size == segs[si].blocks[bi].size && b.addr < segs[si].blocks[bi].addr)) {
                    found = true;
                    si = i;
                    bi = j;
                }
            }
        }
        return found;
    }
    void release_seg(size_t i)
    {
        dev_free++;
        segs.erase(segs.begin() + (long)i);
    }
    // Return a freed block to its segment, merging with free neighbours.
    void return_block(MSeg &s, size_t j)
    {
        s.blocks[j].alloc = false;
        s.blocks[j].pending = false;
        s.blocks[j].req = 0;
        s.blocks[j].uses.clear();
        auto is_free = [&](size_t k) { return !s.blocks[k].alloc && !s.blocks[k].pending; };
        if (j + 1 < s.blocks.size() && is_free(j + 1)) {
            s.blocks[j].size += s.blocks[j + 1].size;
            s.blocks.erase(s.blocks.begin() + (long)j + 1);
        }
        if (j > 0 && is_free(j - 1)) {
            s.blocks[j - 1].size += s.blocks[j].size;
            s.blocks.erase(s.blocks.begin() + (long)j);
            j--;
        }
        s.blocks[j].gc_base = clock[s.small ? 0 : 1]; // the merged block enters the free set now
    }
    // garbage_collect_cached_blocks: while reserved memory is above the
    // threshold, free whole cached large segments whose age (searches of the
    // large pool since they entered the free set) is at least the average,
    // recomputing the average after each full pass. Ages are integers, so the
    // double sums are exact and the order of a pass does not matter.
    void gc_collect()
    {
        uint64_t threshold = (uint64_t)(gc * (double)limit());
        uint64_t total = used();
        if (total <= threshold)
            return;
        uint64_t target = total - threshold, reclaimed = 0;
        auto whole_free = [](const MSeg &s) {
            return !s.small && s.blocks.size() == 1 && !s.blocks[0].alloc && !s.blocks[0].pending;
        };
        double total_age = 0.0;
        size_t freeable = 0;
        for (auto &s : segs)
            if (whole_free(s)) {
                total_age += (double)(clock[1] - s.blocks[0].gc_base);
                freeable++;
            }
        bool freed = true;
        while (reclaimed < target && freed && freeable > 0) {
            double age_threshold = total_age / (double)freeable;
            freed = false;
            for (size_t i = segs.size(); i-- > 0;) {
                if (!whole_free(segs[i]))
                    continue;
                int64_t age = clock[1] - segs[i].blocks[0].gc_base;
                if ((double)age < age_threshold)
                    continue;
                freed = true;
                reclaimed += segs[i].size;
                total_age -= (double)age;
                freeable--;
                gc_freed++;
                release_seg(i);
            }
        }
    }
    std::vector<uint64_t> pending_order; // pending blocks in the order they were freed
    std::function<void()> after_return;  // observes the state after each returned block

    // Return every pending block whose streams all finished (or all, when
    // waiting), one at a time in the order they were freed, as galloc walks its
    // event queue.
    bool return_finished(bool wait_all)
    {
        bool any = false;
        for (size_t k = 0; k < pending_order.size();) {
            bool done = false;
            for (auto &s : segs)
                for (size_t j = 0; j < s.blocks.size() && !done; j++)
                    if (s.blocks[j].addr == pending_order[k] && s.blocks[j].pending) {
                        done = true;
                        if (wait_all || s.blocks[j].uses.empty()) {
                            return_block(s, j);
                            pending_order.erase(pending_order.begin() + (long)k);
                            any = true;
                            if (after_return)
                                after_return();
                        } else {
                            k++;
                        }
                    }
            if (!done)
                k++;
        }
        return any;
    }
    bool any_pending() const
    {
        for (auto &s : segs)
            for (auto &b : s.blocks)
                if (b.pending)
                    return true;
        return false;
    }
    // release_cached_blocks: wait for every event, then free whole segments.
    void release_all_whole()
    {
        syncs++;
        return_finished(true);
        for (size_t i = segs.size(); i-- > 0;)
            if (segs[i].blocks.size() == 1 && !segs[i].blocks[0].alloc)
                release_seg(i);
    }
    bool release_available(bool small, uintptr_t stream, uint64_t rounded)
    {
        if (mss == NONE)
            return false;
        uint64_t key = std::max(rounded, mss);
        size_t si = 0, bi = 0;
        if (best(small, stream, key, si, bi)) {
            if (segs[si].blocks.size() > 1)
                return false; // a split piece is never released alone
            release_seg(si);
            return true;
        }
        // Largest first among same-stream free blocks ordered below the key.
        std::vector<std::pair<uint64_t, uint64_t>> cands; // (size, addr)
        for (auto &s : segs)
            if (s.small == small && s.stream == stream)
                for (auto &b : s.blocks)
                    if (!b.alloc && !b.pending)
                        cands.push_back({b.size, b.addr});
        std::sort(cands.rbegin(), cands.rend());
        uint64_t released = 0;
        for (auto &c : cands) {
            if (released >= key || c.first < mss)
                break;
            for (size_t i = 0; i < segs.size(); i++)
                if (segs[i].base == c.second && segs[i].blocks.size() == 1) {
                    released += c.first;
                    release_seg(i);
                    break;
                }
        }
        return released >= key;
    }
};

// How a harness runs. The defaults are the single-threaded tests'.
struct Options {
    bool streams = false;                     // record_stream and stream syncs as well as malloc / free
    bool empty_cache = true;                  // 2% of steps call empty_cache
    bool exact_stats = true;                  // compare every stat with the model after every step
    std::array<uintptr_t, 3> ids = {0, 7, 9}; // mallocs use ids[0] (3/4) or ids[1]; syncs and records any
};

class Harness {
  public:
    // t must outlive the harness.
    Harness(Target &t, Model m, uint64_t seed, Options o = Options()) : m_(m), rng_(seed), o_(o), t_(t)
    {
        m_.after_return = [this] { observe(); };
    }

    void step(int i)
    {
        std::uniform_int_distribution<int> pick(0, 99);
        int op = pick(rng_);
        if (o_.streams && op >= 90 && !live_.empty()) {
            uintptr_t on = o_.ids[(size_t)std::uniform_int_distribution<int>(0, 2)(rng_)];
            uint64_t a = live_[std::uniform_int_distribution<size_t>(0, live_.size() - 1)(rng_)];
            ASSERT_EQ(t_.record_stream(a, on), GALLOC_OK) << t_.error();
            for (auto &s : m_.segs)
                for (auto &b : s.blocks)
                    if (b.addr == a && b.alloc && on != s.stream)
                        b.uses.insert(on);
        } else if (o_.streams && op >= 85) {
            sync(o_.ids[(size_t)std::uniform_int_distribution<int>(0, 2)(rng_)]);
        } else if (op < 2 && o_.empty_cache) {
            ASSERT_EQ(t_.empty_cache(), GALLOC_OK) << t_.error();
            m_.release_all_whole();
        } else if (op < 50 || live_.empty()) {
            do_malloc(i);
        } else {
            std::uniform_int_distribution<size_t> which(0, live_.size() - 1);
            size_t k = which(rng_);
            uint64_t a = live_[k];
            live_.erase(live_.begin() + (long)k);
            ASSERT_EQ(t_.free(a), GALLOC_OK) << t_.error();
            model_free(a);
        }
        ASSERT_EQ(t_.check(), GALLOC_OK) << "step " << i << ": " << t_.error();
        if (o_.exact_stats)
            compare(i);
    }

    // Finish the work queued on a stream: its pending blocks come back at the next malloc.
    void sync(uintptr_t on)
    {
        ASSERT_EQ(t_.stream_sync(on), GALLOC_OK) << t_.error();
        for (auto &s : m_.segs)
            for (auto &b : s.blocks)
                if (b.pending)
                    b.uses.erase(on);
    }
    // Model only: what the pool did at a malloc that this harness did not make
    // (another thread's, on a shared allocator): return the finished blocks.
    void poll_elsewhere() { m_.return_finished(false); }

    const Model &model() const { return m_; }

  private:
    uint64_t draw_size()
    {
        std::uniform_int_distribution<int> cls(0, 9);
        int c = cls(rng_);
        if (c < 6)
            return std::uniform_int_distribution<uint64_t>(1, c < 4 ? 8192 : MiB)(rng_);
        if (c < 9)
            return std::uniform_int_distribution<uint64_t>(MiB + 1, 12 * MiB)(rng_);
        return std::uniform_int_distribution<uint64_t>(12 * MiB, 90 * MiB)(rng_);
    }

    void do_malloc(int i)
    {
        uint64_t n = draw_size();
        uintptr_t stream = std::uniform_int_distribution<int>(0, 3)(rng_) == 0 ? o_.ids[1] : o_.ids[0];
        uintptr_t got = 0;
        galloc_status_t st = t_.malloc(n, stream, &got);
        Model &m = m_;
        m.return_finished(false); // process_events at the start of malloc
        uint64_t r = m.round(n);
        bool small = r <= MiB;
        if (m.gc_on())
            m.clock[small ? 0 : 1]++; // get_free_block ticks its pool's GC clock
        size_t si = 0, bi = 0;
        bool hit = m.best(small, stream, r, si, bi);
        if (hit) {
            uint64_t bs = m.segs[si].blocks[bi].size;
            if ((r < m.mss && bs >= m.mss) || (r >= m.mss && bs >= r + m.nsr))
                hit = false;
        }
        uint64_t as = Model::seg_size(r);
        if (!hit) {
            if (m.gc_on())
                m.gc_collect();
            auto fits = [&] { return m.used() + as <= m.limit(); };
            bool ok = fits();
            if (!ok && m.release_available(small, stream, r))
                ok = fits();
            if (!ok) {
                bool were_pending = m.any_pending();
                m.release_all_whole();
                observe();
                m.retries++;
                // retry_pool_after_sync:True searches the pool again after the
                // synchronization; PyTorch does not (see malloc.c).
                if (were_pending && m.retry_pool && m.best(small, stream, r, si, bi)) {
                    uint64_t bs = m.segs[si].blocks[bi].size;
                    hit = !((r < m.mss && bs >= m.mss) || (r >= m.mss && bs >= r + m.nsr));
                }
                ok = hit || fits();
            }
            if (!ok) {
                m.ooms++;
                ASSERT_EQ(st, GALLOC_E_OOM) << "step " << i << " size " << n;
                return;
            }
        }
        if (!hit) {
            ASSERT_EQ(st, GALLOC_OK) << "step " << i << " size " << n << ": " << t_.error();
            for (auto &s : m.segs)
                ASSERT_FALSE(got >= s.base && got < s.base + s.size) << "new segment overlaps an old one";
            m.segs.push_back(MSeg{got, as, small, stream, {MBlock{got, as, 0, false}}});
            m.dev_alloc++;
            m.seg_bytes += (int64_t)as;
            si = m.segs.size() - 1;
            bi = 0;
        } else {
            ASSERT_EQ(st, GALLOC_OK) << "step " << i << ": " << t_.error();
        }
        MSeg &seg = m.segs[si];
        MBlock b = seg.blocks[bi];
        ASSERT_EQ(got, b.addr) << "step " << i << ": best fit chose another block";
        uint64_t rest = b.size - r;
        bool split = small ? rest >= 512 : (r < m.mss && rest > MiB);
        if (split) {
            seg.blocks[bi] = MBlock{b.addr, r, n, true};
            MBlock tail{b.addr + r, rest, 0, false};
            tail.gc_base = m.clock[small ? 0 : 1]; // the remainder enters the free set now
            seg.blocks.insert(seg.blocks.begin() + (long)bi + 1, tail);
        } else {
            seg.blocks[bi].alloc = true;
            seg.blocks[bi].req = n;
        }
        m.mallocs++;
        m.req_bytes += (int64_t)n;
        live_.push_back(got);
    }

    void model_free(uint64_t a)
    {
        for (auto &s : m_.segs)
            for (size_t j = 0; j < s.blocks.size(); j++)
                if (s.blocks[j].addr == a && s.blocks[j].alloc) {
                    if (!s.blocks[j].uses.empty()) {
                        s.blocks[j].alloc = false; // waits for its streams; still active
                        s.blocks[j].pending = true;
                        m_.pending_order.push_back(a);
                    } else {
                        m_.return_block(s, j);
                    }
                    return;
                }
        FAIL() << "model lost block " << a;
    }

    // Peaks can be reached inside a call (blocks returned by process_events or
    // the synchronization, then a piece handed out): observe those states too.
    void observe()
    {
        Recount rc = recount();
        for (int f = 0; f < 11; f++)
            for (int p = 0; p < 3; p++)
                peak_.v[f][p] = std::max(peak_.v[f][p], rc.v[f][p]);
    }

  public:
    // Stats recounted from the model's state (current values).
    Recount recount() const
    {
        Recount rc;
        for (auto &s : m_.segs) {
            int p = s.small ? 1 : 2;
            auto add = [&](int f, int64_t n) {
                rc.v[f][0] += n;
                rc.v[f][p] += n;
            };
            add(SEG, 1);
            add(RES, (int64_t)s.size);
            if (s.size >= m_.mss)
                rc.v[OVS][0]++;
            for (auto &b : s.blocks) {
                if (b.pending) {
                    add(ACT, 1);
                    add(ACTB, (int64_t)b.size);
                    add(REQ, (int64_t)b.req);
                } else if (b.alloc) {
                    add(ALLOCN, 1);
                    add(ALLOCB, (int64_t)b.size);
                    add(ACT, 1);
                    add(ACTB, (int64_t)b.size);
                    add(REQ, (int64_t)b.req);
                    if (b.size >= m_.mss)
                        rc.v[OVA][0]++;
                } else if (s.blocks.size() > 1) {
                    add(ISPL, 1);
                    add(ISPLB, (int64_t)b.size);
                }
            }
        }
        return rc;
    }

  private:
    void compare(int i)
    {
        Recount rc = recount();
        for (int f = 0; f < 11; f++)
            for (int p = 0; p < 3; p++)
                peak_.v[f][p] = std::max(peak_.v[f][p], rc.v[f][p]);
        galloc_stats_t st;
        st.struct_size = sizeof st;
        t_.stats(&st);
        const galloc_stat_t *arr[9] = {st.segment,         st.reserved_bytes, st.allocation,
                                       st.allocated_bytes, st.active,         st.active_bytes,
                                       st.requested_bytes, st.inactive_split, st.inactive_split_bytes};
        for (int f = 0; f < 9; f++)
            for (int p = 0; p < 3; p++) {
                ASSERT_EQ(arr[f][p].current, rc.v[f][p]) << "step " << i << " stat " << f << " pool " << p;
                ASSERT_EQ(arr[f][p].peak, peak_.v[f][p]) << "step " << i << " peak " << f << " pool " << p;
                ASSERT_EQ(arr[f][p].allocated - arr[f][p].freed, arr[f][p].current) << "step " << i;
            }
        ASSERT_EQ(st.oversize_allocations.current, rc.v[OVA][0]);
        ASSERT_EQ(st.oversize_segments.current, rc.v[OVS][0]);
        ASSERT_EQ(st.oversize_segments.peak, peak_.v[OVS][0]);
        ASSERT_EQ(st.num_device_alloc, m_.dev_alloc) << "step " << i;
        ASSERT_EQ(st.num_device_free, m_.dev_free) << "step " << i;
        ASSERT_EQ(st.num_sync_all_streams, m_.syncs) << "step " << i;
        ASSERT_EQ(st.num_alloc_retries, m_.retries) << "step " << i;
        ASSERT_EQ(st.num_ooms, m_.ooms) << "step " << i;
        ASSERT_EQ(st.allocation[0].allocated, m_.mallocs);
        ASSERT_EQ(st.segment[0].allocated, m_.dev_alloc);
        ASSERT_EQ(st.reserved_bytes[0].allocated, m_.seg_bytes);
        ASSERT_EQ(st.requested_bytes[0].allocated, m_.req_bytes);
    }

    Model m_;
    std::mt19937_64 rng_;
    Options o_;
    Target &t_;
    std::vector<uint64_t> live_;
    Recount peak_;
};

inline uint64_t seed_for(uint64_t fallback)
{
    const char *e = std::getenv("GALLOC_SEED");
    return e ? std::strtoull(e, nullptr, 10) : fallback;
}

// Run `steps` steps of a fresh pool configured by conf against m; returns the
// model as it ended (m itself if the pool could not be made).
inline Model run(const char *conf, Model m, int steps, uint64_t seed, bool streams = false)
{
    SCOPED_TRACE(std::string("conf '") + conf + "' seed " + std::to_string(seed));
    ShimTarget t(conf, m.capacity);
    if (!t.ok())
        return m;
    Options o;
    o.streams = streams;
    Harness h(t, m, seed, o);
    for (int i = 0; i < steps && !::testing::Test::HasFatalFailure(); i++)
        h.step(i);
    // The workload must have reached the cold paths, not only cache hits.
    const Model &r = h.model();
    EXPECT_GT(r.ooms, 0);
    // With GC on, the collector has already freed the old cached segments when
    // the flush runs, so the flush may never rescue a request.
    if (r.gc_on())
        EXPECT_GE(r.retries, r.ooms);
    else
        EXPECT_GT(r.retries, r.ooms);
    EXPECT_GT(r.dev_free, steps / 1000);
    EXPECT_GT(r.mallocs, steps / 3);
    return r;
}

} // namespace galloc_random

#endif
