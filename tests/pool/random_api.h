// random_api.h: random_model.h's harness through the public API: a Target
// over a galloc_allocator_t (cache hits and plain frees take the stripe
// path, pool/stripe_path.c) and run_api, run() on an allocator of its own.
#ifndef GALLOC_TESTS_POOL_RANDOM_API_H
#define GALLOC_TESTS_POOL_RANDOM_API_H

#include "tests/pool/random_model.h"

extern "C" {
#include <galloc/galloc.h>
}

namespace galloc_random {

// An allocator through the public API: malloc and free take the stripe path
// (pool/stripe_path.c) where they can, every other call the locked path.
class ApiTarget : public Target {
  public:
    explicit ApiTarget(galloc_allocator_t *a) : a_(a) {}
    galloc_status_t malloc(size_t n, uintptr_t stream, uintptr_t *addr) override
    {
        void *p = nullptr;
        galloc_status_t st = galloc_malloc(a_, n, stream, &p);
        *addr = (uintptr_t)p;
        return st;
    }
    galloc_status_t free(uintptr_t addr) override { return galloc_free(a_, (void *)addr); }
    galloc_status_t empty_cache() override { return galloc_empty_cache(a_); }
    galloc_status_t record_stream(uintptr_t addr, uintptr_t stream) override
    {
        return galloc_record_stream(a_, (void *)addr, stream);
    }
    galloc_status_t stream_sync(uintptr_t stream) override { return galloc_stream_synchronize(a_, stream); }
    galloc_status_t check() override { return galloc_check(a_); }
    void stats(galloc_stats_t *out) override { EXPECT_EQ(galloc_memory_stats(a_, out), GALLOC_OK); }
    std::string error() override
    {
        char msg[GALLOC_ERROR_MAX] = "";
        galloc_last_error(a_, msg, sizeof msg);
        return msg;
    }

  private:
    galloc_allocator_t *a_;
};

// run() through the public API on an allocator of its own: the same
// workload and the same exact checks after every step, with cache hits and
// frees on the stripe path and their statistics through its escrow.
inline Model run_api(const char *conf, Model m, int steps, uint64_t seed, bool streams)
{
    SCOPED_TRACE(std::string("api conf '") + conf + "' seed " + std::to_string(seed));
    galloc_allocator_t *a = nullptr;
    char err[GALLOC_ERROR_MAX] = "";
    std::string full =
        std::string(conf) + (conf[0] != '\0' ? "," : "") + "sim_capacity:" + std::to_string(m.capacity >> 20) + "MiB";
    EXPECT_EQ(galloc_allocator_create_ex("sim", 0, full.c_str(), GALLOC_CREATE_NO_ENV, &a, err, sizeof err), GALLOC_OK)
        << err;
    if (a == nullptr)
        return m;
    Model r = m;
    {
        ApiTarget t(a);
        Options o;
        o.streams = streams;
        Harness h(t, m, seed, o);
        for (int i = 0; i < steps && !::testing::Test::HasFatalFailure(); i++)
            h.step(i);
        r = h.model();
    }
    galloc_allocator_destroy(a);
    EXPECT_GT(r.ooms, 0);
    EXPECT_GT(r.mallocs, steps / 3);
    return r;
}

} // namespace galloc_random

#endif
