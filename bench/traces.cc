// traces.cc: see traces.h.
#include "bench/traces.h"

#include <cstdio>
#include <cstdlib>

#include "bench/galloc_util.h"

namespace bench {

ga_gen_model_t Model(const std::string &name, bool variable, uint32_t steps)
{
    ga_gen_model_t m;
    ga_gen_model_init(&m);
    if (name == "125M") {
        m.params = 125000000;
        m.layers = 12;
        m.d_model = 768;
        m.batch = 8;
    } else if (name == "350M") {
        m.params = 350000000;
        m.layers = 24;
        m.d_model = 1024;
        m.batch = 8;
    } else if (name == "1.3B") {
        m.params = 1300000000;
        m.layers = 24;
        m.d_model = 2048;
        m.batch = 4;
    } else {
        std::fprintf(stderr, "bench: unknown model preset %s\n", name.c_str());
        std::abort();
    }
    m.seq_len = 1024;
    m.mixed_precision = true;
    m.steps = steps;
    if (variable) {
        m.seq_min = 128;
        m.seq_max = 1024;
        m.seq_len = 0;
        m.seed = 1;
    }
    return m;
}

namespace {

struct Collect {
    Trace *t = nullptr;
    size_t max_events = 0;
    uint64_t live = 0;
    std::vector<uint64_t> sizes; // by id, to know what a free releases
};

int Emit(void *ctx, const ga_gen_event_t *ev)
{
    Collect *c = static_cast<Collect *>(ctx);
    if (ev->op == GA_GEN_ANNOTATE)
        return 0;
    if (ev->id >= UINT32_MAX) {
        std::fprintf(stderr, "bench: trace id %llu does not fit 32 bits\n", (unsigned long long)ev->id);
        std::abort();
    }
    uint32_t id = static_cast<uint32_t>(ev->id);
    if (id >= c->sizes.size())
        c->sizes.resize(static_cast<size_t>(id) * 2 + 1024, 0);
    if (ev->op == GA_GEN_ALLOC) {
        c->t->events.push_back({ev->size, id});
        c->t->allocs++;
        c->sizes[id] = ev->size;
        c->live += ev->size;
        if (c->live > c->t->peak_requested)
            c->t->peak_requested = c->live;
        if (id + 1 > c->t->ids)
            c->t->ids = id + 1;
    } else {
        c->t->events.push_back({0, id});
        c->live -= c->sizes[id];
    }
    return c->max_events != 0 && c->t->events.size() >= c->max_events ? 1 : 0;
}

} // namespace

Trace Generate(const ga_gen_model_t &m, size_t max_events)
{
    Trace t;
    if (max_events != 0)
        t.events.reserve(max_events);
    Collect c;
    c.t = &t;
    c.max_events = max_events;
    char err[256];
    int rc = ga_gen_transformer(&m, Emit, &c, err, sizeof err);
    if (rc < 0) {
        std::fprintf(stderr, "bench: ga_gen_transformer failed: %s\n", err);
        std::abort();
    }
    return t;
}

uint64_t Replay(galloc_allocator_t *a, const Trace &t, std::vector<void *> &ptrs, bool tolerate_oom)
{
    uint64_t failed = 0;
    void **p = ptrs.data();
    for (const TraceEvent &e : t.events) {
        galloc_status_t st;
        if (e.size != 0) {
            st = galloc_malloc(a, e.size, 0, &p[e.id]);
        } else {
            st = galloc_free(a, p[e.id]);
            p[e.id] = nullptr; // so FreeLeftovers sees only live blocks
        }
        if (__builtin_expect(st != GALLOC_OK, 0)) {
            if (!(tolerate_oom && st == GALLOC_E_OOM))
                Die(a, e.size != 0 ? "galloc_malloc (replay)" : "galloc_free (replay)", st);
            failed++;
        }
    }
    return failed;
}

void FreeLeftovers(galloc_allocator_t *a, std::vector<void *> &ptrs)
{
    for (void *&p : ptrs) {
        if (p == nullptr)
            continue;
        galloc_status_t st = galloc_free(a, p);
        if (st != GALLOC_OK)
            Die(a, "galloc_free (leftover)", st);
        p = nullptr;
    }
}

} // namespace bench
