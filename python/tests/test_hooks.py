"""Device-memory hooks through galloc.Allocator (api/galloc_hooks.h) on the
simulated device: the events in order with exact addresses and sizes, pages
of expandable segments, the OOM's figures, pool ids, sleep and wake,
refusals by exception (HookError with the hook's exception as its cause),
exceptions that cannot refuse (sys.unraisablehook), a hook calling its own
allocator, replay, removal, and threads calling the allocator while a
Python hook runs (no deadlock: ctypes releases the GIL around each call)."""
import ctypes
import io
import re
import sys
import threading
import unittest

import galloc
from galloc import _native
from support import MiB, repo_file

ADDED = ("segment_alloc", "segment_map")


class Ledger:
    """A hook keeping the ranges added and not yet removed."""

    def __init__(self):
        self.events, self.present, self.errors = [], {}, []

    def __call__(self, ev):
        self.events.append(ev)
        if ev.kind in ADDED:
            self.present[ev.addr] = ev.size
        elif ev.kind in ("segment_free", "segment_unmap"):
            if self.present.get(ev.addr) != ev.size:
                self.errors.append(ev)
            self.present.pop(ev.addr, None)

    def bytes(self):
        return sum(self.present.values())


def reserved(a):
    return a.memory_stats()["reserved_bytes.all.current"]


class HookBindings(unittest.TestCase):
    """The ABI: the structs are the header's, the status has its error."""

    def test_structs_are_the_headers(self):
        header = repo_file("api/galloc_hooks.h")
        if header is None:
            self.skipTest("api/galloc_hooks.h is not beside the tests")
        with open(header) as f:
            text = f.read()
        body = re.search(r"typedef struct galloc_hook_event \{(.*?)\} galloc_hook_event_t;", text, re.S).group(1)
        members = re.findall(r"^\s*[\w ]+?\s+(\w+);", body, re.M)
        self.assertEqual(members, [name for name, _ in _native.HookEvent._fields_])
        kinds = re.findall(r"GALLOC_HOOK_(\w+) = (\d+),?\s*/\*", text)
        self.assertEqual([k.lower() for k, _ in kinds], list(_native.HOOK_KINDS))
        self.assertEqual([int(v) for _, v in kinds], list(range(len(_native.HOOK_KINDS))))
        flags = dict(re.findall(r"#define GALLOC_HOOK_F_(\w+) (\d+)u", text))
        self.assertEqual({int(v): k.lower() for k, v in flags.items()}, dict(_native.HOOK_FLAGS))
        self.assertEqual(ctypes.sizeof(_native.HookEvent), 112)
        self.assertEqual(ctypes.sizeof(_native.Hook), 32)

    def test_hook_status_raises_hook_error(self):
        code = galloc.STATUS_NAMES.index("E_HOOK")
        e = galloc.errors.error(code, "device-memory hook 1 refused ...")
        self.assertIs(type(e), galloc.HookError)
        self.assertEqual(e.strerror, "a device-memory hook refused the memory")


class Hooks(unittest.TestCase):
    def make(self, conf="", capacity="1GiB"):
        a = galloc.Allocator(f"sim_capacity:{capacity}" + (f",{conf}" if conf else ""), backend="sim")
        self.addCleanup(a.close)
        return a

    def test_segments_in_order_with_exact_addresses_and_sizes(self):
        a = self.make()
        l = Ledger()
        hid = a.add_hook(l)
        small, mid, big = a.malloc(1), a.malloc(5 * MiB), a.malloc(30 * MiB, stream=7)
        self.assertEqual([(e.kind, e.addr, e.size, e.stream) for e in l.events],
                         [("segment_alloc", small, 2 * MiB, 0), ("segment_alloc", mid, 20 * MiB, 0),
                          ("segment_alloc", big, 30 * MiB, 7)])
        self.assertEqual([e.seq for e in l.events], [1, 2, 3])
        self.assertEqual({(e.device, e.pool, e.flags) for e in l.events}, {(0, (0, 0), frozenset())})
        self.assertEqual(l.bytes(), reserved(a))
        for p in (small, mid, big):
            a.free(p)
        a.empty_cache()
        self.assertEqual([(e.kind, e.addr) for e in l.events[3:]],
                         [("segment_free", mid), ("segment_free", big), ("segment_free", small)])
        self.assertEqual((l.bytes(), reserved(a), l.errors), (0, 0, []))
        self.assertEqual(a.hook_stats(hid), {"events": 6, "refused": 0, "ignored": 0})

    def test_expandable_pages_grow_and_shrink_one_event_each(self):
        a = self.make("expandable_segments:True")
        l = Ledger()
        a.add_hook(l, kinds=["segment_map", "segment_unmap"])
        x = a.malloc(5 * MiB)
        y = a.malloc(30 * MiB)
        z = a.malloc(50 * MiB)  # three pages in one mapping
        self.assertEqual([(e.kind, e.addr, e.size) for e in l.events],
                         [("segment_map", x + i * 20 * MiB, 20 * MiB) for i in range(5)])
        a.free(y)
        a.free(z)
        a.empty_cache()
        self.assertEqual([(e.kind, e.addr) for e in l.events[5:]],
                         [("segment_unmap", x + i * 20 * MiB) for i in range(1, 5)])
        self.assertEqual(l.bytes(), reserved(a))
        a.free(x)

    def test_oom_with_pytorchs_figures(self):
        a = self.make(capacity="64MiB")
        l = Ledger()
        a.add_hook(l)
        p = a.malloc(40 * MiB)
        with self.assertRaises(galloc.OutOfMemoryError):
            a.malloc(40 * MiB, stream=3)
        e = l.events[-1]
        self.assertEqual((e.kind, e.size, e.stream, e.alloc_size, e.device_total, e.device_free, e.allowed),
                         ("oom", 40 * MiB, 3, 40 * MiB, 64 * MiB, 24 * MiB, 0))
        self.assertEqual((e.allocated_bytes, e.reserved_bytes), (40 * MiB, 40 * MiB))
        a.free(p)

    def test_a_pools_id_and_sleep_and_wake(self):
        a = self.make()
        l = Ledger()
        a.add_hook(l)
        pool = a.mempool()
        with a.use_mempool(pool):
            p = a.malloc(5 * MiB)
        self.assertEqual(l.events[-1].pool, pool)
        with a.tag("w"):
            w = a.malloc(3 * MiB)
        n = len(l.events)
        a.sleep("w")
        self.assertEqual([(e.kind, e.addr) for e in l.events[n:]], [("segment_unmap", w)])
        a.wake("w")
        self.assertEqual([(e.kind, e.addr) for e in l.events[n + 1:]], [("segment_map", w)])
        self.assertEqual(l.bytes(), reserved(a))
        a.free(p)
        a.free(w)

    def test_an_exception_refuses_the_memory(self):
        a = self.make()
        before = a.memory_stats()

        def refuse(ev):
            if ev.kind == "segment_alloc":
                raise KeyError("registration failed")

        hid = a.add_hook(refuse)
        with self.assertRaises(galloc.HookError) as cm:
            a.malloc(5 * MiB)
        self.assertIsInstance(cm.exception.__cause__, KeyError)
        self.assertIn("refused SEGMENT_ALLOC of 20971520 bytes", str(cm.exception))
        self.assertEqual(a.memory_stats(), before)
        self.assertEqual(a.hook_stats(hid)["refused"], 1)
        a.remove_hook(hid)
        a.free(a.malloc(5 * MiB))

    def test_an_exception_that_cannot_refuse_is_reported(self):
        a = self.make()
        seen = []
        old, sys.unraisablehook = sys.unraisablehook, seen.append
        self.addCleanup(setattr, sys, "unraisablehook", old)

        def fail_on_free(ev):
            if ev.kind == "segment_free":
                raise RuntimeError("deregistration failed")

        hid = a.add_hook(fail_on_free)
        a.free(a.malloc(5 * MiB))
        a.empty_cache()  # the segment goes anyway
        self.assertEqual(reserved(a), 0)
        self.assertEqual(len(seen), 1)
        self.assertIsInstance(seen[0].exc_value, RuntimeError)
        self.assertIn("segment_free", seen[0].err_msg)
        self.assertEqual(a.hook_stats(hid)["ignored"], 1)

    def test_a_hook_calling_its_allocator_is_stopped(self):
        a = self.make()
        caught = []

        def reenter(ev):
            try:
                a.memory_stats()
            except galloc.HookError as e:
                caught.append(e)

        a.add_hook(reenter)
        a.free(a.malloc(1))
        self.assertEqual(len(caught), 1)
        self.assertIn("would deadlock", str(caught[0]))

        def reenter_and_raise(ev):
            a.malloc(1)

        hid = a.add_hook(reenter_and_raise)
        with self.assertRaises(galloc.HookError) as cm:  # the refusal, caused by the refused re-entry
            a.malloc(5 * MiB)
        self.assertIsInstance(cm.exception.__cause__, galloc.HookError)
        self.assertIn("would deadlock", str(cm.exception.__cause__))
        a.remove_hook(hid)

    def test_an_exception_is_printed_without_an_unraisable_hook(self):
        a = self.make()
        a.add_hook(lambda ev: 1 / 0, kinds=["segment_free"])
        a.free(a.malloc(1))
        err, saved = io.StringIO(), sys.stderr
        sys.stderr = err
        try:
            a.empty_cache()
        finally:
            sys.stderr = saved
        self.assertIn("Exception ignored in galloc hook for a segment_free event", err.getvalue())
        self.assertIn("ZeroDivisionError", err.getvalue())

    def test_replay_two_hooks_in_order_and_removal(self):
        a = self.make()
        p = a.malloc(5 * MiB)
        late = Ledger()
        a.add_hook(late, replay=True)
        self.assertEqual([(e.kind, e.addr, e.flags) for e in late.events],
                         [("segment_alloc", p, frozenset({"replay"}))])
        order = []
        h1 = a.add_hook(lambda ev: order.append(1))
        a.add_hook(lambda ev: order.append(2))
        q = a.malloc(30 * MiB)
        self.assertEqual(order, [1, 2])
        a.remove_hook(h1)
        with self.assertRaises(galloc.InvalidArgumentError):
            a.remove_hook(h1)
        a.free(q)
        a.empty_cache()
        self.assertEqual(order, [1, 2, 2])
        with self.assertRaises(galloc.InvalidArgumentError):
            a.add_hook(print, kinds=["segment_nothing"])
        a.free(p)

    def test_close_tells_every_range_away(self):
        a = self.make("expandable_segments:True")
        l = Ledger()
        a.add_hook(l)
        a.malloc(5 * MiB)
        a.malloc(1)
        a.close()
        self.assertEqual(l.bytes(), 0)
        self.assertTrue(all("destroy" in e.flags for e in l.events if e.kind == "segment_unmap"))

    def test_threads_calling_the_allocator_while_a_python_hook_runs(self):
        a = self.make("expandable_segments:True", capacity="4GiB")
        l = Ledger()
        a.add_hook(l)
        errors = []

        def work(stream):
            try:
                live = []
                for i in range(300):
                    live.append(a.malloc((i % 7 + 1) * 3 * MiB, stream=stream))
                    if len(live) > 5:
                        a.free(live.pop(0))
                    if i % 50 == 49:
                        a.empty_cache()
                for p in live:
                    a.free(p)
            except Exception as e:  # noqa: BLE001 (reported below)
                errors.append(e)

        threads = [threading.Thread(target=work, args=(s,)) for s in (1, 2, 3, 4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
        self.assertFalse(any(t.is_alive() for t in threads), "deadlock")
        self.assertEqual(errors, [])
        self.assertEqual(l.bytes(), reserved(a))
        self.assertEqual(l.errors, [])
        self.assertEqual([e.seq for e in l.events], list(range(1, len(l.events) + 1)))


class UnsupportedAllocators(unittest.TestCase):
    def test_cuda_malloc_async_has_no_hooks(self):
        try:
            a = galloc.Allocator("backend:cudaMallocAsync", backend="sim")
        except galloc.GallocError:
            self.skipTest("the sim device has no stream-ordered pool")
        with a:
            with self.assertRaises(galloc.UnsupportedError):
                a.add_hook(print)


if __name__ == "__main__":
    unittest.main()
