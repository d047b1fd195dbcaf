/*
 * lists.c: the values of conf.c's grammar that may be bracketed lists:
 * roundup_power2_divisions (a power of two, or "[interval:divisions, ...,
 * >:divisions]") and expandable_segments_reserve(_by_class) (a fraction or a
 * size, or "[class:value, ...]"). PyTorch's rules for each are in conf.c's
 * head; the messages follow its "<key>: expected <allowed>, got ..." form.
 */
#include <string.h>

#include "conf/conf_int.h"
#include "conf/parser.h"

static galloc_status_t apply_divisions(ga_conf_parser_t *p, const char *key, uint64_t *d, bool allow_zero)
{
    ga_num_t r = ga_conf_read_stoull(&p->tok, d, NULL);
    if (r == GA_NUM_OK && ((allow_zero && *d == 0) || (ga_conf_is_pow2(*d) && *d <= GA_CONF_MAX_DIVISIONS)))
        return GALLOC_OK;
    return ga_conf_fail(p, key,
                        allow_zero ? "0 or a power of two up to 2147483648 (divisions)"
                                   : "a power of two from 1 to 2147483648, or a list such as "
                                     "[256:1,512:2,1024:4,>:8]");
}

/* "[b:N, ..., >:N]" with p->tok on '['; leaves p->tok on ']'. */
static galloc_status_t apply_roundup_list(ga_conf_parser_t *p, const char *key, uint32_t *div)
{
    bool first = true;
    unsigned last = 0; /* index of the last numeric entry */
    ga_conf_next(p);
    while (p->tok.kind != GA_TOK_CLOSE) {
        if (p->tok.kind != GA_TOK_WORD)
            return ga_conf_fail(p, key, "an interval (a power of two in MiB, or '>') or ']'");
        bool rest = ga_conf_word_is(&p->tok, ">");
        uint64_t bound = 0;
        if (!rest && (ga_conf_read_stoull(&p->tok, &bound, NULL) != GA_NUM_OK || !ga_conf_is_pow2(bound)))
            return ga_conf_fail(p, key, "an interval: a power of two in MiB, or '>'");
        ga_conf_next(p);
        if (p->tok.kind != GA_TOK_COLON)
            return ga_conf_fail(p, key, "':' after the interval");
        ga_conf_next(p);
        uint64_t d;
        galloc_status_t st = apply_divisions(p, key, &d, true);
        if (st != GALLOC_OK)
            return st;
        if (rest) {
            for (unsigned i = last + 1; i < GA_CONF_DIVISION_INTERVALS; i++)
                div[i] = (uint32_t)d;
        } else {
            unsigned idx = ga_conf_floor_log2(bound);
            if (idx > GA_CONF_DIVISION_INTERVALS - 1)
                idx = GA_CONF_DIVISION_INTERVALS - 1;
            for (unsigned i = 0; first && i < idx; i++)
                div[i] = (uint32_t)d;
            first = false;
            div[idx] = (uint32_t)d;
            last = idx;
        }
        ga_conf_next(p);
        if (p->tok.kind == GA_TOK_COMMA)
            ga_conf_next(p); /* "[64:8,]" is accepted, as PyTorch does */
        else if (p->tok.kind != GA_TOK_CLOSE)
            return ga_conf_fail(p, key, "',' or ']' after the entry");
    }
    return GALLOC_OK;
}

galloc_status_t ga_conf_apply_roundup(ga_conf_parser_t *p, const char *key)
{
    uint32_t *div = p->c->roundup_power2_divisions;
    if (!p->roundup_seen) /* a ga_conf_load layer replaces the whole list it names */
        memset(p->c->roundup_power2_divisions, 0, sizeof(p->c->roundup_power2_divisions));
    p->roundup_seen = true;
    if (p->tok.kind == GA_TOK_OPEN)
        return apply_roundup_list(p, key, div);
    uint64_t d;
    galloc_status_t st = apply_divisions(p, key, &d, false);
    if (st != GALLOC_OK)
        return st;
    for (unsigned i = 0; i < GA_CONF_DIVISION_INTERVALS; i++)
        div[i] = (uint32_t)d;
    return GALLOC_OK;
}

#define RESERVE_ALLOWED "a fraction of device memory > 0 (0.5) or GiB with a G suffix (40G)"

galloc_status_t ga_conf_apply_reserve(ga_conf_parser_t *p, const char *key, ga_conf_reserve_t *out)
{
    return ga_conf_read_reserve(&p->tok, out) == GA_NUM_OK ? GALLOC_OK : ga_conf_fail(p, key, RESERVE_ALLOWED);
}

/* "[name:value, ...]" with p->tok on '['; leaves p->tok on ']'. Replaces
 * the classes in *c (PyTorch publishes a freshly parsed map). */
galloc_status_t ga_conf_apply_reserve_classes(ga_conf_parser_t *p, const char *key)
{
    ga_conf_t *c = p->c;
    if (p->tok.kind != GA_TOK_OPEN)
        return ga_conf_fail(p, key, "a list such as [capture:0.25,serving:40G]");
    c->n_reserve_classes = 0;
    memset(c->reserve_classes, 0, sizeof(c->reserve_classes));
    for (ga_conf_next(p); p->tok.kind != GA_TOK_CLOSE;) {
        bool ok = p->tok.kind == GA_TOK_WORD && p->tok.len >= 1 && p->tok.len < GA_CONF_NAME_MAX && !p->tok.spaced;
        for (size_t i = 0; ok && i < p->tok.len; i++) /* printable, no quote or backslash: messages show it as is */
            ok = p->tok.text[i] > ' ' && p->tok.text[i] < 0x7f && p->tok.text[i] != '"' && p->tok.text[i] != '\\';
        if (!ok)
            return ga_conf_fail(p, key, "a reserve class name of 1 to 31 printable bytes, or ']'");
        uint32_t i = 0;
        while (i < c->n_reserve_classes && strcmp(c->reserve_classes[i].name, p->tok.text) != 0)
            i++;
        if (i == GA_CONF_RESERVE_CLASSES)
            return ga_conf_fail(p, key, "at most 8 reserve classes");
        ga_conf_reserve_class_t *e = &c->reserve_classes[i];
        memcpy(e->name, p->tok.text, p->tok.len);
        ga_conf_next(p);
        if (p->tok.kind != GA_TOK_COLON)
            return ga_conf_fail(p, key, "':' after the reserve class");
        ga_conf_next(p);
        galloc_status_t st = ga_conf_apply_reserve(p, key, &e->reserve);
        if (st != GALLOC_OK)
            return st;
        if (i == c->n_reserve_classes)
            c->n_reserve_classes++;
        ga_conf_next(p);
        if (p->tok.kind == GA_TOK_COMMA)
            ga_conf_next(p);
        else if (p->tok.kind != GA_TOK_CLOSE)
            return ga_conf_fail(p, key, "',' or ']' after the entry");
    }
    return GALLOC_OK;
}
