"""ConfigResult.owners (galloc/owners.py): who holds the memory at each peak
and OOM, checked against the command's own --json and text report for the
same trace (`python -m galloc replay`: the installed package's command, built
with the library under test). Bytes are compared with the command's, never
written down here: until galloc_usable_size is real a block's bytes are its
request (Owners.untracked_blocks > 0), and the tests hold either way. Written
down are what does not depend on that: site names and kinds, phases, block
counts, events."""
import json
import pickle
import re
import os
import subprocess
import sys
import tempfile
import unittest

import galloc
from support import repo_file

# PyTorch 2.11 on an H200 (tests/gpu/capture_torch_snapshot.py); its stacks
# carry the path of the machine that recorded it, so names are matched by end.
H200 = repo_file("tests/tools/data/h200/torch211_h200_full_default.pickle.gz")
FRAG = repo_file("examples/fragmentation.trace")
LOAD_ORDER = repo_file("examples/fit/load_order.trace")
SNAPSHOT = repo_file("examples/torch_snapshot.pickle")
RMM = repo_file("examples/rmm_small.csv")
NO_STACKS = "nothing: the record carries no stacks"


def command(*args):
    """`galloc replay ARGS` as the installed command runs it: (exit status, stdout)."""
    p = subprocess.run([sys.executable, "-m", "galloc", "replay", *args], capture_output=True, text=True)
    return p.returncode, p.stdout


def moment_doc(m):
    """A Moment written back as the command's JSON writes it (sites by id)."""
    if m is None:
        return None
    q = m.request
    return {"kind": m.kind, "event": m.event, "line": m.line, "time_us": m.time_us, "allocated_bytes": m.allocated_bytes,
            "reserved_bytes": m.reserved_bytes, "active_bytes": m.active_bytes,
            "requested_bytes": m.requested_bytes,
            "request": None if q is None else {"bytes": q.bytes, "site": None if q.site is None else q.site.id,
                                               "phase": q.phase},
            "sites": [{"site": s.site.id, "bytes": s.bytes, "requested_bytes": s.requested_bytes,
                       "blocks": s.blocks, "kept_bytes": s.kept_bytes, "kept_blocks": s.kept_blocks,
                       "before_trace_blocks": s.before_trace_blocks, "mean_age_events": s.mean_age_events,
                       "mean_age_us": s.mean_age_us, "phases": s.phases} for s in m.sites],
            "phases": {p: {"bytes": v.bytes, "blocks": v.blocks} for p, v in m.phases.items()},
            "streams": [{"stream": s.stream, "bytes": s.bytes, "blocks": s.blocks} for s in m.streams],
            "pools": [{"pool": list(p.pool), "bytes": p.bytes, "blocks": p.blocks} for p in m.pools],
            "segments": None if m.segments is None else [
                {"address": s.address, "size": s.size, "free_bytes": s.free_bytes,
                 "largest_free_block": s.largest_free_block, "pending_free_bytes": s.pending_free_bytes,
                 "allocated_bytes": s.allocated_bytes, "blocks": s.blocks, "free_blocks": s.free_blocks,
                 "stream": s.stream, "pool": list(s.pool), "expandable": s.expandable, "small": s.small,
                 "pinned_by": [{"site": p.site.id, "phase": p.phase, "bytes": p.bytes} for p in s.pinned_by]}
                for s in m.segments],
            "error": m.error}


class SameAsTheCommand:
    """Mixed into a TestCase with PATH (and CONFS): the owners of
    galloc.replay equal the command's --json for the same trace, every
    moment's every figure, and hold owners.h's invariants."""
    CONFS = ()

    @classmethod
    def setUpClass(cls):
        args = [a for c in cls.CONFS for a in ("--conf", c)]
        cls.r = galloc.replay(cls.PATH, confs=list(cls.CONFS))
        rc, out = command("--json", *args, cls.PATH)
        cls.cli = json.loads(out)
        assert rc == cls.r.exit_status, (rc, cls.r.exit_status)

    def columns(self):
        """(TraceResult, its JSON in the command's document) per trace."""
        self.assertEqual(len(self.r.traces), len(self.cli["traces"]))
        return zip(self.r.traces, self.cli["traces"])

    def test_every_moment_equals_the_commands_json(self):
        for t, doc in self.columns():
            table = doc["owner_sites"]
            for c, rdoc in zip(t.results, doc["results"], strict=True):
                o, w = c.owners, rdoc["owners"]
                self.assertIsNotNone(o, c.label)
                self.assertEqual((o.keyed_by, o.overflow), (table["keyed_by"], table["overflow"]))
                self.assertEqual([(s.id, s.name, s.kind, [(f.file, f.line, f.name) for f in s.stack])
                                  for s in o.sites],
                                 [(s["id"], s["name"], s["kind"], [(f["file"], f["line"], f["name"])
                                                                   for f in s["stack"]]) for s in table["sites"]])
                self.assertEqual((o.error, o.untracked_blocks, o.t0_us), (w["error"], w["untracked_blocks"],
                                                                          w["t0_us"]))
                self.assertEqual(moment_doc(o.peak_allocated), w["peak_allocated"])
                self.assertEqual(moment_doc(o.peak_reserved), w["peak_reserved"])
                self.assertEqual([moment_doc(m) for m in o.ooms], w["ooms"])
                # Names, not only ids: each share's Site is the table's entry of its id.
                for m, mdoc in zip(o.moments, [w[k] for k in ("peak_allocated", "peak_reserved") if w[k]] +
                                   w["ooms"], strict=True):
                    self.assertEqual([s.site.name for s in m.sites],
                                     [table["sites"][s["site"]]["name"] for s in mdoc["sites"]])
                    self.assertEqual({p: v.bytes for p, v in m.phases.items()},
                                     {p: v["bytes"] for p, v in mdoc["phases"].items()})

    def test_moments_add_up(self):
        for t, _ in self.columns():
            for c in t.results:
                o = c.owners
                self.assertEqual(len(o.ooms), min(c.ooms_total, 16), c.label)
                self.assertEqual(o.first_oom, o.ooms[0] if o.ooms else None)
                if c.peak_reserved_bytes:
                    self.assertEqual(o.peak_reserved.reserved_bytes, c.peak_reserved_bytes)
                for m in o.moments:
                    held = sum(s.bytes for s in m.sites)
                    blocks = sum(s.blocks for s in m.sites)
                    if o.untracked_blocks == 0:
                        self.assertEqual(held, m.allocated_bytes, m.kind)  # owners.h's invariant
                    else:  # some blocks counted at their request
                        self.assertLessEqual(held, m.allocated_bytes, m.kind)
                    if m.requested_bytes is not None:
                        self.assertEqual(sum(s.requested_bytes for s in m.sites), m.requested_bytes, m.kind)
                    for by in (m.phases.values(), m.streams, m.pools):
                        self.assertEqual((sum(x.bytes for x in by), sum(x.blocks for x in by)), (held, blocks))
                    self.assertEqual(list(m.phases), list(galloc.owners.PHASES))
                    self.assertEqual([s.bytes for s in m.sites], sorted((s.bytes for s in m.sites), reverse=True))
                    for s in m.sites:
                        self.assertGreaterEqual(s.bytes, s.requested_bytes)
                        self.assertEqual(sum(s.phases.values()), s.bytes)
                        self.assertLessEqual((s.kept_blocks, s.before_trace_blocks, s.kept_bytes),
                                             (s.blocks, s.blocks, s.bytes))
                        self.assertIs(s.site, o.sites[s.site.id])
                        self.assertEqual(s.mean_age_events is None, s.before_trace_blocks == s.blocks)
                    if m.segments is not None:
                        self.assertEqual(sum(g.size for g in m.segments), m.reserved_bytes)
                if o.peak_allocated is not None and o.untracked_blocks == 0:
                    self.assertEqual(o.peak_allocated.allocated_bytes, c.peak_allocated_bytes)
                # Each OOM moment is the replay's OOM of the same event.
                for m, oom in zip(o.ooms, c.ooms):
                    self.assertEqual((m.kind, m.event, m.line, m.request.bytes, m.allocated_bytes,
                                      m.reserved_bytes),
                                     ("oom", oom.event, oom.line, oom.size, oom.allocated_bytes, oom.reserved_bytes))

    def test_the_columns_of_a_trace_share_its_sites(self):
        for t, _ in self.columns():
            first = t.results[0].owners.sites
            for c in t.results:
                self.assertIs(c.owners.sites, first)
                self.assertEqual([s.id for s in first], list(range(len(first))))

    def test_results_pickle(self):
        # Dask moves results between processes: they must pickle and compare equal.
        for t, _ in self.columns():
            for c in t.results:
                self.assertEqual(pickle.loads(pickle.dumps(c.owners)), c.owners)

    def test_owners_false_gives_none(self):
        r = galloc.replay(self.PATH, confs=list(self.CONFS), owners=False)
        self.assertEqual(r.exit_status, self.r.exit_status)
        for t, doc in zip(r.traces, r.raw["traces"], strict=True):
            self.assertIsNone(doc["owner_sites"])
            for c in t.results:
                self.assertIsNone(c.owners)
        self.assertEqual([c.peak_reserved_bytes for t in r.traces for c in t.results],
                         [c.peak_reserved_bytes for t in self.r.traces for c in t.results])


def text_rows(report, heading):
    """The site rows of the text report's table under the line starting with
    heading: (share %, blocks, phase, site) each, as printed."""
    lines = report.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip().startswith(heading))
    assert lines[start + 1].split() == ["allocated", "share", "blocks", "kept", "mean", "age", "phase", "site"]
    rows = []
    for line in lines[start + 2:]:
        if line.strip().startswith("phases:") or "more sites" in line:
            break
        cells = re.split(r"\s{2,}", line.strip())
        rows.append((cells[1], int(cells[2].replace(",", "")), cells[5], cells[6]))
    return rows


@unittest.skipIf(H200 is None, "tests/tools/data/h200/: not in a source tree")
class H200Snapshot(SameAsTheCommand, unittest.TestCase):
    """A real PyTorch 2.11 snapshot with stacks (docs/owners.md, "What the test snapshot shows")."""
    PATH = H200

    def test_the_forward_holds_the_peak_reserved(self):
        o = self.r["recorded"].owners
        self.assertEqual((o.keyed_by, o.overflow, o.error), ("recorded stacks", False, None))
        m = o.peak_reserved
        self.assertEqual((m.kind, m.event, m.request), ("peak_reserved", 2407, None))
        top = m.top(1)[0]
        self.assertTrue(top.site.name.endswith("capture_torch_snapshot.py:35 step"), top.site.name)
        self.assertEqual(str(top.site), top.site.name)
        self.assertEqual((top.site.kind, top.phase, top.blocks), ("code", "forward", 64))
        self.assertEqual(top.phases["forward"], top.bytes)
        self.assertEqual(max(m.by_phase(), key=m.by_phase().get), "forward")
        self.assertEqual(m.phases["forward"].bytes, m.by_phase()["forward"])
        # Its stack is the whole recorded one, innermost first, the user's frame in it.
        self.assertTrue(any(f.file.endswith("capture_torch_snapshot.py") and (f.line, f.name) == (35, "step")
                            for f in top.site.stack))
        self.assertEqual(top.site.stack[0].line, 0)  # a C++ frame: stacks="all"
        # The backward's allocations on autograd's thread: nodes and an op, all backward.
        backward = {s.site.name: s.site.kind for s in m.sites if s.phase == "backward" and s.site.kind != "code"}
        self.assertEqual(backward, {"at::_ops::sum_dim_IntList": "op", "ReluBackward0": "autograd node",
                                    "AddmmBackward0": "autograd node", "NativeLayerNormBackward0": "autograd node"})
        self.assertEqual(m.share("ReluBackward0").blocks, 1)
        self.assertIs(m.share(top.site), top)
        self.assertIsNone(m.share("no such site"))
        self.assertEqual(m.top(3), m.sites[:3])
        self.assertEqual(m.top(0), ())

    def test_the_oom_request_and_what_survives_it(self):
        c = self.r["recorded"]
        m = c.owners.first_oom
        self.assertEqual((m.kind, m.event, m.line), ("oom", 5732, c.ooms[0].line))
        self.assertTrue(m.request.site.name.endswith("capture_torch_snapshot.py:76 main"), m.request.site.name)
        self.assertEqual((m.request.phase, m.request.bytes), ("other", c.ooms[0].size))
        # Kept memory (weights, optimizer state) is what is left at the OOM.
        self.assertEqual([s.kept_blocks for s in m.sites], [s.blocks for s in m.sites])
        self.assertTrue(m.sites[0].site.name.endswith("capture_torch_snapshot.py:38 step"))
        self.assertEqual((m.sites[0].phase, m.sites[0].blocks), ("optimizer", 96))
        self.assertEqual(c.owners.moments, (c.owners.peak_allocated, c.owners.peak_reserved, m))

    def test_table_is_the_text_reports(self):
        o = self.r["recorded"].owners
        rc, report = command(H200)
        self.assertEqual(rc, self.r.exit_status)
        for heading, m in (("at the peak reserved", o.peak_reserved), ("at the OOM of event", o.first_oom)):
            rows = text_rows(report, heading)
            table = m.table()
            self.assertEqual(len(rows), min(len(table), 10), heading)
            # The share as the report computes it (100.0 * part / whole), so the rounding is the same.
            self.assertEqual(rows, [(f"{100.0 * b / m.allocated_bytes:.1f}%", blocks, phase, site)
                                    for b, _, blocks, _, _, _, phase, site in table[:len(rows)]])
            self.assertEqual([row[1] for row in table], [s.bytes / m.allocated_bytes for s in m.sites])
            self.assertEqual(len(table[0]), len(galloc.Moment.TABLE_COLUMNS))
        request = re.search(r"requested by (.*), (\w+); ", report)
        self.assertEqual(request.groups(), (o.first_oom.request.site.name, o.first_oom.request.phase))


class NoStacks(SameAsTheCommand, unittest.TestCase):
    """A galloc text trace without annotations records no stacks: one site,
    every byte other. 40 MiB live at the peak, then a 100 MiB request on a
    64 MiB device."""
    TRACE = ("galloc-trace 1 device_memory 64MiB\n"
             "alloc 1 20MiB\nalloc 2 20MiB\nfree 1\nalloc 3 100MiB\nalloc 4 4096\n")

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.PATH = os.path.join(cls.tmp.name, "no_stacks.trace")
        with open(cls.PATH, "w") as f:
            f.write(cls.TRACE)
        super().setUpClass()

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_keyed_by_nothing(self):
        o = self.r["defaults"].owners
        self.assertEqual((o.keyed_by, o.overflow, o.t0_us), (NO_STACKS, False, None))
        (site,) = o.sites
        self.assertEqual((site.id, site.name, site.kind, site.stack), (0, "(no stack recorded)", "none", ()))
        self.assertEqual([(m.kind, m.event, m.line) for m in o.moments],
                         [("peak_allocated", 1, 3), ("peak_reserved", 1, 3), ("oom", 3, 5)])
        for m in o.moments:
            self.assertEqual([s.site for s in m.sites], [site])
            self.assertEqual(m.by_phase()["other"], m.sites[0].bytes)
            self.assertEqual((m.sites[0].phase, m.sites[0].mean_age_us, m.time_us), ("other", None, None))
        self.assertEqual([(s.blocks, s.kept_blocks, s.mean_age_events) for s in o.peak_reserved.sites],
                         [(2, 1, 0.5)])
        self.assertEqual((o.first_oom.request.site, o.first_oom.request.phase), (site, "other"))
        self.assertEqual([(s.blocks, s.kept_blocks, s.mean_age_events) for s in o.first_oom.sites], [(1, 1, 2.0)])


class Segments(unittest.TestCase):
    """The segments of a walked moment and the sites pinning them, read from
    a document written by hand in the command's schema (owners_json.c): the
    replay gives them only where the library can walk its segments."""

    def test_segments_and_pins_resolve_to_the_sites(self):
        from galloc.owners import _owner_sites, _owners
        table = {"keyed_by": "recorded stacks", "overflow": False, "sites": [
            {"id": 0, "name": "train.py:35 step", "kind": "code",
             "stack": [{"file": "train.py", "line": 35, "name": "step"}]},
            {"id": 1, "name": "MulBackward0", "kind": "autograd node", "stack": []}]}
        share = {"site": 0, "bytes": 3 << 20, "requested_bytes": 3 << 20, "blocks": 2, "kept_bytes": 0,
                 "kept_blocks": 0, "before_trace_blocks": 0, "mean_age_events": 1.5, "mean_age_us": None,
                 "phases": {"other": 0, "forward": 3 << 20, "backward": 0, "optimizer": 0}}
        segment = {"address": 1 << 32, "size": 20 << 20, "free_bytes": 17 << 20, "largest_free_block": 16 << 20,
                   "pending_free_bytes": 0, "allocated_bytes": 3 << 20, "blocks": 4, "free_blocks": 2,
                   "stream": 7, "pool": [0, 0], "expandable": False, "small": False,
                   "pinned_by": [{"site": 0, "phase": "forward", "bytes": 2 << 20},
                                 {"site": 1, "phase": "backward", "bytes": 1 << 20}]}
        moment = {"kind": "oom", "event": 9, "line": 12, "time_us": None, "allocated_bytes": 3 << 20, "reserved_bytes": 20 << 20,
                  "active_bytes": 3 << 20, "requested_bytes": 3 << 20,
                  "request": {"bytes": 64 << 20, "site": 1, "phase": "backward"}, "sites": [share],
                  "phases": {p: {"bytes": share["phases"][p], "blocks": 2 if p == "forward" else 0}
                             for p in galloc.owners.PHASES},
                  "streams": [{"stream": 7, "bytes": 3 << 20, "blocks": 2}],
                  "pools": [{"pool": [0, 0], "bytes": 3 << 20, "blocks": 2}], "segments": [segment], "error": None}
        doc = {"error": None, "untracked_blocks": 0, "t0_us": None, "peak_allocated": None,
               "peak_reserved": None, "ooms": [moment]}
        o = _owners(doc, _owner_sites(table))
        self.assertEqual((o.peak_allocated, o.peak_reserved, o.moments), (None, None, (o.first_oom,)))
        m = o.first_oom
        self.assertEqual(moment_doc(m), moment)
        (g,) = m.segments
        self.assertEqual([(p.site.name, p.phase, p.bytes) for p in g.pinned_by],
                         [("train.py:35 step", "forward", 2 << 20), ("MulBackward0", "backward", 1 << 20)])
        self.assertIs(g.pinned_by[1].site, o.sites[1])
        self.assertIs(m.request.site, o.sites[1])
        self.assertEqual((g.pool, o.sites[0].stack), ((0, 0), (galloc.Frame(file="train.py", line=35, name="step"),)))
        self.assertIsNone(_owners(None, _owner_sites(table)))
        self.assertIsNone(_owner_sites(None))


@unittest.skipIf(FRAG is None, "examples/: not in a source tree")
class TextTrace(SameAsTheCommand, unittest.TestCase):
    """examples/fragmentation.trace under two settings: the defaults' two OOMs."""
    PATH = FRAG
    CONFS = ("", "expandable_segments:True")

    def test_the_defaults_ooms_and_none_with_expandable_segments(self):
        d, e = self.r["defaults"].owners, self.r["expandable_segments:True"].owners
        self.assertEqual([m.event for m in d.ooms], [1601, 1643])
        for m in d.moments:
            self.assertEqual(m.by_phase()["other"], m.allocated_bytes if d.untracked_blocks == 0 else
                             sum(s.bytes for s in m.sites))
        self.assertEqual((e.ooms, e.first_oom, e.t0_us), ((), None, None))  # expandable segments fit


@unittest.skipIf(LOAD_ORDER is None, "examples/: not in a source tree")
class ManyOOMs(SameAsTheCommand, unittest.TestCase):
    """More OOMs than the owners keep: the first 16."""
    PATH = LOAD_ORDER

    def test_the_first_16(self):
        c = self.r["defaults"]
        self.assertGreater(c.ooms_total, 16)
        self.assertEqual([m.event for m in c.owners.ooms], [o.event for o in c.ooms[:16]])


@unittest.skipIf(SNAPSHOT is None, "examples/: not in a source tree")
class TwoDeviceSnapshot(SameAsTheCommand, unittest.TestCase):
    """A snapshot of two devices, each its own sites; device 0 starts mid-run
    with blocks allocated before its trace."""
    PATH = SNAPSHOT

    def test_each_device_its_sites(self):
        d0, d1 = (t["recorded"].owners for t in self.r.traces)
        self.assertEqual((d0.keyed_by, d1.keyed_by), ("recorded stacks", "recorded stacks"))
        self.assertEqual([s.name for s in d1.sites], ["train.py:41 step", "train.py:43 step", "train.py:46 step"])
        self.assertEqual(d0.sites[0].kind, "before the trace")
        seeded = d0.peak_reserved.share("train.py:12 forward")
        self.assertEqual((seeded.before_trace_blocks, seeded.blocks, seeded.mean_age_events, seeded.mean_age_us),
                         (6, 6, None, None))
        self.assertEqual(d0.peak_reserved.table()[0][4:6], (None, None))
        self.assertEqual(d1.ooms, ())


@unittest.skipIf(RMM is None, "examples/: not in a source tree")
class RmmLog(SameAsTheCommand, unittest.TestCase):
    """An RMM log: no OOM."""
    PATH = RMM

    def test_no_oom(self):
        o = self.r["defaults"].owners
        self.assertEqual((o.ooms, o.first_oom), ((), None))
        self.assertEqual([m.kind for m in o.moments], ["peak_allocated", "peak_reserved"])


if __name__ == "__main__":
    unittest.main()


class FitOwnersOfTheH200Snapshot(unittest.TestCase):
    """FitResult.owners: galloc fit replays the job's own run and the answer
    again with owners; the dataclasses equal its --json (the same document
    replay writes for a moment), and the genuine OOM's shortfall is there:
    the capped run's last request (13.98 GiB, line 76) is more than the
    allocator may use, whatever is live."""

    @classmethod
    def setUpClass(cls):
        cls.f = galloc.fit(H200, bisect=0, max_configs=4)
        p = subprocess.run([sys.executable, "-m", "galloc", "fit", "--json", "--bisect", "0", "--max-configs", "4",
                            H200], capture_output=True, text=True)
        cls.doc = json.loads(p.stdout)

    def test_same_as_the_commands_json(self):
        o, w = self.f.owners, self.doc["owners"]
        self.assertIsNotNone(o)
        for run, wrun in ((o.own, w["own"]), (o.answer, w["answer"])):
            if wrun is None:
                self.assertIsNone(run)
                continue
            self.assertEqual((run.conf, run.recorded), (wrun["conf"], wrun["recorded"]))
            for (label, owners), u in zip(run.units, wrun["units"], strict=True):
                self.assertEqual(label, u["label"])
                self.assertEqual(moment_doc(owners.first_oom), u["owners"]["ooms"][0])
                self.assertEqual(moment_doc(owners.peak_reserved), u["owners"]["peak_reserved"])
            q = wrun["shrink"]
            self.assertEqual(None if run.shortfall is None else
                             {"unit": run.shortfall.unit, "event": run.shortfall.event,
                              "deficit_bytes": run.shortfall.deficit_bytes}, q)

    def test_the_own_run_dies_of_its_last_request(self):
        own = self.f.owners.own
        self.assertTrue(own.recorded)
        (label, owners), = own.units
        self.assertIs(own[label], owners)
        m = owners.first_oom
        self.assertEqual((m.kind, m.event), ("oom", 5732))
        self.assertTrue(str(m.request.site).endswith("capture_torch_snapshot.py:76 main"))
        self.assertEqual(sum(s.bytes for s in m.sites), m.allocated_bytes)
        self.assertIsNotNone(own.shortfall)
        self.assertEqual(own.shortfall.event, 5732)
        self.assertGreater(own.shortfall.deficit_bytes, m.allocated_bytes)  # the request alone is too big
        with self.assertRaises(KeyError):
            own["no such trace"]
