/*
 * conf_fuzz.c: libFuzzer target for the config grammar (conf/), the one input
 * galloc takes from the environment. Properties checked on every input:
 *   - all or nothing: a refused string returns GALLOC_E_CONFIG and leaves the
 *     settings byte for byte as they were, with a NUL-terminated message that
 *     fits errlen (the buffer is allocated at exactly errlen bytes, so ASan
 *     sees any overrun);
 *   - round trip: an accepted string's settings, formatted and parsed onto the
 *     defaults, give the same settings, and formatting those gives the same
 *     string again (conf.h's contract for every config a parse or load makes);
 *   - ga_conf_format with a short buffer returns the full length and writes a
 *     NUL-terminated prefix of the full string.
 *
 * Input: byte 0 picks the mode, the rest is the text. Mode bit 0: parse onto
 * settings that are not the defaults; bits 1-3: errlen; bit 4: split the text
 * at '\n' into ga_conf_load's four sources instead of one ga_conf_parse.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf/conf.h"

/* A new field in ga_conf_t must be compared below: this fails until it is. */
_Static_assert(sizeof(ga_conf_t) == 2400, "ga_conf_t changed: compare its new fields in same_settings()");

#define CHECK(cond)                                                                                                    \
    do {                                                                                                               \
        if (!(cond)) {                                                                                                 \
            fprintf(stderr, "conf_fuzz: %s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);                        \
            abort();                                                                                                   \
        }                                                                                                              \
    } while (0)

/* The backend options as the backend reads them (whitespace aside); their
 * origins point into the strings parsed, which differ. */
static int same_options(const ga_conf_t *x, const ga_conf_t *y)
{
    char a[GALLOC_BACKEND_OPTIONS_MAX], b[GALLOC_BACKEND_OPTIONS_MAX];
    ga_conf_options_normalized(x, a, sizeof(a));
    ga_conf_options_normalized(y, b, sizeof(b));
    return x->n_options == y->n_options && strcmp(a, b) == 0;
}

/* The expandable-segment reserves: the global one and every class, in order. */
static int same_reserve(const ga_conf_t *x, const ga_conf_t *y)
{
    if (x->es_reserve_set != y->es_reserve_set || x->n_reserve_classes != y->n_reserve_classes)
        return 0;
    if (x->es_reserve_set && (x->es_reserve.gib != y->es_reserve.gib || x->es_reserve.value != y->es_reserve.value))
        return 0;
    for (uint32_t i = 0; i < x->n_reserve_classes; i++) {
        const ga_conf_reserve_class_t *a = &x->reserve_classes[i], *b = &y->reserve_classes[i];
        if (strcmp(a->name, b->name) != 0 || a->reserve.gib != b->reserve.gib || a->reserve.value != b->reserve.value)
            return 0;
    }
    return 1;
}

/* Every setting, `set` bits excepted (the normalized string may name keys the
 * original left at their defaults). */
static int same_settings(const ga_conf_t *x, const ga_conf_t *y)
{
    return x->backend == y->backend && x->max_split_size == y->max_split_size &&
           x->max_non_split_rounding_size == y->max_non_split_rounding_size &&
           x->garbage_collection_threshold == y->garbage_collection_threshold &&
           memcmp(x->roundup_power2_divisions, y->roundup_power2_divisions, sizeof(x->roundup_power2_divisions)) == 0 &&
           x->expandable_segments == y->expandable_segments &&
           x->release_lock_on_cudamalloc == y->release_lock_on_cudamalloc &&
           x->pinned_use_cuda_host_register == y->pinned_use_cuda_host_register &&
           x->pinned_num_register_threads == y->pinned_num_register_threads &&
           x->pinned_use_background_threads == y->pinned_use_background_threads &&
           strncmp(x->device_backend, y->device_backend, sizeof(x->device_backend)) == 0 && same_options(x, y) &&
           x->large_segment_size == y->large_segment_size &&
           x->per_process_memory_fraction == y->per_process_memory_fraction &&
           x->retry_pool_after_sync == y->retry_pool_after_sync &&
           x->throw_on_cudamalloc_oom == y->throw_on_cudamalloc_oom && same_reserve(x, y) &&
           x->pinned_reserve_segment_size == y->pinned_reserve_segment_size &&
           x->pinned_max_round_threshold == y->pinned_max_round_threshold &&
           x->pinned_max_cached_size == y->pinned_max_cached_size;
}

/* Settings a user might already have from an earlier layer: every kind of key
 * away from its default, so "untouched on error" is tested on real content. */
static void start(ga_conf_t *c, int nondefault)
{
    ga_conf_defaults(c);
    if (nondefault) {
        galloc_status_t st = ga_conf_parse("expandable_segments:True,max_split_size_mb:100,"
                                           "garbage_collection_threshold:0.75,roundup_power2_divisions:[64:8,>:2],"
                                           "sim_capacity:3GiB,sim_fail_above:1MiB,driver_path:/opt/lib.so,"
                                           "large_segment_size_mb:32,per_process_memory_fraction:0.5,"
                                           "pinned_reserve_segment_size_mb:8,pinned_max_cached_size_mb:64",
                                           c, NULL, 0);
        CHECK(st == GALLOC_OK);
    }
}

static void check_round_trip(const ga_conf_t *c, size_t short_len)
{
    static char s1[8192], s2[8192], part[8192];
    size_t n = ga_conf_format(c, s1, sizeof(s1));
    CHECK(n < sizeof(s1));
    CHECK(strlen(s1) == n);

    ga_conf_t again;
    char err[512];
    ga_conf_defaults(&again);
    galloc_status_t st = ga_conf_parse(s1, &again, err, sizeof(err));
    if (st != GALLOC_OK) {
        fprintf(stderr, "conf_fuzz: the normalized string \"%s\" is refused: %s\n", s1, err);
        abort();
    }
    if (!same_settings(c, &again)) {
        fprintf(stderr, "conf_fuzz: \"%s\" parses back to other settings\n", s1);
        abort();
    }
    size_t n2 = ga_conf_format(&again, s2, sizeof(s2));
    if (n2 != n || strcmp(s1, s2) != 0) {
        fprintf(stderr, "conf_fuzz: not canonical: \"%s\" formats again as \"%s\"\n", s1, s2);
        abort();
    }

    /* A short buffer: same length reported, a terminated prefix written. */
    short_len %= n + 2;
    CHECK(ga_conf_format(c, short_len ? part : NULL, short_len) == n);
    if (short_len > 0) {
        CHECK(strlen(part) == (short_len - 1 < n ? short_len - 1 : n));
        CHECK(strncmp(part, s1, strlen(part)) == 0);
    }
}

/* Up to four '\n'-separated sources for ga_conf_load; a missing one is NULL
 * (an unset variable), an empty one "". */
static galloc_status_t load(char *text, ga_conf_t *c, char *err, size_t errlen)
{
    const char *src[4] = {NULL, NULL, NULL, NULL};
    char *p = text;
    for (int i = 0; i < 4 && p != NULL; i++) {
        src[i] = p;
        p = strchr(p, '\n');
        if (p != NULL)
            *p++ = '\0';
    }
    return ga_conf_load(c, src[0], src[1], src[2], src[3], err, errlen);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const size_t errlens[8] = {0, 1, 2, 7, 32, 100, 256, 1024};
    if (size < 1)
        return 0;
    uint8_t mode = data[0];
    size_t errlen = errlens[(mode >> 1) & 7];
    char *text = malloc(size); /* the text plus its NUL */
    char *err = errlen ? malloc(errlen) : NULL;
    CHECK(text != NULL && (errlen == 0 || err != NULL));
    memcpy(text, data + 1, size - 1);
    text[size - 1] = '\0';
    if (err != NULL)
        memset(err, 'Z', errlen);

    ga_conf_t c, before;
    start(&c, mode & 1);
    memcpy(&before, &c, sizeof(c)); /* bytes, padding included: compared with memcmp */
    galloc_status_t st = (mode & 16) ? load(text, &c, err, errlen) : ga_conf_parse(text, &c, err, errlen);
    if (st == GALLOC_OK) {
        check_round_trip(&c, size > 1 ? data[1] : 0);
    } else {
        CHECK(st == GALLOC_E_CONFIG);
        CHECK(memcmp(&c, &before, sizeof(c)) == 0);
        if (errlen > 0) {
            CHECK(memchr(err, '\0', errlen) != NULL);
            CHECK(errlen == 1 || err[0] != '\0'); /* a refusal says why */
        }
    }
    free(err);
    free(text);
    return 0;
}
