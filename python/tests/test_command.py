"""The galloc command from the package: the `galloc` console command pip
installs and `python -m galloc` run the whole command in-process
(galloc_tools_main) with the real stdout, stderr and exit status."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

from support import repo_file

FRAG = repo_file("examples/fragmentation.trace")
SCRIPT = os.path.join(os.path.dirname(sys.executable), "galloc")


def run(argv):
    """argv run in a fresh process (from a neutral directory): CompletedProcess."""
    return subprocess.run(argv, capture_output=True, text=True, cwd=tempfile.gettempdir())


class Command(unittest.TestCase):
    def setUp(self):
        if not os.access(SCRIPT, os.X_OK):
            self.skipTest(f"{SCRIPT}: no console command (the package is not installed in this interpreter's prefix)")

    def test_version(self):
        r = run([SCRIPT, "--version"])
        self.assertEqual((r.returncode, r.stderr), (0, ""))
        self.assertRegex(r.stdout, r"\Agalloc \d+\.\d+\.\d+\n\Z")
        self.assertEqual(run([sys.executable, "-m", "galloc", "--version"]).stdout, r.stdout)

    def test_help(self):
        r = run([SCRIPT, "help"])
        self.assertEqual((r.returncode, r.stderr), (0, ""))
        self.assertTrue(r.stdout.startswith("usage: galloc <command> [options]\n"), r.stdout[:200])
        for command in ("replay", "fit", "gen", "budget"):
            self.assertRegex(r.stdout, rf"\n  {command} ")
        r = run([SCRIPT, "help", "fit"])
        self.assertEqual(r.returncode, 0)
        self.assertIn("--max-configs", r.stdout)

    @unittest.skipIf(FRAG is None, "examples/fragmentation.trace: not in a source tree")
    def test_python_m_galloc_replay_json(self):
        r = run([sys.executable, "-m", "galloc", "replay", "--json", FRAG])
        self.assertEqual(r.returncode, 1, r.stderr)  # README: the defaults OOM
        doc = json.loads(r.stdout)
        self.assertEqual(doc["tool"], "galloc replay")
        oom = doc["traces"][0]["results"][0]["ooms"][0]
        self.assertEqual((oom["event"], oom["size"]), (1601, 2 << 30))

    def test_bad_usage_is_exit_2_on_stderr(self):
        r = run([SCRIPT, "nonsense"])
        self.assertEqual((r.returncode, r.stdout), (2, ""))
        self.assertTrue(r.stderr.startswith('galloc: unknown command "nonsense"\nusage: galloc'), r.stderr[:200])
        r = run([SCRIPT])
        self.assertEqual((r.returncode, r.stdout), (2, ""))
        self.assertTrue(r.stderr.startswith("usage: galloc"))
        r = run([SCRIPT, "replay", os.path.join(tempfile.gettempdir(), "no-such.trace")])
        self.assertEqual(r.returncode, 2)
        self.assertIn("no-such.trace: cannot open", r.stderr)

    def test_gen_and_budget(self):
        model = ["--params", "1M", "--layers", "2", "--d-model", "64", "--seq-len", "16", "--batch", "1"]
        r = run([SCRIPT, "gen", "transformer"] + model)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(r.stdout.startswith("galloc-trace 1\n"))
        r = run([SCRIPT, "budget", "--json"] + model)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(json.loads(r.stdout)["tool"], "galloc budget")

    def test_pythons_own_output_comes_first(self):
        r = run([sys.executable, "-c", "import sys; from galloc.__main__ import main\n"
                 "print('before'); sys.exit(main(['galloc', '--version']))"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout, r"\Abefore\ngalloc \d")


if __name__ == "__main__":
    unittest.main()
