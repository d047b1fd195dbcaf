/*
 * size.c: see size.h. Hand-written digit loops rather than strtoull or strtod:
 * callers hand in slices of a line that are not NUL-terminated, the trace
 * readers call this millions of times per second, and "-1", "+3", "1e3" and
 * overflow must be refused, not wrapped or truncated.
 *
 * The value is whole * mult + frac * mult / scale, where frac holds the first
 * rules->frac_digits digits after the point and scale is 10 to that count: in
 * 128-bit integers (whole * mult < 2^128, frac * mult < 10^18 * 2^64 < 2^124),
 * so it is exact before the rounding the rules ask for.
 */
#include "util/size.h"

#include <stdio.h>

#define MAX_FRAC_DIGITS 18 /* 10^18 is the largest power of ten in 64 bits */

typedef unsigned __int128 u128;

static bool is_digit(char ch)
{
    return ch >= '0' && ch <= '9';
}

static char lower(char ch)
{
    return ch >= 'A' && ch <= 'Z' ? (char)(ch - 'A' + 'a') : ch;
}

/* Whether u[0..n) is name, ignoring ASCII case. */
static bool same_name(const char *u, size_t n, const char *name)
{
    size_t j = 0;
    for (; j < n && name[j] != '\0'; j++)
        if (lower(u[j]) != lower(name[j]))
            return false;
    return j == n && name[j] == '\0';
}

/* The multiplier of unit u[0..n): 1 for none, else from the rules' table. */
static bool unit_of(const char *u, size_t n, const ga_size_rules_t *r, uint64_t *mult)
{
    *mult = 1;
    if (n == 0)
        return true;
    for (size_t k = 0; k < r->n_units; k++)
        if (same_name(u, n, r->units[k].name)) {
            *mult = r->units[k].mult;
            return true;
        }
    return false;
}

/* v = v * 10 + d, or false (v unchanged) when that passes 64 bits. */
static bool push_digit(uint64_t *v, unsigned d)
{
    if (*v > (UINT64_MAX - d) / 10)
        return false;
    *v = *v * 10 + d;
    return true;
}

/* The digits of s[0..n): whole ones, and after a point the fraction. */
typedef struct digits {
    size_t end;     /* the first byte after the number */
    size_t n_whole; /* digits before the point */
    size_t n_frac;  /* digits after it */
    bool point;     /* a '.' follows the whole digits */
    uint64_t whole; /* their value (valid when whole_fits) */
    bool whole_fits;
    uint64_t mantissa; /* every digit as one integer (valid when mantissa_fits): strict rules */
    bool mantissa_fits;
    uint64_t frac;  /* the first frac_digits digits after the point */
    uint64_t scale; /* 10 ^ (how many of them) */
} digits_t;

static void scan(const char *s, size_t n, unsigned frac_digits, digits_t *d)
{
    *d = (digits_t){.whole_fits = true, .mantissa_fits = true, .scale = 1};
    size_t i = 0;
    for (; i < n && is_digit(s[i]); i++, d->n_whole++) {
        unsigned v = (unsigned)(s[i] - '0');
        d->whole_fits = d->whole_fits && push_digit(&d->whole, v);
        d->mantissa_fits = d->mantissa_fits && push_digit(&d->mantissa, v);
    }
    d->point = i < n && s[i] == '.';
    if (d->point) {
        for (i++; i < n && is_digit(s[i]); i++, d->n_frac++) {
            unsigned v = (unsigned)(s[i] - '0');
            d->mantissa_fits = d->mantissa_fits && push_digit(&d->mantissa, v);
            if (d->n_frac < frac_digits) {
                d->frac = d->frac * 10 + v;
                d->scale *= 10;
            }
        }
    }
    d->end = i;
}

ga_size_status_t ga_size_parse(const char *s, size_t n, const ga_size_rules_t *r, uint64_t *out)
{
    unsigned keep = r->frac_digits < MAX_FRAC_DIGITS ? r->frac_digits : MAX_FRAC_DIGITS;
    digits_t d;
    scan(s, n, keep, &d);
    if (d.n_whole + d.n_frac == 0)
        return GA_SIZE_SYNTAX;
    if (r->strict && (d.n_whole == 0 || (d.point && d.n_frac == 0) || d.n_frac > keep))
        return GA_SIZE_SYNTAX;
    size_t u = d.end;
    while (r->blank_before_unit && u < n && s[u] == ' ')
        u++;
    uint64_t mult;
    if (!unit_of(s + u, n - u, r, &mult))
        return GA_SIZE_SYNTAX;
    if (!d.whole_fits || (r->strict && (!d.mantissa_fits || d.mantissa > UINT64_MAX / mult)))
        return GA_SIZE_RANGE;
    u128 part = (u128)d.frac * mult;
    u128 rem = part % d.scale;
    u128 v = (u128)d.whole * mult + part / d.scale;
    if (r->round == GA_SIZE_ROUND_NEAREST && rem * 2 >= d.scale)
        v++;
    if (v > UINT64_MAX)
        return GA_SIZE_RANGE;
    if (r->round == GA_SIZE_EXACT && rem != 0)
        return GA_SIZE_INEXACT;
    *out = (uint64_t)v;
    return GA_SIZE_OK;
}

/* c10's format_size: the units and two decimals PyTorch's OOM message uses. */
void ga_format_size(uint64_t bytes, char *buf, size_t len)
{
    if (bytes <= 1024)
        snprintf(buf, len, "%llu bytes", (unsigned long long)bytes);
    else if (bytes <= 1048576)
        snprintf(buf, len, "%.2f KiB", (double)bytes / 1024.0);
    else if (bytes <= 1073741824ull)
        snprintf(buf, len, "%.2f MiB", (double)bytes / 1048576.0);
    else
        snprintf(buf, len, "%.2f GiB", (double)bytes / 1073741824.0);
}
