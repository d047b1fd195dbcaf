// snapshot_roundtrip_fuzz: libFuzzer target for galloc's snapshot writer
// (galloc_snapshot_write, trace/) read back by galloc's own snapshot reader
// (tools/snapshot: the pickle decoder and the schema walker).
//
// Byte 0 picks the settings (expandable segments, the history's context and
// ring size); then each op is an opcode byte and its arguments: malloc
// (size, stream), free, a free after record_stream on another stream (its
// free_completed comes later), empty_cache, an annotation. History is
// recorded from the start with a frames callback that names the op. At the
// end the snapshot is written as a pickle and read back. Checked:
//   - it parses as a dict with segments and one device trace;
//   - the trace's alloc and free_requested entries are, in order, the calls
//     made (address, requested size, stream; with a ring buffer, the newest
//     of them), and each carries the frames the callback gave for its op when
//     the context records them; every free_completed follows its
//     free_requested;
//   - the segments are the allocator's state: each block tiles its segment
//     from its address, the active_allocated blocks are exactly the live
//     allocations (address and requested size), active_pending_free ones the
//     frees still waiting (when the whole trace was kept), the total sizes
//     sum to reserved_bytes and the allocated blocks' sizes to
//     allocated_bytes.
// With GALLOC_FUZZ_SNAPSHOT_DIR set, each snapshot is also kept there as
// N.pickle and N.json (galloc's JSON of the same dict), so Python's pickle can
// check them too: fuzz/check_snapshots.py DIR.
#include <cinttypes>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

extern "C" {
#include <galloc/galloc.h>
#include "tests/reliability/simwatch.h"
#include "tools/snapshot/snapfile.h"
#include "tools/snapshot/torch_snapshot.h"
}

#include "fuzz/fuzz_util.h"

namespace {

const char kTarget[] = "snapshot_roundtrip_fuzz";
constexpr size_t MiB = 1 << 20;
constexpr size_t kMaxOps = 400;

fuzz::MemFile file;
int64_t current_op = 0; // the frames callback's line: which op made the call

size_t Frames(void *, galloc_frame_t *frames, size_t max)
{
    if (max < 2)
        return 0;
    frames[0] = {"fuzz.py", "op", current_op};
    frames[1] = {"driver.py", "main", 7};
    return 2;
}

struct Call {
    bool alloc; // alloc, else free_requested
    uint64_t addr, size, stream;
    int64_t op;
};

std::string Str(const char *p, size_t n)
{
    return p ? std::string(p, n) : std::string();
}

class Driver {
  public:
    explicit Driver(fuzz::Bytes &in) : in_(in) {}

    void Run()
    {
        uint8_t f = in_.U8(), g = in_.U8();
        std::string conf = "sim_capacity:512MiB";
        if (f & 1)
            conf += ",expandable_segments:True";
        FUZZ_CHECK(simwatch_register() == GALLOC_OK, "");
        char err[GALLOC_ERROR_MAX] = "";
        FUZZ_CHECK(galloc_allocator_create("simwatch", 0, conf.c_str(), &a_, err, sizeof err) == GALLOC_OK, err);
        FUZZ_CHECK(galloc_set_frames_callback(a_, Frames, nullptr) == GALLOC_OK, "");
        context_ = (galloc_context_t)((f >> 1) % 4);
        ring_ = g % 4 == 0 ? (size_t)1 + g / 4 : 0; // 0: every entry
        galloc_history_options_t o = {sizeof o, GALLOC_HISTORY_ALL, context_, GALLOC_STACKS_PYTHON, ring_};
        FUZZ_CHECK(galloc_record_memory_history(a_, &o) == GALLOC_OK, "");
        for (size_t i = 0; i < kMaxOps && !in_.Empty(); i++) {
            current_op = (int64_t)i + 1;
            Step(in_.U8());
        }
        current_op = 0;
        Check();
        galloc_allocator_destroy(a_);
        ga_sim_counters_t closed;
        FUZZ_CHECK(simwatch_last_close(&closed) && simwatch_counters_clean(&closed), "nothing left on the device");
    }

  private:
    size_t Size()
    {
        uint8_t c = in_.U8();
        uint32_t r = in_.U16();
        switch (c % 4) {
        case 0: return 1 + r % 4096;
        case 1: return 1 + r * 16 % MiB;
        case 2: return MiB + 1 + r * 160 % (9 * MiB);
        default: return 10 * MiB + r * 800 % (60 * MiB);
        }
    }
    void Malloc()
    {
        size_t n = Size();
        galloc_stream_t s = in_.U8() % 3;
        void *p = nullptr;
        galloc_status_t st = galloc_malloc(a_, n, s, &p);
        if (st == GALLOC_E_OOM)
            return;
        FUZZ_CHECK(st == GALLOC_OK && p != nullptr, "");
        live_[(uint64_t)(uintptr_t)p] = {n, s};
        calls_.push_back({true, (uint64_t)(uintptr_t)p, n, s, current_op});
    }
    void Free(bool other_stream)
    {
        if (live_.empty())
            return;
        auto it = live_.begin();
        std::advance(it, in_.U8() % live_.size());
        void *p = (void *)(uintptr_t)it->first;
        if (other_stream) {
            FUZZ_CHECK(galloc_record_stream(a_, p, it->second.second + 1) == GALLOC_OK, "");
            pending_.insert(it->first);
        }
        FUZZ_CHECK(galloc_free(a_, p) == GALLOC_OK, "");
        calls_.push_back({false, it->first, it->second.first, it->second.second, current_op});
        live_.erase(it);
    }
    void Step(uint8_t op)
    {
        switch (op % 8) {
        case 0:
        case 1:
        case 2: Malloc(); break;
        case 3:
        case 4: Free(false); break;
        case 5: Free(true); break;
        case 6: FUZZ_CHECK(galloc_empty_cache(a_) == GALLOC_OK, ""); break;
        default: FUZZ_CHECK(galloc_record_annotation(a_, "START", "step") == GALLOC_OK, ""); break;
        }
    }

    void Keep(const char *dir)
    {
        static unsigned n = 0;
        std::string base = std::string(dir) + "/" + std::to_string(n++);
        FUZZ_CHECK(galloc_snapshot_write(a_, (base + ".pickle").c_str(), GALLOC_SNAPSHOT_PICKLE) == GALLOC_OK, "");
        FUZZ_CHECK(galloc_snapshot_write(a_, (base + ".json").c_str(), GALLOC_SNAPSHOT_JSON) == GALLOC_OK, "");
    }

    void Check()
    {
        galloc_stats_t st = {};
        st.struct_size = sizeof st;
        FUZZ_CHECK(galloc_memory_stats(a_, &st) == GALLOC_OK, "");
        FUZZ_CHECK(galloc_snapshot_write(a_, file.Path(), GALLOC_SNAPSHOT_PICKLE) == GALLOC_OK, "");
        if (const char *dir = std::getenv("GALLOC_FUZZ_SNAPSHOT_DIR"))
            Keep(dir);
        ga_snapfile_t *f = nullptr;
        char err[1024] = "";
        FUZZ_CHECK(ga_snapfile_open(file.Path(), &f, err, sizeof err) == 0, err);
        const ga_torch_snapshot_t *s = ga_snapfile_snapshot(f);
        FUZZ_CHECK(s->is_dict && s->segments.is_list && s->traces.is_list && s->traces.n >= 1, "the snapshot's shape");
        CheckTrace(s);
        CheckSegments(s, st);
        ga_snapfile_close(f);
    }

    void CheckTrace(const ga_torch_snapshot_t *s)
    {
        ga_torch_list_t tr = ga_torch_trace(s, 0);
        FUZZ_CHECK(tr.is_list, "device 0's trace is a list");
        FUZZ_CHECK(ring_ == 0 || tr.n <= ring_ + 1, "the ring keeps at most max_entries (and the snapshot entry)");
        std::vector<Call> got;
        std::set<uint64_t> requested; // free_requested not yet completed
        bool whole = ring_ == 0;
        for (size_t i = 0; i < tr.n; i++) {
            ga_torch_entry_t e;
            ga_torch_entry(&tr, i, &e);
            FUZZ_CHECK(e.is_dict && e.action != GA_ACT_NONE, "an entry is a dict with an action");
            if (e.action == GA_ACT_FREE_COMPLETED) {
                FUZZ_CHECK(!whole || requested.erase(e.addr.v) == 1, "free_completed follows its free_requested");
                continue;
            }
            if (e.action != GA_ACT_ALLOC && e.action != GA_ACT_FREE_REQUESTED)
                continue;
            FUZZ_CHECK(e.addr.kind == GA_TORCH_INT && e.size.kind == GA_TORCH_INT && e.stream.kind == GA_TORCH_INT,
                       "addr, size and stream are ints");
            Call c = {e.action == GA_ACT_ALLOC, e.addr.v, e.size.v, e.stream.v, -1};
            bool framed = context_ == GALLOC_CONTEXT_ALL || (context_ == GALLOC_CONTEXT_ALLOC && c.alloc);
            if (framed) {
                FUZZ_CHECK(ga_torch_frames_count(e.frames) == 2, "the callback's two frames");
                ga_torch_frame_t fr;
                ga_torch_frame(e.frames, 0, &fr);
                FUZZ_CHECK(Str(fr.filename, fr.filename_len) == "fuzz.py" && Str(fr.name, fr.name_len) == "op",
                           "the callback's frame");
                c.op = fr.line;
            }
            if (!c.alloc)
                requested.insert(c.addr);
            got.push_back(c);
        }
        FUZZ_CHECK(got.size() <= calls_.size(), "no more calls than were made");
        FUZZ_CHECK(whole ? got.size() == calls_.size() : true, "every call is in the whole trace");
        size_t off = calls_.size() - got.size(); // a ring keeps the newest
        for (size_t i = 0; i < got.size(); i++) {
            const Call &w = calls_[off + i], &g = got[i];
            char d[160];
            std::snprintf(d, sizeof d, "entry %zu: %s 0x%" PRIx64 " %" PRIu64 " on %" PRIu64 " (op %" PRId64 ")", i,
                          g.alloc ? "alloc" : "free_requested", g.addr, g.size, g.stream, g.op);
            FUZZ_CHECK(g.alloc == w.alloc && g.addr == w.addr && g.size == w.size && g.stream == w.stream, d);
            FUZZ_CHECK(g.op == -1 || g.op == w.op, d);
        }
        if (whole)
            pending_left_ = requested;
    }

    void CheckSegments(const ga_torch_snapshot_t *s, const galloc_stats_t &st)
    {
        std::map<uint64_t, uint64_t> allocated; // address -> requested size
        std::set<uint64_t> pending;
        int64_t total = 0, alloc_bytes = 0;
        for (size_t i = 0; i < s->segments.n; i++) {
            ga_torch_segment_t g;
            ga_torch_segment(s, i, &g);
            FUZZ_CHECK(g.is_dict && g.address.kind == GA_TORCH_INT && g.total_size.kind == GA_TORCH_INT,
                       "a segment's address and total_size");
            FUZZ_CHECK(g.device.kind == GA_TORCH_INT && g.device.v == 0, "device 0");
            uint64_t at = g.address.v;
            for (size_t b = 0; b < g.blocks.n; b++) {
                ga_torch_block_t k;
                ga_torch_block(&g, b, &k);
                FUZZ_CHECK(k.is_dict && k.address.kind == GA_TORCH_INT && k.size.kind == GA_TORCH_INT,
                           "a block's address and size");
                FUZZ_CHECK(k.address.v == at, "blocks tile the segment from its address");
                at += k.size.v;
                if (k.state == GA_STATE_ALLOCATED) {
                    FUZZ_CHECK(k.requested_size.kind == GA_TORCH_INT, "requested_size");
                    allocated[k.address.v] = k.requested_size.v;
                    alloc_bytes += (int64_t)k.size.v;
                } else if (k.state == GA_STATE_PENDING_FREE) {
                    pending.insert(k.address.v);
                } else {
                    FUZZ_CHECK(k.state == GA_STATE_INACTIVE, "a block's state");
                }
            }
            FUZZ_CHECK(at == g.address.v + g.total_size.v, "blocks sum to total_size");
            total += (int64_t)g.total_size.v;
        }
        FUZZ_CHECK(total == st.reserved_bytes[GALLOC_STAT_ALL].current, "segments sum to reserved_bytes");
        FUZZ_CHECK(alloc_bytes == st.allocated_bytes[GALLOC_STAT_ALL].current,
                   "allocated blocks sum to allocated_bytes");
        FUZZ_CHECK(allocated.size() == live_.size(), "allocated blocks are the live allocations");
        for (const auto &kv : live_) {
            auto it = allocated.find(kv.first);
            FUZZ_CHECK(it != allocated.end() && it->second == kv.second.first, "a live allocation's block");
        }
        if (ring_ == 0)
            FUZZ_CHECK(pending == pending_left_, "pending blocks are the frees not completed");
        for (uint64_t p : pending)
            FUZZ_CHECK(pending_.count(p) == 1, "only a free after record_stream waits");
    }

    fuzz::Bytes &in_;
    galloc_allocator_t *a_ = nullptr;
    galloc_context_t context_ = GALLOC_CONTEXT_NONE;
    size_t ring_ = 0;
    std::map<uint64_t, std::pair<size_t, uint64_t>> live_; // address -> requested size, stream
    std::set<uint64_t> pending_;                           // freed after record_stream (ever)
    std::set<uint64_t> pending_left_;                      // free_requested without free_completed in the trace
    std::vector<Call> calls_;
};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz::Bytes in(data, size);
    Driver d(in);
    d.Run();
    return 0;
}
