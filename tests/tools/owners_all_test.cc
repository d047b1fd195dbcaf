// owners_all_test.cc: the owners' invariant (tools/engine/owners.h) on every
// trace in the repository and in shared/traces, under the trace's own
// settings and under expandable_segments:True: at every moment the sites'
// bytes sum to allocated_bytes.all.current, the segments' sizes to
// reserved_bytes.all.current, every block was sized by the allocator, and the
// peaks are the allocator's own. And on the five PyTorch 2.11 snapshots from
// an H200 (tests/gpu/capture_torch_snapshot.py): the top site at the reserved
// peak is that script's model(x) line, in the forward, with the backward's
// autograd nodes and the optimizer's line beside it.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/tools/job_util.h"
#include "tests/tools/shared_traces.h"
#include "tests/tools/tmpfiles.h"

extern "C" {
#include "tools/engine/owners.h"
#include "tools/engine/replay.h"
}

namespace {

std::string Runfile(const std::string &rel)
{
    const char *srcdir = std::getenv("TEST_SRCDIR");
    const char *ws = std::getenv("TEST_WORKSPACE");
    if (srcdir != nullptr && ws != nullptr)
        return std::string(srcdir) + "/" + ws + "/" + rel;
    return rel;
}

// The repository's traces: every file the readers take (tests/tools/data's
// refusals, torch_segments_idle and torch20_noaddr, and the H200 runs' JSON
// records are not traces).
const char *const kTraces[] = {
    "examples/fragmentation.trace",
    "examples/rmm_small.csv",
    "examples/torch_snapshot.pickle",
    "examples/fit/load_order.trace",
    "tests/tools/data/torch_segments_list.pickle",
    "tests/tools/data/torch20_snapshot.pickle",
    "tests/tools/data/shrinking_window.pickle",
    "tests/tools/data/capped_second_entry.pickle",
    "tests/tools/data/expandable_ring.trace",
    "tests/tools/data/deep_stacks.pickle",
    "tests/tools/data/h200/torch211_h200_full_default.pickle.gz",
    "tests/tools/data/h200/torch211_h200_full_expandable.pickle.gz",
    "tests/tools/data/h200/torch211_h200_full_mixed.pickle.gz",
    "tests/tools/data/h200/torch211_h200_midrun_default.pickle.gz",
    "tests/tools/data/h200/torch211_h200_midrun_expandable.pickle.gz",
};

const char *const kShared[] = {
    "kineto-hta-rank1-memory.json.gz",
    "kineto-resnet50-memory.pt.trace.json.gz",
    "umpire-devices.replay",
};

// Replays every unit of path under its own settings and expandable segments,
// checking each moment. Returns the moments checked.
size_t CheckTrace(const std::string &path)
{
    LoadedJob j(path);
    EXPECT_TRUE(j.ok) << path << ": " << j.error;
    size_t checked = 0;
    for (size_t k = 0; j.ok && k < j.units(); k++) {
        const ga_job_unit_t *u = j.unit(k);
        ga_replay_spec_t specs[2] = {ga_replay_default_spec(u), {"expandable_segments:True", false}};
        for (const ga_replay_spec_t &spec : specs) {
            ga_replay_opts_t o = {};
            o.owners = true;
            ga_replay_column_t c = {};
            EXPECT_EQ(ga_replay_column(u, &o, &spec, nullptr, &c), 0) << path;
            std::string where = path + " " + u->unit_label + " [" + (spec.recorded ? "recorded" : spec.conf) + "]";
            if (c.create_status != GALLOC_OK) {
                ga_replay_column_release(&c);
                continue;
            }
            EXPECT_NE(c.owners, nullptr) << where;
            if (c.owners == nullptr) {
                ga_replay_column_release(&c);
                continue;
            }
            const ga_owners_t &w = *c.owners;
            EXPECT_STREQ(w.error, "") << where;
            EXPECT_EQ(w.untracked, 0u) << where;
            std::vector<const ga_owners_moment_t *> ms = {&w.peak_allocated, &w.peak_reserved};
            for (size_t i = 0; i < w.n_ooms; i++)
                ms.push_back(&w.ooms[i]);
            for (const ga_owners_moment_t *m : ms) {
                if (!m->valid)
                    continue;
                char why[256] = "";
                EXPECT_TRUE(ga_owners_moment_check(m, why, sizeof why)) << where << ": " << why;
                checked++;
            }
            if (w.peak_reserved.valid) {
                EXPECT_EQ(w.peak_reserved.reserved, c.stats.reserved_bytes[GALLOC_STAT_ALL].peak) << where;
            }
            if (w.peak_allocated.valid) {
                EXPECT_LE(w.peak_allocated.allocated, c.stats.allocated_bytes[GALLOC_STAT_ALL].peak) << where;
            }
            EXPECT_EQ(w.n_ooms, c.ooms_total < GA_OWNERS_MAX_OOMS ? c.ooms_total : GA_OWNERS_MAX_OOMS) << where;
            ga_replay_column_release(&c);
        }
    }
    return checked;
}

TEST(OwnersEverywhere, RepositoryTraces)
{
    size_t moments = 0;
    for (const char *t : kTraces)
        moments += CheckTrace(Runfile(t));
    EXPECT_GT(moments, 2 * sizeof(kTraces) / sizeof(kTraces[0]));
}

TEST(OwnersEverywhere, SharedTraces)
{
    for (const char *name : kShared) {
        std::string why;
        std::string path = SharedTrace(name, &why);
        if (path.empty()) {
            if (std::getenv("GALLOC_SHARED_TRACES") != nullptr)
                ADD_FAILURE() << name << ": " << why;
            else
                GTEST_SKIP() << why;
        }
        EXPECT_GT(CheckTrace(path), 0u) << path;
    }
}

// The capture script's step(): model(x) (forward), loss.backward() (its
// allocations on autograd's thread: nodes), opt.step() (optimizer). The full
// runs recorded the script as it is in the repository (model(x) on line 35,
// opt.step() on 38); the mid-run windows a copy six lines shorter above
// step() (model(x) on 29: their stacks say so, git never held that copy),
// and their optimizer state was allocated before the window (the first step),
// without a stack: "(allocated before the trace)".
TEST(OwnersEverywhere, H200SnapshotsNameTheScriptsLines)
{
    for (const char *f : {"full_default", "full_expandable", "full_mixed", "midrun_default", "midrun_expandable"}) {
        bool full = std::string(f).rfind("full", 0) == 0;
        std::string forward_line = full ? "capture_torch_snapshot.py:35 step" : "capture_torch_snapshot.py:29 step";
        std::string path = Runfile(std::string("tests/tools/data/h200/torch211_h200_") + f + ".pickle.gz");
        LoadedJob j(path);
        ASSERT_TRUE(j.ok) << j.error;
        ga_replay_spec_t spec = ga_replay_default_spec(j.unit());
        ga_replay_opts_t o = {};
        o.owners = true;
        ga_replay_column_t c = {};
        ASSERT_EQ(ga_replay_column(j.unit(), &o, &spec, nullptr, &c), 0);
        ASSERT_NE(c.owners, nullptr);
        const ga_owners_t &w = *c.owners;
        const ga_owners_moment_t &m = w.peak_reserved;
        ASSERT_TRUE(m.valid) << f;
        ga_owner_site_row_t *rows = nullptr;
        size_t n = 0;
        ASSERT_EQ(ga_owners_sites(&m, w.index, &rows, &n), 0);
        ASSERT_GT(n, 0u) << f;
        std::string top = w.index->sites[rows[0].site].key;
        EXPECT_NE(top.find(forward_line), std::string::npos) << f << ": " << top;
        EXPECT_GT(rows[0].phase_bytes[GA_PHASE_FORWARD], 0) << f;
        free(rows);
        ga_owner_cell_t ph[GA_PHASES];
        ga_owners_phases(&m, w.index, ph);
        EXPECT_GT(ph[GA_PHASE_FORWARD].bytes, ph[GA_PHASE_OTHER].bytes) << f;
        EXPECT_GT(ph[GA_PHASE_BACKWARD].bytes, 0) << f;
        if (full) {
            EXPECT_GT(ph[GA_PHASE_OPTIMIZER].bytes, 0) << f;
            bool optimizer_line = false;
            for (size_t i = 0; i < w.index->n_sites; i++)
                optimizer_line |=
                    std::string(w.index->sites[i].key).find("capture_torch_snapshot.py:38 step") != std::string::npos;
            EXPECT_TRUE(optimizer_line) << f;
        } else {
            bool before = false;
            for (size_t i = 0; i < m.n_entries; i++)
                before |= w.index->sites[w.index->classes[m.entries[i].cls].site].kind == GA_SITE_BEFORE;
            EXPECT_TRUE(before) << f;
        }
        ga_replay_column_release(&c);
    }
}

} // namespace
