"""A Matrix Market banner that is misspelled, one '%' short or not on the first line is refused in one
line: read as the banner-less research layout (undirected) it would give wrong distances."""

import pytest
from cli_util import run_cli

from fastapsp.errors import GraphFormatError
from fastapsp.io import read_graph

BANNER = "%%MatrixMarket matrix coordinate real general"
BODY = "2 2 1\n1 2 1\n"  # one arc 1 -> 2: d[1, 0] is inf


def _read(tmp_path, text, name="t.mtx"):
    path = tmp_path / name
    path.write_text(text)
    return read_graph(path)


@pytest.mark.parametrize("at", range(len(BANNER)))
def test_every_single_letter_corruption_is_refused_or_read_right(tmp_path, at):
    wrong = BANNER[:at] + ("y" if BANNER[at] == "x" else "x") + BANNER[at + 1 :]
    try:
        graph = _read(tmp_path, wrong + "\n" + BODY)
    except GraphFormatError:
        return
    assert graph.directed and graph.m == 1, f"{wrong!r} read as {graph}"


@pytest.mark.parametrize("first", ["%%MatrixMarkt matrix coordinate real general",
                                   "%MatrixMarket matrix coordinate real general",
                                   "% MatrixMarket matrix coordinate real general",
                                   "%%matrixmarket MATRIX coordinate real general x"])
def test_misspelled_banners_name_the_banner(tmp_path, first):
    with pytest.raises(GraphFormatError, match="banner"):
        _read(tmp_path, first + "\n" + BODY)


def test_a_banner_below_a_comment_is_refused(tmp_path):
    with pytest.raises(GraphFormatError, match="banner"):
        _read(tmp_path, "% my graph\n" + BANNER + "\n" + BODY)


def test_the_research_layout_with_comments_still_reads(tmp_path):
    graph = _read(tmp_path, "% a comment\n% another one\n2 2 1\n1 2\n")
    assert not graph.directed and graph.m == 2


def test_the_reproduction_fails_in_one_line_and_writes_nothing(tmp_path):
    path = tmp_path / "t.mtx"
    path.write_text("%%MatrixMarkt matrix coordinate real general\n" + BODY)
    out = tmp_path / "t.npy"
    proc = run_cli("solve", path, "-k", 1, "--backend", "numpy", "--output", out)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "banner" in proc.stderr
    assert not out.exists()


@pytest.mark.parametrize("entry, bad", [("78.0 2 1.5", "78.0"), ("78e0 2 1.5", "78e0"), ("3 2.0 1.5", "2.0")])
def test_ids_written_with_a_point_or_exponent_are_refused(tmp_path, entry, bad):
    """As SciPy's reader: a vertex id is written as digits (the file's real weights make every number float)."""
    text = "%%MatrixMarket matrix coordinate real general\n80 80 2\n" + entry + "\n3 4 2\n"
    with pytest.raises(GraphFormatError, match=f"line 3: .* {bad} is not written as a whole number"):
        _read(tmp_path, text)


def test_ids_with_leading_zeros_signs_or_extra_spaces_still_read(tmp_path):
    graph = _read(tmp_path, "%%MatrixMarket matrix coordinate real general\n80 80 2\n078   2 1.5\n+3\t4 2\n")
    src, dst, w = graph.arcs()
    assert sorted(zip(src.tolist(), dst.tolist(), w.tolist())) == [(2, 3, 2.0), (77, 1, 1.5)]
