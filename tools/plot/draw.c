/*
 * draw.c: lay out and draw the memory-over-time plot with cairo (plot.h says
 * what it shows). The surface and the file are plot.c's business; this file
 * only turns a ga_plot_input_t into paths and text on a cairo context.
 *
 * Layout, top to bottom: title; the axes (a fixed-height plot area with the
 * y axis in GiB on the left and the event index below); the legend (one
 * line-style key row, then one row per configuration), whose height grows
 * with the number of configurations, so a long --conf list never overlaps
 * the data.
 *
 * Invariants: every value is drawn at its true position on linear axes from 0
 * (memory plots read as "how full is the device", so the y axis always starts
 * at zero); data lines are clipped to the plot area.
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "tools/plot/plot_int.h"

#define GIB 1073741824.0

/* Plot area and legend geometry (device units). */
#define M_LEFT 88.0
#define M_RIGHT 36.0
#define M_TOP 60.0
#define AREA_H 470.0
#define BELOW_AXES 58.0 /* x tick labels and the x axis title */
#define KEY_ROW 26.0
#define CONF_ROW 22.0
#define LEGEND_PAD 14.0

/* Matplotlib's tab10: distinct, readable on white, familiar from PyTorch's plots. */
static const double palette[][3] = {
    {0.122, 0.467, 0.706}, {1.000, 0.498, 0.055}, {0.173, 0.627, 0.173}, {0.839, 0.153, 0.157},
    {0.580, 0.404, 0.741}, {0.549, 0.337, 0.294}, {0.890, 0.467, 0.761}, {0.498, 0.498, 0.498},
    {0.737, 0.741, 0.133}, {0.090, 0.745, 0.812},
};
#define N_COLORS (sizeof(palette) / sizeof(palette[0]))

/* How each of a configuration's three lines is stroked. */
typedef enum line_kind { L_RESERVED, L_ALLOCATED, L_REQUESTED } line_kind_t;

/* The data-to-device mapping of the plot area. */
typedef struct frame {
    double x0, y0; /* top-left corner of the plot area */
    double w, h;   /* its size */
    double xmax;   /* event index at the right edge (0 at the left) */
    double ymax;   /* GiB at the top edge (0 at the bottom) */
} frame_t;

static double px(const frame_t *f, double x)
{
    return f->x0 + x / f->xmax * f->w;
}

static double py(const frame_t *f, double bytes)
{
    return f->y0 + f->h - bytes / GIB / f->ymax * f->h;
}

double ga_plot_height(const ga_plot_input_t *in)
{
    return M_TOP + AREA_H + BELOW_AXES + KEY_ROW + CONF_ROW * (double)in->n_series + LEGEND_PAD;
}

/* A "nice" tick step (1, 2 or 5 times a power of ten) giving about `target`
 * ticks over span, so labels stay short and round. */
static double nice_step(double span, int target)
{
    double raw = span / target;
    double mag = pow(10.0, floor(log10(raw)));
    double f = raw / mag;
    return (f < 1.5 ? 1.0 : f < 3.5 ? 2.0 : f < 7.5 ? 5.0 : 10.0) * mag;
}

/* Decimals needed to tell ticks `step` apart. */
static int decimals_for(double step)
{
    int d = (int)ceil(-log10(step) - 1e-9);
    return d < 0 ? 0 : d > 9 ? 9 : d;
}

/* Draw s with its anchor (ax, ay in [0, 1] of its extents) at (x, y). */
static void text_at(cairo_t *cr, double x, double y, const char *s, double ax, double ay)
{
    cairo_text_extents_t e;
    cairo_text_extents(cr, s, &e);
    cairo_move_to(cr, x - e.x_bearing - e.width * ax, y - e.y_bearing - e.height * ay);
    cairo_show_text(cr, s);
}

static void set_font(cairo_t *cr, double size, bool bold)
{
    cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL,
                           bold ? CAIRO_FONT_WEIGHT_BOLD : CAIRO_FONT_WEIGHT_NORMAL);
    cairo_set_font_size(cr, size);
}

static void set_line(cairo_t *cr, const double *rgb, line_kind_t kind)
{
    static const double dashed[] = {7.0, 4.0};
    static const double dotted[] = {0.1, 3.6}; /* round caps turn these into dots */
    cairo_set_source_rgb(cr, rgb[0], rgb[1], rgb[2]);
    cairo_set_line_cap(cr, kind == L_REQUESTED ? CAIRO_LINE_CAP_ROUND : CAIRO_LINE_CAP_BUTT);
    cairo_set_line_width(cr, kind == L_RESERVED ? 2.2 : kind == L_ALLOCATED ? 1.6 : 2.0);
    if (kind == L_RESERVED)
        cairo_set_dash(cr, NULL, 0, 0);
    else if (kind == L_ALLOCATED)
        cairo_set_dash(cr, dashed, 2, 0);
    else
        cairo_set_dash(cr, dotted, 2, 0);
}

/* The frame fitting every value and the device size, with round tick ends. */
static frame_t make_frame(const ga_plot_input_t *in, double *ystep, double *xstep)
{
    frame_t f = {.x0 = M_LEFT, .y0 = M_TOP, .w = GA_PLOT_WIDTH - M_LEFT - M_RIGHT, .h = AREA_H};
    double xmax = (double)in->events, ymax = (double)in->device_memory;
    for (size_t i = 0; i < in->n_series; i++) {
        const ga_series_t *s = &in->series[i];
        const double *lines[] = {s->requested, s->allocated, s->reserved};
        for (size_t k = 0; k < s->n; k++) {
            if (s->event_index[k] + 1 > xmax)
                xmax = s->event_index[k] + 1;
            for (size_t j = 0; j < 3; j++)
                if (lines[j] != NULL && lines[j][k] > ymax)
                    ymax = lines[j][k];
        }
    }
    if (xmax < 1)
        xmax = 1;
    double ygib = ymax / GIB * 1.05; /* headroom so the top line is not on the frame */
    if (!(ygib > 0))
        ygib = 1;
    *ystep = nice_step(ygib, 6);
    f.ymax = ceil(ygib / *ystep - 1e-9) * *ystep;
    *xstep = nice_step(xmax, 8);
    f.xmax = xmax;
    return f;
}

/* Event counts as 0, 500, 1.5k, 2M: short labels under the axis. */
static void format_count(double v, double step, char *buf, size_t len)
{
    double div = step >= 1e6 ? 1e6 : step >= 1e3 ? 1e3 : 1.0;
    if (v == 0) {
        snprintf(buf, len, "0");
        return;
    }
    const char *suffix = div == 1e6 ? "M" : div == 1e3 ? "k" : "";
    snprintf(buf, len, "%.*f%s", decimals_for(step / div), v / div, suffix);
}

static void draw_axes(cairo_t *cr, const frame_t *f, double ystep, double xstep, uint64_t events)
{
    char buf[64];
    set_font(cr, 12, false);
    cairo_set_dash(cr, NULL, 0, 0);
    cairo_set_line_width(cr, 1.0);
    /* Horizontal grid and y tick labels (GiB). */
    for (double v = 0; v <= f->ymax + ystep * 1e-6; v += ystep) {
        double y = round(py(f, v * GIB)) + 0.5; /* on the pixel grid: crisp 1-px lines in the PNG */
        cairo_set_source_rgb(cr, 0.88, 0.88, 0.88);
        cairo_move_to(cr, f->x0, y);
        cairo_line_to(cr, f->x0 + f->w, y);
        cairo_stroke(cr);
        cairo_set_source_rgb(cr, 0.15, 0.15, 0.15);
        cairo_move_to(cr, f->x0 - 5, y);
        cairo_line_to(cr, f->x0, y);
        cairo_stroke(cr);
        snprintf(buf, sizeof(buf), "%.*f", decimals_for(ystep), v);
        text_at(cr, f->x0 - 9, y, buf, 1.0, 0.5);
    }
    /* x ticks (event index). */
    for (double v = 0; v <= f->xmax + xstep * 1e-6; v += xstep) {
        double x = round(px(f, v)) + 0.5;
        cairo_set_source_rgb(cr, 0.15, 0.15, 0.15);
        cairo_move_to(cr, x, f->y0 + f->h);
        cairo_line_to(cr, x, f->y0 + f->h + 5);
        cairo_stroke(cr);
        format_count(v, xstep, buf, sizeof(buf));
        text_at(cr, x, f->y0 + f->h + 9, buf, 0.5, 0.0);
    }
    /* Frame. */
    cairo_rectangle(cr, round(f->x0) + 0.5, round(f->y0) + 0.5, round(f->w), round(f->h));
    cairo_stroke(cr);
    /* Axis titles. */
    set_font(cr, 13, false);
    char xt[96];
    snprintf(xt, sizeof(xt), "event index (%llu events)", (unsigned long long)events);
    text_at(cr, f->x0 + f->w / 2, f->y0 + f->h + 32, xt, 0.5, 0.0);
    cairo_save(cr);
    cairo_translate(cr, 22, f->y0 + f->h / 2);
    cairo_rotate(cr, -M_PI / 2);
    text_at(cr, 0, 0, "memory (GiB)", 0.5, 0.5);
    cairo_restore(cr);
}

static void draw_device_line(cairo_t *cr, const frame_t *f, uint64_t device_memory)
{
    static const double dash[] = {10.0, 5.0};
    char buf[64];
    double y = py(f, (double)device_memory);
    cairo_set_source_rgb(cr, 0.35, 0.35, 0.35);
    cairo_set_line_width(cr, 1.4);
    cairo_set_dash(cr, dash, 2, 0);
    cairo_move_to(cr, f->x0, y);
    cairo_line_to(cr, f->x0 + f->w, y);
    cairo_stroke(cr);
    cairo_set_dash(cr, NULL, 0, 0);
    set_font(cr, 11, false);
    snprintf(buf, sizeof(buf), "device %.2f GiB", (double)device_memory / GIB);
    text_at(cr, f->x0 + f->w - 6, y - 4, buf, 1.0, 1.0);
}

/* One of a configuration's lines (kind), if the replay provided it. */
static void draw_line(cairo_t *cr, const frame_t *f, const ga_series_t *s, const double *rgb, line_kind_t kind)
{
    const double *line = kind == L_RESERVED ? s->reserved : kind == L_ALLOCATED ? s->allocated : s->requested;
    if (line == NULL || s->n == 0)
        return;
    set_line(cr, rgb, kind);
    cairo_move_to(cr, px(f, s->event_index[0]), py(f, line[0]));
    for (size_t k = 1; k < s->n; k++)
        cairo_line_to(cr, px(f, s->event_index[k]), py(f, line[k]));
    if (s->n == 1) /* a lone sample still shows as a short tick */
        cairo_rel_line_to(cr, 2, 0);
    cairo_stroke(cr);
    cairo_set_dash(cr, NULL, 0, 0);
}

/* The value of the line at x: the last sample at or before x (samples are
 * strictly increasing in x), so a marker sits on the drawn curve. */
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

static void draw_cross(cairo_t *cr, double x, double y, double r)
{
    cairo_set_source_rgb(cr, 0.85, 0.05, 0.05);
    cairo_set_line_width(cr, 2.6);
    cairo_set_line_cap(cr, CAIRO_LINE_CAP_ROUND);
    cairo_set_dash(cr, NULL, 0, 0);
    cairo_move_to(cr, x - r, y - r);
    cairo_line_to(cr, x + r, y + r);
    cairo_move_to(cr, x - r, y + r);
    cairo_line_to(cr, x + r, y - r);
    cairo_stroke(cr);
}

#define MAX_OOM_LABELS 8 /* OOM markers that get their class written by them */

static void draw_ooms(cairo_t *cr, const frame_t *f, const ga_plot_input_t *in)
{
    for (size_t i = 0; i < in->n_ooms; i++) {
        const ga_oom_marker_t *o = &in->ooms[i];
        const ga_series_t *s = &in->series[o->series];
        const double *line = s->reserved != NULL ? s->reserved : s->allocated != NULL ? s->allocated : s->requested;
        double v = line != NULL && s->n > 0 ? value_at(s, line, o->event_index) : 0.0;
        draw_cross(cr, px(f, o->event_index), py(f, v), 5.5);
        /* The class is the point of the marker (can a setting help?); past a
         * few the labels would only overprint each other. */
        if (o->label != NULL && o->label[0] != '\0' && i < MAX_OOM_LABELS) {
            set_font(cr, 11, false);
            cairo_set_source_rgb(cr, 0.6, 0.0, 0.0);
            double x = px(f, o->event_index);
            bool left = x - f->x0 > 0.5 * f->w; /* on the side with room, inside the axes */
            text_at(cr, left ? x - 8 : x + 8, py(f, v) - 8, o->label, left ? 1.0 : 0.0, 1.0);
        }
    }
}

/* A short line sample of a style, then its text; returns the x after it. */
static double key_entry(cairo_t *cr, double x, double y, const double *rgb, line_kind_t kind, const char *text)
{
    set_line(cr, rgb, kind);
    cairo_move_to(cr, x, y);
    cairo_line_to(cr, x + 30, y);
    cairo_stroke(cr);
    cairo_set_dash(cr, NULL, 0, 0);
    cairo_set_source_rgb(cr, 0.1, 0.1, 0.1);
    text_at(cr, x + 36, y, text, 0.0, 0.5);
    cairo_text_extents_t e;
    cairo_text_extents(cr, text, &e);
    return x + 36 + e.x_advance + 26;
}

static void draw_legend(cairo_t *cr, const frame_t *f, const ga_plot_input_t *in)
{
    static const double grey[] = {0.25, 0.25, 0.25};
    double y = f->y0 + f->h + BELOW_AXES + KEY_ROW / 2;
    double x = f->x0;
    set_font(cr, 12, false);
    x = key_entry(cr, x, y, grey, L_RESERVED, "reserved");
    x = key_entry(cr, x, y, grey, L_ALLOCATED, "allocated");
    x = key_entry(cr, x, y, grey, L_REQUESTED, "requested");
    if (in->n_ooms > 0) {
        draw_cross(cr, x + 8, y, 5.0);
        cairo_set_source_rgb(cr, 0.1, 0.1, 0.1);
        text_at(cr, x + 22, y, "out of memory", 0.0, 0.5);
        x += 130;
    }
    if (in->device_memory > 0) {
        static const double dash[] = {10.0, 5.0};
        cairo_set_source_rgb(cr, 0.35, 0.35, 0.35);
        cairo_set_line_width(cr, 1.4);
        cairo_set_dash(cr, dash, 2, 0);
        cairo_move_to(cr, x, y);
        cairo_line_to(cr, x + 30, y);
        cairo_stroke(cr);
        cairo_set_dash(cr, NULL, 0, 0);
        cairo_set_source_rgb(cr, 0.1, 0.1, 0.1);
        text_at(cr, x + 36, y, "device memory", 0.0, 0.5);
    }
    for (size_t i = 0; i < in->n_series; i++) {
        const double *rgb = palette[i % N_COLORS];
        double ry = y + KEY_ROW / 2 + CONF_ROW * ((double)i + 0.5);
        cairo_set_source_rgb(cr, rgb[0], rgb[1], rgb[2]);
        cairo_rectangle(cr, f->x0 + 4, ry - 6, 22, 12);
        cairo_fill(cr);
        cairo_set_source_rgb(cr, 0.1, 0.1, 0.1);
        const char *label = in->series[i].label;
        text_at(cr, f->x0 + 36, ry, label != NULL && label[0] != '\0' ? label : "defaults", 0.0, 0.5);
    }
}

void ga_plot_draw(cairo_t *cr, const ga_plot_input_t *in)
{
    double ystep, xstep;
    frame_t f = make_frame(in, &ystep, &xstep);
    cairo_set_source_rgb(cr, 1, 1, 1);
    cairo_paint(cr);

    char title[256];
    snprintf(title, sizeof(title), "Memory over time%s%s", in->title != NULL && in->title[0] != '\0' ? ": " : "",
             in->title != NULL ? in->title : "");
    set_font(cr, 17, true);
    cairo_set_source_rgb(cr, 0.05, 0.05, 0.05);
    text_at(cr, GA_PLOT_WIDTH / 2, 22, title, 0.5, 0.0);

    draw_axes(cr, &f, ystep, xstep, in->events);
    cairo_save(cr);
    cairo_rectangle(cr, f.x0, f.y0, f.w, f.h);
    cairo_clip(cr);
    if (in->device_memory > 0)
        draw_device_line(cr, &f, in->device_memory);
    /* Requested, then allocated, then reserved, each over every configuration:
     * requested is the same in every configuration (the trace fixes it) and
     * allocated nearly so, while reserved is what the configurations change,
     * so it goes on top where no other line hides it. */
    for (int kind = L_REQUESTED; kind >= L_RESERVED; kind--)
        for (size_t i = 0; i < in->n_series; i++)
            draw_line(cr, &f, &in->series[i], palette[i % N_COLORS], (line_kind_t)kind);
    cairo_restore(cr);
    draw_ooms(cr, &f, in); /* unclipped: a cross at the edge stays whole */
    draw_legend(cr, &f, in);
}
