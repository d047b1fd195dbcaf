/*
 * settings.c: the allocator settings a PyTorch memory snapshot recorded
 * (its "allocator_settings" dict, newer releases, read by the walker of
 * torch_snapshot.c), as the PYTORCH_CUDA_ALLOC_CONF string that galloc replay
 * and galloc fit replay as the job's own configuration.
 *
 * The dict's fields are the effective configuration (PyTorch's
 * AllocatorConfigInfo): expandable_segments, max_split_size (bytes; -1 or
 * SIZE_MAX when unlimited), garbage_collection_threshold (0 = off) and
 * roundup_power2_divisions (a dict from each interval's start in MB, "1" to
 * "32768", to its divisions), and in 2.9+ graph_capture_record_stream_reuse
 * (a replay routes nothing to a capture, so it only carries the setting into
 * what galloc writes: a block PyTorch reused in a capture is freed when its
 * recorded free_completed says). They are preferred to the recorded
 * "PYTORCH_CUDA_ALLOC_CONF" text, which is only the last string set and
 * omits keys an earlier one set; the text is used when the fields are absent.
 * Not recorded, so not replayed: max_non_split_rounding_mb and the
 * per-process memory fraction.
 *
 * PyTorch main's CUDA keys have no field (its snapshot's config_metadata
 * lists none of them): throw_on_cudamalloc_oom, expandable_segments_reserve
 * and expandable_segments_reserve_by_class are taken from the recorded text
 * beside the fields, as written. With throw_on_cudamalloc_oom:True the
 * text's per_process_memory_fraction comes too: it is the limit the refusal
 * compares with (CUDAAllocatorConfig::per_process_memory_fraction()). galloc
 * applies it at create, as PyTorch's constructor does for a fraction from
 * the environment; a text set later by _set_allocator_settings reads the
 * same, and there PyTorch would not have capped the pool (UNVERIFIED which
 * one a snapshot came from: the text does not say).
 *
 * It reads the parsed document the loaded job holds (snapfile.h): the file
 * is not read again.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/snapshot/torch_snapshot.h"

/* The roundup dict as "N" when every interval agrees, else a 16-entry list;
 * "" when every interval is 0 (off). */
static void roundup(const int64_t div[16], char *out, size_t len)
{
    bool any = false, same = true;
    for (int i = 0; i < 16; i++) {
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

/* The items of text whose key is key, appended to conf as written (spaces
 * dropped; a list value keeps its commas). */
static void carry(const char *text, const char *key, char *conf, size_t len)
{
    const char *p = text;
    while (*p != '\0') {
        const char *start = p;
        int depth = 0;
        while (*p != '\0' && !(*p == ',' && depth == 0)) {
            depth += *p == '[' ? 1 : (*p == ']' && depth > 0 ? -1 : 0);
            p++;
        }
        char item[400];
        size_t n = 0;
        for (const char *q = start; q < p && n + 1 < sizeof(item); q++)
            if (*q != ' ' && *q != '\t' && *q != '\n')
                item[n++] = *q;
        item[n] = '\0';
        size_t k = strlen(key);
        if (strncmp(item, key, k) == 0 && item[k] == ':')
            append(conf, len, item);
        if (*p == ',')
            p++;
    }
}

/* The text's value of key is exactly value. */
static bool text_says(const char *text, const char *key, const char *value)
{
    char one[64] = "";
    carry(text, key, one, sizeof(one));
    size_t k = strlen(key);
    return strncmp(one, key, k) == 0 && one[k] == ':' && strcmp(one + k + 1, value) == 0;
}

/* The keys with no field, from the recorded text (see the file comment). */
static void from_text(const char *text, char *conf, size_t len)
{
    if (text_says(text, "throw_on_cudamalloc_oom", "True"))
        carry(text, "per_process_memory_fraction", conf, len);
    carry(text, "throw_on_cudamalloc_oom", conf, len);
    carry(text, "expandable_segments_reserve", conf, len);
    carry(text, "expandable_segments_reserve_by_class", conf, len);
}

/* The string from the dict's fields; false when it has none of them. */
static bool from_fields(const ga_torch_settings_t *s, char *conf, size_t len)
{
    if (!s->has_fields)
        return false;
    char item[400];
    conf[0] = '\0';
    if (s->expandable_segments)
        append(conf, len, "expandable_segments:True");
    /* Unlimited is SIZE_MAX, which a pickle holds as -1 or as a big int. */
    if (s->max_split_size_int && s->max_split_size > 0 && s->max_split_size < INT64_MAX) {
        snprintf(item, sizeof(item), "max_split_size_mb:%" PRId64, s->max_split_size >> 20);
        append(conf, len, item);
    }
    if (s->roundup_dict) {
        roundup(s->roundup, item, sizeof(item));
        append(conf, len, item);
    }
    if (s->gc_threshold > 0) {
        snprintf(item, sizeof(item), "garbage_collection_threshold:%g", s->gc_threshold);
        append(conf, len, item);
    }
    if (s->capture_reuse)
        append(conf, len, "graph_capture_record_stream_reuse:True");
    return true;
}

bool ga_torch_recorded_conf(const ga_torch_snapshot_t *snap, char *conf, size_t len, char *text, size_t text_len)
{
    conf[0] = '\0';
    text[0] = '\0';
    ga_torch_settings_t s;
    ga_torch_settings(snap, &s);
    if (!s.present)
        return false;
    if (s.conf_text != NULL)
        snprintf(text, text_len, "%.*s", (int)(s.conf_text_len < 1000 ? s.conf_text_len : 1000), s.conf_text);
    if (from_fields(&s, conf, len)) {
        from_text(text, conf, len);
        return true;
    }
    if (text[0] != '\0') {
        snprintf(conf, len, "%s", text);
        return true;
    }
    return false;
}
