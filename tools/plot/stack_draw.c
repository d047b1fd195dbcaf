/*
 * stack_draw.c: draw the plot of memory stacked by owner (plot.h says what
 * it shows; stack.h decides where everything goes) with cairo.
 *
 * Per panel, bottom to top: the axes, the bands (each site's live bytes
 * stacked on the ones below it, most bytes at the bottom, "other sites" grey
 * on top: the stack's top is the allocated line), the device's line, the
 * reserved line over the bands (the gap between it and the stack is the
 * cached free memory), then the marks: a triangle for each peak, a cross for
 * each group of OOMs (a bar under it spanning the group), each with its
 * label; under the axes the panel's legend. A key of the symbols closes the
 * canvas.
 *
 * Invariants: as draw.c's: values at their true positions on linear axes
 * from 0, data clipped to the plot area, text only in the boxes stack.h gave.
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/plot/plot_int.h"
#include "tools/plot/stack.h"

#define NAME_MAX_CHARS 64 /* a site's name in a legend beyond this keeps its end (the file and line) */
#define BAND_ALPHA 0.78   /* bands a little lighter than the palette, so the lines over them stand out */

/* The palette's entries bands use: tab10 without its red (OOMs) and grey ("other sites"). */
static const int band_palette[GA_PLOT_BAND_COLORS] = {0, 1, 2, 4, 5, 6, 8, 9};
static const double other_rgb[3] = {0.72, 0.72, 0.72};
static const double reserved_rgb[3] = {0.10, 0.10, 0.10};
static const double peak_rgb[3] = {0.15, 0.15, 0.55};

static const double *band_rgb(int color)
{
    return color < 0 ? other_rgb : ga_plot_palette[band_palette[color % GA_PLOT_BAND_COLORS]];
}

/* The bands of series s, each filled between the ones below it and itself. */
static void draw_bands(cairo_t *cr, const ga_plot_panel_t *p, const ga_series_t *s)
{
    const ga_plot_layout_t *f = &p->frame;
    if (s->n == 0 || s->n_bands == 0)
        return;
    size_t n = s->n;
    double *lower = calloc(n, sizeof(*lower)), *upper = malloc(n * sizeof(*upper));
    if (lower == NULL || upper == NULL) { /* nothing to draw them with: the lines and marks still show */
        free(lower);
        free(upper);
        return;
    }
    double lone = n == 1 ? 2.0 : 0.0; /* a lone sample still shows as a sliver */
    for (size_t b = 0; b < s->n_bands; b++) {
        const double *v = s->bands[b].bytes;
        for (size_t k = 0; k < n; k++)
            upper[k] = lower[k] + v[k];
        const double *rgb = band_rgb(p->colors[b]);
        cairo_set_source_rgba(cr, rgb[0], rgb[1], rgb[2], BAND_ALPHA);
        cairo_move_to(cr, ga_plot_layout_x(f, s->event_index[0]), ga_plot_layout_y(f, upper[0]));
        for (size_t k = 1; k < n; k++)
            cairo_line_to(cr, ga_plot_layout_x(f, s->event_index[k]), ga_plot_layout_y(f, upper[k]));
        cairo_line_to(cr, ga_plot_layout_x(f, s->event_index[n - 1]) + lone, ga_plot_layout_y(f, upper[n - 1]));
        cairo_line_to(cr, ga_plot_layout_x(f, s->event_index[n - 1]) + lone, ga_plot_layout_y(f, lower[n - 1]));
        for (size_t k = n; k-- > 0;)
            cairo_line_to(cr, ga_plot_layout_x(f, s->event_index[k]), ga_plot_layout_y(f, lower[k]));
        cairo_close_path(cr);
        cairo_fill(cr);
        memcpy(lower, upper, n * sizeof(*lower));
    }
    free(lower);
    free(upper);
}

static void draw_reserved(cairo_t *cr, const ga_plot_layout_t *f, const ga_series_t *s)
{
    if (s->reserved == NULL || s->n == 0)
        return;
    cairo_set_source_rgb(cr, reserved_rgb[0], reserved_rgb[1], reserved_rgb[2]);
    cairo_set_line_width(cr, 2.0);
    cairo_set_dash(cr, NULL, 0, 0);
    cairo_move_to(cr, ga_plot_layout_x(f, s->event_index[0]), ga_plot_layout_y(f, s->reserved[0]));
    for (size_t k = 1; k < s->n; k++)
        cairo_line_to(cr, ga_plot_layout_x(f, s->event_index[k]), ga_plot_layout_y(f, s->reserved[k]));
    if (s->n == 1)
        cairo_rel_line_to(cr, 2, 0);
    cairo_stroke(cr);
}

/* A peak's symbol, its tip at (x, y): the reserved peak's filled above it
 * pointing down, the allocated peak's hollow below it pointing up. */
static void draw_triangle(cairo_t *cr, double x, double y, bool hollow)
{
    double d = hollow ? 9.0 : -9.0;
    cairo_set_source_rgb(cr, peak_rgb[0], peak_rgb[1], peak_rgb[2]);
    cairo_set_line_width(cr, 1.6);
    cairo_set_dash(cr, NULL, 0, 0);
    cairo_move_to(cr, x, y);
    cairo_line_to(cr, x - 5.5, y + d);
    cairo_line_to(cr, x + 5.5, y + d);
    cairo_close_path(cr);
    if (hollow) {
        cairo_set_source_rgb(cr, 1, 1, 1);
        cairo_fill_preserve(cr);
        cairo_set_source_rgb(cr, peak_rgb[0], peak_rgb[1], peak_rgb[2]);
        cairo_stroke(cr);
    } else {
        cairo_fill(cr);
    }
}

static void draw_marks(cairo_t *cr, const ga_plot_panel_t *p)
{
    for (size_t k = 0; k < p->n_marks; k++) {
        const ga_plot_mark_t *m = &p->marks[k];
        if (m->kind == GA_PLOT_MARK_OOMS) {
            ga_plot_draw_oom_group(cr, m->x, m->x_end, m->y);
        } else {
            draw_triangle(cr, m->x, m->y, m->kind == GA_PLOT_MARK_PEAK_ALLOCATED);
        }
    }
    for (size_t k = 0; k < p->n_marks; k++) {
        const ga_plot_mark_t *m = &p->marks[k];
        if (!m->labelled)
            continue;
        const ga_plot_rect_t *b = &m->box;
        double bx = m->x < b->x ? b->x : m->x > b->x + b->w ? b->x + b->w : m->x;
        double by = m->y < b->y ? b->y : b->y + b->h;
        bool oom = m->kind == GA_PLOT_MARK_OOMS;
        cairo_set_source_rgb(cr, oom ? 0.6 : peak_rgb[0], oom ? 0.0 : peak_rgb[1], oom ? 0.0 : peak_rgb[2]);
        if (fabs(by - m->y) > 12) { /* stacked away: a thin leader */
            cairo_set_line_width(cr, 0.8);
            cairo_move_to(cr, m->x, m->y);
            cairo_line_to(cr, bx, by);
            cairo_stroke(cr);
        }
        ga_plot_text_in(cr, b, m->text);
    }
}

/* A site's name for the legend: its end when long (the file and line are there). */
static void short_name(const char *s, char *buf, size_t len)
{
    size_t n = strlen(s);
    if (n <= NAME_MAX_CHARS)
        snprintf(buf, len, "%s", s);
    else
        snprintf(buf, len, "...%s", s + n - (NAME_MAX_CHARS - 3));
}

static void draw_legend(cairo_t *cr, const ga_plot_panel_t *p, const ga_series_t *s)
{
    const ga_plot_layout_t *f = &p->frame;
    double col_w = f->w / 2;
    ga_plot_set_font(cr, 11.5, false);
    for (size_t b = 0; b < s->n_bands; b++) {
        double x = f->x0 + col_w * (double)(b % 2), y = p->legend_y + 20.0 * (double)(b / 2) + 10;
        const double *rgb = band_rgb(p->colors[b]);
        cairo_set_source_rgba(cr, rgb[0], rgb[1], rgb[2], BAND_ALPHA);
        cairo_rectangle(cr, x + 4, y - 6, 22, 12);
        cairo_fill(cr);
        char bytes[32], name[NAME_MAX_CHARS + 8], text[160];
        ga_plot_format_bytes(s->bands[b].at_moment, bytes, sizeof(bytes));
        short_name(s->bands[b].label != NULL ? s->bands[b].label : "", name, sizeof(name));
        cairo_set_source_rgb(cr, 0.1, 0.1, 0.1);
        ga_plot_text_at(cr, x + 100, y, bytes, 1.0, 0.5); /* right-aligned figures */
        snprintf(text, sizeof(text), "%s", name);
        cairo_text_extents_t e;
        cairo_text_extents(cr, text, &e);
        double room = col_w - 116;
        if (e.x_advance > room) /* a wide font: shrink rather than run into the next column */
            ga_plot_set_font(cr, 11.5 * room / e.x_advance, false);
        ga_plot_text_at(cr, x + 108, y, text, 0.0, 0.5);
        ga_plot_set_font(cr, 11.5, false);
    }
}

static void draw_panel_title(cairo_t *cr, const ga_plot_panel_t *p, const ga_series_t *s)
{
    char t[512];
    const char *label = s->label != NULL && s->label[0] != '\0' ? s->label : "defaults";
    size_t named = s->n_bands - (s->n_bands > 0 && s->bands[s->n_bands - 1].other);
    if (s->n_bands > 0)
        snprintf(
            t, sizeof(t),
            "%s: live bytes stacked by site, %zu named: the largest at %s and over the run (legend: their bytes at %s)",
            label, named, s->bands_at != NULL ? s->bands_at : "the reserved peak",
            s->bands_at != NULL ? s->bands_at : "the reserved peak");
    else
        snprintf(t, sizeof(t), "%s: no owners recorded", label);
    ga_plot_set_font(cr, 13.5, true);
    cairo_set_source_rgb(cr, 0.1, 0.1, 0.1);
    ga_plot_text_at(cr, p->frame.x0, p->title_y, t, 0.0, 0.0);
}

/* The key under the last panel: what the lines and symbols mean. */
static void draw_key(cairo_t *cr, const ga_plot_stack_layout_t *l, const ga_plot_input_t *in)
{
    double x = l->axes.x0, y = l->key_y + 12;
    cairo_text_extents_t e;
    ga_plot_set_font(cr, 12, false);
    cairo_set_source_rgb(cr, reserved_rgb[0], reserved_rgb[1], reserved_rgb[2]);
    cairo_set_line_width(cr, 2.0);
    cairo_move_to(cr, x, y);
    cairo_line_to(cr, x + 30, y);
    cairo_stroke(cr);
    cairo_set_source_rgb(cr, 0.1, 0.1, 0.1);
    const char *res = "reserved (above the stack: cached, unallocated)";
    ga_plot_text_at(cr, x + 36, y, res, 0.0, 0.5);
    cairo_text_extents(cr, res, &e);
    x += 36 + e.x_advance + 26;
    if (l->axes.device_line) {
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
        x += 36 + 100 + 26;
    }
    draw_triangle(cr, x + 6, y + 4.5, false);
    cairo_set_source_rgb(cr, 0.1, 0.1, 0.1);
    ga_plot_text_at(cr, x + 18, y, "peak reserved", 0.0, 0.5);
    x += 18 + 100;
    draw_triangle(cr, x + 6, y - 4.5, true);
    cairo_set_source_rgb(cr, 0.1, 0.1, 0.1);
    ga_plot_text_at(cr, x + 18, y, "peak allocated", 0.0, 0.5);
    x += 18 + 110;
    if (in->n_ooms > 0) {
        ga_plot_draw_cross(cr, x + 8, y, 5.0);
        cairo_set_source_rgb(cr, 0.1, 0.1, 0.1);
        ga_plot_text_at(cr, x + 22, y, "out of memory (close ones grouped)", 0.0, 0.5);
    }
}

cairo_status_t ga_plot_stack_draw(cairo_t *cr, const ga_plot_input_t *in)
{
    ga_plot_stack_layout_t l;
    if (ga_plot_stack_layout_make(in, &l) != 0)
        return CAIRO_STATUS_NO_MEMORY;
    cairo_set_source_rgb(cr, 1, 1, 1);
    cairo_paint(cr);
    char title[256];
    snprintf(title, sizeof(title), "Memory by owner%s%s", in->title != NULL && in->title[0] != '\0' ? ": " : "",
             in->title != NULL ? in->title : "");
    ga_plot_set_font(cr, 17, true);
    cairo_set_source_rgb(cr, 0.05, 0.05, 0.05);
    ga_plot_text_at(cr, GA_PLOT_WIDTH / 2, 14, title, 0.5, 0.0);
    for (size_t i = 0; i < l.n_panels; i++) {
        const ga_plot_panel_t *p = &l.panels[i];
        const ga_series_t *s = &in->series[p->series];
        draw_panel_title(cr, p, s);
        ga_plot_draw_axes(cr, &p->frame, in->events);
        cairo_save(cr);
        cairo_rectangle(cr, p->frame.x0, p->frame.y0, p->frame.w, p->frame.h);
        cairo_clip(cr);
        draw_bands(cr, p, s);
        draw_reserved(cr, &p->frame, s);
        cairo_restore(cr);
        ga_plot_draw_device(cr, &p->frame, in->device_memory);
        draw_marks(cr, p); /* unclipped: a symbol at the edge stays whole */
        draw_legend(cr, p, s);
    }
    draw_key(cr, &l, in);
    ga_plot_stack_layout_free(&l);
    return cairo_status(cr);
}
