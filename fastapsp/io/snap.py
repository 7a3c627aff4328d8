"""SNAP edge lists: ``from to [weight]`` per line, 0-based directed arcs, ``#`` comments.

:func:`_read_edge_list` also reads ``.cedge`` files (see :mod:`fastapsp.io.cedge`).
"""

from __future__ import annotations

import numpy as np

from ..errors import GraphFormatError
from ..graph import Graph
from ._common import (MAX_UNUSED_VERTICES, MAX_VERTICES, _bad_ids, _bad_weights, _check_unused, _id_problem,
                      _raise_first, _Source, _table, _tokenize, _weight_problem)


def _read_snap(source: _Source) -> Graph:
    return _read_edge_list(
        source, (2, 3), "2 ('from to') or 3 ('from to weight')", (0, 1), ("from id", "to id"),
        directed=not source.undirected,
    )


def _read_edge_list(
    source: _Source, allowed: tuple[int, ...], form: str, id_cols: tuple[int, int],
    id_names: tuple[str, str], *, directed: bool,
) -> Graph:
    """Read one edge per line: two 0-based ids in ``id_cols``, then maybe a weight."""
    head = source.header(b"#")
    if head is None:
        raise source.error(None, f"no edges, so no vertices; allowed: lines of {form} values")
    first_line, _, start, _ = head
    tokens = _tokenize(source, start, first_line, b"#")
    table = _table(tokens, allowed, form)
    entries, k = table.shape
    if entries == 0:
        raise source.error(None, f"no edges, so no vertices; allowed: lines of {form} values")
    weight_col = id_cols[1] + 1 if k > id_cols[1] + 1 else None

    def cell(row: int, col: int, problem) -> GraphFormatError:
        token = row * k + col
        return source.error(tokens.line_of(token), problem(tokens.text(token)))

    high = MAX_VERTICES - 1
    checks = []
    for col, what in zip(id_cols, id_names):
        ids = table[:, col]
        checks.append((_bad_ids(ids, 0, high), lambda i, col=col, what=what, ids=ids: cell(
            i, col, lambda t: _id_problem(f"{what} {t}", ids[i], 0, high))))
    if weight_col is not None:
        w = table[:, weight_col]
        checks.append((_bad_weights(w), lambda i: cell(
            i, weight_col, lambda t: _weight_problem(t, w[i]))))
    _raise_first(checks)
    src = table[:, id_cols[0]].astype(np.int64)
    dst = table[:, id_cols[1]].astype(np.int64)
    # Ids need not be contiguous: every id up to the largest is a vertex.
    n = int(max(src.max(), dst.max())) + 1
    if n > MAX_UNUSED_VERTICES:
        # One stray large id must not make a graph of billions of isolated vertices.
        col = 0 if src.max() >= dst.max() else 1
        row = int(np.argmax(src if col == 0 else dst))
        _check_unused(source, tokens.line_of(row * k + id_cols[col]), n, np.concatenate([src, dst]),
                      f"{id_names[col]} {n - 1} makes n")
    weights = table[:, weight_col].astype(np.float64) if weight_col is not None else None
    return Graph.from_edges(n, src, dst, weights, directed=directed, name=source.name)


