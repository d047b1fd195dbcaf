/*
 * site.c: see site.h; the rules are docs/owners.md's "Sites and phases", in
 * its order. One pass over the frames notes the candidates of every rule
 * (the first user Python frame, the first autograd node, the last operator,
 * the last torch or interpreter Python frame, the first range) and the
 * phases seen; the site is then the candidate of the first rule that has
 * one, so a stack is read once whatever rule names it, and the frame that
 * names it once more to write its key.
 *
 * Names are PyTorch's (checked against its source; docs/owners.md says
 * where): at::_ops::NAME::call / ::redispatch (its generated operator
 * entry points), torch::autograd::generated::XBackwardN::apply (the
 * generated autograd nodes), torch::autograd::Engine (the engine),
 * "autograd::engine::evaluate_function: NODE" (the range the engine
 * records around each node), "nn.Module: CLASS" and "FILE(LINE): FUNCTION"
 * (the profiler's Python tracer), "Optimizer.step#CLASS.step" (the
 * optimizers' record_function). Recorded strings are not NUL-terminated:
 * everything here works on (pointer, length).
 */
#include "tools/owners/site.h"

#include <string.h>

#include "tools/owners/site_file.h"

/* A byte string: recorded strings are (pointer, length), not NUL-terminated. */
typedef struct span {
    const char *p;
    size_t n;
} span_t;

static span_t span(const char *p, size_t n)
{
    span_t s = {p != NULL ? p : "", p != NULL ? n : 0};
    return s;
}

static span_t lit(const char *z)
{
    return span(z, strlen(z));
}

static bool starts(span_t s, const char *z)
{
    size_t n = strlen(z);
    return s.n >= n && memcmp(s.p, z, n) == 0;
}

static bool equals(span_t s, const char *z)
{
    return s.n == strlen(z) && memcmp(s.p, z, s.n) == 0;
}

static bool has_byte(span_t s, char c)
{
    return s.n > 0 && memchr(s.p, c, s.n) != NULL;
}

/* The index of z in s at or after from, or SIZE_MAX. */
static size_t find(span_t s, size_t from, const char *z)
{
    size_t n = strlen(z);
    for (size_t i = from; i + n <= s.n; i++)
        if (memcmp(s.p + i, z, n) == 0)
            return i;
    return SIZE_MAX;
}

/* The part of s after its last "::" outside template arguments (all of s
 * when it has none): "torch::autograd::CppNode<ns::Fn>" is "CppNode<ns::Fn>". */
static span_t last_component(span_t s)
{
    size_t end = find(s, 0, "<");
    for (size_t i = end == SIZE_MAX ? s.n : end; i >= 2; i--)
        if (s.p[i - 1] == ':' && s.p[i - 2] == ':')
            return span(s.p + i, s.n - i);
    return s;
}

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static bool is_letter(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static bool is_ident(char c)
{
    return is_letter(c) || is_digit(c) || c == '_';
}

/* ---- Python frames ---------------------------------------------------- */

/* A Python frame's place, whichever way the record spells it. */
typedef struct pyframe {
    span_t file, func;
    int64_t line;
} pyframe_t;

/* A Python file name: a .py path, or a pseudo-file ("<string>", "<stdin>"). */
static bool python_file(span_t f)
{
    return (f.n > 3 && memcmp(f.p + f.n - 3, ".py", 3) == 0) || (f.n > 1 && f.p[0] == '<');
}

/* The profiler's Python tracer names a Python function "FILE(LINE): FUNCTION"
 * (PyTorch's profiler_python.cpp); a range so named is a Python frame. */
static bool parse_python_range(span_t name, pyframe_t *out)
{
    for (size_t at = find(name, 0, "): "); at != SIZE_MAX; at = find(name, at + 1, "): ")) {
        size_t d = at;
        int64_t line = 0;
        while (d > 0 && is_digit(name.p[d - 1]))
            d--;
        if (d == at || d == 0 || name.p[d - 1] != '(' || at - d > 9)
            continue;
        for (size_t i = d; i < at; i++)
            line = line * 10 + (name.p[i] - '0');
        span_t file = span(name.p, d - 1);
        if (line <= 0 || !python_file(file))
            continue;
        out->file = file;
        out->line = line;
        out->func = span(name.p + at + 3, name.n - at - 3);
        return true;
    }
    return false;
}

/* Whether f is a Python frame: a Python file with a line, or a Python
 * tracer's range. C++ frames have line 0 (file "??", "" or a source path). */
static bool python_frame(const ga_frame_t *f, pyframe_t *out)
{
    span_t file = span(f->file, f->file_len);
    if (f->line > 0 && python_file(file)) {
        out->file = file;
        out->line = f->line;
        out->func = span(f->name, f->name_len);
        return true;
    }
    if (file.n == 0 && f->line == 0)
        return parse_python_range(span(f->name, f->name_len), out);
    return false;
}

/* Python frames that put an allocation in a phase: (file under torch/,
 * function or NULL for any). Functions checked in PyTorch's source. */
typedef struct py_rule {
    ga_phase_t phase;
    const char *rel;  /* the file, relative to torch's package */
    bool rel_prefix;  /* rel is a folder: every file under it */
    const char *func; /* NULL: any function */
} py_rule_t;

static const py_rule_t py_rules[] = {
    {GA_PHASE_BACKWARD, "autograd/__init__.py", false, "backward"},
    {GA_PHASE_BACKWARD, "autograd/__init__.py", false, "grad"},
    {GA_PHASE_BACKWARD, "_tensor.py", false, "backward"},
    {GA_PHASE_BACKWARD, "autograd/graph.py", false, "_engine_run_backward"},
    /* Activation checkpointing's recomputation: the saved-tensor unpack hook
     * (use_reentrant=False) and CheckpointFunction.backward (use_reentrant=True);
     * checkpoint() itself, in the forward, is not listed. */
    {GA_PHASE_BACKWARD, "utils/checkpoint.py", false, "unpack_hook"},
    {GA_PHASE_BACKWARD, "utils/checkpoint.py", false, "unpack_hook_with_error_cb"},
    {GA_PHASE_BACKWARD, "utils/checkpoint.py", false, "recompute_fn"},
    {GA_PHASE_BACKWARD, "utils/checkpoint.py", false, "backward"},
    {GA_PHASE_OPTIMIZER, "optim/", true, NULL},
    {GA_PHASE_OPTIMIZER, "nn/modules/module.py", false, "zero_grad"},
    {GA_PHASE_FORWARD, "nn/modules/module.py", false, "_call_impl"},
    {GA_PHASE_FORWARD, "nn/modules/module.py", false, "_wrapped_call_impl"},
};

/* Paths compare with '/' and '\\' alike (a Windows path's separators). */
static bool path_starts(span_t s, const char *z, size_t n)
{
    if (s.n < n)
        return false;
    for (size_t i = 0; i < n; i++) {
        char a = s.p[i] == '\\' ? '/' : s.p[i];
        if (a != z[i])
            return false;
    }
    return true;
}

static unsigned python_phases(const pyframe_t *pf, span_t rel)
{
    unsigned seen = 0;
    for (size_t i = 0; i < sizeof(py_rules) / sizeof(py_rules[0]); i++) {
        const py_rule_t *r = &py_rules[i];
        size_t n = strlen(r->rel);
        if (!path_starts(rel, r->rel, n) || (!r->rel_prefix && rel.n != n))
            continue;
        if (r->func == NULL || equals(pf->func, r->func))
            seen |= 1u << r->phase;
    }
    return seen;
}

/* ---- C++ frames and ranges -------------------------------------------- */

/* The class of an autograd node named by a C++ frame "...::CLASS::apply(...)"
 * or a range: a generated node (torch::autograd::generated::, "MulBackward0"),
 * any "*Backward<digit>..." class, AccumulateGrad (gradient buffers) or
 * CopySlices (an in-place op's backward). */
static bool node_class(span_t qualified, span_t cls)
{
    if (cls.n == 0)
        return false;
    if (starts(qualified, "torch::autograd::generated::"))
        return true;
    if (equals(cls, "AccumulateGrad") || equals(cls, "CopySlices"))
        return true;
    for (size_t at = find(cls, 0, "Backward"); at != SIZE_MAX; at = find(cls, at + 1, "Backward"))
        if (at + 8 < cls.n && is_digit(cls.p[at + 8]))
            return true;
    return false;
}

/* A C++ frame that is a node's apply: its class, or an empty span. */
static span_t cpp_node(span_t name)
{
    size_t paren = find(name, 0, "(");
    span_t q = span(name.p, paren == SIZE_MAX ? name.n : paren);
    span_t none = {"", 0};
    if (paren == SIZE_MAX || q.n < 9 || memcmp(q.p + q.n - 7, "::apply", 7) != 0)
        return none;
    span_t cls = last_component(span(q.p, q.n - 7));
    return node_class(q, cls) ? cls : none;
}

/* A C++ frame that is an operator's entry point, at::_ops::NAME::call(...)
 * or ::redispatch(...): the length of "at::_ops::NAME", or 0. */
static size_t cpp_op(span_t name)
{
    if (!starts(name, "at::_ops::"))
        return 0;
    size_t end = 10;
    while (end < name.n && is_ident(name.p[end]))
        end++;
    span_t rest = span(name.p + end, name.n - end);
    if (end == 10 || !(starts(rest, "::call(") || starts(rest, "::redispatch(")))
        return 0;
    return end;
}

static bool cpp_engine(span_t name)
{
    return starts(name, "torch::autograd::Engine::") || starts(name, "torch::autograd::python::PythonEngine::");
}

#define EVALUATE_FUNCTION "autograd::engine::evaluate_function: "

/* A range that names a node: the engine's "autograd::engine::evaluate_function:
 * NODE", or the node's own range ("MulBackward0", "torch::autograd::AccumulateGrad").
 * Its class (namespaces and a Windows "struct " dropped), or an empty span. */
static span_t range_node(span_t name)
{
    span_t none = {"", 0};
    bool engine = starts(name, EVALUATE_FUNCTION);
    span_t n = engine ? span(name.p + strlen(EVALUATE_FUNCTION), name.n - strlen(EVALUATE_FUNCTION)) : name;
    if (starts(n, "struct ") || starts(n, "class "))
        n = span(n.p + (n.p[0] == 's' ? 7 : 6), n.n - (n.p[0] == 's' ? 7 : 6));
    if (n.n == 0 || has_byte(n, ' ') || has_byte(n, '('))
        return none;
    span_t cls = last_component(n);
    if (engine)
        return cls; /* whatever the engine ran: a Python Function's node is "CLASSBackward" */
    return node_class(n, cls) ? cls : none;
}

/* An operator's range: "aten::mm", or any one-namespace "NS::NAME" ("c10d::allreduce_"). */
static bool range_op(span_t name)
{
    size_t sep = find(name, 0, "::");
    if (sep == SIZE_MAX || sep == 0 || sep + 2 >= name.n)
        return false;
    for (size_t i = 0; i < name.n; i++) /* identifiers and an overload's '.', one "::" */
        if (i != sep && i != sep + 1 && !is_ident(name.p[i]) && name.p[i] != '.')
            return false;
    return true;
}

/* The phase a label's first word names (skipping leading non-letters, so
 * "## forward ##" counts): forward/fwd, backward/bwd, optimizer/optim, any
 * case; GA_PHASES when none. */
static ga_phase_t word_phase(span_t s)
{
    static const struct {
        const char *word;
        ga_phase_t phase;
    } words[] = {
        {"forward", GA_PHASE_FORWARD}, {"fwd", GA_PHASE_FORWARD},         {"backward", GA_PHASE_BACKWARD},
        {"bwd", GA_PHASE_BACKWARD},    {"optimizer", GA_PHASE_OPTIMIZER}, {"optim", GA_PHASE_OPTIMIZER},
    };
    size_t b = 0;
    while (b < s.n && !is_letter(s.p[b]))
        b++;
    size_t e = b;
    while (e < s.n && is_letter(s.p[e]))
        e++;
    for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
        size_t n = strlen(words[i].word);
        if (e - b != n)
            continue;
        size_t k = 0;
        while (k < n && (s.p[b + k] | 0x20) == words[i].word[k])
            k++;
        if (k == n)
            return words[i].phase;
    }
    return GA_PHASES;
}

static unsigned label_phases(span_t name)
{
    unsigned seen = 0;
    ga_phase_t w = word_phase(name);
    if (w != GA_PHASES)
        seen |= 1u << w;
    if (starts(name, EVALUATE_FUNCTION) || range_node(name).n > 0)
        seen |= 1u << GA_PHASE_BACKWARD;
    if (starts(name, "Optimizer."))
        seen |= 1u << GA_PHASE_OPTIMIZER;
    if (starts(name, "nn.Module: "))
        seen |= 1u << GA_PHASE_FORWARD;
    return seen;
}

/* ---- keys ------------------------------------------------------------- */

/* Appends to a key, cutting it to GA_SITE_KEY_MAX with "..." at the end. */
typedef struct keybuf {
    char *buf;
    size_t len; /* bytes written, at most GA_SITE_KEY_MAX - 1 */
    bool cut;   /* something did not fit */
} keybuf_t;

static void put(keybuf_t *k, span_t s)
{
    size_t room = GA_SITE_KEY_MAX - 1 - k->len;
    size_t n = s.n < room ? s.n : room;
    memcpy(k->buf + k->len, s.p, n);
    k->len += n;
    if (n < s.n)
        k->cut = true;
    k->buf[k->len] = '\0';
}

static void put_int(keybuf_t *k, int64_t v)
{
    char digits[24];
    size_t n = sizeof(digits);
    uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    do {
        digits[--n] = (char)('0' + u % 10);
        u /= 10;
    } while (u != 0);
    if (v < 0)
        digits[--n] = '-';
    put(k, span(digits + n, sizeof(digits) - n));
}

/* A cut key ends "..." on a character boundary (never inside a UTF-8 sequence). */
static void finish(keybuf_t *k)
{
    if (!k->cut)
        return;
    size_t n = GA_SITE_KEY_MAX - 1 - 3;
    while (n > 0 && ((unsigned char)k->buf[n] & 0xC0) == 0x80)
        n--;
    memcpy(k->buf + n, "...", 4);
    k->len = n + 3;
}

static void set_key(ga_site_class_t *out, span_t a, span_t b, const char *sep)
{
    keybuf_t k = {out->key, 0, false};
    out->key[0] = '\0';
    put(&k, a);
    if (sep != NULL) {
        put(&k, lit(sep));
        put(&k, b);
    }
    finish(&k);
}

static void set_python_key(ga_site_class_t *out, const pyframe_t *pf)
{
    keybuf_t k = {out->key, 0, false};
    put(&k, pf->file);
    put(&k, lit(":"));
    put_int(&k, pf->line);
    put(&k, lit(" "));
    put(&k, pf->func);
    finish(&k);
}

/* ---- classification --------------------------------------------------- */

const char *ga_phase_name(ga_phase_t p)
{
    static const char *const names[GA_PHASES] = {"other", "forward", "backward", "optimizer"};
    return (unsigned)p < GA_PHASES ? names[p] : "?";
}

const char *ga_site_kind_name(ga_site_kind_t k)
{
    static const char *const names[] = {
        "code", "autograd node",    "op",      "torch", "range", "annotation", "allocator", "thread", "unknown",
        "none", "before the trace", "overflow"};
    return (unsigned)k < sizeof(names) / sizeof(names[0]) ? names[k] : "?";
}

static void set_class(ga_site_class_t *out, ga_site_kind_t kind, ga_phase_t phase, size_t frame)
{
    out->kind = kind;
    out->phase = phase;
    out->frame = frame;
    out->key[0] = '\0';
}

void ga_site_special(ga_site_kind_t kind, ga_site_class_t *out)
{
    const char *text;
    switch (kind) {
    case GA_SITE_NONE: text = "(no stack recorded)"; break;
    case GA_SITE_BEFORE: text = "(allocated before the trace)"; break;
    case GA_SITE_OVERFLOW: text = "(more distinct owners than the index holds)"; break;
    default:
        kind = GA_SITE_UNKNOWN;
        text = "(no Python frame, node or op in the stack)";
        break;
    }
    set_class(out, kind, GA_PHASE_OTHER, SIZE_MAX);
    set_key(out, lit(text), lit(""), NULL);
}

/* The first phase seen, in the order backward, optimizer, forward. */
static ga_phase_t first_phase(unsigned seen)
{
    if (seen & (1u << GA_PHASE_BACKWARD))
        return GA_PHASE_BACKWARD;
    if (seen & (1u << GA_PHASE_OPTIMIZER))
        return GA_PHASE_OPTIMIZER;
    if (seen & (1u << GA_PHASE_FORWARD))
        return GA_PHASE_FORWARD;
    return GA_PHASE_OTHER;
}

/* One frame of the record's first frame only: an annotation, an allocator, a thread. */
static void classify_label(const ga_stack_t *st, ga_site_class_t *out)
{
    ga_frame_t f0 = {0}, f1 = {0};
    st->frame(st->data, 0, &f0);
    span_t name = span(f0.name, f0.name_len);
    if (name.n == 0) {
        ga_site_special(GA_SITE_UNKNOWN, out);
        return;
    }
    switch (st->kind) {
    case GA_STACK_ANNOTATION: {
        ga_phase_t w = word_phase(name);
        set_class(out, GA_SITE_ANNOTATION, w == GA_PHASES ? GA_PHASE_OTHER : w, 0);
        set_key(out, name, lit(""), NULL);
        break;
    }
    case GA_STACK_ALLOCATOR:
        set_class(out, GA_SITE_ALLOCATOR, GA_PHASE_OTHER, 0);
        if (st->n > 1)
            st->frame(st->data, 1, &f1);
        set_key(out, name, span(f1.name, f1.name_len), f1.name_len > 0 ? ": " : NULL);
        break;
    default:
        set_class(out, GA_SITE_THREAD, GA_PHASE_OTHER, 0);
        set_key(out, name, lit(""), NULL);
        break;
    }
}

/* What the pass over a call stack or a profiler's ranges found. */
typedef struct scan {
    size_t user, node, op, torch, other_py, label; /* the frames each rule would name, SIZE_MAX if none */
    size_t op_len;                                 /* the op's key length (C++ frames: "at::_ops::NAME") */
    unsigned phases;                               /* 1 << ga_phase_t of every phase seen */
} scan_t;

static void scan_frame(const ga_stack_t *st, size_t i, scan_t *s)
{
    ga_frame_t f = {0};
    pyframe_t pf;
    st->frame(st->data, i, &f);
    span_t name = span(f.name, f.name_len);
    if (python_frame(&f, &pf)) {
        span_t rel = {"", 0};
        ga_py_owner_t owner = ga_site_file_owner(pf.file.p, pf.file.n, &rel.p, &rel.n);
        if (owner == GA_PY_USER && s->user == SIZE_MAX)
            s->user = i;
        if (owner == GA_PY_TORCH) {
            s->torch = i;
            s->phases |= python_phases(&pf, rel);
        }
        if (owner != GA_PY_USER)
            s->other_py = i;
        return;
    }
    /* A range, or a snapshot's annotation: no file, no line, not a C++ function. */
    bool label = st->kind == GA_STACK_RANGES || (f.file_len == 0 && f.line == 0 && !has_byte(name, '('));
    size_t op_len = cpp_op(name);
    if (op_len > 0) {
        s->op = i;
        s->op_len = op_len;
    } else if (label && range_op(name)) {
        s->op = i;
        s->op_len = name.n;
    }
    span_t node = label ? range_node(name) : cpp_node(name);
    if (node.n > 0) {
        s->phases |= 1u << GA_PHASE_BACKWARD;
        if (s->node == SIZE_MAX)
            s->node = i;
    }
    if (cpp_engine(name))
        s->phases |= 1u << GA_PHASE_BACKWARD;
    if (label) {
        s->phases |= label_phases(name);
        if (s->label == SIZE_MAX && name.n > 0 && op_len == 0 && !range_op(name))
            s->label = i;
    }
}

void ga_site_classify(const ga_stack_t *st, ga_site_class_t *out)
{
    if (st == NULL || st->kind == GA_STACK_NONE || st->n == 0 || st->frame == NULL) {
        ga_site_special(GA_SITE_NONE, out);
        return;
    }
    if (st->kind == GA_STACK_ANNOTATION || st->kind == GA_STACK_ALLOCATOR || st->kind == GA_STACK_THREAD) {
        classify_label(st, out);
        return;
    }
    if (st->kind != GA_STACK_FRAMES && st->kind != GA_STACK_RANGES) {
        ga_site_special(GA_SITE_UNKNOWN, out);
        return;
    }
    scan_t s = {SIZE_MAX, SIZE_MAX, SIZE_MAX, SIZE_MAX, SIZE_MAX, SIZE_MAX, 0, 0};
    for (size_t i = 0; i < st->n; i++)
        scan_frame(st, i, &s);
    ga_phase_t phase = first_phase(s.phases);

    ga_frame_t f = {0};
    pyframe_t pf;
    size_t py = s.user != SIZE_MAX ? s.user : s.torch != SIZE_MAX ? s.torch : s.other_py;
    if (s.user != SIZE_MAX || (s.node == SIZE_MAX && s.op == SIZE_MAX && py != SIZE_MAX)) {
        st->frame(st->data, py, &f);
        python_frame(&f, &pf);
        set_class(out, s.user != SIZE_MAX ? GA_SITE_CODE : GA_SITE_TORCH, phase, py);
        set_python_key(out, &pf);
    } else if (s.node != SIZE_MAX) {
        st->frame(st->data, s.node, &f);
        span_t name = span(f.name, f.name_len);
        bool label = st->kind == GA_STACK_RANGES || (f.file_len == 0 && f.line == 0 && !has_byte(name, '('));
        set_class(out, GA_SITE_NODE, phase, s.node);
        set_key(out, label ? range_node(name) : cpp_node(name), lit(""), NULL);
    } else if (s.op != SIZE_MAX) {
        st->frame(st->data, s.op, &f);
        set_class(out, GA_SITE_OP, phase, s.op);
        set_key(out, span(f.name, s.op_len), lit(""), NULL);
    } else if (s.label != SIZE_MAX) {
        st->frame(st->data, s.label, &f);
        set_class(out, GA_SITE_RANGE, phase, s.label);
        set_key(out, span(f.name, f.name_len), lit(""), NULL);
    } else {
        ga_site_special(GA_SITE_UNKNOWN, out);
        out->phase = phase;
    }
}
