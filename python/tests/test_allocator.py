"""galloc.Allocator on the simulated device, with exact figures: PyTorch's
512-byte rounding, 2 MiB small segments, its OOM message."""
import json
import os
import pickle
import re
import tempfile
import unittest

import galloc
from support import GiB, MiB, REPO, repo_file, run_python


class Installed(unittest.TestCase):
    def test_the_installed_copy_is_under_test(self):
        self.assertFalse(os.path.abspath(galloc.__file__).startswith(os.path.join(REPO, "python", "galloc")),
                         galloc.__file__)
        self.assertTrue(os.path.isfile(os.path.join(os.path.dirname(galloc.__file__), "_lib", "libgalloc.so")))

    def test_status_names_are_the_headers(self):
        header = repo_file("api/galloc_status.h")
        if header is None:
            self.skipTest("api/galloc_status.h is not beside the tests")
        with open(header) as f:
            names = re.findall(r"^\s*X\((\w+),", f.read(), re.M)
        self.assertEqual(list(galloc.STATUS_NAMES), names)

    def test_snapshot_format_values_are_the_headers(self):
        header = repo_file("api/galloc_trace.h")
        if header is None:
            self.skipTest("api/galloc_trace.h is not beside the tests")
        from galloc import _native
        with open(header) as f:
            text = f.read()
        self.assertIn(f"GALLOC_SNAPSHOT_PICKLE = {_native.SNAPSHOT_PICKLE},", text)
        self.assertIn(f"GALLOC_SNAPSHOT_JSON = {_native.SNAPSHOT_JSON} ", text)


class AllocatorFigures(unittest.TestCase):
    def setUp(self):
        self.a = galloc.Allocator("sim_capacity:1GiB")

    def tearDown(self):
        self.a.close()

    def test_one_byte_is_512_bytes_in_one_2mib_segment(self):
        p = self.a.malloc(1)
        self.assertNotEqual(p, 0)
        self.assertEqual(p % 512, 0)
        s = self.a.memory_stats()
        self.assertEqual(len(s), 123)
        self.assertEqual(list(s), sorted(s))  # PyTorch's order: flattened keys, sorted
        self.assertTrue(all(type(v) is int for v in s.values()))
        self.assertEqual(s["allocated_bytes.all.current"], 512)
        self.assertEqual(s["requested_bytes.all.current"], 1)
        self.assertEqual(s["reserved_bytes.all.current"], 2 * MiB)
        self.assertEqual(s["segment.all.current"], 1)
        self.assertEqual(s["segment.small_pool.current"], 1)
        self.assertEqual(s["num_device_alloc"], 1)
        self.a.free(p)
        s = self.a.memory_stats()
        self.assertEqual((s["allocated_bytes.all.current"], s["reserved_bytes.all.current"]), (0, 2 * MiB))
        self.a.empty_cache()
        s = self.a.memory_stats()
        self.assertEqual((s["reserved_bytes.all.current"], s["reserved_bytes.all.peak"]), (0, 2 * MiB))

    def test_sizes_as_pytorch_rounds_them(self):
        # 1000 -> 1024 in a 2 MiB small segment; 5 MiB splits a new 20 MiB
        # segment (kLargeBuffer); 12 MiB fits the 15 MiB left there (best fit);
        # 25 MiB + 1 -> its own segment, rounded to 2 MiB (26 MiB).
        ptrs = [self.a.malloc(n) for n in (1000, 5 * MiB, 12 * MiB, 25 * MiB + 1)]
        s = self.a.memory_stats()
        self.assertEqual(s["allocated_bytes.all.current"], 1024 + 5 * MiB + 12 * MiB + 26 * MiB)
        self.assertEqual(s["reserved_bytes.all.current"], 2 * MiB + 20 * MiB + 26 * MiB)
        self.assertEqual((s["segment.small_pool.current"], s["segment.large_pool.current"]), (1, 2))
        for p in ptrs:
            self.a.free(p)
        self.assertEqual(self.a.malloc(0), 0)
        self.a.free(0)

    def test_out_of_memory_raises_with_pytorchs_message(self):
        p = self.a.malloc(1)
        before = self.a.memory_stats()
        with self.assertRaises(galloc.OutOfMemoryError) as cm:
            self.a.malloc(2 * GiB)
        e = cm.exception
        self.assertTrue(str(e).startswith("CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
                                          "capacity of 1024.00 MiB"), str(e))
        self.assertEqual((e.status, e.strerror), ("E_OOM", "out of device memory"))
        self.assertIsInstance(e, MemoryError)
        self.assertIsInstance(e, galloc.GallocError)
        after = self.a.memory_stats()
        # PyTorch's OOM path: one retry after synchronizing and freeing the
        # cache (nothing cached here), then the OOM; nothing else moves.
        counted = {"num_ooms": 1, "num_alloc_retries": 1, "num_sync_all_streams": 1}
        self.assertEqual({k: after[k] for k in counted}, counted)
        self.assertEqual({k: v for k, v in after.items() if k not in counted},
                         {k: v for k, v in before.items() if k not in counted})
        self.a.free(p)

    def test_foreign_and_double_free(self):
        p = self.a.malloc(4096)
        self.a.free(p)
        with self.assertRaises(galloc.NotOwnedError) as cm:
            self.a.free(p)
        self.assertEqual(cm.exception.status, "E_NOT_OWNED")
        with self.assertRaises(galloc.NotOwnedError):
            self.a.free(0x1000)
        with self.assertRaises(ValueError):
            self.a.malloc(-1)

    def test_record_stream_and_empty_cache(self):
        p = self.a.malloc(4096, stream=0)
        self.a.record_stream(p, 0x5100)
        self.a.free(p)
        self.a.empty_cache()
        s = self.a.memory_stats()
        self.assertEqual((s["active_bytes.all.current"], s["reserved_bytes.all.current"]), (0, 0))
        self.assertEqual(s["num_sync_all_streams"], 1)

    def test_summary_and_snapshots(self):
        p = self.a.malloc(3 * MiB)
        self.assertIn("PyTorch CUDA memory summary, device ID 0", self.a.memory_summary())
        with tempfile.TemporaryDirectory() as d:
            self.a.snapshot(os.path.join(d, "s.pickle"))
            self.a.snapshot(os.path.join(d, "s.json"))
            with open(os.path.join(d, "s.pickle"), "rb") as f:
                snap_p = pickle.load(f)
            with open(os.path.join(d, "s.json")) as f:
                snap_j = json.load(f)
            for snap in (snap_p, snap_j):
                self.assertEqual([(s["segment_type"], s["total_size"], s["allocated_size"]) for s in snap["segments"]],
                                 [("large", 20 * MiB, 3 * MiB)])
            with self.assertRaises(galloc.FileError) as cm:
                self.a.snapshot("/nonexistent/dir/s.pickle")
            self.assertIn("/nonexistent/dir/s.pickle", str(cm.exception))
        self.a.free(p)


class Inspection(unittest.TestCase):
    """usable_size() and segments() (api/galloc_inspect.h)."""

    def setUp(self):
        self.a = galloc.Allocator("sim_capacity:1GiB")

    def tearDown(self):
        self.a.close()

    def test_views_and_states_are_the_headers(self):
        header = repo_file("api/galloc_inspect.h")
        if header is None:
            self.skipTest("api/galloc_inspect.h is not beside the tests")
        from galloc import _native
        with open(header) as f:
            text = f.read()
        for i, name in enumerate(("FREE", "ALLOCATED", "PENDING_FREE")):
            self.assertRegex(text, rf"GALLOC_BLOCK_{name} = {i}\b")
        self.assertEqual(len(_native.BLOCK_STATES), 3)

        code = re.sub(r"/\*.*?\*/", "", text, flags=re.S)  # comments hold braces: "({0, 0}: ...)"

        def members(struct):
            body = re.search(r"typedef struct " + struct + r" \{(.*?)\}", code, re.S).group(1)
            return re.findall(r"\**(\w+);", body)

        self.assertEqual(members("galloc_block_view"), [f[0] for f in _native.BlockView._fields_])
        self.assertEqual(members("galloc_segment_view"), [f[0] for f in _native.SegmentView._fields_])

    def test_usable_size_is_what_allocated_bytes_counts(self):
        one, big, whole = self.a.malloc(1), self.a.malloc(MiB + 1), self.a.malloc(19 * MiB + 512 * 1024)
        self.assertEqual(self.a.usable_size(one), 512)
        self.assertEqual(self.a.usable_size(big), 1049088)  # 1 MiB + 1 rounded to 512 bytes
        self.assertEqual(self.a.usable_size(whole), 20 * MiB)  # 512 KiB left: too small to split off
        self.assertEqual(self.a.memory_stats()["allocated_bytes.all.current"], 512 + 1049088 + 20 * MiB)
        with self.assertRaises(galloc.NotOwnedError):
            self.a.usable_size(one + 512)
        self.a.free(one)
        with self.assertRaises(galloc.NotOwnedError):
            self.a.usable_size(one)
        with self.assertRaises(galloc.InvalidArgumentError):
            self.a.usable_size(0)
        with self.assertRaises(TypeError):
            self.a.usable_size("0x1000")
        self.a.free(big)
        self.a.free(whole)

    def test_segments_as_snapshots_list_them(self):
        self.assertEqual(self.a.segments(), [])
        small, large = self.a.malloc(1, stream=3), self.a.malloc(3 * MiB, stream=3)
        segs = self.a.segments()
        self.assertEqual([s.address for s in segs], sorted(s.address for s in segs))
        self.assertEqual(sorted((s.size, s.small, s.expandable, s.stream, s.pool) for s in segs),
                         [(2 * MiB, True, False, 3, (0, 0)), (20 * MiB, False, False, 3, (0, 0))])
        by_size = {s.size: s for s in segs}
        self.assertEqual(by_size[2 * MiB].blocks, (galloc.Block(small, 512, 1, "active_allocated"),
                                                   galloc.Block(small + 512, 2 * MiB - 512, 0, "inactive")))
        self.assertEqual([(b.size, b.state) for b in by_size[20 * MiB].blocks],
                         [(3 * MiB, "active_allocated"), (17 * MiB, "inactive")])
        stats = self.a.memory_stats()
        self.assertEqual(sum(s.size for s in segs), stats["reserved_bytes.all.current"])
        self.assertEqual(sum(b.size for s in segs for b in s.blocks if b.state == "active_allocated"),
                         stats["allocated_bytes.all.current"])
        self.a.free(small)
        self.a.free(large)

    def test_a_mempools_segment_and_expandable_ranges(self):
        pool = self.a.mempool()
        with self.a.use_mempool(pool):
            p = self.a.malloc(4096)
        self.assertEqual([s.pool for s in self.a.segments()], [pool])
        self.a.free(p)
        self.a.release_mempool(pool)
        self.a.empty_cache()
        with galloc.Allocator("sim_capacity:1GiB,expandable_segments:True") as e:
            x, y, z = (e.malloc(20 * MiB) for _ in range(3))
            e.free(y)
            e.empty_cache()  # unmaps y's page: the mapped range splits in two
            self.assertEqual([(s.address, s.size, s.expandable) for s in e.segments()],
                             [(x, 20 * MiB, True), (z, 20 * MiB, True)])
            self.assertEqual(e.memory_stats()["reserved_bytes.all.current"], 40 * MiB)
            e.free(x)
            e.free(z)


class AllocatorErrors(unittest.TestCase):
    def test_bad_configuration_names_the_key(self):
        with self.assertRaises(galloc.ConfigError) as cm:
            galloc.Allocator("max_split_size_mb:lots")
        self.assertEqual(cm.exception.status, "E_CONFIG")
        self.assertIn("max_split_size_mb", str(cm.exception))

    def test_unknown_backend(self):
        with self.assertRaises(galloc.UnavailableError) as cm:
            galloc.Allocator(backend="no_such_backend")
        self.assertEqual(cm.exception.status, "E_UNAVAILABLE")

    def assertOpensCuda(self, **kw):
        """The allocator tried cuda: it runs there, or there is no driver to open."""
        try:
            with galloc.Allocator(**kw) as a:
                self.assertEqual(a.backend, "cuda")
        except galloc.UnavailableError as e:
            self.assertIn('device backend "cuda"', str(e))

    def test_the_configurations_backend_is_used_when_the_argument_is_not_given(self):
        self.assertOpensCuda(conf="device_backend:cuda")
        self.assertOpensCuda(conf="roundup_power2_divisions:[256:1, >:2], device_backend : cu da")
        with galloc.Allocator("sim_capacity:1GiB,device_backend:sim") as a:
            self.assertEqual(a.backend, "sim")

    def test_the_argument_is_used_when_the_configuration_names_no_backend(self):
        self.assertOpensCuda(conf="max_split_size_mb:512", backend="cuda")
        with galloc.Allocator("sim_capacity:1GiB", backend="sim") as a:
            self.assertEqual(a.backend, "sim")

    def test_both_given_must_agree(self):
        with galloc.Allocator("device_backend:sim", backend="sim") as a:
            self.assertEqual(a.backend, "sim")
        with self.assertRaises(galloc.InvalidArgumentError) as cm:
            galloc.Allocator("device_backend:cuda", backend="sim")
        self.assertEqual(cm.exception.status, "E_INVAL")
        self.assertIn('backend="sim"', str(cm.exception))
        self.assertIn("device_backend:cuda", str(cm.exception))
        # The last item is the one the C parser keeps.
        with self.assertRaises(galloc.InvalidArgumentError):
            galloc.Allocator("device_backend:sim,device_backend:cuda", backend="sim")

    def test_neither_given_is_the_simulated_device_or_the_environments(self):
        code = "import galloc\nprint(galloc.Allocator().backend)"
        env = {k: "" for k in ("GALLOC_CONF", "PYTORCH_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF")}
        r = run_python(code, env)
        self.assertEqual((r.returncode, r.stdout.strip()), (0, "sim"), r.stderr)
        r = run_python(code, dict(env, GALLOC_CONF="device_backend:cuda"))
        self.assertTrue(r.stdout.strip() == "cuda" or 'device backend "cuda"' in r.stderr, r.stderr)

    def test_close_is_idempotent_and_final(self):
        with galloc.Allocator() as a:
            self.assertEqual(a.backend, "sim")
        a.close()
        with self.assertRaises(ValueError):
            a.malloc(1)


if __name__ == "__main__":
    unittest.main()
