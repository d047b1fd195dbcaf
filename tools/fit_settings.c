/*
 * fit_settings.c: the allocator settings a PyTorch memory snapshot recorded
 * (its "allocator_settings" dict, newer releases), as the
 * PYTORCH_CUDA_ALLOC_CONF string galloc fit replays as the job's own
 * configuration.
 *
 * The dict's fields are the effective configuration (PyTorch's
 * AllocatorConfigInfo): expandable_segments, max_split_size (bytes; -1 or
 * SIZE_MAX when unlimited), garbage_collection_threshold (0 = off) and
 * roundup_power2_divisions (a dict from each interval's start in MB, "1" to
 * "32768", to its divisions). They are preferred to the recorded
 * "PYTORCH_CUDA_ALLOC_CONF" text, which is only the last string set and
 * omits keys an earlier one set; the text is used when the fields are absent.
 * Not recorded, so not replayed: max_non_split_rounding_mb and the
 * per-process memory fraction.
 *
 * The parsed document comes from the per-process snapshot cache
 * (snapfile.h) the trace reader filled, so the file is not read again; only
 * its first byte is, to skip non-pickle traces without loading them.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/fit.h"
#include "tools/pickle_read.h"
#include "tools/snapfile.h"



/* The roundup dict as "N" when every interval agrees, else a 16-entry list;
 * "" when every interval is 0 (off). */
static void roundup(const ga_pk_value_t *d, char *out, size_t len)
{
    int64_t div[16] = {0};
    bool any = false, same = true;
    for (int i = 0; i < 16; i++) {
        char key[16];
        snprintf(key, sizeof(key), "%d", 1 << i);
        const ga_pk_value_t *v = ga_pk_dict_get(d, key);
        div[i] = v != NULL && v->type == GA_PK_INT ? v->u.i : 0;
        any |= div[i] != 0;
        same &= div[i] == div[0];
    }
    out[0] = '\0';
    if (!any)
        return;
    if (same) {
        snprintf(out, len, "roundup_power2_divisions:%" PRId64, div[0]);
        return;
    }
    size_t n = (size_t)snprintf(out, len, "roundup_power2_divisions:[");
    for (int i = 0; i < 16 && n < len; i++)
        n += (size_t)snprintf(out + n, len - n, "%s%d:%" PRId64, i ? "," : "", 1 << i, div[i]);
    if (n < len)
        snprintf(out + n, len - n, "]");
}

static void append(char *conf, size_t len, const char *item)
{
    size_t n = strlen(conf);
    if (item[0] != '\0' && n < len)
        snprintf(conf + n, len - n, "%s%s", n ? "," : "", item);
}

/* The string from the dict's fields; false when it has none of them. */
static bool from_fields(const ga_pk_value_t *s, char *conf, size_t len)
{
    const ga_pk_value_t *es = ga_pk_dict_get(s, "expandable_segments");
    const ga_pk_value_t *ms = ga_pk_dict_get(s, "max_split_size");
    const ga_pk_value_t *gc = ga_pk_dict_get(s, "garbage_collection_threshold");
    const ga_pk_value_t *rd = ga_pk_dict_get(s, "roundup_power2_divisions");
    if (es == NULL && ms == NULL && gc == NULL && rd == NULL)
        return false;
    char item[400];
    conf[0] = '\0';
    if (es != NULL && es->type == GA_PK_BOOL && es->u.b)
        append(conf, len, "expandable_segments:True");
    /* Unlimited is SIZE_MAX, which a pickle holds as -1 or as a big int. */
    if (ms != NULL && ms->type == GA_PK_INT && ms->u.i > 0 && ms->u.i < INT64_MAX) {
        snprintf(item, sizeof(item), "max_split_size_mb:%" PRId64, ms->u.i >> 20);
        append(conf, len, item);
    }
    if (rd != NULL && rd->type == GA_PK_DICT) {
        roundup(rd, item, sizeof(item));
        append(conf, len, item);
    }
    if (gc != NULL && gc->type == GA_PK_FLOAT && gc->u.f > 0) {
        snprintf(item, sizeof(item), "garbage_collection_threshold:%g", gc->u.f);
        append(conf, len, item);
    }
    return true;
}

int ga_fit_recorded_conf(const char *path, char *conf, size_t len, char *text, size_t text_len, char *err,
                         size_t errlen)
{
    conf[0] = '\0';
    text[0] = '\0';
    /* Only a pickle records settings: look at its first byte before loading
     * anything (a text or CSV trace may be large). */
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        snprintf(err, errlen, "%s: cannot open", path);
        return -1;
    }
    int first = fgetc(f);
    fclose(f);
    if (first != 0x80)
        return 0;
    int rc = 0;
    const ga_pickle_t *pk = NULL;
    if (ga_snapfile_get(path, &pk, NULL, err, errlen) != 0)
        return -1;
    const ga_pk_value_t *s = ga_pk_dict_get(ga_pickle_root(pk), "allocator_settings");
    if (s == NULL || s->type != GA_PK_DICT)
        goto out;
    const ga_pk_value_t *t = ga_pk_dict_get(s, "PYTORCH_CUDA_ALLOC_CONF");
    if (t != NULL && t->type == GA_PK_STR)
        snprintf(text, text_len, "%.*s", (int)(t->u.s.n < 1000 ? t->u.s.n : 1000), t->u.s.p);
    if (from_fields(s, conf, len))
        rc = 1;
    else if (text[0] != '\0') {
        snprintf(conf, len, "%s", text);
        rc = 1;
    }
out:
    return rc;
}
