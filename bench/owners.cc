// owners.cc: what attributing memory to its owners costs (docs/owners.md,
// "Cost"): the replay engine (tools/engine, the replay galloc replay and
// galloc fit make) over the same generated training trace, once without
// owners and once with them, side by side in one run:
//
//   owners/<off|on>/<events>/real_time
//
// The trace is GPT-2 125M, mixed precision, batch 8, sequence length 1024
// (bench/traces.h's "125M" fixed preset), written as a galloc text trace with
// the generator's phase annotations ("forward block 3", "optimizer", ...: the
// sites), cut at `events` alloc/free events, and loaded once as the commands
// load it (tools/job: the owners index is built there, outside the timing).
// One iteration replays the whole unit under PyTorch's defaults on an 80 GiB
// sim device (ga_replay_column), allocator creation and teardown included.
// Counters: events per second, the sites and owner classes of the trace, and
// the host memory the owners took (the index and, at its largest, the
// tracker), which follows the sites and live blocks, not the events.
#include <benchmark/benchmark.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <unistd.h>

#include "bench/traces.h"

extern "C" {
#include "tools/engine/owners.h"
#include "tools/engine/replay.h"
#include "tools/job/job.h"
}

namespace bench {
namespace {

struct Writer {
    FILE *f = nullptr;
    size_t events = 0, max_events = 0;
};

int Write(void *ctx, const ga_gen_event_t *ev)
{
    Writer *w = static_cast<Writer *>(ctx);
    if (ev->op == GA_GEN_ANNOTATE) {
        std::fprintf(w->f, "annotate %s\n", ev->text);
        return 0;
    }
    if (ev->op == GA_GEN_ALLOC)
        std::fprintf(w->f, "alloc %" PRIu64 " %" PRIu64 "\n", ev->id, ev->size);
    else if (ev->op == GA_GEN_FREE)
        std::fprintf(w->f, "free %" PRIu64 "\n", ev->id);
    else
        return 0;
    return ++w->events >= w->max_events ? 1 : 0;
}

// The trace of `events` alloc/free events, loaded (once per size).
struct Loaded {
    ga_job_t job = {};
    explicit Loaded(size_t events)
    {
        char path[] = "/tmp/galloc-bench-owners-XXXXXX";
        int fd = mkstemp(path);
        if (fd < 0)
            std::abort();
        Writer w;
        w.f = fdopen(fd, "w");
        w.max_events = events;
        std::fprintf(w.f, "galloc-trace 1 device_memory 80GiB\n");
        ga_gen_model_t m = Model("125M", false, 1000000);
        char err[512];
        if (w.f == nullptr || ga_gen_transformer(&m, Write, &w, err, sizeof err) < 0) {
            std::fprintf(stderr, "bench: generating the owners trace failed\n");
            std::abort();
        }
        std::fclose(w.f);
        ga_job_opts_t o = {};
        if (ga_job_add(&job, path, &o, err, sizeof err) != 0) {
            std::fprintf(stderr, "bench: %s\n", err);
            std::abort();
        }
        unlink(path);
    }
    ~Loaded() { ga_job_free(&job); }
};

const ga_job_unit_t *Unit(size_t events)
{
    static std::map<size_t, std::unique_ptr<Loaded>> cache;
    std::unique_ptr<Loaded> &l = cache[events];
    if (!l)
        l = std::make_unique<Loaded>(events);
    return &l->job.units[0];
}

void BM_Owners(benchmark::State &state, bool owners)
{
    const ga_job_unit_t *u = Unit(static_cast<size_t>(state.range(0)));
    ga_replay_opts_t o = {};
    o.owners = owners;
    ga_replay_spec_t spec = {"", false};
    uint64_t track = 0, ooms = 0;
    for (auto _ : state) {
        ga_replay_column_t c = {};
        if (ga_replay_column(u, &o, &spec, nullptr, &c) != 0 || c.errors != 0) {
            state.SkipWithError("the replay failed");
            ga_replay_column_release(&c);
            break;
        }
        ooms = c.ooms_total;
        if (c.owners != nullptr)
            track = c.owners->track_bytes;
        state.PauseTiming();
        ga_replay_column_release(&c);
        state.ResumeTiming();
    }
    state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(u->n));
    state.counters["events"] = static_cast<double>(u->n);
    state.counters["ooms"] = static_cast<double>(ooms);
    state.counters["sites"] = static_cast<double>(u->owners.n_sites);
    state.counters["classes"] = static_cast<double>(u->owners.n_classes);
    state.counters["index_bytes"] = static_cast<double>(ga_owners_index_bytes(&u->owners));
    state.counters["track_bytes"] = static_cast<double>(track);
}

int Register()
{
    for (bool owners : {false, true})
        benchmark::RegisterBenchmark(owners ? "owners/on" : "owners/off", BM_Owners, owners)
            ->Arg(100000)
            ->Arg(1000000)
            ->UseRealTime()
            ->Unit(benchmark::kMillisecond);
    return 0;
}

[[maybe_unused]] const int registered = Register();

} // namespace
} // namespace bench
