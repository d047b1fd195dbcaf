// storm_int.h: what the storm's files share (storm.cc: the workers and the
// run; storm_control.cc: the control threads). Not for the storm's users.
#ifndef GA_TESTS_RELIABILITY_STORM_INT_H
#define GA_TESTS_RELIABILITY_STORM_INT_H

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "tests/reliability/storm.h"

namespace storm {

class Shared {
  public:
    explicit Shared(const Config &c) : c_(c), boxes_(c.streams.size()) {}
    const Config &c() const { return c_; }
    bool stopped() const { return stop_.load(std::memory_order_relaxed); }
    void Stop() { stop_.store(true); }
    // reset_peak calls begun (odd while one runs) and ended, twice each.
    uint64_t resets() const { return resets_.load(); }
    void ResetBegins() { resets_.fetch_add(1); }
    void ResetEnds() { resets_.fetch_add(1); }
    // Calm phases: see Run.
    bool calm() const { return calm_.load(std::memory_order_relaxed); }
    void SetCalm(bool on) { calm_.store(on); }
    // A call returned st where it must not: count it, keep the first message.
    void Error(const char *what, galloc_status_t st)
    {
        char msg[GALLOC_ERROR_MAX] = "";
        galloc_last_error(c_.a, msg, sizeof msg); // best effort: another thread may have failed since
        std::lock_guard<std::mutex> lock(mu_);
        if (errors_++ == 0)
            first_ = std::string(what) + ": " + galloc_status_name(st) + " (last error: " + msg + ")";
    }
    // Worker t's mailbox: blocks another worker allocated, for t to free
    // (a tensor released on another thread than the one that made it).
    void Post(size_t t, const Live &b)
    {
        std::lock_guard<std::mutex> lock(boxes_[t].mu);
        boxes_[t].blocks.push_back(b);
    }
    bool Take(size_t t, Live *b)
    {
        std::lock_guard<std::mutex> lock(boxes_[t].mu);
        if (boxes_[t].blocks.empty())
            return false;
        *b = boxes_[t].blocks.back();
        boxes_[t].blocks.pop_back();
        return true;
    }
    void Merge(Result *r)
    {
        for (Box &box : boxes_) // what no worker took: still live
            r->live.insert(r->live.end(), box.blocks.begin(), box.blocks.end());
        std::lock_guard<std::mutex> lock(mu_);
        r->errors += errors_;
        if (r->first_error.empty())
            r->first_error = first_;
    }

  private:
    const Config &c_;
    std::atomic<bool> stop_{false};
    std::atomic<bool> calm_{false};
    std::atomic<uint64_t> resets_{0};
    std::mutex mu_;
    uint64_t errors_ = 0; // guarded by mu_
    std::string first_;   // guarded by mu_
    struct Box {
        std::mutex mu;
        std::vector<Live> blocks; // guarded by mu
    };
    std::vector<Box> boxes_;
};

inline void Pause(std::mt19937_64 &rng, unsigned max_us)
{
    std::this_thread::sleep_for(std::chrono::microseconds(rng() % max_us));
}

inline std::string TagName(size_t t)
{
    return "storm" + std::to_string(t);
}

// The control threads (storm_control.cc): each loops on its call with a
// short pause until the storm stops, counting into ops.
using Counts = uint64_t[kOpCount];
using Loop = void (*)(Shared *, std::mt19937_64 &, Counts);
extern const Loop kLoops[];
extern const size_t kLoopCount;

} // namespace storm

#endif // GA_TESTS_RELIABILITY_STORM_INT_H
