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
