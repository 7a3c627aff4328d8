"""The text a kernel module is compiled from, by NVRTC at first use or by nvcc ahead of time.

The sources are written for two macros: ``REAL`` (``float`` or ``double``, the
distance type) and ``FASTAPSP_INDEX64`` (defined when graph ids and offsets are
64-bit).  ``#include "name.cuh"`` lines naming a file of this folder are inlined
here, so CuPy's on-disk cache sees the whole source.

A module's macros (those two and a variant's own ``-D`` options) are written as
``#define`` lines at the top of the text it is compiled from (:func:`module_code`),
not passed to NVRTC: every module is then compiled with the same options, and
CuPy, which checks its compiler once a process for each distinct set of options
(an empty program compiled, about 20 ms on an H100 host), checks it once instead
of once per variant a run loads.  Re-exported by :mod:`fastapsp.kernels`.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

import numpy as np

__all__ = ["KERNEL_DIR", "kernel_source", "module_key", "module_code"]

KERNEL_DIR = Path(__file__).resolve().parent

_INCLUDE = re.compile(r'^#include "([\w.]+)"[ \t]*$', re.MULTILINE)
_REALS = {np.dtype(np.float32): "float", np.dtype(np.float64): "double"}
_INDICES = {np.dtype(np.int32): (), np.dtype(np.int64): ("-DFASTAPSP_INDEX64",)}
_OPTIONS = ("-std=c++17",)  # every module's NVRTC options (its macros are in its text: module_code)


@functools.lru_cache(maxsize=None)
def kernel_source(file: str) -> str:
    """Text of kernel file ``file`` with its local ``#include "x.cuh"`` lines inlined (each once).

    Read once a process: every module of the file (one per variant) and the build stamp's hash use it.

    Raises
    ------
    FileNotFoundError
        When ``file`` (or a file it includes) is not in ``fastapsp/kernels``.
    """
    seen: set[str] = set()

    def expand(name: str) -> str:
        path = KERNEL_DIR / name
        if not path.is_file():
            raise FileNotFoundError(f"kernel source {name!r} is not in {KERNEL_DIR}")
        if name in seen:
            return ""
        seen.add(name)
        return _INCLUDE.sub(lambda m: expand(m.group(1)), path.read_text())

    return expand(file)


def module_key(file: str, dtype=np.float32, index_dtype=np.int32, options: tuple = (),
               cooperative: bool = False) -> tuple:
    """``(file, compiler flags, cooperative)``: what one compiled module of ``file`` is, for these arguments
    of :func:`get_kernel`.

    Raises
    ------
    TypeError
        For a ``dtype`` or ``index_dtype`` the kernels are not built for.
    """
    real = _REALS.get(np.dtype(dtype))
    if real is None:
        raise TypeError(f"dtype: kernels are built for float32 and float64, not {np.dtype(dtype)}")
    index = _INDICES.get(np.dtype(index_dtype))
    if index is None:
        raise TypeError(f"index_dtype: kernels are built for int32 and int64, not {np.dtype(index_dtype)}")
    return file, (f"-DREAL={real}",) + index + tuple(options), bool(cooperative)


def module_code(file: str, flags: tuple) -> tuple[str, tuple]:
    """``(text, options)`` compiled for one module of ``file`` with compiler ``flags`` (:func:`module_key`):
    each ``-DNAME`` or ``-DNAME=VALUE`` flag as a ``#define`` line before the source, as the
    command line would define it, and the other flags (none today) with the common options.

    Examples
    --------
    >>> text, options = module_code("common.cuh", ("-DREAL=float", "-DFASTAPSP_INDEX64"))
    >>> text.splitlines()[:3], options
    (['#define REAL float', '#define FASTAPSP_INDEX64 1', '#line 1'], ('-std=c++17',))
    """
    defines, others = [], []
    for flag in flags:
        if flag.startswith("-D") and len(flag) > 2:
            name, equals, value = flag[2:].partition("=")
            defines.append(f"#define {name} {value if equals else 1}")
        else:
            others.append(flag)
    return "\n".join([*defines, "#line 1", kernel_source(file)]), _OPTIONS + tuple(others)
