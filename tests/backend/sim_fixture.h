// sim_fixture.h: what the sim backend's tests share: sizes, open arguments,
// and Dev, one opened sim device with shorthands for the ga_backend_* calls.
#ifndef GA_TESTS_BACKEND_SIM_FIXTURE_H
#define GA_TESTS_BACKEND_SIM_FIXTURE_H

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <set>
#include <string>

extern "C" {
#include <galloc/galloc_backend.h>
#include <galloc/galloc_status.h>
#include "backend/backend.h"
#include "backend/sim.h"
}

namespace sim_test {

constexpr uint64_t kMiB = uint64_t{1} << 20;
constexpr uint64_t kGiB = uint64_t{1} << 30;
constexpr uint64_t kPage = 2 * kMiB;

// Open arguments with sim's options ("sim_capacity:1GiB,sim_backed:True"): a
// literal, or a string that outlives the open.
inline galloc_backend_args_t OptionArgs(const char *options, int device = 0)
{
    galloc_backend_args_t a = {};
    a.struct_size = sizeof(a);
    a.device = device;
    a.options = options;
    return a;
}

// Shorthands for Args' modes: sim_backed:True, sim_manual_events:True.
constexpr uint32_t kBacked = 1u << 0, kManualEvents = 1u << 1;

// Open arguments for a sim device of capacity bytes (0: sim's default) in the
// modes flags names, as the options a config string would give.
inline galloc_backend_args_t Args(uint64_t capacity = 0, uint32_t flags = 0, int device = 0)
{
    std::string o = capacity != 0 ? "sim_capacity:" + std::to_string(capacity) : "";
    if (flags & kBacked)
        o += std::string(o.empty() ? "" : ",") + "sim_backed:True";
    if (flags & kManualEvents)
        o += std::string(o.empty() ? "" : ",") + "sim_manual_events:True";
    static std::set<std::string> kept; // the strings the args point to, for the whole run (a few dozen)
    return OptionArgs(kept.insert(o).first->c_str(), device);
}

// One opened sim device with shorthands; closed by the destructor.
class Dev {
  public:
    explicit Dev(const galloc_backend_args_t &args, const char *name = "sim")
    {
        char err[256] = "";
        galloc_status_t st = ga_backend_open(&b_, name, &args, err, sizeof(err));
        if (st != GALLOC_OK) {
            ADD_FAILURE() << "open: " << err;
            std::abort(); // every test below needs the device
        }
    }
    ~Dev() { ga_backend_close(&b_); }
    Dev(const Dev &) = delete;
    Dev &operator=(const Dev &) = delete;

    ga_backend_t *b() { return &b_; }
    void *state() { return b_.state; }
    ga_sim_counters_t counters()
    {
        ga_sim_counters_t c = {};
        EXPECT_EQ(ga_sim_counters(b_.state, &c), GALLOC_OK);
        return c;
    }
    uint64_t free_bytes()
    {
        size_t f = 0, t = 0;
        EXPECT_EQ(ga_backend_mem_info(&b_, &f, &t), GALLOC_OK);
        return f;
    }
    galloc_status_t alloc(uint64_t n, uintptr_t *a) { return ga_backend_segment_alloc(&b_, n, 0, a); }
    uintptr_t alloc_ok(uint64_t n)
    {
        uintptr_t a = 0;
        EXPECT_EQ(alloc(n, &a), GALLOC_OK) << error();
        return a;
    }
    galloc_status_t release(uintptr_t a, uint64_t n) { return ga_backend_segment_free(&b_, a, n, 0); }
    uintptr_t reserve_ok(uint64_t n)
    {
        uintptr_t a = 0;
        EXPECT_EQ(ga_backend_va_reserve(&b_, n, &a), GALLOC_OK) << error();
        return a;
    }
    galloc_status_t map(uintptr_t a, uint64_t n) { return ga_backend_map(&b_, a, n); }
    galloc_status_t unmap(uintptr_t a, uint64_t n) { return ga_backend_unmap(&b_, a, n); }
    std::string error()
    {
        char buf[256];
        ga_backend_error_string(&b_, buf, sizeof(buf));
        return buf;
    }

  private:
    ga_backend_t b_ = {};
};

} // namespace sim_test

#endif // GA_TESTS_BACKEND_SIM_FIXTURE_H
