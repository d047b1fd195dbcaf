/*
 * examples/cmake/main.c: galloc from an installed copy, found by CMake's
 * find_package(galloc) (CMakeLists.txt). One allocator on the simulated
 * device, checked against the figures PyTorch's caching allocator gives for
 * the same calls: a 1-byte request is rounded to 512 bytes and served from
 * one new 2 MiB small-pool segment; 2 GiB on a 1 GiB device fails with
 * PyTorch's out-of-memory message. Prints "ok" and exits 0, or names the
 * failed check and exits 1.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <galloc/galloc.h>

#define MiB ((int64_t)1 << 20)

#define CHECK(cond)                                                                                                    \
    do {                                                                                                               \
        if (!(cond)) {                                                                                                 \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);                                   \
            return 1;                                                                                                  \
        }                                                                                                              \
    } while (0)

int main(void)
{
    galloc_allocator_t *a;
    char msg[GALLOC_ERROR_MAX];
    if (galloc_allocator_create("sim", 0, "sim_capacity:1GiB", &a, msg, sizeof msg) != GALLOC_OK) {
        fprintf(stderr, "galloc_allocator_create: %s\n", msg);
        return 1;
    }

    void *p;
    CHECK(galloc_malloc(a, 1, 0, &p) == GALLOC_OK && p != NULL);
    galloc_stats_t s = {.struct_size = sizeof s};
    CHECK(galloc_memory_stats(a, &s) == GALLOC_OK);
    CHECK(s.allocated_bytes[GALLOC_STAT_ALL].current == 512);
    CHECK(s.reserved_bytes[GALLOC_STAT_ALL].current == 2 * MiB);
    CHECK(s.segment[GALLOC_STAT_SMALL_POOL].current == 1 && s.segment[GALLOC_STAT_LARGE_POOL].current == 0);
    int64_t requested = 0;
    CHECK(galloc_stats_lookup(&s, "requested_bytes.all.current", &requested) == GALLOC_OK && requested == 1);

    void *q;
    CHECK(galloc_malloc(a, (size_t)2 << 30, 0, &q) == GALLOC_E_OOM && q == NULL);
    CHECK(galloc_last_error(a, msg, sizeof msg) == GALLOC_E_OOM);
    CHECK(strncmp(msg, "CUDA out of memory. Tried to allocate 2.00 GiB.", 47) == 0);
    CHECK(strcmp(galloc_status_name(GALLOC_E_OOM), "E_OOM") == 0);

    CHECK(galloc_free(a, p) == GALLOC_OK);
    CHECK(galloc_empty_cache(a) == GALLOC_OK);
    CHECK(galloc_memory_stats(a, &s) == GALLOC_OK);
    CHECK(s.reserved_bytes[GALLOC_STAT_ALL].current == 0 && s.reserved_bytes[GALLOC_STAT_ALL].peak == 2 * MiB);
    CHECK(s.num_ooms == 1);
    CHECK(galloc_check(a) == GALLOC_OK);
    galloc_allocator_destroy(a);
    printf("ok: 1 B -> 512 B allocated in one 2 MiB segment; 2 GiB on 1 GiB -> %.47s\n", msg);
    return 0;
}
