"""galloc.torch's sleep and wake against fake_torch (PyTorch 2.x's pluggable
allocator calls) on the simulated device in backed mode: tensors' bytes are
host memory that ctypes reads, so offloaded contents are checked byte for
byte, at unchanged data_ptr()s."""
import ctypes
import unittest
import warnings

import fake_torch
import galloc
from support import MiB, CStderr

CONF = "sim_capacity:1GiB,sim_backed:True"


def fill(t, data):
    ctypes.memmove(t.data_ptr(), data, len(data))


def read(t, n):
    return ctypes.string_at(t.data_ptr(), n)


class TorchSleep(unittest.TestCase):
    def setUp(self):
        self.state = fake_torch.install(device_count=2)
        import galloc.torch
        self.gt = galloc.torch
        with CStderr(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.gt.use(CONF, device_backend="sim", oom="null")
        import torch
        self.torch = torch

    def tearDown(self):
        self.state.current = None  # drops the fake's allocator before galloc's registry goes
        self.gt._shutdown()
        fake_torch.uninstall()

    def test_offloaded_tensor_is_restored_at_the_same_address(self):
        torch, gt = self.torch, self.gt
        with gt.tagged("weights"):
            w = torch.empty(5 * MiB)
        with gt.tagged("kv_cache"):
            k = torch.empty(3 * MiB)
        other = torch.empty(2 * MiB)  # untagged: the default pool
        wd = bytes(range(256)) * (5 * MiB // 256)
        fill(w, wd)
        fill(other, b"\x11" * (2 * MiB))
        ptrs = (w.data_ptr(), k.data_ptr(), other.data_ptr())
        reserved = gt.memory_stats()["reserved_bytes.all.current"]
        self.assertEqual(reserved, 60 * MiB)  # three 20 MiB segments: a tag's pool is its own
        n_calls = len(self.state.calls)
        gt.sleep(offload="weights")
        self.assertEqual(self.state.calls[n_calls:], [("synchronize", 0)])  # waited for the device first
        self.assertEqual((gt.tag_asleep("weights"), gt.tag_asleep("kv_cache")), (True, True))
        self.assertEqual(gt.memory_stats()["reserved_bytes.all.current"], 20 * MiB)  # the default pool's
        s = gt.sleep_stats()
        self.assertEqual((s["galloc.sleep.tags_asleep"], s["galloc.sleep.bytes_asleep"]), (2, 40 * MiB))
        self.assertEqual(read(other, 2 * MiB), b"\x11" * (2 * MiB))  # untagged memory stays
        gt.wake()
        self.assertEqual((w.data_ptr(), k.data_ptr(), other.data_ptr()), ptrs)
        self.assertTrue(read(w, len(wd)) == wd, "the offloaded tensor's bytes changed")
        fill(k, b"\x22" * (3 * MiB))  # discarded: undefined bytes, but memory again
        self.assertEqual(read(k, 3 * MiB), b"\x22" * (3 * MiB))
        self.assertEqual(gt.memory_stats()["reserved_bytes.all.current"], 60 * MiB)
        del w, k, other
        self.assertEqual(gt.memory_stats()["allocated_bytes.all.current"], 0)

    def test_sleep_prepare_pins_ahead_without_synchronizing(self):
        torch, gt = self.torch, self.gt
        with gt.tagged("weights"):
            w = torch.empty(5 * MiB)
        wd = bytes(range(256)) * (5 * MiB // 256)
        fill(w, wd)
        n_calls = len(self.state.calls)
        gt.sleep_prepare(offload="weights")
        self.assertEqual(self.state.calls[n_calls:], [])  # no device work waited for
        self.assertEqual(gt.sleep_stats()["galloc.sleep.bytes_host_cached"], 5 * MiB)
        gt.sleep(offload="weights")
        self.assertEqual(gt.sleep_stats()["galloc.sleep.bytes_host_cached"], 0)  # the sleep took it
        gt.wake()
        self.assertTrue(read(w, len(wd)) == wd)
        with self.assertRaises(galloc.InvalidArgumentError):
            gt.sleep_prepare("no_such_tag", offload="weights")
        del w

    def test_a_tensor_in_a_sleeping_tag_is_refused_with_the_tags_name(self):
        torch, gt = self.torch, self.gt
        with gt.tagged("kv_cache"):
            k = torch.empty(MiB)
        gt.sleep("kv_cache")
        with CStderr() as err:
            with gt.tagged("kv_cache"):
                t = torch.empty(MiB)
        self.assertEqual(t.data_ptr(), 0)  # PyTorch 2.x's NULL (use(oom="raise") makes it a RuntimeError)
        status, msg = gt.last_error()
        self.assertEqual(status, "E_ASLEEP")
        self.assertIn("kv_cache", msg)
        self.assertIn("galloc: malloc on device 0", err.text)
        del t
        del k  # freeing a sleeping tensor is allowed
        gt.wake()
        self.assertNotEqual(torch.empty(MiB).data_ptr(), 0)

    def test_tagged_is_per_device_and_ends_on_exception(self):
        torch, gt = self.torch, self.gt
        with self.assertRaises(ZeroDivisionError):
            with gt.tagged("weights", device=1):
                w1 = torch.empty(2 * MiB, device="cuda:1")
                w0 = torch.empty(2 * MiB, device="cuda:0")  # device 0 has no tag begun
                1 / 0
        after = torch.empty(2 * MiB, device="cuda:1")  # the tag ended with the block
        fill(after, b"\x33" * (2 * MiB))
        fill(w0, b"\x44" * (2 * MiB))
        gt.sleep("weights", device=1)
        self.assertTrue(gt.tag_asleep("weights", device=1))
        with self.assertRaises(galloc.InvalidArgumentError):
            gt.tag_asleep("weights", device=0)  # device 0 never had the tag
        self.assertEqual(read(after, 2 * MiB), b"\x33" * (2 * MiB))
        self.assertEqual(read(w0, 2 * MiB), b"\x44" * (2 * MiB))
        self.assertEqual(gt.sleep_stats(0)["galloc.sleep.tags"], 0)
        self.assertEqual(gt.sleep_stats(1)["galloc.sleep.tags_asleep"], 1)
        gt.wake(device=1)
        self.assertFalse(gt.tag_asleep("weights", device=1))
        with gt.tagged("weights", device=1):  # begun again: it was ended
            pass
        del w1, w0, after

    def test_unknown_tag_and_bad_arguments(self):
        gt = self.gt
        with self.assertRaises(galloc.InvalidArgumentError):
            gt.sleep("no_such_tag")
        with self.assertRaises(galloc.InvalidArgumentError):
            gt.wake(["no_such_tag"])
        with self.assertRaises(ValueError):
            gt.sleep([])
        with self.assertRaises(TypeError):
            with gt.tagged(b"weights"):
                pass

if __name__ == "__main__":
    unittest.main()
