/*
 * pickle_read.c: the pickle virtual machine of pickle_read.h, restricted to
 * plain data. Opcode semantics follow CPython's Lib/pickle.py (_Unpickler) and
 * the opcode table of Lib/pickletools.py.
 *
 * Invariants: the decoder never recurses; every read of n bytes is preceded by
 * need(ctx, n); every host allocation goes through charge(), which fails once
 * the budget is spent; values live in slabs owned by the document, so freeing
 * is one walk over the slabs whatever the shape (shared or cyclic) of the tree.
 */
#include "tools/snapshot/pickle_read.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SLAB_VALUES 1024 /* values per slab: one malloc per thousand opcodes */

typedef struct slab {
    struct slab *next;            /* older slab */
    size_t used;                  /* values handed out from v */
    ga_pk_value_t v[SLAB_VALUES]; /* the values */
} slab_t;

struct ga_pickle {
    slab_t *slabs;       /* every value of the document (newest slab first) */
    ga_pk_value_t *root; /* what STOP returned */
    int protocol;        /* from PROTO */
};

/* Decoder state, alive during ga_pickle_parse only. */
typedef struct ctx {
    const uint8_t *buf;  /* input */
    size_t len;          /* input length */
    size_t pos;          /* next byte to read */
    size_t op_at;        /* offset of the opcode being executed (for messages) */
    size_t used, budget; /* bytes charged so far, and the limit */
    size_t max_marks, max_memo;
    ga_pickle_t *doc;      /* the document being built */
    ga_pk_value_t **stack; /* value stack */
    size_t sp, stack_cap;
    size_t *marks; /* stack depths at each open MARK */
    size_t n_marks, marks_cap;
    ga_pk_value_t **memo;    /* memo table; NULL = unset */
    size_t memo_n, memo_cap; /* highest index set + 1, entries allocated */
    size_t memo_count;       /* entries set: MEMOIZE stores at len(memo), as Python does */
    char *err;
    size_t errlen;
} ctx_t;

/* Immutable singletons: None, True, False and () are never mutated (only
 * lists and dicts are), so one static copy serves every occurrence. */
static ga_pk_value_t v_none = {.type = GA_PK_NONE};
static ga_pk_value_t v_true = {.type = GA_PK_BOOL, .u.b = true};
static ga_pk_value_t v_false = {.type = GA_PK_BOOL, .u.b = false};
static ga_pk_value_t v_empty_tuple = {.type = GA_PK_TUPLE};

static int fail(ctx_t *c, const char *fmt, ...)
{
    if (c->err != NULL && c->errlen > 0) {
        int k = snprintf(c->err, c->errlen, "byte %zu: ", c->op_at);
        if (k >= 0 && (size_t)k < c->errlen) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(c->err + k, c->errlen - (size_t)k, fmt, ap);
            va_end(ap);
        }
    }
    return -1;
}

/* Charge n more bytes against the budget; the caller allocates only if this
 * succeeds. Overflow-safe: used never exceeds budget. */
static int charge(ctx_t *c, size_t n)
{
    if (n > c->budget - c->used)
        return fail(c,
                    "decoding needs more than %zu bytes of memory (the limit for this file); "
                    "the pickle is malformed or hostile",
                    c->budget);
    c->used += n;
    return 0;
}

/* Grow an array of elem-byte entries to hold at least want entries (doubling). */
static int grow(ctx_t *c, void **arr, size_t *cap, size_t want, size_t elem)
{
    if (want <= *cap)
        return 0;
    size_t ncap = *cap ? *cap : 8;
    while (ncap < want) {
        if (ncap > SIZE_MAX / 2 / elem)
            return fail(c, "a container is too large");
        ncap *= 2;
    }
    if (charge(c, (ncap - *cap) * elem) != 0)
        return -1;
    void *p = realloc(*arr, ncap * elem);
    if (p == NULL)
        return fail(c, "out of host memory");
    *arr = p;
    *cap = ncap;
    return 0;
}

static ga_pk_value_t *new_value(ctx_t *c, ga_pk_type_t t)
{
    slab_t *s = c->doc->slabs;
    if (s == NULL || s->used == SLAB_VALUES) {
        if (charge(c, sizeof(slab_t)) != 0)
            return NULL;
        s = malloc(sizeof(slab_t));
        if (s == NULL) {
            fail(c, "out of host memory");
            return NULL;
        }
        s->next = c->doc->slabs;
        s->used = 0;
        c->doc->slabs = s;
    }
    ga_pk_value_t *v = &s->v[s->used++];
    memset(v, 0, sizeof(*v));
    v->type = t;
    return v;
}

static int need(ctx_t *c, size_t n, const char *what)
{
    if (n > c->len - c->pos)
        return fail(c, "truncated %s: needs %zu bytes, %zu left", what, n, c->len - c->pos);
    return 0;
}

static uint64_t read_le(const uint8_t *p, size_t n)
{
    uint64_t v = 0;
    for (size_t i = n; i-- > 0;)
        v = v << 8 | p[i];
    return v;
}

static int push(ctx_t *c, ga_pk_value_t *v)
{
    if (v == NULL)
        return -1;
    if (grow(c, (void **)&c->stack, &c->stack_cap, c->sp + 1, sizeof(*c->stack)) != 0)
        return -1;
    c->stack[c->sp++] = v;
    return 0;
}

/* The bottom of the current frame: values below the innermost MARK are not
 * reachable by plain pops (Python raises "unpickling stack underflow"). */
static size_t frame_base(const ctx_t *c)
{
    return c->n_marks ? c->marks[c->n_marks - 1] : 0;
}

static ga_pk_value_t *pop(ctx_t *c)
{
    if (c->sp <= frame_base(c)) {
        fail(c, "stack underflow");
        return NULL;
    }
    return c->stack[--c->sp];
}

static ga_pk_value_t *top(ctx_t *c)
{
    if (c->sp <= frame_base(c)) {
        fail(c, "stack underflow");
        return NULL;
    }
    return c->stack[c->sp - 1];
}

/* Pop to the innermost MARK; *base is the stack index of its first value. */
static int pop_mark(ctx_t *c, size_t *base)
{
    if (c->n_marks == 0)
        return fail(c, "no MARK to pop to");
    *base = c->marks[--c->n_marks];
    return 0;
}

/* Append stack[base..sp) to container v (entries, already validated by type). */
static int extend(ctx_t *c, ga_pk_value_t *v, size_t base)
{
    size_t k = c->sp - base;
    if (k == 0)
        return 0; /* nothing to add (and memcpy must not see a NULL array) */
    if (grow(c, (void **)&v->u.seq.items, &v->u.seq.cap, v->u.seq.n + k, sizeof(*v->u.seq.items)) != 0)
        return -1;
    memcpy(v->u.seq.items + v->u.seq.n, c->stack + base, k * sizeof(*c->stack));
    v->u.seq.n += k;
    c->sp = base;
    return 0;
}

/* A new tuple or list from stack[base..sp). */
static int collect(ctx_t *c, ga_pk_type_t t, size_t base)
{
    if (t == GA_PK_TUPLE && c->sp == base) {
        return push(c, &v_empty_tuple);
    }
    ga_pk_value_t *v = new_value(c, t);
    if (v == NULL || extend(c, v, base) != 0)
        return -1;
    return push(c, v);
}

/* SETITEM(S) onto a dict below `base`, items at stack[base..sp). */
static int set_items(ctx_t *c, size_t base, const char *op)
{
    if ((c->sp - base) % 2 != 0)
        return fail(c, "%s with an odd number of keys and values", op);
    if (base <= frame_base(c))
        return fail(c, "%s without a dict to fill", op);
    ga_pk_value_t *d = c->stack[base - 1];
    if (d->type != GA_PK_DICT)
        return fail(c, "%s on a %s, not a dict", op, ga_pk_type_name(d->type));
    return extend(c, d, base);
}

static int append_items(ctx_t *c, size_t base, const char *op)
{
    if (base <= frame_base(c))
        return fail(c, "%s without a list to extend", op);
    ga_pk_value_t *l = c->stack[base - 1];
    if (l->type != GA_PK_LIST)
        return fail(c, "%s on a %s, not a list", op, ga_pk_type_name(l->type));
    return extend(c, l, base);
}

static int memo_put(ctx_t *c, uint64_t idx)
{
    ga_pk_value_t *v = top(c);
    if (v == NULL)
        return -1;
    if (idx >= c->max_memo)
        return fail(c, "memo index %llu is out of range for this file", (unsigned long long)idx);
    size_t old = c->memo_cap;
    if (grow(c, (void **)&c->memo, &c->memo_cap, (size_t)idx + 1, sizeof(*c->memo)) != 0)
        return -1;
    if (c->memo_cap > old)
        memset(c->memo + old, 0, (c->memo_cap - old) * sizeof(*c->memo));
    if (c->memo[idx] == NULL)
        c->memo_count++;
    c->memo[idx] = v;
    if (idx >= c->memo_n)
        c->memo_n = (size_t)idx + 1;
    return 0;
}

static int memo_get(ctx_t *c, uint64_t idx)
{
    if (idx >= c->memo_n || c->memo[idx] == NULL)
        return fail(c, "memo index %llu was never stored", (unsigned long long)idx);
    return push(c, c->memo[idx]);
}

/* LONG1 / LONG4: little-endian two's complement of n bytes. */
static int push_long(ctx_t *c, size_t n)
{
    if (need(c, n, "LONG") != 0)
        return -1;
    const uint8_t *p = c->buf + c->pos;
    c->pos += n;
    ga_pk_value_t *v;
    if (n <= 8) {
        uint64_t u = read_le(p, n);
        if (n > 0 && n < 8 && (p[n - 1] & 0x80))
            u |= ~(uint64_t)0 << (8 * n); /* sign-extend */
        v = new_value(c, GA_PK_INT);
        if (v != NULL)
            v->u.i = (int64_t)u;
    } else {
        v = new_value(c, GA_PK_BIGINT);
    }
    return push(c, v);
}

static int push_str(ctx_t *c, ga_pk_type_t t, size_t len_bytes, const char *what)
{
    if (need(c, len_bytes, what) != 0)
        return -1;
    uint64_t n = read_le(c->buf + c->pos, len_bytes);
    c->pos += len_bytes;
    if (n > c->len - c->pos)
        return fail(c, "truncated %s: needs %llu bytes, %zu left", what, (unsigned long long)n, c->len - c->pos);
    ga_pk_value_t *v = new_value(c, t);
    if (v == NULL)
        return -1;
    v->u.s.p = (const char *)c->buf + c->pos;
    v->u.s.n = (size_t)n;
    c->pos += (size_t)n;
    return push(c, v);
}

static int push_int(ctx_t *c, int64_t i)
{
    ga_pk_value_t *v = new_value(c, GA_PK_INT);
    if (v != NULL)
        v->u.i = i;
    return push(c, v);
}

/* Why an opcode outside the plain-data set is refused: each row's opcode
 * bytes (none is 0), and the reason. */
static const struct {
    const char *ops, *why;
} refusals[] = {
    {"c", "GLOBAL (a class or function reference)"},
    {"\x93", "STACK_GLOBAL (a class or function reference)"},
    {"R", "REDUCE (a call)"},
    {"b", "BUILD (object state)"},
    {"\x81", "NEWOBJ (an object)"},
    {"\x92", "NEWOBJ_EX (an object)"},
    {"i", "INST (an object)"},
    {"o", "OBJ (an object)"},
    {"\x82\x83\x84", "EXT (an extension-registry object)"},
    {"PQ", "PERSID (a persistent reference)"},
    {"\x96", "BYTEARRAY8 (a bytearray)"},
    {"\x97\x98", "an out-of-band buffer"},
    {"\x8f\x90\x91", "a set or frozenset"},
    {"ILSTUVFpg", "a text opcode of protocols 0-1"},
};

static const char *refusal(uint8_t op)
{
    for (size_t i = 0; op != 0 && i < sizeof(refusals) / sizeof(refusals[0]); i++)
        if (strchr(refusals[i].ops, op) != NULL)
            return refusals[i].why;
    return NULL;
}

#define NOT_MINE (-2) /* an op_* function does not handle this opcode */

/* The framing and stack opcodes: STOP, PROTO, FRAME, MARK, POP, POP_MARK,
 * DUP. Returns 1 at STOP, 0 to continue, -1 on error, NOT_MINE. */
static int op_control(ctx_t *c, uint8_t op)
{
    size_t base = 0;
    switch (op) {
    case '.': /* STOP */
        if (c->n_marks != 0 || c->sp != 1)
            return fail(c, "STOP with %zu values and %zu open MARKs (expected exactly one value)", c->sp, c->n_marks);
        c->doc->root = c->stack[0];
        return 1;
    case 0x80: /* PROTO: only as the first opcode (see ga_pickle_parse) */
        return fail(c, "PROTO in the middle of the pickle");
    case 0x95: { /* FRAME: a length prefix for buffering; the contents follow inline */
        if (need(c, 8, "FRAME") != 0)
            return -1;
        uint64_t n = read_le(c->buf + c->pos, 8);
        c->pos += 8;
        if (n > c->len - c->pos)
            return fail(c, "truncated FRAME: announces %llu bytes, %zu left", (unsigned long long)n, c->len - c->pos);
        return 0;
    }
    case '(': /* MARK */
        if (c->n_marks >= c->max_marks)
            return fail(c, "more than %zu nested MARKs", c->max_marks);
        if (grow(c, (void **)&c->marks, &c->marks_cap, c->n_marks + 1, sizeof(*c->marks)) != 0)
            return -1;
        c->marks[c->n_marks++] = c->sp;
        return 0;
    case '0': /* POP */ return pop(c) == NULL ? -1 : 0;
    case '1': /* POP_MARK */
        if (pop_mark(c, &base) != 0)
            return -1;
        c->sp = base;
        return 0;
    case '2': { /* DUP */ ga_pk_value_t *v = top(c); return v == NULL ? -1 : push(c, v);
    }
    default: return NOT_MINE;
    }
}

/* The scalars: None, True, False, the ints, BINFLOAT, str and bytes. */
static int op_scalar(ctx_t *c, uint8_t op)
{
    switch (op) {
    case 'N': return push(c, &v_none);
    case 0x88: return push(c, &v_true);
    case 0x89: return push(c, &v_false);
    case 'J': /* BININT: signed 4 bytes */
        if (need(c, 4, "BININT") != 0)
            return -1;
        c->pos += 4;
        return push_int(c, (int32_t)(uint32_t)read_le(c->buf + c->pos - 4, 4));
    case 'K': /* BININT1: unsigned 1 byte */
        if (need(c, 1, "BININT1") != 0)
            return -1;
        return push_int(c, c->buf[c->pos++]);
    case 'M': /* BININT2: unsigned 2 bytes */
        if (need(c, 2, "BININT2") != 0)
            return -1;
        c->pos += 2;
        return push_int(c, (int64_t)read_le(c->buf + c->pos - 2, 2));
    case 0x8a: /* LONG1 */
        if (need(c, 1, "LONG1") != 0)
            return -1;
        return push_long(c, c->buf[c->pos++]);
    case 0x8b: { /* LONG4: a signed 4-byte length */
        if (need(c, 4, "LONG4") != 0)
            return -1;
        int32_t n = (int32_t)(uint32_t)read_le(c->buf + c->pos, 4);
        c->pos += 4;
        if (n < 0)
            return fail(c, "LONG4 with a negative length");
        return push_long(c, (size_t)n);
    }
    case 'G': { /* BINFLOAT: big-endian IEEE 754 double */
        if (need(c, 8, "BINFLOAT") != 0)
            return -1;
        uint64_t u = 0;
        for (int i = 0; i < 8; i++)
            u = u << 8 | c->buf[c->pos + (size_t)i];
        c->pos += 8;
        ga_pk_value_t *v = new_value(c, GA_PK_FLOAT);
        if (v != NULL)
            memcpy(&v->u.f, &u, sizeof(double));
        return push(c, v);
    }
    case 0x8c: return push_str(c, GA_PK_STR, 1, "SHORT_BINUNICODE");
    case 'X': return push_str(c, GA_PK_STR, 4, "BINUNICODE");
    case 0x8d: return push_str(c, GA_PK_STR, 8, "BINUNICODE8");
    case 'C': return push_str(c, GA_PK_BYTES, 1, "SHORT_BINBYTES");
    case 'B': return push_str(c, GA_PK_BYTES, 4, "BINBYTES");
    case 0x8e: return push_str(c, GA_PK_BYTES, 8, "BINBYTES8");
    default: return NOT_MINE;
    }
}

/* The containers: empty dict, list and tuple, DICT, LIST, TUPLE from a MARK,
 * TUPLE1-3, SETITEM(S), APPEND(S). */
static int op_container(ctx_t *c, uint8_t op)
{
    size_t base = 0;
    switch (op) {
    case '}': return push(c, new_value(c, GA_PK_DICT));
    case ']': return push(c, new_value(c, GA_PK_LIST));
    case ')': return push(c, &v_empty_tuple);
    case 'd': /* DICT: a new dict from the pairs above MARK */
        if (pop_mark(c, &base) != 0)
            return -1;
        if ((c->sp - base) % 2 != 0)
            return fail(c, "DICT with an odd number of keys and values");
        return collect(c, GA_PK_DICT, base);
    case 'l': /* LIST */
        if (pop_mark(c, &base) != 0)
            return -1;
        return collect(c, GA_PK_LIST, base);
    case 't': /* TUPLE */
        if (pop_mark(c, &base) != 0)
            return -1;
        return collect(c, GA_PK_TUPLE, base);
    case 0x85:
    case 0x86:
    case 0x87: { /* TUPLE1..3 */
        size_t k = (size_t)(op - 0x84);
        if (c->sp - frame_base(c) < k)
            return fail(c, "TUPLE%zu with fewer than %zu values on the stack", k, k);
        return collect(c, GA_PK_TUPLE, c->sp - k);
    }
    case 's': /* SETITEM */
        if (c->sp - frame_base(c) < 2)
            return fail(c, "SETITEM with fewer than 2 values on the stack");
        return set_items(c, c->sp - 2, "SETITEM");
    case 'u': /* SETITEMS */
        if (pop_mark(c, &base) != 0)
            return -1;
        return set_items(c, base, "SETITEMS");
    case 'a': /* APPEND */
        if (c->sp - frame_base(c) < 1)
            return fail(c, "APPEND with an empty stack");
        return append_items(c, c->sp - 1, "APPEND");
    case 'e': /* APPENDS */
        if (pop_mark(c, &base) != 0)
            return -1;
        return append_items(c, base, "APPENDS");
    default: return NOT_MINE;
    }
}

/* The memo: MEMOIZE, BINPUT, LONG_BINPUT, BINGET, LONG_BINGET. */
static int op_memo(ctx_t *c, uint8_t op)
{
    switch (op) {
    case 0x94: return memo_put(c, c->memo_count); /* MEMOIZE */
    case 'q':                                     /* BINPUT */
        if (need(c, 1, "BINPUT") != 0)
            return -1;
        return memo_put(c, c->buf[c->pos++]);
    case 'r': /* LONG_BINPUT */
        if (need(c, 4, "LONG_BINPUT") != 0)
            return -1;
        c->pos += 4;
        return memo_put(c, read_le(c->buf + c->pos - 4, 4));
    case 'h': /* BINGET */
        if (need(c, 1, "BINGET") != 0)
            return -1;
        return memo_get(c, c->buf[c->pos++]);
    case 'j': /* LONG_BINGET */
        if (need(c, 4, "LONG_BINGET") != 0)
            return -1;
        c->pos += 4;
        return memo_get(c, read_le(c->buf + c->pos - 4, 4));
    default: return NOT_MINE;
    }
}

/* Execute one opcode. Returns 1 at STOP, 0 to continue, -1 on error. */
static int step(ctx_t *c)
{
    c->op_at = c->pos;
    if (c->pos >= c->len)
        return fail(c, "truncated: the pickle ends before its STOP opcode");
    uint8_t op = c->buf[c->pos++];
    int rc;
    if ((rc = op_control(c, op)) != NOT_MINE || (rc = op_scalar(c, op)) != NOT_MINE ||
        (rc = op_container(c, op)) != NOT_MINE || (rc = op_memo(c, op)) != NOT_MINE)
        return rc;
    const char *why = refusal(op);
    if (why != NULL)
        return fail(c, "opcode 0x%02x is %s, which a data snapshot never holds; refused", op, why);
    return fail(c, "unknown opcode 0x%02x", op);
}

void ga_pickle_free(ga_pickle_t *pk)
{
    if (pk == NULL)
        return;
    slab_t *s = pk->slabs;
    while (s != NULL) {
        for (size_t i = 0; i < s->used; i++) {
            ga_pk_type_t t = s->v[i].type;
            if (t == GA_PK_LIST || t == GA_PK_TUPLE || t == GA_PK_DICT)
                free(s->v[i].u.seq.items);
        }
        slab_t *next = s->next;
        free(s);
        s = next;
    }
    free(pk);
}

int ga_pickle_parse(const uint8_t *buf, size_t len, const ga_pickle_limits_t *limits, ga_pickle_t **out, char *err,
                    size_t errlen)
{
    ctx_t c = {.buf = buf, .len = len, .err = err, .errlen = errlen};
    *out = NULL;
    c.budget = limits && limits->max_bytes                  ? limits->max_bytes
               : len > (SIZE_MAX - ((size_t)64 << 20)) / 16 ? SIZE_MAX
                                                            : ((size_t)64 << 20) + 16 * len;
    c.max_marks = limits && limits->max_marks ? limits->max_marks : 100000;
    c.max_memo = limits && limits->max_memo ? limits->max_memo : len + 1;
    if (buf == NULL && len > 0)
        return fail(&c, "no input");
    if (len < 2 || buf[0] != 0x80)
        return fail(&c, "not a pickle of protocol 2-5 (it must start with the PROTO opcode 0x80)");
    if (buf[1] < 2 || buf[1] > 5)
        return fail(&c, "pickle protocol %u is not supported (only 2-5)", buf[1]);
    c.doc = calloc(1, sizeof(*c.doc));
    if (c.doc == NULL)
        return fail(&c, "out of host memory");
    c.doc->protocol = buf[1];
    c.pos = 2;
    int rc;
    while ((rc = step(&c)) == 0) {
    }
    free(c.stack);
    free(c.marks);
    free(c.memo);
    if (rc < 0) {
        ga_pickle_free(c.doc);
        return -1;
    }
    *out = c.doc;
    return 0;
}

const ga_pk_value_t *ga_pickle_root(const ga_pickle_t *pk)
{
    return pk ? pk->root : NULL;
}

int ga_pickle_protocol(const ga_pickle_t *pk)
{
    return pk ? pk->protocol : 0;
}
