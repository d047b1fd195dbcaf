"""galloc.torch.use() under real PyTorch 1.13 (Debian's python3-torch), which
has no pluggable allocators (torch.cuda.memory.CUDAPluggableAllocator is 2.0's):
one error naming the version needed and this one, before use() does anything
else: no configuration, no device opened, no C++ wrapper compiled, nothing
printed before the traceback.

Skipped when torch 1.13 cannot be imported (a venv made without
--system-site-packages does not see Debian's python3-torch); .ci/install_test
runs it in a venv that does, with GALLOC_REQUIRE_TORCH=1, so there a missing
torch fails instead of skipping. test_torch_contract.py checks the same with
fake_torch, everywhere."""
import os
import unittest

from support import run_python

REQUIRED = os.environ.get("GALLOC_REQUIRE_TORCH") == "1"
try:
    import torch
    SKIP = None if torch.__version__.startswith("1.13") else f"torch {torch.__version__} is not 1.13"
except ImportError as e:
    SKIP = (f"torch is not importable ({e}): apt-get install python3-torch and use a venv made with "
            "--system-site-packages (.ci/install_test does)")

MARK = "-- torch imported --"


class Torch113Use(unittest.TestCase):
    def setUp(self):
        if SKIP:
            if REQUIRED:
                self.fail("GALLOC_REQUIRE_TORCH=1 but " + SKIP)
            self.skipTest(SKIP)

    def test_use_says_it_needs_torch_2_before_anything_else(self):
        for kw in ("", "device_backend='sim'", "oom='null'"):
            # torch's own import may warn; what galloc prints starts after MARK.
            r = run_python("import sys, torch\n"
                           f"print({MARK!r}, file=sys.stderr, flush=True)\n"
                           "import galloc.torch\n"
                           f"galloc.torch.use({kw})\n")
            self.assertEqual(r.returncode, 1, r.stderr)
            after = r.stderr.split(MARK + "\n", 1)[1]
            self.assertTrue(after.startswith("Traceback (most recent call last):\n"), after)
            self.assertEqual(after.splitlines()[-1],
                             "galloc.errors.UnsupportedError: galloc.torch needs torch >= 2.0 "
                             f"(torch.cuda.memory.CUDAPluggableAllocator); this is torch {torch.__version__}")
            self.assertEqual(r.stdout, "")


if __name__ == "__main__":
    unittest.main()
