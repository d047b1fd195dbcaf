"""galloc.replay, galloc.fit and galloc.load_trace: the galloc command's
figures from Python (libgalloc_tools.so runs the command's own code), checked
exactly against the README's examples."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

import galloc
from support import GiB, repo_file

FRAG = repo_file("examples/fragmentation.trace")
LOAD_ORDER = repo_file("examples/fit/load_order.trace")
# PyTorch 2.11 on an H200 under set_per_process_memory_fraction(0.05): the
# snapshot does not record the fraction, so its cap is known as a range.
CAPPED = repo_file("tests/tools/data/h200/torch211_h200_full_default.pickle.gz")
CAP_LOW, CAP_HIGH = 2151677952, 15269363712  # [2.00 GiB, 14.22 GiB): tests/tools/real_torch_test.sh


@unittest.skipIf(FRAG is None, "examples/fragmentation.trace: not in a source tree")
class Replay(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.r = galloc.replay(FRAG, confs=["", "expandable_segments:True"])

    def test_defaults_oom_at_event_1601_with_7_96_gib_cached(self):
        # README: "the defaults run out of memory at event 1,601 with 7.96 GiB
        # reserved but unallocated (fragmentation)"; exit status 1.
        self.assertEqual(self.r.exit_status, 1)
        d = self.r["defaults"]
        self.assertEqual(d.conf, "")
        self.assertEqual(d.verdict, "OOM (fragmentation)")
        self.assertFalse(d.fits)
        oom = d.ooms[0]
        self.assertEqual((oom.event, oom.line, oom.size), (1601, 1604, 2 * GiB))
        self.assertEqual(oom.oom_class, "fragmentation")
        self.assertEqual((oom.reserved_bytes, oom.allocated_bytes), (85742059520, 77193019392))
        self.assertIn("7.96 GiB is reserved by PyTorch but unallocated", oom.message)
        self.assertTrue(oom.message.startswith("CUDA out of memory. Tried to allocate 2.00 GiB."))
        self.assertEqual(d.peak_reserved_bytes, 85742059520)

    def test_expandable_segments_fits(self):
        e = self.r["expandable_segments:True"]
        self.assertTrue(e.fits)
        self.assertEqual((e.verdict, e.ooms, e.ooms_total), ("fits", (), 0))
        self.assertEqual(e.peak_reserved_bytes, 85647687680)
        self.assertEqual(e.memory_stats["num_ooms"], 0)
        self.assertEqual(e.memory_stats["reserved_bytes.all.peak"], e.peak_reserved_bytes)

    def test_trace_figures(self):
        (t,) = self.r.traces
        self.assertEqual((t.format, t.events, t.device_memory, t.error), ("galloc", 1720, 80 * GiB, None))
        self.assertEqual((t.device_memory_source, t.cap, t.start, t.seeded), ("header", None, "events", None))
        d = t["defaults"]
        self.assertEqual((d.recorded, d.fits, d.depends_on_cap, d.cap_bytes, d.cap_parts), (False, False, False,
                                                                                           None, ()))
        self.assertEqual((d.expected_ooms, d.expected_ooms_avoided), (0, 0))
        self.assertEqual([c.label for c in t.results], ["defaults", "expandable_segments:True"])
        self.assertEqual(self.r.raw["tool"], "galloc replay")

    def test_a_one_trace_replay_is_a_mapping_by_label(self):
        labels = ["defaults", "expandable_segments:True"]
        self.assertEqual(list(self.r.keys()), labels)
        self.assertEqual(list(self.r), labels)
        self.assertEqual(len(self.r), 2)
        self.assertIn("defaults", self.r)
        self.assertIn("", self.r)  # a conf string is a key too
        self.assertNotIn("max_split_size_mb:512", self.r)
        self.assertEqual(list(self.r.values()), list(self.r.results))
        self.assertEqual([(k, v.conf) for k, v in self.r.items()], [("defaults", ""), (labels[1], labels[1])])
        self.assertIs(self.r.get("nope"), None)
        self.assertEqual(dict(self.r.traces[0]), dict(self.r))
        self.assertEqual(self.r.raw["tool"], "galloc replay")  # .traces, .results, .raw stay

    def test_an_unknown_label_lists_the_labels(self):
        for mapping in (self.r, self.r.traces[0]):
            with self.assertRaises(KeyError) as cm:
                mapping["expandable"]
            self.assertIn("'expandable': no such configuration; the labels are: 'defaults', "
                          "'expandable_segments:True'", str(cm.exception))

    def test_device_memory_and_progress(self):
        seen = []
        r = galloc.replay(FRAG, device_memory="160GiB", progress=lambda f, n: seen.append((f, n)))
        self.assertEqual(r.exit_status, 0)
        self.assertTrue(r["defaults"].fits)
        self.assertEqual(r.traces[0].device_memory_source, "option")
        # The engine reports every 4,096 events and once at the end of each
        # column: the 1,720 events of this trace give the end only.
        self.assertEqual(seen[-1], (1.0, 1720))
        self.assertEqual([n for _, n in seen], sorted(n for _, n in seen))
        self.assertTrue(all(0 <= f <= 1 for f, _ in seen))

    def test_same_figures_as_the_command(self):
        # The installed package's command, built with the library under test
        # (a bazel-bin/tools/galloc may be an older build's).
        p = subprocess.run([sys.executable, "-m", "galloc", "replay", "--json", "--conf", "", "--conf", "expandable_segments:True", FRAG],
                           capture_output=True, text=True)
        self.assertEqual(p.returncode, self.r.exit_status)
        cli = json.loads(p.stdout)
        for mine, theirs in zip(self.r.raw["traces"][0]["results"], cli["traces"][0]["results"]):
            for key in ("peak_reserved_bytes", "peak_allocated_bytes", "peak_requested_bytes", "memory_stats"):
                self.assertEqual(mine[key], theirs[key], key)
            self.assertEqual([o["message"] for o in mine["ooms"]], [o["message"] for o in theirs["ooms"]])

    def test_bad_input_raises_with_the_commands_message(self):
        with self.assertRaises(galloc.FileError) as cm:
            galloc.replay(os.path.join(tempfile.gettempdir(), "no-such.trace"))
        self.assertIn("no-such.trace: cannot open", str(cm.exception))
        with self.assertRaises(galloc.ConfigError) as cm:
            galloc.replay(FRAG, confs=["bogus_key:1"])
        self.assertIn("Unrecognized key 'bogus_key'", str(cm.exception))
        with self.assertRaises(galloc.InvalidArgumentError):
            galloc.replay(FRAG, device_memory="lots")

    def assertRaisesNamingNoFlag(self, exc, text, call, *args, **kw):
        """call(*args, **kw) raises exc, whose message holds text and no
        command-line flag (the caller typed keyword arguments)."""
        with self.assertRaises(exc) as cm:
            call(*args, **kw)
        message = str(cm.exception)
        self.assertIn(text, message)
        self.assertNotRegex(message, r"--[a-z]|galloc (replay|fit)\b")
        return message

    def test_bad_arguments_are_named_as_the_keywords(self):
        bad = self.assertRaisesNamingNoFlag
        # Checked here first.
        bad(galloc.InvalidArgumentError, "galloc.replay: bad device_memory=0 (bytes > 0", galloc.replay, FRAG,
            device_memory=0)
        bad(TypeError, "galloc.replay: device_memory is bytes (an int) or a size string", galloc.replay, FRAG,
            device_memory=1.5)
        bad(TypeError, "galloc.replay: format is a str", galloc.replay, FRAG, format=None)
        bad(TypeError, "confs is a list of configuration strings, not one string: confs=['expandable_segments:True']",
            galloc.replay, FRAG, confs="expandable_segments:True")
        bad(TypeError, "galloc.fit: jobs is an int, not str", galloc.fit, FRAG, jobs="2")
        bad(galloc.InvalidArgumentError, "galloc.fit: bad max_configs=0 (an int >= 1)", galloc.fit, FRAG,
            max_configs=0)
        bad(galloc.InvalidArgumentError, "galloc.fit: bad bisect='some'", galloc.fit, FRAG, bisect="some")
        # Refused by the command's own code; its flags rewritten as keywords.
        m = bad(galloc.InvalidArgumentError, 'galloc.replay: bad device_memory="lots" (e.g. 80GiB', galloc.replay,
                FRAG, device_memory="lots")
        self.assertIn("help(galloc.replay)", m)
        bad(galloc.InvalidArgumentError, 'galloc.fit: bad device_memory="lots"', galloc.fit, FRAG,
            device_memory="lots")
        bad(galloc.InvalidArgumentError, 'galloc.replay: bad format="nope" (auto, rmm, torch, galloc',
            galloc.replay, FRAG, format="nope")
        bad(galloc.InvalidArgumentError, 'galloc.fit: bad format="nope"', galloc.fit, FRAG, format="nope")
        bad(galloc.InvalidArgumentError, "galloc.fit: bad jobs=1000 (1 to 256)", galloc.fit, FRAG, jobs=1000)
        bad(galloc.ConfigError, 'galloc.replay: %s: configuration "bogus_key:1"' % FRAG, galloc.replay, FRAG,
            confs=["", "bogus_key:1"])
        with tempfile.NamedTemporaryFile("w", suffix=".csv") as f:
            f.write("Thread,Time,Action,Pointer,Size,Stream\n")
            f.flush()
            for call in (galloc.replay, galloc.load_trace):
                bad(galloc.InvalidArgumentError, "no events found reading it as format rmm", call, f.name,
                    format="rmm")


@unittest.skipIf(LOAD_ORDER is None, "examples/fit/load_order.trace: not in a source tree")
class Fit(unittest.TestCase):
    def test_load_order_winner(self):
        # README: expandable_segments:True wins with 77.64 GiB peak reserved.
        f = galloc.fit(LOAD_ORDER, jobs=2)
        self.assertEqual((f.exit_status, f.fits, f.winner), (0, True, "expandable_segments:True"))
        best = f.configurations[0]
        self.assertEqual((best.rank, best.conf, best.fits), (1, "expandable_segments:True", True))
        self.assertEqual(best.peak_reserved_bytes, 83361792000)
        self.assertEqual(f"{best.peak_reserved_bytes / GiB:.2f}", "77.64")
        self.assertEqual(f.min_device_memory, 83361792000)
        self.assertEqual(len(f.configurations), 40)
        self.assertEqual(f.device_memory, 80 * GiB)
        defaults = next(c for c in f.configurations if c.conf == "")
        self.assertFalse(defaults.fits)
        self.assertEqual((defaults.first_oom["event"], defaults.first_oom["class"]), (460, "fragmentation"))

    def test_too_small_a_device_fits_nothing(self):
        f = galloc.fit(LOAD_ORDER, device_memory=40 * GiB, bisect=0, jobs=2)
        self.assertEqual((f.exit_status, f.fits, f.winner, f.min_device_memory), (1, False, None, None))
        self.assertEqual((f.answer.pick, f.answer.best, f.answer.recorded, f.answer.closest), (None, None, None, 1))
        self.assertEqual(f.units[0].device_memory_source, "option")

    def test_answer_and_caveats_are_the_commands(self):
        f = galloc.fit(LOAD_ORDER, jobs=2)
        a = f.answer
        self.assertEqual((a.pick, a.best, a.recorded, a.keep_recorded, a.min_device_memory_is),
                         (1, 1, None, False, "device"))
        self.assertEqual(a.saving, f.raw["answer"]["saving"])
        self.assertEqual(f.configurations[a.pick - 1].conf, f.winner)
        self.assertEqual(f.caveats, tuple(f.raw["caveats"]))
        self.assertIn("--reserve SIZE adds it", f.caveats[-1])
        self.assertFalse(any(c.recorded or c.depends_on_cap for c in f.configurations))
        self.assertEqual([c.stage for c in f.configurations if c.conf == ""], ["grid"])


    def test_given_settings_are_checked_as_the_command_checks_them(self):
        # galloc fit --conf: only these, each bisected; the same smallest device the search found.
        searched = {c.conf: c for c in galloc.fit(LOAD_ORDER, jobs=2, bisect="all").configurations}
        f = galloc.fit(LOAD_ORDER, jobs=2, confs=["", "expandable_segments:True"])
        self.assertEqual(sorted(c.conf for c in f.configurations), ["", "expandable_segments:True"])
        self.assertEqual({c.stage for c in f.configurations}, {"given"})
        for c in f.configurations:
            self.assertEqual((c.min_device_memory, c.peak_reserved_bytes, c.fits),
                             (searched[c.conf].min_device_memory, searched[c.conf].peak_reserved_bytes,
                              searched[c.conf].fits), c.conf)
        self.assertEqual(f.winner, "expandable_segments:True")
        with self.assertRaises(TypeError):
            galloc.fit(LOAD_ORDER, confs="expandable_segments:True")


@unittest.skipIf(CAPPED is None, "tests/tools/data/h200/: not in a source tree")
class Capped(unittest.TestCase):
    """A job PyTorch ran under a memory fraction the snapshot does not record:
    every call says the same cap range, and nothing fits under all of it."""

    @classmethod
    def setUpClass(cls):
        cls.info = galloc.load_trace(CAPPED)
        cls.r = galloc.replay(CAPPED)
        cls.f = galloc.fit(CAPPED, bisect=0)

    def test_load_trace_says_the_cap_range(self):
        (u,) = self.info.units
        self.assertEqual(u.cap, galloc.Cap(capped_ooms=1, inferred=True, low_bytes=CAP_LOW, high_bytes=CAP_HIGH,
                                           why=None))
        self.assertEqual(u.cap.range, (CAP_LOW, CAP_HIGH))
        # The size is reserved + device_free at the oom entry: a lower bound of the H200's total.
        self.assertEqual((u.device_memory, u.device_memory_source, u.recorded_memory),
                         (149322596352, "oom_entries", 149322596352))
        self.assertEqual((u.settings_from_snapshot, u.settings_recorded, u.start, u.seeded), ("", True, "events",
                                                                                              None))
        self.assertEqual(self.info.device_memory, u.device_memory)

    def test_fit_fits_nothing_and_its_caveats_name_the_range(self):
        f = self.f
        self.assertEqual((f.exit_status, f.fits, f.winner, f.min_device_memory), (1, False, None, None))
        self.assertEqual(f.caveats, tuple(f.raw["caveats"]))
        self.assertTrue(f.caveats)
        rng = f"[{CAP_LOW / GiB:.2f} GiB, {CAP_HIGH / GiB:.2f} GiB)"
        self.assertEqual(rng, "[2.00 GiB, 14.22 GiB)")
        self.assertIn(f"ran under a memory fraction its trace does not record: the cap lay in {rng}", f.caveats[0])
        self.assertEqual((f.answer.pick, f.answer.min_device_memory_is), (None, "cap"))
        rec = f.configurations[f.answer.recorded - 1]
        self.assertEqual((rec.stage, rec.recorded, rec.conf, rec.fits, rec.first_oom["event"]),
                         ("recorded", True, "", False, 5732))
        self.assertEqual(f.units[0].cap.range, (CAP_LOW, CAP_HIGH))

    def test_replay_recorded_column_is_genuine_at_event_5732(self):
        (t,) = self.r.traces
        self.assertEqual(self.r.exit_status, 1)
        self.assertEqual(list(t), ["recorded"])
        c = t["recorded"]
        self.assertEqual((c.recorded, c.conf, c.verdict, c.fits, c.depends_on_cap), (True, "", "OOM (genuine)",
                                                                                    False, False))
        self.assertEqual((c.ooms[0].event, c.ooms[0].expected, c.ooms[0].oom_class), (5732, True, "genuine"))
        self.assertEqual((c.expected_ooms, c.expected_ooms_avoided), (1, 0))
        self.assertIn("2.00 GiB to 14.22 GiB allowed (inferred: snapshots do not record the fraction)",
                      c.ooms[0].message)
        # One outcome over the whole range: the figures' cap lies in it.
        self.assertEqual(c.cap_parts, (galloc.CapPart(cap_from_bytes=CAP_LOW, cap_to_bytes=CAP_HIGH, fits=False,
                                                      ooms=1, first_oom_event=5732,
                                                      peak_reserved_bytes=c.peak_reserved_bytes, figures=True),))
        self.assertTrue(CAP_LOW <= c.cap_bytes < CAP_HIGH)
        self.assertEqual((t.device_memory_source, t.device_memory), ("oom_entries", 149322596352))
        self.assertEqual(t.cap.range, (CAP_LOW, CAP_HIGH))
        self.assertEqual(t.cap, self.info.units[0].cap)
        self.assertEqual(t.cap, self.f.units[0].cap)

    def test_fit_recorded_row_is_replay_recorded_column(self):
        c = self.r["recorded"]
        rec = self.f.configurations[self.f.answer.recorded - 1]
        for k in ("peak_reserved_bytes", "peak_allocated_bytes", "peak_requested_bytes", "ooms_total",
                  "expected_ooms", "expected_ooms_avoided", "fits", "depends_on_cap"):
            self.assertEqual(getattr(rec, k), getattr(c, k), k)
        for k in ("num_device_alloc", "num_device_free", "num_alloc_retries"):
            self.assertEqual(getattr(rec, k), c.memory_stats[k], k)


@unittest.skipIf(FRAG is None or LOAD_ORDER is None, "examples/: not in a source tree")
class Fleet(unittest.TestCase):
    def test_folder_in_name_order_each_trace_its_own_job(self):
        with tempfile.TemporaryDirectory() as d:
            for name, src in (("b.trace", LOAD_ORDER), ("a.trace", FRAG), (".hidden.trace", FRAG)):
                with open(src, "rb") as f, open(os.path.join(d, name), "wb") as g:
                    g.write(f.read())
            os.mkdir(os.path.join(d, "sub"))
            self.assertEqual(galloc.fleet_files(d), [os.path.join(d, "a.trace"), os.path.join(d, "b.trace")])
            fleet = galloc.fit_fleet(d, jobs=2)
            self.assertEqual(list(fleet), galloc.fleet_files(d))
            b = fleet[os.path.join(d, "b.trace")]
            self.assertEqual((b.winner, b.configurations[0].peak_reserved_bytes), ("expandable_segments:True",
                                                                                   83361792000))
            a = fleet[os.path.join(d, "a.trace")]
            # The three leaders' peaks are within 0.5 % of each other, a tie
            # (GA_FIT_TIE): the shortest string is picked, and its smallest device.
            self.assertEqual((a.fits, a.events, a.winner), (True, 1720,
                                                            "expandable_segments:True,roundup_power2_divisions:8"))
            self.assertEqual((a.answer.pick, a.min_device_memory), (1, 83319848960))
        with tempfile.TemporaryDirectory() as d, self.assertRaises(galloc.InvalidArgumentError):
            galloc.fit_fleet(d)
        with tempfile.TemporaryDirectory() as d, self.assertRaises(galloc.InvalidArgumentError) as cm:
            galloc.fit(d)
        self.assertIn("galloc.fit_fleet", str(cm.exception))


class LoadTrace(unittest.TestCase):
    @unittest.skipIf(FRAG is None, "examples/: not in a source tree")
    def test_galloc_rmm_torch(self):
        t = galloc.load_trace(FRAG)
        self.assertEqual((t.format, t.events, t.device_memory, t.devices), ("galloc", 1720, 80 * GiB, ("",)))
        self.assertEqual((t.units[0].allocs, t.units[0].frees, t.units[0].annotations), (880, 720, 120))
        rmm = galloc.load_trace(repo_file("examples/rmm_small.csv"))
        self.assertEqual((rmm.format, rmm.events, rmm.units[0].allocs), ("rmm", 160, 91))
        snap = galloc.load_trace(repo_file("examples/torch_snapshot.pickle"))
        self.assertEqual((snap.format, snap.devices), ("torch", ("device 0", "device 1")))
        self.assertEqual([u.events for u in snap.units], [213, 4])
        # The members every command says about a unit (tools/report/unit.c).
        f = t.units[0]
        self.assertEqual((f.file, f.unit, f.format, f.device_memory, f.device_memory_source, f.recorded_memory),
                         (FRAG, "", "galloc", 80 * GiB, "header", 80 * GiB))
        self.assertEqual((f.settings_from_snapshot, f.settings_recorded, f.start, f.seeded, f.seed_error, f.cap),
                         (None, False, "events", None, None, None))
        self.assertEqual(rmm.units[0].device_memory_source, "default")
        d0, d1 = snap.units
        self.assertEqual([(u.unit, u.device, u.settings_from_snapshot, u.settings_recorded) for u in snap.units],
                         [("device 0", 0, "", True), ("device 1", 1, "", True)])
        # Device 0 starts mid-run: its state at the first entry is rebuilt and seeded.
        self.assertEqual((d0.seeded, d0.prologue_allocs, d1.seeded), ({"segments": 9, "live_blocks": 11}, 11, None))

    def test_umpire_and_kineto(self):
        with tempfile.TemporaryDirectory() as d:
            ump = os.path.join(d, "u.log")
            with open(ump, "w") as f:
                f.write('{"kind":"replay","uid":1,"event":"allocate","payload":{"allocator_ref":"0x1","size":134},'
                        '"result":{"memory_ptr":"0x200040000010"}}\n'
                        '{"kind":"replay","uid":1,"event":"deallocate","payload":{"allocator_ref":"0x1",'
                        '"memory_ptr":"0x200040000010"}}\n')
            u = galloc.load_trace(ump)
            self.assertEqual((u.format, u.events, u.units[0].allocs, u.units[0].frees), ("umpire", 2, 1, 1))
            kin = os.path.join(d, "k.json")

            def mem(ts, addr, size, dev):
                return {"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, "tid": 1, "ts": ts,
                        "args": {"Bytes": size, "Addr": addr, "Device Type": 1, "Device Id": dev}}
            with open(kin, "w") as f:
                json.dump({"traceEvents": [mem(1, 4096, 512, 0), mem(2, 4096, -512, 0), mem(3, 8192, 64, 1)]}, f)
            k = galloc.load_trace(kin)
            self.assertEqual((k.format, k.devices, [x.events for x in k.units]),
                             ("kineto", ("device 0", "device 1"), [2, 1]))
            r = galloc.replay(kin)
            self.assertEqual([(t.unit, t.results[0].verdict) for t in r.traces],
                             [("device 0", "fits"), ("device 1", "fits")])
            # Two traces: no mapping of one; the error says how to pick one.
            for use in (lambda: r["defaults"], lambda: list(r), lambda: len(r), lambda: r.keys(),
                        lambda: r.items(), lambda: r.values(), lambda: "defaults" in r,
                        lambda: r.results):
                with self.assertRaises(ValueError) as cm:
                    use()
                self.assertIn(f"2 traces replayed ({kin} device 0, {kin} device 1): pick one with .traces[i]",
                              str(cm.exception))
            self.assertTrue(r)
            self.assertEqual(list(r.traces[1]), ["defaults"])

    def test_errors(self):
        with self.assertRaises(galloc.FileError):
            galloc.load_trace(os.path.join(tempfile.gettempdir(), "no-such.trace"))
        with tempfile.NamedTemporaryFile("w", suffix=".trace") as f:
            f.write("galloc-trace 1\nalloc nonsense\n")
            f.flush()
            with self.assertRaises(galloc.InvalidArgumentError) as cm:
                galloc.load_trace(f.name)
            self.assertIn(f"{f.name}:2", str(cm.exception))
        with self.assertRaises(galloc.InvalidArgumentError):
            galloc.load_trace(FRAG or __file__, format="nope")


if __name__ == "__main__":
    unittest.main()
