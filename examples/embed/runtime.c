/*
 * runtime.c: rt's tensors and kernels (see runtime.h). All memory goes
 * through the tensor's allocator vtable; nothing here knows which one.
 */
#include <string.h>

#include "examples/embed/runtime.h"

rt_status_t rt_tensor_empty(rt_allocator_t *a, size_t numel, int device, rt_stream_t stream, rt_tensor_t *t)
{
    memset(t, 0, sizeof(*t));
    void *p = NULL;
    rt_status_t st = a->ops->alloc(a, numel * sizeof(float), device, stream, &p);
    if (st != RT_OK)
        return st;
    *t = (rt_tensor_t){.data = p, .numel = numel, .device = device, .stream = stream, .alloc = a};
    return RT_OK;
}

void rt_tensor_release(rt_tensor_t *t)
{
    if (t->alloc != NULL && t->data != NULL)
        t->alloc->ops->free(t->alloc, t->data, t->device);
    memset(t, 0, sizeof(*t));
}

rt_status_t rt_tensor_record_stream(rt_tensor_t *t, rt_stream_t stream)
{
    /* Recording the tensor's own stream is a no-op, as in PyTorch. */
    if (stream == t->stream)
        return RT_OK;
    return t->alloc->ops->record_stream(t->alloc, t->data, t->device, stream);
}

void rt_fill(rt_tensor_t *t, float value, float step)
{
    for (size_t i = 0; i < t->numel; i++)
        t->data[i] = value + step * (float)(i % 17);
}

void rt_linear_relu(const rt_tensor_t *w, size_t rows, size_t cols, const rt_tensor_t *x, size_t batch, rt_tensor_t *y)
{
    for (size_t b = 0; b < batch; b++)
        for (size_t r = 0; r < rows; r++) {
            float acc = 0.0f;
            for (size_t c = 0; c < cols; c++)
                acc += w->data[r * cols + c] * x->data[b * cols + c];
            y->data[b * rows + r] = acc > 0.0f ? acc : 0.0f;
        }
}

double rt_sum(const rt_tensor_t *t)
{
    double s = 0.0;
    for (size_t i = 0; i < t->numel; i++)
        s += t->data[i];
    return s;
}
