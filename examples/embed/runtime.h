/*
 * runtime.h: "rt", a tiny framework runtime, the reference for putting galloc
 * under your own runtime. It has what a real one has at the memory layer:
 * tensors that live on a device and a stream, and an allocator behind the
 * runtime's own small vtable (rt_allocator_ops_t), so the runtime never names
 * galloc outside one file (alloc_galloc.c). Swapping allocators is one call
 * at startup; alloc_host.c is the second implementation, plain malloc.
 *
 * Devices here are simulated (galloc's "sim" backend with sim_backed:True, so
 * device memory is host memory the demo can compute on). On a GPU the same
 * code runs with GALLOC_CONF=device_backend:cuda; only kernels would differ.
 *
 * Threading: an rt_allocator_t may be used from any thread (both
 * implementations lock inside); one rt_tensor_t from one thread at a time.
 */
#ifndef RT_RUNTIME_H
#define RT_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum rt_status {
    RT_OK = 0,
    RT_OOM = 1,   /* the device is full: the caller may free and retry */
    RT_ERROR = 2, /* anything else; rt_allocator_last_error says what */
} rt_status_t;

typedef uintptr_t rt_stream_t; /* 0 = the device's default stream */

/* The runtime's per-device memory figures (torch.cuda.memory_allocated & co.). */
typedef struct rt_memory_stats {
    int64_t allocated;     /* bytes in live tensors (after the allocator's rounding) */
    int64_t max_allocated; /* peak of allocated */
    int64_t reserved;      /* bytes the allocator holds from the device, cache included */
    int64_t max_reserved;  /* peak of reserved */
    int64_t device_allocs; /* times the allocator went to the device */
} rt_memory_stats_t;

typedef struct rt_allocator rt_allocator_t;

/* One allocator implementation. Every member is required. */
typedef struct rt_allocator_ops {
    const char *name;
    /* bytes on device, usable on stream, into *out (NULL on failure). */
    rt_status_t (*alloc)(rt_allocator_t *self, size_t bytes, int device, rt_stream_t stream, void **out);
    /* Give back ptr (from alloc on device). */
    rt_status_t (*free)(rt_allocator_t *self, void *ptr, int device);
    /* ptr is also used on stream: do not reuse it before that stream's work is done. */
    rt_status_t (*record_stream)(rt_allocator_t *self, void *ptr, int device, rt_stream_t stream);
    rt_status_t (*memory_stats)(rt_allocator_t *self, int device, rt_memory_stats_t *out);
    /* Return cached, unused memory to the device. */
    rt_status_t (*empty_cache)(rt_allocator_t *self, int device);
    /* The last failure on device, as text, into buf. */
    void (*last_error)(rt_allocator_t *self, int device, char *buf, size_t len);
    void (*destroy)(rt_allocator_t *self);
} rt_allocator_ops_t;

/* The base every implementation embeds first. */
struct rt_allocator {
    const rt_allocator_ops_t *ops;
};

/*
 * rt_galloc_allocator_create: galloc's process-wide device registry behind the
 * vtable. conf (NULL allowed) is a galloc/PyTorch configuration string applied
 * over PYTORCH_CUDA_ALLOC_CONF and GALLOC_CONF. The registry is one per
 * process: create one of these at a time. NULL on failure, with the reason in
 * err.
 */
rt_allocator_t *rt_galloc_allocator_create(const char *conf, char *err, size_t errlen);

/* rt_host_allocator_create: malloc/free, for comparison; reserved == allocated. */
rt_allocator_t *rt_host_allocator_create(void);

/* A dense float tensor on one device. */
typedef struct rt_tensor {
    float *data;           /* device memory (host-addressable in this demo) */
    size_t numel;          /* elements */
    int device;            /* where data lives */
    rt_stream_t stream;    /* the stream it was allocated on */
    rt_allocator_t *alloc; /* who frees it */
} rt_tensor_t;

/* rt_tensor_empty: numel floats on device/stream from a. On failure *t is zeroed. */
rt_status_t rt_tensor_empty(rt_allocator_t *a, size_t numel, int device, rt_stream_t stream, rt_tensor_t *t);
/* rt_tensor_release: give t's memory back; t is zeroed. A zeroed t is a no-op. */
void rt_tensor_release(rt_tensor_t *t);
/* rt_tensor_record_stream: t is also used on stream (Tensor.record_stream). */
rt_status_t rt_tensor_record_stream(rt_tensor_t *t, rt_stream_t stream);

/* The "kernels": y = relu(W x) for a batch (W rows x cols, x batch x cols). */
void rt_fill(rt_tensor_t *t, float value, float step);
void rt_linear_relu(const rt_tensor_t *w, size_t rows, size_t cols, const rt_tensor_t *x, size_t batch, rt_tensor_t *y);
double rt_sum(const rt_tensor_t *t);

#ifdef __cplusplus
}
#endif
#endif /* RT_RUNTIME_H */
