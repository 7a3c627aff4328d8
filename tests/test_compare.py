"""benchmarks/compare.py end to end on a tiny experiment: outputs, metrics, exactness, resuming, errors."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import DATA

REPO = Path(__file__).resolve().parent.parent
COMPARE = REPO / "benchmarks" / "compare.py"
PARTITIONERS = ("metis", "kahip-fast")


def needs_libraries():
    pytest.importorskip("pymetis")
    pytest.importorskip("kahip")
    pytest.importorskip("yaml")


def run_compare(*args, timeout=120):
    return subprocess.run([sys.executable, str(COMPARE), *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, cwd=REPO)


def write_experiment(folder: Path, text: str) -> Path:
    path = folder / "tiny.yaml"
    path.write_text(text)
    return path


TINY = f"""\
graphs:
  - {{path: {DATA / "minnesota.mtx.gz"}, name: minnesota}}
k: [4]
partitioners: [{", ".join(PARTITIONERS)}]
backend: numpy
repetitions: 1
output: none
check_samples: 6
seed: 3
"""


def independent_metrics(path: Path, labels: np.ndarray) -> tuple[int, int]:
    """Edge cut and boundary vertices straight from the Matrix Market file and the labels."""
    import gzip

    with gzip.open(path, "rt") as fh:
        lines = [line for line in fh if not line.startswith("%")]
    entries = np.loadtxt(lines[1:], dtype=np.int64, ndmin=2)[:, :2] - 1
    edges = {(min(i, j), max(i, j)) for i, j in entries.tolist() if i != j}
    cut = [(i, j) for i, j in edges if labels[i] != labels[j]]
    boundary = {v for edge in cut for v in edge}
    return len(cut), len(boundary)


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """One run of the tiny experiment, and a second (resumed) run over the same folder."""
    needs_libraries()
    tmp = tmp_path_factory.mktemp("compare")
    experiment = write_experiment(tmp, TINY)
    out = tmp / "out"
    first = run_compare(experiment, "--out", out)
    assert first.returncode == 0, first.stderr
    before = (out / "results.json").read_text()
    second = run_compare(experiment, "--out", out)
    return out, first, second, before


def test_outputs_exist(finished):
    out, first, _, _ = finished
    for name in ("results.json", "results.csv", "report.md", "experiment.yaml"):
        assert (out / name).is_file(), name
    records = json.loads((out / "results.json").read_text())
    assert [(r["graph"], r["k"], r["partitioner"]) for r in records] == [("minnesota", 4, p) for p in PARTITIONERS]
    with open(out / "results.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert [row["partitioner"] for row in rows] == list(PARTITIONERS)
    report = (out / "report.md").read_text()
    assert "## minnesota" in report and "geometric-mean improvement over METIS" in report
    for p in PARTITIONERS:
        assert f"| 4 | {p} |" in report
    # One progress line per configuration.
    assert "[1/2] minnesota k=4 metis: cut=" in first.stderr
    assert "[2/2] minnesota k=4 kahip-fast: cut=" in first.stderr


def test_plots_exist(finished):
    out, _, _, _ = finished
    pytest.importorskip("matplotlib")
    report = (out / "report.md").read_text()
    for name in ("boundary_vs_runtime.png", "runtime_by_partitioner.png", "stage_breakdown.png"):
        assert (out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", name
        assert f"]({name})" in report


def test_metrics_match_the_saved_partition(finished):
    out, _, _, _ = finished
    for r in json.loads((out / "results.json").read_text()):
        with np.load(out / r["partition_file"]) as saved:
            labels = saved["labels"]
            assert str(saved["method"]) == r["partitioner"] and int(saved["k"]) == 4
        cut, boundary = independent_metrics(DATA / "minnesota.mtx.gz", labels)
        assert r["edge_cut"] == cut
        assert r["boundary_vertices"] == boundary
        assert r["boundary_ratio"] == pytest.approx(boundary / (labels.size - boundary))
        per_part = np.bincount(labels, minlength=4)
        assert r["largest_part"] == per_part.max()
        assert r["n"] == labels.size == 2642 and r["m"] == 3303


def test_sampled_rows_are_exact(finished):
    out, _, _, _ = finished
    for r in json.loads((out / "results.json").read_text()):
        assert r["status"] == "ok"
        assert r["exact"] is True and r["max_abs_error"] == 0.0 and r["checked_rows"] == 6
        assert r["solve_seconds"] > 0 and r["total_seconds"] >= r["solve_seconds"]
        assert set(r["stages"]) >= {"sssp", "floyd_warshall", "min_plus"}
        assert r["metadata"]["versions"]["numpy"] == np.__version__


def test_second_run_skips_what_is_done(finished):
    out, _, second, before = finished
    assert second.returncode == 0, second.stderr
    assert "[1/2] minnesota k=4 metis: done (in results.json), skipped" in second.stderr
    assert "[2/2] minnesota k=4 kahip-fast: done (in results.json), skipped" in second.stderr
    assert "cut=" not in second.stderr
    assert (out / "results.json").read_text() == before  # timestamps and timings untouched


def test_missing_result_is_rerun_with_the_saved_partition(finished, tmp_path):
    out, _, _, before = finished
    copy = tmp_path / "out"
    copy.mkdir()
    (copy / "partitions").mkdir()
    for f in (out / "partitions").iterdir():
        (copy / "partitions" / f.name).write_bytes(f.read_bytes())
    records = json.loads(before)
    (copy / "results.json").write_text(json.dumps(records[:1]))  # as if stopped after the first
    experiment = write_experiment(tmp_path, TINY)
    result = run_compare(experiment, "--out", copy)
    assert result.returncode == 0, result.stderr
    assert "[1/2] minnesota k=4 metis: done" in result.stderr
    assert "[2/2] minnesota k=4 kahip-fast: cut=" in result.stderr
    after = json.loads((copy / "results.json").read_text())
    assert after[0] == records[0]
    assert after[1]["partition_reused"] is True
    assert after[1]["edge_cut"] == records[1]["edge_cut"]


def test_unknown_key_is_a_one_line_error(tmp_path):
    pytest.importorskip("yaml")
    experiment = write_experiment(tmp_path, TINY + "repetitons: 3\n")
    result = run_compare(experiment, "--out", tmp_path / "out")
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "unknown key 'repetitons'" in lines[0]
    assert not (tmp_path / "out").exists()


def test_missing_graph_is_skipped_with_a_warning(tmp_path):
    needs_libraries()
    text = TINY.replace("graphs:\n", f"graphs:\n  - {tmp_path / 'absent.mtx'}\n").replace(
        "partitioners: [metis, kahip-fast]", "partitioners: [metis]").replace("k: [4]", "k: [2]")
    result = run_compare(write_experiment(tmp_path, text), "--out", tmp_path / "out")
    assert result.returncode == 0, result.stderr
    assert "absent" in result.stderr and "not found" in result.stderr
    assert "[1/1] minnesota k=2 metis: cut=" in result.stderr
    assert "absent.mtx` not found" in (tmp_path / "out" / "report.md").read_text()


def test_partition_only_then_solve_reuses_the_partitions(tmp_path):
    """--partition-only saves and measures every partition without solving; the later solve run
    (--require-partitions) reuses them and keeps their partitioning seconds."""
    needs_libraries()
    experiment = write_experiment(tmp_path, TINY)
    out = tmp_path / "out"
    first = run_compare(experiment, "--out", out, "--partition-only")
    assert first.returncode == 0, first.stderr
    assert "[1/2] minnesota k=4 metis: cut=" in first.stderr and "not solved (--partition-only)" in first.stderr
    parted = json.loads((out / "results.json").read_text())
    assert [r["status"] for r in parted] == ["partitioned", "partitioned"]
    for r in parted:
        assert (out / r["partition_file"]).is_file() and "solve_seconds" not in r
        assert r["partition_seconds"] > 0 and r["partition_metadata"]["hostname"]
    assert "not solved yet" in (out / "report.md").read_text()
    again = run_compare(experiment, "--out", out, "--partition-only")
    assert "[2/2] minnesota k=4 kahip-fast: partitioned (in results.json), skipped" in again.stderr
    assert json.loads((out / "results.json").read_text()) == parted

    solved = run_compare(experiment, "--out", out, "--require-partitions")
    assert solved.returncode == 0, solved.stderr
    assert "partition" in solved.stderr and "(saved), solve" in solved.stderr
    after = json.loads((out / "results.json").read_text())
    for before, r in zip(parted, after):
        assert r["status"] == "ok" and r["exact"] is True and r["partition_reused"] is True
        assert r["partition_seconds"] == before["partition_seconds"]  # measured by the partition run
        assert r["partition_metadata"] == before["partition_metadata"]
        assert r["edge_cut"] == before["edge_cut"] and r["partition_file"] == before["partition_file"]
    assert "metadata" in after[0] and "not solved yet" not in (out / "report.md").read_text()

    # Without a saved partition, --require-partitions fails rather than partitioning.
    missing = run_compare(experiment, "--out", tmp_path / "other", "--require-partitions")
    assert missing.returncode == 1 and "--require-partitions" in missing.stderr
    assert not (tmp_path / "other" / "partitions").exists()


def test_partition_only_in_parallel_equals_one_at_a_time(tmp_path):
    """--jobs 2 gives the partitions of a serial --partition-only run (same files, same metrics), says
    how many ran at once, leaves jet/NAME+b to the serial loop, and --deadline fails what is not done."""
    needs_libraries()
    experiment = write_experiment(tmp_path, TINY.replace("k: [4]", "k: [4, 8]").replace(
        f"partitioners: [{', '.join(PARTITIONERS)}]", f"partitioners: [{', '.join(PARTITIONERS)}, metis+b]"))
    serial = run_compare(experiment, "--out", tmp_path / "serial", "--partition-only")
    parallel = run_compare(experiment, "--out", tmp_path / "parallel", "--partition-only", "--jobs", "2")
    assert serial.returncode == 0, serial.stderr
    assert parallel.returncode == 0, parallel.stderr
    one = {r["key"]: r for r in json.loads((tmp_path / "serial" / "results.json").read_text())}
    two = {r["key"]: r for r in json.loads((tmp_path / "parallel" / "results.json").read_text())}
    assert one.keys() == two.keys() and len(one) == 6
    for key, r in one.items():
        assert two[key]["status"] == r["status"] == "partitioned"
        for field in ("edge_cut", "boundary_vertices", "largest_part", "partition_file"):
            assert two[key][field] == r[field], (key, field)
        a = np.load(tmp_path / "serial" / r["partition_file"])["labels"]
        b = np.load(tmp_path / "parallel" / r["partition_file"])["labels"]
        np.testing.assert_array_equal(a, b)
        assert two[key].get("partition_jobs") == (None if r["partitioner"] == "metis+b" else 2)
    assert "(2 at once)" in parallel.stderr

    late = run_compare(experiment, "--out", tmp_path / "late", "--partition-only", "--jobs", "2",
                       "--deadline", "0")
    assert late.returncode == 1
    records = json.loads((tmp_path / "late" / "results.json").read_text())
    failed = [r for r in records if r["status"] == "error"]
    assert len(failed) == 4 and all("deadline" in r["error"] for r in failed)
    assert [r["partitioner"] for r in records if r["status"] == "partitioned"] == ["metis+b", "metis+b"]

    refused = run_compare(experiment, "--out", tmp_path / "x", "--jobs", "2")
    assert refused.returncode == 2 and "--jobs: only with --partition-only" in refused.stderr


# ----------------------------------------------------------------- sssp_method
def compare_module(name: str):
    """A benchmarks/compare_* module, imported as compare.py imports it."""
    import importlib

    sys.path.insert(0, str(REPO / "benchmarks"))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(REPO / "benchmarks"))


def test_sssp_method_is_read_at_top_level_and_per_graph(tmp_path):
    pytest.importorskip("yaml")
    compare_experiment = compare_module("compare_experiment")
    graphs = (f"graphs:\n  - {{path: {DATA / 'minnesota.mtx.gz'}, name: minnesota}}\n"
              f"  - {{path: {DATA / 'minnesota.mtx.gz'}, name: own, sssp_method: frontier}}\n"
              "k: [4]\npartitioners: [metis]\n")
    default = compare_experiment.load_experiment(write_experiment(tmp_path, graphs))
    assert default.sssp_method == "frontier"
    assert [g.sssp_method for g in default.graphs] == ["frontier", "frontier"]

    exp = compare_experiment.load_experiment(write_experiment(tmp_path, graphs + "sssp_method: boundary-graph\n"))
    assert exp.sssp_method == "boundary-graph"
    assert [g.sssp_method for g in exp.graphs] == ["boundary-graph", "frontier"]  # the graph's own value wins
    configs = compare_experiment.configurations(exp)
    assert [exp.settings_for(c)["sssp_method"] for c in configs] == ["boundary-graph", "frontier"]
    assert exp.settings_for(configs[0]) == {"backend": "auto", "dtype": "float32", "output": "none",
                                            "repetitions": 3, "check_samples": 4, "seed": 42, "imbalance": 0.03,
                                            "sssp_method": "boundary-graph"}


def test_bad_sssp_method_is_an_error(tmp_path):
    pytest.importorskip("yaml")
    compare_experiment = compare_module("compare_experiment")
    path = write_experiment(tmp_path, TINY + "sssp_method: dijkstra\n")
    with pytest.raises(compare_experiment.ExperimentError) as top:
        compare_experiment.load_experiment(path)
    assert str(top.value) == f"{path}: sssp_method: 'dijkstra' is not one of frontier, boundary-graph"

    path = write_experiment(tmp_path, TINY.replace("name: minnesota}", "name: minnesota, sssp_method: auto}"))
    with pytest.raises(compare_experiment.ExperimentError) as per_graph:
        compare_experiment.load_experiment(path)
    assert str(per_graph.value) == f"{path}: graphs[0]: sssp_method: 'auto' is not one of frontier, boundary-graph"

    result = run_compare(path, "--out", tmp_path / "out")  # the command: one line, exit status 2
    assert result.returncode == 2 and result.stderr.strip().splitlines() == [
        f"compare.py: error: {per_graph.value}"]
    assert not (tmp_path / "out").exists()


def test_old_record_without_sssp_method_is_a_frontier_result(tmp_path):
    """A stored result whose settings lack sssp_method (made before the key) counts as done for a
    frontier experiment, not for a boundary-graph one; its saved partition serves both."""
    pytest.importorskip("yaml")
    compare_experiment = compare_module("compare_experiment")
    compare_run = compare_module("compare_run")
    old_settings = {"backend": "numpy", "dtype": "float32", "output": "none", "repetitions": 1,
                    "check_samples": 6, "seed": 3, "imbalance": 0.03}
    (tmp_path / "partitions").mkdir()
    (tmp_path / "partitions" / "saved.npz").write_bytes(b"")
    old = {"key": "minnesota/k=4/metis", "status": "ok", "settings": old_settings,
           "partition_file": "partitions/saved.npz"}
    frontier = compare_experiment.load_experiment(write_experiment(tmp_path, TINY))
    boundary = compare_experiment.load_experiment(write_experiment(tmp_path, TINY + "sssp_method: boundary-graph\n"))
    for exp, done in ((frontier, True), (boundary, False)):
        settings = exp.settings_for(compare_experiment.configurations(exp)[0])
        assert compare_run.is_done(old, settings) is done
        assert compare_run.is_partitioned(old, settings, tmp_path) is True
        # A record made with the method in its settings is done only for that method.
        assert compare_run.is_done({**old, "settings": {**old_settings, "sssp_method": "boundary-graph"}},
                                   settings) is (not done)
    settings = frontier.settings_for(compare_experiment.configurations(frontier)[0])
    assert compare_run.is_done({**old, "settings": {**old_settings, "seed": 4}}, settings) is False


@pytest.fixture(scope="module")
def boundary_graph_run(tmp_path_factory):
    """The tiny experiment solved with the boundary-graph method."""
    needs_libraries()
    tmp = tmp_path_factory.mktemp("boundary-graph")
    experiment = write_experiment(tmp, TINY + "sssp_method: boundary-graph\n")
    out = tmp / "out"
    result = run_compare(experiment, "--out", out)
    assert result.returncode == 0, result.stderr
    return experiment, out


def test_boundary_graph_run_is_exact(boundary_graph_run):
    _, out = boundary_graph_run
    records = json.loads((out / "results.json").read_text())
    assert [r["partitioner"] for r in records] == list(PARTITIONERS)
    for r in records:
        assert r["status"] == "ok" and r["sssp_method"] == "boundary-graph"
        assert r["settings"]["sssp_method"] == "boundary-graph"
        assert r["exact"] is True and r["max_abs_error"] == 0.0 and r["checked_rows"] == 6
        # The boundary rows came from the boundary graph: no boundary SSSP was run.
        assert r["stages"]["sssp"] == 0.0
        assert r["stages"]["local_fw"] > 0 and r["stages"]["boundary_graph"] > 0
    with open(out / "results.csv") as fh:
        assert [row["sssp_method"] for row in csv.DictReader(fh)] == ["boundary-graph"] * 2
    report = (out / "report.md").read_text()
    section = report.split("## minnesota", 1)[1]
    assert section.split("\n| k |", 1)[0].strip().endswith("Solves: boundary-graph method.")
    assert "| total s | exact |\n" in section  # one method: no method column


def test_frontier_run_says_so(finished):
    out, _, _, _ = finished
    records = json.loads((out / "results.json").read_text())
    assert [(r["sssp_method"], r["settings"]["sssp_method"]) for r in records] == [("frontier", "frontier")] * 2
    assert all(r["stages"]["sssp"] > 0 and r["stages"]["boundary_graph"] == 0.0 for r in records)
    with open(out / "results.csv") as fh:
        assert [row["sssp_method"] for row in csv.DictReader(fh)] == ["frontier"] * 2
    assert "Solves: frontier method." in (out / "report.md").read_text()


def test_old_results_are_kept_for_frontier_and_solved_again_for_boundary_graph(finished, tmp_path):
    """results.json written before sssp_method (frontier results, no sssp_method anywhere): a frontier
    experiment skips them, a boundary-graph one solves them again with the saved partitions."""
    out, _, _, before = finished
    copy = tmp_path / "out"
    (copy / "partitions").mkdir(parents=True)
    for f in (out / "partitions").iterdir():
        (copy / "partitions" / f.name).write_bytes(f.read_bytes())
    records = json.loads(before)
    for r in records:
        del r["sssp_method"], r["settings"]["sssp_method"]
    old = json.dumps(records)
    (copy / "results.json").write_text(old)

    frontier = run_compare(write_experiment(tmp_path, TINY), "--out", copy)
    assert frontier.returncode == 0, frontier.stderr
    assert "[1/2] minnesota k=4 metis: done (in results.json), skipped" in frontier.stderr
    assert "[2/2] minnesota k=4 kahip-fast: done (in results.json), skipped" in frontier.stderr
    assert (copy / "results.json").read_text() == old
    with open(copy / "results.csv") as fh:
        assert [row["sssp_method"] for row in csv.DictReader(fh)] == ["frontier"] * 2
    assert "Solves: frontier method." in (copy / "report.md").read_text()

    boundary = run_compare(write_experiment(tmp_path, TINY + "sssp_method: boundary-graph\n"), "--out", copy)
    assert boundary.returncode == 0, boundary.stderr
    assert "[1/2] minnesota k=4 metis: cut=" in boundary.stderr and "(saved), solve" in boundary.stderr
    after = json.loads((copy / "results.json").read_text())
    for r, was in zip(after, records):
        assert r["sssp_method"] == r["settings"]["sssp_method"] == "boundary-graph"
        assert r["exact"] is True and r["partition_reused"] is True
        assert r["edge_cut"] == was["edge_cut"] and r["partition_file"] == was["partition_file"]


def test_report_with_two_methods_in_one_graph_has_a_method_column(boundary_graph_run, tmp_path):
    experiment, out = boundary_graph_run
    copy = tmp_path / "out"
    copy.mkdir()
    records = json.loads((out / "results.json").read_text())
    records[1]["sssp_method"] = "frontier"
    (copy / "results.json").write_text(json.dumps(records))
    result = run_compare(experiment, "--out", copy, "--report-only")
    assert result.returncode == 0, result.stderr
    report = (copy / "report.md").read_text()
    assert "Solves: boundary-graph and frontier methods (*method* column)." in report
    assert "| total s | exact | method |\n|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|\n" in report
    rows = [line for line in report.splitlines() if line.startswith("| 4 |")]
    assert [row.rsplit("|", 2)[1].strip() for row in rows] == ["boundary-graph", "frontier"]
