// replay_fuzz: libFuzzer target for the replay engine (tools/engine) under
// the configurations galloc fit searches.
//
// Input: byte 0 picks the configurations: 0 mod 8, every point of fit's
// grid (ga_fit_grid for this trace: expandable segments x max_split_size_mb
// x roundup divisions x GC threshold when the trace sets a fraction); else
// 1 to 7 of them, chosen by that byte. Byte 1 picks the device size. Then
// each event is an opcode byte and its arguments: alloc (sizes from 512
// bytes to more than the device), free (on its stream, another or none),
// free_requested / free_completed (deferred frees), record_stream,
// stream_sync, empty_cache, set_fraction, an expected oom, a free of an
// unknown id, a duplicate alloc, tag_begin / tag_end / sleep / wake,
// annotate. The events are written as a galloc text trace and loaded as
// every command loads a trace (ga_job_add), then replayed by
// ga_replay_column on the "simwatch" sim device. Checked:
//   - after EVERY event (the engine's after_event hook): galloc_check
//     passes, the stats are coherent (reserved >= active >= allocated >= 0,
//     peaks >= currents), the device's used bytes equal reserved_bytes and
//     it saw no contract violation;
//   - each grid configuration is created, replays every event, and makes
//     no failed call other than out-of-memory (calls refused because a tag
//     is asleep aside), and the engine's final galloc_check passes;
//   - no leak: once the engine destroys the allocator, the device holds no
//     segment, mapping, reservation, event or host block (simwatch), and
//     LeakSanitizer finds no host leak.
#include <cinttypes>
#include <cstring>
#include <string>
#include <vector>

extern "C" {
#include <galloc/galloc.h>
#include "tests/reliability/simwatch.h"
#include "tools/engine/replay.h"
#include "tools/fit/fit.h"
#include "tools/job/job.h"
}

#include "fuzz/fuzz_util.h"

namespace {

const char kTarget[] = "replay_fuzz";
constexpr uint64_t MiB = uint64_t{1} << 20;
constexpr size_t kMaxEvents = 256; // bounds one input's time (x up to 120 configurations)

fuzz::MemFile file;

uint64_t Size(fuzz::Bytes &in, uint64_t memory)
{
    uint8_t cls = in.U8();
    uint32_t r = in.U16();
    switch (cls % 6) {
    case 0: return 1 + r % 512;
    case 1: return 1 + r * 16 % MiB;                     // small pool
    case 2: return MiB + 1 + r * 160 % (9 * MiB);        // large pool, shares 20 MiB segments
    case 3: return 10 * MiB + r * 1600 % (90 * MiB);     // own segments
    case 4: return memory / 8 + r * 4096 % (memory / 2); // a big share of the device, sometimes too much
    default: return 512 * (1 + r % 64);
    }
}

std::string Stream(fuzz::Bytes &in)
{
    static const char *const s[] = {"0", "7", "0x7f00aa00", "3"};
    return s[in.U8() % 4];
}

const char *Tags(uint8_t b)
{
    static const char *const t[] = {"t0", "t1", "t0,t1", "*"};
    return t[b % 4];
}

// The fuzzer's events as a galloc text trace (docs/trace-format.md).
std::string Trace(fuzz::Bytes &in, uint64_t memory, bool *tags)
{
    std::string t = "galloc-trace 1 device_memory " + std::to_string(memory) + "\n";
    std::vector<uint64_t> live, requested;
    uint64_t next = 1;
    *tags = false;
    auto take = [&](std::vector<uint64_t> &v) -> uint64_t {
        size_t i = in.U8() % v.size();
        uint64_t id = v[i];
        v[i] = v.back();
        v.pop_back();
        return id;
    };
    for (size_t i = 0; i < kMaxEvents && !in.Empty(); i++) {
        uint8_t op = in.U8();
        switch (op % 16) {
        case 0:
        case 1:
        case 2:
        case 3: {
            uint64_t size = Size(in, memory);
            t += "alloc " + std::to_string(next) + " " + std::to_string(size) + " " + Stream(in) + "\n";
            live.push_back(next++);
            break;
        }
        case 4:
        case 5:
            if (!live.empty()) {
                uint8_t how = in.U8();
                t += "free " + std::to_string(take(live)) + (how % 3 == 0 ? "" : " " + Stream(in)) + "\n";
            }
            break;
        case 6:
            if (!live.empty()) {
                uint64_t id = take(live);
                t += "free_requested " + std::to_string(id) + "\n";
                requested.push_back(id);
            }
            break;
        case 7:
            if (!requested.empty())
                t += "free_completed " + std::to_string(take(requested)) + "\n";
            break;
        case 8:
            if (!live.empty())
                t += "record_stream " + std::to_string(live[in.U8() % live.size()]) + " " + Stream(in) + "\n";
            break;
        case 9: t += "stream_sync " + Stream(in) + "\n"; break;
        case 10: t += "empty_cache\n"; break;
        case 11: {
            uint8_t f = in.U8();
            char frac[32]; // snprintf: std::to_string(double) calls vsnprintf through a pointer UBSan's
                           // function check cannot link without the C++ runtime
            std::snprintf(frac, sizeof frac, "%.4f", f >= 200 ? 1.0 : 0.05 + f / 210.0);
            t += std::string("set_fraction ") + frac + "\n";
            break;
        }
        case 12: t += "oom " + std::to_string(Size(in, memory)) + " " + Stream(in) + "\n"; break;
        case 13: // trace anomalies: a free of an id never allocated, an alloc of a live id
            if (in.U8() & 1 || live.empty())
                t += "free " + std::to_string(1000000 + in.U8()) + "\n";
            else
                t += "alloc " + std::to_string(live[in.U8() % live.size()]) + " 4096\n";
            break;
        case 14: {
            uint8_t b = in.U8(), c = in.U8();
            *tags = true;
            switch (b % 4) {
            case 0: t += std::string("tag_begin ") + (c & 1 ? "t1" : "t0") + "\n"; break;
            case 1: t += std::string("tag_end ") + (c & 1 ? "t1" : "t0") + "\n"; break;
            case 2:
                t += std::string("sleep ") + Tags(c) + (c & 4 ? std::string(" offload ") + Tags(c >> 3) : "") + "\n";
                break;
            default: t += std::string("wake ") + Tags(c) + "\n"; break;
            }
            break;
        }
        default: t += "annotate step " + std::to_string(i) + "\n"; break;
        }
    }
    return t;
}

[[noreturn]] void Fail(galloc_allocator_t *a, const char *what, uint64_t i)
{
    char msg[GALLOC_ERROR_MAX] = "", line[GALLOC_ERROR_MAX + 128];
    if (a != nullptr)
        galloc_last_error(a, msg, sizeof msg);
    std::snprintf(line, sizeof line, "after event %" PRIu64 ": %s", i, msg);
    fuzz::Die(kTarget, __FILE__, __LINE__, what, line);
}

// The engine's after_event hook: the allocator's invariants, event by event.
void AfterEvent(void *, galloc_allocator_t *a, uint64_t i)
{
    if (galloc_check(a) != GALLOC_OK)
        Fail(a, "galloc_check", i);
    galloc_stats_t st = {};
    st.struct_size = sizeof st;
    if (galloc_memory_stats(a, &st) != GALLOC_OK)
        Fail(a, "galloc_memory_stats", i);
    // A sleeping tag's blocks stay active while their memory is not reserved (galloc_sleep.h).
    galloc_sleep_stats_t ss = {};
    if (galloc_sleep_stats(a, &ss) != GALLOC_OK)
        Fail(a, "galloc_sleep_stats", i);
    if (st.reserved_bytes[GALLOC_STAT_ALL].current + (int64_t)ss.bytes_asleep <
        st.active_bytes[GALLOC_STAT_ALL].current)
        Fail(a, "stats: reserved + asleep >= active", i);
    for (int p = 0; p < GALLOC_STAT_POOLS; p++) {
        if (!((ss.bytes_asleep > 0 || st.reserved_bytes[p].current >= st.active_bytes[p].current) &&
              st.active_bytes[p].current >= st.allocated_bytes[p].current && st.allocated_bytes[p].current >= 0 &&
              st.reserved_bytes[p].peak >= st.reserved_bytes[p].current &&
              st.allocated_bytes[p].peak >= st.allocated_bytes[p].current && st.allocation[p].current >= 0))
            Fail(a, "stats: reserved >= active >= allocated >= 0, peaks >= currents", i);
    }
    ga_sim_counters_t c;
    if (ga_sim_counters(simwatch_last_state(), &c) != GALLOC_OK || c.violations != 0)
        Fail(a, "the sim device saw a contract violation", i);
    if ((int64_t)c.used_bytes != st.reserved_bytes[GALLOC_STAT_ALL].current)
        Fail(a, "device used bytes == reserved_bytes.all.current", i);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 3)
        return 0;
    fuzz::Bytes in(data, size);
    uint8_t pick = in.U8();
    static const uint64_t mems[] = {256 * MiB, 1024 * MiB, 4096 * MiB, 192 * MiB};
    uint64_t memory = mems[in.U8() % 4];
    bool tags = false;
    std::string text = Trace(in, memory, &tags);
    file.Put(text.data(), text.size());
    FUZZ_CHECK(simwatch_register() == GALLOC_OK, "");

    ga_job_t job = {};
    ga_job_opts_t jo = {};
    jo.format = GA_FORMAT_GALLOC;
    char err[1024] = "";
    if (text.find('\n') + 1 == text.size()) {
        // Every opcode was a no-op (a free with nothing live...): a trace of no events is
        // refused, since replaying nothing would say that it fits.
        FUZZ_CHECK(ga_job_add(&job, file.Path(), &jo, err, sizeof err) != 0, "a trace of no events loads");
        FUZZ_CHECK(std::strstr(err, "no events found") != nullptr, err);
        ga_job_free(&job);
        return 0;
    }
    FUZZ_CHECK(ga_job_add(&job, file.Path(), &jo, err, sizeof err) == 0, err); // a trace we wrote loads
    FUZZ_CHECK(job.n_units == 1 && job.units[0].memory == memory, "");
    ga_fit_job_t fj = {};
    fj.job = &job;
    ga_fit_job_init(&fj);
    static char confs[256][GA_FIT_CONF_MAX];
    size_t n = ga_fit_grid(&fj, confs, 256);
    FUZZ_CHECK(n >= 10, "fit's grid has at least expandable x 5 roundup settings");
    std::vector<size_t> which;
    if (pick % 8 == 0) {
        for (size_t i = 0; i < n; i++)
            which.push_back(i);
    } else {
        for (size_t k = 0; k < pick % 8; k++)
            which.push_back((pick / 8 + k * 37) % n);
    }

    const ga_job_unit_t *u = &job.units[0];
    for (size_t w : which) {
        std::string conf = "sim_capacity:" + std::to_string(memory) + ",sim_placement:descending";
        if (confs[w][0] != '\0')
            conf += std::string(",") + confs[w];
        ga_replay_opts_t o = {};
        o.backend = "simwatch";
        o.check = true;
        o.after_event = AfterEvent;
        ga_replay_spec_t spec = {conf.c_str(), false};
        ga_replay_column_t c = {};
        FUZZ_CHECK(ga_replay_column(u, &o, &spec, nullptr, &c) == 0, c.first_error);
        FUZZ_CHECK(c.create_status == GALLOC_OK, c.create_error);
        FUZZ_CHECK(c.events == u->n, conf.c_str());
        // Without tags every call but an allocation may only fail if galloc is wrong
        // (a malloc in a sleeping tag's scope is refused: GALLOC_E_ASLEEP).
        FUZZ_CHECK(c.errors == 0 || (tags && std::strstr(c.first_error, "galloc_check") == nullptr), c.first_error);
        FUZZ_CHECK(c.stats.reserved_bytes[GALLOC_STAT_ALL].peak >= c.stats.reserved_bytes[GALLOC_STAT_ALL].current, "");
        ga_sim_counters_t closed;
        FUZZ_CHECK(simwatch_last_close(&closed), "");
        FUZZ_CHECK(simwatch_counters_clean(&closed), conf.c_str()); // the allocator gave everything back
        ga_replay_column_release(&c);
    }
    ga_job_free(&job);
    return 0;
}
