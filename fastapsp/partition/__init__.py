"""Graph partitioners behind one registry; each returns a :class:`Partition`.

Partitioners see the graph as undirected and unweighted: a vertex is a
boundary vertex when any arc joins it to another component.

Every partitioner ``NAME`` has a twin ``NAME+b``: the same partition followed
by the boundary-vertex refinement of :mod:`fastapsp.partition.refine`
(``refine="boundary"`` of :func:`partition_graph` does the same for any name).
``auto`` (the default) names one of them by the graph and the backend:
:func:`auto_partitioner`.
"""

from __future__ import annotations

import hashlib
import os
import time
from functools import partial

import numpy as np

from ..errors import PartitionError
from .base import Partition, boundary_mask, make_partition
from .isolated import partition_apart
from .jet import jet
from .kahip import KAHIP_MODES, kahip
from .kaminpar import kaminpar
from .metis import metis
from .refine import boundary_count, refine_boundary

__all__ = ["PARTITIONERS", "AUTO", "AUTO_JET_FROM", "AUTO_JET_FROM_WARM", "auto_partitioner", "REFINEMENTS", "REFINED_SUFFIX",
           "Partition", "partition_graph", "partition_method", "partition_labels", "refine_labels", "boundary_mask", "make_partition", "save_partition", "load_partition",
           "graph_fingerprint", "partition_checksum", "partition_record", "refine_boundary",
           "DEFAULT_SEED", "DEFAULT_IMBALANCE"]

DEFAULT_SEED = 42
DEFAULT_IMBALANCE = 0.03
REFINEMENTS = ("none", "boundary")
REFINED_SUFFIX = "+b"
AUTO = "auto"
# Jet from this many vertices on, on the GPU: below it a fresh process's wait for its CUDA context
# and Jet's launches cost more than METIS on the host (the measurements: docs/kernels.md).
AUTO_JET_FROM = 1 << 19
# The same once this process has finished work on its GPU (a library session, a notebook;
# fastapsp.backend.gpu_warm): in one warm process on
# one H100 Jet partitioned roadNY in 0.14-0.18 s against METIS's 0.40 s, roadBAY in 0.16-0.18 s
# against 0.46 s and luxembourg_osm (114,599 vertices) in 0.10-0.12 s against 0.11-0.13 s, with 1-6%
# fewer boundary vertices, and the stats calls took 25-35% less
# (benchmarks/results/partition-warm/, benchmarks/partition_warm_bench.py).
AUTO_JET_FROM_WARM = 1 << 16

_BASE = {"metis": metis, "metis-vol": partial(metis, objective="vol")}
_BASE.update({f"kahip-{mode}": partial(kahip, mode=mode) for mode in KAHIP_MODES})
_BASE["kaminpar"] = kaminpar
_BASE["jet"] = jet  # on the GPU (CuPy); METIS on its coarsest graph

# Name -> labels function; "NAME+b" maps to the function of NAME (partition_graph refines after it).
PARTITIONERS = {}
for _name, _function in _BASE.items():
    PARTITIONERS[_name] = _function
    PARTITIONERS[_name + REFINED_SUFFIX] = _function


def auto_partitioner(n: int, backend: str = "auto") -> str:
    """The partitioner that ``auto`` stands for: ``jet`` on the GPU for graphs of at least
    ``AUTO_JET_FROM`` vertices, or ``AUTO_JET_FROM_WARM`` once this process has finished work on
    its GPU (:func:`fastapsp.backend.gpu_warm`), ``metis`` otherwise.

    ``backend`` is ``numpy``, ``cupy`` or ``auto`` (a GPU when CuPy sees one).  A process's
    first call of a mid-sized graph thus takes METIS and a later one Jet: the distances are
    the same (exact either way), the partition and the seconds are not.

    Examples
    --------
    >>> auto_partitioner(1000, "cupy"), auto_partitioner(1 << 20, "numpy")
    ('metis', 'metis')
    """
    from ..backend import gpu_warm, resolve_backend

    if n < (AUTO_JET_FROM_WARM if gpu_warm() else AUTO_JET_FROM):
        return "metis"

    return "jet" if resolve_backend(backend) == "cupy" else "metis"


def partition_graph(graph, k: int, partitioner: str = "metis", *, seed: int = DEFAULT_SEED,
                    imbalance: float = DEFAULT_IMBALANCE, refine: str = "none", backend: str = "auto",
                    helpers=None) -> Partition:
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
        (followed by the boundary refinement), or ``auto``
        (:func:`auto_partitioner` of the graph's size and ``backend``).
    seed : int
        Random seed of the partitioner (default 42).
    imbalance : float
        Allowed imbalance, 0.03 for parts up to 3% above the average.
    refine : {"none", "boundary"}
        ``boundary``: move vertices to lower the boundary vertex count under
        the same balance bound (:func:`fastapsp.partition.refine.refine_boundary`),
        as the ``+b`` names do.  The partition's ``details`` then hold
        ``boundary_vertices_before_refine`` and ``refine_seconds``.
    backend : {"auto", "numpy", "cupy"}
        Where the run computes: only ``auto`` looks at it.
    helpers : RankHelpers, optional
        Under MPI, on rank 0: the other ranks, waiting in
        :func:`fastapsp.partition.initial.serve`, partition pieces of Jet's
        coarsest graph (the same labels as without them).

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
    base, method = partition_method(partitioner, refine, graph.n, backend)
    k = int(k)
    if k < 1 or k > max(graph.n, 1):
        raise ValueError(f"k: {k} is outside 1..{graph.n} (the number of vertices of {graph.name or 'the graph'})")
    if not 0 <= imbalance < 1:
        raise ValueError(f"imbalance: {imbalance} is outside [0, 1)")
    start = time.perf_counter()
    indptr, indices = graph.undirected_adjacency()
    labels, details = partition_labels(indptr, indices, k, base, seed=seed, imbalance=imbalance, helpers=helpers)
    if method != base:
        labels, refined_details = refine_labels(indptr, indices, labels, k, seed=seed, imbalance=imbalance)
        details.update(refined_details)
    seconds = time.perf_counter() - start
    xp = np
    if base == "jet":  # the process works on its GPU already: the boundary is found there
        import cupy as xp
    return make_partition(graph, labels, k, method=method, seed=seed, imbalance=imbalance, seconds=seconds,
                          details=details, xp=xp)


def partition_method(partitioner: str, refine: str, n: int, backend: str = "auto") -> tuple[str, str]:
    """``(base, method)`` of a run: the partitioner that makes the labels (``auto`` resolved for ``n``
    vertices on ``backend``) and the name of the partition (``base+b`` where the boundary refinement follows).

    >>> partition_method("metis", "boundary", 100)
    ('metis', 'metis+b')
    """
    if partitioner == AUTO:
        partitioner = auto_partitioner(n, backend)
    if partitioner not in PARTITIONERS:
        raise ValueError(f"partitioner: {partitioner!r} is not one of {AUTO}, {', '.join(PARTITIONERS)}")
    if refine not in REFINEMENTS:
        raise ValueError(f"refine: {refine!r} is not one of {', '.join(REFINEMENTS)}")
    base = partitioner[: -len(REFINED_SUFFIX)] if partitioner.endswith(REFINED_SUFFIX) else partitioner
    refined = refine == "boundary" or base != partitioner
    return base, (base + REFINED_SUFFIX if refined else base)


def partition_labels(indptr, indices, k: int, base: str, *, seed: int, imbalance: float,
                     helpers=None) -> tuple[np.ndarray, dict]:
    """Labels of ``k`` components of a symmetric CSR structure by the partitioner ``base`` (a name of
    ``PARTITIONERS`` without ``+b``), vertices without arcs in components of their own
    (:func:`~fastapsp.partition.isolated.partition_apart`); and the details for the partition's record.
    ``helpers``: the other MPI ranks' help with Jet's initial partition
    (:class:`~fastapsp.partition.initial.RankHelpers`; other partitioners do not take it)."""
    if k == 1:
        return np.zeros(np.asarray(indptr).size - 1, dtype=np.int32), {}
    more = {"helpers": helpers} if helpers is not None and base == "jet" else {}
    return partition_apart(indptr, indices, k, partial(PARTITIONERS[base], seed=seed, **more), imbalance=imbalance)


def refine_labels(indptr, indices, labels, k: int, *, seed: int, imbalance: float, gpu: bool | None = None):
    """Boundary refinement of ``labels``; labels and details.

    The pairwise cuts run on the host (forked workers, FASTAPSP_REFINE_WORKERS);
    the cluster moves on the GPU when ``gpu`` is True, on the host when False,
    and by default (None) on the GPU when CuPy sees one (NumPy and CuPy give
    the same labels).
    """
    from ..backend import gpu_count
    from .workers import worker_count

    start = time.perf_counter()
    stats: dict = {}
    workers = worker_count()
    if gpu_count() > 0 if gpu is None else gpu:
        import cupy

        refined = refine_boundary(cupy.asarray(indptr), cupy.asarray(indices), cupy.asarray(labels), k,
                                  imbalance=imbalance, seed=seed, workers=workers, stats=stats)
        refined = cupy.asnumpy(refined)
        device = "cupy"
    else:
        refined = refine_boundary(indptr, indices, np.asarray(labels), k, imbalance=imbalance, seed=seed,
                                  workers=workers, stats=stats)
        device = "numpy"
    details = {"boundary_vertices_before_refine": int(stats["boundary_before"]),
               "refine_seconds": time.perf_counter() - start, "refine_rounds": int(stats["rounds"]),
               "refine_moves": int(stats["moves"]), "refine_backend": device, "refine_workers": workers}
    return refined, details


def graph_fingerprint(graph) -> str:
    """Hex digest of the graph's structure, to tie a saved partition to its graph."""
    h = hashlib.sha256()
    h.update(np.int64(graph.n).tobytes())
    indptr, indices = graph.undirected_adjacency()
    h.update(indptr.astype(np.int64).tobytes())
    h.update(indices.astype(np.int64).tobytes())
    return h.hexdigest()[:32]


def partition_checksum(partition: Partition) -> str:
    """Hex digest of the labels, to tie a result or a saved partition to the exact split it used."""
    return hashlib.sha256(partition.labels.astype(np.int32).tobytes()).hexdigest()[:32]


def partition_record(graph, partition: Partition) -> dict:
    """What the sidecar of a saved partition records: the graph it splits and how it was made."""
    from .._version import __version__

    metrics = partition.metrics()
    return {"kind": "partition", "graph": graph.name, "graph_checksum": graph.checksum(),
            "structure_checksum": graph_fingerprint(graph), "n": graph.n, "m": graph.num_edges,
            "directed": graph.directed, "k": partition.k, "partitioner": partition.method, "seed": partition.seed,
            "imbalance_allowed": partition.imbalance if np.isfinite(partition.imbalance) else None,
            "imbalance": metrics["imbalance"],
            "largest_part": metrics["largest_part"], "boundary_vertices": metrics["boundary_vertices"],
            "edge_cut": metrics["edge_cut"], "partition_checksum": partition_checksum(partition),
            "details": _saved_details(partition.details), "version": __version__}


def save_partition(path, graph, partition: Partition, *, compress: bool = False, extra: dict | None = None) -> None:
    """Write ``partition`` to ``path`` with a JSON sidecar ``PATH.json`` (see :func:`partition_record`).

    A path ending in ``.npy`` gets the labels alone (one int32 per vertex);
    any other name an ``.npz`` archive of the labels and how they were made
    (``compress``: zip-compressed, about tenfold smaller).
    The file is written under a temporary name and certified by
    :func:`fastapsp.sink.publish`, so a saved partition with a matching
    sidecar is complete.  ``extra`` (JSON values) is added to the sidecar
    (a saved plan records its decisions there).
    """
    from ..sink import publish

    path = os.fspath(path)
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "wb") as fh:
        if path.endswith(".npy"):
            np.save(fh, partition.labels.astype(np.int32))
        else:
            (np.savez_compressed if compress else np.savez)(fh, labels=partition.labels, k=partition.k, method=partition.method,
                     seed=partition.seed, imbalance=partition.imbalance, seconds=partition.seconds,
                     fingerprint=graph_fingerprint(graph), **{_DETAIL_PREFIX + key: value for key, value in
                                                              _saved_details(partition.details).items()})
    publish(tmp, path, {**partition_record(graph, partition), **(extra or {})})


_DETAIL_PREFIX = "detail_"


def _saved_details(details: dict) -> dict:
    """The numbers and strings of ``details`` (what a saved partition keeps of them)."""
    return {key: value for key, value in details.items()
            if isinstance(value, (int, float, str)) and not isinstance(value, bool)}


def load_partition(path, graph, k: int | None = None, *, log=None) -> Partition:
    """Read a partition saved by :func:`save_partition`, or a user's ``.npy`` of labels.

    With its sidecar ``PATH.json`` the file is checked before its labels are
    used: the sidecar must match the file's size, and record the graph's
    vertex count, its structure (arcs in either direction, the partitioners'
    view, so a partition made for ``USA-road-d`` fits ``USA-road-t``) and
    ``k`` when given.  A file without a sidecar is accepted after its labels
    are checked: ``n`` integers in ``0..k-1``; when ``k`` is not given it is
    the largest label + 1 and every label below it must be used (an unused
    label 0 is the mark of 1-based labels); giving ``k`` allows empty
    components.  ``log`` (a callable taking one line) then hears a note.

    Raises
    ------
    PartitionError
        When the file or its sidecar is unreadable, or the partition was made
        for another graph, another ``n`` or another ``k``; the message names
        the file, what it holds and what the run expected.
    """
    from ..sink import read_sidecar, sidecar_path

    path = os.fspath(path)
    try:
        record = read_sidecar(path)
    except ValueError as exc:
        raise PartitionError(str(exc)) from None
    if record is not None:
        _check_record(path, record, graph, k)
    try:
        labels, file_k, meta, fingerprint = _read_partition_file(path)
    except PartitionError:
        raise
    except Exception as exc:
        raise PartitionError(f"{path}: not a partition file readable by numpy.load ({exc})") from None
    if record is not None:
        file_k = int(record["k"])
        allowed = record.get("imbalance_allowed")
        meta = {"method": record.get("partitioner", "file"), "seed": record.get("seed", -1),
                "imbalance": float("nan") if allowed is None else allowed, "seconds": meta.get("seconds", 0.0),
                "details": record.get("details") or meta.get("details")}
    elif fingerprint is not None:  # an archive of save_partition whose sidecar is gone
        if fingerprint != graph_fingerprint(graph):
            raise PartitionError(f"{path}: partition was made for another graph than {graph.name!r} (the graph "
                                 "fingerprint it holds differs); delete the file or pass another --partition-file")
        if k is not None and k != file_k:
            raise PartitionError(f"{path}: partition has k={file_k}, the run asks for k={k}")
    if labels.shape != (graph.n,):
        raise PartitionError(f"{path}: {labels.size} labels for a graph of {graph.n} vertices "
                             f"({graph.name}); allowed: one label per vertex")
    given = k
    k = file_k if k is None else k
    if k > max(1, graph.n):
        raise PartitionError(f"{path}: k={k} components for a graph of {graph.n} vertices ({graph.name}); "
                             "allowed: at most one component per vertex")
    if labels.size and (labels.min() < 0 or labels.max() >= k):
        found = int(labels.min()) if labels.min() < 0 else int(labels.max())
        raise PartitionError(f"{path}: label {found} is outside 0..{k - 1} (k={k}); allowed: labels 0..k-1")
    if record is None and fingerprint is None and given is None:
        unused = np.flatnonzero(np.bincount(labels, minlength=k) == 0)
        if unused.size:
            hint = " (label 0 unused: 1-based labels?)" if unused[0] == 0 else ""
            raise PartitionError(f"{path}: labels 0..{k - 1} leave {unused.size} component(s) empty, the first "
                                 f"{int(unused[0])}{hint}; allowed: every label used, or give k (-k {k}) to "
                                 "allow empty components")
    partition = make_partition(graph, labels, k, method=str(meta.get("method", "file")),
                               seed=int(meta.get("seed", -1)), imbalance=float(meta.get("imbalance", float("nan"))),
                               seconds=float(meta.get("seconds", 0.0)), details=meta.get("details"))
    if record is not None and record.get("partition_checksum") != partition_checksum(partition):
        raise PartitionError(f"{path}: labels do not match those its sidecar {sidecar_path(path)} records "
                             "(replaced file?); delete both or pass another --partition-file")
    if record is None and log is not None:
        how = "the graph fingerprint it holds and " if fingerprint is not None else ""
        log(f"note: {path} has no sidecar {sidecar_path(path)} (not saved by fastapsp): checked {how}its "
            f"{labels.size} labels (k={k}, {int(np.count_nonzero(partition.sizes))} components used)")
    return partition


def _check_record(path: str, record: dict, graph, k: int | None) -> None:
    """Refuse a saved partition whose sidecar names another graph, ``n`` or ``k``."""
    from ..sink import sidecar_path

    sidecar = sidecar_path(path)
    if record.get("kind") != "partition":
        raise PartitionError(f"{sidecar}: not the sidecar of a partition (kind {record.get('kind')!r}); "
                             "allowed: a file saved by --partition-file or fastapsp partition --output")
    mine = graph_fingerprint(graph)
    if record.get("n") != graph.n or record.get("structure_checksum") != mine:
        raise PartitionError(f"{path}: partition was made for another graph: {sidecar} records "
                             f"{record.get('graph')!r} with n={record.get('n')}, m={record.get('m')}, structure "
                             f"checksum {record.get('structure_checksum')}; expected {graph.name!r} with n={graph.n}, "
                             f"m={graph.num_edges}, structure checksum {mine}; delete the file or pass another "
                             "--partition-file")
    if k is not None and record.get("k") != k:
        raise PartitionError(f"{path}: partition has k={record.get('k')} (per {sidecar}), the run asks for k={k}")


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
