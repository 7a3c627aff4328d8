"""Occurrences of every value of an index array, the same on NumPy and CuPy.

CuPy's own ``bincount`` imports ``cupyx`` (and with it SciPy's sparse module)
at its first call in a process: a few tenths of a second of every fresh GPU
process (a command-line run, a job's rank).  On CuPy, :func:`bincount` launches
the kernel of ``fastapsp/kernels/count.cu`` instead, built with the others by
``fastapsp build-kernels``.
"""

from __future__ import annotations

import numpy as np

__all__ = ["bincount", "kernel_variants"]

_BLOCK = 256
_MAX_BLOCKS = 1 << 16  # a grid-stride loop covers the rest


def kernel_variants() -> list[tuple]:
    """The kernel module :func:`bincount` launches (:mod:`fastapsp.kernels.catalog` builds it ahead)."""
    return [("count.cu", "count_values", "float32")]


def bincount(values, length: int):
    """int64 counts of ``length`` entries: entry ``v`` counts the values equal to ``v``.

    Values outside ``0 .. length - 1`` are not counted.  The result is on the
    array module of ``values``.

    Examples
    --------
    >>> bincount(np.array([0, 2, 2, 5, -1]), 4).tolist()
    [1, 0, 2, 0]
    """
    length = int(length)
    if type(values).__module__.startswith("cupy"):
        import cupy

        from .kernels import get_kernel

        flat = cupy.ascontiguousarray(values.ravel(), dtype=cupy.int64)
        out = cupy.zeros(length, dtype=cupy.uint64)
        if flat.size and length:
            blocks = min(-(-flat.size // _BLOCK), _MAX_BLOCKS)
            get_kernel("count.cu", "count_values")((blocks,), (_BLOCK,),
                                                   (flat, np.int64(flat.size), np.int64(length), out))
        return out.view(cupy.int64)
    flat = np.asarray(values).ravel()
    flat = flat[(flat >= 0) & (flat < length)]
    return np.bincount(flat.astype(np.int64, copy=False), minlength=length).astype(np.int64, copy=False)
