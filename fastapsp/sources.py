"""Chosen sources (``--sources``): compute and write only the rows of some vertices.

Two exact ways to get the rows of a set S of sources:

- ``pipeline``: only the components holding a source do work.  Their boundary
  rows come from the boundary SSSP as usual (the interior rows need them);
  Floyd-Warshall runs only where an interior vertex is wanted, and the min-plus
  product is computed only for the wanted interior rows.
- ``sssp``: single-source shortest paths from the sources themselves (the
  batched boundary SSSP of stage 1, with S as its sources).  Far cheaper when
  S is small next to the boundary vertices of the components it touches.

``auto`` picks the cheaper by a cost model (:func:`choose_method`).
"""

from __future__ import annotations

import os
import re

import numpy as np

from .errors import ConfigError
from .stages import boundary_sssp, extract_inner_to_boundary, min_plus

__all__ = ["parse_sources", "SourceRows", "RowSubsetSink", "choose_method", "component_rows", "sssp_rows", "run_sssp_rows",
           "METHODS", "ids_path"]

METHODS = ("auto", "pipeline", "sssp")
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
    return np.unique(ids)


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
    with open(spec, encoding="utf-8") as fh:
        for number, line in enumerate(fh, 1):
            for word in line.split("#", 1)[0].split():
                try:
                    values.append(int(word))
                except ValueError:
                    raise ConfigError(f"sources: {spec} line {number}: {word!r} is not a vertex id") from None
    return np.array(values, dtype=np.int64)


def ids_path(output: str) -> str:
    """Where the source ids are saved beside an output file: ``X.npy`` -> ``X.sources.npy``."""
    return output[: -len(".npy")] + ".sources.npy"


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

    def needed(self) -> np.ndarray:
        """True for every component holding a source."""
        return self.per_component > 0

    def local(self, vertices: np.ndarray) -> np.ndarray:
        """Positions (ascending) within ``vertices`` of the wanted ones."""
        return np.flatnonzero(self.position[vertices] >= 0)


class RowSubsetSink:
    """Passes rows on to a sink of shape ``(len(sources), n)``: vertex ``s`` goes to row ``position[s]``."""

    def __init__(self, sink, position: np.ndarray) -> None:
        self.sink, self.position = sink, position
        self.needs_host = sink.needs_host
        self.path = sink.path

    def write(self, vertices, column_start, block) -> None:
        self.sink.write(self.position[np.asarray(vertices)], column_start, block)

    def commit(self) -> None:
        self.sink.commit()

    def abort(self) -> None:
        self.sink.abort()


def choose_method(partition, sources, n: int, m: int, method: str = "auto") -> str:
    """``pipeline`` or ``sssp``, whichever the cost model finds cheaper for ``method='auto'``.

    Pipeline: boundary SSSP b*(m + n)*log2(n), Floyd-Warshall c^3 (only where
    an interior vertex is wanted) and, per wanted row, b*n of min-plus plus the
    row itself; direct SSSP: (m + n)*log2(n) per source (the log for the
    priority queue of Dijkstra).  Only the ranking matters.
    """
    if method not in METHODS:
        raise ConfigError(f"sources_method: {method!r} is not one of {', '.join(METHODS)}")
    if method != "auto":
        return method
    sources = np.asarray(sources)
    labels = partition.labels[sources]
    wanted = np.bincount(labels, minlength=partition.k).astype(np.float64)
    interior = np.bincount(labels[~partition.boundary[sources]], minlength=partition.k) > 0
    c = partition.sizes.astype(np.float64)
    b = partition.boundary_per_part.astype(np.float64)
    used = wanted > 0
    sssp = float(m + n) * max(1.0, np.log2(max(n, 2)))
    pipeline = np.sum((b * sssp + np.where(interior, c**3, 0.0) + wanted * (b * n + n))[used])
    direct = sources.size * sssp
    return "sssp" if direct <= pipeline else "pipeline"


def component_rows(csr, vertices_host, nb, rows_b, local, *, n, xp, dtype, tile, width, timer, emit,
                   paths=None) -> None:
    """The wanted rows ``vertices_host[local]`` of one component, in column chunks of ``width``.

    Boundary rows are the boundary SSSP rows; for wanted interior rows the
    component matrix is built and closed, and the min-plus product runs on those
    rows only.  ``emit(vertex_ids, column_start, block)`` receives each chunk.
    With ``paths`` (``--predecessors``, :class:`fastapsp.pipeline._Predecessors`)
    the predecessors are carried along and their blocks go to ``paths.writer``.
    """
    local = np.asarray(local, dtype=np.int64)
    ids = vertices_host[local]
    boundary = local[local < nb]
    interior = local[local >= nb]
    own = inner = own_p = keep = None
    if interior.size:
        from .pipeline import build_and_close

        matrix = build_and_close(csr, xp.asarray(vertices_host), nb, rows_b, tile=tile, timer=timer, paths=paths)
        with timer("extract"):
            keep = xp.asarray(interior)
            inner = extract_inner_to_boundary(matrix, nb)[keep - nb]
            own = matrix[keep]  # exact distances inside the component
            if paths is not None:
                paths.extract(nb)
                own_p = paths.matrix_p[keep]
            del matrix
    boundary_dev = xp.asarray(boundary)
    for start in range(0, n, width):
        cols = min(width, n - start)
        block = xp.empty((local.size, cols), dtype=dtype)
        block_p = None if paths is None else xp.empty((local.size, cols), dtype=np.int32)
        with timer("assemble"):
            block[: boundary.size] = rows_b[boundary_dev, start : start + cols]
            if paths is not None:
                block_p[: boundary.size] = paths.rows_p[boundary_dev, start : start + cols]
        if interior.size:
            with timer("min_plus"):
                if paths is None:
                    min_plus(inner, rows_b[:, start : start + cols], out=block[boundary.size :])
                else:
                    paths.min_plus(inner, rows_b, start, cols, block[boundary.size :], block_p[boundary.size :],
                                   keep=keep - nb)
            with timer("assemble"):
                inside = np.flatnonzero((vertices_host >= start) & (vertices_host < start + cols))
                if inside.size:
                    at = xp.asarray(vertices_host[inside] - start)
                    block[boundary.size :, at] = own[:, xp.asarray(inside)]
                    if paths is not None:
                        block_p[boundary.size :, at] = own_p[:, xp.asarray(inside)]
        emit(ids, start, block)
        if paths is not None:
            paths.writer.put(ids, start, block_p, timer)
        del block, block_p


def run_sssp_rows(graph, sources, *, backend: str = "numpy", sink, dtype=np.float32, on_block=None,
                  block_bytes: int | None = None, pred_sink=None) -> dict:
    """Rows of ``sources`` by single-source shortest paths (method ``sssp``), handed to ``sink``.

    Sources go in batches whose rows fit a quarter of the free memory (or
    ``block_bytes``).  ``pred_sink``, when given, receives their predecessors
    (:func:`fastapsp.stages.predecessors.boundary_predecessors`).  Returns the
    seconds per stage, as :func:`fastapsp.pipeline.run_components`.
    """
    from .backend import device_csr
    from .pipeline import StageTimer, _available_bytes, _block_emitter, _HostWriter, _Predecessors

    if backend == "cupy":
        import cupy as xp
    else:
        xp = np
    dtype = np.dtype(dtype)
    timer = StageTimer(xp)
    writer = _HostWriter(xp, sink, dtype)
    csr = device_csr(graph, xp)
    paths = None if pred_sink is None else _Predecessors(xp, pred_sink, csr)
    row_bytes = dtype.itemsize + (0 if paths is None else _Predecessors.ROW_BYTES)
    budget = block_bytes if block_bytes is not None else _available_bytes(xp) // 4
    batch = int(max(1, min(4096, budget // max(1, graph.n * row_bytes))))

    emit = _block_emitter(on_block, sink, writer, timer)
    sssp_rows(graph, csr, np.asarray(sources), xp=xp, dtype=dtype, batch=batch, timer=timer, emit=emit, paths=paths)
    writer.close(timer)
    if paths is not None:
        paths.close(timer)
    return timer.seconds


def sssp_rows(graph, csr, sources, *, xp, dtype, batch: int, timer, emit, paths=None) -> None:
    """Rows of ``sources`` by single-source shortest paths, ``batch`` sources at a time (and their predecessors)."""
    indptr, indices, weights = csr
    for first in range(0, len(sources), batch):
        ids = np.asarray(sources[first : first + batch], dtype=np.int64)
        with timer("sssp"):
            rows = boundary_sssp(indptr, indices, weights, xp.asarray(ids), dtype=dtype,
                                 unit_weights=graph.unit_weights)
            if paths is not None:
                paths.boundary(ids, rows)
        emit(ids, 0, rows)
        if paths is not None:
            paths.writer.put(ids, 0, paths.all_p, timer)
        del rows
