"""One verdict per state (issue 38) from Python: a mid-run snapshot whose
state at the first entry holds more than the device is an OOM before the first
event in galloc.replay (fits False) and a result of galloc.fit (no
configuration fits, exit status 1), not an exception; the same figures as the
command's JSON. The device size a unit is replayed on (assumed, inferred,
given) and what the trace shows it held; a refused configuration raises."""
import json
import subprocess
import sys
import unittest

import galloc
from support import GiB, repo_file

MiB = 1 << 20
STATE = repo_file("tests/tools/data/state_larger.pickle")  # 10 GiB live, 11296 MiB reserved at its first entry
OOM_ENTRY = repo_file("tests/tools/data/oom_entry.pickle")
LOAD_ORDER = repo_file("examples/fit/load_order.trace")


@unittest.skipIf(STATE is None, "tests/tools/data: not in a source tree")
class StateLargerThanDevice(unittest.TestCase):
    def test_replay_says_it_does_not_fit(self):
        r = galloc.replay(STATE, device_memory="11GiB")
        self.assertEqual(r.exit_status, 1)
        c = r["recorded"]
        self.assertEqual((c.fits, c.verdict, c.ooms_total, c.events), (False, "OOM (genuine)", 1, 0))
        (o,) = c.ooms
        self.assertTrue(o.before_first_event)
        self.assertEqual((o.event, o.size, o.oom_class), (0, 5152 * MiB, "genuine"))
        self.assertEqual((o.allocated_bytes, o.reserved_bytes), (6 * GiB, 6 * GiB))
        self.assertTrue(o.message.startswith("CUDA out of memory. Tried to allocate 5.03 GiB. GPU 0 has a total "
                                             "capacity of 11.00 GiB of which 5.00 GiB is free."), o.message)
        self.assertTrue(o.message.endswith("#optimizing-memory-usage-with-pytorch-cuda-alloc-conf)"), o.message)
        raw = r.raw["traces"][0]["results"][0]["ooms"][0]
        self.assertEqual((raw["live_bytes"], raw["cached_free_bytes"]), (10 * GiB, 1056 * MiB))
        self.assertEqual(r.raw["traces"][0]["results"][0]["errors"], 0)

    def test_fit_returns_that_none_fits(self):
        f = galloc.fit(STATE, device_memory="11GiB", bisect=1)
        self.assertEqual((f.exit_status, f.fits, f.winner, f.picked), (1, False, None, None))
        for c in f.configurations:
            self.assertFalse(c.fits, c.conf)
            self.assertIsNone(c.error, c.conf)
            self.assertTrue(c.first_oom["before_first_event"], c.conf)
            self.assertEqual((c.first_oom["event"], c.first_oom["class"]), (0, "genuine"), c.conf)
        best = f.configurations[0]
        self.assertTrue(best.recorded)
        self.assertEqual(best.min_device_memory, 11296 * MiB)

    def test_same_figures_as_the_command(self):
        py = galloc.replay(STATE, device_memory="11GiB", owners=False)
        # the installed package's command, built with the library under test
        out = subprocess.run([sys.executable, "-m", "galloc", "replay", "--json", "--no-owners", "--device-memory",
                              "11GiB", STATE], capture_output=True, text=True)
        self.assertEqual(out.returncode, 1)
        cli = json.loads(out.stdout)["traces"][0]["results"][0]
        ours = py.raw["traces"][0]["results"][0]
        for k in ("fits", "verdict", "ooms_total", "ooms", "peak_reserved_bytes", "events"):
            self.assertEqual(ours[k], cli[k], k)


@unittest.skipIf(STATE is None or LOAD_ORDER is None, "not in a source tree")
class DeviceSize(unittest.TestCase):
    def test_assumed_inferred_given(self):
        (t,) = galloc.replay(STATE, owners=False).traces
        self.assertEqual((t.device_memory, t.device_memory_source, t.device_memory_assumed), (80 * GiB, "default",
                                                                                             True))
        self.assertEqual((t.events, t.trace_events, t.prologue_allocs), (6, 4, 2))
        self.assertEqual(t.device_shown, {"reserved_peak_bytes": 11296 * MiB, "reserved_first_bytes": 11296 * MiB,
                                          "reserved_last_bytes": 11296 * MiB, "largest_request_bytes": 6 * GiB})
        (t,) = galloc.replay(OOM_ENTRY, owners=False).traces
        self.assertEqual((t.device_memory, t.device_memory_source, t.device_memory_assumed),
                         (11296 * MiB + GiB, "oom_entries", False))
        (t,) = galloc.replay(OOM_ENTRY, device_memory="16GiB", owners=False).traces
        self.assertEqual((t.device_memory, t.device_memory_source, t.recorded_memory), (16 * GiB, "option",
                                                                                       11296 * MiB + GiB))
        (u,) = galloc.load_trace(LOAD_ORDER).units
        self.assertEqual((u.device_memory_source, u.device_memory_assumed), ("header", False))

    def test_a_refused_configuration_raises(self):
        for call in (lambda: galloc.replay(LOAD_ORDER, confs=["max_split_size_mb:1"]),
                     lambda: galloc.fit(LOAD_ORDER, confs=["max_split_size_mb:1", "expandable_segments:True"])):
            with self.assertRaises(galloc.ConfigError) as e:
                call()
            self.assertIn('max_split_size_mb: expected a whole number of MiB >= 20, got "1"', str(e.exception))


if __name__ == "__main__":
    unittest.main()
