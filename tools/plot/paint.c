/*
 * paint.c: what both plots draw the same way (plot_int.h): the palette, text
 * placed by its anchor or kept inside its box, the axes with their grid,
 * ticks and titles, the device's line or arrow label, the OOM cross. draw.c
 * draws the lines plot with them, stack_draw.c the plot stacked by owner.
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "tools/plot/plot_int.h"

/* Matplotlib's tab10: distinct, readable on white, familiar from PyTorch's plots. */
const double ga_plot_palette[GA_PLOT_PALETTE][3] = {
    {0.122, 0.467, 0.706}, {1.000, 0.498, 0.055}, {0.173, 0.627, 0.173}, {0.839, 0.153, 0.157}, {0.580, 0.404, 0.741},
    {0.549, 0.337, 0.294}, {0.890, 0.467, 0.761}, {0.498, 0.498, 0.498}, {0.737, 0.741, 0.133}, {0.090, 0.745, 0.812},
};

/* Decimals needed to tell ticks `step` apart. */
static int decimals_for(double step)
{
    int d = (int)ceil(-log10(step) - 1e-9);
    return d < 0 ? 0 : d > 9 ? 9 : d;
}

/* Draw s with its anchor (ax, ay in [0, 1] of its extents) at (x, y). */
void ga_plot_text_at(cairo_t *cr, double x, double y, const char *s, double ax, double ay)
{
    cairo_text_extents_t e;
    cairo_text_extents(cr, s, &e);
    cairo_move_to(cr, x - e.x_bearing - e.width * ax, y - e.y_bearing - e.height * ay);
    cairo_show_text(cr, s);
}

void ga_plot_set_font(cairo_t *cr, double size, bool bold)
{
    cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL,
                           bold ? CAIRO_FONT_WEIGHT_BOLD : CAIRO_FONT_WEIGHT_NORMAL);
    cairo_set_font_size(cr, size);
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

/* Text s in box b (left-aligned, centred vertically), made smaller if the
 * font is wider than layout.c's estimate, so it never leaves its box. */
void ga_plot_text_in(cairo_t *cr, const ga_plot_rect_t *b, const char *s)
{
    cairo_text_extents_t e;
    double r, g, bl;
    cairo_pattern_get_rgba(cairo_get_source(cr), &r, &g, &bl, NULL);
    cairo_set_source_rgba(cr, 1, 1, 1, 0.8); /* readable over the curves it sits on */
    cairo_rectangle(cr, b->x, b->y, b->w, b->h);
    cairo_fill(cr);
    cairo_set_source_rgb(cr, r, g, bl);
    ga_plot_set_font(cr, GA_PLOT_LABEL_FONT, false);
    cairo_text_extents(cr, s, &e);
    if (e.x_advance > b->w - 4)
        ga_plot_set_font(cr, GA_PLOT_LABEL_FONT * (b->w - 4) / e.x_advance, false);
    ga_plot_text_at(cr, b->x + 2, b->y + b->h / 2, s, 0.0, 0.5);
}

void ga_plot_draw_axes(cairo_t *cr, const ga_plot_layout_t *f, uint64_t events)
{
    double ystep = f->ystep, xstep = f->xstep;
    char buf[64];
    ga_plot_set_font(cr, 12, false);
    cairo_set_dash(cr, NULL, 0, 0);
    cairo_set_line_width(cr, 1.0);
    /* Horizontal grid and y tick labels (in the layout's unit). */
    for (double v = 0; v <= f->ymax + ystep * 1e-6; v += ystep) {
        double y = round(ga_plot_layout_y(f, v)) + 0.5; /* on the pixel grid: crisp 1-px lines in the PNG */
        cairo_set_source_rgb(cr, 0.88, 0.88, 0.88);
        cairo_move_to(cr, f->x0, y);
        cairo_line_to(cr, f->x0 + f->w, y);
        cairo_stroke(cr);
        cairo_set_source_rgb(cr, 0.15, 0.15, 0.15);
        cairo_move_to(cr, f->x0 - 5, y);
        cairo_line_to(cr, f->x0, y);
        cairo_stroke(cr);
        snprintf(buf, sizeof(buf), "%.*f", decimals_for(ystep / f->unit), v / f->unit);
        ga_plot_text_at(cr, f->x0 - 9, y, buf, 1.0, 0.5);
    }
    /* x ticks (event index). */
    for (double v = 0; v <= f->xmax + xstep * 1e-6; v += xstep) {
        double x = round(ga_plot_layout_x(f, v)) + 0.5;
        cairo_set_source_rgb(cr, 0.15, 0.15, 0.15);
        cairo_move_to(cr, x, f->y0 + f->h);
        cairo_line_to(cr, x, f->y0 + f->h + 5);
        cairo_stroke(cr);
        format_count(v, xstep, buf, sizeof(buf));
        ga_plot_text_at(cr, x, f->y0 + f->h + 9, buf, 0.5, 0.0);
    }
    /* Frame. */
    cairo_rectangle(cr, round(f->x0) + 0.5, round(f->y0) + 0.5, round(f->w), round(f->h));
    cairo_stroke(cr);
    /* Axis titles. */
    ga_plot_set_font(cr, 13, false);
    char xt[96];
    snprintf(xt, sizeof(xt), "event index (%llu events)", (unsigned long long)events);
    ga_plot_text_at(cr, f->x0 + f->w / 2, f->y0 + f->h + 32, xt, 0.5, 0.0);
    cairo_save(cr);
    cairo_translate(cr, 22, f->y0 + f->h / 2);
    cairo_rotate(cr, -M_PI / 2);
    snprintf(buf, sizeof(buf), "memory (%s)", f->unit_name);
    ga_plot_text_at(cr, 0, 0, buf, 0.5, 0.5);
    cairo_restore(cr);
}

/* The device: a dashed ceiling with its label, or, off the scale, an arrow
 * pointing up beside its label at the top. */
void ga_plot_draw_device(cairo_t *cr, const ga_plot_layout_t *f, uint64_t device_memory)
{
    static const double dash[] = {10.0, 5.0};
    cairo_set_source_rgb(cr, 0.35, 0.35, 0.35);
    cairo_set_line_width(cr, 1.4);
    if (f->device_line) {
        double y = ga_plot_layout_y(f, (double)device_memory);
        cairo_set_dash(cr, dash, 2, 0);
        cairo_move_to(cr, f->x0, y);
        cairo_line_to(cr, f->x0 + f->w, y);
        cairo_stroke(cr);
        cairo_set_dash(cr, NULL, 0, 0);
    }
    if (!f->device_labelled)
        return;
    ga_plot_rect_t b = f->device_label;
    if (f->device_above) { /* the arrow takes the box's first 14 units */
        double ax = b.x + 6;
        cairo_move_to(cr, ax, b.y + b.h - 1);
        cairo_line_to(cr, ax, b.y + 2);
        cairo_stroke(cr);
        cairo_move_to(cr, ax - 4, b.y + 6);
        cairo_line_to(cr, ax, b.y + 1);
        cairo_line_to(cr, ax + 4, b.y + 6);
        cairo_stroke(cr);
        b.x += 14;
        b.w -= 14;
    }
    cairo_set_source_rgb(cr, 0.3, 0.3, 0.3);
    ga_plot_text_in(cr, &b, f->device_text);
}

void ga_plot_draw_cross(cairo_t *cr, double x, double y, double r)
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

void ga_plot_draw_oom_group(cairo_t *cr, double x, double x_end, double y)
{
    if (x_end - x > 2) { /* the span of a group, under its crosses' line */
        cairo_set_source_rgb(cr, 0.85, 0.05, 0.05);
        cairo_set_line_width(cr, 2.0);
        cairo_set_dash(cr, NULL, 0, 0);
        cairo_move_to(cr, x, y + GA_PLOT_OOM_SPAN_DY);
        cairo_line_to(cr, x_end, y + GA_PLOT_OOM_SPAN_DY);
        cairo_stroke(cr);
    }
    ga_plot_draw_cross(cr, x, y, 5.5);
}
