"""PyTorch 2026's allocator keys through galloc.Allocator on the simulated
device: throw_on_cudamalloc_oom (num_oom_rejections, the observer) and the
expandable-segment reserve with its per-stream class. Figures as the C tests'
(tests/api/knobs_test.cc), from PyTorch main's c10/cuda/CUDACachingAllocator.cpp
(DeviceCachingAllocator::alloc_block and ::malloc, NativeCachingAllocator::malloc,
the ExpandableSegment constructor) and c10/cuda/CUDAAllocatorConfig.{h,cpp}."""
import threading
import unittest

import galloc
from support import GiB, MiB

REJECTED = ("CUDA out of memory. Allocation was preemptively rejected because it would exceed "
            "per_process_memory_fraction limit. Requested size: ")


class ThrowOnCudaMallocOom(unittest.TestCase):
    def test_refused_before_the_device_counted_and_observed(self):
        seen = []
        with galloc.Allocator("sim_capacity:8GiB,throw_on_cudamalloc_oom:True") as a:
            def observer(device, alloc_size, total_allocated, device_total):
                # outside the allocator's lock: the allocator answers
                seen.append((device, alloc_size, total_allocated, device_total, threading.get_ident(),
                             a.memory_stats()["num_oom_rejections"]))
            a.set_oom_rejection_observer(observer)
            p = a.malloc(6 * GiB)
            a.free(a.malloc(1 * GiB))  # cached: PyTorch's retry chain would release it
            with self.assertRaises(galloc.OutOfMemoryError) as e:
                a.malloc(3 * GiB)
            self.assertEqual(str(e.exception), REJECTED + "3.00 GiB")
            s = a.memory_stats()
            self.assertEqual(len(s), 123)
            self.assertEqual((s["num_oom_rejections"], s["num_ooms"], s["num_alloc_retries"],
                              s["num_sync_all_streams"], s["num_device_free"], s["reserved_bytes.all.current"]),
                             (1, 0, 0, 0, 0, 7 * GiB))
            self.assertEqual(seen, [(0, 3 * GiB, 7 * GiB, 8 * GiB, threading.get_ident(), 1)])
            a.set_oom_rejection_observer(None)
            with self.assertRaises(galloc.OutOfMemoryError):
                a.malloc(3 * GiB)
            self.assertEqual(len(seen), 1)
            self.assertEqual(a.memory_stats()["num_oom_rejections"], 2)
            a.free(p)

    def test_the_cap_checks_first_until_raised(self):
        with galloc.Allocator("sim_capacity:8GiB,per_process_memory_fraction:0.5,throw_on_cudamalloc_oom:True") as a:
            with self.assertRaises(galloc.OutOfMemoryError) as e:
                a.malloc(5 * GiB)
            self.assertIn("4.00 GiB allowed; ", str(e.exception))  # the ordinary path: the cap's OOM
            self.assertEqual(a.memory_stats()["num_ooms"], 1)
            a.set_memory_fraction(1.0)
            with self.assertRaises(galloc.OutOfMemoryError) as e:
                a.malloc(5 * GiB)
            self.assertEqual(str(e.exception), REJECTED + "5.00 GiB")
            s = a.memory_stats()
            self.assertEqual((s["num_ooms"], s["num_oom_rejections"]), (1, 1))

    def test_observer_arguments_are_checked(self):
        with galloc.Allocator("sim_capacity:1GiB") as a:
            with self.assertRaises(TypeError):
                a.set_oom_rejection_observer(42)


class ExpandableReserve(unittest.TestCase):
    def test_a_request_larger_than_the_reserve_fails_naming_it(self):
        conf = "sim_capacity:8GiB,expandable_segments:True,expandable_segments_reserve_by_class:[tiny:0.05]"
        with galloc.Allocator(conf) as a:
            a.set_expandable_reserve_class(7, "tiny")
            with self.assertRaises(galloc.OutOfMemoryError) as e:
                a.malloc(1 * GiB, stream=7)
            self.assertIn("This allocation exceeds the expandable-segment reserve of 409.60 MiB for stream reserve "
                          "class 'tiny', and a single allocation cannot span expandable segments. Raise "
                          "PYTORCH_CUDA_ALLOC_CONF expandable_segments_reserve or expandable_segments_reserve_by_class "
                          "(or unset it) so that a segment is at least 1024.00 MiB.", str(e.exception))
            s = a.memory_stats()
            self.assertEqual((s["num_ooms"], s["num_alloc_retries"], s["num_oom_rejections"]), (1, 1, 0))
            p = a.malloc(415 * MiB, stream=7)  # inside the 21 pages of 20 MiB the 409.60 MiB reserve rounds to
            q = a.malloc(1 * GiB, stream=0)    # untagged: 9/8 of the device
            a.set_expandable_reserve_class(7, None)
            r = a.malloc(1 * GiB, stream=7)   # cleared: a new segment takes the full reserve
            for x in (p, q, r):
                a.free(x)

    def test_bad_class_names_are_refused(self):
        with galloc.Allocator("sim_capacity:1GiB,expandable_segments:True") as a:
            for bad in ("a:b", "a,b", "[x]", "sp ace", "x" * 32):
                with self.assertRaises(galloc.InvalidArgumentError):
                    a.set_expandable_reserve_class(1, bad)
            with self.assertRaises(TypeError):
                a.set_expandable_reserve_class(1, b"bytes")
            a.set_expandable_reserve_class(1, "")

    def test_malformed_reserve_values_are_config_errors(self):
        # PyTorch logs these and ignores them; galloc refuses the string.
        for value in ("abc", "G", "-1", "0", "40GiB"):
            with self.assertRaises(galloc.ConfigError) as e:
                galloc.Allocator("sim_capacity:1GiB,expandable_segments_reserve:" + value)
            self.assertIn('expandable_segments_reserve: expected a fraction of device memory > 0 (0.5) or GiB with a '
                          f'G suffix (40G), got "{value}" (offset ', str(e.exception))


if __name__ == "__main__":
    unittest.main()
