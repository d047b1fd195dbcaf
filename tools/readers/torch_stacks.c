/*
 * torch_stacks.c: the stack of a PyTorch snapshot's event: the entry's own
 * frames, then the record_function ranges (external_annotations) in force at
 * its time, innermost first.
 */
#include <stdlib.h>
#include <string.h>

#include "tools/readers/torch_int.h"

static int by_time(const void *a, const void *b)
{
    const ga_torch_annot_t *x = a, *y = b;
    if (x->time_us != y->time_us)
        return x->time_us < y->time_us ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* The device's record_function ranges (external_annotations), by time. A
 * START or END without an int time or a str name is left out; one without a
 * device applies to every device. */
int ga_torch_rd_load_annotations(ga_reader_t *r, char *err, size_t errlen)
{
    ga_torch_rd_t *t = r->impl;
    free(t->an);
    t->an = NULL;
    t->n_an = t->an_next = t->n_open = 0;
    if (!t->snap.annotations.is_list || t->snap.annotations.n == 0)
        return 0;
    t->an = malloc(t->snap.annotations.n * sizeof(*t->an));
    if (t->an == NULL) {
        snprintf(err, errlen, "%s: out of host memory", r->in.path);
        return -1;
    }
    for (size_t i = 0; i < t->snap.annotations.n; i++) {
        ga_torch_annotation_t a;
        ga_torch_annotation(&t->snap, i, &a);
        if (a.stage == GA_STAGE_OTHER || a.name == NULL || a.time_us.kind != GA_TORCH_INT ||
            (a.device.kind == GA_TORCH_INT && (int64_t)a.device.v != t->devices[r->unit]))
            continue;
        t->an[t->n_an++] = (ga_torch_annot_t){(int64_t)a.time_us.v, i, a.stage == GA_STAGE_START, a.name, a.name_len};
    }
    if (t->n_an > 0)
        qsort(t->an, t->n_an, sizeof(*t->an), by_time);
    return 0;
}

/* Bring the ranges in force up to time us: a range started at or before it
 * and not ended at or before it. An END closes the latest open range of its
 * name (ranges of one thread nest; an unmatched END is ignored). */
static void advance_annotations(ga_torch_rd_t *t, int64_t us)
{
    while (t->an_next < t->n_an && t->an[t->an_next].time_us <= us) {
        const ga_torch_annot_t *a = &t->an[t->an_next++];
        if (a->start) {
            if (t->n_open == GA_TORCH_RD_MAX_OPEN) { /* deeper than kept: drop the outermost */
                memmove(t->open, t->open + 1, (GA_TORCH_RD_MAX_OPEN - 1) * sizeof(t->open[0]));
                t->n_open--;
            }
            t->open[t->n_open++] = a;
            continue;
        }
        for (size_t k = t->n_open; k-- > 0;)
            if (t->open[k]->len == a->len && memcmp(t->open[k]->name, a->name, a->len) == 0) {
                memmove(t->open + k, t->open + k + 1, (t->n_open - k - 1) * sizeof(t->open[0]));
                t->n_open--;
                break;
            }
    }
}

static void stack_frame(const void *data, size_t i, ga_frame_t *out)
{
    const ga_torch_stack_data_t *d = data;
    memset(out, 0, sizeof(*out));
    if (i < d->n_frames) {
        ga_torch_frame_t f;
        ga_torch_frame(d->frames, i, &f);
        *out = (ga_frame_t){f.filename, f.filename_len, f.name, f.name_len, f.line};
        return;
    }
    const ga_torch_annot_t *a = d->open[d->n_open - 1 - (i - d->n_frames)]; /* innermost: the latest started */
    out->name = a->name;
    out->name_len = a->len;
}

/* Frames are shared dicts in PyTorch's pickles (the memo), and a range's
 * name is its own object: pointers tell equal frames apart cheaply. */
static uintptr_t stack_key(const void *data, size_t i)
{
    const ga_torch_stack_data_t *d = data;
    if (i < d->n_frames)
        return (uintptr_t)d->frames->u.seq.items[i];
    return (uintptr_t)d->open[d->n_open - 1 - (i - d->n_frames)]->name;
}

/* ev's stack: frames (NULL: none) and, at its time, the ranges in force. */
void ga_torch_rd_set_stack(ga_torch_rd_t *t, ga_event_t *ev, const ga_pk_value_t *frames, bool timed)
{
    ga_torch_stack_data_t *d = &t->sd;
    d->frames = frames;
    d->n_frames = ga_torch_frames_count(frames);
    d->n_open = 0;
    if (timed) {
        advance_annotations(t, ev->time_us);
        d->n_open = t->n_open;
        memcpy(d->open, t->open, t->n_open * sizeof(t->open[0]));
    }
    if (d->n_frames + d->n_open == 0)
        return;
    ev->stack = (ga_stack_t){
        .kind = GA_STACK_FRAMES, .n = d->n_frames + d->n_open, .data = d, .frame = stack_frame, .key = stack_key};
}
