/*
 * galloc_torch.h: the entry points of libgalloc_torch.so (//torch_plugin:galloc_torch),
 * galloc as a drop-in PyTorch allocator:
 *
 *   alloc = torch.cuda.memory.CUDAPluggableAllocator(
 *       "libgalloc_torch.so", "galloc_torch_malloc", "galloc_torch_free")
 *   torch.cuda.memory.change_current_allocator(alloc)
 *
 * The library exports the functions declared here and nothing else (a version
 * script hides galloc's own API, so it cannot clash with another copy of
 * galloc in the process). Behind them sits the process-wide device registry
 * (galloc_device.h): one allocator per device index, created at the first call
 * naming it, configured by PYTORCH_ALLOC_CONF / PYTORCH_CUDA_ALLOC_CONF, then
 * GALLOC_CONF, then galloc_torch_configure.
 *
 * Device backend: PyTorch writes to the memory it is given, so the shim
 * never simulates one unless told to. When no configuration source names a
 * device_backend, the first allocator is preceded by a probe: cuda if its
 * driver (driver_path, else libcuda.so.1) opens device 0, else hip
 * (libamdhip64.so); if neither does, every entry point fails (malloc returns
 * NULL) and galloc_torch_last_error gives both drivers' reasons. A named
 * device_backend is used as named; device_backend:sim prints a one-time
 * warning to stderr that the addresses are not memory. galloc.torch.use()
 * names cuda or hip from the torch build it runs in.
 *
 * PyTorch signatures (torch/csrc/cuda/CUDAPluggableAllocator.h, and the
 * _CUDAPluggableAllocator bindings in torch/csrc/cuda/Module.cpp, which take
 * each hook as a function address from Python):
 *   alloc_fn                void*(size_t, int, cudaStream_t)
 *   free_fn                 void(void*, size_t, int, cudaStream_t)
 *   set_init_fn             void(int)                 -> galloc_torch_init
 *   set_reset_fn            void()                    -> galloc_torch_reset
 *   set_memory_fraction_fn  void(double, int)         -> galloc_torch_set_memory_fraction
 *   set_record_stream_fn    void(void*, cudaStream_t) -> galloc_torch_record_stream
 * Not provided: set_base_alloc_fn (void*(void*, size_t*): galloc has no public
 * base-allocation query, and PyTorch then uses the pointer itself), and
 * set_begin_allocate_to_pool (void(int, MempoolId_t,
 * std::function<bool(cudaStream_t)>): a C++ predicate passed by value, which C
 * cannot call) with its partners set_end_allocate_to_pool_fn and
 * set_release_pool (void(int, MempoolId_t)), which mean nothing without it.
 * PyTorch asks a pluggable allocator for no stats (its getDeviceStats,
 * snapshot and recordHistory raise), hence the ctypes entry points below.
 *
 * Threading: every function may be called from any thread, except
 * galloc_torch_shutdown. Errors in the void PyTorch hooks cannot be returned:
 * they are printed to stderr once per failure, prefixed "galloc: ", and kept
 * in the device allocator's last error (galloc_torch_last_error).
 */
#ifndef GALLOC_TORCH_H
#define GALLOC_TORCH_H

#include <stddef.h>
#include <sys/types.h>

#include <galloc/galloc_sleep.h>
#include <galloc/galloc_status.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define GALLOC_TORCH_API __attribute__((visibility("default")))
#else
#define GALLOC_TORCH_API
#endif

/* CUDA's cudaStream_t (and CUstream) is `struct CUstream_st *`: the same type,
 * declared here so that the library builds without CUDA's headers. */
typedef struct CUstream_st *galloc_torch_stream_t;

/*
 * galloc_torch_malloc: PyTorch's alloc_fn. size bytes on device, usable on
 * stream, from that device's caching allocator. Returns the device pointer,
 * or NULL for size <= 0, a device index out of range (or >= the count given to
 * galloc_torch_init), no usable device backend, an allocator that cannot be
 * created, or out of memory (the message, PyTorch's "CUDA out of memory.
 * Tried to allocate ...", goes to stderr and galloc_torch_last_error).
 * PyTorch 2.x does not check alloc_fn's result: see docs/integration.md for
 * what a NULL becomes in each release, and galloc.torch.use(), which turns
 * it into torch.OutOfMemoryError where it can build its C++ wrapper.
 */
GALLOC_TORCH_API void *galloc_torch_malloc(ssize_t size, int device, galloc_torch_stream_t stream);

/*
 * galloc_torch_free: PyTorch's free_fn. Return ptr to device's allocator. size
 * and stream are what PyTorch recorded at allocation; galloc knows them
 * already and ignores these. NULL is a no-op; a pointer the device's
 * allocator does not own is reported on stderr and otherwise ignored.
 */
GALLOC_TORCH_API void galloc_torch_free(void *ptr, ssize_t size, int device, galloc_torch_stream_t stream);

/*
 * galloc_torch_init: set_init_fn's hook; PyTorch calls it with the number of
 * visible devices when CUDA initializes. Device indices >= device_count are
 * refused from then on. Allocators are still created lazily. device_count <= 0
 * changes nothing; above GALLOC_DEVICE_MAX it is capped.
 */
GALLOC_TORCH_API void galloc_torch_init(int device_count);

/*
 * galloc_torch_reset: set_reset_fn's hook, which PyTorch's pluggable
 * allocator calls from emptyCache (torch.cuda.empty_cache): release the
 * cached, unused segments of every device allocator that exists.
 */
GALLOC_TORCH_API void galloc_torch_reset(void);

/*
 * galloc_torch_set_memory_fraction: set_memory_fraction_fn's hook
 * (torch.cuda.set_per_process_memory_fraction): cap device's reserved memory at
 * fraction * its total. A fraction outside [0, 1] is reported and ignored.
 */
GALLOC_TORCH_API void galloc_torch_set_memory_fraction(double fraction, int device);

/*
 * galloc_torch_record_stream: set_record_stream_fn's hook
 * (Tensor.record_stream): ptr is also used on stream. PyTorch does not pass
 * the device, so the existing allocators are asked in index order until one
 * owns ptr; on a process with several devices the ones that do not own it
 * record GALLOC_E_NOT_OWNED as their last error.
 */
GALLOC_TORCH_API void galloc_torch_record_stream(void *ptr, galloc_torch_stream_t stream);

/*
 * galloc_torch_configure: galloc_device_configure(conf): a configuration
 * string applied on top of the environment, before the first allocation
 * (the backend probe, if one is needed, runs after it and with it).
 * Returns GALLOC_OK, GALLOC_E_CONFIG, GALLOC_E_INVAL (an allocator exists
 * already), GALLOC_E_NOMEM.
 */
GALLOC_TORCH_API galloc_status_t galloc_torch_configure(const char *conf);

/*
 * galloc_torch_memory_stats_json: device's 123 stats as one JSON object, keys
 * in PyTorch's order (torch.cuda.memory_stats(device) as a dict), e.g.
 * {"active.all.allocated": 1, ..., "segment.small_pool.peak": 1}, into buf
 * (len bytes, NUL-terminated, truncated if short). *needed (if non-NULL)
 * receives the full length without the NUL: retry with a bigger buffer when
 * *needed >= len (8 KiB always suffices). Creates the device's allocator if
 * needed. Returns GALLOC_OK; GALLOC_E_INVAL (buf NULL with len > 0, device out
 * of range); a creation status (galloc_device.h).
 */
GALLOC_TORCH_API galloc_status_t galloc_torch_memory_stats_json(int device, char *buf, size_t len, size_t *needed);

/*
 * galloc_torch_record_memory_history: torch.cuda.memory._record_memory_history
 * for device: enabled, context and stacks are galloc_history_t,
 * galloc_context_t and galloc_stacks_t values (0 = off / none / python);
 * max_entries 0 = unbounded. Returns galloc_record_memory_history's statuses
 * or a creation status.
 */
GALLOC_TORCH_API galloc_status_t galloc_torch_record_memory_history(int device, int enabled, int context, int stacks,
                                                                    size_t max_entries);

/*
 * galloc_torch_snapshot: write device's snapshot (torch.cuda.memory._dump_snapshot's
 * dictionary) to path: JSON if path ends in ".json", else pickle. Open it at
 * https://pytorch.org/memory_viz. Returns galloc_snapshot_write's statuses
 * (GALLOC_E_IO names the path) or a creation status.
 */
GALLOC_TORCH_API galloc_status_t galloc_torch_snapshot(int device, const char *path);

/* galloc_torch_reset_peak_memory_stats / _accumulated_: torch.cuda's
 * reset_peak_memory_stats and reset_accumulated_memory_stats for device.
 * GALLOC_OK or a creation status. */
GALLOC_TORCH_API galloc_status_t galloc_torch_reset_peak_memory_stats(int device);
GALLOC_TORCH_API galloc_status_t galloc_torch_reset_accumulated_memory_stats(int device);

/*
 * galloc_torch_memory_summary: torch.cuda.memory_summary(device) into buf, as
 * galloc_memory_summary (abbreviated false). GALLOC_OK, GALLOC_E_INVAL, or a
 * creation status.
 */
GALLOC_TORCH_API galloc_status_t galloc_torch_memory_summary(int device, char *buf, size_t len, size_t *needed);

/*
 * PyTorch main's 2026 allocator features, for the allocator serving PyTorch
 * on device (created if needed); PyTorch's own entry points
 * (setExpandableSegmentReserveClassForStream, attachOomRejectionObserver)
 * do not reach a pluggable allocator: CUDAPluggableAllocator refuses
 * attachOomRejectionObserver (TORCH_CHECK_NOT_IMPLEMENTED).
 *
 * galloc_torch_set_expandable_reserve_class: galloc_set_expandable_reserve_class
 * for stream (a cudaStream_t, torch.cuda.Stream.cuda_stream): the reserve
 * class its new expandable segments use (expandable_segments_reserve_by_class).
 *
 * galloc_torch_set_oom_rejection_observer: galloc_set_oom_rejection_observer:
 * fn(ctx, device, alloc_size, total_allocated, device_total) for each
 * allocation throw_on_cudamalloc_oom refuses on device, on the allocating
 * thread after galloc's lock is released (PyTorch: a detached thread).
 *
 * Both return the galloc call's statuses or a creation status.
 */
typedef void (*galloc_torch_oom_rejection_fn)(void *ctx, int device, size_t alloc_size, size_t total_allocated,
                                              size_t device_total);
GALLOC_TORCH_API galloc_status_t galloc_torch_set_expandable_reserve_class(int device, galloc_torch_stream_t stream,
                                                                           const char *name);
GALLOC_TORCH_API galloc_status_t galloc_torch_set_oom_rejection_observer(int device, galloc_torch_oom_rejection_fn fn,
                                                                         void *ctx);

/*
 * Sleep and wake (galloc_sleep.h) for the allocator serving PyTorch on
 * device: give tagged tensors' physical memory back to the GPU while their
 * data_ptr()s stay valid. The pointers PyTorch holds come from
 * galloc_torch_malloc, and PyTorch's pluggable allocator keeps no cache of
 * its own (a tensor's deleter calls free_fn at once: raw_delete in
 * torch/csrc/cuda/CUDAPluggableAllocator.cpp, or the DataPtr's
 * CUDAPluggableAllocatorDeleterContext in later releases), so every byte
 * PyTorch uses on device is in this allocator: what sleeps is all of a
 * tag's tensors and the cache under them. Each function creates the device's
 * allocator if needed and returns the galloc_sleep.h call's statuses, or a
 * creation status; the message is galloc_torch_last_error(device).
 *
 * galloc_torch_tag_begin / _end: galloc_tag_begin / galloc_tag_end: until
 * the end, the calling thread's allocations on device (the tensors it
 * creates: PyTorch calls alloc_fn on the thread that asks) come from tag's
 * pool. Allocations PyTorch makes on other threads (autograd's backward
 * workers) are not tagged.
 */
GALLOC_TORCH_API galloc_status_t galloc_torch_tag_begin(int device, const char *tag);
GALLOC_TORCH_API galloc_status_t galloc_torch_tag_end(int device, const char *tag);

/*
 * galloc_torch_sleep: galloc_sleep(device's allocator, tags, offload_tags).
 * The caller must make sure no kernel still uses the tags' memory
 * (torch.cuda.synchronize()): what is discarded or unmapped under a running
 * kernel faults it. After galloc_torch_wake, an offloaded tensor holds its
 * bytes again; a discarded one holds undefined bytes at the same data_ptr().
 */
GALLOC_TORCH_API galloc_status_t galloc_torch_sleep(int device, const char *tags, const char *offload_tags);

/*
 * galloc_torch_sleep_prepare: galloc_sleep_prepare(device's allocator, tags,
 * offload_tags): pin now the host memory a later galloc_torch_sleep with the
 * same arguments copies into, so that sleep pins nothing. Touches no
 * device memory; may run while kernels use the tags' tensors.
 */
GALLOC_TORCH_API galloc_status_t galloc_torch_sleep_prepare(int device, const char *tags, const char *offload_tags);

/* galloc_torch_wake: galloc_wake(device's allocator, tags). */
GALLOC_TORCH_API galloc_status_t galloc_torch_wake(int device, const char *tags);

/* galloc_torch_tag_asleep: galloc_tag_asleep on device's allocator. */
GALLOC_TORCH_API galloc_status_t galloc_torch_tag_asleep(int device, const char *tag, int *asleep);

/* galloc_torch_sleep_stats: galloc_sleep_stats on device's allocator. */
GALLOC_TORCH_API galloc_status_t galloc_torch_sleep_stats(int device, galloc_sleep_stats_t *out);

/*
 * galloc_torch_last_error: the last failure's message for device into buf:
 * its allocator's last error if it exists, else the registry's (why it could
 * not be created). Returns that failure's status (GALLOC_OK and "" if none),
 * or GALLOC_E_INVAL for NULL buf, len 0 or a device out of range.
 */
GALLOC_TORCH_API galloc_status_t galloc_torch_last_error(int device, char *buf, size_t len);

/*
 * galloc_torch_shutdown: galloc_devices_shutdown and forget the device count:
 * every allocator is destroyed (for tests and for processes that stop using
 * the GPU; PyTorch itself never calls it). Must not race with other calls,
 * and no pointer from galloc_torch_malloc may be used or freed afterwards.
 */
GALLOC_TORCH_API void galloc_torch_shutdown(void);

#ifdef __cplusplus
}
#endif
#endif /* GALLOC_TORCH_H */
