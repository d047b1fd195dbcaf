/*
 * options.c: the device backend's options as a ga_conf_t keeps them: the
 * items whose key no allocator row claims, each as written, in
 * backend_options, with where it was written (option_origin), so that
 * - the backend reads them with conf's own parser (ga_conf_options_parse in
 *   conf.c, over the backend's table of keys),
 * - the normalized string shows them (ga_conf_options_normalized), and
 * - a backend's refusal, whose offset counts in backend_options, points into
 *   the string the user wrote (ga_conf_option_error).
 *
 * Invariants: backend_options is n_options items joined by ',' (no leading,
 * trailing or doubled ','), option_origin[i] spans item i exactly, and no two
 * items share a key (a later one replaces an earlier one, as a later layer or
 * a later key in one string does for the allocator's keys).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf/conf_int.h"

/* Whether item i of c starts with the word key (its key). */
static bool same_key(const ga_conf_t *c, uint32_t i, const ga_tok_t *key)
{
    ga_lex_t lx;
    ga_tok_t t;
    ga_conf_lex_init(&lx, c->backend_options + c->option_origin[i].off);
    ga_conf_lex_next(&lx, &t); /* the item is followed by ',' or the NUL: its first word is its key */
    return t.kind == GA_TOK_WORD && t.len == key->len && strcmp(t.text, key->text) == 0;
}

/* Removes item i and one ',' next to it. */
static void drop(ga_conf_t *c, uint32_t i)
{
    size_t used = strlen(c->backend_options);
    size_t from = c->option_origin[i].off, to = from + c->option_origin[i].len;
    if (to < used)
        to++; /* the ',' after it */
    else if (from > 0)
        from--; /* the last item: the ',' before it */
    memmove(c->backend_options + from, c->backend_options + to, used - to + 1);
    for (uint32_t j = i + 1; j < c->n_options; j++) {
        c->option_origin[j - 1] = c->option_origin[j];
        c->option_origin[j - 1].off -= (uint32_t)(to - from);
    }
    c->n_options--;
}

bool ga_conf_options_keep(ga_conf_t *c, const char *src, size_t off, size_t end, const ga_tok_t *key,
                          const char *source)
{
    for (uint32_t i = 0; i < c->n_options; i++) {
        if (same_key(c, i, key)) {
            drop(c, i);
            break; /* keys are unique: there is at most one */
        }
    }
    size_t used = strlen(c->backend_options), comma = used > 0, n = end - off;
    if (c->n_options == GA_CONF_OPTION_ITEMS || used + comma + n >= sizeof(c->backend_options))
        return false;
    if (comma)
        c->backend_options[used] = ',';
    memcpy(c->backend_options + used + comma, src + off, n);
    c->backend_options[used + comma + n] = '\0';
    c->option_origin[c->n_options++] = (ga_conf_origin_t){
        .source = source, .off = (uint32_t)(used + comma), .len = (uint32_t)n, .src_off = (uint32_t)off};
    return true;
}

size_t ga_conf_options_normalized(const ga_conf_t *c, char *buf, size_t len)
{
    size_t n = 0;
    for (const char *s = c->backend_options; *s != '\0'; s++) {
        if (ga_conf_is_space(*s))
            continue;
        if (n + 1 < len)
            buf[n] = *s;
        n++;
    }
    if (len > 0)
        buf[n < len ? n : len - 1] = '\0';
    return n;
}

/* The N of a message ending in " (offset N)", and where that ending starts. */
static bool offset_of(const char *msg, size_t *n, size_t *at)
{
    static const char mark[] = " (offset ";
    const char *last = NULL;
    for (const char *s = strstr(msg, mark); s != NULL; s = strstr(s + 1, mark))
        last = s;
    if (last == NULL)
        return false;
    const char *d = last + sizeof(mark) - 1;
    char *stop = NULL;
    if (*d < '0' || *d > '9')
        return false;
    unsigned long long v = strtoull(d, &stop, 10);
    if (stop == NULL || strcmp(stop, ")") != 0)
        return false;
    *n = (size_t)v;
    *at = (size_t)(last - msg);
    return true;
}

void ga_conf_option_error(const ga_conf_t *c, const char *msg, char *out, size_t len)
{
    size_t n = 0, at = 0;
    if (offset_of(msg, &n, &at)) {
        for (uint32_t i = 0; i < c->n_options; i++) {
            const ga_conf_origin_t *o = &c->option_origin[i];
            if (n < o->off || n > o->off + o->len) /* the end of an item counts as its own */
                continue;
            snprintf(out, len, "%s%s%.*s (offset %zu)", o->source ? o->source : "", o->source ? ": " : "", (int)at, msg,
                     o->src_off + (n - o->off));
            return;
        }
    }
    snprintf(out, len, "%s", msg);
}
