"""galloc.Allocator.enable_peer_access (api/galloc_allocator.h): the simulated
device is one device alone and has no peer access, so the call must raise a
clear UnsupportedError and change nothing; bad arguments are refused before
the call. The two-device behaviour is tested in C on the fake drivers
(tests/backend/peer_cases.cc)."""
import unittest

import galloc
from support import MiB


class PeerAccess(unittest.TestCase):
    def setUp(self):
        self.a = galloc.Allocator("sim_capacity:1GiB")
        self.addCleanup(self.a.close)

    def test_sim_has_no_peer_access_and_says_so(self):
        p = self.a.malloc(3 * MiB)
        before = self.a.memory_stats()
        with self.assertRaises(galloc.UnsupportedError) as cm:
            self.a.enable_peer_access(1)
        self.assertIn("peer access", str(cm.exception))
        self.assertIn("sim", str(cm.exception))
        self.assertEqual(self.a.memory_stats(), before)
        self.a.free(p)

    def test_expandable_segments_on_sim_too(self):
        a = galloc.Allocator("sim_capacity:1GiB,expandable_segments:True")
        self.addCleanup(a.close)
        a.free(a.malloc(5 * MiB))
        with self.assertRaises(galloc.UnsupportedError):
            a.enable_peer_access(1)

    def test_bad_arguments(self):
        for bad in ("1", 1.0, None, True):
            with self.assertRaises(TypeError, msg=repr(bad)):
                self.a.enable_peer_access(bad)
        with self.assertRaises(ValueError):
            self.a.enable_peer_access(2**40)

    def test_a_closed_allocator(self):
        a = galloc.Allocator("sim_capacity:1GiB")
        a.close()
        with self.assertRaises(ValueError):
            a.enable_peer_access(1)


if __name__ == "__main__":
    unittest.main()
