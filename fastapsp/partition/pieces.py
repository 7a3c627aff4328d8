"""A graph cut into pieces that are partitioned apart, one piece per rank.

Partitioning side by side needs a first cut that costs little next to the
partitioner and adds few boundary vertices.  :func:`cut_pieces` bisects
recursively by hops: a breadth-first search from a pseudo-peripheral vertex
orders the vertices into levels, and the cut falls between the two levels,
within ``slack`` of the wanted sizes, whose far side is smallest (the cut's
front: every vertex of that level becomes a boundary vertex, and at most as
many on the near side); the pockets that front cuts off (dead ends, bays:
parts of the far side that touch only the near side) then join the near side
while it stays within ``slack``.  Connected pieces of the graph that the search
does not reach follow it, each whole where the sizes allow, so a cut between
them costs nothing.  Each piece is then split into its share of the ``k``
components, within :func:`piece_imbalance`, so that the components of all
pieces together keep the balance asked of the whole graph.

Every function is NumPy/SciPy on the host: about two breadth-first searches
per bisection, which :func:`fastapsp.cost.pieces_seconds` weighs against the
partitioner's seconds.
"""

from __future__ import annotations

import numpy as np

__all__ = ["PIECES_FROM", "CUT_SLACK", "cut_pieces", "piece_imbalance", "piece_graph"]

# --parallel-partition auto considers pieces from this many vertices on (the cost model decides
# there): below it a partition takes about a second or less on one rank.
PIECES_FROM = 1 << 21
# How far from the wanted sizes a bisection may fall, as a fraction of the vertices it cuts: a
# piece that much larger takes its rank that much longer, a smaller front saves in every later stage.
CUT_SLACK = 0.05


def cut_pieces(indptr, indices, pieces: int, k: int, *, only: int | None = None,
               slack: float = CUT_SLACK) -> list[tuple[int, np.ndarray, int]]:
    """``(piece, vertices, components)`` of every piece of a symmetric CSR structure, or of piece ``only``.

    The pieces (``0 .. pieces - 1``) come from recursive bisection, the lower
    half of the pieces on the near side of the breadth-first search; each holds
    about ``n / pieces`` vertices (within ``slack`` of each bisection's share),
    ascending, and a share of the ``k`` components in proportion to its
    vertices, at least one.  With ``only`` the bisections on that piece's path
    alone are made (about two searches of the whole graph, however many pieces):
    every rank finds its own piece, the same as from the whole cut.

    Examples
    --------
    >>> import numpy as np
    >>> ptr = np.array([0, 1, 3, 5, 7, 9, 10])  # the path 0-1-2-3-4-5
    >>> ind = np.array([1, 0, 2, 1, 3, 2, 4, 3, 5, 4])
    >>> [(p, v.tolist(), c) for p, v, c in cut_pieces(ptr, ind, 2, 4)]
    [(0, [3, 4, 5], 2), (1, [0, 1, 2], 2)]
    """
    indptr = np.asarray(indptr, dtype=np.int64)
    indices = np.asarray(indices)
    n = indptr.size - 1
    if pieces < 1:
        raise ValueError(f"pieces: {pieces} is not a positive number")
    if k < pieces:
        raise ValueError(f"k: {k} components cannot be shared among {pieces} pieces")
    if only is not None and not 0 <= only < pieces:
        raise ValueError(f"only: piece {only} is outside 0..{pieces - 1}")
    made = []
    work = [(np.arange(n, dtype=np.int64), 0, pieces, k)]  # (vertices, first piece, pieces, components)
    while work:
        vertices, first, count, components = work.pop()
        if count == 1:
            made.append((first, vertices, components))
            continue
        near = count // 2
        sub_ptr, sub_ind = (indptr, indices) if vertices.size == n else piece_graph(indptr, indices, vertices)
        side = _bisect(sub_ptr, sub_ind, near / count, slack) if vertices.size else np.zeros(0, dtype=bool)
        near_k = int(round(components * int(side.sum()) / max(1, vertices.size)))
        near_k = min(max(near_k, near), components - (count - near))
        halves = [(vertices[side], first, near, near_k),
                  (vertices[~side], first + near, count - near, components - near_k)]
        work.extend(h for h in halves if only is None or h[1] <= only < h[1] + h[2])
    return sorted(made, key=lambda piece: piece[0])


def _bisect(indptr, indices, fraction: float, slack: float) -> np.ndarray:
    """Mask of the near side: about ``fraction`` of the vertices, cut between two levels of hops."""
    import scipy.sparse as sp
    from scipy.sparse.csgraph import breadth_first_order, connected_components

    n = indptr.size - 1
    adjacency = sp.csr_matrix((np.ones(indices.size, dtype=np.int8), indices, indptr), shape=(n, n))
    # The structure is symmetric: searched as directed, SciPy does not transpose it first.
    seen = breadth_first_order(adjacency, 0, directed=True, return_predecessors=False)
    count, component = 1, None
    if seen.size < n:  # start in the largest connected piece
        count, component = connected_components(adjacency, directed=True, connection="strong")
        start = int(np.argmax(component == np.argmax(np.bincount(component))))
        seen = breadth_first_order(adjacency, start, directed=True, return_predecessors=False)
    level = _hops(adjacency, int(seen[-1]))
    reached = int(level.max()) + 1
    if count > 1:  # the other connected pieces follow, one level each, in the order of their lowest vertex
        rest = level < 0
        others, first_seen = np.unique(component[rest], return_index=True)
        rank = np.empty(count, dtype=np.int64)
        rank[others[np.argsort(np.flatnonzero(rest)[first_seen], kind="stable")]] = np.arange(others.size)
        level[rest] = reached + rank[component[rest]]
    sizes = np.bincount(level)
    ends = np.cumsum(sizes)  # a cut after level h keeps ends[h] vertices on the near side
    front = np.zeros(sizes.size, dtype=np.int64)
    front[: reached - 1] = sizes[1:reached]  # beyond the searched piece a cut separates nothing joined
    target = fraction * n
    window = np.flatnonzero(np.abs(ends[:-1] - target) <= slack * n)
    if window.size:
        best = window[np.lexsort((np.abs(ends[window] - target), front[window]))[0]]
        near = level <= best
    else:  # no level ends near the share: the level that holds it is split by vertex id
        h = int(np.searchsorted(ends, target, side="right"))
        near = level < h
        inside = np.flatnonzero(level == h)
        near[inside[: int(round(target)) - (int(ends[h - 1]) if h else 0)]] = True
    deepest = int(np.argmax(np.where(level < reached, level, -1)))
    return _pockets_near(adjacency, near, target + slack * n, deepest)


def _pockets_near(adjacency, near, most: float, deepest: int) -> np.ndarray:
    """``near`` with the pockets of the far side moved to it while it keeps at most ``most`` vertices.

    Beyond a front of hops the far side falls apart into one large region (the
    one that holds ``deepest``, the vertex farthest from the search's start)
    and pockets (dead ends, bays) that touch only the near side: each pocket
    moved across takes its front off the boundary.  All of them where they
    fit, else the smallest first.
    """
    from scipy.sparse.csgraph import breadth_first_order, connected_components

    far = np.flatnonzero(~near)
    if far.size == 0:
        return near
    adjacency = adjacency[far][:, far]
    room = int(most) - int(near.sum())
    near = near.copy()
    if not near[deepest]:
        region = breadth_first_order(adjacency, int(np.searchsorted(far, deepest)), directed=True,
                                     return_predecessors=False)
        if region.size == far.size:
            return near
        if far.size - region.size <= room:
            pocket = np.ones(far.size, dtype=bool)
            pocket[region] = False
            near[far[pocket]] = True
            return near
    count, component = connected_components(adjacency, directed=True, connection="strong")
    if count == 1:
        return near
    sizes = np.bincount(component)
    pockets = np.argsort(sizes, kind="stable")[:-1]  # every far component but the largest
    taken = pockets[np.cumsum(sizes[pockets]) <= room]
    near[far[np.isin(component, taken)]] = True
    return near


# Levels found one search each (milliseconds for the thousands of levels of road networks and meshes);
# a graph with more levels (a long path) has its depths found by pointer jumping instead.
SEARCHED_LEVELS = 1 << 14


def _hops(adjacency, source: int) -> np.ndarray:
    """Hops from ``source`` of every vertex (int64), -1 where it is not reached."""
    from scipy.sparse.csgraph import breadth_first_order

    order, parent = breadth_first_order(adjacency, source, directed=True, return_predecessors=True)
    # Vertices come level by level, each after its parent: a level starts where the parents of the
    # vertices reach the previous level's start.  Positions of the parents never decrease.
    position = np.empty(adjacency.shape[0], dtype=np.int64)
    position[order] = np.arange(order.size)
    parents = position[parent[order[1:]]]
    level = np.full(adjacency.shape[0], -1, dtype=np.int64)
    starts = [0, 1]
    while starts[-1] < order.size and len(starts) <= SEARCHED_LEVELS:
        starts.append(1 + int(np.searchsorted(parents, starts[-1], side="left")))
    if starts[-1] < order.size:  # a long, thin graph: every position's depth in log2(levels) passes
        level[order] = _depths(parents)
    else:
        level[order] = np.repeat(np.arange(len(starts) - 1), np.diff(starts))
    return level


def _depths(parents: np.ndarray) -> np.ndarray:
    """Depth of every position of a breadth-first order, from ``parents`` (the parent's position of
    positions 1, 2, ...), by pointer jumping: each pass adds the depth up to the ancestor a position
    points at and points it twice as far up."""
    up = np.concatenate([[0], parents])
    depth = np.ones(up.size, dtype=np.int64)
    depth[0] = 0
    while up.size > 1 and np.any(up[1:]):
        depth += depth[up]
        up = up[up]
    return depth


def piece_graph(indptr, indices, vertices, *, positions: bool = False):
    """The symmetric CSR structure induced by ``vertices`` (ascending ids), renumbered 0 .. len - 1;
    with ``positions`` also where each of its arcs lies in ``indices`` (to take arc weights along)."""
    from ..graph import arc_positions

    indptr = np.asarray(indptr, dtype=np.int64)
    indices = np.asarray(indices)
    local = np.full(indptr.size - 1, -1, dtype=np.int64)
    local[vertices] = np.arange(vertices.size)
    source, counts = arc_positions(indptr, vertices)
    heads = local[indices[source]]
    keep = heads >= 0  # arcs to vertices of other pieces go
    rows = np.repeat(np.arange(vertices.size, dtype=np.int64), counts)[keep]
    sub_ptr = np.zeros(vertices.size + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=vertices.size), out=sub_ptr[1:])
    sub_ind = heads[keep].astype(indices.dtype, copy=False)
    return (sub_ptr, sub_ind, source[keep]) if positions else (sub_ptr, sub_ind)


def piece_imbalance(n: int, k: int, imbalance: float, size: int, share: int) -> float:
    """The imbalance a piece of ``size`` vertices in ``share`` components may have: its components
    stay within the bound of ``k`` components of ``n`` vertices (``(1 + imbalance) * n / k``)."""
    if size == 0:
        return imbalance
    return max(0.0, (1 + imbalance) * n / k * share / size - 1)
