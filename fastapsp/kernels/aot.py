"""``fastapsp build-kernels --aot``: every module of the catalog compiled by nvcc into fatbins, without a GPU.

Each module (:func:`fastapsp.kernels.catalog.variants`) is compiled from the
very text NVRTC would be given (:func:`fastapsp.kernels.module_code`, written to
a temporary ``.cu`` file) with the same options, by one ``nvcc -fatbin`` with a
cubin for every requested architecture and the PTX of the highest, in parallel
processes.  Cooperative modules need nothing more: since CUDA 11 a grid-wide
``sync()`` is code of ``cooperative_groups.h`` that reads the grid's barrier
from registers the cooperative launch sets (``%envreg1``/``%envreg2``), with no
device runtime to link, so their fatbin is whole as well.  The files are named
by :func:`fastapsp.kernels.binaries.binary_name` and listed in ``index.json``
(:mod:`fastapsp.kernels.binaries`), written whole; a file of the folder whose
name and checksum match the last index is kept instead of compiled again.
Needs the CUDA toolkit (nvcc and a host compiler), never a GPU or CuPy.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from .._version import __version__
from ..errors import BackendError, ConfigError
from .binaries import FORMAT, INDEX, PREBUILT_DIR, binary_name, file_sha256, module_id, read_index
from .source import module_code

__all__ = ["DEFAULT_ARCHITECTURES", "parse_architectures", "find_nvcc", "nvcc_version", "build_aot"]

# A100 and H100/H200, the GPUs fastapsp is measured on; newer GPUs load the PTX of sm_90.
DEFAULT_ARCHITECTURES = ("sm_80", "sm_90")
_PLAIN = re.compile(r"^sm_(\d+)$")
_STALE = re.compile(r"^[0-9a-f]{32}\.fatbin$")  # the names binary_name gives: only those are ever removed


def parse_architectures(text) -> list[str]:
    """``"sm_80,sm_90"`` (or a sequence of names) as a sorted list without repeats; checked for form only
    (:func:`build_aot` checks that nvcc builds them).

    Raises
    ------
    ConfigError
        For an empty list or a name that is not ``sm_`` and a number.
    """
    names = [a.strip() for a in (text.split(",") if isinstance(text, str) else text)]
    for name in names:
        if not _PLAIN.match(name):
            raise ConfigError(f"--arch: {name!r} is not a GPU architecture; allowed: sm_ and a compute capability, "
                              "comma-separated (e.g. sm_80,sm_90)")
    if not names:
        raise ConfigError("--arch: no architecture given; allowed: e.g. sm_80,sm_90")
    return sorted(set(names), key=lambda a: int(a[3:]))


def find_nvcc() -> str:
    """Path of nvcc: ``$CUDA_PATH/bin``, ``$CUDA_HOME/bin``, then ``PATH``.

    Raises
    ------
    BackendError
        When none of them has an executable nvcc.
    """
    looked = []
    for variable in ("CUDA_PATH", "CUDA_HOME"):
        root = os.environ.get(variable)
        if root:
            candidate = os.path.join(root, "bin", "nvcc")
            if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
                return candidate
            looked.append(f"{variable}={root} (no bin/nvcc)")
        else:
            looked.append(f"{variable} not set")
    found = shutil.which("nvcc")
    if found:
        return found
    raise BackendError(f"build-kernels --aot: nvcc not found ({', '.join(looked)}, not on PATH); "
                       "allowed: a CUDA toolkit's nvcc in $CUDA_PATH/bin, $CUDA_HOME/bin or on PATH")


def _run(cmd: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True)


def nvcc_version(nvcc: str) -> str:
    """``13.0.88`` from ``nvcc --version`` (its whole last line when the form is unknown)."""
    out = _run([nvcc, "--version"]).stdout
    match = re.search(r"release [\d.]+, V([\d.]+)", out)
    lines = out.strip().splitlines()
    return match.group(1) if match else (lines[-1] if lines else "unknown")


def _supported(nvcc: str) -> list[str]:
    """The ``sm_XY`` names nvcc compiles cubins for (``nvcc --list-gpu-code``)."""
    return [a for a in _run([nvcc, "--list-gpu-code"]).stdout.split() if _PLAIN.match(a)]


def _command(nvcc: str, options: tuple, architectures: list[str], source: str, output: str) -> list[str]:
    """One module's nvcc line: a cubin of every architecture and the PTX of the highest (FORMAT names it)."""
    top = architectures[-1][3:]
    codes = [f"arch=compute_{a[3:]},code={a}" for a in architectures] + [f"arch=compute_{top},code=compute_{top}"]
    return [nvcc, "-fatbin", *options, *(x for c in codes for x in ("-gencode", c)), "-o", output, source]


def _describe(key: tuple) -> str:
    file, flags, cooperative = key
    return f"{file} ({' '.join(flags)}{', cooperative' if cooperative else ''})"


def _compile(nvcc: str, key: tuple, architectures: list[str], folder: Path, name: str, scratch: str) -> str | None:
    """Compile module ``key`` into ``folder/name`` (written whole); ``None``, or nvcc's error in one line."""
    file, flags, _ = key
    code, options = module_code(file, flags)
    work = tempfile.mkdtemp(dir=scratch)
    source = os.path.join(work, file)  # nvcc's messages then name the kernel file
    with open(source, "w") as fh:
        fh.write(code)
    tmp = folder / f".{name}.tmp{os.getpid()}"
    proc = _run(_command(nvcc, options, architectures, source, str(tmp)))
    if proc.returncode != 0:
        tmp.unlink(missing_ok=True)
        text = (proc.stderr + proc.stdout).replace(work + os.sep, "")  # "sssp.cu(12): error: ..."
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        errors = [line for line in lines if "error" in line.lower()]
        return (errors or lines or [f"exit status {proc.returncode}"])[0]
    os.replace(tmp, folder / name)
    return None


def build_aot(architectures=DEFAULT_ARCHITECTURES, *, out=None, jobs: int | None = None, only=None,
              force: bool = False) -> dict:
    """Compile every module of the catalog with nvcc into fatbins and an index (no GPU needed).

    Parameters
    ----------
    architectures : str or sequence of str
        ``sm_XY`` names, e.g. ``"sm_80,sm_90"``: a cubin of each, and the PTX of the highest.
    out : path, optional
        Folder of the binaries (default ``fastapsp/kernels/prebuilt`` of this installation).  Its index lists
        exactly this build; fatbins of an earlier build that it does not list are removed.
    jobs : int, optional
        nvcc processes at once (default: the usable cores, at most 16).
    only : sequence of str, optional
        Kernel files whose modules alone are built (e.g. ``["jet.cu"]``); the index then lists only those.
    force : bool
        Compile every module, even those whose binary the folder already holds.

    Returns
    -------
    dict
        ``folder``, ``index``, ``modules``, ``compiled``, ``kept``, ``jobs``, ``architectures``, ``ptx``,
        ``nvcc`` (version) and ``seconds``.

    Raises
    ------
    ConfigError
        For an architecture that is malformed or that this nvcc does not build, or an ``only`` file that is not
        a kernel file of the catalog.
    BackendError
        When nvcc is not found, or fails on a module (its first error line is quoted).
    """
    from .catalog import _jobs, variants

    start = time.perf_counter()
    architectures = parse_architectures(architectures)
    keys = list(dict.fromkeys(v.key() for v in variants()))
    if only is not None:
        files = sorted({k[0] for k in keys})
        if not only:
            raise ConfigError(f"--only: no kernel file given; allowed: {', '.join(files)}")
        for file in only:
            if file not in files:
                raise ConfigError(f"--only: {file!r} is not a kernel file of the catalog; allowed: {', '.join(files)}")
        keys = [k for k in keys if k[0] in set(only)]
    nvcc = find_nvcc()
    supported = _supported(nvcc)
    for arch in architectures:
        if supported and arch not in supported:
            allowed = ", ".join(sorted(supported, key=lambda a: int(a[3:])))
            raise ConfigError(f"--arch: nvcc {nvcc} does not build {arch}; allowed: {allowed}")
    version = nvcc_version(nvcc)
    folder = Path(PREBUILT_DIR if out is None else out)
    folder.mkdir(parents=True, exist_ok=True)
    earlier = read_index(folder) or {"modules": {}}
    kept_sums = {e["file"]: e["sha256"] for e in earlier["modules"].values()}
    names = {key: binary_name(key, architectures, version) for key in keys}
    # The binaries the last index lists, as they are on disk: kept where their checksum is still the index's.
    sums = {} if force else {key: file_sha256(folder / names[key]) for key in keys
                             if names[key] in kept_sums and (folder / names[key]).is_file()}
    todo = [key for key in keys if key not in sums or sums[key] != kept_sums[names[key]]]
    todo.sort(key=lambda k: -len(module_code(k[0], k[1])[0]))  # the largest first, so none is left for last
    count = _jobs(jobs, len(todo)) if todo else 0
    failure = None
    if todo:
        with tempfile.TemporaryDirectory(prefix="fastapsp-aot-") as scratch, ThreadPoolExecutor(count) as pool:
            runs = [(key, pool.submit(_compile, nvcc, key, architectures, folder, names[key], scratch)) for key in todo]
            for key, run in runs:
                error = run.result()
                if error is not None:
                    failure = f"{_describe(key)}: {error}"
                    pool.shutdown(cancel_futures=True)  # the modules not started yet are dropped
                    break
    if failure is not None:
        raise BackendError(f"build-kernels --aot: nvcc {version} failed for {','.join(architectures)} on {failure}")
    sums.update({key: file_sha256(folder / names[key]) for key in todo})  # the kept ones were read above
    index = {"format": FORMAT, "fastapsp": __version__, "nvcc": version, "architectures": architectures,
             "ptx": f"compute_{architectures[-1][3:]}",
             "modules": {module_id(key): {"file": names[key], "sha256": sums[key]} for key in keys}}
    tmp = folder / f".{INDEX}.tmp{os.getpid()}"
    tmp.write_text(json.dumps(index, indent=1) + "\n")
    os.replace(tmp, folder / INDEX)
    listed = set(names.values())
    for entry in os.scandir(folder):  # binaries of an earlier build that this index does not list
        if _STALE.match(entry.name) and entry.name not in listed:
            os.remove(entry.path)
    return {"folder": str(folder), "index": str(folder / INDEX), "modules": len(keys), "compiled": len(todo),
            "kept": len(keys) - len(todo), "jobs": count, "architectures": architectures, "ptx": index["ptx"],
            "nvcc": version, "seconds": round(time.perf_counter() - start, 3)}
