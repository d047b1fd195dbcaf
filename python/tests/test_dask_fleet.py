"""examples/dask/fit_fleet.py: galloc.fit_fleet on a dask.distributed
LocalCluster (two worker processes on this machine), with exact figures, and
the same answers as the fleet fitted in this process.

Skipped when Dask cannot be imported (a venv made without
--system-site-packages does not see Debian's python3-dask); .ci/install_test
runs it in a venv that does, with GALLOC_REQUIRE_DASK=1, so there a missing
Dask fails instead of skipping."""
import importlib.util
import os
import subprocess
import sys
import tempfile
import unittest

import galloc
from support import repo_file

EXAMPLE = repo_file("examples/dask/fit_fleet.py")
HAVE_DASK = importlib.util.find_spec("dask") is not None and importlib.util.find_spec("distributed") is not None
REQUIRED = os.environ.get("GALLOC_REQUIRE_DASK") == "1"
SKIP = None if HAVE_DASK else (
    "Dask is not importable from this interpreter: apt-get install python3-dask python3-distributed and use a "
    "venv made with --system-site-packages (.ci/install_test does)")

# fragmentation.trace's three best peaks lie within 0.5 % of each other (a tie,
# docs/fit.md): the shortest of them is the answer.
EXPECTED = [
    'fragmentation.trace: export PYTORCH_CUDA_ALLOC_CONF="expandable_segments:True,'
    'roundup_power2_divisions:8"  peak reserved 79.30 GiB, fits on 77.60 GiB',
    'load_order.trace: export PYTORCH_CUDA_ALLOC_CONF="expandable_segments:True"  peak reserved 77.64 GiB, '
    'fits on 77.64 GiB',
]


@unittest.skipIf(EXAMPLE is None, "examples/dask/: not in a source tree")
class DaskFleet(unittest.TestCase):
    def setUp(self):
        if SKIP:
            if REQUIRED:
                self.fail("GALLOC_REQUIRE_DASK=1 but " + SKIP)
            self.skipTest(SKIP)

    def test_example_on_a_local_cluster(self):
        p = subprocess.run([sys.executable, EXAMPLE], capture_output=True, text=True, timeout=300,
                           cwd=tempfile.gettempdir())
        self.assertEqual(p.returncode, 0, p.stderr[-3000:])
        self.assertEqual(p.stdout.splitlines(), EXPECTED)

    def test_cluster_and_in_process_agree(self):
        from dask.distributed import Client, LocalCluster
        folder = os.path.join(os.path.dirname(EXAMPLE), "traces")
        with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
                Client(cluster) as client:
            remote = galloc.fit_fleet(folder, client=client, jobs=1)
        local = galloc.fit_fleet(folder, jobs=1)
        self.assertEqual(list(remote), list(local))
        self.assertEqual([os.path.basename(p) for p in remote], ["fragmentation.trace", "load_order.trace"])
        for path in local:
            a, b = remote[path], local[path]
            self.assertEqual((a.winner, a.min_device_memory), (b.winner, b.min_device_memory))
            self.assertEqual([c.conf for c in a.configurations], [c.conf for c in b.configurations])
            self.assertEqual([c.peak_reserved_bytes for c in a.configurations],
                             [c.peak_reserved_bytes for c in b.configurations])


if __name__ == "__main__":
    unittest.main()
