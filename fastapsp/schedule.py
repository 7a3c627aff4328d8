"""Which rank computes which components: a balanced, largest-first schedule, or
balanced runs of a given order (components that share work kept together)."""

from __future__ import annotations

import heapq

import numpy as np

__all__ = ["component_costs", "schedule_components", "schedule_in_order"]


def component_costs(partition, n: int, m: int, *, whole_rows: bool = True) -> np.ndarray:
    """Estimated work of every component, from its size c and boundary count b.

    Boundary SSSP ~ b * m, Floyd-Warshall ~ c^3, min-plus ~ (c - b) * b * n and
    the row block itself ~ c * n, or c * c for a component without boundary
    when nothing needs whole rows (its own columns only, see
    :attr:`fastapsp.planning.Plan.whole_rows`).  Only the ranking matters, not the unit.
    """
    c = partition.sizes.astype(np.float64)
    b = partition.boundary_per_part.astype(np.float64)
    columns = np.full(c.shape, float(n)) if whole_rows else np.where(b > 0, float(n), c)
    return b * m + c**3 + (c - b) * b * n + c * columns


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


def schedule_in_order(costs, order, size: int) -> list[list[int]]:
    """Components of each rank: ``order`` cut into ``size`` consecutive runs of about equal cost.

    For work shared by neighbours in ``order`` (the boundary-graph method: the
    components of one super-group share its upper rows, see
    :meth:`fastapsp.stages.boundary_graph.LevelTree.order`): each rank gets whole
    runs of them, and shared work is repeated only where two ranks' runs meet.
    A component goes to the rank whose share of the total cost holds the middle
    of its own cost, so no rank gets more than its share plus one component.
    Deterministic; empty components (cost 0) are left out.
    """
    costs = np.asarray(costs, dtype=np.float64)
    order = np.asarray(order, dtype=np.int64)
    if sorted(order.tolist()) != list(range(costs.size)):
        raise ValueError(f"order: expected each of the {costs.size} components once, got {order.size} entries")
    items = order[costs[order] > 0]
    plan: list[list[int]] = [[] for _ in range(size)]
    if items.size == 0:
        return plan
    end = np.cumsum(costs[items])
    middle = end - costs[items] / 2
    rank = np.minimum((middle * size / end[-1]).astype(np.int64), size - 1)
    for r in range(size):
        plan[r] = items[rank == r].tolist()
    return plan
