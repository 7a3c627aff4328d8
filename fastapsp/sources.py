"""Chosen sources (``--sources``): compute and write only the rows of some vertices.

Two exact ways to get the rows of a set S of sources:

- ``pipeline``: only the components holding a source do work.  Their boundary
  rows come from the boundary SSSP or the boundary graph as usual (the
  interior rows need them); a component's matrix is needed only where an
  interior vertex is wanted (built and closed there with the frontier method;
  with the boundary-graph method its local closure is kept for it, and only
  for it), and the min-plus product is computed only for the wanted interior rows.
- ``sssp``: single-source shortest paths from the sources themselves (the
  batched boundary SSSP of stage 1, with S as its sources).  Far cheaper when
  S is small next to the boundary vertices of the components it touches, and
  it needs no partition.

``auto`` picks the cheaper by the cost model of :mod:`fastapsp.cost`: before
partitioning when the sources' SSSP costs no more than the partitioner
(:func:`sssp_before_partition`), else with the components known
(:func:`choose_source_rows`).
"""

from __future__ import annotations

import os
import re

import numpy as np

from .cost import COMPONENT_OVERHEAD, partition_seconds, predict
from .errors import ConfigError, shorten
from .graph import distinct
from .options import SOURCE_ROWS

__all__ = ["parse_sources", "SourceRows", "RowSubsetSink", "choose_source_rows", "sssp_before_partition",
           "sssp_seconds", "pipeline_seconds", "sssp_batch", "SOURCES_SSSP_BATCH"]

# Sources advanced together by the GPU's batched SSSP in the ``sssp`` method.  A vertex reached at
# one level by one source of a batch of 1024 costs a warp for one useful flag word, so sources
# spread over the graph want small batches and a component's boundary large ones; 64 was near the
# best for both kinds of sources on roadFLA (docs/kernels.md).
SOURCES_SSSP_BATCH = 64
_RANGE = re.compile(r"^\s*(-?\d+)\s*:\s*(-?\d+)\s*$")
_RANDOM = re.compile(r"^random:(\d+)(?::(\d+))?$")


def parse_sources(spec, n: int) -> np.ndarray:
    """The vertex ids ``spec`` names, sorted and without repeats.

    Parameters
    ----------
    spec : str or array_like of int
        ``a:b`` (the ids ``a .. b-1``), ``random:N[:SEED]`` (N distinct ids drawn
        uniformly, seed 0 by default), a ``.npy`` file of ids, or a text file of
        ids separated by white space (``#`` starts a comment); or the ids themselves.
    n : int
        Number of vertices; every id must lie in ``0..n-1``.

    Returns
    -------
    ndarray of int64
        Sorted distinct ids (at least one).

    Raises
    ------
    ValueError
        (``ConfigError``) naming ``sources`` and what is wrong.

    Examples
    --------
    >>> parse_sources("2:5", 10).tolist()
    [2, 3, 4]
    >>> parse_sources("random:3:7", 10).size
    3
    """
    if isinstance(spec, str):
        ids = _parse_text(spec, n)
    else:
        ids = np.asarray(spec)
        if ids.ndim != 1 or not (ids.size == 0 or np.issubdtype(ids.dtype, np.integer)):
            raise ConfigError(f"sources: expected a 1-D array of integer vertex ids, found {ids.dtype} "
                              f"of shape {ids.shape}")
    ids = ids.astype(np.int64)
    if ids.size == 0:
        raise ConfigError(f"sources: {spec!r} names no vertex")
    if ids.min() < 0 or ids.max() >= n:
        bad = int(ids[(ids < 0) | (ids >= n)][0])
        raise ConfigError(f"sources: vertex id {bad} is outside 0..{n - 1}")
    return distinct(ids)


def _parse_text(spec: str, n: int) -> np.ndarray:
    match = _RANGE.match(spec)
    if match:
        a, b = int(match.group(1)), int(match.group(2))
        if not 0 <= a < b <= n:
            raise ConfigError(f"sources: range {spec!r} must satisfy 0 <= a < b <= {n}")
        return np.arange(a, b, dtype=np.int64)
    match = _RANDOM.match(spec.strip())
    if match:
        count, seed = int(match.group(1)), int(match.group(2) or 0)
        if not 1 <= count <= n:
            raise ConfigError(f"sources: {spec!r} asks for {count} vertices, allowed 1..{n}")
        return np.random.default_rng(seed).choice(n, size=count, replace=False)
    if spec.startswith("random"):
        raise ConfigError(f"sources: {spec!r} is not random:N or random:N:SEED")
    if not os.path.isfile(spec):
        raise ConfigError(f"sources: {spec!r} is not a range a:b, random:N[:SEED] or an existing file")
    if spec.endswith(".npy"):
        try:
            ids = np.load(spec, allow_pickle=False)
        except (OSError, ValueError) as exc:
            raise ConfigError(f"sources: {spec}: not a readable .npy file ({exc})") from None
        if ids.ndim != 1 or not np.issubdtype(ids.dtype, np.integer):
            raise ConfigError(f"sources: {spec}: expected a 1-D integer array, found {ids.dtype} {ids.shape}")
        return ids
    values = []
    try:
        with open(spec, encoding="utf-8") as fh:
            for number, line in enumerate(fh, 1):
                for word in line.split("#", 1)[0].split():
                    try:
                        values.append(int(word))
                    except ValueError:
                        shown = shorten(word, 40)
                        raise ConfigError(f"sources: {spec} line {number}: {shown!r} is not a vertex id") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"sources: {spec}: not a text file of vertex ids (byte {exc.start} is not UTF-8); "
                          "allowed: ids separated by white space, or a .npy array") from None
    return np.array(values, dtype=np.int64)


class SourceRows:
    """The wanted rows, per component: which components work and which of their rows are kept.

    Parameters
    ----------
    partition : Partition
        The partition the pipeline runs on.
    sources : ndarray of int
        Sorted distinct vertex ids (:func:`parse_sources`).
    """

    def __init__(self, partition, sources) -> None:
        self.sources = np.asarray(sources, dtype=np.int64)
        self.position = np.full(partition.labels.size, -1, dtype=np.int64)
        self.position[self.sources] = np.arange(self.sources.size)
        self.per_component = np.bincount(partition.labels[self.sources], minlength=partition.k)
        inner = self.sources[~partition.boundary[self.sources]]
        self.interior_per_component = np.bincount(partition.labels[inner], minlength=partition.k)

    def needed(self) -> np.ndarray:
        """True for every component holding a source."""
        return self.per_component > 0

    def closures_needed(self) -> np.ndarray:
        """True for every component holding an interior source: only those need their component matrix."""
        return self.interior_per_component > 0

    def local(self, vertices: np.ndarray) -> np.ndarray:
        """Positions (ascending) within ``vertices`` of the wanted ones."""
        return np.flatnonzero(self.position[vertices] >= 0)


class RowSubsetSink:
    """Passes rows on to a sink of shape ``(len(sources), n)``: vertex ``s`` goes to row ``position[s]``."""

    def __init__(self, sink, position: np.ndarray) -> None:
        self.sink, self.position = sink, position
        self.needs_host = sink.needs_host
        self.on_device = sink.on_device
        self.path = sink.path

    def write(self, vertices, column_start, block) -> None:
        self.sink.write(self.position[np.asarray(vertices)], column_start, block)

    def commit(self) -> None:
        self.sink.commit()

    def abort(self) -> None:
        self.sink.abort()


def sssp_seconds(count: int, n: int, arcs: int, *, unit_weights: bool, backend: str = "numpy",
                 dtype=np.float32) -> float:
    """Predicted seconds of single-source shortest paths from ``count`` sources (the cost model's frontier rate)."""
    one = predict([1], [1], n, arcs, unit_weights=unit_weights, backend=backend, dtype=dtype)["frontier"]["sssp"]
    return float(count) * one


def sssp_before_partition(count: int, n: int, arcs: int, k: int, *, unit_weights: bool, backend: str = "numpy",
                          dtype=np.float32) -> bool:
    """True when SSSP from the sources costs no more than partitioning alone (method ``auto``).

    The pipeline pays the partitioner before its first row, so when the
    sources' SSSP is predicted to cost no more than that (seconds per vertex
    and per component, :func:`fastapsp.cost.partition_seconds`) no partition is
    made at all.  Otherwise the partition is made and :func:`choose_source_rows`
    decides with the components known.
    """
    partition = float(partition_seconds(n, k))
    return sssp_seconds(count, n, arcs, unit_weights=unit_weights, backend=backend, dtype=dtype) <= partition


def pipeline_seconds(partition, sources, n: int, m: int, *, unit_weights: bool, backend: str = "numpy",
                     dtype=np.float32) -> dict:
    """Predicted seconds of the pipeline's work for the rows of ``sources``, per boundary-row method.

    From :func:`fastapsp.cost.predict` on the whole partition, kept to what
    ``--sources`` runs: the boundary rows of the components holding a source
    (the frontier SSSP from their boundary vertices; or the boundary graph,
    whose local closures and levels serve every component), Floyd-Warshall
    where an interior vertex is wanted (frontier method; the boundary-graph
    method has its closures already) and the min-plus product of the wanted
    interior rows, plus the fixed cost per component of :mod:`fastapsp.cost`.
    Returns ``{"frontier": s, "boundary-graph": s}``.
    """
    sources = np.asarray(sources)
    labels = partition.labels[sources]
    inner = np.bincount(labels[~partition.boundary[sources]], minlength=partition.k).astype(np.float64)
    used = np.bincount(labels, minlength=partition.k) > 0
    c = partition.sizes.astype(np.float64)
    b = partition.boundary_per_part.astype(np.float64)
    whole = predict(c, b, n, m, unit_weights=unit_weights, backend=backend, dtype=dtype)
    frontier, levels = whole["frontier"], whole["boundary-graph"]
    rows_share = float(b[used].sum() / b.sum()) if b.sum() else 0.0
    fw_share = float((c[inner > 0] ** 3).sum() / (c**3).sum()) if c.sum() else 0.0
    products = float(((c - b) * b).sum())
    min_plus = frontier["min_plus"] * float((inner * b).sum()) / products if products else 0.0
    # a fixed cost per component worked on: those holding a source, and every one the boundary graph closes
    overhead = COMPONENT_OVERHEAD[backend]
    working, closing = float(used.sum()), float((partition.sizes > 0).sum())
    return {"frontier": frontier["sssp"] * rows_share + frontier["floyd_warshall"] * fw_share + min_plus
            + overhead * working,
            "boundary-graph": levels["local_fw"] + levels["boundary_graph"] + levels["boundary_rows"] * rows_share
            + min_plus + overhead * (working + closing)}


def choose_source_rows(partition, sources, n: int, m: int, method: str = "auto", *, unit_weights: bool = False,
                  backend: str = "numpy", dtype=np.float32) -> str:
    """``pipeline`` or ``sssp``, whichever the cost model finds cheaper for ``method='auto'``.

    Direct: :func:`sssp_seconds` for the sources; pipeline: the cheaper of
    :func:`pipeline_seconds`.  Both write the same rows, so the output's
    cost is left out.
    """
    if method not in SOURCE_ROWS:
        raise ConfigError(f"sources_method: {method!r} is not one of {', '.join(SOURCE_ROWS)}")
    if method != "auto":
        return method
    sources = np.asarray(sources)
    pipeline = min(pipeline_seconds(partition, sources, n, m, unit_weights=unit_weights, backend=backend,
                                    dtype=dtype).values())
    direct = sssp_seconds(sources.size, n, m, unit_weights=unit_weights, backend=backend, dtype=dtype)
    return "sssp" if direct <= pipeline else "pipeline"


def sssp_batch(n: int, row_bytes: int, budget: int) -> int:
    """Sources per batch of :func:`run_sssp_rows`: rows of ``row_bytes`` per vertex that fit ``budget``, 1..4096."""
    return int(max(1, min(4096, budget // max(1, n * row_bytes))))
