"""Every kernel variant the engine can launch, built once per machine before the first timed solve.

A *variant* is one compiled module: a kernel file of this folder with a
distance type, an index type, compiler options and whether it is built for
cooperative launches (the arguments of :func:`fastapsp.kernels.get_kernel`).
The modules that launch kernels each list the variants they can ask for
(``kernel_variants()`` beside their ``get_kernel`` calls); :func:`variants`
joins those lists.  Which variant a graph reaches depends on its shape (the
width K of a min-plus, whole-number weights, the index type), so compiling on
first use would put compile seconds inside the timed stages of whichever graph
comes first; :func:`build` compiles them all instead, in parallel processes,
into CuPy's on-disk kernel cache (``CUPY_CACHE_DIR``, default
``~/.cupy/kernel_cache``), then solves a few small graphs so that CuPy's own
kernels (copies, fills, gathers) are cached as well.

Modules that ``fastapsp build-kernels --aot`` compiled with nvcc ahead of time
(:mod:`fastapsp.kernels.binaries`) and this GPU can run are loaded from their
files and not compiled: when the folder covers every variant, a build only runs
the warm-up solves, for CuPy's kernels, which no tool can build ahead.

A *stamp* file in that folder records a finished build.  Its name hashes
everything a build depends on (the kernel sources, the variant list, the
fastapsp, CuPy and NVRTC versions, the GPU's architecture and the prebuilt
binaries' index and the code this GPU runs from it), so a changed
source or a new GPU model builds again and an unchanged one costs a file
check.  A lock file serialises builders: when several ranks of a job start at
once on one node, one compiles and the others wait for its stamp.  CuPy writes
each cache file whole (a temporary file moved into place, with a checksum it
verifies on reading), so an interrupted build leaves nothing corrupt.

Command line: ``fastapsp build-kernels``; every GPU run calls
:func:`ensure_built` (in a background thread while the graph is read) and
reports the seconds it waited as ``compile``.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass

import numpy as np

from . import KERNEL_DIR, get_kernel, kernel_source, module_code, module_key
from .binaries import coverage, index_identity

__all__ = ["Variant", "variants", "build", "ensure_built", "mark_built", "cache_dir", "stamp_path", "kernel_cache_bytes",
           "save_compiler_checks", "load_compiler_checks", "prebuilt"]

_MAX_JOBS = 16  # compiling processes at most (each holds a CUDA context while it compiles)


@dataclass(frozen=True)
class Variant:
    """One compiled module: :func:`fastapsp.kernels.get_kernel`'s arguments, with one kernel of the file."""

    file: str
    name: str
    dtype: str = "float32"
    index_dtype: str = "int32"
    options: tuple = ()
    cooperative: bool = False

    def key(self) -> tuple:
        """The module this variant is (:func:`fastapsp.kernels.module_key`)."""
        return module_key(self.file, np.dtype(self.dtype), np.dtype(self.index_dtype), self.options, self.cooperative)

    def compile(self):
        """Build the module (or load it from its prebuilt binary or the disk cache) and return the kernel."""
        return get_kernel(self.file, self.name, np.dtype(self.dtype), index_dtype=np.dtype(self.index_dtype),
                          options=self.options, cooperative=self.cooperative)


def variants() -> list[Variant]:
    """Every variant the engine can launch, each module once, in a fixed order."""
    from ..reductions_gpu import kernel_variants as stats_variants
    from ..sink import kernel_variants as sink_variants
    from ..stages._cuda import kernel_variants as stage_variants
    from ..stages._cuda_pred import kernel_variants as predecessor_variants

    jet = [Variant("jet.cu", "jet_propose")]  # fastapsp/partition/jet.py: float32, int32, no options
    seen, out = set(), []
    for entry in stage_variants() + predecessor_variants() + stats_variants() + sink_variants() + jet:
        v = entry if isinstance(entry, Variant) else Variant(*entry)
        key = v.key()
        if key not in seen:
            seen.add(key)
            out.append(v)
    return out


def cache_dir() -> str:
    """The folder of CuPy's on-disk kernel cache, where the compiled variants and the stamp live."""
    from cupy.cuda import compiler

    where = getattr(compiler, "get_cache_dir", None)
    if where is not None:
        return where()
    # CuPy's documented location: CUPY_CACHE_DIR, else ~/.cupy/kernel_cache.
    return os.environ.get("CUPY_CACHE_DIR") or os.path.expanduser("~/.cupy/kernel_cache")


def _architecture(device: int) -> str:
    import cupy

    return "sm_" + cupy.cuda.Device(device).compute_capability


def prebuilt(device: int) -> dict:
    """What the prebuilt binaries hold for ``device`` (:func:`fastapsp.kernels.binaries.coverage` of every
    variant for its architecture)."""
    return coverage([v.key() for v in variants()], _architecture(device))


def _signature(device: int) -> str:
    """Hash of what a build depends on: sources, variants, versions, the device's architecture, and which
    prebuilt binaries it runs (an index rebuilt or removed is a new build)."""
    import cupy

    from .._version import __version__

    digest = hashlib.sha256()
    for path in sorted(KERNEL_DIR.iterdir()):
        if path.suffix in (".cu", ".cuh"):
            digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    for v in variants():
        digest.update(repr(v).encode())
        code, options = module_code(*v.key()[:2])  # the text and options each module is compiled from
        digest.update(hashlib.sha256(code.encode()).digest() + repr(options).encode())
    try:
        nvrtc = ".".join(map(str, cupy.cuda.nvrtc.getVersion()))
    except Exception:  # noqa: BLE001 - a missing NVRTC fails the build itself, with its own message
        nvrtc = "unknown"
    digest.update(f"{__version__} {cupy.__version__} {nvrtc} {_architecture(device)}".encode())
    # Which binaries this GPU loads follows from the index, the sources (above) and the architecture.
    digest.update(f"prebuilt {index_identity(_architecture(device))}".encode())
    return digest.hexdigest()[:24]


def stamp_path(device: int = 0) -> str:
    """The stamp of a finished build for ``device``'s architecture (it may not exist)."""
    return os.path.join(cache_dir(), f"fastapsp-kernels-{_signature(device)}.json")


# CuPy names a cached kernel by a hash that includes the compiler's version banner for the kernel's
# options, which it learns once a process per option set by compiling an empty program (NVRTC, tens of
# milliseconds each).  The build's warm-up keeps the banners it met beside the kernels; a process reads
# them at its start, so finding its cached kernels compiles nothing.  The keys hold the architecture, the
# options and the NVRTC version, so a banner of another compiler is never used.
def _checks_path(device: int) -> str:
    return os.path.join(cache_dir(), f"fastapsp-compiler-checks-{_architecture(device)}.json")


def _compiler_checks():
    """CuPy's in-process table of those banners (``None`` where this CuPy keeps none)."""
    from cupy.cuda import compiler

    table = getattr(compiler, "_empty_file_preprocess_cache", None)
    return table if isinstance(table, dict) else None


def write_checks(path: str, table: dict) -> int:
    """Write ``table``'s entries whose key is a literal (tuples, strings, numbers) and value a string to the
    JSON file ``path`` (whole, by a rename); returns how many."""
    import ast

    entries = []
    for key, value in table.items():
        try:
            if isinstance(value, str) and ast.literal_eval(repr(key)) == key:
                entries.append([repr(key), value])
        except (ValueError, SyntaxError):
            continue
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w") as fh:
        json.dump(entries, fh)
    os.replace(tmp, path)
    return len(entries)


def read_checks(path: str, table: dict) -> int:
    """Add the entries of the JSON file ``path`` (see :func:`write_checks`) that ``table`` lacks; returns how
    many were added.  A missing or unreadable file adds nothing."""
    import ast

    try:
        with open(path) as fh:
            entries = json.load(fh)
    except (OSError, ValueError):
        return 0
    added = 0
    for entry in entries if isinstance(entries, list) else ():
        try:
            key, value = ast.literal_eval(entry[0]), entry[1]
        except (ValueError, SyntaxError, TypeError, IndexError):
            continue
        if isinstance(value, str) and key not in table:
            table[key] = value
            added += 1
    return added


def save_compiler_checks(device: int) -> int:
    """Keep this process's compiler banners beside the kernels of ``device``'s architecture, with those other
    processes kept there (the warm-up's parts save theirs side by side)."""
    table = _compiler_checks()
    if not table:
        return 0
    path = _checks_path(device)
    with _Lock(f"{path}.lock"):
        read_checks(path, table)
        return write_checks(path, table)


def load_compiler_checks(device: int) -> int:
    """Give this process the banners kept for ``device``'s architecture; returns how many it gained."""
    table = _compiler_checks()
    return 0 if table is None else read_checks(_checks_path(device), table)


def kernel_cache_bytes() -> int:
    """Bytes of the files in the kernel cache folder (CuPy's own kernels included)."""
    folder = cache_dir()
    try:
        return sum(entry.stat().st_size for entry in os.scandir(folder) if entry.is_file())
    except OSError:
        return 0


class _Lock:
    """An exclusive ``flock`` on ``path`` (none where the file system refuses it: CuPy's writes stay safe)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.fh = None

    def __enter__(self):
        try:
            import fcntl

            self.fh = open(self.path, "a")
            fcntl.flock(self.fh, fcntl.LOCK_EX)
        except OSError:
            if self.fh is not None:
                self.fh.close()
            self.fh = None
        return self

    def __exit__(self, *exc) -> None:
        if self.fh is not None:
            self.fh.close()  # closing releases the lock


def _jobs(requested: int | None, count: int) -> int:
    if requested is not None:
        if requested < 1:
            raise ValueError(f"jobs: {requested} is not a positive number of processes")
        return min(requested, count)
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return max(1, min(cores, _MAX_JOBS, count))


def _failures(procs) -> list[str]:
    """Wait for every process of ``procs``; the last line of each failed one's stderr (or its exit status)."""
    failures = []
    for proc in procs:
        _, err = proc.communicate()
        if proc.returncode:
            lines = err.decode(errors="replace").strip().splitlines()
            failures.append(lines[-1] if lines else f"exit status {proc.returncode}")
    return failures


def _compile_in_processes(every: list[Variant], todo: list[int], jobs: int, device: int) -> None:
    """Compile the variants ``every[i]`` for ``i`` in ``todo`` (``every`` is :func:`variants`; the workers find
    them by position) in ``jobs`` processes, largest sources first."""
    order = sorted(todo, key=lambda i: -len(kernel_source(every[i].file)))
    shares = [order[j::jobs] for j in range(jobs)]
    procs = []
    for share in shares:
        if share:
            cmd = [sys.executable, "-m", "fastapsp.kernels.catalog", str(device), *map(str, share)]
            procs.append(subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE))
    failures = _failures(procs)
    if failures:
        from ..errors import BackendError

        raise BackendError(f"build-kernels: {len(failures)} of {len(procs)} compiling processes failed; "
                           f"first: {failures[0]}")


def _warm_up_in_process(device: int, jobs: int = 1) -> str:
    """Run :mod:`fastapsp.kernels.warmup`'s parts in ``jobs`` processes side by side (CuPy compiles its kernels
    one at a time in a process; a process left without a part exits at once); ``"done"``, or what went wrong
    in one line."""
    jobs = max(1, jobs)
    procs = [subprocess.Popen([sys.executable, "-m", "fastapsp.kernels.warmup", str(device), str(j), str(jobs)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) for j in range(jobs)]
    failures = _failures(procs)
    return "done" if not failures else "failed: " + failures[0]


def build(*, jobs: int | None = None, force: bool = False, device: int | None = None) -> dict:
    """Compile every variant into the disk cache unless a stamp says that was done; returns what happened.

    Variants that the prebuilt binaries cover for this device's architecture
    are not compiled; the warm-up solves run in any case (CuPy's own kernels).

    Parameters
    ----------
    jobs : int, optional
        Compiling processes (default: the usable cores, at most 16).
    force : bool
        Compile even when the stamp exists (CuPy still reuses the cache
        files that are there; to start from nothing, empty ``cache_dir()``).
    device : int, optional
        The CUDA device whose architecture is built for (default: the current one).

    Returns
    -------
    dict
        ``built`` (False when a stamp was found), ``variants``, ``prebuilt``
        (those covered by prebuilt binaries), ``compiled``, ``jobs``,
        ``seconds``, ``cache_dir``, ``stamp``, ``architecture``,
        ``prebuilt_dir`` and, after a build, ``warm_up`` (``"done"`` or why
        the warm-up solves failed).

    Raises
    ------
    BackendError
        When a variant does not compile (the compiler's last line is quoted).
    """
    import cupy

    start = time.perf_counter()
    device = cupy.cuda.Device().id if device is None else int(device)
    folder = cache_dir()
    os.makedirs(folder, exist_ok=True)
    stamp = stamp_path(device)
    every = variants()
    binaries = prebuilt(device)
    todo = [i for i, v in enumerate(every) if v.key() not in binaries["covered"]]
    info = {"built": False, "variants": len(every), "prebuilt": len(every) - len(todo), "compiled": 0, "jobs": 0,
            "cache_dir": folder, "stamp": stamp, "architecture": _architecture(device),
            "prebuilt_dir": binaries["folder"]}
    with _Lock(os.path.join(folder, "fastapsp-kernels.lock")):
        if force or not os.path.exists(stamp):
            if todo:
                info["jobs"] = _jobs(jobs, len(todo))
                _compile_in_processes(every, todo, info["jobs"], device)
                info["compiled"] = len(todo)
            info["warm_up"] = _warm_up_in_process(device, _jobs(jobs, len(every)))
            info["built"] = True
            info["seconds"] = round(time.perf_counter() - start, 3)
            tmp = f"{stamp}.tmp{os.getpid()}"
            with open(tmp, "w") as fh:
                json.dump({key: info[key] for key in ("variants", "prebuilt", "compiled", "jobs", "seconds",
                                                      "architecture", "warm_up")}, fh)
            os.replace(tmp, stamp)
    info["seconds"] = round(time.perf_counter() - start, 3)
    return info


_state = {"thread": None, "seconds": 0.0, "done": False}
_state_lock = threading.Lock()


def ensure_built(*, device: int | None = None, background: bool = False) -> float:
    """Make sure the variants are built for ``device`` (default: the current one); returns the seconds this
    call waited.

    The first call of a process checks the stamp (and builds when it is
    missing); later calls return at once.  With ``background`` the check runs
    in a thread and the call returns 0.0 at once; the next call without it
    waits for that thread.  A build that fails is not retried: the kernels are
    then compiled at first use, where a real problem is reported.
    """
    start = time.perf_counter()
    with _state_lock:
        if _state["done"]:
            return 0.0
        thread = _state["thread"]
        if thread is None:
            if device is None:
                import cupy

                device = cupy.cuda.Device().id
            try:  # the banners kept by an earlier build, before this process's first kernel looks for its cache
                load_compiler_checks(device)
            except Exception:  # noqa: BLE001 - without them CuPy compiles its checks, as it always did
                pass
            thread = threading.Thread(target=_build_quietly, args=(device,), name="fastapsp-kernel-build",
                                      daemon=True)
            _state["thread"] = thread
            thread.start()
    if background:
        return 0.0
    thread.join()
    return time.perf_counter() - start


def mark_built() -> None:
    """Make :func:`ensure_built` return at once in this process (the warm-up solves of a build run while
    their parent holds the build lock)."""
    with _state_lock:
        _state["done"] = True


def _build_quietly(device: int) -> None:
    try:
        if build(device=device)["built"]:  # its warm-up kept the banners of this machine's first build
            load_compiler_checks(device)
    except Exception:  # noqa: BLE001 - the kernels compile at first use instead, and report there
        pass
    finally:
        _state["done"] = True


def _worker(argv: list[str]) -> int:
    """``python -m fastapsp.kernels.catalog DEVICE I J ...``: compile variants I, J, ... on DEVICE."""
    import cupy

    cupy.cuda.Device(int(argv[0])).use()
    every = variants()
    for i in argv[1:]:
        v = every[int(i)]
        try:
            v.compile()
        except Exception as exc:  # noqa: BLE001 - reported by the parent in one line
            detail = " ".join(str(exc).split())[:300]
            print(f"{v.file} ({v.dtype}, {v.index_dtype}, {' '.join(v.options) or 'no options'}): "
                  f"{type(exc).__name__}: {detail}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(_worker(sys.argv[1:]))
