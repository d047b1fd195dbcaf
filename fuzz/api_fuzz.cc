// api_fuzz: libFuzzer target driving the public API from a byte stream on a
// small sim device, against a model of what the caller holds.
//
// Input: two bytes choose the settings (expandable segments, max_split_size_mb,
// a GC threshold, roundup divisions, manual events); then each op is an opcode
// byte and its argument bytes (see Step): malloc, free, free or record_stream
// of a pointer that is not a live block, record_stream, stream_synchronize,
// empty_cache, set_memory_fraction, private pools (with use_on_oom and no_split), device faults (ahead, once
// or from then on), stats resets, history / summary / snapshot. After EVERY call:
//   - the status is one the call may return for what the model says it was
//     given (a live block frees with GALLOC_OK, anything else GALLOC_E_NOT_OWNED;
//     malloc is GALLOC_OK or GALLOC_E_OOM; ...), and galloc_last_error reports
//     a failure's status;
//   - galloc_check passes (blocks tile segments, trees and maps agree, every
//     stat's current value equals a recount);
//   - allocation.all.current equals the live blocks the fuzzer holds, their
//     requested bytes fit in allocated_bytes, peaks are >= currents, and the
//     device's used bytes equal reserved_bytes (simwatch reads the sim counters)
//     and what galloc_memory_info reports;
//   - a new block does not overlap any live one.
// At the end everything is freed, pools released, the cache emptied:
// reserved_bytes is 0, and after destroy the device holds nothing.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>
#include <string>
#include <vector>

extern "C" {
#include <galloc/galloc.h>
#include "tests/reliability/simwatch.h"
}

namespace {

constexpr size_t KiB = 1024, MiB = 1024 * KiB;
constexpr size_t kMaxOps = 4000; // bounds the time one input takes

[[noreturn]] void Fail(galloc_allocator_t *a, const char *what)
{
    char msg[GALLOC_ERROR_MAX] = "";
    if (a != nullptr)
        galloc_last_error(a, msg, sizeof msg);
    std::fprintf(stderr, "api_fuzz: %s (last error: %s)\n", what, msg);
    std::abort();
}

#define CHECK(a, cond)                                                                                                 \
    do {                                                                                                               \
        if (!(cond))                                                                                                   \
            Fail(a, "check failed: " #cond);                                                                           \
    } while (0)

class Bytes {
  public:
    Bytes(const uint8_t *p, size_t n) : p_(p), n_(n) {}
    bool Empty() const { return n_ == 0; }
    uint8_t U8()
    {
        if (n_ == 0)
            return 0;
        n_--;
        return *p_++;
    }
    uint32_t U16() { return U8() | (uint32_t)U8() << 8; }

  private:
    const uint8_t *p_;
    size_t n_;
};

struct Pool {
    galloc_mempool_id_t id;
    bool routed = false;
    bool released = false;
};

class Driver {
  public:
    explicit Driver(Bytes &in) : in_(in) {}

    bool Open()
    {
        uint8_t f = in_.U8(), v = in_.U8();
        std::string conf = "sim_capacity:256MiB";
        if (f & 1)
            conf += ",expandable_segments:True";
        if (f & 2)
            conf += ",max_split_size_mb:" + std::to_string(20 + v % 100);
        if (f & 4)
            conf += ",garbage_collection_threshold:0." + std::to_string(1 + v % 9);
        if (f & 8) {
            static const char *const rd[] = {"4", "[256:1,512:2,>:4]", "[1:8,>:2]", "16"};
            conf += std::string(",roundup_power2_divisions:") + rd[(f >> 4) & 3];
        }
        if (f & 64)
            conf += ",sim_manual_events:True";
        if (simwatch_register() != GALLOC_OK)
            Fail(nullptr, "cannot register simwatch");
        char err[GALLOC_ERROR_MAX];
        if (galloc_allocator_create("simwatch", 0, conf.c_str(), &a_, err, sizeof err) != GALLOC_OK)
            Fail(nullptr, err);
        sim_ = simwatch_last_state();
        return true;
    }

    void Run()
    {
        for (size_t ops = 0; ops < kMaxOps && !in_.Empty(); ops++) {
            Step(in_.U8());
            Verify();
        }
        Finish();
    }

  private:
    size_t Size()
    {
        uint8_t cls = in_.U8();
        uint32_t r = in_.U16();
        switch (cls % 8) {
        case 0: return 1 + r % 512;                   // one small block
        case 1: return 1 + r * 16 % MiB;              // small pool
        case 2: return MiB + 1 + r * 160 % (9 * MiB); // large pool, shares 20 MiB segments
        case 3: return 10 * MiB + r * 1600 % (90 * MiB);
        case 4: return 100 * MiB + r * 3200 % (200 * MiB); // may exceed the device
        case 5: return cls & 8 ? SIZE_MAX - r : (size_t(1) << 60) - 1 + (r & 1);
        case 6: return 0;
        default: return 512 * (1 + r % 64); // exact multiples of the granularity
        }
    }
    galloc_stream_t Stream() { return in_.U8() % 4; }
    // The index of a live block, or -1 if none.
    long Pick()
    {
        uint8_t i = in_.U8();
        return live_.empty() ? -1 : (long)(i % live_.size());
    }
    std::map<uintptr_t, size_t>::iterator Live(long i)
    {
        auto it = live_.begin();
        std::advance(it, i);
        return it;
    }
    void Expect(galloc_status_t got, galloc_status_t want, const char *what)
    {
        if (got != want) {
            char m[256];
            std::snprintf(m, sizeof m, "%s returned %s, expected %s", what, galloc_status_name(got),
                          galloc_status_name(want));
            Fail(a_, m);
        }
        LastErrorIs(got);
    }
    // A failure is what galloc_last_error reports next.
    void LastErrorIs(galloc_status_t st)
    {
        char m[GALLOC_ERROR_MAX];
        if (st != GALLOC_OK && galloc_last_error(a_, m, sizeof m) != st)
            Fail(a_, "galloc_last_error does not report the last failure");
    }

    void Malloc()
    {
        size_t size = Size();
        galloc_stream_t s = Stream();
        void *p = reinterpret_cast<void *>(1);
        galloc_status_t st = galloc_malloc(a_, size, s, &p);
        if (st == GALLOC_E_OOM) {
            CHECK(a_, p == nullptr);
            LastErrorIs(st);
            return;
        }
        Expect(st, GALLOC_OK, "malloc");
        if (size == 0) {
            CHECK(a_, p == nullptr);
            return;
        }
        uintptr_t x = reinterpret_cast<uintptr_t>(p);
        CHECK(a_, x != 0 && x % 512 == 0);
        // No overlap with any live block: the next one starts at or after our end,
        // the previous one ends at or before our start.
        auto next = live_.lower_bound(x);
        CHECK(a_, next == live_.end() || next->first >= x + size);
        CHECK(a_, next == live_.begin() || std::prev(next)->first + std::prev(next)->second <= x);
        live_[x] = size;
    }

    void Free()
    {
        long i = Pick();
        if (i < 0)
            return;
        auto it = Live(i);
        Expect(galloc_free(a_, reinterpret_cast<void *>(it->first)), GALLOC_OK, "free");
        freed_[freed_n_++ % 16] = it->first;
        live_.erase(it);
    }

    // A pointer that is not a live block's start: inside a live block, or one
    // freed earlier and not handed out again.
    void BogusFree()
    {
        uint8_t how = in_.U8();
        uint32_t off = in_.U16();
        uintptr_t x = 0;
        long i = Pick();
        if (how & 1 && i >= 0) {
            auto it = Live(i);
            if (it->second < 2)
                return;
            x = it->first + 1 + off % (it->second - 1);
        } else {
            x = freed_[how % 16];
            if (x == 0 || live_.count(x) != 0)
                return;
        }
        Expect(how & 2 ? galloc_record_stream(a_, reinterpret_cast<void *>(x), 1)
                       : galloc_free(a_, reinterpret_cast<void *>(x)),
               GALLOC_E_NOT_OWNED, "free or record_stream of a pointer that is not a live block");
    }

    void RecordStream()
    {
        long i = Pick();
        galloc_stream_t s = Stream();
        if (i >= 0)
            Expect(galloc_record_stream(a_, reinterpret_cast<void *>(Live(i)->first), s), GALLOC_OK, "record_stream");
    }

    void Fraction()
    {
        uint8_t b = in_.U8();
        double f = b == 255 ? std::nan("") : b == 254 ? -0.25 : b / 200.0; // up to 1.265: some out of range
        bool valid = f >= 0.0 && f <= 1.0;
        Expect(galloc_set_memory_fraction(a_, f), valid ? GALLOC_OK : GALLOC_E_INVAL, "set_memory_fraction");
    }

    void MemPool()
    {
        uint8_t op = in_.U8(), i = in_.U8();
        if (op % 4 == 0 || pools_.empty()) {
            if (pools_.size() >= 8)
                return;
            Pool p;
            Expect(galloc_mempool_create(a_, &p.id), GALLOC_OK, "mempool_create");
            // use_on_oom and no_split from the opcode's bits 4 and 5 (0: PyTorch's defaults).
            unsigned flags = (op >> 4) & (GALLOC_MEMPOOL_USE_ON_OOM | GALLOC_MEMPOOL_NO_SPLIT);
            if (flags != 0)
                Expect(galloc_mempool_set_flags(a_, p.id, flags), GALLOC_OK, "mempool_set_flags");
            pools_.push_back(p);
            return;
        }
        Pool &p = pools_[i % pools_.size()];
        switch (op % 4) {
        case 1: {
            galloc_route_t route = op & 4 ? GALLOC_ROUTE_STREAM : GALLOC_ROUTE_THREAD;
            bool ok = !p.routed && !p.released;
            Expect(galloc_mempool_begin_allocate(a_, p.id, route, (op >> 3) % 4), ok ? GALLOC_OK : GALLOC_E_INVAL,
                   "mempool_begin_allocate");
            p.routed = p.routed || ok;
            break;
        }
        case 2:
            Expect(galloc_mempool_end_allocate(a_, p.id), p.routed ? GALLOC_OK : GALLOC_E_INVAL, "mempool_end");
            p.routed = false;
            break;
        default: {
            bool ok = !p.routed && !p.released;
            Expect(galloc_mempool_release(a_, p.id), ok ? GALLOC_OK : GALLOC_E_INVAL, "mempool_release");
            p.released = p.released || ok;
        }
        }
    }

    // Device allocations from a few calls ahead fail (once, or from then on):
    // whatever fails must end as GALLOC_E_OOM or a successful retry.
    void Faults()
    {
        uint8_t b = in_.U8();
        ga_sim_counters_t c;
        CHECK(a_, ga_sim_counters(sim_, &c) == GALLOC_OK);
        uint64_t next = c.alloc_calls + 1 + b % 8;
        switch ((b >> 3) % 4) {
        case 0: CHECK(a_, ga_sim_set_faults(sim_, next, 0, 0) == GALLOC_OK); break;
        case 1: CHECK(a_, ga_sim_set_faults(sim_, 0, next, 0) == GALLOC_OK); break;
        case 2: CHECK(a_, ga_sim_set_faults(sim_, 0, 0, (uint64_t)(1 + b % 32) * MiB) == GALLOC_OK); break;
        default: CHECK(a_, ga_sim_set_faults(sim_, 0, 0, 0) == GALLOC_OK); break;
        }
    }

    // History and its readers: recording on or off (ring sizes small enough to
    // wrap), an annotation, the summary table, a snapshot of the current state.
    void Trace()
    {
        uint8_t b = in_.U8(), n = in_.U8();
        switch (b % 4) {
        case 0: {
            galloc_history_options_t o = {sizeof o, (galloc_history_t)(n % 3), (galloc_context_t)((n >> 2) % 4),
                                          (n & 0x80) ? GALLOC_STACKS_ALL : GALLOC_STACKS_PYTHON,
                                          (size_t)(1 + (n >> 4) % 8) * 8};
            Expect(galloc_record_memory_history(a_, &o), GALLOC_OK, "record_memory_history");
            break;
        }
        case 1: Expect(galloc_record_annotation(a_, n & 1 ? "START" : "END", "fuzz"), GALLOC_OK, "annotation"); break;
        case 2: {
            static char buf[8192];
            size_t needed = 0;
            Expect(galloc_memory_summary(a_, n & 1, buf, (size_t)n * 32, &needed), GALLOC_OK, "memory_summary");
            CHECK(a_, n == 0 || std::strlen(buf) == std::min(needed, (size_t)n * 32 - 1));
            break;
        }
        default:
            Expect(galloc_snapshot_write(a_, "/dev/null", n & 1 ? GALLOC_SNAPSHOT_JSON : GALLOC_SNAPSHOT_PICKLE),
                   GALLOC_OK, "snapshot_write");
        }
    }

    void Step(uint8_t op)
    {
        switch (op % 15) {
        case 0:
        case 1:
        case 2: Malloc(); break;
        case 3:
        case 4: Free(); break;
        case 5: BogusFree(); break;
        case 6: RecordStream(); break;
        case 7: Expect(galloc_stream_synchronize(a_, Stream()), GALLOC_OK, "stream_synchronize"); break;
        case 8: Expect(galloc_empty_cache(a_), GALLOC_OK, "empty_cache"); break;
        case 9: Fraction(); break;
        case 10: MemPool(); break;
        case 11: Faults(); break;
        case 12: Expect(galloc_stats_reset_peak(a_), GALLOC_OK, "reset_peak"); break;
        case 14: Trace(); break;
        default: Expect(galloc_stats_reset_accumulated(a_), GALLOC_OK, "reset_accumulated"); break;
        }
    }

    void Verify()
    {
        Expect(galloc_check(a_), GALLOC_OK, "galloc_check");
        galloc_stats_t st;
        st.struct_size = sizeof st;
        Expect(galloc_memory_stats(a_, &st), GALLOC_OK, "memory_stats");
        int64_t requested = 0;
        for (const auto &b : live_)
            requested += (int64_t)b.second;
        CHECK(a_, st.allocation[GALLOC_STAT_ALL].current == (int64_t)live_.size());
        CHECK(a_, st.allocated_bytes[GALLOC_STAT_ALL].current >= requested);
        CHECK(a_, st.requested_bytes[GALLOC_STAT_ALL].current >= requested); // pending frees still count
        CHECK(a_, st.reserved_bytes[GALLOC_STAT_ALL].current >= st.active_bytes[GALLOC_STAT_ALL].current);
        CHECK(a_, st.active_bytes[GALLOC_STAT_ALL].current >= st.allocated_bytes[GALLOC_STAT_ALL].current);
        for (int i = 0; i < GALLOC_STAT_POOLS; i++)
            CHECK(a_, st.reserved_bytes[i].peak >= st.reserved_bytes[i].current &&
                          st.allocated_bytes[i].peak >= st.allocated_bytes[i].current &&
                          st.allocation[i].current >= 0 && st.segment[i].current >= 0);
        ga_sim_counters_t c;
        CHECK(a_, ga_sim_counters(sim_, &c) == GALLOC_OK);
        CHECK(a_, c.violations == 0);
        CHECK(a_, (int64_t)c.used_bytes == st.reserved_bytes[GALLOC_STAT_ALL].current);
        size_t free_b = 0, total = 0;
        Expect(galloc_memory_info(a_, &free_b, &total), GALLOC_OK, "memory_info");
        CHECK(a_, total == 256 * MiB && free_b == total - c.used_bytes);
    }

    void Finish()
    {
        CHECK(a_, ga_sim_set_faults(sim_, 0, 0, 0) == GALLOC_OK);
        for (Pool &p : pools_) {
            if (p.routed)
                Expect(galloc_mempool_end_allocate(a_, p.id), GALLOC_OK, "mempool_end at the end");
            if (!p.released)
                Expect(galloc_mempool_release(a_, p.id), GALLOC_OK, "mempool_release at the end");
        }
        for (const auto &b : live_)
            Expect(galloc_free(a_, reinterpret_cast<void *>(b.first)), GALLOC_OK, "free at the end");
        live_.clear();
        Expect(galloc_empty_cache(a_), GALLOC_OK, "empty_cache at the end");
        Verify();
        galloc_stats_t st;
        st.struct_size = sizeof st;
        galloc_memory_stats(a_, &st);
        CHECK(a_, st.reserved_bytes[GALLOC_STAT_ALL].current == 0);
        CHECK(a_, st.active[GALLOC_STAT_ALL].current == 0);
        galloc_allocator_destroy(a_);
        ga_sim_counters_t closed;
        CHECK(nullptr, simwatch_last_close(&closed));
        CHECK(nullptr, simwatch_counters_clean(&closed));
    }

    Bytes &in_;
    galloc_allocator_t *a_ = nullptr;
    void *sim_ = nullptr;
    std::map<uintptr_t, size_t> live_; // address -> requested size
    uintptr_t freed_[16] = {};         // recently freed addresses
    size_t freed_n_ = 0;
    std::vector<Pool> pools_;
};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    Bytes in(data, size);
    Driver d(in);
    if (d.Open())
        d.Run();
    return 0;
}
