// galloc_util.cc: see galloc_util.h.
#include "bench/galloc_util.h"

#include <cstdio>
#include <cstdlib>

namespace bench {

void Die(galloc_allocator_t *a, const char *what, galloc_status_t st)
{
    char msg[GALLOC_ERROR_MAX] = "";
    if (a != nullptr)
        galloc_last_error(a, msg, sizeof msg);
    std::fprintf(stderr, "bench: %s failed: %s: %s\n", what, galloc_strerror(st), msg);
    std::abort();
}

galloc_allocator_t *CreateOrDie(const char *conf)
{
    galloc_allocator_t *a = nullptr;
    char err[GALLOC_ERROR_MAX];
    galloc_status_t st = galloc_allocator_create("sim", 0, conf, &a, err, sizeof err);
    if (st != GALLOC_OK) {
        std::fprintf(stderr, "bench: galloc_allocator_create(\"%s\") failed: %s\n", conf, err);
        std::abort();
    }
    return a;
}

void CheckAndDestroy(galloc_allocator_t *a)
{
    if (a == nullptr)
        return;
    galloc_status_t st = galloc_check(a);
    if (st != GALLOC_OK)
        Die(a, "galloc_check", st);
    galloc_allocator_destroy(a);
}

galloc_stats_t Stats(galloc_allocator_t *a)
{
    galloc_stats_t s = {};
    s.struct_size = sizeof s;
    galloc_status_t st = galloc_memory_stats(a, &s);
    if (st != GALLOC_OK)
        Die(a, "galloc_memory_stats", st);
    return s;
}

} // namespace bench
