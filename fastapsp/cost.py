"""The cost model: predicted seconds of each stage, to pick the boundary-row method and k.

Every stage is counted in *relaxations* (one ``a + b`` compared with a
running minimum) and divided by a rate measured for the backend.  The rates
come from the benchmark runs recorded in ``benchmarks/results/`` (one H100 for
``cupy``, the 2-core development machine for ``numpy``); they give the order of
magnitude that choosing needs, not a promise.  The report holds the predicted
seconds beside the measured ones.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["RATES", "predict", "choose_method", "choose_k", "SSSP_METHODS"]

SSSP_METHODS = ("auto", "frontier", "boundary-graph")

# Relaxations per second.  dense: Floyd-Warshall and min-plus kernels (float32;
# float64 runs at half the rate on the GPU).  frontier_unit / frontier_weighted:
# source-arc pairs per second of the frontier SSSP (BFS / Bellman-Ford on the
# GPU, SciPy's BFS / Dijkstra on the host).  row_bytes: bytes per second of
# writing and gathering row blocks.
RATES = {
    "cupy": {"dense": 9.0e12, "frontier_unit": 5.0e9, "frontier_weighted": 3.5e8, "row_bytes": 1.0e12},
    "numpy": {"dense": 2.0e9, "frontier_unit": 3.0e7, "frontier_weighted": 1.6e7, "row_bytes": 2.0e9},
}


def _rates(backend: str, dtype) -> dict:
    rates = dict(RATES[backend])
    if backend == "cupy" and np.dtype(dtype) == np.float64:
        rates["dense"] /= 2
    return rates


def predict(sizes, boundary, n: int, arcs: int, *, unit_weights: bool, backend: str, dtype=np.float32,
            dense_limit: int = 16384, super_size: int = 2048) -> dict:
    """Predicted seconds of every stage for components of ``sizes`` with ``boundary`` vertices each.

    Returns ``{"frontier": {...}, "boundary-graph": {...}}``, each a dict of
    stage seconds with a ``"total"``.  Stages shared by both methods
    (min-plus, assembly) appear in both.
    """
    rates = _rates(backend, dtype)
    c = np.asarray(sizes, dtype=np.float64)
    b = np.asarray(boundary, dtype=np.float64)
    total_b = float(b.sum())
    itemsize = np.dtype(dtype).itemsize
    fw = float((c**3).sum()) / rates["dense"]
    minplus = float(((c - b) * b).sum()) * n / rates["dense"]
    assemble = float(c.sum()) * n * itemsize / rates["row_bytes"]
    frontier_rate = rates["frontier_unit" if unit_weights else "frontier_weighted"]
    frontier = {
        "sssp": total_b * arcs / frontier_rate,
        "floyd_warshall": 2 * fw,  # build + closure with the global boundary rows
        "min_plus": minplus,
        "assemble": assemble,
    }
    # Boundary graph: local closures once, then the upper levels and the grouped product.
    rows = total_b * float((b * c).sum()) / rates["dense"]
    gather = total_b * n * itemsize * 2 / rates["row_bytes"]
    if total_b <= dense_limit:
        upper = total_b**3 / rates["dense"]
    else:
        # Super-groups of ~super_size boundary vertices; their own boundary grows like a perimeter.
        mean_b = max(1.0, total_b / max(1, int((b > 0).sum())))
        b2 = mean_b * math.sqrt(max(1.0, super_size / mean_b))
        groups = total_b / super_size
        top = min(total_b, groups * b2)
        upper = (total_b * super_size**2 + 2 * total_b**2 * b2 + top**3) / rates["dense"]
    boundary_graph = {
        "local_fw": fw,
        "boundary_graph": upper,
        "boundary_rows": rows + gather,
        "min_plus": minplus,
        "assemble": assemble,
    }
    for stages in (frontier, boundary_graph):
        stages["total"] = sum(stages.values())
    return {"frontier": frontier, "boundary-graph": boundary_graph}


def choose_method(prediction: dict) -> str:
    """The method with the smaller predicted total."""
    if prediction["boundary-graph"]["total"] <= prediction["frontier"]["total"]:
        return "boundary-graph"
    return "frontier"


def choose_k(n: int, arcs: int, boundary_per_part: float, part_size: float, *, unit_weights: bool, backend: str,
             dtype=np.float32, memory_bytes: float | None = None) -> int:
    """The k with the smallest predicted total, from one measured partition.

    ``boundary_per_part`` boundary vertices were found in parts of
    ``part_size`` vertices; for other sizes the boundary is scaled like a
    perimeter (``b ~ sqrt(c)``), as for road networks and meshes.  A k whose
    largest component matrix (or boundary closure) would not fit in
    ``memory_bytes`` is not considered.
    """
    if n <= 1:
        return 1
    alpha = boundary_per_part / math.sqrt(max(part_size, 1.0))
    itemsize = np.dtype(dtype).itemsize
    best, best_k = math.inf, max(1, min(n, round(n / 1800)))
    for c in np.geomspace(256, 16384, 25):
        k = max(1, min(n, round(n / c)))
        size = n / k
        b = min(size, alpha * math.sqrt(size)) if k > 1 else 0.0
        if memory_bytes is not None and (size * size + b * n) * itemsize * 3 > memory_bytes:
            continue
        pred = predict(np.full(k, size), np.full(k, b), n, arcs, unit_weights=unit_weights, backend=backend,
                       dtype=dtype)
        total = min(pred["frontier"]["total"], pred["boundary-graph"]["total"])
        if total < best:
            best, best_k = total, k
    return int(best_k)
