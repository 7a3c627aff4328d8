"""benchmarks/compare.py with refined partitioners (NAME+b) and the split into compare_* modules."""

from __future__ import annotations

import csv
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import DATA

REPO = Path(__file__).resolve().parent.parent
COMPARE = REPO / "benchmarks" / "compare.py"


def test_partition_only_reports_boundary_before_and_after(tmp_path):
    pytest.importorskip("pymetis")
    pytest.importorskip("yaml")
    experiment = tmp_path / "refine.yaml"
    experiment.write_text(f"graphs:\n  - {{path: {DATA / 'minnesota.mtx.gz'}, name: minnesota}}\n"
                          "k: [4]\npartitioners: [metis, metis+b]\nbackend: numpy\nrepetitions: 1\n")
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, str(COMPARE), str(experiment), "--out", str(out), "--partition-only"],
                          capture_output=True, text=True, timeout=120, cwd=REPO)
    assert done.returncode == 0, done.stderr
    records = {r["partitioner"]: r for r in json.loads((out / "results.json").read_text())}
    assert records["metis"]["boundary_vertices_before_refine"] is None
    refined = records["metis+b"]
    # The refinement starts from the same METIS partition (same seed) and never adds boundary vertices.
    assert refined["boundary_vertices_before_refine"] == records["metis"]["boundary_vertices"]
    assert refined["boundary_vertices"] <= refined["boundary_vertices_before_refine"]
    rows = {row["partitioner"]: row for row in csv.DictReader((out / "results.csv").open())}
    assert rows["metis+b"]["boundary_vertices_before_refine"] == str(refined["boundary_vertices_before_refine"])
    report = (out / "report.md").read_text()
    assert "## Boundary refinement" in report
    line = next(x for x in report.splitlines() if x.startswith("| minnesota | 4 | metis+b |"))
    assert f"| {refined['boundary_vertices_before_refine']:,} | {refined['boundary_vertices']:,} |" in line
    (out / "report.md").unlink()
    again = subprocess.run([sys.executable, str(COMPARE), str(experiment), "--out", str(out), "--report-only"],
                           capture_output=True, text=True, timeout=120, cwd=REPO)
    assert again.returncode == 0, again.stderr
    assert (out / "report.md").read_text() == report  # nothing recomputed, the same report
    if importlib.util.find_spec("matplotlib"):  # the before/after plot needs no solve
        assert (out / "boundary_refinement.png").stat().st_size > 0
        assert "boundary_refinement.png" in report


def test_all_means_the_cpu_partitioners_without_refinement():
    sys.path.insert(0, str(REPO / "benchmarks"))
    try:
        from compare_experiment import ALL_PARTITIONERS
    finally:
        sys.path.remove(str(REPO / "benchmarks"))
    assert "metis" in ALL_PARTITIONERS and "kaminpar" in ALL_PARTITIONERS
    assert "jet" not in ALL_PARTITIONERS
    assert not any(p.endswith("+b") for p in ALL_PARTITIONERS)


def test_scale_experiment_loads():
    pytest.importorskip("yaml")
    sys.path.insert(0, str(REPO / "benchmarks"))
    try:
        from compare_experiment import load_experiment
    finally:
        sys.path.remove(str(REPO / "benchmarks"))
    exp = load_experiment(REPO / "benchmarks" / "experiments" / "scale.yaml")
    names = [g.name for g in exp.graphs + exp.missing]
    assert sorted(names) == sorted(["roadNY", "delaunay_n17", "roadFLA", "del20-unit", "del20-euclid"])
    assert all(len(g.k) == 2 for g in exp.graphs + exp.missing)
    assert {"jet", "jet+b", "metis", "metis+b", "metis-vol", "kaminpar"} <= set(exp.partitioners)
    assert exp.backend == "cupy"


def test_partition_bench_records_every_partitioner(tmp_path):
    pytest.importorskip("pymetis")
    out = tmp_path / "bench.json"
    done = subprocess.run([sys.executable, str(REPO / "benchmarks" / "partition_bench.py"), "--graph",
                           f"minnesota={DATA / 'minnesota.mtx.gz'}", "--k", "4", "--partitioners", "metis", "metis+b",
                           "--repeat", "2", "--out", str(out)], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert done.returncode == 0, done.stderr
    data = json.loads(out.read_text())
    assert data["metadata"]["commit"]
    plain, refined = data["results"]
    assert (plain["partitioner"], refined["partitioner"]) == ("metis", "metis+b")
    assert len(plain["seconds"]) == 2 and plain["median_seconds"] > 0
    assert refined["boundary_vertices_before_refine"] == plain["boundary_vertices"]
    assert refined["boundary_vertices"] <= plain["boundary_vertices"]
    bad = subprocess.run([sys.executable, str(REPO / "benchmarks" / "partition_bench.py"), "--graph", "x=nowhere",
                          "--k", "4", "--out", str(out)], capture_output=True, text=True, timeout=60, cwd=REPO)
    assert bad.returncode == 2 and "--graph" in bad.stderr
