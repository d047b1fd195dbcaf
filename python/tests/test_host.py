"""The pinned host cache through galloc.Allocator (api/galloc_host.h) on the
simulated device: torch.cuda.host_memory_stats()'s keys in its order and
PyTorch's own test figures (test/test_cuda.py, test_host_memory_stats), the
round threshold and the cache cap (PR #171662), reuse after a stream's event,
the refusals. The sim device completes an event as soon as it is recorded."""
import ctypes
import re
import unittest

import galloc
from galloc import _native
from support import MiB, repo_file

CONF = "sim_capacity:1GiB"


class HostBindings(unittest.TestCase):
    def test_the_keys_are_the_headers_list_in_pytorchs_order(self):
        with galloc.Allocator(CONF) as a:
            keys = list(a.host_memory_stats())
        self.assertEqual(len(keys), 28)
        self.assertEqual(keys, sorted(keys), "torch.cuda.host_memory_stats sorts its keys")
        self.assertEqual(keys[:4], ["active_bytes.allocated", "active_bytes.current", "active_bytes.freed",
                                    "active_bytes.peak"])
        self.assertEqual(keys[-2:], ["num_host_alloc", "num_host_free"])
        for k in ("host_alloc_time.avg", "host_alloc_time.count", "host_alloc_time.max", "host_alloc_time.min",
                  "host_alloc_time.total"):
            self.assertIn(k, keys)
        header = repo_file("api/galloc_host.h")
        if header is None:
            self.skipTest("api/galloc_host.h is not beside the tests")
        with open(header) as f:
            fields = re.findall(r"^\s*(STAT|DURATION|INT)\((\w+)\)", f.read(), re.M)
        heads = sorted({k.split(".")[0] for k in keys})
        self.assertEqual(heads, sorted(name for _, name in fields))
        self.assertGreaterEqual(_native.HOST_STATS_BUFFER, 4 + 8 * len(keys))


class HostFigures(unittest.TestCase):
    def setUp(self):
        self.a = galloc.Allocator(CONF)

    def tearDown(self):
        self.a.close()

    def test_pytorchs_test_host_memory_stats(self):
        # torch.ones(10 * 1024) and torch.ones(20 * 1024) pinned: 40960 and
        # 81920 bytes, rounded to 65536 and 131072.
        t1 = self.a.host_malloc(10 * 1024 * 4)
        s = self.a.host_memory_stats()
        for k in ("active_requests", "allocations"):
            self.assertEqual([s[k + ".allocated"], s[k + ".current"], s[k + ".peak"]], [1, 1, 1], k)
        for k in ("active_bytes", "allocated_bytes"):
            self.assertEqual([s[k + ".allocated"], s[k + ".current"], s[k + ".peak"]], [65536] * 3, k)
        self.assertEqual((s["num_host_alloc"], s["host_alloc_time.count"]), (1, 1))
        t2 = self.a.host_malloc(20 * 1024 * 4)
        s = self.a.host_memory_stats()
        self.assertEqual(s["allocated_bytes.current"], 65536 + 131072)
        self.assertEqual(s["num_host_alloc"], 2)
        self.a.host_empty_cache()
        self.assertEqual(self.a.host_memory_stats(), s, "both blocks are in use")
        ctypes.memset(t1, 0x11, 40960)  # the memory is the caller's
        self.a.host_free(t1)
        self.a.host_free(t2)
        self.a.host_empty_cache()
        s = self.a.host_memory_stats()
        self.assertEqual((s["allocations.current"], s["num_host_free"], s["host_free_time.count"]), (0, 2, 2))
        self.a.reset_accumulated_host_memory_stats()
        self.a.reset_peak_host_memory_stats()
        s = self.a.host_memory_stats()
        self.assertEqual(set(s.values()) - {0}, set(), "nothing live, nothing accumulated, no peak")

    def test_a_block_comes_back_after_its_streams_event(self):
        p = self.a.host_malloc(MiB)
        self.a.host_record_stream(p, 1)
        self.a.host_record_stream(p, 2)
        self.a.host_free(p)
        self.assertEqual(self.a.host_malloc(MiB), p, "sim completed both events: the block is reused")
        self.assertEqual(self.a.host_memory_stats()["num_host_alloc"], 1)
        self.a.host_free(p)

    def test_misuse_raises(self):
        p = self.a.host_malloc(4096)
        with self.assertRaises(galloc.NotOwnedError):
            self.a.host_free(p + 8)
        self.a.host_free(p)
        with self.assertRaises(galloc.NotOwnedError) as e:
            self.a.host_free(p)
        self.assertIn("freed already", str(e.exception))
        with self.assertRaises(ValueError):
            self.a.host_malloc(-1)
        self.assertEqual(self.a.host_malloc(0), 0)
        self.a.host_free(0)


class HostSettings(unittest.TestCase):
    def test_threshold_and_cap(self):
        with galloc.Allocator(CONF + ",pinned_max_round_threshold_mb:1,pinned_max_cached_size_mb:4") as a:
            p = a.host_malloc(MiB + 1)  # above the threshold: exact
            q = a.host_malloc(5 * MiB)  # above the cap: exact, given back when freed
            s = a.host_memory_stats()
            self.assertEqual(s["allocated_bytes.current"], MiB + 1 + 5 * MiB)
            a.host_free(q)
            s = a.host_memory_stats()
            self.assertEqual((s["allocations.current"], s["num_host_free"]), (1, 1))
            a.host_free(p)
            self.assertEqual(a.host_memory_stats()["allocations.current"], 1, "under the cap: cached")

    def test_bad_values_are_config_errors(self):
        with self.assertRaises(galloc.ConfigError) as e:
            galloc.Allocator(CONF + ",pinned_max_cached_size_mb:many")
        self.assertIn("pinned_max_cached_size_mb: expected a whole number of MiB", str(e.exception))
        with self.assertRaises(galloc.ConfigError):
            galloc.Allocator(CONF + ",pinned_reserve_segment_size_mb:0")


if __name__ == "__main__":
    unittest.main()
