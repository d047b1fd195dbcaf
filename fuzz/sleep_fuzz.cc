// sleep_fuzz: libFuzzer target for sleep and wake (api/galloc_sleep.h) with a
// device fault at a call the fuzzer chooses.
//
// The allocator runs on the sim device in backed mode (device memory is host
// memory, so contents can be checked) through simwatch. Byte 0 picks the
// settings (expandable segments, the device's size). Then each op is an
// opcode byte and its arguments: malloc in tag a or b (galloc_tag_begin,
// malloc, galloc_tag_end), an untagged malloc, a free (allowed while its tag
// sleeps), galloc_sleep of a tag list offloading another, galloc_wake,
// galloc_sleep_prepare, empty_cache, stream_synchronize. Sleep, wake,
// prepare and empty_cache may run with a fault at their k-th device call
// (sim's op faults: that call only, or every call from it on), malloc with a
// failing device allocation. Each block is filled with a pattern when made.
// After EVERY op, whatever it returned:
//   - galloc_check passes; the device's used bytes equal reserved_bytes and
//     it saw no contract violation;
//   - each tag is fully awake or fully asleep: galloc_tag_asleep agrees with
//     tags_asleep; an awake tag's blocks hold their pattern unless the tag was
//     put to sleep without offloading (then they are refilled); an asleep
//     tag that offloads holds at least its blocks' bytes on the host
//     (bytes_offloaded), and the host holds them (live host bytes);
//   - a malloc in a sleeping tag is refused with GALLOC_E_ASLEEP;
//   - untagged blocks always hold their pattern.
// At the end, faults off: a wake of every tag succeeds and gives back every
// offloaded block's contents (or, where an awake tag's cached segments and the
// slept bytes exceed the device, fails as an OOM and changes nothing), everything is freed, the cache emptied,
// reserved is 0 (the tags' own pools aside: they are kept for the
// allocator's life), and after destroy the device holds nothing.
#include <cstring>
#include <map>
#include <string>
#include <vector>

extern "C" {
#include <galloc/galloc.h>
#include "tests/reliability/simwatch.h"
}

#include "fuzz/fuzz_util.h"

namespace {

const char kTarget[] = "sleep_fuzz";
constexpr size_t KiB = 1024, MiB = 1024 * KiB;
constexpr size_t kMaxOps = 300;
constexpr size_t kStamp = 4096; // a stamp every 4 KiB: checking stays cheap

struct Block {
    int tag;       // 0, 1: tags a, b; 2: untagged
    size_t size;   // requested
    unsigned seed; // its pattern
    bool defined;  // contents must hold the pattern (false: discarded by a sleep)
};

struct Tag {
    bool made = false;    // begun once: the allocator knows it
    bool asleep = false;  // the model's view, checked against galloc_tag_asleep
    bool offload = false; // its contents were offloaded when it went to sleep
};

const char *const kTagName[2] = {"a", "b"};

class Driver {
  public:
    explicit Driver(fuzz::Bytes &in) : in_(in) {}

    void Open()
    {
        uint8_t f = in_.U8();
        capacity_ = (f & 2 ? 48 : 96) * MiB;
        std::string conf = "sim_backed:True,sim_capacity:" + std::to_string(capacity_);
        if (f & 1)
            conf += ",expandable_segments:True";
        FUZZ_CHECK(simwatch_register() == GALLOC_OK, "");
        char err[GALLOC_ERROR_MAX] = "";
        FUZZ_CHECK(galloc_allocator_create("simwatch", 0, conf.c_str(), &a_, err, sizeof err) == GALLOC_OK, err);
        sim_ = simwatch_last_state();
    }

    void Run()
    {
        for (size_t i = 0; i < kMaxOps && !in_.Empty(); i++) {
            Step(in_.U8());
            Verify();
        }
        Finish();
    }

  private:
    std::string Err()
    {
        char m[GALLOC_ERROR_MAX] = "";
        galloc_last_error(a_, m, sizeof m);
        return m;
    }
    size_t Size()
    {
        uint8_t c = in_.U8();
        uint32_t r = in_.U16();
        switch (c % 4) {
        case 0: return 512 * (1 + r % 16);           // small blocks
        case 1: return 512 * (1 + r % 2048);         // up to 1 MiB: the small pool's edge
        case 2: return MiB + 512 * (r % 8192);       // large, sharing a segment or a page
        default: return 8 * MiB + 4096 * (r % 4096); // a segment or several pages of its own
        }
    }
    static unsigned char Fill(unsigned seed) { return (unsigned char)(seed * 37 + 11); }
    void Write(void *p, const Block &b)
    {
        unsigned char *c = static_cast<unsigned char *>(p);
        std::memset(c, Fill(b.seed), b.size);
        for (size_t off = 0; off < b.size; off += kStamp)
            c[off] = (unsigned char)(b.seed ^ (off / kStamp));
        c[b.size - 1] = (unsigned char)~b.seed;
    }
    bool Intact(const void *p, const Block &b)
    {
        const unsigned char *c = static_cast<const unsigned char *>(p);
        for (size_t off = 0; off < b.size; off += kStamp) {
            size_t mid = off + kStamp / 2;
            if (c[off] != (unsigned char)(b.seed ^ (off / kStamp)) || (mid < b.size - 1 && c[mid] != Fill(b.seed)))
                return false;
        }
        return c[b.size - 1] == (unsigned char)~b.seed;
    }

    // A device fault at the k-th device call of the next operation (op
    // faults: memory, host, copy and sync calls), that call only or every
    // call from it on; or none.
    void ArmFault()
    {
        uint8_t b = in_.U8();
        if (b % 4 == 0)
            return;
        ga_sim_counters_t c;
        FUZZ_CHECK(ga_sim_counters(sim_, &c) == GALLOC_OK, "");
        uint64_t at = c.op_calls + 1 + (b >> 2) % 24;
        FUZZ_CHECK(b % 4 == 3 ? ga_sim_set_op_faults(sim_, 0, at) == GALLOC_OK
                              : ga_sim_set_op_faults(sim_, at, 0) == GALLOC_OK,
                   "");
    }
    void Disarm()
    {
        FUZZ_CHECK(ga_sim_set_op_faults(sim_, 0, 0) == GALLOC_OK, "");
        FUZZ_CHECK(ga_sim_set_faults(sim_, 0, 0, 0) == GALLOC_OK, "");
    }

    void Malloc(int tag)
    {
        size_t n = Size();
        if (in_.U8() & 1) { // the device allocation fails: malloc frees cached blocks, retries or reports OOM
            ga_sim_counters_t c;
            FUZZ_CHECK(ga_sim_counters(sim_, &c) == GALLOC_OK, "");
            FUZZ_CHECK(ga_sim_set_faults(sim_, c.alloc_calls + 1, 0, 0) == GALLOC_OK, "");
        }
        if (tag < 2) {
            FUZZ_CHECK(galloc_tag_begin(a_, kTagName[tag]) == GALLOC_OK, Err().c_str());
            tags_[tag].made = true;
        }
        void *p = nullptr;
        galloc_status_t st = galloc_malloc(a_, n, 0, &p);
        if (tag < 2)
            FUZZ_CHECK(galloc_tag_end(a_, kTagName[tag]) == GALLOC_OK, Err().c_str());
        Disarm();
        if (tag < 2 && tags_[tag].asleep) {
            FUZZ_CHECK(st == GALLOC_E_ASLEEP, "a malloc in a sleeping tag is refused");
            return;
        }
        if (st == GALLOC_E_OOM)
            return;
        FUZZ_CHECK(st == GALLOC_OK && p != nullptr, Err().c_str());
        Block b = {tag, n, next_seed_++, true};
        Write(p, b);
        live_[p] = b;
    }

    void Free()
    {
        if (live_.empty())
            return;
        auto it = live_.begin();
        std::advance(it, in_.U8() % live_.size());
        FUZZ_CHECK(galloc_free(a_, it->first) == GALLOC_OK, Err().c_str());
        live_.erase(it);
    }

    // A tag list: a, b, both, or every tag (NULL).
    const char *List(uint8_t b, bool in[2])
    {
        static const char *const l[] = {"a", "b", "a,b", nullptr};
        in[0] = b % 4 != 1;
        in[1] = b % 4 != 0;
        return l[b % 4];
    }
    bool Known(const bool in[2]) const { return (!in[0] || tags_[0].made) && (!in[1] || tags_[1].made); }

    void Sleep()
    {
        bool in[2], off[2];
        uint8_t b = in_.U8();
        const char *tags = List(b, in);
        const char *offload = b & 4 ? List(b >> 3, off) : nullptr;
        if (offload == nullptr)
            off[0] = off[1] = false;
        ArmFault();
        galloc_status_t st = galloc_sleep(a_, tags, offload);
        Disarm();
        if (tags == nullptr) { // every tag the allocator has
            in[0] = tags_[0].made;
            in[1] = tags_[1].made;
        }
        bool known = Known(in) && (offload == nullptr || Known(off));
        if (!known) {
            char d[200];
            std::snprintf(d, sizeof d, "galloc_sleep(%s, %s): %s (tags made: a %d, b %d)", tags ? tags : "NULL",
                          offload ? offload : "NULL", galloc_status_name(st), tags_[0].made, tags_[1].made);
            FUZZ_CHECK(st == GALLOC_E_INVAL, d); // sleep of an unknown tag is refused
            return;
        }
        for (int t = 0; t < 2; t++) {
            if (!in[t] || tags_[t].asleep)
                continue; // a tag asleep stays so, with its offload choice
            int asleep = -1;
            FUZZ_CHECK(galloc_tag_asleep(a_, kTagName[t], &asleep) == GALLOC_OK, "");
            if (asleep == 1) {
                tags_[t].asleep = true;
                tags_[t].offload = off[t];
                for (auto &kv : live_)
                    if (kv.second.tag == t && !off[t])
                        kv.second.defined = false;
            }
        }
        if (st == GALLOC_OK)
            for (int t = 0; t < 2; t++)
                FUZZ_CHECK(!in[t] || tags_[t].asleep, "a successful sleep leaves its tags asleep");
    }

    void Wake()
    {
        bool in[2];
        const char *tags = List(in_.U8(), in);
        ArmFault();
        galloc_status_t st = galloc_wake(a_, tags);
        Disarm();
        if (tags == nullptr) {
            in[0] = tags_[0].made;
            in[1] = tags_[1].made;
        } else if (!Known(in)) {
            FUZZ_CHECK(st == GALLOC_E_INVAL, "wake of an unknown tag is refused");
            return;
        }
        Woken(in);
        if (st == GALLOC_OK)
            for (int t = 0; t < 2; t++)
                FUZZ_CHECK(!in[t] || !tags_[t].asleep, "a successful wake leaves its tags awake");
    }

    // Tags that woke: offloaded contents are back (checked in Verify);
    // discarded ones are undefined, so they get a fresh pattern.
    void Woken(const bool in[2])
    {
        for (int t = 0; t < 2; t++) {
            if (!in[t] || !tags_[t].asleep)
                continue;
            int asleep = -1;
            FUZZ_CHECK(galloc_tag_asleep(a_, kTagName[t], &asleep) == GALLOC_OK, "");
            if (asleep == 1)
                continue;
            tags_[t].asleep = false;
            for (auto &kv : live_) {
                if (kv.second.tag == t && !kv.second.defined) {
                    kv.second.seed = next_seed_++;
                    kv.second.defined = true;
                    Write(kv.first, kv.second);
                }
            }
        }
    }

    void Prepare()
    {
        bool in[2], off[2];
        uint8_t b = in_.U8();
        const char *tags = List(b, in);
        const char *offload = List(b >> 2, off);
        if (offload == nullptr) // as offload_tags, NULL names no tag
            off[0] = off[1] = false;
        ArmFault();
        galloc_status_t st = galloc_sleep_prepare(a_, tags, offload);
        Disarm();
        if (tags != nullptr && !(Known(in) && Known(off)))
            FUZZ_CHECK(st == GALLOC_E_INVAL, "prepare of an unknown tag is refused");
    }

    void Step(uint8_t op)
    {
        switch (op % 12) {
        case 0:
        case 1: Malloc(0); break;
        case 2: Malloc(1); break;
        case 3: Malloc(2); break;
        case 4:
        case 5: Free(); break;
        case 6:
        case 7: Sleep(); break;
        case 8:
        case 9: Wake(); break;
        case 10: Prepare(); break;
        default:
            ArmFault();
            (void)galloc_empty_cache(a_); // a refused free keeps its segment: checked below
            Disarm();
            break;
        }
    }

    void Verify()
    {
        FUZZ_CHECK(galloc_check(a_) == GALLOC_OK, Err().c_str());
        galloc_stats_t st = {};
        st.struct_size = sizeof st;
        FUZZ_CHECK(galloc_memory_stats(a_, &st) == GALLOC_OK, "");
        ga_sim_counters_t c;
        FUZZ_CHECK(ga_sim_counters(sim_, &c) == GALLOC_OK && c.violations == 0, "no contract violation");
        FUZZ_CHECK((int64_t)c.used_bytes == st.reserved_bytes[GALLOC_STAT_ALL].current, "device used == reserved");
        FUZZ_CHECK(st.allocation[GALLOC_STAT_ALL].current == (int64_t)live_.size(), "live blocks");
        galloc_sleep_stats_t ss;
        FUZZ_CHECK(galloc_sleep_stats(a_, &ss) == GALLOC_OK, "");
        uint64_t asleep = 0, offloaded = 0;
        for (int t = 0; t < 2; t++) {
            if (!tags_[t].made)
                continue;
            int s = -1;
            FUZZ_CHECK(galloc_tag_asleep(a_, kTagName[t], &s) == GALLOC_OK, "");
            FUZZ_CHECK(s == (tags_[t].asleep ? 1 : 0), "the tag is as the model says (fully awake or asleep)");
            asleep += tags_[t].asleep;
        }
        for (const auto &kv : live_) {
            const Block &b = kv.second;
            if (b.tag < 2 && tags_[b.tag].asleep) {
                if (tags_[b.tag].offload)
                    offloaded += b.size;
                continue;
            }
            FUZZ_CHECK(!b.defined || Intact(kv.first, b), "an awake block holds its contents");
        }
        FUZZ_CHECK(ss.tags_asleep == asleep, "tags_asleep");
        FUZZ_CHECK(ss.bytes_offloaded >= offloaded, "an asleep tag's offloaded bytes are all held");
        FUZZ_CHECK(c.live_host_bytes >= ss.bytes_offloaded, "the host holds the offloaded bytes");
    }

    void Finish()
    {
        Disarm();
        if (tags_[0].made || tags_[1].made) {
            for (auto it = live_.begin(); it != live_.end();) { // room for the wake
                if (it->second.tag == 2) {
                    FUZZ_CHECK(galloc_free(a_, it->first) == GALLOC_OK, "");
                    it = live_.erase(it);
                } else {
                    ++it;
                }
            }
            FUZZ_CHECK(galloc_empty_cache(a_) == GALLOC_OK, Err().c_str());
            // An awake tag's pool keeps its cached segments (a private pool in use,
            // as PyTorch's): when those and the slept bytes exceed the device, the
            // wake must fail as an OOM and leave every tag as it was.
            galloc_stats_t st = {};
            st.struct_size = sizeof st;
            galloc_sleep_stats_t ss;
            FUZZ_CHECK(galloc_memory_stats(a_, &st) == GALLOC_OK && galloc_sleep_stats(a_, &ss) == GALLOC_OK, "");
            bool room = (uint64_t)st.reserved_bytes[GALLOC_STAT_ALL].current + ss.bytes_asleep <= capacity_;
            galloc_status_t w = galloc_wake(a_, nullptr);
            FUZZ_CHECK(w == GALLOC_OK || (!room && w == GALLOC_E_OOM), Err().c_str());
            bool all[2] = {tags_[0].made, tags_[1].made};
            Woken(all);
            Verify();
        }
        for (const auto &kv : live_)
            FUZZ_CHECK(galloc_free(a_, kv.first) == GALLOC_OK, "");
        live_.clear();
        FUZZ_CHECK(galloc_empty_cache(a_) == GALLOC_OK, Err().c_str());
        Verify();
        galloc_stats_t st = {};
        st.struct_size = sizeof st;
        galloc_memory_stats(a_, &st);
        galloc_sleep_stats_t ss;
        galloc_sleep_stats(a_, &ss);
        char d[160];
        std::snprintf(d, sizeof d, "reserved %lld, asleep %llu, tags asleep %llu, %s",
                      (long long)st.reserved_bytes[GALLOC_STAT_ALL].current, (unsigned long long)ss.bytes_asleep,
                      (unsigned long long)ss.tags_asleep, Err().c_str());
        // A tag's pool is held by the tag for the allocator's life (docs/sleep.md): its cached
        // segments go back at destroy, checked below; everything else goes now.
        FUZZ_CHECK(tags_[0].made || tags_[1].made || st.reserved_bytes[GALLOC_STAT_ALL].current == 0, d);
        galloc_allocator_destroy(a_);
        ga_sim_counters_t closed;
        FUZZ_CHECK(simwatch_last_close(&closed), "");
        FUZZ_CHECK(simwatch_counters_clean(&closed), "nothing left on the device");
    }

    fuzz::Bytes &in_;
    galloc_allocator_t *a_ = nullptr;
    void *sim_ = nullptr;
    Tag tags_[2];
    std::map<void *, Block> live_;
    unsigned next_seed_ = 1;
    uint64_t capacity_ = 0; // the sim device's bytes
};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz::Bytes in(data, size);
    Driver d(in);
    d.Open();
    d.Run();
    return 0;
}
