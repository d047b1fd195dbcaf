"""Helpers shared by the package's tests."""
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, os.pardir, os.pardir))
MiB, GiB = 1 << 20, 1 << 30


def repo_file(rel):
    """A file of the source tree, or None when the tests run without it."""
    path = os.path.join(REPO, rel)
    return path if os.path.isfile(path) else None


def run_python(code, env=None):
    """Run code in a fresh interpreter (this one's: the venv under test) with
    the tests' directory on sys.path, ahead of any PYTHONPATH the caller set
    (tests/gpu/run_real_torch.sh puts an unpacked galloc there); returns the
    CompletedProcess."""
    full_env = dict(os.environ, **(env or {}))
    full_env["PYTHONPATH"] = os.pathsep.join(p for p in (HERE, full_env.get("PYTHONPATH")) if p)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=full_env, cwd=tempfile.gettempdir())


class CStderr:
    """Capture what C code writes to file descriptor 2 inside a `with`."""

    def __enter__(self):
        sys.stderr.flush()
        self._saved = os.dup(2)
        self._file = tempfile.TemporaryFile()
        os.dup2(self._file.fileno(), 2)
        return self

    def __exit__(self, *exc):
        os.dup2(self._saved, 2)
        os.close(self._saved)
        self._file.seek(0)
        self.text = self._file.read().decode()
        self._file.close()
