/*
 * units.h: numbers as trace files and users write them, and byte counts as
 * users read them.
 *
 * Sizes: plain bytes ("1048576") or a number with a unit ("80GiB", "512MiB",
 * "1.5GB", "4k"). Units are powers of 1024 whether spelt KB or KiB: that is
 * what PyTorch's *_mb options and nvidia-smi's figures mean, and an "80GB" GPU
 * reports 80 GiB. All parsers take (pointer, length), never read past it and
 * reject overflow.
 */
#ifndef GA_TOOLS_READERS_UNITS_H
#define GA_TOOLS_READERS_UNITS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Decimal digits only. */
bool ga_units_parse_u64(const char *s, size_t n, uint64_t *out);
/* Hexadecimal, with or without a 0x / 0X prefix. */
bool ga_units_parse_hex(const char *s, size_t n, uint64_t *out);
/* 0x-prefixed hex or decimal. */
bool ga_units_parse_uint(const char *s, size_t n, uint64_t *out);
/* A size as described above. */
bool ga_units_parse_size(const char *s, size_t n, uint64_t *out);
/* A decimal fraction such as 0.8 or 1 (no exponent, no sign). */
bool ga_units_parse_fraction(const char *s, size_t n, double *out);

/* ga_units_format_bytes: "512 bytes", "1.50 KiB", "2.00 MiB", "79.80 GiB",
 * "1.25 TiB", up to "16.00 EiB" (PyTorch's format_size plus TiB, PiB, EiB;
 * negative values get a sign). For a signed figure (a stat, a difference). */
void ga_units_format_bytes(int64_t bytes, char *buf, size_t len);

/* ga_units_format_size: the same for an unsigned size (a request, a device),
 * so one near 2^64 prints as the size it is, never as a negative. */
void ga_units_format_size(uint64_t bytes, char *buf, size_t len);

/* ga_units_format_count: 1234567 -> "1,234,567". */
void ga_units_format_count(uint64_t n, char *buf, size_t len);

/* ga_units_format_rate: events per second as "12.3 M/s", "950 k/s", "12 /s". */
void ga_units_format_rate(double per_second, char *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif /* GA_TOOLS_READERS_UNITS_H */
