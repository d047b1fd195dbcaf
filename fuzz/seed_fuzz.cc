// seed_fuzz: libFuzzer target for what galloc rebuilds of the memory a trace
// held before its first event: the allocator state at a mid-run snapshot's
// first entry (tools/snapshot/seed.h), seeding a fresh allocator with it
// (ga_seed_apply), the stand-ins a profiler trace's totals seed (the Kineto
// reader's prologue, GA_EV_RESERVE), and the memory-fraction cap inferred
// from capped oom entries (ga_replay_infer_cap).
//
// Input: byte 0: bit 0 forces the torch reader (else the format is detected,
// so profiler traces come in too); bit 1 seeds a configuration with
// expandable_segments:True besides the recorded one. The rest is the file
// (gzip or not), loaded as every command loads a trace (ga_job_add).
// Checked, for each unit (up to 4):
//   - a refusal is clean: loading fails with a message, or a mid-run unit
//     that could not be rebuilt says why (seed_error);
//   - a rebuilt state is well formed: segments in address order, not
//     overlapping; each tiled by its pieces in address order; the counts of
//     live and pending pieces are the seed's own;
//   - seeding a fresh allocator either fails with a message or leaves one
//     that galloc_check accepts, whose device holds exactly reserved_bytes,
//     with every live block that is not a pending free mapped by its trace id;
//     either way destroying it leaves nothing on the device;
//   - replaying the seeded job's first 64 events (the recorded settings, at
//     the recorded addresses, under the inferred cap when there is one) passes
//     galloc_check and the device checks after every event;
//   - an inferred cap is a range of whole steps within the device: low < high.
// With GALLOC_FUZZ_VERBOSE set, each unit's figures (events, device, whether
// it starts mid-run and was rebuilt, its start kind, capped OOMs), each
// seeding's outcome and each inferred cap go to stderr: what a seed reaches.
#include <cinttypes>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>

extern "C" {
#include <galloc/galloc.h>
#include "tests/reliability/simwatch.h"
#include "tools/engine/replay.h"
#include "tools/idmap.h"
#include "tools/job/job.h"
#include "tools/snapshot/seed.h"
}

#include "fuzz/fuzz_util.h"

namespace {

const char kTarget[] = "seed_fuzz";
constexpr size_t kMaxUnits = 4;
constexpr uint64_t kFirstEvents = 64;
constexpr uint64_t kStep = uint64_t{2} << 20;

fuzz::MemFile file;

[[noreturn]] void Fail(galloc_allocator_t *a, const char *what, const char *where)
{
    char msg[GALLOC_ERROR_MAX] = "", line[GALLOC_ERROR_MAX + 256];
    if (a != nullptr)
        galloc_last_error(a, msg, sizeof msg);
    std::snprintf(line, sizeof line, "%s: %s", where, msg);
    fuzz::Die(kTarget, __FILE__, __LINE__, what, line);
}

// The allocator's invariants and the device's books (ctx: non-NULL when the
// device is simwatch's, whose counters can be read).
void Invariants(galloc_allocator_t *a, bool watched, const char *where)
{
    if (galloc_check(a) != GALLOC_OK)
        Fail(a, "galloc_check", where);
    galloc_stats_t st = {};
    st.struct_size = sizeof st;
    if (galloc_memory_stats(a, &st) != GALLOC_OK)
        Fail(a, "galloc_memory_stats", where);
    if (!(st.reserved_bytes[GALLOC_STAT_ALL].current >= st.active_bytes[GALLOC_STAT_ALL].current &&
          st.active_bytes[GALLOC_STAT_ALL].current >= st.allocated_bytes[GALLOC_STAT_ALL].current &&
          st.allocated_bytes[GALLOC_STAT_ALL].current >= 0))
        Fail(a, "stats: reserved >= active >= allocated >= 0", where);
    if (!watched)
        return;
    ga_sim_counters_t c;
    if (ga_sim_counters(simwatch_last_state(), &c) != GALLOC_OK || c.violations != 0)
        Fail(a, "the sim device saw a contract violation", where);
    if ((int64_t)c.used_bytes != st.reserved_bytes[GALLOC_STAT_ALL].current)
        Fail(a, "device used bytes == reserved_bytes.all.current", where);
}

void AfterEvent(void *ctx, galloc_allocator_t *a, uint64_t i)
{
    char where[64];
    std::snprintf(where, sizeof where, "after event %" PRIu64, i);
    Invariants(a, ctx != nullptr, where);
}

void ExpectDeviceEmpty(const char *what)
{
    ga_sim_counters_t c;
    FUZZ_CHECK(simwatch_last_close(&c), what);
    FUZZ_CHECK(simwatch_counters_clean(&c), what);
}

// The rebuilt state's shape (seed.h).
void CheckShape(const ga_seed_t &s)
{
    uint64_t live = 0, pending = 0;
    for (size_t i = 0; i < s.n_seg; i++) {
        const ga_seed_segment_t &g = s.seg[i];
        char d[160];
        std::snprintf(d, sizeof d, "segment %zu of %zu: 0x%" PRIx64 ", %" PRIu64 " bytes, %zu pieces%s", i, s.n_seg,
                      g.addr, g.size, g.n, g.expandable ? ", expandable" : "");
        FUZZ_CHECK(g.first <= s.n_pc && g.n <= s.n_pc - g.first, "pieces inside the table");
        // seed.c takes a file's segments as they come: one of 0 bytes (a segment_free of size 0), one
        // whose end wraps, or one overlapping the one before are garbage it passes on (seeding is then
        // judged by galloc_check below); the others are in address order and tiled by their pieces.
        FUZZ_CHECK(i == 0 || g.addr >= s.seg[i - 1].addr, d); // segments in address order
        if (g.size == 0 || g.addr + g.size < g.addr) {
            FUZZ_CHECK(g.n == 0, d);
            continue;
        }
        uint64_t at = g.addr;
        for (size_t k = g.first; k < g.first + g.n; k++) {
            const ga_seed_piece_t &pc = s.pc[k];
            if (pc.addr != at || pc.size == 0) { // pieces tile the segment in address order
                char e[320];
                std::snprintf(e, sizeof e,
                              "%s: piece %zu at 0x%" PRIx64 ", %" PRIu64 " bytes%s, expected at 0x%" PRIx64, d,
                              k - g.first, pc.addr, pc.size, pc.live ? ", live" : "", at);
                FUZZ_CHECK(pc.addr == at && pc.size > 0, e);
            }
            FUZZ_CHECK(!pc.pending || pc.live, "a pending piece is live");
            at += pc.size;
            live += pc.live;
            pending += pc.pending;
        }
        FUZZ_CHECK(at == g.addr + g.size, d); // pieces cover the segment
    }
    FUZZ_CHECK(live == s.live_blocks && pending == s.pending_blocks, "the seed's counts");
}

std::string Capacity(const ga_job_unit_t *u)
{
    return "sim_capacity:" + std::to_string(u->memory) + ",sim_placement:recorded";
}

// Seed a fresh allocator under conf: a state galloc_check accepts, or a clean refusal.
void Apply(const ga_job_unit_t *u, const std::string &conf)
{
    galloc_allocator_t *a = nullptr;
    char err[GALLOC_ERROR_MAX] = "";
    galloc_status_t st =
        galloc_allocator_create_ex("simwatch", u->device, conf.c_str(), GALLOC_CREATE_NO_ENV, &a, err, sizeof err);
    if (st != GALLOC_OK) { // a recorded setting galloc cannot take, or a device index sim has not
        FUZZ_CHECK(err[0] != '\0', conf.c_str());
        return;
    }
    ga_idmap_t map;
    ga_idmap_init(&map);
    char why[1024] = "";
    int rc = ga_seed_apply(a, &map, &u->seed, why, sizeof why, nullptr);
    if (std::getenv("GALLOC_FUZZ_VERBOSE") != nullptr)
        std::fprintf(stderr, "seeding under %s: %d %s\n", conf.c_str(), rc, why);
    if (rc != 0) {
        FUZZ_CHECK(why[0] != '\0', "a failed seeding says why");
        Invariants(a, true, "after a failed seeding");
    } else {
        Invariants(a, true, "after seeding");
        std::set<uint64_t> ids;
        for (size_t k = 0; k < u->seed.n_pc; k++)
            if (u->seed.pc[k].live && !u->seed.pc[k].pending)
                ids.insert(u->seed.pc[k].addr);
        FUZZ_CHECK(ga_idmap_size(&map) == ids.size(), "every live block is mapped by its trace id");
        for (uint64_t id : ids) {
            ga_idmap_val_t v;
            FUZZ_CHECK(ga_idmap_get(&map, id, &v) && v.ptr != nullptr, "a live block's id maps to a block");
        }
    }
    ga_idmap_free(&map);
    galloc_allocator_destroy(a);
    ExpectDeviceEmpty("seeded allocator destroyed");
}

// The first events replayed from the seeded state (the engine applies the
// seed), under the cap range when the unit has one.
void ReplayFirst(const ga_job_unit_t *u)
{
    const char *recorded = ga_job_recorded(u);
    std::string conf = Capacity(u);
    if (recorded != nullptr && recorded[0] != '\0')
        conf += std::string(",") + recorded;
    bool capped = u->cap.inferred;
    ga_replay_opts_t o = {};
    o.backend = capped ? nullptr : "simwatch"; // under a cap the engine sizes sim itself
    o.check = true;
    o.stop_after_events = kFirstEvents;
    o.after_event = AfterEvent;
    o.after_event_ctx = capped ? nullptr : (void *)1;
    ga_replay_spec_t spec = {capped ? recorded : conf.c_str(), true};
    ga_replay_column_t c = {};
    FUZZ_CHECK(ga_replay_column(u, &o, &spec, nullptr, &c) == 0, c.first_error);
    if (c.create_status == GALLOC_OK) {
        FUZZ_CHECK(std::strstr(c.first_error, "galloc_check") == nullptr, c.first_error);
        if (!capped)
            ExpectDeviceEmpty("replay's allocator destroyed");
    }
    ga_replay_column_release(&c);
}

void CheckCap(ga_job_unit_t *u)
{
    if (u->cap.capped_ooms == 0)
        return;
    ga_replay_infer_cap(u, nullptr, false);
    if (std::getenv("GALLOC_FUZZ_VERBOSE") != nullptr)
        std::fprintf(stderr, "cap: inferred %d [%" PRIu64 ", %" PRIu64 ") %s\n", u->cap.inferred, u->cap.low,
                     u->cap.high, u->cap.why);
    if (u->cap.inferred) {
        FUZZ_CHECK(u->cap.low < u->cap.high && u->cap.high <= u->memory, "the cap range lies within the device");
        FUZZ_CHECK(u->cap.low % kStep == 0 && u->cap.high % kStep == 0, "the cap range is in whole steps");
    } else {
        FUZZ_CHECK(u->cap.why[0] != '\0', "an uninferred cap says why");
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    FUZZ_CHECK(simwatch_register() == GALLOC_OK, "");
    uint8_t how = data[0];
    file.Put(data + 1, size - 1);
    ga_job_t job = {};
    ga_job_opts_t jo = {};
    jo.format = how & 1 ? GA_FORMAT_TORCH : GA_FORMAT_AUTO;
    char err[1024] = "";
    if (ga_job_add(&job, file.Path(), &jo, err, sizeof err) != 0) {
        FUZZ_CHECK(err[0] != '\0', "a refused file says why");
        ga_job_free(&job);
        return 0;
    }
    static const bool verbose = std::getenv("GALLOC_FUZZ_VERBOSE") != nullptr; // what a seed exercises
    for (size_t i = 0; i < job.n_units && i < kMaxUnits; i++) {
        ga_job_unit_t *u = &job.units[i];
        FUZZ_CHECK(u->memory > 0, "");
        if (verbose)
            std::fprintf(stderr,
                         "unit %zu (%s): %zu events, device %d, memory %" PRIu64
                         ", midrun %d, seeded %d (%s), start %d, capped ooms %" PRIu64 "\n",
                         i, u->label, u->n, u->device, u->memory, u->midrun, u->seeded, u->seed_error,
                         (int)u->notes.start.kind, u->cap.capped_ooms);
        if (u->midrun && !u->seeded)
            FUZZ_CHECK(u->seed_error[0] != '\0', "a mid-run snapshot that cannot be rebuilt says why");
        // sim takes capacities up to INT64_MAX and devices below GA_SIM_MAX_DEVICES
        bool sim_fits = u->memory <= (uint64_t)INT64_MAX && u->device >= 0 && u->device < GA_SIM_MAX_DEVICES;
        if (u->seeded) {
            CheckShape(u->seed);
            if (sim_fits) {
                const char *recorded = ga_job_recorded(u);
                std::string conf = Capacity(u);
                if (recorded != nullptr && recorded[0] != '\0')
                    conf += std::string(",") + recorded;
                Apply(u, conf);
                if (how & 2)
                    Apply(u, Capacity(u) + ",expandable_segments:True");
            }
        }
        if (!sim_fits)
            continue;
        CheckCap(u);
        ReplayFirst(u);
    }
    ga_job_free(&job);
    return 0;
}
