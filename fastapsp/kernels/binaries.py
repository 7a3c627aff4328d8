"""Kernel binaries built ahead of time by nvcc: their names, their index, and which one a device can load.

``fastapsp build-kernels --aot`` (:mod:`fastapsp.kernels.aot`) compiles every
module of the catalog into one fatbin: a cubin for each requested architecture
and the PTX of the highest, which the driver compiles for newer GPUs.  The
folder holds the fatbins and ``index.json``::

    {"format": 1, "fastapsp": "0.1.0", "nvcc": "13.0.88",
     "architectures": ["sm_80", "sm_90"], "ptx": "compute_90",
     "modules": {"[\\"min_plus.cu\\", [\\"-DREAL=float\\"], false]":
                 {"file": "3f2a....fatbin", "sha256": "..."}, ...}}

A binary's file name is a hash of everything that determines it
(:func:`binary_name`: the module's text and options, the cooperative flag, the
architectures, the nvcc version and this format), computed by the build and
again by the loader from the sources it has: a source changed since the build
names another file, so a stale binary is never loaded, and its module is
compiled by NVRTC as before.  :func:`prebuilt_binary` is what
:func:`fastapsp.kernels.get_kernel` asks first; the default folder is
``fastapsp/kernels/prebuilt`` of the installation (package data, shipped in a
wheel built after it).
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
import warnings
from pathlib import Path

from .source import KERNEL_DIR, module_code

__all__ = ["PREBUILT_DIR", "INDEX", "FORMAT", "module_id", "binary_name", "read_index", "runnable_code",
           "index_binary", "prebuilt_binary", "index_identity", "coverage", "file_sha256"]

PREBUILT_DIR = KERNEL_DIR / "prebuilt"
INDEX = "index.json"
FORMAT = 1  # of the index and of the nvcc command line (aot.py): a new one names every binary anew
_ARCH = re.compile(r"^(sm|compute)_(\d+)$")


def module_id(key: tuple) -> str:
    """The index's name for module ``key`` (:func:`fastapsp.kernels.module_key`): ``[file, [flags], cooperative]``
    as JSON."""
    file, flags, cooperative = key
    return json.dumps([file, list(flags), bool(cooperative)])


def binary_name(key: tuple, architectures, nvcc: str) -> str:
    """File name of module ``key``'s fatbin built by nvcc version ``nvcc`` for ``architectures``: a hash of the
    module's text and options (:func:`fastapsp.kernels.module_code`), its cooperative flag, the architectures,
    the nvcc version and :data:`FORMAT`.  The build names its files with it and the loader looks them up with it."""
    file, flags, cooperative = key
    code, options = module_code(file, flags)
    text = json.dumps({"format": FORMAT, "code": code, "options": list(options), "cooperative": bool(cooperative),
                       "architectures": list(architectures), "nvcc": nvcc}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:32] + ".fatbin"


def file_sha256(path) -> str:
    """Hex SHA-256 of the file ``path``."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _number(architecture: str) -> int:
    return int(_ARCH.match(architecture).group(2))


def read_index(folder) -> dict | None:
    """The index of the fatbins in ``folder``, or ``None`` when there is none usable (missing, unreadable, another
    format, or a field of the wrong shape)."""
    try:
        with open(Path(folder) / INDEX) as fh:
            index = json.load(fh)
        ok = (index.get("format") == FORMAT and isinstance(index.get("nvcc"), str) and index["architectures"]
              and all(isinstance(a, str) and a.startswith("sm_") and _ARCH.match(a) for a in index["architectures"])
              and (index.get("ptx") is None or _ARCH.match(index["ptx"]) and index["ptx"].startswith("compute_"))
              and all(isinstance(e.get("file"), str) and isinstance(e.get("sha256"), str)
                      for e in index["modules"].values()))
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None
    return index if ok else None


def runnable_code(index: dict, architecture: str) -> str | None:
    """What a device of ``architecture`` (``sm_XY``) runs from the index's fatbins, or ``None``: the cubin of
    the same major version with the highest minor version not above the device's (binary compatible),
    else the PTX when its architecture is not above the device's (the driver compiles it when loading)."""
    device = _number(architecture)
    cubins = [a for a in index["architectures"] if _number(a) // 10 == device // 10 and _number(a) <= device]
    if cubins:
        return max(cubins, key=_number)
    ptx = index.get("ptx")
    return ptx if ptx is not None and _number(ptx) <= device else None


def index_binary(index: dict, folder, key: tuple, architecture: str | None = None) -> Path | None:
    """The fatbin in ``folder`` that ``index`` lists for module ``key``, when its name is the one
    :func:`binary_name` gives today's sources and (with ``architecture``) a device of that architecture can
    run it; else ``None`` (not built, stale, or built for other GPUs).  The file's checksum is not read here."""
    entry = index["modules"].get(module_id(key))
    if entry is None or (architecture is not None and runnable_code(index, architecture) is None):
        return None
    if entry["file"] != binary_name(key, index["architectures"], index["nvcc"]):
        return None
    path = Path(folder) / entry["file"]
    return path if path.is_file() else None


@functools.lru_cache(maxsize=None)
def _folder_index(folder: str) -> dict | None:
    return read_index(folder)  # once a process for each folder


_checked: dict = {}  # path -> whether its SHA-256 matched the index, once a process


def prebuilt_binary(key: tuple, architecture: str, folder=None) -> str | None:
    """Path of the prebuilt fatbin of module ``key`` for a device of ``architecture``, or ``None`` when the
    module is to be compiled by NVRTC.

    The folder's index (default :data:`PREBUILT_DIR`) is read once a process.  A file whose SHA-256 differs from
    the index's is refused with one :class:`fastapsp.errors.PrebuiltKernelWarning`.
    """
    from ..errors import PrebuiltKernelWarning

    folder = str(PREBUILT_DIR if folder is None else folder)
    index = _folder_index(folder)
    path = None if index is None else index_binary(index, folder, key, architecture)
    if path is None:
        return None
    good = _checked.get(str(path))
    if good is None:
        expected = index["modules"][module_id(key)]["sha256"]
        try:
            found = file_sha256(path)
            reason = f"SHA-256 {found[:16]}... is not the index's {expected[:16]}..."
        except OSError as exc:
            found, reason = None, f"unreadable ({exc.strerror})"
        good = _checked[str(path)] = found == expected
        if not good:
            warnings.warn(f"fastapsp: prebuilt kernel binary {path}: {reason}; compiling {key[0]} with NVRTC "
                          "instead", PrebuiltKernelWarning, stacklevel=3)
    return str(path) if good else None


def index_identity(architecture: str, folder=None) -> str:
    """What decides which binaries of the folder (default :data:`PREBUILT_DIR`) a device of ``architecture``
    loads, given the sources: the index's SHA-256 and the code the device runs from it (``"none"`` without a
    usable index).  Cheaper than :func:`coverage`, for the build stamp's name."""
    folder = Path(PREBUILT_DIR if folder is None else folder)
    index = read_index(folder)
    return "none" if index is None else f"{file_sha256(folder / INDEX)} {runnable_code(index, architecture)}"


def coverage(keys, architecture: str | None = None, folder=None) -> dict:
    """What the prebuilt folder (default :data:`PREBUILT_DIR`) holds for the modules ``keys``: ``folder``,
    ``index`` (``None`` without a usable one), ``index_sha256``, ``covered`` (the keys it has current binaries
    of; with ``architecture``, only those a device of it can run) and ``runs`` (what that device runs:
    ``sm_XY``, ``compute_XY`` or ``None``).  Checksums of the binaries are checked when they are loaded."""
    folder = Path(PREBUILT_DIR if folder is None else folder)
    index = read_index(folder)
    info = {"folder": str(folder), "index": index, "index_sha256": None, "covered": set(), "runs": None}
    if index is None:
        return info
    info["index_sha256"] = file_sha256(folder / INDEX)
    info["runs"] = None if architecture is None else runnable_code(index, architecture)
    info["covered"] = {key for key in keys if index_binary(index, folder, key, architecture) is not None}
    return info
