/*
 * main.c: embed_demo, a data-parallel "training" job on rt with one thread
 * per device: weights, a forward pass that keeps its activations (as
 * autograd does), gradients, a tensor handed to a side stream
 * (record_stream), then the memory figures a runtime reports, an
 * out-of-memory it survives, and teardown. The kernels compute for real on
 * sim_backed device memory, so a checksum shows the pointers are usable, and
 * it must not depend on the allocator.
 *
 * usage: embed_demo [--allocator galloc|host] [--steps N]
 * Prints one block per device, then "ok"; exit status 0, or 1 on any
 * unexpected failure (the message on stderr). GALLOC_CONF and
 * PYTORCH_CUDA_ALLOC_CONF apply under the demo's own settings.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "examples/embed/runtime.h"

enum { DEVICES = 2, LAYERS = 4, DIM = 128, BATCH = 8 };

typedef struct job {
    rt_allocator_t *a; /* shared by every device thread */
    int device;        /* this thread's device */
    int steps;         /* training steps */
    char out[2048];    /* the report, printed after join so output is ordered */
    int failed;        /* nonzero: out holds the reason */
} job_t;

#define APPEND(j, ...) snprintf((j)->out + strlen((j)->out), sizeof((j)->out) - strlen((j)->out), __VA_ARGS__)

static int fail(job_t *j, const char *what, rt_status_t st)
{
    char msg[512] = "";
    j->a->ops->last_error(j->a, j->device, msg, sizeof(msg));
    APPEND(j, "device %d: %s failed (status %d): %s\n", j->device, what, (int)st, msg);
    j->failed = 1;
    return 1;
}

static int step(job_t *j, rt_tensor_t *w, double *checksum)
{
    rt_tensor_t acts[LAYERS + 1] = {{0}}, grads[LAYERS] = {{0}}, side = {0};
    rt_status_t st = rt_tensor_empty(j->a, BATCH * DIM, j->device, 0, &acts[0]);
    if (st != RT_OK)
        return fail(j, "input", st);
    rt_fill(&acts[0], 0.01f * (float)(j->device + 1), 0.001f);
    for (int l = 0; l < LAYERS; l++) {
        if ((st = rt_tensor_empty(j->a, BATCH * DIM, j->device, 0, &acts[l + 1])) != RT_OK)
            return fail(j, "activation", st);
        rt_linear_relu(&w[l], DIM, DIM, &acts[l], BATCH, &acts[l + 1]);
    }
    *checksum += rt_sum(&acts[LAYERS]);
    /* Backward: gradients while every activation is still alive (the peak). */
    for (int l = LAYERS - 1; l >= 0; l--) {
        if ((st = rt_tensor_empty(j->a, DIM * DIM, j->device, 0, &grads[l])) != RT_OK)
            return fail(j, "gradient", st);
        rt_fill(&grads[l], 0.0f, 0.0f);
    }
    /* A tensor another stream reads (a communication buffer): the allocator
     * must not hand its memory out again before that stream is done. */
    if ((st = rt_tensor_empty(j->a, BATCH * DIM, j->device, 0, &side)) != RT_OK)
        return fail(j, "side buffer", st);
    if ((st = rt_tensor_record_stream(&side, 7)) != RT_OK)
        return fail(j, "record_stream", st);
    rt_tensor_release(&side);
    for (int l = 0; l < LAYERS; l++)
        rt_tensor_release(&grads[l]);
    for (int l = LAYERS; l >= 0; l--)
        rt_tensor_release(&acts[l]);
    return 0;
}

static void *run(void *arg)
{
    job_t *j = arg;
    rt_tensor_t w[LAYERS] = {{0}};
    rt_memory_stats_t s;
    double checksum = 0.0;
    for (int l = 0; l < LAYERS; l++) {
        rt_status_t st = rt_tensor_empty(j->a, DIM * DIM, j->device, 0, &w[l]);
        if (st != RT_OK) {
            fail(j, "weights", st);
            goto out;
        }
        rt_fill(&w[l], -0.004f, 0.0005f * (float)(l + 1));
    }
    for (int i = 0; i < j->steps; i++)
        if (step(j, w, &checksum) != 0)
            goto out;
    APPEND(j, "device %d: checksum %.6f\n", j->device, checksum);
    if (j->a->ops->memory_stats(j->a, j->device, &s) != RT_OK) {
        fail(j, "memory_stats", RT_ERROR);
        goto out;
    }
    APPEND(j, "device %d: allocated %lld max_allocated %lld reserved %lld max_reserved %lld device_allocs %lld\n",
           j->device, (long long)s.allocated, (long long)s.max_allocated, (long long)s.reserved,
           (long long)s.max_reserved, (long long)s.device_allocs);
    if (strcmp(j->a->ops->name, "galloc") == 0) {
        /* More than the device has: the runtime gets RT_OOM, reports
         * PyTorch's message and carries on. (malloc would overcommit.) */
        rt_tensor_t huge;
        rt_status_t st = rt_tensor_empty(j->a, (size_t)1 << 30, j->device, 0, &huge);
        if (st != RT_OOM) {
            rt_tensor_release(&huge);
            fail(j, "the 4 GiB tensor (expected RT_OOM)", st);
            goto out;
        }
        char msg[512];
        j->a->ops->last_error(j->a, j->device, msg, sizeof(msg));
        /* PyTorch's message goes on with the device's figures: keep its
         * first two sentences ("CUDA out of memory. Tried to allocate ..."). */
        char *end = strstr(msg, ". ");
        if (end != NULL && (end = strstr(end + 2, ". ")) != NULL)
            end[1] = '\0';
        APPEND(j, "device %d: out of memory as expected: %s\n", j->device, msg);
    }
out:
    for (int l = 0; l < LAYERS; l++)
        rt_tensor_release(&w[l]);
    if (!j->failed) {
        j->a->ops->memory_stats(j->a, j->device, &s);
        APPEND(j, "device %d: after release allocated %lld reserved %lld", j->device, (long long)s.allocated,
               (long long)s.reserved);
        j->a->ops->empty_cache(j->a, j->device);
        j->a->ops->memory_stats(j->a, j->device, &s);
        APPEND(j, "; after empty_cache reserved %lld\n", (long long)s.reserved);
        if (s.allocated != 0 || s.reserved != 0)
            fail(j, "teardown (memory still held)", RT_ERROR);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    const char *which = "galloc";
    int steps = 3;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--allocator") == 0 && i + 1 < argc)
            which = argv[++i];
        else if (strcmp(argv[i], "--steps") == 0 && i + 1 < argc)
            steps = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: %s [--allocator galloc|host] [--steps N]\n", argv[0]);
            return 2;
        }
    }
    char err[512] = "";
    rt_allocator_t *a = NULL;
    if (strcmp(which, "galloc") == 0)
        /* Device memory the demo can compute on, 1 GiB per simulated device. */
        a = rt_galloc_allocator_create("sim_backed:True,sim_capacity:1GiB", err, sizeof(err));
    else if (strcmp(which, "host") == 0)
        a = rt_host_allocator_create();
    else
        snprintf(err, sizeof(err), "unknown allocator '%s'", which);
    if (a == NULL) {
        fprintf(stderr, "embed_demo: %s\n", err);
        return 1;
    }
    printf("embed_demo: allocator %s, %d devices, %d steps\n", a->ops->name, DEVICES, steps);
    job_t jobs[DEVICES];
    pthread_t threads[DEVICES];
    int failed = 0;
    for (int d = 0; d < DEVICES; d++) {
        jobs[d] = (job_t){.a = a, .device = d, .steps = steps};
        if (pthread_create(&threads[d], NULL, run, &jobs[d]) != 0) {
            fprintf(stderr, "embed_demo: cannot start a thread\n");
            return 1;
        }
    }
    for (int d = 0; d < DEVICES; d++) {
        pthread_join(threads[d], NULL);
        fputs(jobs[d].out, jobs[d].failed ? stderr : stdout);
        failed |= jobs[d].failed;
    }
    a->ops->destroy(a);
    if (failed)
        return 1;
    printf("ok\n");
    return 0;
}
