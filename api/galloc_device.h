/*
 * galloc_device.h: one allocator per device index for the whole process, and
 * device-generic calls in the spirit of PyTorch's torch.accelerator.memory
 * (memory_stats, memory_allocated, max_memory_allocated, memory_reserved,
 * max_memory_reserved, reset_peak_memory_stats,
 * reset_accumulated_memory_stats, empty_cache; backed in PyTorch by the
 * DeviceAllocator interface of c10/core/CachingDeviceAllocator.h).
 *
 * A framework runtime that owns one allocator per GPU calls these with a
 * device index instead of creating and passing galloc_allocator_t objects.
 *
 * Lifecycle: the first call naming a device index creates that device's
 * allocator (galloc_allocator_create with the backend and settings of the
 * effective configuration: PYTORCH_ALLOC_CONF or PYTORCH_CUDA_ALLOC_CONF, then
 * GALLOC_CONF, then the string given to galloc_device_configure). It then
 * lives until galloc_devices_shutdown. galloc_device_is_initialized is the
 * only call that never creates one.
 *
 * Threading: every function is safe from any thread at any time, except
 * galloc_devices_shutdown (see there). Creation is race-free: two threads
 * asking for the same new device get the same allocator. Devices do not share
 * a lock: each allocator has its own, so calls on different devices run in
 * parallel.
 *
 * Errors: a failure inside an allocator (an OOM, a foreign pointer) is
 * described by that allocator's galloc_last_error (get it with
 * galloc_device_get). A failure to create one (a bad configuration, a backend
 * or device that is not available) has no allocator to hold its message:
 * galloc_devices_last_error returns it.
 */
#ifndef GALLOC_DEVICE_H
#define GALLOC_DEVICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <galloc/galloc_allocator.h>
#include <galloc/galloc_backend.h>
#include <galloc/galloc_stats.h>
#include <galloc/galloc_status.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Device indices are 0 .. GALLOC_DEVICE_MAX - 1. A backend may have fewer
 * devices: creating an allocator on a missing one fails with the backend's
 * status (GALLOC_E_UNAVAILABLE for CUDA). */
#define GALLOC_DEVICE_MAX 64

/*
 * Every call below that takes `device` returns GALLOC_E_INVAL when device < 0
 * or device >= GALLOC_DEVICE_MAX, and, when the device's allocator does not
 * exist yet and cannot be created, the creation status: GALLOC_E_CONFIG (bad
 * configuration), GALLOC_E_UNAVAILABLE (unknown backend, or its library or
 * device missing), GALLOC_E_UNSUPPORTED (settings the device cannot honour),
 * GALLOC_E_NOMEM. The message is then in galloc_devices_last_error. Those
 * statuses are not repeated in each description.
 */

/*
 * galloc_device_configure: the configuration string (PYTORCH_CUDA_ALLOC_CONF
 * style plus galloc's keys, e.g. "device_backend:cuda,expandable_segments:True")
 * applied on top of the environment to every device allocator created later.
 * NULL or "" removes it. It must be called before the first device allocator
 * is created (as PyTorch reads its settings once): afterwards it changes
 * nothing and returns GALLOC_E_INVAL, until galloc_devices_shutdown. The
 * string is checked and copied now; the device backend's options in it
 * (sim_capacity, driver_path, ...) are checked by the backend when a device
 * is first used, which then fails with GALLOC_E_CONFIG.
 * Returns GALLOC_OK; GALLOC_E_CONFIG (the string does not parse; the message in
 * galloc_devices_last_error names the key and value); GALLOC_E_INVAL (too
 * late); GALLOC_E_NOMEM.
 */
GALLOC_API galloc_status_t galloc_device_configure(const char *conf);

/*
 * galloc_device_get: device's allocator in *out, created on first use. The
 * registry owns it: do not destroy it; it stays valid until
 * galloc_devices_shutdown. Use it with every galloc_* call (snapshots,
 * history, mempools, galloc_last_error). *out is NULL on failure.
 * Returns GALLOC_OK, GALLOC_E_INVAL (NULL out, device out of range) or a
 * creation status.
 */
GALLOC_API galloc_status_t galloc_device_get(int device, galloc_allocator_t **out);

/*
 * galloc_device_is_initialized: whether device's allocator exists (false for
 * an index out of range). Never creates one. Thread-safe; the answer may be
 * stale by the time it returns if another thread is creating it.
 */
GALLOC_API bool galloc_device_is_initialized(int device);

/*
 * galloc_device_malloc / galloc_device_free: galloc_malloc and galloc_free on
 * device's allocator. Statuses: theirs (GALLOC_E_OOM, GALLOC_E_NOT_OWNED for a
 * pointer of another device or already freed, ...) plus the common ones above.
 * *ptr is NULL on failure.
 */
GALLOC_API galloc_status_t galloc_device_malloc(int device, size_t size, galloc_stream_t stream, void **ptr);
GALLOC_API galloc_status_t galloc_device_free(int device, void *ptr);

/*
 * galloc_device_memory_stats: copy device's stats (the 123 keys of
 * torch.accelerator.memory.memory_stats) into *out; out->struct_size must be
 * set. Returns GALLOC_OK, GALLOC_E_INVAL (NULL out or struct_size 0), or a
 * common status.
 */
GALLOC_API galloc_status_t galloc_device_memory_stats(int device, galloc_stats_t *out);

/*
 * The four figures of torch.accelerator.memory, each one stat's value in
 * *bytes: memory_allocated = allocated_bytes.all.current,
 * max_memory_allocated = allocated_bytes.all.peak, memory_reserved =
 * reserved_bytes.all.current, max_memory_reserved = reserved_bytes.all.peak.
 * Returns GALLOC_OK, GALLOC_E_INVAL (NULL bytes), or a common status.
 */
GALLOC_API galloc_status_t galloc_device_memory_allocated(int device, int64_t *bytes);
GALLOC_API galloc_status_t galloc_device_max_memory_allocated(int device, int64_t *bytes);
GALLOC_API galloc_status_t galloc_device_memory_reserved(int device, int64_t *bytes);
GALLOC_API galloc_status_t galloc_device_max_memory_reserved(int device, int64_t *bytes);

/* galloc_device_reset_peak_memory_stats: every peak = current on device
 * (galloc_stats_reset_peak). GALLOC_OK or a common status. */
GALLOC_API galloc_status_t galloc_device_reset_peak_memory_stats(int device);

/* galloc_device_reset_accumulated_memory_stats: zero device's allocated/freed
 * totals and num_* counters (galloc_stats_reset_accumulated). GALLOC_OK or a
 * common status. */
GALLOC_API galloc_status_t galloc_device_reset_accumulated_memory_stats(int device);

/* galloc_device_empty_cache: galloc_empty_cache on device's allocator.
 * GALLOC_OK, GALLOC_E_DEVICE (the device refused a free), or a common status. */
GALLOC_API galloc_status_t galloc_device_empty_cache(int device);

/* galloc_device_memory_info: device's free and total bytes
 * (torch.accelerator's get_memory_info, cudaMemGetInfo). GALLOC_OK,
 * GALLOC_E_INVAL (NULL output), the backend's status, or a common status. */
GALLOC_API galloc_status_t galloc_device_memory_info(int device, size_t *free_bytes, size_t *total_bytes);

/*
 * galloc_devices_last_error: the message of the last registry failure of any
 * thread (creation, configure) into buf (len bytes, NUL-terminated,
 * truncated if short). Returns that failure's status (GALLOC_OK and "" if
 * none), or GALLOC_E_INVAL for NULL buf or len 0. Allocator failures are in
 * galloc_last_error of the device's allocator instead.
 */
GALLOC_API galloc_status_t galloc_devices_last_error(char *buf, size_t len);

/*
 * galloc_devices_shutdown: destroy every device allocator (their blocks become
 * invalid, their segments go back to the devices) and forget the
 * configuration and the last error: the registry is as at process start, and
 * the next call creates allocators afresh. It must not race with any other
 * call on a device allocator (call it once the runtime has stopped using
 * galloc, e.g. at exit). Idempotent. Allocator pointers obtained from
 * galloc_device_get before it are destroyed: a call through one returns
 * GALLOC_E_DESTROYED as after galloc_allocator_destroy (which see); call
 * galloc_device_get again for a live one.
 */
GALLOC_API void galloc_devices_shutdown(void);

#ifdef __cplusplus
}
#endif
#endif /* GALLOC_DEVICE_H */
