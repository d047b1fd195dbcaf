"""galloc.torch.use() with the real torch (>= 2) on a real GPU: skipped,
saying why, wherever either is missing (CI has only Debian's torch 1.13,
checked by test_torch113_viz.py, and no GPU)."""
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


if __name__ == "__main__":
    unittest.main()
