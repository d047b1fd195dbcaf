/*
 * plot.c: ga_plot_write (plot.h): check the input, pick the surface from the
 * file extension, draw (draw.c) and write the file.
 *
 * The file is opened here with stdio and handed to cairo's stream writers,
 * rather than letting cairo open it, so a failure names the OS reason
 * ("Permission denied") instead of cairo's generic "error while writing to
 * output stream", and a partial file can be removed.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <cairo-svg.h>

#include "tools/plot/plot_int.h"
#include "tools/plot/stack.h"
#include "util/errf.h"

typedef enum format { FMT_PNG, FMT_SVG } format_t;

/* The stream cairo writes through; keeps the first write error's errno. */
typedef struct sink {
    FILE *f;   /* the open file */
    int error; /* errno of the first failed write, 0 if none */
} sink_t;

static cairo_status_t sink_write(void *closure, const unsigned char *data, unsigned int length)
{
    sink_t *s = closure;
    if (s->error != 0)
        return CAIRO_STATUS_WRITE_ERROR;
    if (fwrite(data, 1, length, s->f) != length) {
        s->error = errno != 0 ? errno : EIO;
        return CAIRO_STATUS_WRITE_ERROR;
    }
    return CAIRO_STATUS_SUCCESS;
}

static int format_of(const char *path, format_t *fmt)
{
    size_t n = strlen(path);
    if (n >= 4 && strcasecmp(path + n - 4, ".png") == 0)
        *fmt = FMT_PNG;
    else if (n >= 4 && strcasecmp(path + n - 4, ".svg") == 0)
        *fmt = FMT_SVG;
    else
        return -1;
    return 0;
}

/* Everything the drawing code relies on, so it needs no checks of its own. */
static int check_input(const ga_plot_input_t *in, char *err, size_t errlen)
{
    if (in->n_series > 0 && in->series == NULL)
        return ga_errf(err, errlen, "%zu series but no series array", in->n_series);
    for (size_t i = 0; i < in->n_series; i++) {
        const ga_series_t *s = &in->series[i];
        if (s->n > 0 && s->event_index == NULL)
            return ga_errf(err, errlen, "series %zu has %zu points but no event_index", i, s->n);
    }
    for (size_t i = 0; i < in->n_series; i++) {
        const ga_series_t *s = &in->series[i];
        if (s->n_bands > 0 && s->bands == NULL)
            return ga_errf(err, errlen, "series %zu has %zu bands but no band array", i, s->n_bands);
        for (size_t b = 0; b < s->n_bands; b++)
            if (s->n > 0 && s->bands[b].bytes == NULL)
                return ga_errf(err, errlen, "series %zu band %zu has no values", i, b);
    }
    if (in->n_ooms > 0 && in->ooms == NULL)
        return ga_errf(err, errlen, "%zu OOM markers but no marker array", in->n_ooms);
    for (size_t i = 0; i < in->n_ooms; i++)
        if (in->ooms[i].series >= in->n_series)
            return ga_errf(err, errlen, "OOM marker %zu names series %zu of %zu", i, in->ooms[i].series, in->n_series);
    return 0;
}

/* Draw on a surface of the chosen kind and stream it to sink. Returns the
 * first cairo error, CAIRO_STATUS_SUCCESS otherwise. Everything created is
 * destroyed on every path. */
static cairo_status_t render(format_t fmt, const ga_plot_input_t *in, sink_t *sink)
{
    bool stacked = ga_plot_stacked(in);
    double w = GA_PLOT_WIDTH, h = stacked ? ga_plot_stack_height(in) : ga_plot_height(in);
    cairo_surface_t *surface = fmt == FMT_PNG ? cairo_image_surface_create(CAIRO_FORMAT_ARGB32, (int)w, (int)h)
                                              : cairo_svg_surface_create_for_stream(sink_write, sink, w, h);
    cairo_status_t st = cairo_surface_status(surface);
    if (st == CAIRO_STATUS_SUCCESS) {
        cairo_t *cr = cairo_create(surface);
        st = stacked ? ga_plot_stack_draw(cr, in) : ga_plot_draw(cr, in);
        cairo_destroy(cr);
    }
    if (st == CAIRO_STATUS_SUCCESS && fmt == FMT_PNG)
        st = cairo_surface_write_to_png_stream(surface, sink_write, sink);
    cairo_surface_finish(surface); /* SVG: writes the document's end */
    if (st == CAIRO_STATUS_SUCCESS)
        st = cairo_surface_status(surface);
    cairo_surface_destroy(surface);
    return st;
}

int ga_plot_check_path(const char *path, char *err, size_t errlen)
{
    format_t fmt;
    if (path == NULL)
        return ga_errf(err, errlen, "ga_plot_write: NULL path");
    if (format_of(path, &fmt) != 0)
        return ga_errf(err, errlen, "%s: unknown plot format (the file name must end in .png or .svg)", path);
    return 0;
}

int ga_plot_write(const char *path, const ga_plot_input_t *in, char *err, size_t errlen)
{
    format_t fmt;
    if (path == NULL || in == NULL)
        return ga_errf(err, errlen, "ga_plot_write: NULL %s", path == NULL ? "path" : "input");
    if (ga_plot_check_path(path, err, errlen) != 0 || format_of(path, &fmt) != 0)
        return -1;
    if (check_input(in, err, errlen) != 0) {
        char msg[256];
        snprintf(msg, sizeof(msg), "%s", err != NULL ? err : "");
        return ga_errf(err, errlen, "%s: bad plot input: %s", path, msg);
    }
    sink_t sink = {.f = fopen(path, "wb")};
    if (sink.f == NULL)
        return ga_errf(err, errlen, "%s: cannot create: %s", path, strerror(errno));
    cairo_status_t st = render(fmt, in, &sink);
    bool closed = fclose(sink.f) == 0;
    if (!closed && sink.error == 0)
        sink.error = errno != 0 ? errno : EIO;
    if (st == CAIRO_STATUS_SUCCESS && closed && sink.error == 0)
        return 0;
    (void)remove(path); /* a truncated image would look like a plot that stopped early */
    if (sink.error != 0)
        return ga_errf(err, errlen, "%s: cannot write: %s", path, strerror(sink.error));
    return ga_errf(err, errlen, "%s: cairo: %s", path, cairo_status_to_string(st));
}
