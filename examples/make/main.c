/*
 * examples/make/main.c: galloc from an installed copy, built by a plain
 * Makefile with pkg-config (Makefile). The device registry
 * (galloc_device.h): one allocator per device index, figures as
 * torch.cuda.memory_allocated / memory_reserved report them for the same
 * calls: 1 byte -> 512 bytes in a 2 MiB small segment; 3 MiB -> its own
 * 20 MiB large segment (PyTorch's kLargeBuffer for 1-10 MiB requests).
 * Prints "ok" and exits 0, or names the failed check and exits 1.
 */
#include <stdint.h>
#include <stdio.h>

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
    char msg[GALLOC_ERROR_MAX];
    if (galloc_device_configure("device_backend:sim,sim_capacity:1GiB") != GALLOC_OK) {
        galloc_devices_last_error(msg, sizeof msg);
        fprintf(stderr, "galloc_device_configure: %s\n", msg);
        return 1;
    }
    void *small, *large;
    int64_t allocated, reserved, peak;
    CHECK(galloc_device_malloc(0, 1, 0, &small) == GALLOC_OK);
    CHECK(galloc_device_memory_allocated(0, &allocated) == GALLOC_OK && allocated == 512);
    CHECK(galloc_device_memory_reserved(0, &reserved) == GALLOC_OK && reserved == 2 * MiB);
    CHECK(galloc_device_malloc(0, 3 * MiB, 0, &large) == GALLOC_OK);
    CHECK(galloc_device_memory_allocated(0, &allocated) == GALLOC_OK && allocated == 512 + 3 * MiB);
    CHECK(galloc_device_memory_reserved(0, &reserved) == GALLOC_OK && reserved == 22 * MiB);
    CHECK(galloc_device_free(0, small) == GALLOC_OK && galloc_device_free(0, large) == GALLOC_OK);
    CHECK(galloc_device_empty_cache(0) == GALLOC_OK);
    CHECK(galloc_device_memory_reserved(0, &reserved) == GALLOC_OK && reserved == 0);
    CHECK(galloc_device_max_memory_reserved(0, &peak) == GALLOC_OK && peak == 22 * MiB);
    galloc_devices_shutdown();
    printf("ok: 1 B -> 512 B in 2 MiB, 3 MiB -> 20 MiB segment, 22 MiB peak reserved, 0 after empty_cache\n");
    return 0;
}
