/*
 * kineto_event.c: the members of one Chrome trace event that the Kineto
 * reader uses (ga_kineto_fields_t): a CUDA [memory] event's args, a range's
 * phase, category, name, thread and times. Everything else is skipped as it
 * is scanned.
 *
 * Times: "ts" and "dur" are microseconds, which Kineto writes with up to
 * three decimals (its clock is in nanoseconds); they are kept as integer
 * nanoseconds (ga_json_milli), so a range's bounds and an event's time
 * compare exactly, as the profiler recorded them, and equal times are equal.
 * pid and tid are integers, or strings of decimal digits (PyTorch 1.9 writes
 * an operator's tid as "25738" and its memory event's as 25738): both are
 * the thread 25738.
 */
#include <string.h>

#include "tools/readers/kineto_int.h"
#include "tools/readers/units.h"

int ga_kineto_int_member(ga_json_t *j, int64_t *out, bool *has)
{
    ga_json_tok_t t = ga_json_next(j);
    if (t == GA_JSON_NUM && ga_json_int(j, out)) {
        *has = true;
        return 0;
    }
    return ga_json_skip(j, t) != 0 ? -1 : 1;
}

static int args(ga_json_t *j, ga_kineto_fields_t *f)
{
    int more;
    while ((more = ga_json_member(j)) > 0) {
        int rc;
        if (ga_json_is(j, "Addr")) {
            rc = ga_kineto_int_member(j, &f->addr, &f->has_addr);
            f->bad_addr = rc == 1;
        } else if (ga_json_is(j, "Bytes"))
            rc = ga_kineto_int_member(j, &f->bytes, &f->has_bytes);
        else if (ga_json_is(j, "Device Type"))
            rc = ga_kineto_int_member(j, &f->type, &f->has_type);
        else if (ga_json_is(j, "Device Id"))
            rc = ga_kineto_int_member(j, &f->id, &f->has_id);
        else if (ga_json_is(j, "Total Allocated"))
            rc = ga_kineto_int_member(j, &f->ta, &f->has_ta);
        else if (ga_json_is(j, "Total Reserved"))
            rc = ga_kineto_int_member(j, &f->tr, &f->has_tr);
        else
            rc = ga_json_skip(j, ga_json_next(j));
        if (rc < 0)
            return -1;
    }
    return more;
}

/* A time in nanoseconds; one outside int64_t's range (292 years) saturates. */
static int64_t nanoseconds(const ga_json_t *j)
{
    int64_t v;
    double d = 0;
    if (ga_json_milli(j, &v))
        return v;
    (void)ga_json_double(j, &d);
    return d < 0 ? INT64_MIN : INT64_MAX;
}

/* A pid or tid: an integer, or a string of decimal digits. */
static void thread_id(const ga_json_t *j, ga_json_tok_t t, int64_t *out, bool *has)
{
    uint64_t u;
    if (t == GA_JSON_NUM)
        *has = ga_json_int(j, out);
    else if (t == GA_JSON_STR && !j->trunc && ga_units_parse_u64(j->s, j->n, &u) && u <= INT64_MAX) {
        *out = (int64_t)u;
        *has = true;
    }
}

/* The categories whose ranges are kept: the host's operators ("Operator"
 * before PyTorch 1.11), record_function and profiler-step annotations, and
 * with_stack's Python functions. The CUDA runtime's calls ("cuda_runtime",
 * "Runtime": cudaLaunchKernel, cudaMemcpyAsync) are the API a range calls,
 * not code that asks for memory, and no memory event of the real traces
 * falls inside one; GPU timelines ("kernel", "gpu_memcpy",
 * "gpu_user_annotation", ...) hold no memory event. */
static int category(const ga_json_t *j)
{
    if (ga_json_is(j, "cpu_op") || ga_json_is(j, "Operator") || ga_json_is(j, "user_annotation"))
        return GA_KINETO_CAT_RANGE;
    return ga_json_is(j, "python_function") ? GA_KINETO_CAT_PYTHON : GA_KINETO_CAT_OTHER;
}

int ga_kineto_event(ga_json_t *j, ga_kineto_fields_t *f)
{
    memset(f, 0, offsetof(ga_kineto_fields_t, name)); /* the name's buffer is read only up to name_len */
    int more;
    while ((more = ga_json_member(j)) > 0) {
        bool name = ga_json_is(j, "name"), ts = ga_json_is(j, "ts"), a = ga_json_is(j, "args");
        bool ph = ga_json_is(j, "ph"), cat = ga_json_is(j, "cat"), dur = ga_json_is(j, "dur");
        bool pid = ga_json_is(j, "pid"), tid = ga_json_is(j, "tid");
        ga_json_tok_t t = ga_json_next(j);
        if (name && t == GA_JSON_STR) {
            f->memory = ga_json_is(j, "[memory]");
            memcpy(f->name, j->s, j->n);
            f->name_len = j->n;
        } else if (ts && t == GA_JSON_NUM) {
            f->ts = nanoseconds(j);
            f->has_ts = true;
        } else if (dur && t == GA_JSON_NUM) {
            f->has_dur = ga_json_milli(j, &f->dur) && f->dur >= 0;
        } else if (ph && t == GA_JSON_STR) {
            f->complete = ga_json_is(j, "X");
        } else if (cat && t == GA_JSON_STR) {
            f->cat = category(j);
        } else if ((pid || tid) && (t == GA_JSON_NUM || t == GA_JSON_STR)) {
            thread_id(j, t, pid ? &f->pid : &f->tid, pid ? &f->has_pid : &f->has_tid);
        } else if (a && t == GA_JSON_OBJ) {
            if (args(j, f) != 0)
                return -1;
        } else if (ga_json_skip(j, t) != 0)
            return -1;
    }
    return more;
}
