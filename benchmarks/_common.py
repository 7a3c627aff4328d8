"""What every benchmark script shares: run metadata, device-synchronised timing, JSON results.

    from _common import metadata, timed, write_result      # scripts in benchmarks/

    with timed(comm=comm, xp=cupy) as t:
        work()
    write_result({"benchmark": "mine", "seconds": t.seconds}, name="mine.json")

``timed`` synchronises the GPU and waits at a barrier of the communicator
before it reads the clock, at the start and at the end, so the time covers
the work of every rank and every queued kernel.  ``write_result`` adds
:func:`metadata` (device, library versions, commit, host, date) to a dict that
has none, and writes the file atomically.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from datetime import datetime, timezone
from importlib import metadata as _importlib_metadata
from pathlib import Path

__all__ = ["REPO", "RESULTS", "metadata", "named_graph", "timed", "event_seconds", "write_result", "write_json_atomic",
           "jsonable"]

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "benchmarks" / "results"

# Distribution names to look up when the module itself has no __version__.
_PACKAGES = {
    "numpy": "numpy",
    "scipy": "scipy",
    "cupy": None,  # cupy-cuda12x, cupy-cuda13x, ...: the module knows its version
    "pymetis": "pymetis",
    "kahip": "kahip",
    "kaminpar": "kaminpar",
    "mpi4py": "mpi4py",
    "fastapsp": "fastapsp",
}


def _version(module: str, distribution: str | None) -> str | None:
    """Installed version of a package, or None when it is not installed."""
    if distribution is not None:
        try:
            return _importlib_metadata.version(distribution)
        except _importlib_metadata.PackageNotFoundError:
            pass
    if module == "cupy":
        # Importing CuPy does not touch the GPU; a broken install is reported as such.
        try:
            import cupy

            return str(cupy.__version__)
        except ImportError:
            return None
        except Exception as exc:  # pragma: no cover - depends on the CUDA install
            return f"unusable ({type(exc).__name__})"
    if module == "fastapsp":
        try:
            import fastapsp

            return str(fastapsp.__version__)
        except ImportError:
            return None
    return None


def _gpu_name() -> str | None:
    """Name of the current CUDA device as CuPy sees it, or None without CuPy or a GPU."""
    try:
        import cupy

        if cupy.cuda.runtime.getDeviceCount() < 1:
            return None
        device = cupy.cuda.Device().id
        name = cupy.cuda.runtime.getDeviceProperties(device)["name"]
        return f"cuda:{device} {name.decode() if isinstance(name, bytes) else name}"
    except Exception:
        return None


def _cpu_name() -> str:
    """CPU model from /proc/cpuinfo (Linux), else what the platform module reports."""
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


def _commit() -> str:
    """``git rev-parse HEAD`` of this repository, ``-dirty`` when tracked files changed, else "unknown".

    Like ``git describe --dirty``, untracked files do not count; neither do
    changes under ``benchmarks/results`` (results written by the run itself).
    ``FASTAPSP_COMMIT`` overrides it, for copies of the tree without ``.git``
    (the GPU machine).
    """
    if os.environ.get("FASTAPSP_COMMIT"):
        return os.environ["FASTAPSP_COMMIT"]
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True,
                              timeout=30, check=True).stdout.strip()
        status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", ".",
                                 ":(exclude)benchmarks/results"], cwd=REPO, capture_output=True, text=True,
                                timeout=30, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    if not head:
        return "unknown"
    return f"{head}-dirty" if status else head


def metadata() -> dict:
    """Where and with what a benchmark ran.

    Returns
    -------
    dict
        ``device`` (GPU name via CuPy when one is visible, else the CPU model),
        ``cpu``, ``versions`` (python, numpy, scipy, cupy, pymetis, kahip,
        kaminpar, mpi4py, fastapsp; None when not installed), ``commit``
        (``git rev-parse HEAD``, ``-dirty`` suffix when tracked files differ,
        ``"unknown"`` outside git), ``hostname``, ``platform`` and ``date``
        (UTC, ISO 8601).
    """
    cpu = _cpu_name()
    versions = {"python": platform.python_version()}
    versions.update({module: _version(module, dist) for module, dist in _PACKAGES.items()})
    return {
        "device": _gpu_name() or cpu,
        "cpu": cpu,
        "versions": versions,
        "commit": _commit(),
        "hostname": socket.gethostname(),
        "platform": platform.platform(),
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }


class Timing:
    """Seconds measured by :func:`timed` (``seconds`` is set when the block ends)."""

    def __init__(self) -> None:
        self.start = 0.0
        self.seconds = float("nan")

    def __repr__(self) -> str:
        return f"Timing(seconds={self.seconds:.6f})"


def _sync(comm, xp) -> None:
    if xp is not None and getattr(xp, "__name__", "") == "cupy":
        xp.cuda.Device().synchronize()
    if comm is not None:
        comm.Barrier()


@contextmanager
def timed(comm=None, xp=None):
    """Wall-clock seconds of a block, with the device synchronised and the ranks aligned.

    Parameters
    ----------
    comm : communicator, optional
        An mpi4py communicator (or fastapsp's ``SerialComm``); every rank waits
        at ``Barrier()`` before the clock is read, at the start and at the end.
    xp : module, optional
        The array module; for ``cupy`` the current device is synchronised
        before each reading, so queued kernels are counted.

    Yields
    ------
    Timing
        Its ``seconds`` attribute holds the result once the block has ended.

    Examples
    --------
    >>> with timed() as t:
    ...     _ = sum(range(1000))
    >>> t.seconds >= 0
    True
    """
    timing = Timing()
    _sync(comm, xp)
    timing.start = time.perf_counter()
    yield timing
    _sync(comm, xp)
    timing.seconds = time.perf_counter() - timing.start


def jsonable(obj):
    """``obj`` with NumPy scalars and arrays turned into Python values and non-finite floats into None."""
    if isinstance(obj, dict):
        return {str(key): jsonable(value) for key, value in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(value) for value in obj]
    if hasattr(obj, "tolist") and not isinstance(obj, (str, bytes)):  # NumPy scalars and arrays
        return jsonable(obj.tolist())
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, Path):
        return str(obj)
    return obj


def write_json_atomic(path, obj) -> Path:
    """Write ``obj`` as JSON to ``path`` through a temporary file and a rename (never half written)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    with open(tmp, "w") as fh:
        json.dump(jsonable(obj), fh, indent=2, allow_nan=False)
        fh.write("\n")
    os.replace(tmp, path)
    return path


def event_seconds(cp, fn, repeat: int) -> float:
    """Mean seconds of ``fn()`` on the GPU over ``repeat`` calls, by CUDA events, after one warm-up call."""
    fn()  # compiles, fills caches
    cp.cuda.Device().synchronize()
    start, end = cp.cuda.Event(), cp.cuda.Event()
    start.record()
    for _ in range(repeat):
        fn()
    end.record()
    end.synchronize()
    return cp.cuda.get_elapsed_time(start, end) / 1e3 / repeat


def write_result(obj, folder="benchmarks/results", name: str | None = None) -> Path:
    """Write a benchmark result as JSON and return its path.

    Parameters
    ----------
    obj : dict or list
        The result.  A dict without a ``metadata`` key gets one (:func:`metadata`).
    folder : str or Path
        Where to write; a relative folder is taken from the repository root,
        so scripts write to the same place from any working directory.
    name : str, optional
        File name (``.json`` is added when missing); by default
        ``<obj["benchmark"] or "result">-<UTC date and time>.json``.
    """
    folder = Path(folder)
    if not folder.is_absolute():
        folder = REPO / folder
    if isinstance(obj, dict) and "metadata" not in obj:
        obj = {**obj, "metadata": metadata()}
    if name is None:
        stem = obj.get("benchmark", "result") if isinstance(obj, dict) else "result"
        name = f"{stem}-{datetime.now(timezone.utc).strftime('%Y%m%dT%H%M%SZ')}"
    if not name.endswith(".json"):
        name += ".json"
    return write_json_atomic(folder / name, obj)


def named_graph(text: str) -> tuple[str, str]:
    """``argparse`` type of the benchmarks' ``--graph NAME=PATH``: ``(NAME, PATH)``, or a one-line error
    when the form is wrong or PATH is not a file."""
    name, sep, path = text.partition("=")
    if not sep or not name or not path:
        raise argparse.ArgumentTypeError(f"expected NAME=PATH, found {text!r}")
    if not os.path.isfile(path):
        raise argparse.ArgumentTypeError(f"{path}: no such file")
    return name, path


if __name__ == "__main__":  # print this machine's metadata
    json.dump(metadata(), sys.stdout, indent=2)
    print()


def command_line(parser, args) -> list[str]:
    """The fastapsp command line the in-process tools were given after ``--`` (their ``cli`` argument,
    ``nargs=argparse.REMAINDER``); a usage error where there is none."""
    command = args.cli[1:] if args.cli[:1] == ["--"] else args.cli
    if not command:
        parser.error("no fastapsp command line given (after --)")
    return command


def run_command_line(command: list[str]) -> int:
    """Run the fastapsp command line ``command`` in this process (as ``python -m fastapsp``, without
    its exit) and return its exit status: the in-process tools (``thread_timeline.py``,
    ``scalar_operator_sites.py``) watch the run from inside."""
    from fastapsp.cli import main as cli_main

    try:
        status = cli_main(command)
    except SystemExit as exc:  # the command line's own exit
        status = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return int(status or 0)


def write_text(path: str | None, text: str) -> None:
    """``text`` into the file ``path`` (its folder made), or to standard output when ``path`` is None."""
    if path:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(text)
    else:
        sys.stdout.write(text)
