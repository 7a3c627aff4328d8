"""--sources: the chosen rows equal the full matrix's rows, by both methods, from the API and the CLI."""

import json

import numpy as np
import pytest
from conftest import disconnected_graph, random_graph, reference_apsp

import fastapsp
from cli_util import DATA, find_mpiexec, run_cli
from fastapsp.errors import ConfigError
from fastapsp.partition import partition_graph
from fastapsp.sources import SourceRows, choose_method, parse_sources

MINNESOTA = DATA / "minnesota.mtx.gz"


def backend_name(xp):
    return "numpy" if xp is np else "cupy"


GRAPHS = {
    "directed": lambda: random_graph(np.random.default_rng(1), 200, 700, directed=True, weighted=True),
    "undirected-unit": lambda: random_graph(np.random.default_rng(2), 180, 400, directed=False, weighted=False),
    "disconnected-zero": lambda: disconnected_graph(np.random.default_rng(3), [50, 40, 60], directed=True,
                                                    weighted=True, zero_weights=True),
}


@pytest.mark.parametrize("name", GRAPHS)
@pytest.mark.parametrize("method", ["pipeline", "sssp", "auto"])
def test_source_rows_equal_full_rows(name, method, xp):
    graph = GRAPHS[name]()
    full = reference_apsp(graph)
    part = partition_graph(graph, 6, "metis")
    rng = np.random.default_rng(4)
    # boundary and interior vertices, unsorted, one repeated
    boundary, interior = np.flatnonzero(part.boundary), np.flatnonzero(~part.boundary)
    wanted = np.concatenate([rng.choice(boundary, 3, replace=False), rng.choice(interior, 5, replace=False)])
    wanted = np.concatenate([wanted, wanted[:1]])
    rows = fastapsp.solve(graph, partition=part, backend=backend_name(xp), sources=wanted, sources_method=method)
    assert rows.shape == (wanted.size, graph.n)
    np.testing.assert_array_equal(rows, full[wanted])


def test_only_boundary_rows_of_a_component_and_spec_strings():
    graph = GRAPHS["directed"]()
    part = partition_graph(graph, 5, "metis")
    full = reference_apsp(graph)
    vertices, nb = part.component(2)
    rows = fastapsp.solve(graph, partition=part, backend="numpy", sources=vertices[:nb], sources_method="pipeline")
    np.testing.assert_array_equal(rows, full[vertices[:nb]])
    rows = fastapsp.solve(graph, partition=part, backend="numpy", sources="10:20", sources_method="pipeline")
    np.testing.assert_array_equal(rows, full[10:20])


def test_only_needed_components_run():
    graph = GRAPHS["directed"]()
    part = partition_graph(graph, 6, "metis")
    vertices, _ = part.component(3)
    selection = SourceRows(part, np.sort(vertices[-2:]))
    assert selection.needed().tolist() == [p == 3 for p in range(6)]


def test_parse_sources(tmp_path):
    assert parse_sources("3:6", 10).tolist() == [3, 4, 5]
    picked = parse_sources("random:5:1", 100)
    assert picked.size == 5 and np.array_equal(picked, parse_sources("random:5:1", 100))
    text = tmp_path / "ids.txt"
    text.write_text("# chosen\n7 3\n3  # again\n9\n")
    assert parse_sources(str(text), 10).tolist() == [3, 7, 9]
    npy = tmp_path / "ids.npy"
    np.save(npy, np.array([4, 1]))
    assert parse_sources(str(npy), 10).tolist() == [1, 4]
    for spec, fragment in [("5:3", "range"), ("0:11", "range"), ("random:0", "random:0"), ("random:x", "random"),
                           ("nofile", "nofile"), (str(text) + "x", "x")]:
        with pytest.raises(ConfigError, match=fragment):
            parse_sources(spec, 10)
    bad = tmp_path / "bad.txt"
    bad.write_text("1\n2 x\n")
    with pytest.raises(ConfigError, match="line 2"):
        parse_sources(str(bad), 10)
    with pytest.raises(ConfigError, match="12"):
        parse_sources([1, 12], 10)


def test_auto_prefers_sssp_for_few_sources_and_pipeline_for_all():
    graph = fastapsp.read_graph(MINNESOTA)
    part = partition_graph(graph, 16, "metis")
    assert choose_method(part, np.array([5]), graph.n, graph.m) == "sssp"
    assert choose_method(part, np.arange(graph.n), graph.n, graph.m) == "pipeline"


@pytest.mark.parametrize("method", ["pipeline", "sssp"])
def test_cli_sources_file_and_ids(tmp_path, method):
    out = tmp_path / "rows.npy"
    proc = run_cli("solve", MINNESOTA, "-k", 6, "--backend", "numpy", "--sources", "random:40:3", "--output", out,
                   "--sources-method", method, "--report", tmp_path / "r.json", "--dtype", "float64")
    assert proc.returncode == 0, proc.stderr
    ids = np.load(tmp_path / "rows.sources.npy")
    assert ids.tolist() == parse_sources("random:40:3", 2642).tolist()
    full = reference_apsp(fastapsp.read_graph(MINNESOTA))
    np.testing.assert_array_equal(np.load(out), full[ids])
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["sources"] == 40 and report["sources_method"] == method


def test_cli_sources_refusals(tmp_path):
    for args, fragment in [(["--sources", "0:99999"], "sources"), (["--sources", "random:5", "--stats", "x"],
                                                                    "stats")]:
        proc = run_cli("solve", MINNESOTA, "-k", 2, *args, cwd=tmp_path)
        assert proc.returncode != 0 and "Traceback" not in proc.stderr
        assert fragment in proc.stderr


@pytest.mark.mpi
@pytest.mark.skipif(find_mpiexec() is None, reason="no mpiexec (install the 'mpi' extra)")
@pytest.mark.parametrize("method", ["pipeline", "sssp"])
def test_sources_under_two_ranks(tmp_path, method):
    out = tmp_path / "rows.npy"
    proc = run_cli("solve", MINNESOTA, "-k", 6, "--backend", "numpy", "--sources", "100:160", "--output", out,
                   "--sources-method", method, "--dtype", "float64", ranks=2)
    assert proc.returncode == 0, proc.stderr
    full = reference_apsp(fastapsp.read_graph(MINNESOTA))
    np.testing.assert_array_equal(np.load(out), full[100:160])
