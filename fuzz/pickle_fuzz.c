/*
 * pickle_fuzz.c: libFuzzer target for tools/snapshot/pickle_read.c, the decoder of
 * PyTorch snapshots that users bring from other machines (untrusted bytes).
 * Beyond "no crash, no leak, no overrun" (ASan, LeakSanitizer) it checks what
 * pickle_read.h promises:
 *   - failure: *out is NULL and the message is "byte N: ..." with N inside
 *     the input;
 *   - success: protocol 2-5, and every value reachable from the root is
 *     well formed: strings and bytes point inside the caller's buffer,
 *     containers hold n <= cap non-NULL items, dicts an even number;
 *   - the host memory budget (ga_pickle_limits_t) is honoured: with a small
 *     budget a document either parses or fails, never allocates past it
 *     (libFuzzer's -rss_limit_mb and -malloc_limit_mb catch the latter).
 * Input: byte 0 picks default or tight limits, the rest is the pickle.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/snapshot/pickle_read.h"

#define CHECK(cond)                                                                                                    \
    do {                                                                                                               \
        if (!(cond)) {                                                                                                 \
            fprintf(stderr, "pickle_fuzz: %s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);                      \
            abort();                                                                                                   \
        }                                                                                                              \
    } while (0)

#define MAX_DEPTH 32      /* documents may be cyclic: the walk bounds itself */
#define MAX_VISITS 200000 /* and shared: a DAG can be exponential in paths */

typedef struct walk {
    const uint8_t *buf;
    size_t len;
    size_t visits;
} walk_t;

static void visit(walk_t *w, const ga_pk_value_t *v, int depth)
{
    CHECK(v != NULL);
    if (depth > MAX_DEPTH || ++w->visits > MAX_VISITS)
        return;
    CHECK(v->type >= GA_PK_NONE && v->type <= GA_PK_DICT);
    CHECK(strcmp(ga_pk_type_name(v->type), "") != 0);
    switch (v->type) {
    case GA_PK_STR:
    case GA_PK_BYTES:
        /* zero copy: inside the input, wholly */
        CHECK(v->u.s.n == 0 || ((const uint8_t *)v->u.s.p >= w->buf && v->u.s.n <= w->len &&
                                (const uint8_t *)v->u.s.p - w->buf <= (ptrdiff_t)(w->len - v->u.s.n)));
        (void)ga_pk_str_eq(v, "segments");
        break;
    case GA_PK_LIST:
    case GA_PK_TUPLE:
    case GA_PK_DICT:
        CHECK(v->u.seq.n <= v->u.seq.cap || v->u.seq.cap == 0);
        CHECK(v->type != GA_PK_DICT || v->u.seq.n % 2 == 0);
        if (v->type == GA_PK_DICT) {
            (void)ga_pk_dict_get(v, "device_traces");
            (void)ga_pk_dict_get(v, "");
        }
        for (size_t i = 0; i < v->u.seq.n; i++)
            visit(w, v->u.seq.items[i], depth + 1);
        break;
    default: break;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    ga_pickle_limits_t tight = {.max_bytes = 1 << 20, .max_marks = 64, .max_memo = 256};
    const ga_pickle_limits_t *limits = data[0] & 1 ? &tight : NULL;
    const uint8_t *buf = data + 1;
    size_t len = size - 1;
    char err[256];
    memset(err, 'Z', sizeof(err));
    ga_pickle_t *pk = (ga_pickle_t *)1;
    if (ga_pickle_parse(buf, len, limits, &pk, err, sizeof(err)) != 0) {
        CHECK(pk == NULL);
        CHECK(memchr(err, '\0', sizeof(err)) != NULL);
        unsigned long long at = 0;
        CHECK(sscanf(err, "byte %llu:", &at) == 1);
        CHECK(at <= len);
        return 0;
    }
    CHECK(pk != NULL);
    CHECK(ga_pickle_protocol(pk) >= 2 && ga_pickle_protocol(pk) <= 5);
    walk_t w = {.buf = buf, .len = len, .visits = 0};
    visit(&w, ga_pickle_root(pk), 0);
    ga_pickle_free(pk);
    return 0;
}
