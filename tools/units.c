/*
 * units.c: see units.h. Hand-written digit loops rather than strtoull: the
 * trace readers call these millions of times per second, on slices of a line
 * that are not NUL-terminated, and must reject "-1", "+3" and overflow.
 */
#include "tools/units.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

bool ga_units_parse_u64(const char *s, size_t n, uint64_t *out)
{
    if (n == 0)
        return false;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned d = (unsigned char)s[i] - '0';
        if (d > 9 || v > (UINT64_MAX - d) / 10)
            return false;
        v = v * 10 + d;
    }
    *out = v;
    return true;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

bool ga_units_parse_hex(const char *s, size_t n, uint64_t *out)
{
    if (n >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        s += 2;
        n -= 2;
    }
    if (n == 0)
        return false;
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        int d = hexval(s[i]);
        if (d < 0 || v >> 60 != 0)
            return false;
        v = v << 4 | (uint64_t)d;
    }
    *out = v;
    return true;
}

bool ga_units_parse_uint(const char *s, size_t n, uint64_t *out)
{
    if (n >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
        return ga_units_parse_hex(s, n, out);
    return ga_units_parse_u64(s, n, out);
}

static bool ieq(const char *s, size_t n, const char *lit)
{
    size_t k = strlen(lit);
    if (n != k)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c >= 'A' && c <= 'Z')
            c = (char)(c - 'A' + 'a');
        if (c != lit[i])
            return false;
    }
    return true;
}

/* The multiplier of a unit suffix, 0 if unknown. */
static uint64_t unit_of(const char *s, size_t n)
{
    static const struct {
        const char *a, *b, *c;
        unsigned shift;
    } units[] = {{"k", "kb", "kib", 10}, {"m", "mb", "mib", 20}, {"g", "gb", "gib", 30}, {"t", "tb", "tib", 40}};
    if (n == 0 || ieq(s, n, "b") || ieq(s, n, "bytes"))
        return 1;
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
        if (ieq(s, n, units[i].a) || ieq(s, n, units[i].b) || ieq(s, n, units[i].c))
            return (uint64_t)1 << units[i].shift;
    return 0;
}

bool ga_units_parse_size(const char *s, size_t n, uint64_t *out)
{
    size_t i = 0;
    while (i < n && s[i] >= '0' && s[i] <= '9')
        i++;
    size_t int_end = i;
    size_t frac_start = i, frac_end = i;
    if (i < n && s[i] == '.') {
        frac_start = ++i;
        while (i < n && s[i] >= '0' && s[i] <= '9')
            i++;
        frac_end = i;
    }
    if (int_end == 0 && frac_end == frac_start)
        return false; /* no digits at all */
    size_t u = i;
    while (u < n && s[u] == ' ')
        u++;
    uint64_t mul = unit_of(s + u, n - u);
    if (mul == 0)
        return false;
    uint64_t whole = 0;
    if (int_end > 0 && !ga_units_parse_u64(s, int_end, &whole))
        return false;
    if (whole > UINT64_MAX / mul)
        return false;
    uint64_t v = whole * mul;
    if (frac_end > frac_start) {
        /* The fraction in double precision, rounded to the nearest byte:
         * exact for every size a GPU has (below 2^53 bytes). */
        double f = 0, scale = 1;
        for (size_t k = frac_start; k < frac_end && k < frac_start + 15; k++) {
            scale /= 10;
            f += (s[k] - '0') * scale;
        }
        double extra = floor(f * (double)mul + 0.5);
        if ((double)(UINT64_MAX - v) < extra)
            return false;
        v += (uint64_t)extra;
    }
    *out = v;
    return true;
}

bool ga_units_parse_fraction(const char *s, size_t n, double *out)
{
    size_t i = 0, digits = 0;
    double v = 0;
    while (i < n && s[i] >= '0' && s[i] <= '9' && digits < 18) {
        v = v * 10 + (s[i++] - '0');
        digits++;
    }
    if (i < n && s[i] == '.') {
        i++;
        double scale = 1;
        while (i < n && s[i] >= '0' && s[i] <= '9' && digits < 18) {
            scale /= 10;
            v += (s[i++] - '0') * scale;
            digits++;
        }
    }
    if (i != n || digits == 0)
        return false;
    *out = v;
    return true;
}

void ga_units_format_bytes(int64_t bytes, char *buf, size_t len)
{
    const char *sign = bytes < 0 ? "-" : "";
    uint64_t b = bytes < 0 ? (uint64_t)0 - (uint64_t)bytes : (uint64_t)bytes;
    if (b <= 1024)
        snprintf(buf, len, "%s%llu bytes", sign, (unsigned long long)b);
    else if (b <= ((uint64_t)1 << 20))
        snprintf(buf, len, "%s%.2f KiB", sign, (double)b / 1024.0);
    else if (b <= ((uint64_t)1 << 30))
        snprintf(buf, len, "%s%.2f MiB", sign, (double)b / 1048576.0);
    else if (b <= ((uint64_t)1 << 40))
        snprintf(buf, len, "%s%.2f GiB", sign, (double)b / 1073741824.0);
    else
        snprintf(buf, len, "%s%.2f TiB", sign, (double)b / 1099511627776.0);
}

void ga_units_format_count(uint64_t n, char *buf, size_t len)
{
    char digits[32];
    int k = snprintf(digits, sizeof(digits), "%llu", (unsigned long long)n);
    char tmp[48];
    size_t o = 0;
    for (int i = 0; i < k; i++) {
        if (i > 0 && (k - i) % 3 == 0)
            tmp[o++] = ',';
        tmp[o++] = digits[i];
    }
    tmp[o] = '\0';
    snprintf(buf, len, "%s", tmp);
}

void ga_units_format_rate(double r, char *buf, size_t len)
{
    if (!(r >= 0) || isinf(r))
        snprintf(buf, len, "-");
    else if (r >= 1e6)
        snprintf(buf, len, "%.1f M/s", r / 1e6);
    else if (r >= 1e3)
        snprintf(buf, len, "%.0f k/s", r / 1e3);
    else
        snprintf(buf, len, "%.0f /s", r);
}
