/*
 * pickle.c: the pickle format of the emitter (see emit.h).
 *
 * Only opcodes that MemoryViz.js's own unpickler accepts are written
 * (pytorch/pytorch torch/utils/viz/MemoryViz.js, function unpickle, read at
 * commit 00067369c9339bed950762afec327514d6fa2566): PROTO, STOP, MARK,
 * EMPTY_DICT, EMPTY_LIST, SETITEMS, APPENDS, SHORT_BINUNICODE, BINUNICODE,
 * BININT1, BININT2, BININT, LONG1, BINFLOAT, NEWTRUE, NEWFALSE, NONE, TUPLE2,
 * BINPUT, LONG_BINPUT, BINGET, LONG_BINGET. That unpickler rejects protocols
 * above 4, so the stream declares protocol 4 (the lowest that defines
 * SHORT_BINUNICODE; Python reads any of these opcodes under any protocol).
 *
 * Integers use the smallest form: BININT1 (0..255), BININT2 (..65535), BININT
 * (signed 32-bit), else LONG1 with the minimal two's complement bytes, so
 * uint64 addresses of 2^63 and more are 9 bytes and stay positive in Python
 * (MemoryViz turns LONG1 of more than 8 bytes into a BigInt).
 *
 * Lists and dicts are filled in batches of 1000 under one MARK, as Python's
 * pickler does: MemoryViz's APPENDS spreads the batch into Array.push
 * arguments, which a million-entry batch would overflow.
 *
 * Keys and atoms (constant strings) are written once and then referenced by
 * memo (BINGET), as PyTorch's pickler memoizes repeated strings.
 */
#include <string.h>

#include "trace/emit.h"

enum {
    OP_MARK = '(',
    OP_STOP = '.',
    OP_BINFLOAT = 'G',
    OP_BININT = 'J',
    OP_BININT1 = 'K',
    OP_BININT2 = 'M',
    OP_NONE = 'N',
    OP_BINUNICODE = 'X',
    OP_EMPTY_LIST = ']',
    OP_APPENDS = 'e',
    OP_BINGET = 'h',
    OP_LONG_BINGET = 'j',
    OP_BINPUT = 'q',
    OP_LONG_BINPUT = 'r',
    OP_SETITEMS = 'u',
    OP_EMPTY_DICT = '}',
    OP_PROTO = 0x80,
    OP_TUPLE2 = 0x86,
    OP_NEWTRUE = 0x88,
    OP_NEWFALSE = 0x89,
    OP_LONG1 = 0x8a,
    OP_SHORT_BINUNICODE = 0x8c,
};

#define PROTOCOL 4
#define BATCH 1000 /* items per MARK, Python's pickler's _BATCHSIZE */

static void put_le(ga_trace_emitter_t *e, uint64_t v, unsigned n)
{
    unsigned char b[8];
    for (unsigned i = 0; i < n; i++)
        b[i] = (unsigned char)(v >> (8 * i));
    ga_trace_emit_bytes(e, b, n);
}

/* Open a batch slot in the innermost container for one more item (a list
 * value or a dict pair), closing a full batch first. */
static void batch_item(ga_trace_emitter_t *e, ga_trace_emit_level_t *l)
{
    if (l->mark_open && l->items == BATCH) {
        ga_trace_emit_byte(e, l->is_dict ? OP_SETITEMS : OP_APPENDS);
        l->mark_open = 0;
    }
    if (!l->mark_open) {
        ga_trace_emit_byte(e, OP_MARK);
        l->mark_open = 1;
        l->items = 0;
    }
    l->items++;
}

/* Every value starts here (ga_trace_emit_value_start says where it stands). */
static void value_begin(ga_trace_emitter_t *e)
{
    ga_trace_emit_level_t *l = ga_trace_emit_value_start(e);
    if (l != NULL)
        batch_item(e, l);
}

static void put_int(ga_trace_emitter_t *e, int64_t v)
{
    if (v >= 0 && v < 256) {
        ga_trace_emit_byte(e, OP_BININT1);
        ga_trace_emit_byte(e, (unsigned char)v);
    } else if (v >= 0 && v < 65536) {
        ga_trace_emit_byte(e, OP_BININT2);
        put_le(e, (uint64_t)v, 2);
    } else if (v >= INT32_MIN && v <= INT32_MAX) {
        ga_trace_emit_byte(e, OP_BININT);
        put_le(e, (uint64_t)(uint32_t)(int32_t)v, 4);
    } else {
        /* LONG1: minimal little-endian two's complement. Drop a top byte
         * while it only repeats the sign of the byte below it. */
        unsigned char b[8];
        for (unsigned i = 0; i < 8; i++)
            b[i] = (unsigned char)((uint64_t)v >> (8 * i));
        unsigned n = 8;
        while (n > 1 && ((b[n - 1] == 0x00 && !(b[n - 2] & 0x80)) || (b[n - 1] == 0xFF && (b[n - 2] & 0x80))))
            n--;
        ga_trace_emit_byte(e, OP_LONG1);
        ga_trace_emit_byte(e, (unsigned char)n);
        ga_trace_emit_bytes(e, b, n);
    }
}

static void put_uint(ga_trace_emitter_t *e, uint64_t v)
{
    if (v <= INT64_MAX) {
        put_int(e, (int64_t)v);
        return;
    }
    /* 2^63 and above: the 8 bytes plus a zero sign byte. */
    ga_trace_emit_byte(e, OP_LONG1);
    ga_trace_emit_byte(e, 9);
    put_le(e, v, 8);
    ga_trace_emit_byte(e, 0);
}

static void put_raw(ga_trace_emitter_t *e, const char *piece, size_t n)
{
    ga_trace_emit_bytes(e, piece, n);
}

static void put_string(ga_trace_emitter_t *e, const char *s, size_t len)
{
    size_t n = ga_trace_utf8_clean_len(s, len);
    if (n < 256) {
        ga_trace_emit_byte(e, OP_SHORT_BINUNICODE);
        ga_trace_emit_byte(e, (unsigned char)n);
    } else if (n <= UINT32_MAX) {
        ga_trace_emit_byte(e, OP_BINUNICODE);
        put_le(e, n, 4);
    } else {
        ga_trace_emit_fail(e, GALLOC_E_INVAL); /* BINUNICODE8 is not in MemoryViz's set */
        return;
    }
    if (n == len)
        ga_trace_emit_bytes(e, s, len);
    else
        ga_trace_utf8_clean(e, s, len, put_raw);
}

static uint32_t p_memo_put(ga_trace_emitter_t *e)
{
    uint32_t m = e->memo_next++;
    if (m < 256) {
        ga_trace_emit_byte(e, OP_BINPUT);
        ga_trace_emit_byte(e, (unsigned char)m);
    } else {
        ga_trace_emit_byte(e, OP_LONG_BINPUT);
        put_le(e, m, 4);
    }
    return m;
}

static void put_get(ga_trace_emitter_t *e, uint32_t m)
{
    if (m < 256) {
        ga_trace_emit_byte(e, OP_BINGET);
        ga_trace_emit_byte(e, (unsigned char)m);
    } else {
        ga_trace_emit_byte(e, OP_LONG_BINGET);
        put_le(e, m, 4);
    }
}

static void p_memo_get(ga_trace_emitter_t *e, uint32_t m)
{
    value_begin(e);
    put_get(e, m);
}

/* A constant string: the first time written and memoized, then referenced. */
static void put_const(ga_trace_emitter_t *e, const char *s)
{
    uintptr_t h = ((uintptr_t)s >> 3) * 0x9E3779B97F4A7C15ull;
    for (unsigned i = 0; i < GA_TRACE_EMIT_KEY_MEMO; i++) {
        unsigned slot = (unsigned)((h + i) % GA_TRACE_EMIT_KEY_MEMO);
        if (e->key_memo[slot].s == s) {
            put_get(e, e->key_memo[slot].memo);
            return;
        }
        if (e->key_memo[slot].s == NULL) {
            put_string(e, s, strlen(s));
            e->key_memo[slot].s = s;
            e->key_memo[slot].memo = p_memo_put(e);
            return;
        }
    }
    put_string(e, s, strlen(s)); /* table full: write it plainly */
}

static void p_begin(ga_trace_emitter_t *e)
{
    ga_trace_emit_byte(e, OP_PROTO);
    ga_trace_emit_byte(e, PROTOCOL);
}

static void p_end(ga_trace_emitter_t *e)
{
    ga_trace_emit_byte(e, OP_STOP);
}

static void p_begin_dict(ga_trace_emitter_t *e)
{
    value_begin(e);
    ga_trace_emit_byte(e, OP_EMPTY_DICT);
    ga_trace_emit_push(e, true);
}

static void p_end_dict(ga_trace_emitter_t *e)
{
    if (e->depth > 0 && e->level[e->depth - 1].mark_open && !e->after_key)
        ga_trace_emit_byte(e, OP_SETITEMS);
    ga_trace_emit_pop(e, true);
}

static void p_begin_list(ga_trace_emitter_t *e)
{
    value_begin(e);
    ga_trace_emit_byte(e, OP_EMPTY_LIST);
    ga_trace_emit_push(e, false);
}

static void p_end_list(ga_trace_emitter_t *e)
{
    if (e->depth > 0 && e->level[e->depth - 1].mark_open)
        ga_trace_emit_byte(e, OP_APPENDS);
    ga_trace_emit_pop(e, false);
}

static void p_key(ga_trace_emitter_t *e, const char *k)
{
    if (e->depth == 0 || !e->level[e->depth - 1].is_dict || e->after_key) {
        ga_trace_emit_fail(e, GALLOC_E_INVAL);
        return;
    }
    batch_item(e, &e->level[e->depth - 1]);
    put_const(e, k);
    e->after_key = true;
}

static void p_atom(ga_trace_emitter_t *e, const char *s)
{
    value_begin(e);
    put_const(e, s);
}

static void p_str(ga_trace_emitter_t *e, const char *s, size_t len)
{
    value_begin(e);
    put_string(e, s, len);
}

static void p_i64(ga_trace_emitter_t *e, int64_t v)
{
    value_begin(e);
    put_int(e, v);
}

static void p_u64(ga_trace_emitter_t *e, uint64_t v)
{
    value_begin(e);
    put_uint(e, v);
}

static void p_f64(ga_trace_emitter_t *e, double v)
{
    value_begin(e);
    uint64_t bits;
    memcpy(&bits, &v, sizeof(bits));
    unsigned char b[9];
    b[0] = OP_BINFLOAT;
    for (unsigned i = 0; i < 8; i++)
        b[1 + i] = (unsigned char)(bits >> (56 - 8 * i)); /* big-endian */
    ga_trace_emit_bytes(e, b, sizeof(b));
}

static void p_boolean(ga_trace_emitter_t *e, bool v)
{
    value_begin(e);
    ga_trace_emit_byte(e, v ? OP_NEWTRUE : OP_NEWFALSE);
}

static void p_none(ga_trace_emitter_t *e)
{
    value_begin(e);
    ga_trace_emit_byte(e, OP_NONE);
}

static void p_tuple2_i64(ga_trace_emitter_t *e, int64_t a, int64_t b)
{
    value_begin(e);
    put_int(e, a);
    put_int(e, b);
    ga_trace_emit_byte(e, OP_TUPLE2);
}

const ga_trace_emitter_ops_t ga_trace_pickle = {
    .name = "pickle",
    .begin = p_begin,
    .end = p_end,
    .begin_dict = p_begin_dict,
    .end_dict = p_end_dict,
    .begin_list = p_begin_list,
    .end_list = p_end_list,
    .key = p_key,
    .atom = p_atom,
    .str = p_str,
    .i64 = p_i64,
    .u64 = p_u64,
    .f64 = p_f64,
    .boolean = p_boolean,
    .none = p_none,
    .tuple2_i64 = p_tuple2_i64,
    .memo_put = p_memo_put,
    .memo_get = p_memo_get,
};
