"""galloc.torch.use() with the real torch (>= 2) on a real GPU: skipped,
saying why, wherever either is missing (CI has only Debian's torch 1.13,
checked by test_torch113_viz.py, and no GPU). tests/gpu/run_real_torch.sh
runs this file alone on a GPU machine from prebuilt libraries."""
import sys
import unittest

from support import run_python


def _torch_gpu():
    r = run_python("import torch\nprint(torch.__version__.split('+')[0], torch.cuda.is_available())")
    if r.returncode != 0:
        return "torch is not importable"
    version, available = r.stdout.split()
    if int(version.split(".")[0]) < 2:
        return f"torch {version} < 2"
    if available != "True":
        return f"torch {version} sees no GPU"
    return None


class RealTorch(unittest.TestCase):
    def test_tensors_stats_and_out_of_memory(self):
        why = _torch_gpu()
        if why:
            self.skipTest(f"needs torch >= 2 and a GPU: {why}")
        r = run_python(
            "import torch, galloc.torch\n"
            "galloc.torch.use()\n"
            "x = torch.empty(1, dtype=torch.uint8, device='cuda')\n"
            "s = galloc.torch.memory_stats()\n"
            "assert s['allocated_bytes.all.current'] == 512, s['allocated_bytes.all.current']\n"
            "try:\n"
            "    torch.empty(1 << 50, dtype=torch.uint8, device='cuda')\n"
            "except torch.OutOfMemoryError as e:\n"
            "    assert str(e).startswith('CUDA out of memory. Tried to allocate'), str(e)\n"
            "else:\n"
            "    raise AssertionError('no torch.OutOfMemoryError')\n")
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_sleep_and_wake_keep_tensors_in_place(self):
        why = _torch_gpu()
        if why:
            self.skipTest(f"needs torch >= 2 and a GPU: {why}")
        r = run_python(SLEEP_WAKE)
        sys.stderr.write(r.stdout)  # the figures, for the verbose log
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)


# galloc's shim made PyTorch's allocator by hand (PyTorch's own API, no
# use()): the backend is then the probed one, cuda. 256 MiB of weights
# (offloaded) and 512 MiB of KV cache (discarded), each its own tag; both
# sizes are 2 MiB multiples above 10 MiB, so each is one segment of exactly
# its size, and sleeping gives 768 MiB back to the driver.
SLEEP_WAKE = """
import torch, galloc, galloc.torch
MiB = 1 << 20
alloc = torch.cuda.memory.CUDAPluggableAllocator(galloc.torch.LIBRARY, "galloc_torch_malloc", "galloc_torch_free")
torch.cuda.memory.change_current_allocator(alloc)
with galloc.torch.tagged("weights"):
    w = torch.empty(256 * MiB, dtype=torch.uint8, device="cuda")
with galloc.torch.tagged("kv_cache"):
    k = torch.empty(512 * MiB, dtype=torch.uint8, device="cuda")
w.random_(0, 256, generator=torch.Generator(device="cuda").manual_seed(20))
k.fill_(7)
reference = w.cpu()
assert int(reference.float().std()) > 50, "the weights are not random bytes"
wp, kp = w.data_ptr(), k.data_ptr()
torch.cuda.synchronize()
s = galloc.torch.memory_stats()
assert s["reserved_bytes.all.current"] == 768 * MiB, s["reserved_bytes.all.current"]
free_awake, total = torch.cuda.mem_get_info()

galloc.torch.sleep(offload="weights")
free_asleep, _ = torch.cuda.mem_get_info()
asleep = galloc.torch.sleep_stats()
print(f"sleep: mem_get_info free {free_awake / MiB:.0f} -> {free_asleep / MiB:.0f} MiB "
      f"(+{(free_asleep - free_awake) / MiB:.0f} MiB of {total / MiB:.0f}); {asleep}")
assert free_asleep - free_awake >= 768 * MiB, (free_awake, free_asleep)
assert galloc.torch.tag_asleep("weights") and galloc.torch.tag_asleep("kv_cache")
assert asleep["galloc.sleep.bytes_asleep"] == 768 * MiB, asleep
assert asleep["galloc.sleep.tags_asleep"] == 2, asleep
s = galloc.torch.memory_stats()
assert s["reserved_bytes.all.current"] == 0 and s["allocated_bytes.all.current"] == 768 * MiB, s

galloc.torch.wake()
torch.cuda.synchronize()
free_woken, _ = torch.cuda.mem_get_info()
print(f"wake: mem_get_info free {free_woken / MiB:.0f} MiB; {galloc.torch.sleep_stats()}")
assert free_asleep - free_woken >= 768 * MiB, (free_asleep, free_woken)
assert (w.data_ptr(), k.data_ptr()) == (wp, kp), "a tensor moved"
assert torch.equal(w.cpu(), reference), "the offloaded weights changed across sleep"
k.fill_(3)  # discarded: undefined bytes, but device memory at the same address
assert int(k.sum(dtype=torch.int64)) == 3 * 512 * MiB
assert int(w.sum(dtype=torch.int64)) == int(reference.sum(dtype=torch.int64))  # a kernel reads them
del w, k
torch.cuda.synchronize()
assert galloc.torch.memory_stats()["allocated_bytes.all.current"] == 0
print("ok")
"""


if __name__ == "__main__":
    unittest.main()
