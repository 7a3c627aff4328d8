"""``--verify N``: recompute N sampled rows with SciPy's Dijkstra on the CPU and compare.

The sampled rows are caught as their blocks pass by on the device (an
``on_block`` consumer, like ``--stats``), so verification works with every
``--output``, ``none`` included.  Each rank checks the rows it computed.
"""

from __future__ import annotations

import time

import numpy as np

from .backend import array_module
from .errors import FastAPSPError

__all__ = ["RowSampler", "VerificationError", "pick_rows", "verify_rows", "chain"]


class VerificationError(FastAPSPError):
    """A computed distance differs from SciPy's Dijkstra."""


def pick_rows(candidates, count: int, seed: int = 0) -> np.ndarray:
    """``count`` distinct vertices drawn from ``candidates`` (all of them when fewer), sorted."""
    candidates = np.asarray(candidates, dtype=np.int64)
    if count < 0:
        raise ValueError(f"verify: {count} rows asked for, must be >= 0")
    if count >= candidates.size:
        return np.sort(candidates)
    return np.sort(np.random.default_rng(seed).choice(candidates, size=count, replace=False))


def chain(*consumers):
    """One ``on_block`` callable calling each given consumer (``None`` entries skipped), or None."""
    consumers = [c for c in consumers if c is not None]
    if not consumers:
        return None
    if len(consumers) == 1:
        return consumers[0]

    def on_block(ids, start, block):
        for consume in consumers:
            consume(ids, start, block)

    return on_block


class RowSampler:
    """Keeps a host copy of the rows of ``rows`` as their blocks go by.

    Parameters
    ----------
    rows : ndarray of int
        Vertex ids whose rows are kept.
    n : int
        Number of vertices (row length).
    """

    def __init__(self, rows, n: int) -> None:
        self.n = n
        self.wanted = np.zeros(n, dtype=bool)
        self.wanted[np.asarray(rows, dtype=np.int64)] = True
        self.rows: dict[int, np.ndarray] = {}

    def __call__(self, ids, column_start: int, block) -> None:
        ids = np.asarray(ids.get() if hasattr(ids, "get") else ids, dtype=np.int64)
        hit = np.flatnonzero(self.wanted[ids])
        if hit.size == 0:
            return
        xp = array_module(block)
        part = block[xp.asarray(hit)]
        if xp is not np:
            part = part.get()
        for j, v in enumerate(ids[hit].tolist()):
            row = self.rows.setdefault(v, np.full(self.n, np.nan, dtype=np.float64))
            row[column_start : column_start + block.shape[1]] = part[j]


def verify_rows(graph, sampler: RowSampler, dtype, *, comm) -> dict:
    """Compare the rows ``sampler`` kept with SciPy's Dijkstra; collective over ``comm``.

    Distances must agree exactly in their pattern of ``inf`` and to a relative
    1e-5 (float32) or 1e-12 (float64) otherwise: real weights summed in another
    order round differently.

    Returns
    -------
    dict
        ``verified_rows`` (all ranks), ``verify_max_rel_error`` and ``verify_seconds`` (the longest
        check of one rank, SciPy's Dijkstra from its sampled rows, without waiting for the others: time a
        benchmark may set apart).

    Raises
    ------
    VerificationError
        On every rank, naming the first wrong distance, when any rank found one.
    """
    from scipy.sparse.csgraph import dijkstra

    from .comm import run_phase

    def check():
        start = time.perf_counter()
        if not sampler.rows:
            return 0, 0.0, time.perf_counter() - start
        vertices = np.array(sorted(sampler.rows), dtype=np.int64)
        got = np.stack([sampler.rows[v] for v in vertices])
        if np.isnan(got).any():
            raise VerificationError("verify: some sampled rows were not computed completely")
        want = dijkstra(graph.to_scipy(), directed=True, indices=vertices)
        want = want.astype(dtype).astype(np.float64)  # what the output dtype can hold
        rtol = 1e-5 if np.dtype(dtype).itemsize <= 4 else 1e-12
        finite = np.isfinite(want)
        same_inf = np.array_equal(finite, np.isfinite(got))
        with np.errstate(invalid="ignore"):
            error = np.where(finite, np.abs(got - want) / np.maximum(np.abs(want), np.finfo(np.float64).tiny), 0.0)
        bad = (finite != np.isfinite(got)) | (finite & ~(error <= rtol))
        if not same_inf or bad.any():
            a, j = map(int, np.argwhere(bad)[0])
            raise VerificationError(f"verify: d({vertices[a]}, {j}) is {got[a, j]} but SciPy's Dijkstra gives "
                                    f"{want[a, j]}")
        return int(vertices.size), float(error.max()) if error.size else 0.0, time.perf_counter() - start

    count, worst, seconds = run_phase(comm, "verifying sampled rows", check)
    results = comm.allgather((count, worst, seconds))
    return {"verified_rows": sum(r[0] for r in results), "verify_max_rel_error": max(r[1] for r in results),
            "verify_seconds": round(max(r[2] for r in results), 4)}
