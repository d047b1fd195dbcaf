/*
 * outputs.c: see outputs.h. The two optional dependencies are behind macros
 * rather than weak symbols: with static linking a weak reference does not
 * pull a definition out of a library archive, so a weak check would keep
 * saying "not available" even once the functions exist.
 */
#include "tools/report/outputs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef GA_TOOLS_HAVE_PLOT
#include "tools/plot/plot.h"
#endif

bool ga_outputs_have_snapshot(void)
{
#ifdef GA_TOOLS_HAVE_SNAPSHOT
    return true;
#else
    return false;
#endif
}

bool ga_outputs_have_plot(void)
{
#ifdef GA_TOOLS_HAVE_PLOT
    return true;
#else
    return false;
#endif
}

static int record_history(galloc_allocator_t *a, size_t max_entries, char *err, size_t errlen)
{
#ifdef GA_TOOLS_HAVE_SNAPSHOT
    galloc_history_options_t opt = {.struct_size = sizeof(opt),
                                    .enabled = GALLOC_HISTORY_ALL,
                                    /* the trace's recorded frames and times,
                                     * through the engine's trace source */
                                    .context = GALLOC_CONTEXT_ALL,
                                    .stacks = GALLOC_STACKS_PYTHON,
                                    .max_entries = max_entries};
    galloc_status_t st = galloc_record_memory_history(a, &opt);
    if (st != GALLOC_OK) {
        char msg[GALLOC_ERROR_MAX];
        galloc_last_error(a, msg, sizeof(msg));
        snprintf(err, errlen, "recording the memory history failed: %s%s%s", galloc_strerror(st), msg[0] ? ": " : "",
                 msg);
        return -1;
    }
    return 0;
#else
    (void)a;
    (void)max_entries;
    snprintf(err, errlen, "--snapshot is not available yet in this build (snapshot writer not linked)");
    return -1;
#endif
}

static int record_state(galloc_allocator_t *a, char *err, size_t errlen)
{
#ifdef GA_TOOLS_HAVE_SNAPSHOT
    galloc_history_options_t opt = {
        .struct_size = sizeof(opt), .enabled = GALLOC_HISTORY_STATE, .context = GALLOC_CONTEXT_ALL};
    galloc_status_t st = galloc_record_memory_history(a, &opt);
    if (st != GALLOC_OK) {
        snprintf(err, errlen, "recording the seeded state's stacks failed: %s", galloc_strerror(st));
        return -1;
    }
    return 0;
#else
    (void)a;
    snprintf(err, errlen, "--snapshot is not available yet in this build (snapshot writer not linked)");
    return -1;
#endif
}

static int write_snapshot(galloc_allocator_t *a, const char *path, char *err, size_t errlen)
{
#ifdef GA_TOOLS_HAVE_SNAPSHOT
    size_t n = strlen(path);
    galloc_snapshot_format_t fmt =
        n >= 5 && strcmp(path + n - 5, ".json") == 0 ? GALLOC_SNAPSHOT_JSON : GALLOC_SNAPSHOT_PICKLE;
    galloc_status_t st = galloc_snapshot_write(a, path, fmt);
    if (st != GALLOC_OK) {
        char msg[GALLOC_ERROR_MAX];
        galloc_last_error(a, msg, sizeof(msg));
        snprintf(err, errlen, "%s: writing the snapshot failed: %s%s%s", path, galloc_strerror(st), msg[0] ? ": " : "",
                 msg);
        return -1;
    }
    return 0;
#else
    (void)a;
    snprintf(err, errlen, "%s: --snapshot is not available yet in this build", path);
    return -1;
#endif
}

static void annotate(galloc_allocator_t *a, const char *text)
{
#ifdef GA_TOOLS_HAVE_SNAPSHOT
    galloc_record_annotation(a, "START", text); /* a point marker: PyTorch's ranges have START and END */
#else
    (void)a;
    (void)text;
#endif
}

static void mark(galloc_allocator_t *a)
{
#ifdef GA_TOOLS_HAVE_SNAPSHOT
    galloc_record_snapshot_entry(a); /* the recorded marker's time and frames, through the trace source */
#else
    (void)a;
#endif
}

const ga_replay_snapshot_ops_t ga_outputs_snapshot_ops = {.record = record_history,
                                                          .record_state = record_state,
                                                          .write = write_snapshot,
                                                          .annotate = annotate,
                                                          .mark = mark};

int ga_outputs_plot(const char *path, const ga_plot_input_t *in, char *err, size_t errlen)
{
#ifdef GA_TOOLS_HAVE_PLOT
    return ga_plot_write(path, in, err, errlen) == 0 ? 0 : -1;
#else
    (void)in;
    snprintf(err, errlen, "%s: --plot is not available yet in this build", path);
    return -1;
#endif
}

int ga_outputs_check_writable(const char *path, char *err, size_t errlen)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0) {
        close(fd);
        (void)unlink(path); /* made only to prove it can be */
        return 0;
    }
    if (errno == EEXIST) {
        fd = open(path, O_WRONLY | O_CLOEXEC); /* no O_TRUNC: the old file stays until the new one is written */
        if (fd >= 0) {
            close(fd);
            return 0;
        }
    }
    snprintf(err, errlen, "%s: cannot create: %s", path, strerror(errno));
    return -1;
}

int ga_outputs_plot_check(const char *path, char *err, size_t errlen)
{
#ifdef GA_TOOLS_HAVE_PLOT
    if (ga_plot_check_path(path, err, errlen) != 0)
        return -1;
    return ga_outputs_check_writable(path, err, errlen);
#else
    snprintf(err, errlen, "%s: --plot is not available yet in this build", path);
    return -1;
#endif
}

/* Run r's series stacked by site (bands, from ga_sampler_bands) with its
 * peaks, from its owners' moments. 0, or -1 when host memory ran out. */
static int stack_by_site(const ga_plot_run_t *r, ga_site_bands_t *bands, ga_series_t *s)
{
    const ga_owners_t *w = r->owners;
    if (w == NULL || ga_sampler_bands(r->sampler, w, GA_SAMPLER_TOP_SITES, bands) != 0)
        return w == NULL ? 0 : -1;
    s->n_bands = bands->n;
    s->bands = bands->bands;
    s->bands_at = bands->by == GA_MOMENT_OOM ? "the first OOM" : "the reserved peak";
    const ga_owners_moment_t *pr = &w->peak_reserved, *pa = &w->peak_allocated;
    if (pr->valid && pa->valid) {
        s->has_peaks = true;
        s->peak_reserved_event = pr->event == GA_OWNERS_BEFORE_EVENTS ? 0.0 : (double)pr->event;
        s->peak_reserved = (double)pr->reserved;
        s->peak_allocated_event = pa->event == GA_OWNERS_BEFORE_EVENTS ? 0.0 : (double)pa->event;
        s->peak_allocated = (double)pa->allocated;
    }
    return 0;
}

int ga_outputs_plot_runs(const char *path, const char *title, uint64_t device_memory, uint64_t events,
                         const ga_plot_run_t *runs, size_t n, char *err, size_t errlen)
{
    size_t nm = 0;
    for (size_t i = 0; i < n; i++)
        nm += runs[i].n_ooms;
    ga_series_t *s = calloc(n ? n : 1, sizeof(*s));
    ga_oom_marker_t *m = calloc(nm ? nm : 1, sizeof(*m));
    ga_site_bands_t *bands = calloc(n ? n : 1, sizeof(*bands));
    int rc = -1;
    if (s == NULL || m == NULL || bands == NULL) {
        snprintf(err, errlen, "%s: out of host memory", path);
        goto out;
    }
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        ga_sampler_series(runs[i].sampler, runs[i].label, &s[i]);
        if (stack_by_site(&runs[i], &bands[i], &s[i]) != 0) {
            snprintf(err, errlen, "%s: out of host memory", path);
            goto out;
        }
        for (size_t j = 0; j < runs[i].n_ooms; j++)
            m[k++] = (ga_oom_marker_t){(double)runs[i].ooms[j].event, i, ga_oom_class_name(runs[i].ooms[j].facts.cls)};
        s[i].ooms_after = runs[i].ooms_total > runs[i].n_ooms ? runs[i].ooms_total - runs[i].n_ooms : 0;
    }
    ga_plot_input_t in = {.title = title,
                          .device_memory = device_memory,
                          .events = events,
                          .n_series = n,
                          .series = s,
                          .n_ooms = k,
                          .ooms = m};
    rc = ga_outputs_plot(path, &in, err, errlen);
out:
    for (size_t i = 0; bands != NULL && i < n; i++)
        ga_site_bands_free(&bands[i]);
    free(bands);
    free(s);
    free(m);
    return rc;
}

char *ga_outputs_name(const char *base, size_t k, size_t n)
{
    size_t len = strlen(base) + 24;
    char *s = malloc(len);
    if (s == NULL)
        return NULL;
    if (n <= 1) {
        snprintf(s, len, "%s", base);
        return s;
    }
    const char *slash = strrchr(base, '/');
    const char *dot = strrchr(base, '.');
    if (dot == NULL || (slash != NULL && dot < slash) || dot == base || (slash && dot == slash + 1))
        snprintf(s, len, "%s.%zu", base, k + 1);
    else
        snprintf(s, len, "%.*s.%zu%s", (int)(dot - base), base, k + 1, dot);
    return s;
}
