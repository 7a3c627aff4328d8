"""KaMinPar (Karlsruhe Minimal Graph Partitioning), a fast multilevel k-way partitioner."""

from __future__ import annotations

import os
import tempfile

import numpy as np

from ..errors import BackendError

__all__ = ["kaminpar", "KAMINPAR_PRESETS"]

# Names of KaMinPar's preset contexts that make sense for the k of FastAPSP (k <= a few thousand).
KAMINPAR_PRESETS = ("default", "fast", "eco", "strong")


def kaminpar(indptr: np.ndarray, indices: np.ndarray, k: int, *, seed: int, imbalance: float,
             preset: str = "default", threads: int = 1) -> np.ndarray:
    """Labels from KaMinPar's ``compute_partition`` on a symmetric CSR structure.

    ``threads`` is 1 by default: a fair comparison with the sequential METIS
    and KaHIP adapters, and the same labels for the same seed on every run.
    """
    try:
        import kaminpar as _kaminpar
    except ImportError as exc:
        raise BackendError("partitioner 'kaminpar' needs kaminpar: pip install kaminpar") from exc
    if preset not in KAMINPAR_PRESETS:
        raise ValueError(f"kaminpar preset: {preset!r} is not one of {', '.join(KAMINPAR_PRESETS)}")
    n = indptr.size - 1
    # The Python bindings build a graph only from a file; the binary ParHIP
    # layout is written in milliseconds, where METIS text would take longer
    # than the partitioning itself.
    with tempfile.TemporaryDirectory(prefix="fastapsp-kaminpar-") as folder:
        path = os.path.join(folder, "graph.parhip")
        _write_parhip(path, indptr, indices)
        graph = _kaminpar.load_graph(path, _kaminpar.GraphFileFormat.PARHIP)
    if graph.n() != n or graph.m() != indices.size:
        raise BackendError(f"kaminpar read back {graph.n()} vertices and {graph.m()} arcs, "
                           f"expected {n} and {indices.size}")
    _kaminpar.reseed(int(seed))
    solver = _kaminpar.KaMinPar(int(threads), _kaminpar.context_by_name(preset))
    labels = solver.compute_partition(graph, int(k), float(imbalance))
    return np.asarray(labels, dtype=np.int32)


def _write_parhip(path: str, indptr: np.ndarray, indices: np.ndarray) -> None:
    """Unweighted graph in ParHIP's binary layout (version 3: 64-bit ids, no weights).

    Header ``version, n, arcs`` as uint64, then ``n + 1`` byte offsets of the
    neighbour lists from the start of the file, then the 0-based neighbours.
    """
    n, m = indptr.size - 1, indices.size
    header = np.array([3, n, m], dtype=np.uint64)
    first = header.nbytes + 8 * (n + 1)
    offsets = np.uint64(first) + np.uint64(8) * indptr.astype(np.uint64)
    with open(path, "wb") as fh:
        fh.write(header.tobytes())
        fh.write(offsets.tobytes())
        fh.write(indices.astype(np.uint64).tobytes())
