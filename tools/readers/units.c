/*
 * units.c: see units.h. Hand-written digit loops rather than strtoull: the
 * trace readers call these millions of times per second, on slices of a line
 * that are not NUL-terminated, and must reject "-1", "+3" and overflow. Sizes
 * are read by util/size.h, the one size parser, under the tools' rules.
 */
#include "tools/readers/units.h"
#include "util/size.h"

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

/* The command line's and trace files' dialect of util/size.h: units are
 * powers of 1024 whether spelt K, KB or KiB (an "80 GB" GPU reports 80 GiB),
 * a blank may precede the unit, and a fraction of a byte rounds to the
 * nearest (15 fraction digits count: more than any device size needs). */
static const ga_size_unit_t size_units[] = {
    {"b", 1},           {"bytes", 1},        {"k", 1ull << 10},
    {"kb", 1ull << 10}, {"kib", 1ull << 10}, {"m", 1ull << 20},
    {"mb", 1ull << 20}, {"mib", 1ull << 20}, {"g", 1ull << 30},
    {"gb", 1ull << 30}, {"gib", 1ull << 30}, {"t", 1ull << 40},
    {"tb", 1ull << 40}, {"tib", 1ull << 40},
};

static const ga_size_rules_t size_rules = {
    .units = size_units,
    .n_units = sizeof(size_units) / sizeof(size_units[0]),
    .round = GA_SIZE_ROUND_NEAREST,
    .frac_digits = 15,
    .blank_before_unit = true,
};

bool ga_units_parse_size(const char *s, size_t n, uint64_t *out)
{
    return ga_size_parse(s, n, &size_rules, out) == GA_SIZE_OK;
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

static void format_magnitude(const char *sign, uint64_t b, char *buf, size_t len)
{
    static const char *const unit[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    if (b <= 1024) {
        snprintf(buf, len, "%s%llu bytes", sign, (unsigned long long)b);
        return;
    }
    size_t u = 0; /* the largest unit the value is above, as format_size picks it */
    while (u + 1 < sizeof(unit) / sizeof(unit[0]) && b > (uint64_t)1 << (10 * (u + 2)))
        u++;
    snprintf(buf, len, "%s%.2f %s", sign, (double)b / (double)((uint64_t)1 << (10 * (u + 1))), unit[u]);
}

void ga_units_format_bytes(int64_t bytes, char *buf, size_t len)
{
    format_magnitude(bytes < 0 ? "-" : "", bytes < 0 ? (uint64_t)0 - (uint64_t)bytes : (uint64_t)bytes, buf, len);
}

void ga_units_format_size(uint64_t bytes, char *buf, size_t len)
{
    format_magnitude("", bytes, buf, len);
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
