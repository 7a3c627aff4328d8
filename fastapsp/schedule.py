"""Which rank computes which components: a balanced, largest-first schedule."""

from __future__ import annotations

import heapq

import numpy as np

__all__ = ["component_costs", "schedule_components"]


def component_costs(partition, n: int, m: int) -> np.ndarray:
    """Estimated work of every component, from its size c and boundary count b.

    Boundary SSSP ~ b * m, Floyd-Warshall ~ c^3, min-plus ~ (c - b) * b * n and
    the row block itself ~ c * n.  Only the ranking matters, not the unit.
    """
    c = partition.sizes.astype(np.float64)
    b = partition.boundary_per_part.astype(np.float64)
    return b * m + c**3 + (c - b) * b * n + c * n


def schedule_components(costs, size: int) -> list[list[int]]:
    """Components of each rank: largest cost first, each to the least loaded rank.

    Deterministic (ties go to the lower component id and rank), so every rank
    computes the same schedule without communicating.  Empty components
    (cost 0) are left out.
    """
    costs = np.asarray(costs, dtype=np.float64)
    order = sorted((p for p in range(costs.size) if costs[p] > 0), key=lambda p: (-costs[p], p))
    loads = [(0.0, r) for r in range(size)]
    plan: list[list[int]] = [[] for _ in range(size)]
    for p in order:
        load, r = heapq.heappop(loads)
        plan[r].append(p)
        heapq.heappush(loads, (load + costs[p], r))
    return plan
