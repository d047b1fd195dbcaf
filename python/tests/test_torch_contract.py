"""galloc.torch against fake_torch: PyTorch 2.x's pluggable-allocator calls,
in PyTorch's order, on the simulated device named explicitly."""
import json
import os
import re
import tempfile
import unittest
import warnings

import fake_torch
import galloc
from support import GiB, MiB, CStderr, run_python


class TorchContract(unittest.TestCase):
    def setUp(self):
        self.state = fake_torch.install(device_count=2)
        import galloc.torch
        self.gt = galloc.torch

    def tearDown(self):
        self.state.current = None  # drops the fake's allocator before galloc's registry goes
        self.gt._shutdown()
        fake_torch.uninstall()

    def use(self, **kw):
        with CStderr() as err, warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            alloc = self.gt.use("sim_capacity:1GiB", device_backend="sim", **kw)
        return alloc, err.text, w

    def test_use_swaps_the_allocator_and_wires_every_hook(self):
        alloc, _, _ = self.use(oom="null")
        import torch
        fake = alloc.allocator()
        self.assertIs(self.state.current, fake)
        self.assertEqual(sorted(fake.hooks), ["init", "memory_fraction", "record_stream", "reset"])
        t = torch.empty(1)  # CUDA's lazy init first: init_fn(2), then alloc_fn(1, 0, stream 0)
        self.assertEqual(self.state.calls[:3], [("init", 0), ("init", 2), ("malloc", 1, 0, 0, t.data_ptr())])
        self.assertNotEqual(t.data_ptr(), 0)
        s = self.gt.memory_stats()
        self.assertEqual(len(s), 123)
        self.assertEqual((s["allocated_bytes.all.current"], s["reserved_bytes.all.current"]), (512, 2 * MiB))
        with self.assertRaisesRegex(RuntimeError, "does not yet support getDeviceStats"):
            torch.cuda.memory_stats()  # PyTorch's own: hence galloc.torch.memory_stats
        del t  # free_fn(ptr, 1, 0, stream 0)
        self.assertEqual(self.state.calls[-1][0], "free")
        s = self.gt.memory_stats(0)
        self.assertEqual((s["allocated_bytes.all.current"], s["reserved_bytes.all.current"]), (0, 2 * MiB))
        torch.cuda.empty_cache()  # reset_fn
        self.assertEqual(self.gt.memory_stats()["reserved_bytes.all.current"], 0)

    def test_init_hook_limits_devices(self):
        self.use(oom="null")
        import torch
        with CStderr() as err:
            t = torch.empty(16, device="cuda:2")  # init_fn(2): devices 0 and 1 only
        self.assertEqual(t.data_ptr(), 0)
        self.assertIn("galloc: malloc: device 2 is not one of the 2 devices", err.text)
        self.assertNotEqual(torch.empty(16, device="cuda:1").data_ptr(), 0)

    def test_out_of_memory_is_null_to_pytorch_2x_and_galloc_says_why(self):
        self.use(oom="null")
        import torch
        torch.cuda.set_per_process_memory_fraction(0.5, 0)  # memory_fraction_fn(0.5, 0)
        with CStderr() as err:
            t = torch.empty(600 * MiB)
        # What PyTorch 2.x makes of a NULL from alloc_fn: a tensor at address 0.
        self.assertEqual(t.data_ptr(), 0)
        self.assertIn("galloc: malloc on device 0: CUDA out of memory. Tried to allocate 600.00 MiB", err.text)
        status, msg = self.gt.last_error(0)
        self.assertEqual(status, "E_OOM")
        self.assertTrue(msg.startswith("CUDA out of memory. Tried to allocate 600.00 MiB"), msg)
        self.assertEqual(self.gt.memory_stats()["num_ooms"], 1)
        self.assertNotEqual(torch.empty(400 * MiB).data_ptr(), 0)  # under the cap

    def test_throw_on_cudamalloc_oom_and_the_reserve_class(self):
        # PyTorch main's keys through the plug-in: CUDAPluggableAllocator refuses
        # attachOomRejectionObserver, so galloc.torch takes the observer itself.
        with CStderr(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.gt.use("sim_capacity:1GiB,throw_on_cudamalloc_oom:True,expandable_segments:True,"
                        "expandable_segments_reserve_by_class:[tiny:0.05]", device_backend="sim", oom="null")
        import torch
        seen = []
        self.gt.set_oom_rejection_observer(lambda *args: seen.append(args))
        with CStderr() as err:
            t = torch.empty(2 * GiB)
        self.assertEqual(t.data_ptr(), 0)
        self.assertIn("galloc: malloc on device 0: CUDA out of memory. Allocation was preemptively rejected because "
                      "it would exceed per_process_memory_fraction limit. Requested size: 2.00 GiB", err.text)
        self.assertEqual(seen, [(0, 2 * GiB, 0, 1 * GiB)])
        s = self.gt.memory_stats()
        self.assertEqual((s["num_oom_rejections"], s["num_ooms"]), (1, 0))
        self.gt.set_oom_rejection_observer(None)
        # 0.05 of 1 GiB in 20 MiB pages is 60 MiB: a 100 MiB tensor on the tagged
        # stream can never fit; untagged again, it does.
        self.gt.set_expandable_reserve_class(0, "tiny")
        with CStderr() as err:
            t = torch.empty(100 * MiB)
        self.assertEqual(t.data_ptr(), 0)
        self.assertIn("exceeds the expandable-segment reserve of 51.20 MiB for stream reserve class 'tiny'", err.text)
        self.gt.set_expandable_reserve_class(torch.cuda.Stream(), "tiny", device=0)  # a Stream object is taken too
        self.gt.set_expandable_reserve_class(0, None)
        t = torch.empty(100 * MiB)
        self.assertNotEqual(t.data_ptr(), 0)
        del t
        with self.assertRaises(galloc.InvalidArgumentError):
            self.gt.set_expandable_reserve_class(0, "a:b")

    def test_oom_raise_without_a_compiler_warns_and_falls_back(self):
        _, _, w = self.use()  # fake torch has no torch.utils.cpp_extension
        msgs = [str(x.message) for x in w if issubclass(x.category, self.gt.GallocWarning)]
        self.assertEqual(len(msgs), 1, msgs)
        self.assertIn("out of memory will reach PyTorch as a NULL pointer", msgs[0])
        self.assertIn("torch.utils.cpp_extension", msgs[0])

    def test_record_stream_snapshot_summary(self):
        self.use(oom="null")
        import torch
        side = torch.cuda.Stream()
        t = torch.empty(3 * MiB)
        t.record_stream(side)  # record_stream_fn(ptr, side)
        self.assertEqual(self.gt.last_error(0), ("OK", ""))
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "snap.json")
            self.gt.snapshot(path)
            with open(path) as f:
                segs = json.load(f)["segments"]
        self.assertEqual([(s["segment_type"], s["total_size"], s["allocated_size"]) for s in segs],
                         [("large", 20 * MiB, 3 * MiB)])
        self.assertIn("PyTorch CUDA memory summary, device ID 0", self.gt.memory_summary())
        del t
        self.gt.reset_peak_memory_stats()
        self.assertEqual(self.gt.memory_stats()["allocated_bytes.all.peak"], 0)

    def test_swapping_after_cuda_init_is_refused_by_pytorch(self):
        import torch
        torch.cuda._lazy_init()
        with self.assertRaisesRegex(RuntimeError, "Can't swap an already initialized allocator"):
            self.use(oom="null")


class TorchProcess(unittest.TestCase):
    """Cases that need a process of their own (import state, once-per-process warnings)."""

    def test_torch_before_2_is_refused_before_anything_happens(self):
        # A torch 1.13 whose cpp_extension shouts if use() goes as far as
        # building its wrapper; use() must stop before that, and before
        # loading galloc's library or touching PyTorch's allocator.
        r = run_python(
            "import sys, types, fake_torch, galloc, galloc.torch\n"
            "state = fake_torch.install(version='1.13.1')\n"
            "ext = types.ModuleType('torch.utils.cpp_extension')\n"
            "def build(*a):\n"
            "    print('c++: warning: compiled', file=sys.stderr)\n"
            "    return []\n"
            "ext.include_paths = ext.library_paths = build\n"
            "utils = types.ModuleType('torch.utils')\n"
            "utils.cpp_extension = sys.modules['torch'].utils = ext\n"
            "sys.modules.update({'torch.utils': utils, 'torch.utils.cpp_extension': ext})\n"
            "for kw in ({}, {'device_backend': 'sim'}, {'oom': 'null'}):\n"
            "    try:\n"
            "        galloc.torch.use(**kw)\n"
            "    except galloc.UnsupportedError as e:\n"
            "        print(e)\n"
            "assert state.calls == [] and type(state.current).__name__ == 'NativeAllocator', state.calls\n"
            "assert galloc.torch._lib_handle is None, 'libgalloc_torch.so was loaded'\n")
        self.assertEqual((r.returncode, r.stderr), (0, ""))
        self.assertEqual(r.stdout, "galloc.torch needs torch >= 2.0 (torch.cuda.memory.CUDAPluggableAllocator); "
                                   "this is torch 1.13.1\n" * 3)

    def test_torch_versions_read(self):
        import types
        import galloc.torch
        for version in ("2.0.0", "2.0.0a0+gitabcdef", "2.4.1+cu121", "10.0", "custom"):
            galloc.torch._check_torch(types.SimpleNamespace(__version__=version))
        for version in ("1.13.0a0", "1.13.1+cpu", "0.4.1"):
            with self.assertRaisesRegex(galloc.UnsupportedError, f"; this is torch {re.escape(version)}$"):
                galloc.torch._check_torch(types.SimpleNamespace(__version__=version))

    def test_importing_galloc_imports_no_torch(self):
        r = run_python("import sys, galloc, galloc.torch\nassert 'torch' not in sys.modules, 'torch imported'\n")
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_sim_warns_once_per_process(self):
        r = run_python(
            "import fake_torch, galloc.torch\n"
            "fake_torch.install()\n"
            "galloc.torch.use('sim_capacity:1GiB', device_backend='sim', oom='null')\n"
            "import torch\n"
            "ts = [torch.empty(1) for _ in range(3)]\n"
            "assert all(t.data_ptr() for t in ts)\n")
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = [l for l in r.stderr.splitlines() if "device_backend:sim" in l]
        self.assertEqual(len(lines), 1, r.stderr)
        self.assertTrue(lines[0].startswith("galloc: device_backend:sim: PyTorch is given simulated addresses, "
                                            "not device memory"), lines[0])

    def _default_backend(self, hip):
        return run_python(
            "import fake_torch, galloc, galloc.torch\n"
            f"fake_torch.install(hip={hip!r})\n"
            "try:\n"
            "    galloc.torch.use(oom='null')\n"
            "except galloc.UnavailableError as e:\n"
            "    print(e.status, e)\n"
            "else:\n"
            "    print('opened')\n",
            env={"GALLOC_CONF": "driver_path:/nonexistent/libgpu.so"})

    def test_default_backend_is_the_real_device_and_fails_clearly_without_it(self):
        for hip, vendor in ((None, "cuda"), ("6.0", "hip")):
            r = self._default_backend(hip)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertTrue(r.stdout.startswith("E_UNAVAILABLE device 0: "), r.stdout)
            self.assertIn("/nonexistent/libgpu.so", r.stdout)
            self.assertNotIn("device_backend:sim", r.stderr)  # nothing was simulated
            if vendor == "hip":
                self.assertIn("hip", r.stdout.lower())


if __name__ == "__main__":
    unittest.main()
