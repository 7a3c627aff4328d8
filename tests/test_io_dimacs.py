"""The DIMACS shortest-path reader (``.gr``, 9th DIMACS Challenge road networks)."""

from __future__ import annotations

import gzip
import tracemalloc

import numpy as np
import pytest

from fastapsp.errors import GraphFormatError
from fastapsp.io import MAX_UNUSED_VERTICES, detect_format, read_graph

GR = """c 9th DIMACS Implementation Challenge: Shortest Paths
c graph with 4 nodes and 6 arcs
p sp 4 6
c arcs follow
a 1 2 803
a 2 1 803
a 2 3 158\r
a 3 3 5

a 1 2 900
a 4 1 0
"""


def write(tmp_path, name, text, *, gz=False):
    data = text.encode() if isinstance(text, str) else text
    path = tmp_path / name
    path.write_bytes(gzip.compress(data) if gz else data)
    return path


def arcs(graph):
    src, dst, w = graph.arcs()
    return list(zip(src.tolist(), dst.tolist(), w.tolist()))


@pytest.mark.parametrize("gz", [False, True])
def test_dimacs_arcs(tmp_path, gz):
    path = write(tmp_path, "USA-road-d.TEST.gr.gz" if gz else "USA-road-d.TEST.gr", GR, gz=gz)
    assert detect_format(path) == "dimacs"
    g = read_graph(path)
    assert g.n == 4 and g.directed and g.name == path.name
    # The self loop goes, of the two arcs 1 -> 2 the lighter stays, the zero weight stays, CRLF is fine.
    assert arcs(g) == [(0, 1, 803.0), (1, 0, 803.0), (1, 2, 158.0), (3, 0, 0.0)]


def test_dimacs_by_format_name_and_undirected(tmp_path):
    path = write(tmp_path, "road.txt", GR)
    g = read_graph(path, format="dimacs", undirected=True)
    assert not g.directed
    assert (2, 1, 158.0) in arcs(g) and (0, 3, 0.0) in arcs(g)


def test_dimacs_large_ids_and_weights_exact(tmp_path):
    # Weights beyond 2**24 must survive reading exactly (float64 holds them).
    path = write(tmp_path, "big.gr", "p sp 3 2\na 1 3 16777217\na 3 2 4294967296\n")
    assert arcs(read_graph(path)) == [(0, 2, 16777217.0), (2, 1, 4294967296.0)]


DIMACS_ERRORS = {
    "no problem line": ("c only\nc comments\n", None, "no problem line"),
    "arc before problem": ("a 1 2 3\np sp 2 1\n", 1, "before the problem line"),
    "not sp": ("p max 2 1\na 1 2 3\n", 1, "problem type 'max'"),
    "short problem": ("p sp 2\na 1 2 3\n", 1, "is not 'p sp n m'"),
    "negative n": ("p sp -2 1\na 1 2 3\n", 1, "is not 'p sp n m'"),
    "n zero": ("p sp 0 0\n", 1, "no vertices"),
    "second problem": ("p sp 2 1\np sp 2 1\na 1 2 3\n", 2, "second problem line"),
    "odd line": ("p sp 2 1\ne 1 2 3\n", 2, "opening with 'e'"),
    "letter glued": ("p sp 2 1\na1 2 3\n", 2, "opening with 'a1'"),
    "missing weight": ("p sp 2 1\na 1 2\n", 2, "found 2 values"),
    "extra field": ("p sp 2 1\na 1 2 3 4\n", 2, "found 4 values"),
    "id zero": ("p sp 2 1\na 0 2 3\n", 2, "tail u 0 is outside 1..2"),
    "id too big": ("p sp 2 1\na 1 3 3\n", 2, "head v 3 is outside 1..2"),
    "negative weight": ("p sp 2 1\na 1 2 -3\n", 2, "negative"),
    "real weight": ("p sp 2 1\na 1 2 2.5\n", 2, "not a whole number"),
    "nan weight": ("p sp 2 1\na 1 2 nan\n", 2, "not finite"),
    "bad number": ("p sp 2 1\na 1 2 x7\n", 2, "cannot read 'x7'"),
    "glued number": ("p sp 2 1\na 1 2a3 4\n", 2, "cannot read '2a3'"),
    "too many arcs": ("p sp 2 1\na 1 2 3\na 2 1 3\n", 3, "first extra one"),
    "too few arcs": ("p sp 2 3\na 1 2 3\n", None, "declares m = 3 arcs but the file has 1"),
    "overflowing weight": ("p sp 2 1\na 1 2 -99999999999999999999\n", 2, "negative"),
}


@pytest.mark.parametrize("name", sorted(DIMACS_ERRORS))
def test_dimacs_errors_name_file_and_line(tmp_path, name):
    text, line, words = DIMACS_ERRORS[name]
    path = write(tmp_path, "bad.gr", text)
    with pytest.raises(GraphFormatError) as info:
        read_graph(path)
    message = str(info.value)
    prefix = f"{path} line {line}:" if line else f"{path}:"
    assert message.startswith(prefix), message
    assert words in message, message


def test_dimacs_huge_declared_n_fails_at_once(tmp_path):
    path = write(tmp_path, "huge.gr", "c declared 2e9 vertices, one arc\np sp 2000000000 1\na 1 2 3\n")
    tracemalloc.start()
    try:
        with pytest.raises(GraphFormatError, match=r"huge.gr line 2: .*2000000000 vertices.*at most 2 distinct"):
            read_graph(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 2**20  # nothing was sized from the declared n (8 bytes each would be 16 GB)


def test_dimacs_unused_vertices_allowed_up_to_the_limit(tmp_path):
    path = write(tmp_path, "tail.gr", f"p sp {MAX_UNUSED_VERTICES + 2} 1\na 1 2 3\n")
    g = read_graph(path)
    assert g.n == MAX_UNUSED_VERTICES + 2 and g.m == 1
    assert np.count_nonzero(g.degrees()) == 1
