/* TEMPORARY STUB (not committed): helper B writes the real one. */
#include "tools/owners/site.h"
#include <stdio.h>
#include <string.h>
const char *ga_phase_name(ga_phase_t p)
{
    static const char *const n[] = {"other", "forward", "backward", "optimizer"};
    return (unsigned)p < 4 ? n[p] : "other";
}
const char *ga_site_kind_name(ga_site_kind_t k) { (void)k; return "code"; }
bool ga_site_is_user_file(const char *file, size_t len)
{
    return len > 3 && memcmp(file + len - 3, ".py", 3) == 0 && !memmem(file, len, "/torch/", 7) && !memmem(file, len, "/lib/python3", 12);
}
void ga_site_special(ga_site_kind_t kind, ga_site_class_t *out)
{
    memset(out, 0, sizeof(*out));
    out->kind = kind;
    out->frame = SIZE_MAX;
    snprintf(out->key, sizeof(out->key), "%s", kind == GA_SITE_BEFORE ? "(allocated before the trace)" : kind == GA_SITE_OVERFLOW ? "(overflow)" : "(no stack recorded)");
}
void ga_site_classify(const ga_stack_t *st, ga_site_class_t *out)
{
    ga_site_special(GA_SITE_NONE, out);
    if (st == NULL || st->kind == GA_STACK_NONE) return;
    bool bwd = false, opt = false, fwd = false;
    for (size_t i = 0; i < st->n; i++) {
        ga_frame_t f; st->frame(st->data, i, &f);
        if (f.name && memmem(f.name, f.name_len, "evaluate_function", 17)) bwd = true;
        if (f.file && memmem(f.file, f.file_len, "/optim/", 7)) opt = true;
        if (f.name && f.name_len >= 10 && memmem(f.name, f.name_len, "Optimizer.", 10)) opt = true;
        if (f.name && f.file && f.name_len == 10 && !memcmp(f.name, "_call_impl", 10)) fwd = true;
        if (out->kind == GA_SITE_NONE && f.file && ga_site_is_user_file(f.file, f.file_len)) {
            out->kind = GA_SITE_CODE; out->frame = i;
            snprintf(out->key, sizeof(out->key), "%.*s:%lld %.*s", (int)f.file_len, f.file, (long long)f.line, (int)f.name_len, f.name);
        }
    }
    if (out->kind == GA_SITE_NONE) { out->kind = GA_SITE_UNKNOWN; snprintf(out->key, sizeof(out->key), "(unknown)"); }
    out->phase = bwd ? GA_PHASE_BACKWARD : opt ? GA_PHASE_OPTIMIZER : fwd ? GA_PHASE_FORWARD : GA_PHASE_OTHER;
}
