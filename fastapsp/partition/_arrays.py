"""Array helpers of Jet and of the boundary refinement, the same on NumPy and CuPy.

Below :mod:`fastapsp.partition.jet` and :mod:`fastapsp.partition.refine`:
the balance bound, stable sorting and the seeded vertex hash that
both use, so that their results agree.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["max_part_size"]


def max_part_size(n: int, k: int, imbalance: float) -> int:
    """The balance bound, ``ceil((1 + imbalance) * n / k)`` vertices per part."""
    # The small tolerance keeps e.g. 1.03 * 100 / 1 = 103.00000000000001 at 103.
    return int(math.ceil((1.0 + imbalance) * n / k - 1e-9))


def _array_module(a):
    if type(a).__module__.startswith("cupy"):
        import cupy

        return cupy
    return np


def _stable_argsort(xp, a):
    """Stable argsort on NumPy and CuPy (CuPy sorts are always stable)."""
    if xp is np:
        return np.argsort(a, kind="stable")
    return xp.argsort(a)


def _hash32(xp, vertices, salt: int):
    """A seeded bijection of 32-bit vertex ids (xorshift-multiply), identical on NumPy and CuPy."""
    # Operations with a scalar as functions on the GPU path (DEVELOPERS.md says why).
    h = xp.bitwise_xor(vertices.astype(xp.uint32), np.uint32(salt & 0xFFFFFFFF))
    h = xp.bitwise_xor(h, xp.right_shift(h, np.uint32(16)))
    h = xp.multiply(h, np.uint32(0x7FEB352D))
    h = xp.bitwise_xor(h, xp.right_shift(h, np.uint32(15)))
    h = xp.multiply(h, np.uint32(0x846CA68B))
    return xp.bitwise_xor(h, xp.right_shift(h, np.uint32(16)))
