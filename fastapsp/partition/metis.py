"""METIS partitioning through pymetis: every METIS call of the package.

pymetis's ``part_graph`` holds the interpreter lock for the whole of METIS's
run, so no other thread of the process moves meanwhile; on the GPU that is the
warm-up thread, whose imports the first GPU stage then waits for
(``docs/performance.md``, host stages).  Where pymetis's extension exports
METIS's ``METIS_PartGraphKway`` and ``METIS_PartGraphRecursive`` and says its
index width (pymetis 2025), METIS is called through :mod:`ctypes` instead,
which releases the lock for the call: the same functions of the same library
with the same arguments and options, so the same labels (METIS calls still run
one at a time).  Otherwise ``part_graph``.
"""

from __future__ import annotations

import ctypes
import functools
import threading

import numpy as np

from ..errors import BackendError, PartitionError

__all__ = ["metis"]

_NOPTIONS = 40  # METIS_NOPTIONS: the length of METIS's options array
_METIS_OK = 1
_STATUS = {-2: "METIS_ERROR_INPUT", -3: "METIS_ERROR_MEMORY", -4: "METIS_ERROR"}
# METIS keeps its random number generator in process-wide state: two calls at once would draw from one
# stream and give other labels than each alone (measured: sample_boundary's two cuts run side by side
# changed roadFLA's boundary law).  One call at a time, as under pymetis's lock.
_ONE_AT_A_TIME = threading.Lock()


def metis(indptr: np.ndarray, indices: np.ndarray, k: int, *, seed: int, imbalance: float,
          objective: str = "cut", vweights=None, eweights=None, recursive: bool = False,
          target_weights=None) -> np.ndarray:
    """int32 labels from METIS ``PartGraphKway`` (``PartGraphRecursive`` with ``recursive``) on a symmetric
    CSR structure, with optional vertex and arc weights.

    ``objective`` is ``"cut"`` (edge cut, METIS's default) or ``"vol"``
    (total communication volume, which tracks the boundary vertex count).
    ``target_weights``: each part's share of the total vertex weight (summing
    to 1; default equal parts).  They go through pymetis's ``part_graph``,
    which knows the width of METIS's real numbers (this module's direct call
    does not), so such a call holds the interpreter lock.
    """
    try:
        import pymetis
    except ImportError as exc:  # pragma: no cover - pymetis is a dependency
        raise BackendError("METIS (the partitioner 'metis', and 'jet' for its coarsest graph) needs pymetis: "
                           "pip install pymetis") from exc
    # ufactor is the allowed imbalance in thousandths: 3% -> 30 (METIS allows 1.030).
    options = pymetis.Options(seed=int(seed), ufactor=max(1, int(round(imbalance * 1000))))
    if objective == "vol":
        options.objtype = 1  # METIS_OBJTYPE_VOL
    call = _released_metis()
    if call is not None and k > 1 and target_weights is None:
        return call(indptr, indices, int(k), options, vweights, eweights, bool(recursive))
    if hasattr(pymetis, "CSRAdjacency"):
        graph = {"adjacency": pymetis.CSRAdjacency(indptr, indices)}
    else:  # pragma: no cover - pymetis before 2025
        graph = {"xadj": indptr, "adjncy": indices}
    # recursive given always: pymetis would pick recursive bisection for k <= 8 by itself, which cannot
    # minimise communication volume.
    with _ONE_AT_A_TIME:
        _, labels = pymetis.part_graph(int(k), **graph, vweights=vweights, eweights=eweights, options=options,
                                       recursive=bool(recursive),
                                       tpwgts=None if target_weights is None else [float(w) for w in target_weights])
    return np.asarray(labels, dtype=np.int32)


@functools.lru_cache(maxsize=None)
def _released_metis():
    """``call(indptr, indices, k, options, vweights, eweights, recursive) -> int32 labels``: METIS of
    pymetis's own library called through ctypes (the interpreter lock released), or None where this
    pymetis does not export the two functions or does not say its index width."""
    try:
        from pymetis import _internal
    except ImportError:  # pragma: no cover - pymetis is a dependency
        return None
    width = getattr(_internal, "_idx_type_width", None)
    try:
        library = ctypes.CDLL(_internal.__file__)
        functions = {False: library.METIS_PartGraphKway, True: library.METIS_PartGraphRecursive}
        width = width() if callable(width) else None
    except (OSError, AttributeError, TypeError):
        return None
    if width not in (32, 64):
        return None
    idx = np.int32 if width == 32 else np.int64
    for function in functions.values():
        function.restype = ctypes.c_int

    def array(values):
        return None if values is None else np.ascontiguousarray(values, dtype=idx)

    def address(values):
        return None if values is None else values.ctypes.data_as(ctypes.c_void_p)

    def call(indptr, indices, k: int, options, vweights, eweights, recursive: bool) -> np.ndarray:
        n = int(np.shape(indptr)[0]) - 1
        xadj, adjncy, vwgt, adjwgt = array(indptr), array(indices), array(vweights), array(eweights)
        nvtxs, ncon, nparts = (np.array([value], dtype=idx) for value in (n, 1, k))
        settings = np.array([options._get(i) for i in range(_NOPTIONS)], dtype=idx)
        objval = np.zeros(1, dtype=idx)
        part = np.zeros(max(n, 1), dtype=idx)
        # No vertex sizes, target part weights or imbalance vector: METIS's defaults, as pymetis passes them.
        with _ONE_AT_A_TIME:
            status = functions[recursive](address(nvtxs), address(ncon), address(xadj), address(adjncy),
                                          address(vwgt), None, address(adjwgt), address(nparts), None, None,
                                          address(settings), address(objval), address(part))
        if status != _METIS_OK:
            kind = "PartGraphRecursive" if recursive else "PartGraphKway"
            raise PartitionError(f"METIS_{kind} returned {_STATUS.get(status, status)} for a graph of "
                                 f"{n} vertices and {adjncy.size} arcs into k = {k} parts")
        return part[:n].astype(np.int32)

    return call
