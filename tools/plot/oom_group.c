/*
 * oom_group.c: OOMs grouped into labelled marks (oom_group.h), for both
 * plots. Pure arithmetic, no cairo.
 */
#include "tools/plot/oom_group.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#define MAX_CLASSES 4 /* OOM classes a group's label counts apart */

/* A group's classes, counted apart (the first MAX_CLASSES distinct ones). */
typedef struct classes {
    const char *name[MAX_CLASSES];
    size_t count[MAX_CLASSES];
    size_t n;
    bool more; /* a further class was left uncounted */
} classes_t;

static void count_class(classes_t *c, const char *label)
{
    if (label == NULL || label[0] == '\0')
        return;
    for (size_t i = 0; i < c->n; i++)
        if (strcmp(c->name[i], label) == 0) {
            c->count[i]++;
            return;
        }
    if (c->n == MAX_CLASSES) {
        c->more = true;
        return;
    }
    c->name[c->n] = label;
    c->count[c->n++] = 1;
}

/* "OOM (event 90): genuine", "40 OOMs (event 50): genuine", "100 OOMs
 * (events 460-559): fragmentation", "3 OOMs (events 40-42): 2 fragmentation,
 * 1 genuine": the events say where a group's span starts and ends, the
 * classes whether a setting can help. */
static void group_text(ga_plot_oom_group_t *g, const classes_t *c)
{
    size_t len = sizeof(g->text);
    int n = g->count == 1 ? snprintf(g->text, len, "OOM") : snprintf(g->text, len, "%zu OOMs", g->count);
    if (n > 0 && (size_t)n < len) {
        if (g->last_event > g->first_event)
            n += snprintf(g->text + n, len - (size_t)n, " (events %.0f-%.0f)", g->first_event, g->last_event);
        else
            n += snprintf(g->text + n, len - (size_t)n, " (event %.0f)", g->first_event);
    }
    if (c->n == 1 && !c->more && n > 0 && (size_t)n < len) {
        snprintf(g->text + n, len - (size_t)n, ": %s", c->name[0]);
        return;
    }
    for (size_t i = 0; i < c->n && n > 0 && (size_t)n < len; i++)
        n += snprintf(g->text + n, len - (size_t)n, "%s%zu %s", i ? ", " : ": ", c->count[i], c->name[i]);
    if (c->more && n > 0 && (size_t)n < len)
        snprintf(g->text + n, len - (size_t)n, ", ...");
}

static int by_event(size_t a, size_t b, const ga_plot_input_t *in)
{
    double x = in->ooms[a].event_index, y = in->ooms[b].event_index;
    if (x != y)
        return x < y ? -1 : 1;
    return a < b ? -1 : 1;
}

size_t ga_plot_oom_groups(const ga_plot_input_t *in, size_t series, const ga_plot_layout_t *frame, size_t *order,
                          ga_plot_oom_group_t *out, size_t max)
{
    size_t n = 0;
    for (size_t i = 0; i < in->n_ooms; i++)
        if (in->ooms[i].series == series)
            order[n++] = i;
    for (size_t i = 1; i < n; i++) /* insertion sort: markers come nearly in order */
        for (size_t j = i; j > 0 && by_event(order[j - 1], order[j], in) > 0; j--) {
            size_t t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    ga_plot_oom_group_t *g = NULL;
    classes_t cls;
    size_t groups = 0;
    for (size_t k = 0; k < n; k++) {
        const ga_oom_marker_t *o = &in->ooms[order[k]];
        double x = ga_plot_layout_x(frame, o->event_index);
        bool joins = g != NULL && (x - g->x <= GA_PLOT_OOM_GROUP_PX || x - g->x_end <= GA_PLOT_OOM_RUN_PX);
        if (g == NULL || (!joins && groups < max)) {
            if (g != NULL)
                group_text(g, &cls);
            g = &out[groups++];
            memset(g, 0, sizeof(*g));
            memset(&cls, 0, sizeof(cls));
            g->series = series;
            g->first_oom = order[k];
            g->first_event = o->event_index;
            g->x = x;
        }
        g->last_event = o->event_index;
        g->x_end = x;
        g->count++;
        count_class(&cls, o->label);
    }
    if (g != NULL) {
        group_text(g, &cls);
        uint64_t after = in->series[series].ooms_after;
        size_t len = strlen(g->text);
        if (after > 0 && len < sizeof(g->text)) /* unlisted, so neither placed nor classified */
            snprintf(g->text + len, sizeof(g->text) - len, "; %" PRIu64 " more after", after);
    }
    return groups;
}

ga_plot_rect_t ga_plot_oom_group_symbol(const ga_plot_oom_group_t *g)
{
    const double r = GA_PLOT_OOM_MARK_R;
    /* the cross, and under it the span of a group wider than one point (drawn 2 px thick) */
    double below = g->x_end - g->x > 2 ? GA_PLOT_OOM_SPAN_DY + 1.0 : r;
    return (ga_plot_rect_t){g->x - r, g->y - r, g->x_end - g->x + 2 * r, r + below};
}
