"""The graph generators and the converter in ``scripts/``."""

import gzip
import itertools
import subprocess
import sys

import numpy as np
import pytest

from cli_util import ROOT, cli_env
from fastapsp import read_graph
from fastapsp.graph import Graph

SCRIPTS = ROOT / "scripts"
sys.path.insert(0, str(SCRIPTS))

import _graphio  # noqa: E402
import convert  # noqa: E402
import make_delaunay  # noqa: E402
import make_grid_road  # noqa: E402
import make_rmat  # noqa: E402

DATA = ROOT / "tests" / "data"


def assert_same_graph(a: Graph, b: Graph):
    assert a.n == b.n
    np.testing.assert_array_equal(a.indptr, b.indptr)
    np.testing.assert_array_equal(a.indices, b.indices)
    np.testing.assert_array_equal(a.weights, b.weights)


def mtx_body(path):
    """Banner, size line and entry lines of a Matrix Market file (comments dropped)."""
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt") as fh:
        lines = [line.split() for line in fh if not line.startswith("%") or line.startswith("%%")]
    return lines[0], [int(x) for x in lines[1]], np.array(lines[2:], dtype=np.float64)


# ------------------------------------------------------------------ Delaunay
def test_delaunay16r_documented_command(tmp_path):
    out = tmp_path / "delaunay16r.mtx"
    proc = subprocess.run([sys.executable, SCRIPTS / "make_delaunay.py", "--scale", "16", "--seed", "1",
                           "-o", out], capture_output=True, text=True, timeout=120, env=cli_env())
    assert proc.returncode == 0, proc.stderr
    banner, size, entries = mtx_body(out)
    assert banner == ["%%MatrixMarket", "matrix", "coordinate", "pattern", "symmetric"]
    assert size == [65536, 65536, 196583]
    rows, cols = entries[:, 0].astype(np.int64), entries[:, 1].astype(np.int64)
    assert entries.shape == (196583, 2)
    assert np.all(rows > cols) and cols.min() >= 1 and rows.max() <= 65536   # lower triangle, 1-based
    key = cols * 65537 + rows
    assert np.all(np.diff(key) > 0)                                           # sorted, no repeats
    g = read_graph(out)
    assert (g.n, g.num_edges, g.directed) == (65536, 196583, False)
    # The same points through the API give the same graph.
    points = np.random.default_rng(1).random((65536, 2))
    assert_same_graph(g, make_delaunay.delaunay_graph(points))


def test_delaunay_is_deterministic_by_seed(tmp_path):
    paths = [tmp_path / name for name in ("a.mtx", "b.mtx", "c.mtx")]
    for path, seed in zip(paths, (5, 5, 6)):
        assert make_delaunay.main(["--points", "500", "--seed", str(seed), "-o", str(path)]) == 0
    assert paths[0].read_bytes() == paths[1].read_bytes()
    assert paths[0].read_bytes() != paths[2].read_bytes()
    g = read_graph(paths[0])
    # Euler: a triangulation of n points with h on the hull has 3n - 3 - h edges.
    from scipy.spatial import ConvexHull

    hull = ConvexHull(np.random.default_rng(5).random((500, 2))).vertices.size
    assert g.n == 500 and g.num_edges == 3 * 500 - 3 - hull


def test_delaunay_euclidean_weights(tmp_path):
    out = tmp_path / "d.mtx.gz"
    assert make_delaunay.main(["--points", "300", "--seed", "2", "--weights", "euclidean", "-o", str(out)]) == 0
    g = read_graph(out)
    pts = make_delaunay.random_points(300, 2)
    src, dst, w = g.arcs()
    np.testing.assert_allclose(w, np.hypot(*(pts[src] - pts[dst]).T), rtol=1e-15)
    assert_same_graph(g, make_delaunay.delaunay_graph(pts, weights="euclidean"))


# ----------------------------------------------------------------- grid road
def test_grid_road_shape_and_weights(tmp_path):
    g = make_grid_road.grid_road_graph(7, 9, seed=3)
    assert g.n == 63 and g.num_edges == 7 * 8 + 6 * 9 and not g.directed
    assert g.weights.min() >= 1 and g.weights.max() <= 100 and np.all(g.weights == np.floor(g.weights))
    # Only grid neighbours are joined.
    src, dst, _ = g.arcs()
    r1, c1 = np.divmod(src, 9)
    r2, c2 = np.divmod(dst, 9)
    assert np.all(np.abs(r1 - r2) + np.abs(c1 - c2) == 1)

    d = make_grid_road.grid_road_graph(20, 30, seed=3, diagonals=1.0, weights="real", min_weight=2,
                                       max_weight=5)
    assert d.num_edges == 20 * 29 + 19 * 30 + 19 * 29
    assert d.weights.min() >= 2 and d.weights.max() <= 5

    cut = make_grid_road.grid_road_graph(50, 50, seed=3, remove=0.2)
    full = 50 * 49 * 2
    assert 0.7 * full < cut.num_edges < 0.9 * full


def test_grid_road_cli_is_deterministic(tmp_path):
    args = ["--rows", "12", "--cols", "5", "--remove", "0.1", "--diagonals", "0.3", "--seed", "4"]
    a, b, c = tmp_path / "a.mtx", tmp_path / "b.mtx", tmp_path / "c.mtx"
    assert make_grid_road.main([*args, "-o", str(a)]) == 0
    assert make_grid_road.main([*args, "-o", str(b)]) == 0
    assert make_grid_road.main([*args[:-1], "5", "-o", str(c)]) == 0
    assert a.read_bytes() == b.read_bytes() != c.read_bytes()
    banner, size, _ = mtx_body(a)
    assert banner[3:] == ["integer", "symmetric"] and size[:2] == [60, 60]
    assert_same_graph(read_graph(a), make_grid_road.grid_road_graph(12, 5, seed=4, remove=0.1, diagonals=0.3))


# --------------------------------------------------------------------- R-MAT
def test_rmat_shape_and_determinism(tmp_path):
    g = make_rmat.rmat_graph(10, 8, seed=11)
    assert g.n == 1024 and g.directed and 0 < g.m <= 8 * 1024
    assert_same_graph(g, make_rmat.rmat_graph(10, 8, seed=11))
    assert not np.array_equal(g.indices, make_rmat.rmat_graph(10, 8, seed=12).indices)
    # The a-quadrant is the most likely at every level: vertex 0 has the largest degree.
    assert g.degrees().argmax() == 0
    u = make_rmat.rmat_graph(10, 8, seed=11, undirected=True, weights="int", max_weight=9)
    assert not u.directed and u.weights.min() >= 1 and u.weights.max() <= 9
    sym = u.to_scipy()
    assert (sym != sym.T).nnz == 0
    # d = 1: every arc is the loop (n-1, n-1), dropped.
    assert make_rmat.rmat_graph(5, 4, a=0, b=0, c=0).m == 0
    # b = 1: every arc goes from 0 to n-1.
    only = make_rmat.rmat_graph(5, 4, a=0, b=1, c=0)
    assert only.m == 1 and only.indices.tolist() == [31]


def test_rmat_cli(tmp_path):
    a, b = tmp_path / "a.mtx", tmp_path / "b.txt"
    args = ["--scale", "9", "--edge-factor", "4", "--weights", "real", "--scramble", "--seed", "2"]
    assert make_rmat.main([*args, "-o", str(a)]) == 0
    assert make_rmat.main([*args, "-o", str(b)]) == 0
    banner, size, _ = mtx_body(a)
    assert banner[3:] == ["real", "general"] and size[:2] == [512, 512]
    expect = make_rmat.rmat_graph(9, 4, weights="real", scramble=True, seed=2)
    assert_same_graph(read_graph(a), expect)
    assert_same_graph(read_graph(b), expect)


# ----------------------------------------------------------------- converter
# Hand-written inputs, one per format read_graph knows (all the same small
# undirected graph: 5 vertices, vertex 5 / id 4 isolated).
SOURCES = {
    "g.mtx": "%%MatrixMarket matrix coordinate real symmetric\n% c\n5 5 4\n2 1 0.5\n3 1 2\n3 2 0\n4 3 1e-3\n",
    "g_fastapsp.mtx": "% research format\n5 5 4\n2 1 0.5\n3 1 2\n3 2 0\n4 3 0.001\n",
    "g.graph": "% metis\n5 4 1\n2 0.5 3 2\n1 0.5 3 0\n1 2 2 0 4 0.001\n3 0.001\n\n",
    "g.txt": "# snap\n0 1 0.5\n1 0 0.5\n0 2 2\n2 0 2\n1 2 0\n2 1 0\n2 3 0.001\n3 2 0.001\n4 4 0\n",
    "g.cedge": "0 0 1 0.5\n1 0 2 2\n2 1 2 0\n3 2 3 0.001\n4 4 4 0\n",
}


def _inputs(tmp_path):
    """The hand-written sources, the shipped graphs and some generated ones."""
    out = {}
    for name, text in SOURCES.items():
        path = tmp_path / "in" / name
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)
        out[name] = (path, "fastapsp" if name == "g_fastapsp.mtx" else None)
    out["minnesota"] = (DATA / "minnesota.mtx.gz", None)
    out["cal"] = (DATA / "cal.cedge.gz", None)
    # Directed, weighted, with isolated vertices at the end and awkward reals.
    rng = np.random.default_rng(0)
    src, dst = rng.integers(0, 40, 150), rng.integers(0, 40, 150)
    w = rng.choice([0.0, 1 / 3, 0.1, 1e-300, 7.0, 2.5e10], 150)
    directed = tmp_path / "in" / "directed.mtx"
    _graphio.write_graph(directed, Graph.from_edges(45, src, dst, w, directed=True))
    out["directed"] = (directed, None)
    pattern = tmp_path / "in" / "pattern.txt.gz"
    _graphio.write_graph(pattern, make_rmat.rmat_graph(7, 3, seed=1))
    out["pattern-directed"] = (pattern, None)
    return out


def test_hand_written_sources_are_the_same_graph(tmp_path):
    graphs = [read_graph(path, format=fmt) for path, fmt in _inputs(tmp_path).values()][:5]
    for g in graphs[1:]:
        assert_same_graph(g, graphs[0])
    assert graphs[0].n == 5 and graphs[0].num_edges == 4


OUTPUTS = ["out.mtx", "out.mtx.gz", "out_fa.mtx", "out.graph", "out.metis.gz", "out.txt", "out.el", "out.cedge"]


@pytest.mark.parametrize("target", OUTPUTS)
def test_round_trip_every_format(tmp_path, target):
    for label, (source, fmt) in _inputs(tmp_path).items():
        original = read_graph(source, format=fmt)
        to = "fastapsp" if target.startswith("out_fa") else None
        path = tmp_path / f"{label}.{target}"
        written_format = to or _graphio.format_from_name(path)
        symmetric = _graphio.symmetrised(original).m == original.m
        if original.directed and not symmetric and written_format in ("metis", "fastapsp", "cedge"):
            with pytest.raises(ValueError, match="undirected graphs only"):
                convert.convert(source, path, from_format=fmt, to_format=to)
            # Symmetrised, the conversion keeps the symmetrised graph.
            convert.convert(source, path, from_format=fmt, to_format=to, undirected=True)
            original = read_graph(source, format=fmt, undirected=True)
        else:
            convert.convert(source, path, from_format=fmt, to_format=to)
        back = read_graph(path, format=to)
        assert_same_graph(back, original)
        if written_format == "mtx":
            assert back.directed == original.directed
            # ... and from Matrix Market back to the source's own format.
            again = tmp_path / f"{label}.again.{source.name}"
            convert.convert(path, again, from_format=to, to_format=fmt)
            assert_same_graph(read_graph(again, format=fmt), original)


def test_mtx_field_and_layout(tmp_path):
    cases = {
        "pattern": (np.ones(3), "pattern"),
        "integer": (np.array([1.0, 0.0, 5.0]), "integer"),
        "real": (np.array([1.0, 0.5, 5.0]), "real"),
    }
    for name, (w, field) in cases.items():
        for directed in (False, True):
            g = Graph.from_edges(4, [0, 3, 1], [2, 1, 2], w, directed=directed)
            path = tmp_path / f"{name}{directed}.mtx"
            _graphio.write_graph(path, g)
            banner, size, entries = mtx_body(path)
            assert banner[3:] == [field, "general" if directed else "symmetric"]
            assert size == [4, 4, 3]
            if not directed:
                assert np.all(entries[:, 0] > entries[:, 1])
            assert_same_graph(read_graph(path), g)


def test_convert_cli(tmp_path):
    out = tmp_path / "m.graph"
    proc = subprocess.run([sys.executable, SCRIPTS / "convert.py", DATA / "minnesota.mtx.gz", out],
                          capture_output=True, text=True, timeout=60, env=cli_env())
    assert proc.returncode == 0, proc.stderr
    assert_same_graph(read_graph(out), read_graph(DATA / "minnesota.mtx.gz"))
    directed = tmp_path / "d.txt"
    directed.write_text("0 1\n")
    proc = subprocess.run([sys.executable, SCRIPTS / "convert.py", directed, tmp_path / "d.graph"],
                          capture_output=True, text=True, timeout=60, env=cli_env())
    assert proc.returncode == 1 and "--undirected" in proc.stderr and "Traceback" not in proc.stderr
    proc = subprocess.run([sys.executable, SCRIPTS / "convert.py", directed, tmp_path / "d.xyz"],
                          capture_output=True, text=True, timeout=60, env=cli_env())
    assert proc.returncode != 0 and "extension" in proc.stderr


def test_every_script_has_help():
    for script in itertools.chain(SCRIPTS.glob("make_*.py"), [SCRIPTS / "convert.py"]):
        module = __import__(script.stem)
        with pytest.raises(SystemExit) as stop:
            module.main(["--help"])
        assert stop.value.code == 0


def test_comparison_runner_knows_the_generated_graphs():
    import importlib.util

    spec = importlib.util.spec_from_file_location("run_comparison", ROOT / "scripts" / "run_comparison.py")
    runner = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(runner)
    assert runner.needed_graphs(ROOT / "benchmarks" / "experiments" / "thesis.yaml") == [
        "benchmarks/data/delaunay16r.mtx"]
    assert runner.main(["no/such/experiment.yaml"]) == 2
