"""Sleep and wake through galloc.Allocator (api/galloc_sleep.h) on the
simulated device in backed mode (sim_backed:True: its device pointers are host
memory, so ctypes reads and writes them): offloaded bytes come back exactly,
discarded tags keep their pointers, the counters have exact figures."""
import ctypes
import re
import threading
import unittest

import galloc
from galloc import _native
from support import MiB, repo_file

CONF = "sim_capacity:1GiB,sim_backed:True"


def pattern(n, seed):
    """n bytes that differ from one allocation (seed) to another."""
    return bytes((i * 131 + seed * 17 + (i >> 8)) & 0xFF for i in range(n))


def fill(ptr, data):
    ctypes.memmove(ptr, data, len(data))


def read(ptr, n):
    return ctypes.string_at(ptr, n)


class SleepBindings(unittest.TestCase):
    """What holds whatever the pool does: the ABI and the argument forms."""

    def test_sleep_stats_members_are_the_headers(self):
        header = repo_file("api/galloc_sleep.h")
        if header is None:
            self.skipTest("api/galloc_sleep.h is not beside the tests")
        with open(header) as f:
            body = re.search(r"typedef struct galloc_sleep_stats \{(.*?)\} galloc_sleep_stats_t;", f.read(), re.S)
        self.assertIsNotNone(body)
        members = re.findall(r"^\s*uint64_t\s+(\w+);", body.group(1), re.M)
        self.assertEqual(tuple(members), _native.SLEEP_STATS_FIELDS)
        self.assertEqual(ctypes.sizeof(_native.SleepStats), 8 * len(members))

    def test_asleep_status_raises_asleep_error(self):
        code = galloc.STATUS_NAMES.index("E_ASLEEP")
        e = galloc.errors.error(code, "tag weights is asleep")
        self.assertIs(type(e), galloc.AsleepError)
        self.assertEqual((e.status, e.code, str(e)), ("E_ASLEEP", code, "tag weights is asleep"))
        self.assertEqual(e.strerror, "memory pool is asleep")

    def test_tag_arguments(self):
        self.assertIsNone(_native.tag_list(None))
        self.assertEqual(_native.tag_list("weights"), b"weights")
        self.assertEqual(_native.tag_list("weights,kv"), b"weights,kv")
        self.assertEqual(_native.tag_list(["weights", "kv"]), b"weights,kv")
        self.assertEqual(_native.tag_list(t for t in ("a", "b")), b"a,b")
        # C reads "" as every tag: an empty Python list must not mean that.
        for empty in ([], (), ""):
            with self.assertRaises(ValueError):
                _native.tag_list(empty)
        with self.assertRaises(TypeError):
            _native.tag_list(b"weights")
        with self.assertRaises(TypeError):
            _native.tag_list(["weights", 3])
        # offload: None or nothing named offloads nothing.
        self.assertIsNone(_native.offload_list(None))
        self.assertIsNone(_native.offload_list([]))
        self.assertIsNone(_native.offload_list(t for t in ()))
        self.assertEqual(_native.offload_list(t for t in ("w",)), b"w")
        self.assertEqual(_native.offload_list({"w"}), b"w")


class SleepWake(unittest.TestCase):
    def setUp(self):
        self.a = galloc.Allocator(CONF)

    def tearDown(self):
        self.a.close()

    def test_offloaded_contents_are_byte_exact(self):
        a = self.a
        sizes = (3 * MiB, 1000, 12 * MiB + 5)
        with a.tag("weights"):
            ptrs = [a.malloc(n) for n in sizes]
        datas = [pattern(n, i) for i, n in enumerate(sizes)]
        for p, d in zip(ptrs, datas):
            fill(p, d)
        self.assertFalse(a.tag_asleep("weights"))
        before = a.memory_stats()
        a.sleep(offload="weights")
        self.assertTrue(a.tag_asleep("weights"))
        asleep = a.memory_stats()
        # PyTorch's keys: only reserved memory falls; the tensors still exist.
        self.assertEqual(asleep["reserved_bytes.all.current"], 0)
        self.assertEqual(asleep["allocated_bytes.all.current"], before["allocated_bytes.all.current"])
        self.assertEqual(asleep["active_bytes.all.current"], before["active_bytes.all.current"])
        self.assertEqual(asleep["segment.all.current"], before["segment.all.current"])
        a.wake()
        self.assertFalse(a.tag_asleep("weights"))
        self.assertEqual(a.memory_stats()["reserved_bytes.all.current"], before["reserved_bytes.all.current"])
        for p, d in zip(ptrs, datas):
            self.assertTrue(read(p, len(d)) == d, f"{len(d)} bytes at {p:#x} changed across sleep")
        for p in ptrs:
            a.free(p)

    def test_discarded_tag_keeps_valid_pointers(self):
        a = self.a
        with a.tag("weights"):
            w = a.malloc(4 * MiB)
        with a.tag("kv_cache"):
            k = a.malloc(6 * MiB)
        wd, kd = pattern(4 * MiB, 1), pattern(6 * MiB, 2)
        fill(w, wd)
        fill(k, kd)
        a.sleep(["weights", "kv_cache"], offload=["weights"])
        self.assertEqual((a.tag_asleep("weights"), a.tag_asleep("kv_cache")), (True, True))
        a.wake("kv_cache")
        self.assertEqual((a.tag_asleep("weights"), a.tag_asleep("kv_cache")), (True, False))
        # Discarded: the bytes are undefined, the pointer is memory again.
        fill(k, kd[::-1])
        self.assertTrue(read(k, len(kd)) == kd[::-1])
        a.wake(["weights"])
        self.assertTrue(read(w, len(wd)) == wd)
        a.free(k)
        a.free(w)
        with self.assertRaises(galloc.NotOwnedError):
            a.free(k)

    def test_sleep_stats_exact(self):
        a = self.a
        self.assertEqual(a.sleep_stats(), {f"galloc.sleep.{k}": 0 for k in _native.SLEEP_STATS_FIELDS})
        with a.tag("weights"):
            w = a.malloc(3 * MiB)  # a 20 MiB segment (PyTorch's kLargeBuffer)
        with a.tag("kv_cache"):
            k = a.malloc(1000)  # a 2 MiB small segment
        reserved = a.memory_stats()["reserved_bytes.all.current"]
        self.assertEqual(reserved, 22 * MiB)
        a.sleep(offload="weights")
        s = a.sleep_stats()
        self.assertEqual(list(s), [f"galloc.sleep.{k}" for k in _native.SLEEP_STATS_FIELDS])
        self.assertFalse(set(s) & set(a.memory_stats()))  # never one of PyTorch's keys
        self.assertEqual(s, {
            "galloc.sleep.tags": 2, "galloc.sleep.tags_asleep": 2, "galloc.sleep.bytes_asleep": 22 * MiB,
            "galloc.sleep.bytes_offloaded": 3 * MiB, "galloc.sleep.peak_bytes_offloaded": 3 * MiB,
            "galloc.sleep.num_sleep": 1, "galloc.sleep.num_wake": 0, "galloc.sleep.bytes_slept": 22 * MiB,
            "galloc.sleep.bytes_woken": 0, "galloc.sleep.num_failed": 0, "galloc.sleep.bytes_host_cached": 0})
        a.sleep()  # every tag already asleep: nothing to count
        self.assertEqual(a.sleep_stats()["galloc.sleep.num_sleep"], 1)
        a.wake()
        self.assertEqual(a.sleep_stats(), {
            "galloc.sleep.tags": 2, "galloc.sleep.tags_asleep": 0, "galloc.sleep.bytes_asleep": 0,
            "galloc.sleep.bytes_offloaded": 0, "galloc.sleep.peak_bytes_offloaded": 3 * MiB,
            "galloc.sleep.num_sleep": 1, "galloc.sleep.num_wake": 1, "galloc.sleep.bytes_slept": 22 * MiB,
            "galloc.sleep.bytes_woken": 22 * MiB, "galloc.sleep.num_failed": 0,
            "galloc.sleep.bytes_host_cached": 3 * MiB})  # the pinned block, kept for the next sleep
        a.empty_cache()
        self.assertEqual(a.sleep_stats()["galloc.sleep.bytes_host_cached"], 0)
        a.free(w)
        a.free(k)

    def test_allocating_from_a_sleeping_tag_raises_asleep_error(self):
        a = self.a
        with a.tag("kv_cache"):
            k = a.malloc(2 * MiB)
        a.sleep("kv_cache")
        before = a.memory_stats()
        with a.tag("kv_cache"):
            with self.assertRaises(galloc.AsleepError) as cm:
                a.malloc(1)
        self.assertEqual(cm.exception.status, "E_ASLEEP")
        self.assertIn("kv_cache", str(cm.exception))
        self.assertEqual(a.memory_stats()["allocated_bytes.all.current"], before["allocated_bytes.all.current"])
        p = a.malloc(512)  # outside the tag: the default pool is awake
        fill(p, b"\x5a" * 512)
        self.assertEqual(read(p, 512), b"\x5a" * 512)
        a.free(k)  # freeing a sleeping block is allowed
        a.wake()
        a.free(p)

    def test_tag_ends_when_its_block_raises(self):
        a = self.a
        with self.assertRaises(KeyError):
            with a.tag("weights"):
                w = a.malloc(1 * MiB)
                raise KeyError("inside")
        p = a.malloc(1 * MiB)  # after the block: not in the tag
        fill(p, pattern(MiB, 3))
        a.sleep("weights")
        self.assertTrue(read(p, MiB) == pattern(MiB, 3))  # p's memory stayed mapped
        a.wake("weights")
        with a.tag("weights"):  # begun again: it was ended
            a.free(a.malloc(1))
        a.free(w)
        a.free(p)

    def test_a_tag_covers_the_calling_thread_only(self):
        a = self.a
        got = []
        with a.tag("weights"):
            w = a.malloc(4 * MiB)
            t = threading.Thread(target=lambda: got.append(a.malloc(4 * MiB)))
            t.start()
            t.join()
        other = got[0]
        fill(other, b"\x66" * (4 * MiB))
        a.sleep("weights")
        self.assertEqual(a.sleep_stats()["galloc.sleep.bytes_asleep"], 20 * MiB)  # w's segment only
        self.assertEqual(read(other, 4 * MiB), b"\x66" * (4 * MiB))  # the other thread's stayed mapped
        a.wake()
        a.free(w)
        a.free(other)

    def test_sleep_prepare_pins_ahead_and_the_sleep_takes_it(self):
        a = self.a
        sizes = (3 * MiB, 1000)
        with a.tag("weights"):
            ptrs = [a.malloc(n) for n in sizes]
        with a.tag("kv_cache"):
            k = a.malloc(2 * MiB)
        datas = [pattern(n, 7 + i) for i, n in enumerate(sizes)]
        for p, d in zip(ptrs, datas):
            fill(p, d)
        reserved = a.memory_stats()["reserved_bytes.all.current"]
        a.sleep_prepare(offload="weights")  # every tag to sleep, weights offloaded: kv_cache gets nothing
        s = a.sleep_stats()
        self.assertEqual(s["galloc.sleep.bytes_host_cached"], 3 * MiB + 1024)  # 1000 B is a 1024-byte block
        self.assertEqual((s["galloc.sleep.tags_asleep"], s["galloc.sleep.bytes_offloaded"]), (0, 0))
        self.assertEqual(a.memory_stats()["reserved_bytes.all.current"], reserved)  # the device untouched
        a.sleep_prepare(["weights"], offload=["weights"])  # waiting already: nothing more
        self.assertEqual(a.sleep_stats()["galloc.sleep.bytes_host_cached"], 3 * MiB + 1024)
        a.sleep(offload="weights")
        s = a.sleep_stats()
        self.assertEqual((s["galloc.sleep.bytes_host_cached"], s["galloc.sleep.bytes_offloaded"]),
                         (0, 3 * MiB + 1024))
        a.sleep_prepare(offload="weights")  # asleep: its copies are held
        self.assertEqual(a.sleep_stats()["galloc.sleep.bytes_host_cached"], 0)
        a.wake()
        for p, d in zip(ptrs, datas):
            self.assertTrue(read(p, len(d)) == d, f"{len(d)} bytes at {p:#x} changed across sleep")
        a.empty_cache()  # gives back what the wake kept
        a.sleep_prepare("weights", offload="weights")
        self.assertEqual(a.sleep_stats()["galloc.sleep.bytes_host_cached"], 3 * MiB + 1024)
        a.empty_cache()  # and the reserve
        self.assertEqual(a.sleep_stats()["galloc.sleep.bytes_host_cached"], 0)
        with self.assertRaises(galloc.InvalidArgumentError):
            a.sleep_prepare("no_such_tag", offload="weights")
        with self.assertRaises(galloc.InvalidArgumentError):
            a.sleep_prepare(offload="no_such_tag")
        self.assertEqual(a.sleep_stats()["galloc.sleep.bytes_host_cached"], 0)
        for p in ptrs + [k]:
            a.free(p)

    def test_bad_tags(self):
        a = self.a
        with a.tag("weights"):
            with self.assertRaises(galloc.InvalidArgumentError):
                with a.tag("weights"):  # already begun on this thread
                    pass
            a.free(a.malloc(1))
        for bad in ("", "has space", "x" * 32, "a/b"):
            with self.assertRaises((galloc.InvalidArgumentError, ValueError), msg=bad):
                with a.tag(bad):
                    pass
        with self.assertRaises(galloc.InvalidArgumentError):
            a.sleep("no_such_tag")
        with self.assertRaises(galloc.InvalidArgumentError):
            a.wake("no_such_tag")
        with self.assertRaises(galloc.InvalidArgumentError):
            a.tag_asleep("no_such_tag")
        self.assertFalse(a.tag_asleep("weights"))  # the refused calls did nothing
        with self.assertRaises(ValueError):
            a.sleep([])


if __name__ == "__main__":
    unittest.main()
