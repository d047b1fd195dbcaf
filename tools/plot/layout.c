/*
 * layout.c: the plot's layout (layout.h): the y scale and unit, the device
 * line or arrow, OOMs grouped (oom_group.c) and their label boxes placed
 * without overlap, and the offsets that keep coinciding lines visible. Pure
 * arithmetic, no cairo.
 */
#include "tools/plot/layout.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/plot/oom_group.h"

#define M_LEFT 88.0
#define M_RIGHT 36.0
#define GAP 8.0      /* between a point and its label */
#define MAX_STACK 12 /* how far a label is stacked away from its point before it is left out */
#define SAME_PX 0.75 /* lines closer than this everywhere would be drawn over each other */

const double *ga_plot_series_line(const ga_series_t *s, int kind)
{
    return kind == GA_PLOT_REQUESTED ? s->requested : kind == GA_PLOT_ALLOCATED ? s->allocated : s->reserved;
}

double ga_plot_layout_x(const ga_plot_layout_t *l, double event)
{
    return l->x0 + event / l->xmax * l->w;
}

double ga_plot_layout_y(const ga_plot_layout_t *l, double bytes)
{
    return l->y0 + l->h - bytes / l->ymax * l->h;
}

bool ga_plot_rects_overlap(const ga_plot_rect_t *a, const ga_plot_rect_t *b)
{
    return a->x < b->x + b->w && b->x < a->x + a->w && a->y < b->y + b->h && b->y < a->y + a->h;
}

/* A "nice" tick step (1, 2 or 5 times a power of ten) giving about target
 * ticks over span, so labels stay short and round. */
static double nice_step(double span, int target)
{
    double raw = span / target;
    double mag = pow(10.0, floor(log10(raw)));
    double f = raw / mag;
    return (f < 1.5 ? 1.0 : f < 3.5 ? 2.0 : f < 7.5 ? 5.0 : 10.0) * mag;
}

static double text_w(const char *s)
{
    return (double)strlen(s) * GA_PLOT_CHAR_EM * GA_PLOT_LABEL_FONT + 4.0;
}

static double text_h(void)
{
    return GA_PLOT_LABEL_FONT + 4.0;
}

/* The y range: the data with 5 % headroom, the device within it when near
 * enough to be worth a line, in the unit that keeps tick labels short. */
static void scale_y(const ga_plot_input_t *in, ga_plot_layout_t *l)
{
    double top = 0;
    for (size_t i = 0; i < in->n_series; i++)
        for (int k = 0; k < GA_PLOT_LINES; k++) {
            const double *v = ga_plot_series_line(&in->series[i], k);
            for (size_t j = 0; v != NULL && j < in->series[i].n; j++)
                if (v[j] > top)
                    top = v[j];
        }
    for (size_t i = 0; i < in->n_series; i++) { /* a peak marked between two samples is still on the axis */
        const ga_series_t *s = &in->series[i];
        if (s->has_peaks && s->peak_reserved > top)
            top = s->peak_reserved;
        if (s->has_peaks && s->peak_allocated > top)
            top = s->peak_allocated;
    }
    l->data_max = top;
    double dev = (double)in->device_memory;
    l->device_line = dev > 0 && (top <= 0 || dev <= top * GA_PLOT_DEVICE_FACTOR);
    l->device_above = dev > 0 && !l->device_line;
    if (l->device_line && dev > top)
        top = dev;
    top = top > 0 ? top * 1.05 : 1073741824.0; /* nothing to show: an empty GiB */
    static const char *const names[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
    size_t u = 0;
    while (u + 1 < sizeof(names) / sizeof(names[0]) && top >= ldexp(1.0, 10 * (int)(u + 1)))
        u++;
    l->unit = ldexp(1.0, 10 * (int)u);
    l->unit_name = names[u];
    double step = nice_step(top / l->unit, 6);
    if (u == 0 && step < 1)
        step = 1; /* whole bytes */
    l->ystep = step * l->unit;
    l->ymax = ceil(top / l->ystep - 1e-9) * l->ystep;
}

/* Whether r fits the plot area and misses every placed label and cross. */
static bool free_at(const ga_plot_layout_t *l, const ga_plot_rect_t *r, const ga_plot_rect_t *crosses, size_t nc)
{
    if (r->x < l->x0 + 1 || r->y < l->y0 + 1 || r->x + r->w > l->x0 + l->w - 1 || r->y + r->h > l->y0 + l->h - 1)
        return false;
    if (l->device_labelled && ga_plot_rects_overlap(r, &l->device_label))
        return false;
    for (size_t i = 0; i < l->n_labels; i++)
        if (ga_plot_rects_overlap(r, &l->labels[i].box))
            return false;
    for (size_t i = 0; i < nc; i++)
        if (ga_plot_rects_overlap(r, &crosses[i]))
            return false;
    return true;
}

/* The device label: at the right end of its line (above it, or below when
 * the line is at the top), or at the top right with an arrow when the device
 * is off the scale. */
static void place_device(const ga_plot_input_t *in, ga_plot_layout_t *l)
{
    if (!l->device_line && !l->device_above)
        return;
    static const char *const names[] = {"MiB", "GiB", "TiB", "PiB", "EiB"};
    size_t u = 1; /* GiB, as the device is usually given, unless far from it */
    double dev = (double)in->device_memory;
    if (dev < ldexp(1.0, 28))
        u = 0;
    while (u + 1 < sizeof(names) / sizeof(names[0]) && dev >= ldexp(1.0, 10 * (int)(u + 3)))
        u++;
    snprintf(l->device_text, sizeof(l->device_text), "device %.2f %s%s", dev / ldexp(1.0, 10 * (int)(u + 2)), names[u],
             l->device_above ? " above" : "");
    double w = text_w(l->device_text) + (l->device_above ? 14.0 : 0.0), h = text_h();
    ga_plot_rect_t r = {l->x0 + l->w - 6 - w, l->y0 + 4, w, h};
    if (l->device_line) {
        double y = ga_plot_layout_y(l, (double)in->device_memory);
        r.y = y - 4 - h;
        if (r.y < l->y0 + 2)
            r.y = y + 4;
    }
    l->device_label = r;
    l->device_labelled = true;
}

/* The value of line at event x: the last sample at or before x, so a marker
 * sits on the drawn curve. */
static double value_at(const ga_series_t *s, const double *line, double x)
{
    size_t lo = 0, hi = s->n;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->event_index[mid] <= x)
            lo = mid;
        else
            hi = mid;
    }
    return line[lo];
}

void ga_plot_oom_point(const ga_plot_layout_t *l, const ga_plot_input_t *in, size_t i, double *x, double *y)
{
    const ga_oom_marker_t *o = &in->ooms[i];
    const ga_series_t *s = &in->series[o->series];
    int kind = s->reserved != NULL ? GA_PLOT_RESERVED : s->allocated != NULL ? GA_PLOT_ALLOCATED : GA_PLOT_REQUESTED;
    const double *line = ga_plot_series_line(s, kind);
    double v = line != NULL && s->n > 0 ? value_at(s, line, o->event_index) : 0.0;
    *x = ga_plot_layout_x(l, o->event_index);
    *y = ga_plot_layout_y(l, v) - (l->offset != NULL ? l->offset[o->series * GA_PLOT_LINES + kind] : 0.0);
}

/* The OOM groups of every configuration (oom_group.h), each crossed on its
 * line at its first OOM; the symbols they cover into crosses. 0, or -1 when
 * host memory ran out. */
static int group_ooms(const ga_plot_input_t *in, ga_plot_layout_t *l, ga_plot_rect_t *crosses)
{
    size_t *order = malloc((in->n_ooms ? in->n_ooms : 1) * sizeof(*order));
    l->groups = calloc(in->n_ooms ? in->n_ooms : 1, sizeof(*l->groups)); /* at most one per OOM */
    if (order == NULL || l->groups == NULL) {
        free(order);
        return -1;
    }
    for (size_t i = 0; i < in->n_series && l->n_groups < in->n_ooms; i++)
        l->n_groups += ga_plot_oom_groups(in, i, l, order, l->groups + l->n_groups, in->n_ooms - l->n_groups);
    free(order);
    for (size_t k = 0; k < l->n_groups; k++) {
        double x;
        ga_plot_oom_point(l, in, l->groups[k].first_oom, &x, &l->groups[k].y);
        crosses[k] = ga_plot_oom_group_symbol(&l->groups[k]);
    }
    return 0;
}

/* Each OOM group's label: beside its cross on the side with room, above or
 * below, then stacked further away; left out when no place is free. */
static void place_ooms(ga_plot_layout_t *l, const ga_plot_rect_t *crosses)
{
    for (size_t i = 0; i < l->n_groups && l->n_labels < GA_PLOT_MAX_LABELS; i++) {
        const ga_plot_oom_group_t *g = &l->groups[i];
        const char *t = g->text;
        double y = g->y, w = text_w(t), h = text_h();
        bool right_first = g->x - l->x0 < 0.5 * l->w;
        double right = g->x_end + GAP, left = g->x - GAP - w;
        for (int k = 0; k <= MAX_STACK; k++) {
            double lift = k * (h + 2);
            double xs[2] = {right_first ? right : left, right_first ? left : right};
            double ys[2] = {y - GAP - h - lift, y + GAP + lift};
            bool placed = false;
            for (int a = 0; a < 2 && !placed; a++)
                for (int b = 0; b < 2 && !placed; b++) {
                    ga_plot_rect_t r = {xs[b], ys[a], w, h};
                    if (free_at(l, &r, crosses, l->n_groups)) {
                        l->labels[l->n_labels++] = (ga_plot_label_t){.box = r, .text = t, .group = i};
                        placed = true;
                    }
                }
            if (placed)
                break;
        }
    }
}

/* Lines that would be drawn over an earlier configuration's same line for
 * at least half their samples, hiding it there. */
static void find_coinciding(const ga_plot_input_t *in, ga_plot_layout_t *l)
{
    for (size_t j = 0; j < in->n_series; j++)
        for (int k = 0; k < GA_PLOT_LINES; k++) {
            size_t at = j * GA_PLOT_LINES + (size_t)k;
            l->same_as[at] = SIZE_MAX;
            const ga_series_t *b = &in->series[j];
            const double *vb = ga_plot_series_line(b, k);
            for (size_t i = 0; vb != NULL && b->n > 0 && i < j; i++) {
                const ga_series_t *a = &in->series[i];
                const double *va = ga_plot_series_line(a, k);
                if (va == NULL || a->n != b->n)
                    continue;
                size_t same = 0;
                for (size_t p = 0; p < b->n; p++)
                    same += fabs(a->event_index[p] - b->event_index[p]) * l->w / l->xmax < SAME_PX &&
                            fabs(va[p] - vb[p]) * l->h / l->ymax < SAME_PX;
                if (same * 2 < b->n)
                    continue; /* apart most of the way: both show */
                double off = l->offset[i * GA_PLOT_LINES + (size_t)k] + GA_PLOT_OFFSET_PX;
                if (l->same_as[at] == SIZE_MAX)
                    l->same_as[at] = i;
                if (off > l->offset[at])
                    l->offset[at] = off;
            }
        }
}

int ga_plot_layout_make(const ga_plot_input_t *in, ga_plot_layout_t *l)
{
    memset(l, 0, sizeof(*l));
    l->x0 = M_LEFT;
    l->y0 = GA_PLOT_AREA_TOP;
    l->w = GA_PLOT_WIDTH - M_LEFT - M_RIGHT;
    l->h = GA_PLOT_AREA_H;
    double xmax = (double)in->events;
    for (size_t i = 0; i < in->n_series; i++)
        if (in->series[i].n > 0 && in->series[i].event_index[in->series[i].n - 1] + 1 > xmax)
            xmax = in->series[i].event_index[in->series[i].n - 1] + 1;
    l->xmax = xmax < 1 ? 1 : xmax;
    l->xstep = nice_step(l->xmax, 8);
    scale_y(in, l);
    size_t n = in->n_series ? in->n_series : 1;
    l->n_series = in->n_series;
    l->offset = calloc(n * GA_PLOT_LINES, sizeof(*l->offset));
    l->same_as = calloc(n * GA_PLOT_LINES, sizeof(*l->same_as));
    ga_plot_rect_t *crosses = calloc(in->n_ooms ? in->n_ooms : 1, sizeof(*crosses));
    if (l->offset == NULL || l->same_as == NULL || crosses == NULL) {
        free(crosses);
        ga_plot_layout_free(l);
        return -1;
    }
    find_coinciding(in, l);
    place_device(in, l);
    if (group_ooms(in, l, crosses) != 0) {
        free(crosses);
        ga_plot_layout_free(l);
        return -1;
    }
    place_ooms(l, crosses);
    free(crosses);
    return 0;
}

void ga_plot_layout_free(ga_plot_layout_t *l)
{
    free(l->offset);
    free(l->same_as);
    free(l->groups);
    l->offset = NULL;
    l->same_as = NULL;
    l->groups = NULL;
    l->n_groups = 0;
}
