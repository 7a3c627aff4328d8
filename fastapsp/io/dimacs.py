"""DIMACS shortest-path files (9th DIMACS Implementation Challenge, ``USA-road-*.gr``).

Lines are ``c ...`` comments, one problem line ``p sp n m``, then ``m`` arc
lines ``a u v w``: a directed arc ``u -> v`` of integer weight ``w >= 0``,
1-based ids.
"""

from __future__ import annotations

import numpy as np

from ..graph import Graph
from ._common import (_check_n, _graph_from_arcs, _header_words, _short, _Source, _table, _token_starts,
                      _tokenize_share)
from .share import Whole

_PROBLEM_FORM = "'p sp n m' (n vertices, m arcs, whole numbers)"
_ARC_FORM = "'a u v w' (arc u -> v of weight w)"


def _read_dimacs(source: _Source, share=None) -> Graph:
    share = Whole() if share is None else share
    p_line, text, words, body_offset = _header_words(
        source, b"c", f"no problem line; allowed: {_PROBLEM_FORM} before the arcs")
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
    tokens, first = _tokenize_share(arcs, 0, p_line + 1, b"c", share)
    table = _table(tokens, (3,), f"{_ARC_FORM}, 3 numbers after the 'a'", first)
    return _graph_from_arcs(source, tokens, table, n=n, declared=m, head="the problem line", head_line=p_line,
                            declares=f"m = {m} arcs", id_names=("tail u", "head v"),
                            whole=": whole numbers >= 0 (DIMACS arc lengths are integers)",
                            directed=not source.undirected, share=share)


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
