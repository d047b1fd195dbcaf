/*
 * conf.c: the grammar and the key table: one config string
 * ("key:value,key:value") applied onto a ga_conf_t (load.c layers several;
 * lists.c reads the values that may be bracketed lists).
 *
 * PyTorch reference (facts restated, no code copied):
 * - Keys, values and messages follow newest main: c10/core/AllocatorConfig.{h,cpp}
 *   (AcceleratorAllocatorConfig::parseArgs, parseMaxSplitSize,
 *   parseLargeSegmentSize, parseRoundUpPower2Divisions; ConfigTokenizer) and
 *   c10/cuda/CUDAAllocatorConfig.{h,cpp} (CUDAAllocatorConfig::parseArgs,
 *   getKeys, parsePinnedNumRegisterThreads, parsePerProcessMemoryFraction).
 * - max_split_size_mb and max_non_split_rounding_mb must be >= large_segment_size_mb
 *   (default 20, so 20 is accepted; 2.x's CUDAAllocatorConfig demanded > 20).
 *   large_segment_size_mb must be > 10 (kMinLargeAlloc / kMB) and is applied
 *   before every other key wherever it appears; we check the >= rule after the
 *   whole string instead, which accepts and rejects the same strings.
 * - roundup_power2_divisions list: the first numeric entry also fills every
 *   interval below it; ">" fills the intervals AFTER the last numeric entry
 *   (newest main; 2.x also overwrote the last entry itself).
 * - Every parse resets max_split_size, roundup_power2_divisions and
 *   garbage_collection_threshold, and sets max_non_split_rounding_size to
 *   large_segment_size; other keys keep their values unless named.
 *
 * Numbers of PyTorch's keys are read as PyTorch reads them, so that a string
 * copied from a PyTorch job means here what it meant there: std::stoull for
 * whole numbers ("512MB" is 512, "-1" wraps to 2^64 - 1, which for
 * max_split_size_mb clamps to 2^64 - 2^20 bytes as in PyTorch) and std::stod
 * for decimals ("0.8x" is 0.8); value.c, ga_conf_read_stoull / _stod. The
 * normalized string (galloc_settings_string, a snapshot's allocator_settings)
 * shows the value read. galloc's own keys are read whole.
 *
 * galloc is stricter than PyTorch in one place: a missing ':' or ',' between
 * tokens is an error (newest main's checkToken result is ignored by its
 * callers, so such a string is silently misread there), and hexadecimal
 * numbers, which std::stoull reads as 0, are rejected.
 *
 * Accepted but not stored (PyTorch accepts it; galloc has no use for it):
 * pinned_free_catch_all (True/False). Its value is still checked, so a
 * string galloc accepts is one PyTorch accepts.
 *
 * The pinned host cache's keys (host/, docs/host.md) are stored:
 * pinned_reserve_segment_size_mb (a whole number > 0, as
 * CUDAAllocatorConfig::parsePinnedReserveSegmentSize checks),
 * pinned_max_round_threshold_mb and pinned_max_cached_size_mb (PR #171662: any
 * whole number, read as std::stoull reads it, clamped as max_split_size_mb is;
 * a threshold below the cap is accepted, as PyTorch accepts it since the
 * overflow it caused was fixed in get_free_block, PR #192722).
 *
 * expandable_segments_reserve(_by_class) (PyTorch main's parseExpandableSegmentsReserve(ByClass)):
 * reserve.c reads a value; a malformed one, which PyTorch logs and ignores, is refused here. The
 * list replaces the classes listed before (PyTorch's map is replaced); a name listed twice keeps
 * its last value.
 *
 * galloc's own allocator keys (device_backend, retry_pool_after_sync) share the
 * grammar. Any other key starts an item of the device backend's: keep_option
 * keeps it as written (ga_conf_t.backend_options), and the backend reads it
 * with this same parser: ga_conf_options_parse runs it over the backend's own
 * table of keys (options.h), whose kinds (True/False, whole numbers, sizes,
 * paths) apply_generic reads for either table. A key neither claims is refused
 * by the backend, in PyTorch's words, when the allocator opens it.
 *
 * Invariant: parsing works on a copy; *c changes only when the whole string
 * was accepted.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "conf/conf_int.h"
#include "conf/parser.h"

/* The allocator's own kinds, after the ones any table may use (options.h). */
enum {
    K_BACKEND = GA_CONF_OWN, /* native | cudaMallocAsync | hipMallocAsync */
    K_SPLIT_MB,              /* max_split_size_mb */
    K_NONSPLIT_MB,           /* max_non_split_rounding_mb */
    K_LARGE_MB,              /* large_segment_size_mb */
    K_GC,                    /* garbage_collection_threshold, (0, 1) */
    K_FRACTION,              /* per_process_memory_fraction, [0, 1] */
    K_ROUNDUP,               /* roundup_power2_divisions */
    K_THREADS,               /* pinned_num_register_threads */
    K_POSITIVE_MB,           /* pinned_reserve_segment_size_mb */
    K_PINNED_MAX_MB,         /* pinned_max_round_threshold_mb, pinned_max_cached_size_mb */
    K_NAME,                  /* device_backend */
    K_RESERVE,               /* expandable_segments_reserve */
    K_RESERVE_CLASSES        /* expandable_segments_reserve_by_class */
};

/* Brace-initializer macros, one a line (clang-format would open each as a block). */
/* clang-format off */
#define OWN(n, k, bit) {.name = (n), .kind = (k), .field = GA_CONF_NOT_STORED, .set_bit = (bit)}
#define BOOL(n, f, bit) {.name = (n), .kind = GA_CONF_BOOL, .field = (f), .set_bit = (bit)}
/* clang-format on */
#define FIELD(f) offsetof(ga_conf_t, f)

/* One row per spelling; the hip spellings are PyTorch's ROCm aliases. A
 * set_bit of 0: accepted, checked, not stored. */
static const ga_conf_key_t keys[] = {
    OWN("backend", K_BACKEND, GA_CONF_SET_BACKEND),
    OWN("large_segment_size_mb", K_LARGE_MB, GA_CONF_SET_LARGE_SEGMENT),
    OWN("max_split_size_mb", K_SPLIT_MB, GA_CONF_SET_MAX_SPLIT),
    OWN("max_non_split_rounding_mb", K_NONSPLIT_MB, GA_CONF_SET_MAX_NON_SPLIT_ROUNDING),
    OWN("garbage_collection_threshold", K_GC, GA_CONF_SET_GC_THRESHOLD),
    OWN("roundup_power2_divisions", K_ROUNDUP, GA_CONF_SET_ROUNDUP),
    BOOL("expandable_segments", FIELD(expandable_segments), GA_CONF_SET_EXPANDABLE),
    BOOL("release_lock_on_cudamalloc", FIELD(release_lock_on_cudamalloc), GA_CONF_SET_RELEASE_LOCK),
    BOOL("release_lock_on_hipmalloc", FIELD(release_lock_on_cudamalloc), GA_CONF_SET_RELEASE_LOCK),
    OWN("per_process_memory_fraction", K_FRACTION, GA_CONF_SET_MEMORY_FRACTION),
    BOOL("pinned_use_cuda_host_register", FIELD(pinned_use_cuda_host_register), GA_CONF_SET_PINNED_REGISTER),
    BOOL("pinned_use_hip_host_register", FIELD(pinned_use_cuda_host_register), GA_CONF_SET_PINNED_REGISTER),
    OWN("pinned_num_register_threads", K_THREADS, GA_CONF_SET_PINNED_THREADS),
    BOOL("pinned_use_background_threads", FIELD(pinned_use_background_threads), GA_CONF_SET_PINNED_BACKGROUND),
    OWN("pinned_reserve_segment_size_mb", K_POSITIVE_MB, GA_CONF_SET_PINNED_RESERVE),
    OWN("pinned_max_round_threshold_mb", K_PINNED_MAX_MB, GA_CONF_SET_PINNED_ROUND_THRESHOLD),
    OWN("pinned_max_cached_size_mb", K_PINNED_MAX_MB, GA_CONF_SET_PINNED_MAX_CACHED),
    BOOL("graph_capture_record_stream_reuse", FIELD(graph_capture_record_stream_reuse), GA_CONF_SET_CAPTURE_REUSE),
    BOOL("pinned_free_catch_all", GA_CONF_NOT_STORED, 0),
    BOOL("throw_on_cudamalloc_oom", FIELD(throw_on_cudamalloc_oom), GA_CONF_SET_THROW_ON_OOM),
    OWN("expandable_segments_reserve", K_RESERVE, GA_CONF_SET_ES_RESERVE),
    OWN("expandable_segments_reserve_by_class", K_RESERVE_CLASSES, GA_CONF_SET_ES_RESERVE_BY_CLASS),
    OWN("device_backend", K_NAME, GA_CONF_SET_DEVICE_BACKEND),
    BOOL("retry_pool_after_sync", FIELD(retry_pool_after_sync), GA_CONF_SET_RETRY_POOL),
};

/* Every value error reads "<key>: expected <allowed>, got "<value>" (offset N)". */
static galloc_status_t say(ga_conf_parser_t *p, const char *key, const char *allowed, const char *value, bool quote,
                           size_t off)
{
    const char *q = quote ? "\"" : "";
    if (p->err != NULL && p->errlen > 0)
        snprintf(p->err, p->errlen, "%s: expected %s, got %s%s%s (offset %zu)", key, allowed, q, value, q, off);
    return GALLOC_E_CONFIG;
}

/* The error about the current token. */
galloc_status_t ga_conf_fail(ga_conf_parser_t *p, const char *key, const char *allowed)
{
    char shown[256];
    ga_conf_show(p->lx.s, &p->tok, shown, sizeof(shown));
    return say(p, key, allowed, shown, p->tok.kind != GA_TOK_END, p->tok.off);
}

/* As fail, adding why a well-formed number was refused. */
static galloc_status_t fail_num(ga_conf_parser_t *p, const char *key, const char *allowed, ga_num_t why)
{
    char text[200];
    snprintf(text, sizeof(text), "%s%s", allowed,
             why == GA_NUM_RANGE     ? " (this one does not fit in 64 bits)"
             : why == GA_NUM_INEXACT ? " (this one is not a whole number of bytes)"
                                     : "");
    return ga_conf_fail(p, key, text);
}

static void min_mb_text(const ga_conf_parser_t *p, char *buf, size_t len)
{
    uint64_t mb = p->c->large_segment_size / GA_CONF_MIB;
    snprintf(buf, len, "a whole number of MiB >= %" PRIu64 "%s", mb,
             p->c->large_segment_size != GA_CONF_LARGE_BUFFER ? " (large_segment_size_mb)" : "");
}

/* max_split_size_mb, max_non_split_rounding_mb: stored now, range-checked in finish(). */
static galloc_status_t apply_mb(ga_conf_parser_t *p, const char *key, ga_conf_pending_t *pend, uint64_t *field)
{
    uint64_t mb;
    bool cut;
    ga_num_t r = ga_conf_read_stoull(&p->tok, &mb, &cut);
    if (r != GA_NUM_OK) {
        char allowed[96];
        min_mb_text(p, allowed, sizeof(allowed));
        return fail_num(p, key, allowed, r);
    }
    *pend = (ga_conf_pending_t){.given = true, .cut = cut, .off = p->tok.off, .end = p->tok.end, .mb = mb};
    *field = (mb < GA_CONF_MAX_MB ? mb : GA_CONF_MAX_MB) * GA_CONF_MIB; /* PyTorch's clamp, not an error */
    return GALLOC_OK;
}

static galloc_status_t apply_name(ga_conf_parser_t *p, const char *key)
{
    const ga_tok_t *t = &p->tok;
    bool ok = t->len >= 1 && t->len < GA_CONF_NAME_MAX;
    for (size_t i = 0; ok && i < t->len; i++) {
        char ch = t->text[i];
        ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_';
    }
    if (!ok)
        return ga_conf_fail(p, key, "a backend name of 1 to 31 letters, digits or '_'");
    memset(p->c->device_backend, 0, sizeof(p->c->device_backend));
    memcpy(p->c->device_backend, t->text, t->len);
    return GALLOC_OK;
}

/* The kinds any table may use (options.h), stored at k->field of p->out. */
static galloc_status_t apply_generic(ga_conf_parser_t *p, const ga_conf_key_t *k)
{
    const ga_tok_t *t = &p->tok;
    char *field = k->field != GA_CONF_NOT_STORED ? (char *)p->out + k->field : NULL;
    uint64_t v = 0;
    ga_num_t r = GA_NUM_OK;
    switch (k->kind) {
    case GA_CONF_BOOL: {
        bool b = ga_conf_word_is(t, "True");
        if (!b && !ga_conf_word_is(t, "False"))
            return ga_conf_fail(p, k->name, "True or False");
        if (field != NULL)
            *(bool *)field = b;
        return GALLOC_OK;
    }
    case GA_CONF_PATH:
        if (t->len >= GA_CONF_PATH_MAX || t->spaced) /* "/my lib/x.so" would otherwise become "/mylib/x.so" */
            return ga_conf_fail(p, k->name, "a path of 1 to 255 bytes without ',', ':', '[', ']' or whitespace");
        if (field != NULL) {
            memset(field, 0, GA_CONF_PATH_MAX);
            memcpy(field, t->text, t->len);
        }
        return GALLOC_OK;
    case GA_CONF_WHOLE:
    case GA_CONF_SIZE:
        r = k->kind == GA_CONF_WHOLE ? ga_conf_read_whole(t, &v) : ga_conf_read_size(t, &v);
        if (r != GA_NUM_OK || v < k->min || v > k->max)
            return fail_num(p, k->name, k->allowed, r);
        if (field != NULL)
            memcpy(field, &v, sizeof(v));
        return GALLOC_OK;
    default: return ga_conf_fail(p, k->name, "a key of this table's kinds (galloc bug)");
    }
}

static galloc_status_t apply_double(ga_conf_parser_t *p, const char *key, double *out, bool closed)
{
    double v = 0;
    bool ok =
        p->tok.kind == GA_TOK_WORD && p->tok.len < GA_CONF_TOK_CAP && ga_conf_read_stod(p->tok.text, &v) == GA_NUM_OK;
    if (ok)
        ok = closed ? v >= 0.0 && v <= 1.0 : v > 0.0 && v < 1.0;
    if (!ok)
        return ga_conf_fail(p, key, closed ? "a number in [0.0, 1.0]" : "a number in (0.0, 1.0), both ends excluded");
    *out = v;
    return GALLOC_OK;
}

/* The value of key k, p->tok on its first token; leaves p->tok on its last. */
static galloc_status_t apply(ga_conf_parser_t *p, const ga_conf_key_t *k)
{
    ga_conf_t *c = p->c;
    uint64_t v = 0;
    bool cut = false;
    ga_num_t r;
    if (p->tok.kind != GA_TOK_WORD &&
        !((k->kind == K_ROUNDUP || k->kind == K_RESERVE_CLASSES) && p->tok.kind == GA_TOK_OPEN))
        return ga_conf_fail(p, k->name, "a value after ':'");
    if (k->kind < GA_CONF_OWN || c == NULL)
        return apply_generic(p, k);
    switch (k->kind) {
    case K_BACKEND:
        if (ga_conf_word_is(&p->tok, "native"))
            c->backend = GA_CONF_BACKEND_NATIVE;
        else if (ga_conf_word_is(&p->tok, "cudaMallocAsync") || ga_conf_word_is(&p->tok, "hipMallocAsync"))
            c->backend = GA_CONF_BACKEND_ASYNC;
        else
            return ga_conf_fail(p, k->name, "native, cudaMallocAsync or hipMallocAsync");
        return GALLOC_OK;
    case K_SPLIT_MB: return apply_mb(p, k->name, &p->split, &c->max_split_size);
    case K_NONSPLIT_MB: return apply_mb(p, k->name, &p->nonsplit, &c->max_non_split_rounding_size);
    case K_LARGE_MB:
        r = ga_conf_read_stoull(&p->tok, &v, &cut);
        if (r != GA_NUM_OK || v <= GA_CONF_MIN_LARGE_ALLOC_MB)
            return fail_num(p, k->name, "a whole number of MiB > 10", r);
        p->large = (ga_conf_pending_t){.given = true, .cut = cut, .off = p->tok.off, .end = p->tok.end, .mb = v};
        c->large_segment_size = (v < GA_CONF_MAX_MB ? v : GA_CONF_MAX_MB) * GA_CONF_MIB;
        return GALLOC_OK;
    case K_GC: return apply_double(p, k->name, &c->garbage_collection_threshold, false);
    case K_FRACTION: return apply_double(p, k->name, &c->per_process_memory_fraction, true);
    case K_ROUNDUP: return ga_conf_apply_roundup(p, k->name);
    case K_THREADS:
        if (ga_conf_read_stoull(&p->tok, &v, NULL) != GA_NUM_OK || !ga_conf_is_pow2(v) ||
            v > GA_CONF_MAX_REGISTER_THREADS)
            return ga_conf_fail(p, k->name, "a power of two from 1 to 128");
        c->pinned_num_register_threads = (uint32_t)v;
        return GALLOC_OK;
    case K_POSITIVE_MB:
        r = ga_conf_read_stoull(&p->tok, &v, NULL);
        if (r != GA_NUM_OK || v == 0)
            return fail_num(p, k->name, "a whole number of MiB > 0", r);
        c->pinned_reserve_segment_size = (v < GA_CONF_MAX_MB ? v : GA_CONF_MAX_MB) * GA_CONF_MIB;
        return GALLOC_OK;
    case K_PINNED_MAX_MB: {
        r = ga_conf_read_stoull(&p->tok, &v, NULL);
        if (r != GA_NUM_OK)
            return fail_num(p, k->name, "a whole number of MiB", r);
        /* Unlimited (the default) has no spelling: PyTorch's largest is (2^64 - 1) / 2^20 MiB. */
        uint64_t bytes = (v < GA_CONF_MAX_MB ? v : GA_CONF_MAX_MB) * GA_CONF_MIB;
        if (k->set_bit == GA_CONF_SET_PINNED_ROUND_THRESHOLD)
            c->pinned_max_round_threshold = bytes;
        else
            c->pinned_max_cached_size = bytes;
        return GALLOC_OK;
    }
    case K_NAME: return apply_name(p, k->name);
    case K_RESERVE:
        if (ga_conf_apply_reserve(p, k->name, &c->es_reserve) != GALLOC_OK)
            return GALLOC_E_CONFIG;
        c->es_reserve_set = true;
        return GALLOC_OK;
    case K_RESERVE_CLASSES: return ga_conf_apply_reserve_classes(p, k->name);
    default: return ga_conf_fail(p, k->name, "a key conf.c knows (galloc bug)");
    }
}

static const ga_conf_key_t *find_key(const ga_conf_parser_t *p)
{
    for (size_t i = 0; i < p->n_keys; i++)
        if (ga_conf_word_is(&p->tok, p->keys[i].name))
            return &p->keys[i];
    return NULL;
}

/* A pending value as the string wrote it, with what was read when std::stoull
 * stopped early: "\"1.5e3\" (read as 1)". */
static void show_pending(const ga_conf_parser_t *p, const ga_conf_pending_t *pend, char *buf, size_t len)
{
    ga_tok_t t = {.kind = GA_TOK_WORD, .off = pend->off, .end = pend->end};
    char shown[256];
    ga_conf_show(p->lx.s, &t, shown, sizeof(shown));
    if (pend->cut)
        snprintf(buf, len, "\"%s\" (read as %" PRIu64 ")", shown, pend->mb);
    else
        snprintf(buf, len, "\"%s\"", shown);
}

/* A *_mb value below large_segment_size: blame the value if this string gave
 * it, else the large_segment_size_mb that this string raised above it. */
static galloc_status_t check_min(ga_conf_parser_t *p, const char *key, const ga_conf_pending_t *pend, uint64_t bytes,
                                 uint32_t bit)
{
    ga_conf_t *c = p->c;
    char num[300], allowed[160];
    if (!(c->set & bit) || bytes >= c->large_segment_size)
        return GALLOC_OK;
    if (pend->given && pend->mb < c->large_segment_size / GA_CONF_MIB) {
        show_pending(p, pend, num, sizeof(num));
        min_mb_text(p, allowed, sizeof(allowed));
        return say(p, key, allowed, num, false, pend->off);
    }
    if (p->large.given) {
        show_pending(p, &p->large, num, sizeof(num));
        snprintf(allowed, sizeof(allowed), "a whole number of MiB > 10 and <= %s (%" PRIu64 ", set earlier)", key,
                 bytes / GA_CONF_MIB);
        return say(p, "large_segment_size_mb", allowed, num, false, p->large.off);
    }
    return GALLOC_OK;
}

static galloc_status_t finish(ga_conf_parser_t *p)
{
    ga_conf_t *c = p->c;
    /* PyTorch sets max_non_split_rounding_size to large_segment_size on every
     * parse; a load layer leaves one that an earlier source named. */
    if (!p->nonsplit.given && (p->reset || !(c->set & GA_CONF_SET_MAX_NON_SPLIT_ROUNDING)))
        c->max_non_split_rounding_size = c->large_segment_size;
    galloc_status_t st = check_min(p, "max_split_size_mb", &p->split, c->max_split_size, GA_CONF_SET_MAX_SPLIT);
    if (st == GALLOC_OK)
        st = check_min(p, "max_non_split_rounding_mb", &p->nonsplit, c->max_non_split_rounding_size,
                       GA_CONF_SET_MAX_NON_SPLIT_ROUNDING);
    return st;
}

/* A key the allocator's table lacks, p->tok on it: the item, up to the next
 * ',' outside brackets, is the device backend's, kept as written for the
 * backend to read (and refuse). Leaves p->tok on that ',' or the end. A '['
 * left open would swallow whatever items a later source puts after it in
 * backend_options, so it is refused here. */
static galloc_status_t keep_option(ga_conf_parser_t *p)
{
    ga_tok_t item = p->tok; /* the key; its end grows to the item's */
    int depth = 0;          /* a list value ("[1,2]") holds commas */
    for (ga_conf_next(p); p->tok.kind != GA_TOK_END && !(p->tok.kind == GA_TOK_COMMA && depth == 0); ga_conf_next(p)) {
        depth += p->tok.kind == GA_TOK_OPEN ? 1 : (p->tok.kind == GA_TOK_CLOSE && depth > 0 ? -1 : 0);
        item.end = p->tok.end;
    }
    if (depth > 0)
        return ga_conf_fail(p, item.text, "']' to close the list");
    if (ga_conf_options_keep(p->c, p->lx.s, item.off, item.end, &item, p->source))
        return GALLOC_OK;
    char shown[256], allowed[96];
    ga_conf_show(p->lx.s, &item, shown, sizeof(shown));
    snprintf(allowed, sizeof(allowed), "backend options of at most %d bytes and %d items in all",
             GALLOC_BACKEND_OPTIONS_MAX - 1, GA_CONF_OPTION_ITEMS);
    return say(p, "config", allowed, shown, true, item.off);
}

/* item (',' item)* [','], item = key ':' value; empty is fine. */
static galloc_status_t parse_items(ga_conf_parser_t *p)
{
    ga_conf_next(p);
    while (p->tok.kind != GA_TOK_END) {
        if (p->tok.kind != GA_TOK_WORD)
            return ga_conf_fail(p, "config", "a key");
        const ga_conf_key_t *k = find_key(p);
        if (k == NULL && p->c != NULL) {
            galloc_status_t st = keep_option(p);
            if (st != GALLOC_OK)
                return st;
            if (p->tok.kind == GA_TOK_COMMA)
                ga_conf_next(p);
            continue;
        }
        if (k == NULL) {
            char shown[256]; /* PyTorch's wording: "Unrecognized key '<key>' in CUDA allocator config." */
            ga_conf_show(p->lx.s, &p->tok, shown, sizeof(shown));
            if (p->err != NULL && p->errlen > 0)
                snprintf(p->err, p->errlen, "Unrecognized key '%s' in CUDA allocator config (offset %zu)", shown,
                         p->tok.off);
            return GALLOC_E_CONFIG;
        }
        ga_conf_next(p);
        if (p->tok.kind != GA_TOK_COLON)
            return ga_conf_fail(p, k->name, "':' after the key");
        ga_conf_next(p);
        galloc_status_t st = apply(p, k);
        if (st != GALLOC_OK)
            return st;
        if (p->c != NULL)
            p->c->set |= k->set_bit;
        ga_conf_next(p);
        if (p->tok.kind == GA_TOK_COMMA)
            ga_conf_next(p); /* a trailing comma is fine (newest main's test "expandable_segments:False,") */
        else if (p->tok.kind != GA_TOK_END)
            return ga_conf_fail(p, k->name, "',' or the end of the string after the value");
    }
    return p->c != NULL ? finish(p) : GALLOC_OK;
}

galloc_status_t ga_conf_parse_onto(const char *s, ga_conf_t *c, bool reset, const char *source, char *err,
                                   size_t errlen)
{
    ga_conf_t tmp = *c;
    ga_conf_parser_t p = {.keys = keys,
                          .n_keys = sizeof(keys) / sizeof(keys[0]),
                          .out = &tmp,
                          .c = &tmp,
                          .err = err,
                          .errlen = errlen,
                          .reset = reset,
                          .source = source};
    if (reset) {
        tmp.max_split_size = UINT64_MAX;
        tmp.garbage_collection_threshold = 0.0;
        memset(tmp.roundup_power2_divisions, 0, sizeof(tmp.roundup_power2_divisions));
        tmp.set &= ~(uint32_t)(GA_CONF_SET_MAX_SPLIT | GA_CONF_SET_MAX_NON_SPLIT_ROUNDING | GA_CONF_SET_ROUNDUP |
                               GA_CONF_SET_GC_THRESHOLD);
    }
    ga_conf_lex_init(&p.lx, s);
    galloc_status_t st = parse_items(&p);
    if (st == GALLOC_OK) {
        *c = tmp;
        if (err != NULL && errlen > 0)
            err[0] = '\0';
    }
    return st;
}

galloc_status_t ga_conf_options_parse(const char *options, const ga_conf_key_t *table, size_t n, void *out, char *err,
                                      size_t errlen)
{
    if (n > 0 && (table == NULL || out == NULL)) {
        if (err != NULL && errlen > 0)
            snprintf(err, errlen, "ga_conf_options_parse: NULL table or output");
        return GALLOC_E_INVAL;
    }
    ga_conf_parser_t p = {.keys = table, .n_keys = n, .out = out, .err = err, .errlen = errlen};
    ga_conf_lex_init(&p.lx, options);
    galloc_status_t st = parse_items(&p);
    if (st == GALLOC_OK && err != NULL && errlen > 0)
        err[0] = '\0';
    return st;
}
