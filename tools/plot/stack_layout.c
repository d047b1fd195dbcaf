/*
 * stack_layout.c: the layout of the plot stacked by owner (stack.h): panel
 * geometry on shared scales, band colours kept per site across panels, OOMs
 * grouped into labelled marks (as oom_group.h groups them for both plots),
 * the peaks' marks, and label boxes placed without overlap. Pure arithmetic,
 * no cairo.
 */
#include "tools/plot/stack.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TITLE_H 44.0     /* the canvas title, above the first panel */
#define PANEL_TITLE 26.0 /* a panel's title row, above its plot area */
#define BELOW_AXES 58.0  /* x tick labels and the x axis title (as draw.c's) */
#define LEGEND_ROW 20.0  /* one row of a panel's legend */
#define PANEL_PAD 18.0   /* between a panel's legend and the next panel */
#define KEY_ROW 30.0     /* the key of line styles and marks, under the last panel */
#define BOTTOM_PAD 10.0
#define MARK_R GA_PLOT_OOM_MARK_R /* half the side of the box a mark's symbol covers */
#define GAP 8.0                   /* between a point and its label */
#define MAX_STACK 12              /* how far a label is stacked away from its point before it is left out */

static double text_w(const char *s)
{
    return (double)strlen(s) * GA_PLOT_CHAR_EM * GA_PLOT_LABEL_FONT + 4.0;
}

static double text_h(void)
{
    return GA_PLOT_LABEL_FONT + 4.0;
}

void ga_plot_format_bytes(double bytes, char *buf, size_t len)
{
    static const char *const names[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB"};
    size_t u = 0;
    while (u + 1 < sizeof(names) / sizeof(names[0]) && fabs(bytes) >= ldexp(1.0, 10 * (int)(u + 1)))
        u++;
    if (u == 0)
        snprintf(buf, len, "%.0f bytes", bytes);
    else
        snprintf(buf, len, "%.2f %s", bytes / ldexp(1.0, 10 * (int)u), names[u]);
}

bool ga_plot_stacked(const ga_plot_input_t *in)
{
    for (size_t i = 0; i < in->n_series; i++)
        if (in->series[i].n_bands > 0)
            return true;
    return false;
}

static size_t legend_rows(const ga_series_t *s)
{
    return (s->n_bands + 1) / 2;
}

static double panel_block(const ga_series_t *s)
{
    return PANEL_TITLE + GA_PLOT_PANEL_H + BELOW_AXES + LEGEND_ROW * (double)legend_rows(s) + PANEL_PAD;
}

double ga_plot_stack_height(const ga_plot_input_t *in)
{
    double h = TITLE_H;
    for (size_t i = 0; i < in->n_series; i++)
        h += panel_block(&in->series[i]);
    return h + KEY_ROW + BOTTOM_PAD;
}

/* The value of line at event x: the last sample at or before x, so a mark
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

/* The top of the stack at point p. */
static double stack_top(const ga_series_t *s, size_t p)
{
    double v = 0;
    for (size_t b = 0; b < s->n_bands; b++)
        v += s->bands[b].bytes[p];
    return v;
}

/* Where an OOM is marked: on the reserved line at its event, else the stack's top. */
static double oom_y(const ga_plot_layout_t *f, const ga_series_t *s, double event)
{
    if (s->n == 0)
        return ga_plot_layout_y(f, 0);
    if (s->reserved != NULL)
        return ga_plot_layout_y(f, value_at(s, s->reserved, event));
    size_t lo = 0;
    while (lo + 1 < s->n && s->event_index[lo + 1] <= event)
        lo++;
    return ga_plot_layout_y(f, stack_top(s, lo));
}

ga_plot_rect_t ga_plot_mark_symbol(const ga_plot_mark_t *m)
{
    switch (m->kind) {
    case GA_PLOT_MARK_PEAK_RESERVED: /* a triangle above its point, pointing down at it */
        return (ga_plot_rect_t){m->x - MARK_R, m->y - 2 * MARK_R, 2 * MARK_R, 2 * MARK_R};
    case GA_PLOT_MARK_PEAK_ALLOCATED: /* a triangle below its point, pointing up at it */
        return (ga_plot_rect_t){m->x - MARK_R, m->y, 2 * MARK_R, 2 * MARK_R};
    case GA_PLOT_MARK_OOMS: break;
    }
    ga_plot_oom_group_t g = {.x = m->x, .x_end = m->x_end, .y = m->y};
    return ga_plot_oom_group_symbol(&g);
}

/* Whether r fits the plot area and misses every placed label, the device
 * label and every mark's symbol. */
static bool free_at(const ga_plot_panel_t *p, const ga_plot_rect_t *r)
{
    const ga_plot_layout_t *f = &p->frame;
    if (r->x < f->x0 + 1 || r->y < f->y0 + 1 || r->x + r->w > f->x0 + f->w - 1 || r->y + r->h > f->y0 + f->h - 1)
        return false;
    if (f->device_labelled && ga_plot_rects_overlap(r, &f->device_label))
        return false;
    for (size_t i = 0; i < p->n_marks; i++) {
        const ga_plot_mark_t *m = &p->marks[i];
        ga_plot_rect_t sym = ga_plot_mark_symbol(m);
        if (ga_plot_rects_overlap(r, &sym) || (m->labelled && ga_plot_rects_overlap(r, &m->box)))
            return false;
    }
    return true;
}

/* Mark m's label: beside its point on the side with room, above or below,
 * then stacked further away; left out when no place is free. */
static void place_label(ga_plot_panel_t *p, ga_plot_mark_t *m)
{
    const ga_plot_layout_t *f = &p->frame;
    double w = text_w(m->text), h = text_h();
    bool right_first = m->x - f->x0 < 0.5 * f->w;
    double right = m->x_end + GAP, left = m->x - GAP - w;
    for (int k = 0; k <= MAX_STACK; k++) {
        double lift = k * (h + 2);
        double xs[2] = {right_first ? right : left, right_first ? left : right};
        double ys[2] = {m->y - GAP - h - lift, m->y + GAP + lift};
        for (int a = 0; a < 2; a++)
            for (int b = 0; b < 2; b++) {
                ga_plot_rect_t r = {xs[b], ys[a], w, h};
                if (free_at(p, &r)) {
                    m->box = r;
                    m->labelled = true;
                    return;
                }
            }
    }
}

/* The device's label in panel p, as layout.h places it. */
static void place_device(const ga_plot_input_t *in, const ga_plot_layout_t *axes, ga_plot_panel_t *p)
{
    if (!axes->device_line && !axes->device_above)
        return;
    const ga_plot_layout_t *f = &p->frame;
    double w = text_w(axes->device_text) + (axes->device_above ? 14.0 : 0.0), h = text_h();
    ga_plot_rect_t r = {f->x0 + f->w - 6 - w, f->y0 + 4, w, h};
    if (axes->device_line) {
        double y = ga_plot_layout_y(f, (double)in->device_memory);
        r.y = y - 4 - h;
        if (r.y < f->y0 + 2)
            r.y = y + 4;
    }
    p->frame.device_label = r;
    p->frame.device_labelled = true;
}

static void add_peak(ga_plot_panel_t *p, ga_plot_mark_kind_t kind, double event, double bytes)
{
    if (p->n_marks == GA_PLOT_MAX_MARKS)
        return;
    ga_plot_mark_t *m = &p->marks[p->n_marks++];
    memset(m, 0, sizeof(*m));
    m->kind = kind;
    m->x = m->x_end = ga_plot_layout_x(&p->frame, event);
    m->y = ga_plot_layout_y(&p->frame, bytes);
    char b[32];
    ga_plot_format_bytes(bytes, b, sizeof(b));
    snprintf(m->text, sizeof(m->text), "peak %s %s", kind == GA_PLOT_MARK_PEAK_RESERVED ? "reserved" : "allocated", b);
}

/* Panel p's OOMs grouped into marks (oom_group.h), each on the reserved line
 * at its first OOM. order has room for in->n_ooms indices. */
static void group_ooms(const ga_plot_input_t *in, ga_plot_panel_t *p, size_t *order)
{
    ga_plot_oom_group_t groups[GA_PLOT_MAX_MARKS];
    size_t room = GA_PLOT_MAX_MARKS - p->n_marks;
    size_t n = room > 0 ? ga_plot_oom_groups(in, p->series, &p->frame, order, groups, room) : 0;
    for (size_t k = 0; k < n; k++) {
        const ga_plot_oom_group_t *g = &groups[k];
        ga_plot_mark_t *m = &p->marks[p->n_marks++];
        memset(m, 0, sizeof(*m));
        m->kind = GA_PLOT_MARK_OOMS;
        m->x = g->x;
        m->x_end = g->x_end;
        m->y = oom_y(&p->frame, &in->series[p->series], g->first_event);
        m->count = g->count;
        m->first_oom = g->first_oom;
        snprintf(m->text, sizeof(m->text), "%s", g->text);
    }
}

/* Band colours: a site keeps the colour it had in an earlier panel unless
 * this panel already uses it; else the first colour free in this panel,
 * preferring one no panel has given yet. seen / seen_color: the (label,
 * colour) pairs given so far, n_seen of them, room for every band. */
static void color_bands(const ga_series_t *s, ga_plot_panel_t *p, const char **seen, int *seen_color, size_t *n_seen)
{
    bool used[GA_PLOT_BAND_COLORS] = {false};
    for (size_t b = 0; b < s->n_bands; b++) {
        const ga_series_band_t *band = &s->bands[b];
        int c = GA_PLOT_OTHER_COLOR;
        if (!band->other) {
            for (size_t i = 0; i < *n_seen && c < 0; i++)
                if (strcmp(seen[i], band->label) == 0 && !used[seen_color[i]])
                    c = seen_color[i];
            for (int k = 0; k < GA_PLOT_BAND_COLORS && c < 0; k++) { /* one no panel has given */
                bool given = false;
                for (size_t i = 0; i < *n_seen; i++)
                    given = given || seen_color[i] == k;
                if (!given && !used[k])
                    c = k;
            }
            for (int k = 0; k < GA_PLOT_BAND_COLORS && c < 0; k++)
                if (!used[k])
                    c = k;
            if (c < 0)
                c = (int)(b % GA_PLOT_BAND_COLORS); /* more bands than colours: repeat */
            used[c] = true;
            seen[*n_seen] = band->label;
            seen_color[(*n_seen)++] = c;
        }
        p->colors[b] = c;
    }
}

/* Panel i's geometry from its top (y), its marks and their labels. */
static void make_panel(const ga_plot_input_t *in, const ga_plot_stack_layout_t *l, size_t i, double y, size_t *order,
                       ga_plot_panel_t *p)
{
    const ga_series_t *s = &in->series[i];
    p->series = i;
    p->title_y = y + 4;
    p->frame = l->axes;
    p->frame.offset = NULL;
    p->frame.same_as = NULL;
    p->frame.n_labels = 0;
    p->frame.device_labelled = false;
    p->frame.y0 = y + PANEL_TITLE;
    p->frame.h = GA_PLOT_PANEL_H;
    p->legend_y = p->frame.y0 + p->frame.h + BELOW_AXES;
    p->legend_rows = legend_rows(s);
    place_device(in, &l->axes, p);
    if (s->has_peaks) {
        add_peak(p, GA_PLOT_MARK_PEAK_RESERVED, s->peak_reserved_event, s->peak_reserved);
        add_peak(p, GA_PLOT_MARK_PEAK_ALLOCATED, s->peak_allocated_event, s->peak_allocated);
    }
    size_t peaks = p->n_marks;
    group_ooms(in, p, order);
    /* Labels: the OOMs first (can a setting help is the point of a mark), then the peaks. */
    for (size_t k = peaks; k < p->n_marks; k++)
        place_label(p, &p->marks[k]);
    for (size_t k = 0; k < peaks; k++)
        place_label(p, &p->marks[k]);
}

int ga_plot_stack_layout_make(const ga_plot_input_t *in, ga_plot_stack_layout_t *l)
{
    memset(l, 0, sizeof(*l));
    if (ga_plot_layout_make(in, &l->axes) != 0)
        return -1;
    size_t n = in->n_series, bands = 0;
    for (size_t i = 0; i < n; i++)
        bands += in->series[i].n_bands;
    l->panels = calloc(n ? n : 1, sizeof(*l->panels));
    size_t *order = malloc((in->n_ooms ? in->n_ooms : 1) * sizeof(*order));
    const char **seen = malloc((bands ? bands : 1) * sizeof(*seen));
    int *seen_color = malloc((bands ? bands : 1) * sizeof(*seen_color));
    int rc = l->panels == NULL || order == NULL || seen == NULL || seen_color == NULL ? -1 : 0;
    l->n_panels = l->panels != NULL ? n : 0;
    size_t n_seen = 0;
    double y = TITLE_H;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        ga_plot_panel_t *p = &l->panels[i];
        p->colors = malloc((in->series[i].n_bands ? in->series[i].n_bands : 1) * sizeof(*p->colors));
        if (p->colors == NULL) {
            rc = -1;
            break;
        }
        color_bands(&in->series[i], p, seen, seen_color, &n_seen);
        make_panel(in, l, i, y, order, p);
        y += panel_block(&in->series[i]);
    }
    l->key_y = y;
    l->height = y + KEY_ROW + BOTTOM_PAD;
    free(order);
    free(seen);
    free(seen_color);
    if (rc != 0)
        ga_plot_stack_layout_free(l);
    return rc;
}

void ga_plot_stack_layout_free(ga_plot_stack_layout_t *l)
{
    for (size_t i = 0; i < l->n_panels; i++)
        free(l->panels[i].colors);
    free(l->panels);
    ga_plot_layout_free(&l->axes);
    memset(l, 0, sizeof(*l));
}
