"""README.md's first Python block, as a reader runs it first: without torch
(the block that needs torch >= 2 and a GPU comes after it)."""
import re
import unittest

from support import repo_file, run_python

README = repo_file("README.md")

# Imported first: `import torch` (and anything under it) then raises ImportError.
NO_TORCH = "import sys\nsys.modules['torch'] = None\n"


def python_blocks(path):
    """The ```python blocks of a Markdown file, in order."""
    with open(path, encoding="utf-8") as f:
        return re.findall(r"^```python\n(.*?)^```", f.read(), re.S | re.M)


@unittest.skipIf(README is None, "README.md: not in a source tree")
class Readme(unittest.TestCase):
    def test_the_first_python_block_runs_without_torch(self):
        block = python_blocks(README)[0]
        self.assertNotIn("torch", re.sub(r"#.*", "", block), "the first block must not need torch")
        r = run_python(NO_TORCH + block + "\nassert 'torch' not in [m for m in sys.modules if sys.modules[m]]\n")
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_the_guard_hides_torch(self):
        r = run_python(NO_TORCH + "import torch\n")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("import of torch halted", r.stderr)


if __name__ == "__main__":
    unittest.main()
