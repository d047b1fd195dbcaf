/*
 * value.c: the tokenizer and the readers for the values a config string holds
 * (whole numbers, sizes with units, decimals, True/False), plus how a token is
 * shown in an error message.
 *
 * Tokens follow newest PyTorch main's ConfigTokenizer (c10/core/AllocatorConfig.h):
 * ',' ':' '[' ']' are single-character tokens, any other run of bytes is one
 * word, and whitespace is dropped everywhere, even inside a word. galloc reads
 * values more strictly than PyTorch's std::stoull / std::stod, which stop at
 * the first bad character ("512MB" is 512 there, "0.8x" is 0.8): a value must
 * be read whole, or the string is rejected with the value named, because a
 * silently truncated setting is what a user tuning an OOM cannot afford.
 * Sizes go through util/size.h, the one size parser, under conf's rules.
 *
 * Invariant: every reader looks only at t->text (NUL-terminated, at most
 * GA_CONF_TOK_CAP - 1 bytes); the tokenizer never reads past the string's NUL.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf/conf_int.h"
#include "util/size.h"

bool ga_conf_is_space(char ch)
{
    return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\v' || ch == '\f' || ch == '\r';
}

static bool is_sep(char ch)
{
    return ch == ',' || ch == ':' || ch == '[' || ch == ']';
}

static bool is_digit(char ch)
{
    return ch >= '0' && ch <= '9';
}

void ga_conf_lex_init(ga_lex_t *lx, const char *s)
{
    lx->s = s != NULL ? s : "";
    lx->pos = 0;
}

void ga_conf_lex_next(ga_lex_t *lx, ga_tok_t *t)
{
    const char *s = lx->s;
    size_t i = lx->pos;
    while (s[i] != '\0' && ga_conf_is_space(s[i]))
        i++;
    t->off = i;
    t->len = 0;
    t->spaced = false;
    t->text[0] = '\0';
    t->end = i;
    if (s[i] == '\0') {
        t->kind = GA_TOK_END;
        lx->pos = i;
        return;
    }
    if (is_sep(s[i])) {
        t->kind = (ga_tok_kind_t)s[i];
        t->text[0] = s[i];
        t->text[1] = '\0';
        t->len = 1;
        t->end = i + 1;
        lx->pos = i + 1;
        return;
    }
    t->kind = GA_TOK_WORD;
    bool gap = false; /* whitespace seen since the last kept byte */
    for (; s[i] != '\0' && !is_sep(s[i]); i++) {
        if (ga_conf_is_space(s[i])) {
            gap = true;
            continue;
        }
        t->spaced |= gap; /* the word started on a non-space byte, so a gap here is inside it */
        gap = false;
        t->end = i + 1;
        if (t->len < GA_CONF_TOK_CAP - 1)
            t->text[t->len] = s[i];
        t->len++;
    }
    t->text[t->len < GA_CONF_TOK_CAP - 1 ? t->len : GA_CONF_TOK_CAP - 1] = '\0';
    lx->pos = i;
}

bool ga_conf_word_is(const ga_tok_t *t, const char *w)
{
    return t->kind == GA_TOK_WORD && t->len < GA_CONF_TOK_CAP && strcmp(t->text, w) == 0;
}

/* Accumulates the digits text[*i..] into *v; false on 64-bit overflow (the
 * digits are still consumed so the caller can tell syntax from range). */
static bool take_digits(const char *text, size_t *i, uint64_t *v, size_t *count)
{
    bool fits = true;
    for (; is_digit(text[*i]); (*i)++, (*count)++) {
        unsigned d = (unsigned)(text[*i] - '0');
        if (*v > (UINT64_MAX - d) / 10)
            fits = false;
        else
            *v = *v * 10 + d;
    }
    return fits;
}

ga_num_t ga_conf_read_whole(const ga_tok_t *t, uint64_t *v)
{
    if (t->kind != GA_TOK_WORD)
        return GA_NUM_SYNTAX;
    size_t i = 0, n = 0;
    uint64_t x = 0;
    bool fits = take_digits(t->text, &i, &x, &n);
    if (n == 0 || t->text[i] != '\0')
        return GA_NUM_SYNTAX;
    if (!fits || t->len >= GA_CONF_TOK_CAP) /* a cut word of digits has 255 or more of them */
        return GA_NUM_RANGE;
    *v = x;
    return GA_NUM_OK;
}

ga_num_t ga_conf_read_stoull(const ga_tok_t *t, uint64_t *v, bool *cut)
{
    if (t->kind != GA_TOK_WORD)
        return GA_NUM_SYNTAX;
    const char *s = t->text;
    size_t i = 0, n = 0;
    bool neg = s[0] == '-';
    if (s[0] == '+' || s[0] == '-')
        i++;
    if (s[i] == '0' && (s[i + 1] == 'x' || s[i + 1] == 'X'))
        return GA_NUM_SYNTAX; /* stoull reads 0 there; a user meant hexadecimal, say so instead */
    uint64_t x = 0;
    bool fits = take_digits(s, &i, &x, &n);
    if (n == 0)
        return GA_NUM_SYNTAX;
    if (!fits || (t->len >= GA_CONF_TOK_CAP && s[i] == '\0')) /* a cut word of digits has 255 or more */
        return GA_NUM_RANGE;
    if (cut != NULL)
        *cut = s[i] != '\0' || t->len >= GA_CONF_TOK_CAP;
    *v = neg ? 0 - x : x; /* strtoull negates in unsigned arithmetic */
    return GA_NUM_OK;
}

/* conf's dialect of util/size.h: KB is 1000 bytes and KiB 1024, as the units
 * are defined (PyTorch's *_mb keys are read by stoull, never here); every
 * digit counts and a size must be a whole number of bytes, so a config string
 * means exactly one number or is refused. */
static const ga_size_unit_t size_units[] = {
    {"b", 1},
    {"kb", 1000ull},
    {"mb", 1000ull * 1000},
    {"gb", 1000ull * 1000 * 1000},
    {"tb", 1000ull * 1000 * 1000 * 1000},
    {"kib", 1ull << 10},
    {"mib", 1ull << 20},
    {"gib", 1ull << 30},
    {"tib", 1ull << 40},
};

static const ga_size_rules_t size_rules = {
    .units = size_units,
    .n_units = sizeof(size_units) / sizeof(size_units[0]),
    .round = GA_SIZE_EXACT,
    .frac_digits = 18,
    .strict = true,
};

ga_num_t ga_conf_read_size(const ga_tok_t *t, uint64_t *bytes)
{
    if (t->kind != GA_TOK_WORD || t->len >= GA_CONF_TOK_CAP)
        return GA_NUM_SYNTAX;
    switch (ga_size_parse(t->text, t->len, &size_rules, bytes)) {
    case GA_SIZE_OK: return GA_NUM_OK;
    case GA_SIZE_RANGE: return GA_NUM_RANGE;
    case GA_SIZE_INEXACT: return GA_NUM_INEXACT;
    case GA_SIZE_SYNTAX: break;
    }
    return GA_NUM_SYNTAX;
}

/*
 * The digits are rewritten as "<integer>e<exponent>" (no decimal point) and
 * handed to strtod: glibc's strtod rounds correctly, and without a decimal
 * point its result cannot depend on LC_NUMERIC (a process in a locale whose
 * decimal point is ',' would otherwise misread "0.8").
 */
ga_num_t ga_conf_read_decimal(const char *text, double *v)
{
    char buf[GA_CONF_TOK_CAP + 32];
    size_t i = 0, n = 0, digits = 0;
    long frac = 0, exp10 = 0;
    if (text[i] == '+' || text[i] == '-')
        buf[n++] = text[i++];
    for (; is_digit(text[i]); i++, digits++)
        if (n < GA_CONF_TOK_CAP)
            buf[n++] = text[i];
    if (text[i] == '.') {
        for (i++; is_digit(text[i]); i++, digits++, frac++)
            if (n < GA_CONF_TOK_CAP)
                buf[n++] = text[i];
    }
    if (digits == 0 || digits >= GA_CONF_TOK_CAP)
        return GA_NUM_SYNTAX;
    if (text[i] == 'e' || text[i] == 'E') {
        i++;
        bool neg = text[i] == '-';
        if (text[i] == '+' || text[i] == '-')
            i++;
        if (!is_digit(text[i]))
            return GA_NUM_SYNTAX;
        for (; is_digit(text[i]); i++)
            if (exp10 < 100000) /* far beyond any double; strtod then gives 0 or inf */
                exp10 = exp10 * 10 + (text[i] - '0');
        exp10 = neg ? -exp10 : exp10;
    }
    if (text[i] != '\0')
        return GA_NUM_SYNTAX;
    snprintf(buf + n, sizeof(buf) - n, "e%ld", exp10 - frac);
    char *end = NULL;
    double x = strtod(buf, &end);
    if (end == NULL || *end != '\0')
        return GA_NUM_SYNTAX;
    *v = x;
    return GA_NUM_OK;
}

ga_num_t ga_conf_read_stod(const char *text, double *v)
{
    char buf[GA_CONF_TOK_CAP];
    size_t i = 0, n = 0, digits = 0;
    if (text[i] == '+' || text[i] == '-')
        buf[n++] = text[i++];
    if (text[i] == '0' && (text[i + 1] == 'x' || text[i + 1] == 'X'))
        return GA_NUM_SYNTAX;
    for (; is_digit(text[i]) && n < sizeof(buf) - 1; i++, digits++)
        buf[n++] = text[i];
    if (text[i] == '.' && n < sizeof(buf) - 1) {
        buf[n++] = text[i++];
        for (; is_digit(text[i]) && n < sizeof(buf) - 1; i++, digits++)
            buf[n++] = text[i];
    }
    if (digits == 0)
        return GA_NUM_SYNTAX;
    /* An exponent counts only when digits follow it, as in strtod ("1e" is 1). */
    size_t j = i + 1 + (text[i + 1] == '+' || text[i + 1] == '-');
    if ((text[i] == 'e' || text[i] == 'E') && is_digit(text[j]) && n + (j - i) < sizeof(buf) - 1) {
        for (; i < j; i++)
            buf[n++] = text[i];
        for (; is_digit(text[i]) && n < sizeof(buf) - 1; i++)
            buf[n++] = text[i];
    }
    buf[n] = '\0';
    return ga_conf_read_decimal(buf, v);
}

/* Writes the p-digit decimal d[0..p) * 10^(e - p + 1) positionally, or with an
 * exponent when it would need more than 20 zeros. */
static void place_digits(bool neg, const char *d, int p, int e, char *out, size_t len)
{
    char tmp[64];
    size_t n = 0;
    while (p > 1 && d[p - 1] == '0') /* trailing zeros say nothing */
        p--;
    if (neg)
        tmp[n++] = '-';
    if (p == 1 && d[0] == '0') {
        tmp[n++] = '0';
    } else if (e < -20 || e > 20) {
        tmp[n++] = d[0];
        if (p > 1) {
            tmp[n++] = '.';
            for (int k = 1; k < p; k++)
                tmp[n++] = d[k];
        }
        n += (size_t)snprintf(tmp + n, sizeof(tmp) - n, "e%d", e);
    } else if (e < 0) {
        tmp[n++] = '0';
        tmp[n++] = '.';
        for (int k = 0; k < -e - 1; k++)
            tmp[n++] = '0';
        for (int k = 0; k < p; k++)
            tmp[n++] = d[k];
    } else {
        for (int k = 0; k <= e; k++)
            tmp[n++] = k < p ? d[k] : '0';
        if (p > e + 1) {
            tmp[n++] = '.';
            for (int k = e + 1; k < p; k++)
                tmp[n++] = d[k];
        }
    }
    tmp[n] = '\0';
    snprintf(out, len, "%s", tmp);
}

/*
 * Tries 1..17 significant digits and keeps the first that reads back exactly
 * (17 always does for a finite double), so 0.8 prints as "0.8". The digits
 * come from "%.*e", whose only locale-dependent part is the decimal point,
 * which is skipped rather than parsed.
 */
void ga_conf_write_decimal(double v, char *buf, size_t len)
{
    if (!isfinite(v)) {
        snprintf(buf, len, "%s", isnan(v) ? "nan" : v > 0 ? "inf" : "-inf");
        return;
    }
    for (int p = 1; p <= 17; p++) {
        char e[64], d[24], cand[64];
        snprintf(e, sizeof(e), "%.*e", p - 1, v);
        const char *q = e;
        bool neg = *q == '-';
        q += neg;
        int nd = 0;
        while (*q != '\0' && *q != 'e' && nd < p) {
            if (is_digit(*q))
                d[nd++] = *q;
            q++;
        }
        while (*q != '\0' && *q != 'e')
            q++;
        if (nd != p || *q != 'e')
            continue;
        place_digits(neg, d, p, atoi(q + 1), cand, sizeof(cand));
        double back;
        if (ga_conf_read_decimal(cand, &back) == GA_NUM_OK && back == v) {
            snprintf(buf, len, "%s", cand);
            return;
        }
    }
    snprintf(buf, len, "%.17g", v); /* unreachable for finite v */
}

void ga_conf_show(const char *src, const ga_tok_t *t, char *buf, size_t len)
{
    if (len == 0)
        return;
    if (t->kind == GA_TOK_END) {
        snprintf(buf, len, "the end of the string");
        return;
    }
    size_t n = 0, i = t->off;
    buf[0] = '\0';
    for (; i < t->end && n < 48 && n + 8 < len; i++) { /* at most 48 (+3) shown bytes: the offset must fit */
        unsigned char ch = (unsigned char)src[i];
        if (ch >= 0x20 && ch < 0x7f && ch != '"' && ch != '\\')
            buf[n++] = (char)ch;
        else
            n += (size_t)snprintf(buf + n, len - n, "\\x%02x", ch);
    }
    buf[n] = '\0';
    if (i < t->end && n + 4 <= len)
        snprintf(buf + n, len - n, "...");
}
