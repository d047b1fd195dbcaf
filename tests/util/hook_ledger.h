// hook_ledger.h: a device-memory hook for tests (galloc_hooks.h) that
// records every event it is told and keeps the ledger the header promises:
// the ranges added (ALLOC, MAP) and not yet removed (FREE, UNMAP). It checks
// the contract as events arrive: an addition never overlaps a present range,
// a removal names exactly one present range, an UNDO only takes back a range
// this hook accepted, seq grows, struct_size and device are right. A test
// compares Bytes() with reserved_bytes.all.current (and with the driver's
// own live bytes) between calls, and asks for a refusal with RefuseAt.
//
// Lifetime: registered by Add, removed by the destructor (so a ledger may go
// out of scope before its allocator), or forgotten (Forget) once the test
// destroyed the allocator; galloc calls it until then.
//
// Thread-safety: none of its own. galloc calls a hook with the allocator's
// lock held, so one Ledger registered on one allocator needs none; the
// concurrency tests rely on that (TSan sees every access ordered by it).
#ifndef GA_TESTS_UTIL_HOOK_LEDGER_H
#define GA_TESTS_UTIL_HOOK_LEDGER_H

#include <cstdint>
#include <iterator>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

extern "C" {
#include <galloc/galloc.h>
}

namespace hook_test {

inline bool IsAddition(uint32_t kind)
{
    return kind == GALLOC_HOOK_SEGMENT_ALLOC || kind == GALLOC_HOOK_SEGMENT_MAP;
}

inline const char *KindName(uint32_t kind)
{
    switch (kind) {
    case GALLOC_HOOK_SEGMENT_ALLOC: return "ALLOC";
    case GALLOC_HOOK_SEGMENT_FREE: return "FREE";
    case GALLOC_HOOK_SEGMENT_MAP: return "MAP";
    case GALLOC_HOOK_SEGMENT_UNMAP: return "UNMAP";
    case GALLOC_HOOK_OOM: return "OOM";
    }
    return "?";
}

// "MAP 0x7f...+20971520 [undo]": one event, for messages.
inline std::string Describe(const galloc_hook_event_t &e)
{
    std::ostringstream os;
    os << KindName(e.kind) << " 0x" << std::hex << e.addr << std::dec << "+" << e.size;
    if (e.flags & GALLOC_HOOK_F_REPLAY)
        os << " [replay]";
    if (e.flags & GALLOC_HOOK_F_UNDO)
        os << " [undo]";
    if (e.flags & GALLOC_HOOK_F_RESTORED)
        os << " [restored]";
    if (e.flags & GALLOC_HOOK_F_DESTROY)
        os << " [destroy]";
    return os.str();
}

class Ledger {
  public:
    explicit Ledger(int device = 0) : device_(device) {}
    // A ledger going out of scope before its allocator stops being told;
    // after destroying the allocator call Forget (its handle may be freed).
    ~Ledger()
    {
        if (a_ != nullptr && id_ != 0)
            (void)galloc_hook_remove(a_, id_);
    }
    Ledger(const Ledger &) = delete;
    Ledger &operator=(const Ledger &) = delete;

    // Register on a (kinds 0: every kind). Returns the status; id_ is set.
    galloc_status_t Add(galloc_allocator_t *a, uint32_t kinds = 0, uint32_t flags = 0)
    {
        galloc_hook_t h = {};
        h.struct_size = sizeof h;
        h.kinds = kinds;
        h.flags = flags;
        h.fn = &Ledger::Fn;
        h.ctx = this;
        galloc_status_t st = galloc_hook_add(a, &h, &id_);
        a_ = st == GALLOC_OK ? a : nullptr;
        return st;
    }

    // The allocator was destroyed: nothing to remove from.
    void Forget() { a_ = nullptr; }

    // Refuse the n-th event told (1-based, counting every event) if it is an
    // addition that can be refused; else return non-zero for it anyway (a
    // hook that fails where it cannot refuse). 0: never.
    void RefuseAt(uint64_t n, int rc = -7)
    {
        refuse_at_ = n;
        rc_ = rc;
    }
    // Fail every event from the n-th on (1-based; 0: off): additions are
    // refused, the rest get a non-zero return galloc must ignore.
    void RefuseFrom(uint64_t n, int rc = -7)
    {
        refuse_from_ = n;
        rc_ = rc;
    }
    // Refuse every refusable addition from now on (true) or none (false).
    void RefuseAll(bool on) { refuse_all_ = on; }

    // The sum of the present ranges' sizes.
    int64_t Bytes() const
    {
        int64_t n = 0;
        for (const auto &kv : present_)
            n += (int64_t)kv.second;
        return n;
    }
    size_t Ranges() const { return present_.size(); }
    bool Present(uintptr_t addr, size_t size) const
    {
        auto it = present_.find(addr);
        return it != present_.end() && it->second == size;
    }
    const std::vector<galloc_hook_event_t> &events() const { return events_; }
    // Events of one kind, in order.
    std::vector<galloc_hook_event_t> Of(uint32_t kind) const
    {
        std::vector<galloc_hook_event_t> out;
        for (const auto &e : events_)
            if (e.kind == kind)
                out.push_back(e);
        return out;
    }
    void Clear() { events_.clear(); }
    // Contract breaks seen, "" if none.
    const std::string &errors() const { return errors_; }
    uint64_t told() const { return told_; }
    uint64_t refused() const { return refused_; }
    galloc_hook_id_t id() const { return id_; }
    // A log several ledgers share: (tag, seq) per event told, in order.
    void ShareOrder(std::vector<std::pair<int, uint64_t>> *log, int tag)
    {
        order_ = log;
        tag_ = tag;
    }
    // Called before the ledger records an event (the concurrency test's check).
    void (*on_event)(const galloc_hook_event_t *ev) = nullptr;

  private:
    static int Fn(void *ctx, const galloc_hook_event_t *ev) { return static_cast<Ledger *>(ctx)->On(*ev); }

    void Error(const galloc_hook_event_t &e, const std::string &what)
    {
        if (errors_.size() < 4000)
            errors_ += "#" + std::to_string(e.seq) + " " + Describe(e) + ": " + what + "\n";
    }

    int On(const galloc_hook_event_t &e)
    {
        if (on_event != nullptr)
            on_event(&e);
        told_++;
        events_.push_back(e);
        if (order_ != nullptr)
            order_->emplace_back(tag_, e.seq);
        if (e.struct_size != sizeof(galloc_hook_event_t))
            Error(e, "struct_size");
        if (e.device != device_)
            Error(e, "device " + std::to_string(e.device));
        if (e.seq <= last_seq_)
            Error(e, "seq does not grow after " + std::to_string(last_seq_));
        last_seq_ = e.seq;
        bool refusable = IsAddition(e.kind) && (e.flags & GALLOC_HOOK_F_RESTORED) == 0;
        bool fail =
            refuse_all_ || (refuse_at_ != 0 && told_ == refuse_at_) || (refuse_from_ != 0 && told_ >= refuse_from_);
        if (IsAddition(e.kind)) {
            if (fail && refusable) {
                refused_++;
                return rc_; // not added: galloc gives it back
            }
            auto next = present_.lower_bound(e.addr);
            if ((next != present_.end() && next->first < e.addr + e.size) ||
                (next != present_.begin() && std::prev(next)->first + std::prev(next)->second > e.addr))
                Error(e, "overlaps a present range");
            present_[e.addr] = e.size;
        } else if (e.kind == GALLOC_HOOK_SEGMENT_FREE || e.kind == GALLOC_HOOK_SEGMENT_UNMAP) {
            auto it = present_.find(e.addr);
            if (it == present_.end() || it->second != e.size)
                Error(e, "removes no present range");
            else
                present_.erase(it);
        }
        return fail ? rc_ : 0;
    }

    int device_;
    galloc_allocator_t *a_ = nullptr;
    galloc_hook_id_t id_ = 0;
    uint64_t refuse_at_ = 0, refuse_from_ = 0, told_ = 0, refused_ = 0, last_seq_ = 0;
    bool refuse_all_ = false;
    int rc_ = -7;
    std::map<uintptr_t, size_t> present_;
    std::vector<galloc_hook_event_t> events_;
    std::string errors_;
    std::vector<std::pair<int, uint64_t>> *order_ = nullptr;
    int tag_ = 0;
};

} // namespace hook_test

#endif // GA_TESTS_UTIL_HOOK_LEDGER_H
