"""METIS ``.graph`` files: a header ``n m [fmt [ncon]]`` and one neighbour line per vertex."""

from __future__ import annotations

import numpy as np

from ..errors import GraphFormatError
from ..graph import Graph
from ._common import (_bad_ids, _bad_weights, _check_n, _header_words, _id_problem, _raise_first, _short, _Source,
                      _tokenize, _values, _weight_problem)


def _read_metis(source: _Source) -> Graph:
    form = "'n m [fmt [ncon]]' (whole numbers)"
    header_line, text, words, body_offset = _header_words(source, b"%", f"no header line; allowed: {form}")
    if not 2 <= len(words) <= 4 or not all(word.isdigit() for word in words):
        raise source.error(header_line, f"header {_short(text)!r} is not {form}")
    n, m = int(words[0]), int(words[1])
    fmt = words[2].decode() if len(words) > 2 else "0"
    if len(fmt) > 3 or set(fmt) - {"0", "1"}:
        raise source.error(
            header_line,
            f"fmt {fmt!r} is not known; allowed: up to three digits 0 or 1 "
            f"(1 edge weights, 10 vertex weights, 100 vertex sizes, or a sum such as 11)",
        )
    has_sizes, has_vertex_weights, has_edge_weights = (digit == "1" for digit in fmt.zfill(3))
    ncon = int(words[3]) if len(words) > 3 else 1
    if ncon < 1:
        raise source.error(header_line, f"ncon is {ncon}; allowed: at least 1")
    _check_n(source, header_line, n, "n")
    # Vertex sizes and weights come first on each vertex line; they are dropped.
    lead = int(has_sizes) + (ncon if has_vertex_weights else 0)

    tokens = _tokenize(source, body_offset, header_line + 1, b"%")
    counts = tokens.counts
    is_vertex_line = np.ones(counts.size, dtype=bool)
    is_vertex_line[tokens.comment_lines] = False
    vertex_lines = np.flatnonzero(is_vertex_line)
    if vertex_lines.size > n:
        extra = vertex_lines[n:][counts[vertex_lines[n:]] > 0]
        if extra.size:
            raise source.error(
                tokens.first_line + int(extra[0]),
                f"a vertex line beyond the n = {n} vertices the header (line {header_line}) "
                f"declares; allowed: {n} vertex lines, then only blank lines",
            )
    if vertex_lines.size < n:
        raise source.error(
            None,
            f"the header (line {header_line}) declares n = {n} vertices but {vertex_lines.size} "
            f"vertex lines follow; allowed: one line per vertex (empty for an isolated vertex)",
        )
    vertex_lines = vertex_lines[:n]
    per_vertex = counts[vertex_lines]

    def vertex_error(v: int, problem: str) -> GraphFormatError:
        return source.error(tokens.first_line + int(vertex_lines[v]), problem)

    if lead and np.any(per_vertex < lead):
        v = int(np.argmax(per_vertex < lead))
        raise vertex_error(v, (
            f"vertex {v + 1} has {_values(int(per_vertex[v]))}; allowed: at least {lead}, "
            f"as fmt {fmt} starts every vertex line with vertex sizes or weights"))
    rest = per_vertex - lead
    if has_edge_weights and np.any(rest % 2):
        v = int(np.argmax(rest % 2))
        after = " after its vertex sizes or weights" if lead else ""
        raise vertex_error(v, (
            f"vertex {v + 1} has {_values(int(rest[v]))}{after}; allowed: pairs "
            f"'neighbour weight', as fmt {fmt} has edge weights"))

    owner = np.repeat(np.arange(n, dtype=np.int64), per_vertex)
    first = np.cumsum(per_vertex) - per_vertex
    place = np.arange(owner.size, dtype=np.int64) - np.repeat(first, per_vertex) - lead
    step = 2 if has_edge_weights else 1
    neighbour_tokens = np.flatnonzero((place >= 0) & (place % step == 0))
    neighbours = tokens.values[neighbour_tokens]

    def token_error(i: int, problem) -> GraphFormatError:
        return source.error(tokens.line_of(i), problem(tokens.text(i)))

    checks = [(_bad_ids(neighbours, 1, n), lambda i: token_error(
        neighbour_tokens[i], lambda t: _id_problem(
            f"neighbour {t} of vertex {owner[neighbour_tokens[i]] + 1}", neighbours[i], 1, n)))]
    weights = None
    if has_edge_weights:
        weights = tokens.values[neighbour_tokens + 1]
        checks.append((_bad_weights(weights), lambda i: token_error(
            neighbour_tokens[i] + 1, lambda t: _weight_problem(t, weights[i]))))
    _raise_first(checks)
    if neighbours.size != 2 * m:
        raise source.error(
            None,
            f"the header (line {header_line}) declares m = {m} edges, so {2 * m} neighbour "
            f"entries, but the vertex lines hold {neighbours.size}; allowed: every edge "
            f"listed under both of its ends",
        )
    if weights is not None:
        weights = weights.astype(np.float64)
    tails, heads = owner[neighbour_tokens], neighbours.astype(np.int64) - 1
    lone = _first_unmatched(tails, heads, weights, n)
    if lone is not None:
        u, v = int(tails[lone]) + 1, int(heads[lone]) + 1
        weight = "" if weights is None else f" with weight {tokens.text(int(neighbour_tokens[lone]) + 1)}"
        raise source.error(tokens.line_of(int(neighbour_tokens[lone])), (
            f"vertex {u} lists neighbour {v}{weight}, but vertex {v} does not list {u}"
            f"{' with that weight' if weights is not None else ''} as often; allowed: every edge listed "
            "under both of its ends, with the same weight"))
    return Graph.from_edges(n, tails, heads, weights, directed=False, name=source.name)


def _first_unmatched(tails: np.ndarray, heads: np.ndarray, weights, n: int):
    """Position (in file order) of the first entry ``u: v (w)`` without its twin ``v: u (w)``, or None.

    METIS lists every undirected edge under both ends; lists that disagree (an edge under one end
    only, or with two weights) describe no graph, and symmetrising them would change the input.
    """
    if tails.size == 0:
        return None
    if weights is None:
        kind = np.zeros(tails.size, dtype=np.int64)
    else:
        _, kind = np.unique(weights, return_inverse=True)
    forward = np.lexsort((kind, heads, tails))  # entries ordered by (u, v, w)
    backward = np.lexsort((kind, tails, heads))  # twins ordered by (v, u, w): equal if every entry has one
    a = (tails[forward], heads[forward], kind[forward])
    b = (heads[backward], tails[backward], kind[backward])
    differ = (a[0] != b[0]) | (a[1] != b[1]) | (a[2] != b[2])
    if not differ.any():
        return None
    # Some entry has no twin: count every (u, v, w) and its reverse, and name the first entry in file order
    # whose count and its twin's differ.
    size = tails.size
    rows = np.concatenate([np.stack([tails, heads, kind], axis=1), np.stack([heads, tails, kind], axis=1)])
    _, ids = np.unique(rows, axis=0, return_inverse=True)
    ids = ids.reshape(-1)
    count = np.bincount(ids[:size], minlength=int(ids.max()) + 1)
    return int(np.argmax(count[ids[:size]] != count[ids[size:]]))


