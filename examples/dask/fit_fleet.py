"""Fit a fleet of traces on a Dask cluster: one galloc.fit task per trace.

    python3 examples/dask/fit_fleet.py [FOLDER]      (default: examples/dask/traces)

galloc.fit_fleet(folder, client=client) sends each trace of the folder (its
regular files, in name order, as `galloc fit FOLDER` takes them) to the
cluster as one galloc.fit call and gathers the typed results. Here the
cluster is a dask.distributed LocalCluster of two worker processes on this
machine; point Client at a scheduler's address to run the same sweep on many
machines that have galloc installed.

Dask is Debian's (apt-get install python3-dask python3-distributed); a venv
sees it when made with `python3 -m venv --system-site-packages`.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
GiB = 1 << 30


def main(folder):
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError as e:
        print(f"fit_fleet.py: needs Dask (apt-get install python3-dask python3-distributed): {e}",
              file=sys.stderr)
        return 2
    import galloc

    # One thread per worker and --jobs 1 per fit: the parallelism is the
    # cluster's, one trace per worker process at a time.
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        results = galloc.fit_fleet(folder, client=client, jobs=1)
    for path, r in results.items():
        best = r.picked  # the answer: not always rank 1 (a job's own settings that fit are kept)
        if r.fits:
            print(f"{os.path.basename(path)}: export PYTORCH_CUDA_ALLOC_CONF=\"{r.winner}\"  "
                  f"peak reserved {best.peak_reserved_bytes / GiB:.2f} GiB, "
                  f"fits on {r.min_device_memory / GiB:.2f} GiB")
        else:
            print(f"{os.path.basename(path)}: no setting fits {r.device_memory / GiB:.2f} GiB")
    return 0 if all(r.fits for r in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "traces")))
