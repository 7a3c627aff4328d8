"""Small distance types for unweighted graphs: ``--dtype uint16`` and ``--dtype uint8``.

Distances of a graph whose arcs all weigh 1 are whole numbers below n.  They are
computed in float32 as usual and converted to the small type when they reach the
sink; ``inf`` (unreachable) becomes the **sentinel**, the largest value of the
type (65,535 for uint16, 255 for uint8), so real distances must stay below it.
A run is refused up front when the graph is weighted, or when a cheap upper
bound on the distances (:func:`fastapsp.precision.path_bound`: breadth-first
searches) reaches the sentinel.
"""

from __future__ import annotations

import numpy as np

from .errors import ConfigError
from .precision import path_bound

__all__ = ["SMALL_DTYPES", "sentinel", "check_small_dtype", "SmallIntSink", "to_small"]

SMALL_DTYPES = ("uint16", "uint8")


def sentinel(dtype) -> int:
    """The value that stands for "unreachable" in ``dtype``."""
    return int(np.iinfo(np.dtype(dtype)).max)


def check_small_dtype(graph, dtype: str) -> None:
    """Refuse ``dtype`` (uint16/uint8) unless the graph is unweighted and its distances fit.

    Raises
    ------
    ConfigError
        Naming ``dtype``, what was found and what is allowed.
    """
    if not graph.unit_weights:
        raise ConfigError(f"dtype: {dtype} holds distances of unweighted graphs only (every arc weight 1); "
                          f"{graph.name or 'the graph'} has other weights: use float32 or float64")
    bound = int(path_bound(graph))
    if bound >= sentinel(dtype):
        raise ConfigError(f"dtype: distances of {graph.name or 'the graph'} may reach {bound}, but {dtype} holds "
                          f"0..{sentinel(dtype) - 1} ({sentinel(dtype)} means unreachable); use "
                          f"{'uint16' if dtype == 'uint8' and bound < 65535 else 'float32'}")


def to_small(block, dtype):
    """Float distances as ``dtype``, ``inf`` as the sentinel, on the block's device; refuses a value that does not fit."""
    from .backend import array_module

    xp = array_module(block)
    top = sentinel(dtype)
    finite = xp.isfinite(block)
    # Operations with a scalar as functions on the GPU path (DEVELOPERS.md says why).
    if bool(xp.any(xp.greater_equal(xp.where(finite, block, 0), top))):
        raise ConfigError(f"dtype: a distance of {float(block[finite].max()):g} does not fit {dtype} "
                          f"(0..{top - 1}); use float32")
    return xp.where(finite, block, top).astype(dtype)


class SmallIntSink:
    """Converts float blocks to a small integer type on their way into ``sink`` (created with that type)."""

    def __init__(self, sink, dtype) -> None:
        self.sink, self.dtype = sink, np.dtype(dtype)
        self.needs_host = sink.needs_host
        self.on_device = sink.on_device
        self.path = sink.path

    def write(self, vertices, column_start, block) -> None:
        self.sink.write(vertices, column_start, to_small(block, self.dtype))

    def commit(self) -> None:
        self.sink.commit()

    def abort(self) -> None:
        self.sink.abort()
