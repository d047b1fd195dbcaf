"""The galloc command from Python: `python -m galloc ARGS` and the `galloc`
console command the package installs run the whole command (replay, fit,
gen, budget, help, --version) in this process, through the command's own
dispatcher in libgalloc_tools.so (galloc_tools_main): the same code, output
and exit status as the executable, on this process's stdout and stderr.
One subcommand is the package's own, since it runs PyTorch: `estimate`
(galloc/estimate.py: record a step on the CPU, then replay and fit it).
"""
import signal
import sys

from . import _tools


def main(argv=None):
    """Run `galloc ARGV[1:]` (argv: default sys.argv; argv[0] is not read) and
    return its exit status: 0, 1 (an OOM, nothing fits) or 2 (bad usage or
    input, the reason on stderr). Python's own buffered output is flushed
    first, so it comes before the command's. As with the executable, Ctrl-C
    and a closed pipe end the process (their default actions: the command
    runs in C, where Python's handlers would wait for it to finish)."""
    argv = sys.argv if argv is None else list(argv)
    if len(argv) > 1 and argv[1] == "estimate":
        from .estimate import main as estimate_main
        return estimate_main(argv[2:])
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    sys.stdout.flush()
    sys.stderr.flush()
    return _tools.main(argv)


if __name__ == "__main__":
    sys.exit(main())
