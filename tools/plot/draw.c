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
 * Where things go (the y scale, the device line or arrow, label boxes, the
 * offsets of coinciding lines) is layout.c's decision; this file draws it.
 *
 * Invariants: every value is drawn at its true position on linear axes from 0
 * (memory plots read as "how full is the device", so the y axis always starts
 * at zero), except a line drawn a few pixels higher because it coincides with
 * an earlier configuration's (the legend says which); data lines are clipped
 * to the plot area; no text is drawn outside the box layout.c gave it.
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "tools/plot/plot_int.h"

/* Legend geometry (device units); the plot area is layout.h's. */
#define BELOW_AXES 58.0 /* x tick labels and the x axis title */
#define KEY_ROW 26.0
#define CONF_ROW 22.0
#define LEGEND_PAD 14.0

/* How each of a configuration's three lines is stroked. */
typedef enum line_kind { L_RESERVED, L_ALLOCATED, L_REQUESTED } line_kind_t;

typedef ga_plot_layout_t frame_t;

static double px(const frame_t *f, double x)
{
    return ga_plot_layout_x(f, x);
}

static double py(const frame_t *f, double bytes)
{
    return ga_plot_layout_y(f, bytes);
}

/* layout.h's index of a line kind. */
static int line_index(line_kind_t kind)
{
    return kind == L_RESERVED ? GA_PLOT_RESERVED : kind == L_ALLOCATED ? GA_PLOT_ALLOCATED : GA_PLOT_REQUESTED;
}

double ga_plot_height(const ga_plot_input_t *in)
{
    return GA_PLOT_AREA_TOP + GA_PLOT_AREA_H + BELOW_AXES + KEY_ROW + CONF_ROW * (double)in->n_series + LEGEND_PAD;
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

/* One of a configuration's lines (kind), if the replay provided it. */
static void draw_line(cairo_t *cr, const frame_t *f, size_t i, const ga_series_t *s, const double *rgb,
                      line_kind_t kind)
{
    const double *line = ga_plot_series_line(s, line_index(kind));
    if (line == NULL || s->n == 0)
        return;
    double up = f->offset[i * GA_PLOT_LINES + (size_t)line_index(kind)]; /* over an earlier, identical line */
    set_line(cr, rgb, kind);
    cairo_move_to(cr, px(f, s->event_index[0]), py(f, line[0]) - up);
    for (size_t k = 1; k < s->n; k++)
        cairo_line_to(cr, px(f, s->event_index[k]), py(f, line[k]) - up);
    if (s->n == 1) /* a lone sample still shows as a short tick */
        cairo_rel_line_to(cr, 2, 0);
    cairo_stroke(cr);
    cairo_set_dash(cr, NULL, 0, 0);
}

static void draw_ooms(cairo_t *cr, const frame_t *f)
{
    for (size_t k = 0; k < f->n_groups; k++)
        ga_plot_draw_oom_group(cr, f->groups[k].x, f->groups[k].x_end, f->groups[k].y);
    /* The label is the point of the mark (how many, where, can a setting
     * help?): each in the box layout.c found free, a thin leader when
     * stacked away. */
    for (size_t k = 0; k < f->n_labels; k++) {
        const ga_plot_label_t *lb = &f->labels[k];
        double x = f->groups[lb->group].x, y = f->groups[lb->group].y;
        double bx = x < lb->box.x ? lb->box.x : x > lb->box.x + lb->box.w ? lb->box.x + lb->box.w : x;
        double by = y < lb->box.y ? lb->box.y : lb->box.y + lb->box.h;
        cairo_set_source_rgb(cr, 0.6, 0.0, 0.0);
        if (fabs(by - y) > 12) {
            cairo_set_line_width(cr, 0.8);
            cairo_move_to(cr, x, y);
            cairo_line_to(cr, bx, by);
            cairo_stroke(cr);
        }
        ga_plot_text_in(cr, &lb->box, lb->text);
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
    ga_plot_text_at(cr, x + 36, y, text, 0.0, 0.5);
    cairo_text_extents_t e;
    cairo_text_extents(cr, text, &e);
    return x + 36 + e.x_advance + 26;
}

static const char *series_name(const ga_plot_input_t *in, size_t i)
{
    const char *label = in->series[i].label;
    return label != NULL && label[0] != '\0' ? label : "defaults";
}

/* A configuration's legend row: its name, and which of its lines are drawn
 * higher than their values because they coincide with an earlier row's. */
static void legend_text(const ga_plot_input_t *in, const frame_t *f, size_t i, char *buf, size_t len)
{
    static const char *const names[] = {"requested", "allocated", "reserved"};
    int n = snprintf(buf, len, "%s", series_name(in, i));
    bool any = false;
    size_t last = 0;
    for (int k = 0; k < GA_PLOT_LINES && n > 0 && (size_t)n < len; k++) {
        size_t same = f->same_as[i * GA_PLOT_LINES + (size_t)k];
        if (same == SIZE_MAX)
            continue;
        n += snprintf(buf + n, len - (size_t)n, "%s%s", any ? ", " : "  (", names[k]);
        last = same;
        any = true;
    }
    if (any && n > 0 && (size_t)n < len)
        snprintf(buf + n, len - (size_t)n, " overlapping those of %s: drawn %g px higher)", series_name(in, last),
                 GA_PLOT_OFFSET_PX);
}

static void draw_legend(cairo_t *cr, const frame_t *f, const ga_plot_input_t *in)
{
    static const double grey[] = {0.25, 0.25, 0.25};
    double y = f->y0 + f->h + BELOW_AXES + KEY_ROW / 2;
    double x = f->x0;
    ga_plot_set_font(cr, 12, false);
    x = key_entry(cr, x, y, grey, L_RESERVED, "reserved");
    x = key_entry(cr, x, y, grey, L_ALLOCATED, "allocated");
    x = key_entry(cr, x, y, grey, L_REQUESTED, "requested");
    if (in->n_ooms > 0) {
        static const char oom_key[] = "out of memory (close ones grouped)"; /* as the stacked plot's key */
        ga_plot_draw_cross(cr, x + 8, y, 5.0);
        cairo_set_source_rgb(cr, 0.1, 0.1, 0.1);
        ga_plot_text_at(cr, x + 22, y, oom_key, 0.0, 0.5);
        cairo_text_extents_t e;
        cairo_text_extents(cr, oom_key, &e);
        x += 22 + e.x_advance + 26;
    }
    if (f->device_line) { /* an arrow label names a device off the scale */
        static const double dash[] = {10.0, 5.0};
        cairo_set_source_rgb(cr, 0.35, 0.35, 0.35);
        cairo_set_line_width(cr, 1.4);
        cairo_set_dash(cr, dash, 2, 0);
        cairo_move_to(cr, x, y);
        cairo_line_to(cr, x + 30, y);
        cairo_stroke(cr);
        cairo_set_dash(cr, NULL, 0, 0);
        cairo_set_source_rgb(cr, 0.1, 0.1, 0.1);
        ga_plot_text_at(cr, x + 36, y, "device memory", 0.0, 0.5);
    }
    for (size_t i = 0; i < in->n_series; i++) {
        const double *rgb = ga_plot_palette[i % GA_PLOT_PALETTE];
        double ry = y + KEY_ROW / 2 + CONF_ROW * ((double)i + 0.5);
        cairo_set_source_rgb(cr, rgb[0], rgb[1], rgb[2]);
        cairo_rectangle(cr, f->x0 + 4, ry - 6, 22, 12);
        cairo_fill(cr);
        cairo_set_source_rgb(cr, 0.1, 0.1, 0.1);
        char text[512];
        legend_text(in, f, i, text, sizeof(text));
        ga_plot_text_at(cr, f->x0 + 36, ry, text, 0.0, 0.5);
    }
}

cairo_status_t ga_plot_draw(cairo_t *cr, const ga_plot_input_t *in)
{
    frame_t f;
    if (ga_plot_layout_make(in, &f) != 0)
        return CAIRO_STATUS_NO_MEMORY;
    cairo_set_source_rgb(cr, 1, 1, 1);
    cairo_paint(cr);

    char title[256];
    snprintf(title, sizeof(title), "Memory over time%s%s", in->title != NULL && in->title[0] != '\0' ? ": " : "",
             in->title != NULL ? in->title : "");
    ga_plot_set_font(cr, 17, true);
    cairo_set_source_rgb(cr, 0.05, 0.05, 0.05);
    ga_plot_text_at(cr, GA_PLOT_WIDTH / 2, 22, title, 0.5, 0.0);

    ga_plot_draw_axes(cr, &f, in->events);
    cairo_save(cr);
    cairo_rectangle(cr, f.x0, f.y0, f.w, f.h);
    cairo_clip(cr);
    /* Requested, then allocated, then reserved, each over every configuration:
     * requested is the same in every configuration (the trace fixes it) and
     * allocated nearly so, while reserved is what the configurations change,
     * so it goes on top where no other line hides it. */
    for (int kind = L_REQUESTED; kind >= L_RESERVED; kind--)
        for (size_t i = 0; i < in->n_series; i++)
            draw_line(cr, &f, i, &in->series[i], ga_plot_palette[i % GA_PLOT_PALETTE], (line_kind_t)kind);
    cairo_restore(cr);
    ga_plot_draw_device(cr, &f, in->device_memory); /* its label over the lines, in its own box */
    draw_ooms(cr, &f);                              /* unclipped: a cross at the edge stays whole */
    draw_legend(cr, &f, in);
    ga_plot_layout_free(&f);
    return cairo_status(cr);
}
