/*
 * fit_owners.c: who holds the memory in galloc fit's two runs that matter,
 * the job's own (its recorded settings, else PyTorch's defaults) and the
 * answer (the pick, else the closest): each unit replayed again through the
 * engine with owners (the same replay as galloc replay's column of that
 * configuration), and, where the own run or the answer dies of a genuine OOM,
 * by how much the live bytes must shrink at that moment, and whose they are.
 * Owners cost a replay of each unit for each of the two; the search's
 * replays never attribute (docs/owners.md, "Cost").
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "tools/fit/fit.h"
#include "tools/readers/units.h"
#include "tools/report/report.h"

#define FIT_TOP 5 /* sites fit's text names per moment */

/* The job's own run's row: the recorded one, else the defaults'. */
static const ga_fit_result_t *own_row(const ga_fit_outcome_t *oc, const ga_fit_answer_t *a)
{
    if (a->recorded != NULL)
        return a->recorded;
    for (size_t i = 0; i < oc->n; i++)
        if (!oc->results[i].recorded && oc->results[i].conf[0] == '\0')
            return &oc->results[i];
    return NULL;
}

static int replay_row(const ga_fit_job_t *job, const ga_fit_result_t *r, ga_replay_column_t **out)
{
    size_t n = job->job->n_units;
    ga_replay_column_t *cols = calloc(n ? n : 1, sizeof(*cols));
    if (cols == NULL)
        return -1;
    ga_replay_opts_t o = {
        .backend = job->backend, .env = job->env[0] != '\0', .no_sleep = job->no_sleep, .owners = true};
    for (size_t u = 0; u < n; u++) {
        ga_replay_spec_t spec = {.conf = r->conf, .recorded = r->recorded};
        if (ga_replay_column(&job->job->units[u], &o, &spec, NULL, &cols[u]) != 0) {
            for (size_t k = 0; k <= u; k++)
                ga_replay_column_release(&cols[k]);
            free(cols);
            return -1;
        }
    }
    *out = cols;
    return 0;
}

int ga_fit_owners_run(const ga_fit_job_t *job, const ga_fit_outcome_t *oc, ga_fit_owners_t *out)
{
    memset(out, 0, sizeof(*out));
    ga_fit_answer_t a;
    ga_fit_answer(job, oc, &a);
    out->row[0] = own_row(oc, &a);
    out->row[1] = a.pick != NULL ? a.pick : a.closest;
    if (out->row[1] == out->row[0])
        out->row[1] = NULL;
    for (int k = 0; k < 2; k++)
        if (out->row[k] != NULL && !out->row[k]->run.failed && replay_row(job, out->row[k], &out->cols[k]) != 0) {
            ga_fit_owners_free(job, out);
            return -1;
        }
    return 0;
}

void ga_fit_owners_free(const ga_fit_job_t *job, ga_fit_owners_t *w)
{
    for (int k = 0; k < 2; k++) {
        for (size_t u = 0; w->cols[k] != NULL && u < job->job->n_units; u++)
            ga_replay_column_release(&w->cols[k][u]);
        free(w->cols[k]);
    }
    memset(w, 0, sizeof(*w));
}

bool ga_fit_shrink(const ga_fit_job_t *job, const ga_fit_owners_t *w, int k, ga_fit_shrink_t *out)
{
    memset(out, 0, sizeof(*out));
    const ga_fit_result_t *r = w->row[k];
    /* not at_start: no request of the job failed; the answer says the state's size instead */
    if (r == NULL || w->cols[k] == NULL || r->run.fits || r->run.failed || r->run.oom.cls != GA_OOM_GENUINE ||
        r->run.oom.at_start)
        return false;
    const ga_replay_column_t *c = &w->cols[k][r->run.fail_unit];
    if (c->owners == NULL || c->owners->n_ooms == 0)
        return false;
    const ga_oom_facts_t *f = &r->run.oom;
    uint64_t room = (uint64_t)(f->cached_free > 0 ? f->cached_free : 0) + f->usable_free;
    out->unit = r->run.fail_unit;
    out->moment = &c->owners->ooms[0];
    out->owners = c->owners;
    out->deficit = f->size > room ? f->size - room : 0;
    (void)job;
    return out->deficit > 0;
}

/* "A (2.00 GiB, forward, transient)" for a site row. */
static void site_words(const ga_owners_index_t *x, const ga_owner_site_row_t *s, char *buf, size_t len)
{
    char b[32];
    ga_units_format_bytes(s->cell.bytes, b, sizeof(b));
    int best = 0;
    for (int p = 1; p < GA_PHASES; p++)
        if (s->phase_bytes[p] > s->phase_bytes[best])
            best = p;
    const char *life = s->cell.kept_bytes == s->cell.bytes ? "kept to the end"
                       : s->cell.kept_bytes == 0           ? "freed later"
                                                           : "partly kept";
    snprintf(buf, len, "%s (%s, %s, %s)", x->sites[s->site].key, b, ga_phase_name((ga_phase_t)best), life);
}

static void shrink_text(FILE *out, const ga_fit_job_t *job, const ga_fit_owners_t *w, int k)
{
    ga_fit_shrink_t s;
    if (!ga_fit_shrink(job, w, k, &s))
        return;
    const ga_owners_index_t *x = s.owners->index;
    const char *where =
        job->job->units[s.unit].cap.inferred ? "under the lowest cap the trace allows" : "on this device";
    char d[32], ev[32], words[700], rq[32], rqsite[GA_SITE_KEY_MAX + 32] = "";
    ga_units_format_size(s.deficit, d, sizeof(d));
    ga_units_format_count(s.moment->event, ev, sizeof(ev));
    ga_units_format_size(s.moment->request_size, rq, sizeof(rq));
    if (s.moment->request_cls != UINT32_MAX)
        snprintf(rqsite, sizeof(rqsite), " by %s", x->sites[x->classes[s.moment->request_cls].site].key);
    if (s.moment->allocated >= 0 && s.deficit > (uint64_t)s.moment->allocated) {
        /* freeing every live byte would not be enough: the request is the problem */
        char over[32];
        ga_units_format_size(s.deficit - (uint64_t)s.moment->allocated, over, sizeof(over));
        fprintf(out,
                "To fit %s at event %s of %s: the request of %s%s is larger than all the memory the "
                "allocator may use then, even with nothing else live: it must shrink by at least %s\n",
                where, ev, job->job->units[s.unit].label, rq, rqsite, over);
        return;
    }
    ga_owner_site_row_t *rows;
    size_t n;
    if (ga_owners_sites(s.moment, x, &rows, &n) != 0)
        return;
    fprintf(out,
            "To fit %s at event %s of %s, the live bytes then must shrink by %s (or the request of %s%s by as "
            "much); the largest holders:\n",
            where, ev, job->job->units[s.unit].label, d, rq, rqsite);
    uint64_t sum = 0;
    size_t i;
    for (i = 0; i < n && i < FIT_TOP; i++) {
        site_words(x, &rows[i], words, sizeof(words));
        char left[32];
        uint64_t b = (uint64_t)rows[i].cell.bytes;
        if (b >= s.deficit) {
            ga_units_format_size(b - s.deficit, left, sizeof(left));
            fprintf(out, "  %s: alone enough, down to %s\n", words, left);
        } else {
            fprintf(out, "  %s\n", words);
        }
        sum += b;
        if (sum >= s.deficit && b < s.deficit) {
            fprintf(out, "  (these %zu together hold more than the %s)\n", i + 1, d);
            break;
        }
    }
    fprintf(out,
            "  (at that moment only: a later one may need more; galloc fit's smallest device is the whole run's)\n");
    free(rows);
}

void ga_fit_owners_text(FILE *out, const ga_fit_job_t *job, const ga_fit_owners_t *w)
{
    for (int k = 0; k < 2; k++) {
        const ga_fit_result_t *r = w->row[k];
        if (w->cols[k] == NULL)
            continue;
        /* an answer that does not fit either, under the own run's settings: nothing new to say */
        if (k == 1 && !r->run.fits && w->row[0] != NULL && strcmp(r->conf, w->row[0]->conf) == 0)
            continue;
        size_t u = r->run.fits ? job->ref : r->run.fail_unit;
        char tag[GA_FIT_CONF_MAX + 128];
        snprintf(tag, sizeof(tag), "\n[%s: %s%s%s]",
                 k == 0        ? "the job's own run"
                 : r->run.fits ? "the answer"
                               : "the closest",
                 ga_fit_conf_name(job, r), job->job->n_units > 1 ? ", " : "",
                 job->job->n_units > 1 ? job->job->units[u].label : "");
        ga_report_owners_text(out, &job->job->units[u], &w->cols[k][u], tag, FIT_TOP,
                              r->run.fits ? GA_REPORT_OWNERS_PEAK : GA_REPORT_OWNERS_OOM);
        shrink_text(out, job, w, k);
    }
}

void ga_fit_owners_json(FILE *out, const ga_fit_job_t *job, const ga_fit_owners_t *w)
{
    static const char *const name[2] = {"own", "answer"};
    fputs("{", out);
    for (int k = 0; k < 2; k++) {
        fprintf(out, "%s\"%s\": ", k ? ",\n  " : "", name[k]);
        if (w->cols[k] == NULL) {
            fputs("null", out);
            continue;
        }
        fputs("{\"conf\": ", out);
        ga_report_json_str(out, w->row[k]->conf);
        fprintf(out, ", \"recorded\": %s, \"units\": [", w->row[k]->recorded ? "true" : "false");
        for (size_t u = 0; u < job->job->n_units; u++) {
            fputs(u ? ",\n    " : "\n    ", out);
            fputs("{\"label\": ", out);
            ga_report_json_str(out, job->job->units[u].label);
            fputs(", \"owners\": ", out);
            ga_report_owners_json(out, &job->job->units[u], w->cols[k][u].owners);
            fputs("}", out);
        }
        fputs("], \"shrink\": ", out);
        ga_fit_shrink_t s;
        if (!ga_fit_shrink(job, w, k, &s)) {
            fputs("null}", out);
            continue;
        }
        fprintf(out, "{\"unit\": %zu, \"event\": %" PRIu64 ", \"deficit_bytes\": %" PRIu64 "}}", s.unit,
                s.moment->event, s.deficit);
    }
    fputs(",\n  \"sites\": [", out);
    for (size_t u = 0; u < job->job->n_units; u++) {
        fputs(u ? ",\n    " : "\n    ", out);
        ga_report_owner_sites_json(out, &job->job->units[u].owners);
    }
    fputs("]}", out);
}
