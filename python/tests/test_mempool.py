"""galloc.Allocator's private pools (torch.cuda.MemPool's use_on_oom and
no_split) on the simulated device, with the C tests' exact figures
(tests/api/mempool_flags_test.cc)."""
import re
import unittest

import galloc
from galloc import _native
from support import MiB, repo_file


class MempoolBindings(unittest.TestCase):
    def test_flag_and_route_values_are_the_headers(self):
        header = repo_file("api/galloc_mempool.h")
        if header is None:
            self.skipTest("api/galloc_mempool.h is not beside the tests")
        with open(header) as f:
            text = f.read()
        self.assertEqual(int(re.search(r"#define GALLOC_MEMPOOL_USE_ON_OOM (\d+)u", text).group(1)),
                         _native.MEMPOOL_USE_ON_OOM)
        self.assertEqual(int(re.search(r"#define GALLOC_MEMPOOL_NO_SPLIT (\d+)u", text).group(1)),
                         _native.MEMPOOL_NO_SPLIT)
        self.assertIn(f"GALLOC_ROUTE_THREAD = {_native.ROUTE_THREAD}", text)


class Mempools(unittest.TestCase):
    def full_device_with_cached_pool_segment(self, **flags):
        """A 20 MiB device whose one segment is a pool's, cached and free."""
        a = galloc.Allocator("sim_capacity:20MiB")
        self.addCleanup(a.close)
        pool = a.mempool(**flags)
        with a.use_mempool(pool):
            p = a.malloc(8 * MiB)
        a.free(p)
        return a, pool, p

    def test_use_on_oom_serves_the_default_pool_from_the_pools_cache(self):
        a, pool, cached = self.full_device_with_cached_pool_segment(use_on_oom=True)
        self.assertEqual(pool, (0, 1))
        self.assertEqual(a.malloc(4 * MiB), cached)
        s = a.memory_stats()
        self.assertEqual(s["allocated_bytes.large_pool.current"], 4 * MiB)
        self.assertEqual(s["reserved_bytes.all.current"], 20 * MiB)
        self.assertEqual(s["inactive_split_bytes.large_pool.current"], 16 * MiB)
        self.assertEqual((s["num_alloc_retries"], s["num_ooms"], s["num_device_alloc"]), (0, 0, 1))

    def test_without_it_the_request_is_an_oom(self):
        a, _, _ = self.full_device_with_cached_pool_segment()
        with self.assertRaises(galloc.OutOfMemoryError):
            a.malloc(4 * MiB)
        s = a.memory_stats()
        self.assertEqual((s["num_alloc_retries"], s["num_ooms"]), (1, 1))

    def test_no_split_hands_out_whole_segments(self):
        a = galloc.Allocator("")
        self.addCleanup(a.close)
        pool = a.mempool(no_split=True)
        with a.use_mempool(pool):
            a.malloc(4 * MiB)
            a.malloc(512)
        s = a.memory_stats()
        self.assertEqual((s["allocated_bytes.large_pool.current"], s["requested_bytes.large_pool.current"]),
                         (20 * MiB, 4 * MiB))
        self.assertEqual(s["allocated_bytes.small_pool.current"], 2 * MiB)
        self.assertEqual(s["inactive_split.all.current"], 0)

    def test_released_and_unknown_pools_are_refused(self):
        a = galloc.Allocator("")
        self.addCleanup(a.close)
        pool = a.mempool()
        a.release_mempool(pool)
        with self.assertRaises(galloc.InvalidArgumentError):
            with a.use_mempool(pool):
                pass
        with self.assertRaises(galloc.InvalidArgumentError):
            a.release_mempool((0, 99))

    def test_the_route_ends_with_the_block_even_on_an_exception(self):
        a = galloc.Allocator("")
        self.addCleanup(a.close)
        pool = a.mempool()
        with self.assertRaises(KeyError):
            with a.use_mempool(pool):
                raise KeyError("x")
        with a.use_mempool(pool):  # not "already recording": the first route ended
            p = a.malloc(512)
        q = a.malloc(512)  # outside: the default pool's own segment
        s = a.memory_stats()
        self.assertEqual(s["segment.small_pool.current"], 2)
        a.free(p)
        a.free(q)


if __name__ == "__main__":
    unittest.main()
