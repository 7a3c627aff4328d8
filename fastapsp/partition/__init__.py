"""Graph partitioners behind one registry; each returns a :class:`Partition`.

Partitioners see the graph as undirected and unweighted: a vertex is a
boundary vertex when any arc joins it to another component.

Every partitioner ``NAME`` has a twin ``NAME+b``: the same partition followed
by the boundary-vertex refinement of :mod:`fastapsp.partition.refine`
(``refine="boundary"`` of :func:`partition_graph` does the same for any name).
"""

from __future__ import annotations

import hashlib
import os
import time
from functools import partial

import numpy as np

from ..errors import PartitionError
from .base import Partition, boundary_mask, make_partition
from .jet import jet
from .kahip import KAHIP_MODES, kahip
from .kaminpar import kaminpar
from .metis import metis
from .refine import boundary_count, refine_boundary

__all__ = ["PARTITIONERS", "REFINEMENTS", "REFINED_SUFFIX", "Partition", "partition_graph", "boundary_mask",
           "make_partition", "save_partition", "load_partition", "graph_fingerprint", "refine_boundary",
           "DEFAULT_SEED", "DEFAULT_IMBALANCE"]

DEFAULT_SEED = 42
DEFAULT_IMBALANCE = 0.03
REFINEMENTS = ("none", "boundary")
REFINED_SUFFIX = "+b"

_BASE = {"metis": metis, "metis-vol": partial(metis, objective="vol")}
_BASE.update({f"kahip-{mode}": partial(kahip, mode=mode) for mode in KAHIP_MODES})
_BASE["kaminpar"] = kaminpar
_BASE["jet"] = jet  # on the GPU (CuPy); METIS on its coarsest graph

# Name -> labels function; "NAME+b" maps to the function of NAME (partition_graph refines after it).
PARTITIONERS = {}
for _name, _function in _BASE.items():
    PARTITIONERS[_name] = _function
    PARTITIONERS[_name + REFINED_SUFFIX] = _function


def partition_graph(graph, k: int, partitioner: str = "metis", *, seed: int = DEFAULT_SEED,
                    imbalance: float = DEFAULT_IMBALANCE, refine: str = "none") -> Partition:
    """Split ``graph`` into ``k`` components.

    Parameters
    ----------
    graph : Graph
        The graph (its undirected structure is partitioned).
    k : int
        Number of components, ``1 <= k <= n``.
    partitioner : str
        A name from ``PARTITIONERS``: ``metis``, ``metis-vol``, ``kahip-fast``,
        ``kahip-eco``, ``kahip-strong``, ``kahip-fastsocial``, ``kahip-ecosocial``,
        ``kahip-strongsocial``, ``kaminpar``, ``jet``, each also with ``+b``
        (followed by the boundary refinement).
    seed : int
        Random seed of the partitioner (default 42).
    imbalance : float
        Allowed imbalance, 0.03 for parts up to 3% above the average.
    refine : {"none", "boundary"}
        ``boundary``: move vertices to lower the boundary vertex count under
        the same balance bound (:func:`fastapsp.partition.refine.refine_boundary`),
        as the ``+b`` names do.  The partition's ``details`` then hold
        ``boundary_vertices_before_refine`` and ``refine_seconds``.

    Returns
    -------
    Partition

    Raises
    ------
    ValueError
        For an unknown partitioner or refinement, ``k`` outside ``1..n`` or a negative imbalance.

    Examples
    --------
    >>> from fastapsp.graph import Graph
    >>> g = Graph.from_edges(4, [0, 1, 2], [1, 2, 3], directed=False)
    >>> p = partition_graph(g, 2)
    >>> int(p.edge_cut), int(p.boundary.sum())
    (1, 2)
    """
    if partitioner not in PARTITIONERS:
        raise ValueError(f"partitioner: {partitioner!r} is not one of {', '.join(PARTITIONERS)}")
    k = int(k)
    if k < 1 or k > max(graph.n, 1):
        raise ValueError(f"k: {k} is outside 1..{graph.n} (the number of vertices of {graph.name or 'the graph'})")
    if not 0 <= imbalance < 1:
        raise ValueError(f"imbalance: {imbalance} is outside [0, 1)")
    if refine not in REFINEMENTS:
        raise ValueError(f"refine: {refine!r} is not one of {', '.join(REFINEMENTS)}")
    base = partitioner[: -len(REFINED_SUFFIX)] if partitioner.endswith(REFINED_SUFFIX) else partitioner
    refined = refine == "boundary" or base != partitioner
    method = base + REFINED_SUFFIX if refined else base
    start = time.perf_counter()
    indptr, indices = graph.undirected_adjacency()
    if k == 1:
        labels = np.zeros(graph.n, dtype=np.int32)
    else:
        labels = PARTITIONERS[base](indptr, indices, k, seed=seed, imbalance=imbalance)
    details = {}
    if refined:
        labels, details = _refine(indptr, indices, labels, k, seed=seed, imbalance=imbalance)
    seconds = time.perf_counter() - start
    return make_partition(graph, labels, k, method=method, seed=seed, imbalance=imbalance, seconds=seconds,
                          details=details)


def _refine(indptr, indices, labels, k: int, *, seed: int, imbalance: float):
    """Boundary refinement of ``labels`` (on the host; on the GPU with FASTAPSP_REFINE_GPU=1); labels and details."""
    from ..backend import gpu_count

    start = time.perf_counter()
    stats: dict = {}
    # The GPU path of the cluster-move refinement is opt-in (FASTAPSP_REFINE_GPU=1) until it has run
    # on a GPU (its first device test run did not finish); the host path is the one tested in CI.
    if gpu_count() > 0 and os.environ.get("FASTAPSP_REFINE_GPU") == "1":
        import cupy

        refined = refine_boundary(cupy.asarray(indptr), cupy.asarray(indices), cupy.asarray(labels), k,
                                  imbalance=imbalance, seed=seed, stats=stats)
        refined = cupy.asnumpy(refined)
        device = "cupy"
    else:
        refined = refine_boundary(indptr, indices, np.asarray(labels), k, imbalance=imbalance, seed=seed,
                                  stats=stats)
        device = "numpy"
    details = {"boundary_vertices_before_refine": int(stats["boundary_before"]),
               "refine_seconds": time.perf_counter() - start, "refine_rounds": int(stats["rounds"]),
               "refine_moves": int(stats["moves"]), "refine_backend": device}
    return refined, details


def graph_fingerprint(graph) -> str:
    """Hex digest of the graph's structure, to tie a saved partition to its graph."""
    h = hashlib.sha256()
    h.update(np.int64(graph.n).tobytes())
    indptr, indices = graph.undirected_adjacency()
    h.update(indptr.astype(np.int64).tobytes())
    h.update(indices.astype(np.int64).tobytes())
    return h.hexdigest()[:32]


def save_partition(path, graph, partition: Partition) -> None:
    """Write ``partition`` (labels and how they were made) to ``path`` as an ``.npz`` archive."""
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "wb") as fh:
        np.savez(fh, labels=partition.labels, k=partition.k, method=partition.method,
                 seed=partition.seed, imbalance=partition.imbalance, seconds=partition.seconds,
                 fingerprint=graph_fingerprint(graph), **_saved_details(partition.details))
    os.replace(tmp, path)


_DETAIL_PREFIX = "detail_"


def _saved_details(details: dict) -> dict:
    """Numbers and strings of ``details`` as archive members ``detail_<name>``."""
    return {_DETAIL_PREFIX + key: value for key, value in details.items()
            if isinstance(value, (int, float, str)) and not isinstance(value, bool)}


def load_partition(path, graph, k: int | None = None) -> Partition:
    """Read a partition saved by :func:`save_partition` (or a plain ``.npy`` of labels).

    Raises
    ------
    PartitionError
        When the file is unreadable, was made for another graph, or for another ``k``.
    """
    try:
        labels, file_k, meta, fingerprint = _read_partition_file(path)
    except PartitionError:
        raise
    except Exception as exc:
        raise PartitionError(f"{path}: not a partition file readable by numpy.load ({exc})") from None
    if fingerprint is None:  # plain labels, as written by `fastapsp partition --output`
        k = file_k if k is None else k
    else:
        if fingerprint != graph_fingerprint(graph):
            raise PartitionError(f"{path}: partition was made for another graph than {graph.name!r}; "
                                 "delete the file or pass another --partition-file")
        if k is not None and k != file_k:
            raise PartitionError(f"{path}: partition has k={file_k}, the run asks for k={k}")
        k = file_k
    if labels.shape != (graph.n,):
        raise PartitionError(f"{path}: {labels.size} labels for a graph of {graph.n} vertices")
    if labels.size and (labels.min() < 0 or labels.max() >= k):
        raise PartitionError(f"{path}: labels must lie in 0..{k - 1}")
    return make_partition(graph, labels, k, method=str(meta.get("method", "file")), seed=int(meta.get("seed", -1)),
                          imbalance=float(meta.get("imbalance", float("nan"))), seconds=float(meta.get("seconds", 0.0)),
                          details=meta.get("details"))


def _read_partition_file(path):
    """Labels, k, metadata and graph fingerprint (None for a plain label array) of a partition file."""
    data = np.load(path, allow_pickle=False)
    if isinstance(data, np.ndarray):
        if not np.issubdtype(data.dtype, np.integer):
            raise PartitionError(f"{path}: labels must be integers, found {data.dtype}")
        k = int(data.max()) + 1 if data.size else 1
        return data, k, {"method": "file", "seed": -1, "imbalance": float("nan"), "seconds": 0.0}, None
    with data:
        missing = {"labels", "k", "fingerprint"} - set(data.files)
        if missing:
            raise PartitionError(f"{path}: not a fastapsp partition file (missing {', '.join(sorted(missing))})")
        meta = {key: data[key].item() for key in ("method", "seed", "imbalance", "seconds") if key in data.files}
        meta["details"] = {key[len(_DETAIL_PREFIX):]: data[key].item() for key in data.files
                           if key.startswith(_DETAIL_PREFIX)}
        return data["labels"], int(data["k"]), meta, str(data["fingerprint"])
