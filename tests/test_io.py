"""Tests of fastapsp.io: every format on hand-made files, every error, the real files."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest

from fastapsp.errors import GraphFormatError
from fastapsp.graph import Graph
from fastapsp.io import FORMATS, detect_format, read_graph

SHIPPED = Path(__file__).resolve().parent / "data"
SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"


def write(tmp_path: Path, name: str, content: str | bytes, *, gz: bool = False) -> Path:
    """Write ``content`` to ``tmp_path / name``, gzip-compressed when ``gz``."""
    data = content.encode() if isinstance(content, str) else content
    path = tmp_path / name
    path.write_bytes(gzip.compress(data) if gz else data)
    return path


def arcs(graph: Graph) -> list[tuple[int, int, float]]:
    src, dst, w = graph.arcs()
    return list(zip(src.tolist(), dst.tolist(), w.tolist()))


def both_ways(edges):
    """The arcs of undirected edges ``(u, v, w)``, sorted as the CSR stores them."""
    return sorted([(u, v, w) for u, v, w in edges] + [(v, u, w) for u, v, w in edges])


def undirected_pairs(graph: Graph) -> int:
    """Distinct unordered pairs {u, v}, u != v, joined by an arc either way."""
    return graph.undirected_adjacency()[1].size // 2


# ------------------------------------------------------------- Matrix Market
MTX_GENERAL = """%%MatrixMarket matrix coordinate real general
% a comment
%
4 4 7

1 2 3.5
% comments may come anywhere
2 1 0
3 3 9
1 2 2.25
1 2 8
4 1 1e-3
2 3 7
"""


@pytest.mark.parametrize("gz", [False, True])
def test_mtx_real_general(tmp_path, gz):
    path = write(tmp_path, "g.mtx.gz" if gz else "g.mtx", MTX_GENERAL, gz=gz)
    g = read_graph(path)
    assert g.n == 4 and g.directed and g.name == path.name
    # (3, 3) is a self loop, of the three arcs 1 -> 2 the lightest stays, the zero weight stays.
    assert arcs(g) == [(0, 1, 2.25), (1, 0, 0.0), (1, 2, 7.0), (3, 0, 0.001)]


def test_mtx_general_undirected_option(tmp_path):
    g = read_graph(write(tmp_path, "g.mtx", MTX_GENERAL), undirected=True)
    assert not g.directed
    assert arcs(g) == both_ways([(0, 1, 0.0), (1, 2, 7.0), (3, 0, 0.001)])


def test_mtx_pattern_symmetric_both_triangles(tmp_path):
    text = "%%MatrixMarket matrix coordinate pattern symmetric\n5 5 4\n2 1\n1 3\n3 1\n4 4\n"
    g = read_graph(write(tmp_path, "p.mtx", text))
    assert g.n == 5 and not g.directed
    assert arcs(g) == both_ways([(0, 1, 1.0), (0, 2, 1.0)])
    assert g.degrees().tolist() == [2, 1, 1, 0, 0]


def test_mtx_integer_symmetric_crlf_and_case(tmp_path):
    text = "%%matrixmarket MATRIX Coordinate INTEGER Symmetric\r\n3 3 2\r\n2 1 4\r\n3 2 0\r\n"
    g = read_graph(write(tmp_path, "i.mm", text))
    assert not g.directed
    assert arcs(g) == both_ways([(0, 1, 4.0), (1, 2, 0.0)])


def test_mtx_without_newline_at_end(tmp_path):
    text = "%%MatrixMarket matrix coordinate real general\n2 2 1\n1 2 0.5"
    assert arcs(read_graph(write(tmp_path, "e.mtx", text))) == [(0, 1, 0.5)]


def test_format_argument_overrides_extension(tmp_path):
    path = write(tmp_path, "graph.dat", "0 1\n1 2\n")
    g = read_graph(path, format="snap")
    assert g.n == 3 and g.directed and arcs(g) == [(0, 1, 1.0), (1, 2, 1.0)]


# ------------------------------------------------------------------ fastapsp
@pytest.mark.parametrize("gz", [False, True])
def test_fastapsp_banner_less_mtx(tmp_path, gz):
    name = "f.fastapsp.mtx.gz" if gz else "f.fastapsp.mtx"
    path = write(tmp_path, name, "4 4 3\n2 1\n3 2\n4 1\n", gz=gz)
    assert detect_format(path) == "fastapsp"
    g = read_graph(path)
    assert g.n == 4 and not g.directed
    assert arcs(g) == both_ways([(0, 1, 1.0), (1, 2, 1.0), (0, 3, 1.0)])


def test_fastapsp_with_weights(tmp_path):
    path = write(tmp_path, "w.mtx", "3 3 4\n2 1 5\n1 2 0.5\n3 2 0\n3 3 1\n")
    g = read_graph(path)
    assert not g.directed
    assert arcs(g) == both_ways([(0, 1, 0.5), (1, 2, 0.0)])


# --------------------------------------------------------------------- METIS
@pytest.mark.parametrize("gz", [False, True])
def test_metis_unweighted(tmp_path, gz):
    # Irregular whitespace, a comment line; vertex 4 is isolated: its line, the
    # last one, is blank and has no newline after it.
    text = "% made by hand\n4  2 \n 2\t3 \n1\n% not a vertex line\n1 \n   "
    path = write(tmp_path, "u.graph.gz" if gz else "u.graph", text, gz=gz)
    g = read_graph(path)
    assert g.n == 4 and not g.directed
    assert arcs(g) == both_ways([(0, 1, 1.0), (0, 2, 1.0)])
    assert g.degrees().tolist() == [2, 1, 1, 0]


def test_metis_extra_blank_line_at_end(tmp_path):
    g = read_graph(write(tmp_path, "b.graph", "3 1 0\n2\n1\n\n\n"))
    assert g.n == 3 and g.num_edges == 1


def test_metis_edge_weights(tmp_path):
    text = "3 2 1\n2 4.5 3 0\n1 4.5\n1 0\n"
    g = read_graph(write(tmp_path, "w.metis", text))
    assert arcs(g) == both_ways([(0, 1, 4.5), (0, 2, 0.0)])


def test_metis_edge_with_two_weights_is_refused(tmp_path):
    """An edge listed with weight 7 under one end and 3 under the other describes no graph."""
    with pytest.raises(GraphFormatError, match="line 2: vertex 1 lists neighbour 2 with weight 7"):
        read_graph(write(tmp_path, "w.graph", "2 1 001\n2 7\n1 3\n"))


@pytest.mark.parametrize("text, line", [
    ("3 2\n2\n3\n2 1\n", 2),  # 1: 2 has no twin 2: 1 (the counts add up to 2 m)
    ("3 2\n2 3\n\n1 1\n", 2),  # 1: 2 under one end only, 3: 1 twice
    ("3 2\n2 2\n1\n1\n", 2),  # listed twice under vertex 1, once under vertex 2
])
def test_metis_lists_that_disagree_are_refused(tmp_path, text, line):
    with pytest.raises(GraphFormatError, match=f"line {line}: vertex"):
        read_graph(write(tmp_path, "a.graph", text))


def test_metis_lists_that_agree_still_read(tmp_path):
    g = read_graph(write(tmp_path, "ok.graph", "3 2 1\n2 5\n1 5 3 7\n2 7\n"))
    assert arcs(g) == both_ways([(0, 1, 5.0), (1, 2, 7.0)])


@pytest.mark.parametrize(
    "header, lines, w",
    [
        ("3 2 10", ["5 2 3", "1 1", "8 1"], 1.0),  # one vertex weight
        ("3 2 11", ["5 2 1 3 2", "1 1 1", "8 1 2"], 2.0),  # vertex and edge weights
        ("3 2 10 2", ["5 6 2 3", "1 1 1", "8 8 1"], 1.0),  # two vertex weights (ncon 2)
        ("3 2 100", ["9 2 3", "9 1", "9 1"], 1.0),  # vertex sizes
        ("3 2 111 2", ["9 5 6 2 1 3 2", "9 1 1 1 1", "9 8 8 1 2"], 2.0),
    ],
)
def test_metis_vertex_data_dropped(tmp_path, header, lines, w):
    g = read_graph(write(tmp_path, "v.graph", "\n".join([header, *lines]) + "\n"))
    assert arcs(g) == both_ways([(0, 1, 1.0), (0, 2, w)])


# ---------------------------------------------------------------------- SNAP
@pytest.mark.parametrize("gz", [False, True])
def test_snap_directed_noncontiguous_crlf(tmp_path, gz):
    text = "# Directed graph\r\n# FromNodeId\tToNodeId\r\n3\t7\r\n7 3\r\n# late\r\n3\t7\r\n0\t0\r\n"
    path = write(tmp_path, "s.txt.gz" if gz else "s.txt", text, gz=gz)
    g = read_graph(path)
    assert g.n == 8 and g.directed  # n = largest id + 1; ids 1, 2, 4, 5, 6 are isolated
    assert arcs(g) == [(3, 7, 1.0), (7, 3, 1.0)]


def test_snap_weights_and_undirected_option(tmp_path):
    path = write(tmp_path, "w.edges", "0 1 2.5\n1 0 1.5\n1 2 0\n0 1 9\n")
    g = read_graph(path)
    assert g.directed and arcs(g) == [(0, 1, 2.5), (1, 0, 1.5), (1, 2, 0.0)]
    g = read_graph(path, undirected=True)
    assert not g.directed and arcs(g) == both_ways([(0, 1, 1.5), (1, 2, 0.0)])


# --------------------------------------------------------------------- cedge
@pytest.mark.parametrize("gz", [False, True])
def test_cedge(tmp_path, gz):
    text = "0 0 1 0.002025\n1 0 2 0.5\n2 2 0 0.25\n3 1 1 7\n4 3 1 0\n"
    g = read_graph(write(tmp_path, "c.cedge.gz" if gz else "c.cedge", text, gz=gz))
    assert g.n == 4 and not g.directed
    assert arcs(g) == both_ways([(0, 1, 0.002025), (0, 2, 0.25), (1, 3, 0.0)])


# ------------------------------------------------------- detection and gzip
@pytest.mark.parametrize(
    "name, fmt",
    [("a.mtx", "mtx"), ("a.MTX.gz", "mtx"), ("a.mm", "mtx"), ("a.graph", "metis"),
     ("a.metis.gz", "metis"), ("a.txt", "snap"), ("a.edges", "snap"), ("a.el", "snap"),
     ("a.snap", "snap"), ("a.cedge", "cedge")],
)
def test_detect_format(tmp_path, name, fmt):
    banner = "%%MatrixMarket matrix coordinate pattern general\n1 1 0\n"
    path = write(tmp_path, name, banner, gz=name.endswith(".gz"))
    assert detect_format(path) == fmt
    assert fmt in FORMATS


def test_gzip_found_by_magic_bytes(tmp_path):
    text = "%%MatrixMarket matrix coordinate pattern general\n2 2 1\n1 2\n"
    assert read_graph(write(tmp_path, "hidden.mtx", text, gz=True)).m == 1
    assert detect_format(tmp_path / "hidden.mtx") == "mtx"
    assert read_graph(write(tmp_path, "plain.mtx.gz", text)).m == 1


def test_unknown_extension(tmp_path):
    path = write(tmp_path, "graph.xyz", "0 1\n")
    with pytest.raises(GraphFormatError, match=r"graph\.xyz.*'\.xyz'.*--format") as info:
        read_graph(path)
    assert ".mtx" in str(info.value) and "snap" in str(info.value)
    with pytest.raises(GraphFormatError, match="graph.xyz"):
        detect_format(path)


def test_unknown_format_name(tmp_path):
    path = write(tmp_path, "g.txt", "0 1\n")
    with pytest.raises(ValueError, match="'edgelist'.*mtx, fastapsp, metis, snap, cedge"):
        read_graph(path, format="edgelist")


# -------------------------------------------------------------------- errors
BANNER_RG = "%%MatrixMarket matrix coordinate real general\n"
BANNER_PS = "%%MatrixMarket matrix coordinate pattern symmetric\n"

ERRORS = [
    # (file name, content, line or None, words the message must hold)
    ("e.mm", "3 3 1\n1 2\n", 1, ["missing '%%MatrixMarket' banner"]),
    ("e.mtx", "%%MatrixMarket matrix coordinate pattern\n1 1 0\n", 1, ["garbled banner"]),
    ("e.mtx", "%%MatrixMarketmatrix coordinate real general\n1 1 0\n", 1, ["garbled banner"]),
    ("e.mtx", "%%MatrixMarket matrix array real general\n2 2\n1\n2\n3\n4\n", 1,
     ["'array'", "coordinate"]),
    ("e.mtx", "%%MatrixMarket matrix coordinate complex general\n1 1 0\n", 1,
     ["'complex'", "pattern, integer, real"]),
    ("e.mtx", "%%MatrixMarket matrix coordinate real skew-symmetric\n1 1 0\n", 1,
     ["'skew-symmetric'", "general, symmetric"]),
    ("e.mtx", "%%MatrixMarket matrix coordinate complex hermitian\n1 1 0\n", 1, ["'complex'"]),
    ("e.mtx", "%%MatrixMarket matrix coordinate real hermitian\n1 1 0\n", 1, ["'hermitian'"]),
    ("e.mtx", BANNER_PS + "% c\n3 4 1\n1 2\n", 3, ["3 x 4", "square"]),
    ("e.mtx", BANNER_PS + "3 3\n1 2\n", 2, ["size line '3 3'", "rows columns entries"]),
    ("e.mtx", BANNER_PS + "3 3 x\n1 2\n", 2, ["size line"]),
    ("e.mtx", BANNER_PS + "3 3 -1\n", 2, ["size line"]),
    ("e.mtx", BANNER_PS + "% only comments\n", None, ["no size line"]),
    ("e.mtx", BANNER_PS + "0 0 0\n", 2, ["no vertices"]),
    ("e.mtx", BANNER_PS + "3 3 2\n2 1\n4 1\n", 4, ["row index 4 is outside 1..3"]),
    ("e.mtx", BANNER_PS + "3 3 2\n2 1\n% c\n\n1 0\n", 6, ["column index 0 is outside 1..3"]),
    ("e.mtx", BANNER_PS + "3 3 1\n1.5 1\n", 3, ["row index 1.5 is not a whole number"]),
    ("e.mtx", BANNER_RG + "3 3 2\n1 2 1\n2 3 -1\n", 4, ["weight -1 is negative", ">= 0"]),
    ("e.mtx", BANNER_RG + "3 3 2\n1 2 nan\n2 3 1\n", 3, ["weight nan is not finite"]),
    ("e.mtx", BANNER_RG + "3 3 2\n1 2 1\n2 3 inf\n", 4, ["weight inf is not finite"]),
    ("e.mtx", BANNER_RG + "3 3 2\n1 2 1\n2 3 -Infinity\n", 4, ["not finite"]),
    ("e.mtx", BANNER_PS + "3 3 2\n2 1\n3 1 5\n", 4, ["found 3 values", "'pattern'"]),
    ("e.mtx", BANNER_RG + "3 3 2\n1 2 5\n3 1\n", 4, ["found 2 values", "'real'"]),
    ("e.mtx", BANNER_RG + "3 3 2\n1 2 x5\n3 1 1\n", 3, ["cannot read 'x5' as a number"]),
    ("e.mtx", BANNER_RG + "3 3 2\n1 2 1,5\n3 1 1\n", 3, ["cannot read '1,5'"]),
    ("e.mtx", "%%MatrixMarket matrix coordinate integer general\n3 3 1\n1 2 2.5\n", 3,
     ["weight 2.5 is not a whole number", "'integer'"]),
    ("e.mtx", BANNER_PS + "3 3 3\n2 1\n3 1\n", None, ["declares 3 entries", "has 2"]),
    ("e.mtx", BANNER_PS + "3 3 1\n2 1\n3 1\n3 2\n", 4,
     ["declares 1 entries but the file has 3", "first extra"]),
    ("e.mtx", "", None, ["empty"]),
    ("e.mtx", " \n\n\t\n", None, ["empty"]),
    ("e.mtx", BANNER_PS + "2 2 1\n2\x001\n", 3, ["binary", "NUL"]),
    ("e.graph", b"2 1\n\xff\xfe\x80\n1\n", 2, ["not UTF-8", "binary"]),
    ("e.txt", b"0 1\n1\x012\n", 2, ["binary", "control byte 0x01"]),
    ("e.cedge", "0 0 1 0.5\n\x1f\n", 2, ["binary", "0x1f"]),
    # fastapsp: the size line is line 1
    ("f.mtx", "3 3 2\n2 1\n", None, ["declares 2 entries", "has 1"]),
    ("f.mtx", "3 3 1\n2 1\n3 2\n", 3, ["declares 1 entries but the file has 2"]),
    ("f.mtx", "3 3 2\n2 1\n5 2\n", 3, ["row index 5 is outside 1..3"]),
    ("f.mtx", "3 2 1\n2 1\n", 1, ["3 x 2"]),
    ("f.mtx", "3 3 2\n2 1 1\n3 2\n", 3, ["found 2 values", "line 2 has 3"]),
    ("f.mtx", "3 3 2\n2 1 1 1\n3 2 1 1\n", 2, ["found 4 values"]),
    ("f.mtx", "3 3 2\n2 1 -2\n3 2 1\n", 2, ["weight -2 is negative"]),
    ("f.mtx", "3 3 1\n2 1 nan\n", 2, ["not finite"]),
    # METIS
    ("m.graph", "3 2\n2\n1 4\n\n", 3, ["neighbour 4 of vertex 2 is outside 1..3"]),
    ("m.graph", "3 2\n2\n1 0\n\n", 3, ["neighbour 0 of vertex 2 is outside 1..3"]),
    ("m.graph", "3 3\n2 3\n1\n1\n", None, ["m = 3", "6 neighbour entries", "hold 4"]),
    ("m.graph", "4 1\n2\n1\n", None, ["n = 4 vertices but 2 vertex lines"]),
    ("m.graph", "2 1\n2\n1\n\n1\n", 5, ["beyond the n = 2 vertices"]),
    ("m.graph", "2 1 1\n2 1 3\n1 1\n", 2, ["vertex 1 has 3 values", "pairs"]),
    ("m.graph", "2 1 1\n2 -1\n1 1\n", 2, ["weight -1 is negative"]),
    ("m.graph", "2 1 1\n2 inf\n1 1\n", 2, ["weight inf is not finite"]),
    ("m.graph", "2 1 10\n1 2\n\n", 3, ["vertex 2 has 0 values", "at least 1"]),
    ("m.graph", "2 1 2\n2\n1\n", 1, ["fmt '2'"]),
    ("m.graph", "2 1 0 1 5\n2\n1\n", 1, ["header '2 1 0 1 5'"]),
    ("m.graph", "2\n2\n1\n", 1, ["header '2'", "n m [fmt [ncon]]"]),
    ("m.graph", "0 0\n", 1, ["no vertices"]),
    ("m.graph", "3 1\n2\n1 x\n\n", 3, ["cannot read 'x'"]),
    ("m.graph", "3 1\n2\n1.5\n\n", 3, ["neighbour 1.5 of vertex 2 is not a whole number"]),
    # SNAP
    ("s.txt", "# c\n0 1\n-1 2\n", 3, ["from id -1 is outside 0.."]),
    ("s.txt", "0 1\n2 3.5\n", 2, ["to id 3.5 is not a whole number"]),
    ("s.txt", "0 1 1\n2 3 -0.5\n", 2, ["weight -0.5 is negative"]),
    ("s.txt", "0 1 nan\n", 1, ["weight nan is not finite"]),
    ("s.txt", "0 1 1 1\n", 1, ["found 4 values", "'from to'"]),
    ("s.txt", "# c\r\n0\t1\r\n2\t3\t4\r\n", 3, ["found 3 values", "line 2 has 2"]),
    ("s.txt", "# only a comment\n", None, ["no edges", "no vertices"]),
    ("s.txt", "0 1\n9999999999 1\n", 2, ["from id 9999999999 is outside"]),
    # cedge
    ("c.cedge", "0 0 1 0.5\n1 1 2\n", 2, ["found 3 values", "edgeID u v w"]),
    ("c.cedge", "0 0 1 0.5\n1 1 2 -3\n", 2, ["weight -3 is negative"]),
    ("c.cedge", "0 0 -1 0.5\n", 1, ["v -1 is outside"]),
]


@pytest.mark.parametrize("name, content, line, words", ERRORS)
def test_errors(tmp_path, name, content, line, words):
    path = write(tmp_path, name, content)
    with pytest.raises(GraphFormatError) as info:
        read_graph(path)
    message = str(info.value)
    assert message.startswith(str(path) + (f" line {line}: " if line else ": ")), message
    assert "\n" not in message
    for word in words:
        assert word in message, message


def test_error_line_in_gzip_file(tmp_path):
    text = BANNER_RG + "% c\n3 3 3\n1 2 1\n2 3 1\n3 1 -4\n"
    path = write(tmp_path, "z.mtx.gz", text, gz=True)
    with pytest.raises(GraphFormatError, match=r"z\.mtx\.gz line 6: weight -4 is negative"):
        read_graph(path)


def test_error_earliest_line_wins(tmp_path):
    text = BANNER_RG + "3 3 3\n1 2 1\n2 9 1\n3 1 -4\n"
    with pytest.raises(GraphFormatError, match="line 4: column index 9"):
        read_graph(write(tmp_path, "x.mtx", text))
    text = BANNER_RG + "3 3 3\n1 2 1\n2 3 -1\n9 1 1\n"
    with pytest.raises(GraphFormatError, match="line 4: weight -1"):
        read_graph(write(tmp_path, "y.mtx", text))


def test_missing_banner_with_explicit_format(tmp_path):
    with pytest.raises(GraphFormatError, match="line 1: missing"):
        read_graph(write(tmp_path, "f.mtx", "2 2 1\n2 1\n"), format="mtx")


def test_damaged_gzip(tmp_path):
    path = write(tmp_path, "d.mtx.gz", gzip.compress(b"%%MatrixMarket")[:12])
    with pytest.raises(GraphFormatError, match=r"d\.mtx\.gz: damaged gzip"):
        read_graph(path)


def test_binary_gzip_content(tmp_path):
    path = write(tmp_path, "b.txt.gz", b"0 1\n\x00\x01\x02", gz=True)
    with pytest.raises(GraphFormatError, match=r"b\.txt\.gz line 2: binary"):
        read_graph(path)


# ----------------------------------------------------------------- real files
def test_shipped_minnesota():
    g = read_graph(SHIPPED / "minnesota.mtx.gz")
    assert (g.n, g.num_edges, g.directed, g.name) == (2642, 3303, False, "minnesota.mtx.gz")
    assert g.unit_weights


def test_shipped_cal():
    g = read_graph(SHIPPED / "cal.cedge.gz")
    assert (g.n, g.num_edges, g.directed) == (21048, 21693, False)
    assert g.weights.min() == pytest.approx(0.000502) and g.weights.max() == pytest.approx(0.299789)


REAL = [
    # file, format, n, undirected m, directed, stored arcs of a directed file
    ("minnesota.mtx.gz", "mtx", 2642, 3303, False, None),
    ("luxembourg_osm.mtx.gz", "mtx", 114599, 119666, False, None),
    ("luxembourg_osm.fastapsp.mtx.gz", "fastapsp", 114599, 119666, False, None),
    ("4elt.graph.gz", "metis", 15606, 45878, False, None),
    ("polblogs.graph.gz", "metis", 1490, 16715, False, None),
    ("p2p-Gnutella05.txt.gz", "snap", 8846, 31839, True, 31839),
    ("wiki-Vote.txt.gz", "snap", 8298, 100762, True, 103689),
    ("cal.cedge.gz", "cedge", 21048, 21693, False, None),
]


def shared(name: str) -> Path:
    path = SHARED / name
    if not path.is_file():
        pytest.skip(f"{path} is not here")
    return path


@pytest.mark.parametrize("name, fmt, n, pairs, directed, stored", REAL)
def test_real_files(name, fmt, n, pairs, directed, stored):
    path = shared(name)
    assert detect_format(path) == fmt
    g = read_graph(path)
    assert (g.n, g.directed, g.name) == (n, directed, name)
    assert undirected_pairs(g) == pairs
    if directed:
        assert g.m == stored
    else:
        assert g.num_edges == pairs


def test_polblogs_isolated_vertices():
    g = read_graph(shared("polblogs.graph.gz"))
    assert int(np.sum(g.degrees() == 0)) == 266


def test_wiki_vote_isolated_ids():
    g = read_graph(shared("wiki-Vote.txt.gz"))
    used = np.zeros(g.n, dtype=bool)
    src, dst, _ = g.arcs()
    used[src] = used[dst] = True
    assert int(used.sum()) == 7115


def test_luxembourg_both_layouts_agree():
    a = read_graph(shared("luxembourg_osm.mtx.gz"))
    b = read_graph(shared("luxembourg_osm.fastapsp.mtx.gz"))
    assert np.array_equal(a.indptr, b.indptr) and np.array_equal(a.indices, b.indices)
    assert np.array_equal(a.weights, b.weights) and a.directed == b.directed


@pytest.mark.parametrize("directed", [True, False])
@pytest.mark.parametrize("weight", [None, 2.5, 0.0])
def test_from_edges_with_one_weight_for_every_arc(directed, weight):
    """Every arc of the same weight (the keys sorted alone): loops dropped, parallel arcs once, each row's
    heads ascending, as a set of pairs gives them."""
    rng = np.random.default_rng(7)
    src, dst = rng.integers(0, 40, 500), rng.integers(0, 40, 500)  # many parallel arcs and some loops
    weights = None if weight is None else np.full(src.size, weight)
    g = Graph.from_edges(40, src, dst, weights, directed=directed)
    pairs = {(int(a), int(b)) for a, b in zip(src, dst) if a != b}
    if not directed:
        pairs |= {(b, a) for a, b in pairs}
    assert arcs(g) == [(a, b, 1.0 if weight is None else weight) for a, b in sorted(pairs)]
