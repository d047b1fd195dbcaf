"""galloc's snapshots read by real PyTorch 1.13's torch.cuda._memory_viz
(Debian's python3-torch): segments, memory, compare and stats, with exact
figures checked against galloc's own counters.

What 1.13 reads: its snapshot was a bare list of segment dicts
(torch.cuda.memory_snapshot()), so every function here iterates its argument
as segments. galloc writes the 2.x dictionary ({"segments", "device_traces",
...}); 1.13 reads its "segments" list, which is what these tests pass
(snapshot["segments"]), and a whole dictionary is refused (a test pins that).
1.13 draws frames only from a block's "history" list (its own layout);
galloc writes 2.1's per-block "frames" instead, so 1.13's flamegraph lines
carry the block's state and size and no frames: asserted below too.
format_flamegraph would download flamegraph.pl; the tests pass a function
that returns the folded lines it is given, and check those.

Skipped when torch 1.13 cannot be imported (a venv made without
--system-site-packages does not see Debian's python3-torch); .ci/install_test
runs it in a venv that does, with GALLOC_REQUIRE_TORCH=1, so there a missing
torch fails instead of skipping."""
import contextlib
import ctypes
import io
import os
import pickle
import tempfile
import unittest
from collections import Counter

import galloc
from galloc import _native, _tools
from support import MiB, repo_file

REQUIRED = os.environ.get("GALLOC_REQUIRE_TORCH") == "1"
try:
    import torch
    from torch.cuda import _memory_viz as viz
    SKIP = None if torch.__version__.startswith("1.13") else (
        f"torch {torch.__version__} is not 1.13: these tests read 1.13's _memory_viz layout")
except ImportError as e:
    SKIP = (f"torch is not importable ({e}): apt-get install python3-torch and use a venv made with "
            "--system-site-packages (.ci/install_test does)")

TRACE = repo_file("examples/fragmentation.trace")


def folded(lines):
    """format_flamegraph's stand-in: the folded "stack count" lines, parsed."""
    return [(stack, int(count)) for stack, _, count in (l.rpartition(" ") for l in lines.splitlines())]


# galloc_history_options_t, galloc_frame_t, galloc_frames_fn (api/galloc_trace.h):
# the Python package does not wrap recording yet, so the test calls the C API.
class _Options(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("enabled", ctypes.c_int), ("context", ctypes.c_int),
                ("stacks", ctypes.c_int), ("max_entries", ctypes.c_size_t)]


class _Frame(ctypes.Structure):
    _fields_ = [("filename", ctypes.c_char_p), ("name", ctypes.c_char_p), ("line", ctypes.c_int64)]


_FRAMES_FN = ctypes.CFUNCTYPE(ctypes.c_size_t, ctypes.c_void_p, ctypes.POINTER(_Frame), ctypes.c_size_t)
_FILE, _FUNC = b"/src/train.py", b"step"


def _one_frame(_ctx, frames, _max):
    frames[0].filename, frames[0].name, frames[0].line = _FILE, _FUNC, 42
    return 1


class Torch113MemoryViz(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.TemporaryDirectory()

    @classmethod
    def tearDownClass(cls):
        cls.dir.cleanup()

    def setUp(self):
        if SKIP:
            if REQUIRED:
                self.fail("GALLOC_REQUIRE_TORCH=1 but " + SKIP)
            self.skipTest(SKIP)

    def snap(self, a, name):
        path = os.path.join(self.dir.name, name)
        a.snapshot(path)
        with open(path, "rb") as f:
            return pickle.load(f)

    def workload(self):
        """Four segments on two streams, blocks allocated, inactive and
        pending free, history with a frame on every event; (before, after,
        galloc's memory_stats at `after`)."""
        a = galloc.Allocator("sim_capacity:8GiB")
        self.addCleanup(a.close)
        lib = _native.lib
        lib.galloc_record_memory_history.argtypes = [ctypes.c_void_p, ctypes.POINTER(_Options)]
        lib.galloc_set_frames_callback.argtypes = [ctypes.c_void_p, _FRAMES_FN, ctypes.c_void_p]
        self.frames_fn = _FRAMES_FN(_one_frame)  # kept alive while the allocator may call it
        opts = _Options(ctypes.sizeof(_Options), 2, 3, 0, 0)  # HISTORY_ALL, CONTEXT_ALL, STACKS_PYTHON
        self.assertEqual(lib.galloc_record_memory_history(a._a(), ctypes.byref(opts)), _native.OK)
        self.assertEqual(lib.galloc_set_frames_callback(a._a(), self.frames_fn, None), _native.OK)
        p = [a.malloc(n) for n in (1000, 3000, 5 * MiB)]
        before = self.snap(a, "before.pickle")
        p += [a.malloc(30 * MiB), a.malloc(7 * MiB)]
        a.free(p[1])
        a.free(p[3])  # its 30 MiB segment stays cached, one inactive block
        q = a.malloc(4096, stream=7)
        a.record_stream(q, 9)
        a.free(q)  # pending free: the sim never completes stream 9's event
        after = self.snap(a, "after.pickle")
        return before, after, a.memory_stats()

    def test_a_whole_dictionary_is_not_1_13s_layout(self):
        _, after, _ = self.workload()
        self.assertIsInstance(after, dict)
        with self.assertRaises(TypeError):  # 1.13 iterates the dict's keys as segments
            viz.stats(after)

    def test_stats(self):
        _, after, ms = self.workload()
        s = viz.stats(after["segments"])  # also asserts each segment's blocks sum to its total_size
        self.assertEqual(s["segments"], 4)
        self.assertEqual(sorted(k for k in s if k not in ("segments", "total_size")),
                         ["active_allocated", "active_pending_free", "inactive"])
        self.assertEqual(s["total_size"].value, ms["reserved_bytes.all.current"])
        self.assertEqual(s["total_size"].value, 2 * MiB + 20 * MiB + 30 * MiB + 2 * MiB)
        self.assertEqual(s["active_allocated"].value, ms["allocated_bytes.all.current"])
        self.assertEqual(s["active_allocated"].value, 1024 + 5 * MiB + 7 * MiB)
        self.assertEqual(s["active_allocated"].value + s["active_pending_free"].value, ms["active_bytes.all.current"])
        self.assertEqual(s["active_pending_free"].value, 4096)
        self.assertEqual(s["inactive"].value, ms["reserved_bytes.all.current"] - ms["active_bytes.all.current"])
        self.assertEqual(repr(s["total_size"]), "54.0MiB")

    def test_segments_flamegraph(self):
        _, after, ms = self.workload()
        lines = folded(viz.segments(after["segments"], format_flamegraph=lambda text: text))
        seg = {s["address"]: s for s in after["segments"]}
        self.assertEqual(len(lines), sum(len(s["blocks"]) for s in seg.values()))
        per_segment = Counter()
        pairs = Counter()
        for stack, count in lines:
            stream, address, state = stack.split(";")  # no frame part: 1.13 reads frames from "history" only
            per_segment[(stream, int(address[len("seg_"):]))] += count
            pairs[(state, count)] += 1
        self.assertEqual(per_segment, Counter({(f"stream_{s['stream']}", a): s["total_size"] for a, s in seg.items()}))
        self.assertEqual(sum(c for _, c in lines), ms["reserved_bytes.all.current"])
        self.assertEqual(pairs, Counter({
            ("active_allocated", 1024): 1, ("inactive", 2 * MiB - 1024): 1,  # 1000 B; the freed 3000 B merged back
            ("active_allocated", 5 * MiB): 1, ("active_allocated", 7 * MiB): 1, ("inactive", 8 * MiB): 1,
            ("inactive", 30 * MiB): 1,
            ("active_pending_free", 4096): 1, ("inactive", 2 * MiB - 4096): 1}))

    def test_memory_flamegraph(self):
        _, after, ms = self.workload()
        by = Counter()
        for stack, count in folded(viz.memory(after["segments"], format_flamegraph=lambda text: text)):
            by[stack] += count
        self.assertEqual(by, Counter({
            "stream_0;active_allocated": ms["allocated_bytes.all.current"],
            "stream_0;inactive": 2 * MiB - 1024 + 8 * MiB + 30 * MiB,
            "stream_7;active_pending_free": 4096, "stream_7;inactive": 2 * MiB - 4096}))

    def test_compare(self):
        before, after, _ = self.workload()
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            lines = folded(viz.compare(before["segments"], after["segments"], format_flamegraph=lambda text: text))
        new = sorted(s["address"] for s in after["segments"]
                     if s["address"] not in {b["address"] for b in before["segments"]})
        self.assertEqual(len(before["segments"]), 2)
        self.assertEqual(len(new), 2)
        out = printed.getvalue().splitlines()
        self.assertEqual(out[0], "only_before = []")
        self.assertEqual(sorted(eval(out[1].partition(" = ")[2])), new)  # a printed list of ints
        self.assertTrue(all(stack.startswith("only_after;") for stack, _ in lines))
        self.assertEqual(sum(c for _, c in lines), 30 * MiB + 2 * MiB)

    @unittest.skipIf(TRACE is None, "examples/fragmentation.trace: not in a source tree")
    def test_replay_snapshot_at_the_first_oom(self):
        path = os.path.join(self.dir.name, "replay.pickle")
        rc, out, msg = _tools.run(["replay", "--json", "--snapshot", path, TRACE])
        self.assertEqual(rc, 1, msg)  # the trace runs out of memory: the snapshot is taken there
        import json
        oom = json.loads(out)["traces"][0]["results"][0]["ooms"][0]
        with open(path, "rb") as f:
            segments = pickle.load(f)["segments"]
        s = viz.stats(segments)
        self.assertEqual(s["segments"], 72)
        self.assertEqual(s["total_size"].value, oom["reserved_bytes"])
        self.assertEqual(s["total_size"].value, 85742059520)
        self.assertEqual(s["active_allocated"].value, oom["allocated_bytes"])
        self.assertEqual(s["inactive"].value, oom["cached_free_bytes"])
        lines = folded(viz.memory(segments, format_flamegraph=lambda text: text))
        self.assertEqual(sum(c for _, c in lines), oom["reserved_bytes"])
        self.assertEqual(max(c for st, c in lines if st.endswith(";inactive")), oom["largest_free_block"])
