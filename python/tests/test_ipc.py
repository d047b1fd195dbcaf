"""galloc.Allocator's ipc_* methods (api/galloc_ipc.h). The simulated device
has no memory another process could map, so export must raise a clear
UnsupportedError and change nothing; handles are checked before any call;
the counts start at zero. Two processes exchanging bytes on the fake CUDA
and HIP drivers are tested in C (tests/backend/share_cases.cc)."""
import re
import socket
import unittest

import galloc
from galloc import _native
from support import MiB, repo_file


class Header(unittest.TestCase):
    def test_constants_match_the_header(self):
        header = repo_file("api/galloc_ipc.h")
        if header is None:
            self.skipTest("api/galloc_ipc.h is not beside the tests")
        with open(header) as f:
            text = f.read()
        self.assertEqual(int(re.search(r"#define GALLOC_IPC_HANDLE_BYTES (\d+)", text).group(1)),
                         _native.IPC_HANDLE_BYTES)
        for value, name in _native.IPC_KINDS.items():
            self.assertIn(f"GALLOC_IPC_{name.upper()} = {value}", text)
        members = re.search(r"typedef struct galloc_ipc_stats \{(.*?)\}", text, re.S).group(1)
        self.assertEqual(re.findall(r"size_t (\w+);", members), [n for n, _ in _native.IpcStats._fields_])


class Ipc(unittest.TestCase):
    def setUp(self):
        self.a = galloc.Allocator("sim_capacity:1GiB")
        self.addCleanup(self.a.close)

    def test_sim_cannot_share_and_says_so(self):
        p = self.a.malloc(3 * MiB)
        before = self.a.memory_stats()
        with self.assertRaises(galloc.UnsupportedError) as cm:
            self.a.ipc_export(p)
        self.assertIn("cannot share segments between processes", str(cm.exception))
        self.assertEqual(self.a.memory_stats(), before)
        self.assertEqual(self.a.ipc_stats(), {"exports": 0, "limbo_blocks": 0, "limbo_bytes": 0, "opened": 0})
        self.a.free(p)

    def test_expandable_sim_cannot_export_pages_either(self):
        a = galloc.Allocator("sim_capacity:1GiB,expandable_segments:True")
        self.addCleanup(a.close)
        p = a.malloc(5 * MiB)
        with self.assertRaises(galloc.UnsupportedError) as cm:
            a.ipc_export(p)
        self.assertIn("cannot export mapped pages", str(cm.exception))
        a.free(p)

    def test_not_a_block(self):
        with self.assertRaises(galloc.NotOwnedError):
            self.a.ipc_export(0x1234)
        with self.assertRaises(galloc.NotOwnedError):
            self.a.ipc_close(0x1234)

    def test_handles_are_checked_first(self):
        for bad in (b"", b"x" * 159, "x" * 160, None, 7):
            with self.assertRaises(TypeError, msg=repr(bad)):
                self.a.ipc_open(bad)
            with self.assertRaises(TypeError, msg=repr(bad)):
                galloc.ipc_info(bad)
        junk = bytes(range(160))
        with self.assertRaises(galloc.GallocError) as cm:
            galloc.ipc_info(junk)
        self.assertEqual(cm.exception.status, "E_FORMAT")
        with self.assertRaises(galloc.GallocError) as cm:
            self.a.ipc_open(junk)
        self.assertIn("not a galloc IPC handle", str(cm.exception))

    def test_sockets_and_descriptors(self):
        with self.assertRaises(TypeError):
            self.a.ipc_recv("not a socket")
        with self.assertRaises(TypeError):
            self.a.ipc_send(-1, bytes(160))
        left, right = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        right.close()
        with self.assertRaises(galloc.FileError) as cm:
            self.a.ipc_recv(left)
        self.assertIn("socket", str(cm.exception))
        left.close()

    def test_collect_with_nothing_shared(self):
        self.assertEqual(self.a.ipc_collect(), 0)

    def test_a_closed_allocator(self):
        a = galloc.Allocator("sim_capacity:1GiB")
        a.close()
        with self.assertRaises(ValueError):
            a.ipc_export(0x1000)
        with self.assertRaises(ValueError):
            a.ipc_stats()


if __name__ == "__main__":
    unittest.main()
