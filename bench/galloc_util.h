// galloc_util.h: what every galloc benchmark needs around the public API: an
// allocator created or the run stopped, an adaptor for the loops of
// pair_kernels.h, and stats read back as benchmark counters.
//
// A benchmark that hits an error stops the whole run with the allocator's
// message (Die): a number measured on a failing path would be meaningless.
//
// Thread-safety: as galloc's own calls (every call takes the allocator's lock).
#ifndef GALLOC_BENCH_GALLOC_UTIL_H
#define GALLOC_BENCH_GALLOC_UTIL_H

#include <cstddef>
#include <cstdint>

#include <galloc/galloc.h>

namespace bench {

// Print what failed with the allocator's last error and abort.
[[noreturn]] void Die(galloc_allocator_t *a, const char *what, galloc_status_t st);

// A sim allocator configured by conf, or the run stops.
galloc_allocator_t *CreateOrDie(const char *conf);

// galloc_check, then destroy (NULL is a no-op); stops the run on a violation.
void CheckAndDestroy(galloc_allocator_t *a);

// A copy of every stat.
galloc_stats_t Stats(galloc_allocator_t *a);

// The pair loops' adaptor: one allocator, one stream.
struct GallocAdaptor {
    galloc_allocator_t *a;
    galloc_stream_t stream;

    void *Alloc(size_t n)
    {
        void *p;
        galloc_status_t st = galloc_malloc(a, n, stream, &p);
        if (__builtin_expect(st != GALLOC_OK, 0))
            Die(a, "galloc_malloc", st);
        return p;
    }
    void Free(void *p)
    {
        galloc_status_t st = galloc_free(a, p);
        if (__builtin_expect(st != GALLOC_OK, 0))
            Die(a, "galloc_free", st);
    }
};

} // namespace bench

#endif // GALLOC_BENCH_GALLOC_UTIL_H
