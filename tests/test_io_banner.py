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
