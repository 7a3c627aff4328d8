"""DIMACS shortest-path files (9th DIMACS Implementation Challenge, ``USA-road-*.gr``).

Lines are ``c ...`` comments, one problem line ``p sp n m``, then ``m`` arc
lines ``a u v w``: a directed arc ``u -> v`` of integer weight ``w >= 0``,
1-based ids.
"""

from __future__ import annotations

import numpy as np

from ..errors import GraphFormatError
from ..graph import Graph
from ._common import (_bad_ids, _bad_weights, _check_n, _check_unused, _id_problem, _not_whole, _raise_first,
                      _short, _Source, _table, _token_starts, _tokenize, _weight_problem)

_PROBLEM_FORM = "'p sp n m' (n vertices, m arcs, whole numbers)"
_ARC_FORM = "'a u v w' (arc u -> v of weight w)"


def _read_dimacs(source: _Source) -> Graph:
    head = source.header(b"c")
    if head is None:
        raise source.error(None, f"no problem line; allowed: {_PROBLEM_FORM} before the arcs")
    p_line, text, _, body_offset = head
    words = text.split()
    if not words or words[0] != b"p":
        raise source.error(p_line, f"found {_short(text)!r} before the problem line; allowed: "
                                   f"'c' comments, then {_PROBLEM_FORM}")
    if len(words) >= 2 and words[1] != b"sp":
        raise source.error(p_line, f"problem type {_short(words[1])!r} is not supported; allowed: sp "
                                   f"(a shortest-path graph, {_PROBLEM_FORM})")
    if len(words) != 4 or not (words[2].isdigit() and words[3].isdigit()):
        raise source.error(p_line, f"problem line {_short(text)!r} is not {_PROBLEM_FORM}")
    n, m = int(words[2]), int(words[3])
    _check_n(source, p_line, n, "n")

    body = _blank_arc_letters(source, body_offset, p_line + 1)
    arcs = _Source(source.where, body, source.name, source.undirected)
    tokens = _tokenize(arcs, 0, p_line + 1, b"c")
    table = _table(tokens, (3,), f"{_ARC_FORM}, 3 numbers after the 'a'")
    entries = table.shape[0]

    def cell(row: int, col: int, problem) -> GraphFormatError:
        token = row * 3 + col
        return source.error(tokens.line_of(token), problem(tokens.text(token)))

    checks = []
    if entries > m:
        extra = np.zeros(entries, dtype=bool)
        extra[m] = True
        checks.append((extra, lambda i: cell(i, 0, lambda _: (
            f"the problem line (line {p_line}) declares m = {m} arcs but the file has {entries}; "
            f"this is the first extra one"))))
    for col, what in ((0, "tail u"), (1, "head v")):
        ids = table[:, col]
        checks.append((_bad_ids(ids, 1, n), lambda i, col=col, what=what, ids=ids: cell(
            i, col, lambda t: _id_problem(f"{what} {t}", ids[i], 1, n))))
    w = table[:, 2]
    checks.append((_bad_weights(w), lambda i: cell(i, 2, lambda t: _weight_problem(t, w[i]))))
    checks.append((_not_whole(w), lambda i: cell(i, 2, lambda t: (
        f"weight {t} is not a whole number; allowed: whole numbers >= 0 (DIMACS arc lengths are integers)"))))
    _raise_first(checks)
    if entries < m:
        raise source.error(None, f"the problem line (line {p_line}) declares m = {m} arcs but the file has "
                                 f"{entries}")
    src = table[:, 0].astype(np.int64) - 1
    dst = table[:, 1].astype(np.int64) - 1
    _check_unused(source, p_line, n, (src, dst), "the problem line declares n")
    return Graph.from_edges(n, src, dst, w.astype(np.float64), directed=not source.undirected,
                            name=source.name)


def _blank_arc_letters(source: _Source, offset: int, first_line: int) -> bytes:
    """The body after the problem line with the ``a`` opening every arc line made a blank.

    Every non-blank line must open with the token ``a`` (an arc) or a token
    starting with ``c`` (a comment, blanked later by the tokenizer); anything
    else is an error naming its line.
    """
    body = bytearray(source.data[offset:])
    octets = np.frombuffer(body, dtype=np.uint8)
    starts = _token_starts(bytes(body)) if len(body) else np.zeros(0, dtype=np.int64)
    if starts.size == 0:
        return bytes(body)
    newlines = np.flatnonzero(octets == 10)
    line_of = np.searchsorted(newlines, starts)
    opens = np.ones(starts.size, dtype=bool)
    opens[1:] = line_of[1:] != line_of[:-1]
    heads = starts[opens]
    after = np.minimum(heads + 1, octets.size - 1)
    alone = (heads + 1 == octets.size) | (octets[after] <= 32)
    arc = (octets[heads] == ord("a")) & alone
    comment = octets[heads] == ord("c")
    bad = ~(arc | comment)
    if bad.any():
        at = int(heads[bad.argmax()])
        line = first_line + int(line_of[opens][bad.argmax()])
        token = bytes(body[at:]).split(None, 1)[0]
        what = "a second problem line" if token == b"p" else f"a line opening with {_short(token)!r}"
        raise source.error(line, f"{what}; allowed after the problem line: {_ARC_FORM} or 'c' comments")
    octets[heads[arc]] = 32
    return bytes(body)
