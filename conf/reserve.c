/*
 * reserve.c: the expandable-segment reserve keys' values, as PyTorch main
 * reads and resolves them (c10/cuda/CUDAAllocatorConfig.cpp, parseReserveSpec;
 * c10/cuda/CUDAAllocatorConfig.h, ExpandableSegmentReserveSpec::resolveBytes
 * and expandable_segments_reserve_decision).
 *
 * A value is a number with an optional trailing 'G' or 'g': with it, GiB
 * ("40G"); without, a fraction of the device's total memory ("0.5", and
 * "1.5" is allowed: the pool clamps every reserve to the full 9/8 one). The
 * number must be finite and above 0. PyTorch logs a warning for any other
 * value and keeps the setting it had; galloc refuses the string instead
 * (house rule: a clear error for bad input), so a string galloc accepts means
 * here what it meant in PyTorch. The number is read by ga_conf_read_decimal
 * ([+-] digits [. digits] [e [+-] digits]), which takes the forms PyTorch's
 * classic-locale istream does, hexadecimal aside.
 *
 * Pure, like the rest of conf/.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "conf/conf_int.h"

ga_num_t ga_conf_read_reserve(const ga_tok_t *t, ga_conf_reserve_t *out)
{
    if (t->kind != GA_TOK_WORD || t->len == 0 || t->len >= GA_CONF_TOK_CAP)
        return GA_NUM_SYNTAX;
    char num[GA_CONF_TOK_CAP];
    size_t n = t->len;
    bool gib = t->text[n - 1] == 'G' || t->text[n - 1] == 'g';
    if (gib)
        n--;
    memcpy(num, t->text, n);
    num[n] = '\0';
    double v = 0;
    ga_num_t r = ga_conf_read_decimal(num, &v);
    if (r != GA_NUM_OK)
        return r;
    if (!isfinite(v))
        return GA_NUM_RANGE;
    if (!(v > 0.0))
        return GA_NUM_SYNTAX;
    *out = (ga_conf_reserve_t){.gib = gib, .value = v};
    return GA_NUM_OK;
}

void ga_conf_write_reserve(const ga_conf_reserve_t *r, char *buf, size_t len)
{
    char v[48];
    ga_conf_write_decimal(r->value, v, sizeof(v));
    snprintf(buf, len, "%s%s", v, r->gib ? "G" : "");
}

/* resolveBytes: saturate before narrowing (a double past UINT64_MAX has no
 * defined conversion), else truncate. */
static uint64_t resolve(const ga_conf_reserve_t *r, uint64_t device_total)
{
    double bytes = r->gib ? r->value * (double)((uint64_t)1 << 30) : r->value * (double)device_total;
    if (bytes >= 18446744073709551616.0) /* 2^64 */
        return UINT64_MAX;
    return (uint64_t)bytes;
}

bool ga_conf_reserve_bytes(const ga_conf_t *c, const char *cls, uint64_t device_total, uint64_t *bytes,
                           bool *class_known)
{
    if (class_known != NULL)
        *class_known = false;
    for (uint32_t i = 0; cls != NULL && cls[0] != '\0' && i < c->n_reserve_classes; i++) {
        if (strncmp(c->reserve_classes[i].name, cls, GA_CONF_NAME_MAX) == 0) {
            if (class_known != NULL)
                *class_known = true;
            *bytes = resolve(&c->reserve_classes[i].reserve, device_total);
            return true;
        }
    }
    if (!c->es_reserve_set)
        return false;
    *bytes = resolve(&c->es_reserve, device_total);
    return true;
}

bool ga_conf_reserve_configured(const ga_conf_t *c)
{
    return c->es_reserve_set || c->n_reserve_classes > 0;
}
