"""The job's own run through Python: galloc.fit's row of it is galloc.replay's
column with no confs (a snapshot's "recorded", else "defaults"), figure for
figure, for every trace of the repository and of shared/traces; galloc.replay,
galloc.fit and galloc.load_trace describe each unit alike; and every figure,
verdict, `fits` and caveat is the command's (`galloc replay --json`,
`galloc fit --json`). tests/tools/baseline_test.sh checks the same on the
command's two documents."""
import dataclasses
import json
import os
import subprocess
import sys
import unittest

import galloc
from support import REPO

# Where the repository's traces are (tests/tools/baseline_test.sh reads the same).
DIRS = ("examples", "examples/fit", "tests/tools/data", "tests/tools/data/h200")
# Refused on purpose (tests/tools/data/make_old_snapshots.py): a PyTorch 2.0
# block with neither its own address nor its segment's, and a list of
# segments with nothing allocated.
REFUSED = {"torch20_noaddr.pickle", "torch_segments_idle.pickle", "snapshot_bad_device.pickle"}
NOT_TRACES = ("BUILD", ".md", ".py", ".sh", ".c", ".h", ".cc", ".txt")
# Timings differ between any two runs; nothing else may.
TIMINGS = {"seconds", "read_seconds", "events_per_second", "threads"}


def traces_in(folder):
    """The traces directly in folder, by name (h200/NAME.json is PyTorch's
    memory_stats beside each snapshot, not a trace)."""
    if not os.path.isdir(folder):
        return []
    names = sorted(n for n in os.listdir(folder) if os.path.isfile(os.path.join(folder, n)) and
                   not n.endswith(NOT_TRACES) and not (os.path.basename(folder) == "h200" and n.endswith(".json")))
    return [os.path.join(folder, n) for n in names]


def shared_traces():
    """shared/traces: from $GALLOC_SHARED_TRACES, else beside the checkout;
    (files, why none)."""
    folder = os.environ.get("GALLOC_SHARED_TRACES") or os.path.join(REPO, os.pardir, "shared", "traces")
    files = [f for f in traces_in(folder) if os.path.basename(f) != "README.md"]
    return files, None if files else f"{os.path.normpath(folder)} holds no traces (set GALLOC_SHARED_TRACES)"


def command():
    """The galloc command of the installed package (python -m galloc): built
    with the library the API under test loads. A bazel-bin/tools/galloc may be
    another build's, older than the package (Bazel's bazel-bin follows the last
    configuration built); tests/tools/baseline_test.sh checks that one."""
    return [sys.executable, "-m", "galloc"]


def cli(*args):
    """(exit status, JSON document or None) of galloc ARGS."""
    p = subprocess.run(command() + list(args), capture_output=True, text=True)
    try:
        return p.returncode, json.loads(p.stdout)
    except ValueError:
        return p.returncode, None


def untimed(doc):
    """doc without its timings."""
    if isinstance(doc, dict):
        return {k: untimed(v) for k, v in doc.items() if k not in TIMINGS}
    if isinstance(doc, list):
        return [untimed(v) for v in doc]
    return doc


def unit_info(u):
    """The UnitInfo members of u (a TraceUnit, TraceResult or FitUnit)."""
    return {f.name: getattr(u, f.name) for f in dataclasses.fields(galloc.UnitInfo)}


REPO_TRACES = [f for d in DIRS for f in traces_in(os.path.join(REPO, d))]


@unittest.skipIf(not os.path.isdir(os.path.join(REPO, "tests", "tools", "data")), "not in a source tree")
class Baseline(unittest.TestCase):
    def assertSame(self, path, what, fit, replay):
        """fit's figure equals replay's, or a failure naming the file and the figure."""
        self.assertEqual(fit, replay, f"{path}: {what}: fit {fit!r}, replay {replay!r}")

    def check(self, path):
        rel = os.path.relpath(path, REPO)
        if os.path.basename(path) in REFUSED:
            for call in (galloc.replay, galloc.load_trace, lambda p: galloc.fit(p, bisect=0, max_configs=1)):
                with self.assertRaises(galloc.InvalidArgumentError, msg=f"{rel}: refused on purpose") as cm:
                    call(path)
                self.assertIn(path, str(cm.exception))
            for args in (("replay", "--json"), ("fit", "--json", "--bisect", "0", "--max-configs", "1")):
                self.assertEqual(cli(*args, path)[0], 2, f"{rel}: galloc {args[0]} refuses it")
            return "refused"
        r = galloc.replay(path)
        f = galloc.fit(path, bisect=0, max_configs=1)
        info = galloc.load_trace(path)

        # The job's own run: fit's one row, replay's one column per unit.
        snapshot = f.raw["recorded_conf"] is not None
        label = "recorded" if snapshot else "defaults"
        self.assertEqual(len(f.configurations), 1, f"{rel}: fit max_configs=1")
        row = f.configurations[0]
        if snapshot:
            self.assertEqual((row.stage, row.recorded, row.conf), ("recorded", True, f.raw["recorded_conf"]), rel)
        else:
            self.assertEqual((row.stage, row.recorded, row.conf), ("grid", False, ""), rel)
        cols = []
        for t in r.traces:
            self.assertEqual((t.error, list(t)), (None, [label]), f"{rel} {t.unit}: replay's columns")
            cols.append(t[label])
        for c in cols:
            self.assertSame(rel, "conf", row.conf, c.conf)
            self.assertSame(rel, "recorded", row.recorded, c.recorded)
        for k in ("peak_reserved_bytes", "peak_allocated_bytes", "peak_requested_bytes"):
            self.assertSame(rel, k, getattr(row, k), max(getattr(c, k) for c in cols))
        for k in ("ooms_total", "expected_ooms", "expected_ooms_avoided"):
            self.assertSame(rel, k, getattr(row, k), sum(getattr(c, k) for c in cols))
        for k in ("num_device_alloc", "num_device_free", "num_alloc_retries"):
            self.assertSame(rel, k, getattr(row, k), sum(c.memory_stats[k] for c in cols))
        self.assertSame(rel, "fits", row.fits, all(c.fits for c in cols))
        self.assertSame(rel, "depends_on_cap", row.depends_on_cap, any(c.depends_on_cap for c in cols))
        self.assertSame(rel, "the job's fits", f.fits, row.fits)
        self.assertSame(rel, "exit status", f.exit_status, r.exit_status)
        failing = [(i, c) for i, c in enumerate(cols) if not c.fits and c.ooms]
        if failing:
            i, c = failing[0]
            self.assertSame(rel, "first OOM (unit, event, size, class)",
                            tuple(row.first_oom[k] for k in ("trace", "event", "size", "class")),
                            (i, c.ooms[0].event, c.ooms[0].size, c.ooms[0].oom_class))

        # Every unit as all three calls describe it.
        self.assertEqual(len(info.units), len(r.traces), rel)
        self.assertEqual(len(f.units), len(r.traces), rel)
        for u, t, fu in zip(info.units, r.traces, f.units):
            self.assertEqual(unit_info(fu), unit_info(t), f"{rel} {t.unit}: fit's unit vs replay's")
            self.assertEqual(unit_info(u), unit_info(t), f"{rel} {t.unit}: load_trace's unit vs replay's")
        self.assertEqual(info.device_memory, r.traces[0].device_memory, rel)

        # The command's documents: the same, timings aside.
        rc, doc = cli("replay", "--json", path)
        self.assertEqual(rc, r.exit_status, f"{rel}: galloc replay's exit status")
        self.assertEqual([[c.verdict for c in t.results] for t in r.traces],
                         [[c["verdict"] for c in t["results"]] for t in doc["traces"]], f"{rel}: verdicts")
        self.assertEqual([[c.fits for c in t.results] for t in r.traces],
                         [[c["fits"] for c in t["results"]] for t in doc["traces"]], f"{rel}: fits")
        self.assertEqual(untimed(r.raw), untimed(doc), f"{rel}: galloc.replay vs galloc replay --json")
        rc, doc = cli("fit", "--json", "--bisect", "0", "--max-configs", "1", path)
        self.assertEqual(rc, f.exit_status, f"{rel}: galloc fit's exit status")
        self.assertEqual((f.fits, f.winner, f.caveats), (doc["fits"], doc["pytorch_cuda_alloc_conf"],
                                                         tuple(doc["caveats"])), f"{rel}: fits, winner, caveats")
        self.assertEqual(untimed(f.raw), untimed(doc), f"{rel}: galloc.fit vs galloc fit --json")
        return f"{label}: peak reserved {row.peak_reserved_bytes}, {row.ooms_total} OOMs, fits {row.fits}"

    def test_repository_traces(self):
        names = {os.path.basename(p) for p in REPO_TRACES}
        self.assertLessEqual(REFUSED, names, "a file in REFUSED is gone: drop it")
        compared = 0
        for path in REPO_TRACES:
            with self.subTest(trace=os.path.relpath(path, REPO)):
                compared += self.check(path) != "refused"
        self.assertGreaterEqual(compared, 12)  # examples 4, data 3, h200 5

    def test_shared_traces(self):
        files, why = shared_traces()
        if not files and os.environ.get("GALLOC_SHARED_TRACES"):
            self.fail(why)
        if not files:
            self.skipTest(why)
        for path in files:
            with self.subTest(trace=path):
                self.check(path)


if __name__ == "__main__":
    unittest.main()
