"""The GPU capture matrix's workloads (tests/gpu/workloads.py) at their tiny
CPU scale under Debian's PyTorch 1.13, so the code the GPU run executes is
known to run before a GPU is ever lent: every workload completes, the
training losses are finite and checkpointing leaves them as they were, and
the decode's KV cache holds every position.

Skipped without torch, as test_torch113_use.py (.ci/install_test runs it
with GALLOC_REQUIRE_TORCH=1)."""
import importlib.util
import math
import os
import unittest

REQUIRED = os.environ.get("GALLOC_REQUIRE_TORCH") == "1"
try:
    import torch  # noqa: F401
    SKIP = None
except ImportError as e:
    SKIP = f"torch is not importable ({e})"

HERE = os.path.dirname(os.path.abspath(__file__))
PATH = os.path.join(HERE, "..", "..", "tests", "gpu", "workloads.py")


class Workloads(unittest.TestCase):
    def setUp(self):
        if SKIP:
            if REQUIRED:
                self.fail("GALLOC_REQUIRE_TORCH=1 but " + SKIP)
            self.skipTest(SKIP)
        spec = importlib.util.spec_from_file_location("workloads", PATH)
        self.w = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(self.w)

    def test_the_five_workloads_of_the_matrix(self):
        self.assertEqual(sorted(self.w.WORKLOADS), ["cnn_bn", "gpt_ckpt", "gpt_fixed", "gpt_varlen", "kv_decode"])

    def test_training_workloads_run_with_finite_losses(self):
        for name, steps in (("gpt_fixed", 4), ("gpt_varlen", 6), ("gpt_ckpt", 4), ("cnn_bn", 4)):
            losses = self.w.WORKLOADS[name]("cpu", 0)
            self.assertEqual(len(losses), steps, name)
            self.assertTrue(all(math.isfinite(x) and x > 0 for x in losses), (name, losses))

    def test_checkpointing_recomputes_the_same_steps(self):
        plain = self.w.WORKLOADS["gpt_fixed"]("cpu", 0)
        ckpt = self.w.WORKLOADS["gpt_ckpt"]("cpu", 0)
        for a, b in zip(plain, ckpt):
            self.assertAlmostEqual(a, b, places=4)

    def test_decode_cache_holds_every_position(self):
        # a prefill of seq // 2 = 8 positions, then 4 decode steps of one position each
        self.assertEqual(self.w.WORKLOADS["kv_decode"]("cpu", 0), 8 + 4)


if __name__ == "__main__":
    unittest.main()
