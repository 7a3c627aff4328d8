"""The command line: results, reports, run files, and one-line errors."""

import gzip
import json

import numpy as np
import pytest
from scipy.sparse.csgraph import shortest_path

import fastapsp
from cli_util import DATA, run_cli

MINNESOTA = DATA / "minnesota.mtx.gz"


def assert_clean_failure(proc, *fragments):
    assert proc.returncode != 0, proc.stdout
    assert "Traceback" not in proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


def test_solve_writes_exact_matrix_and_report(tmp_path):
    out, report = tmp_path / "d.npy", tmp_path / "r.json"
    proc = run_cli("solve", MINNESOTA, "-k", 6, "--output", out, "--report", report, "--backend", "numpy")
    assert proc.returncode == 0, proc.stderr
    assert len(proc.stdout.strip().splitlines()) == 1
    graph = fastapsp.read_graph(MINNESOTA)
    ref = shortest_path(graph.to_scipy(), method="D").astype(np.float32)
    np.testing.assert_array_equal(np.load(out), ref)
    data = json.loads(report.read_text())
    for key in ("n", "m", "directed", "k", "partitioner", "seed", "edge_cut", "boundary_vertices",
                "boundary_ratio", "stages", "total_seconds", "ranks", "backend"):
        assert key in data
    assert data["k"] == 6 and data["n"] == 2642 and data["ranks"] == 1


def test_report_gives_the_upper_levels_and_the_packing(tmp_path):
    report = tmp_path / "r.json"
    proc = run_cli("solve", MINNESOTA, "-k", 60, "--output", "none", "--report", report, "--backend", "numpy",
                   "--sssp-method", "boundary-graph")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(report.read_text())
    assert data["packed_16bit"] is True  # whole-number distances that fit in 16 bits: packed, on the host too
    levels = data["upper_levels"]
    assert levels and [entry["level"] for entry in levels] == list(range(1, len(levels) + 1))
    for entry in levels:
        assert entry["closed_here"] == entry["super_groups"] and entry["received_bytes"] == 0  # one rank
        assert entry["close"] > 0 and entry["exchange"] >= 0 and entry["make"] >= 0


def test_float64_and_config_file_with_flag_override(tmp_path):
    cfg = tmp_path / "run.yaml"
    out = tmp_path / "d.npy"
    cfg.write_text(f"graph: {MINNESOTA}\nk: 3\ndtype: float64\noutput: {tmp_path / 'unused.npy'}\n"
                   "partitioner: kahip-fast\nbackend: numpy\n")
    proc = run_cli("solve", "--config", cfg, "--output", out, "--report", tmp_path / "r.json")
    assert proc.returncode == 0, proc.stderr
    assert np.load(out).dtype == np.float64
    assert not (tmp_path / "unused.npy").exists()
    data = json.loads((tmp_path / "r.json").read_text())
    assert data["k"] == 3 and data["partitioner"] == "kahip-fast"


def test_config_unknown_key_is_an_error(tmp_path):
    cfg = tmp_path / "run.yaml"
    cfg.write_text(f"graph: {MINNESOTA}\nkk: 3\n")
    assert_clean_failure(run_cli("solve", "--config", cfg), "run.yaml", "kk")


def test_partition_command(tmp_path):
    out = tmp_path / "parts.npy"
    proc = run_cli("partition", MINNESOTA, "-k", 4, "--partitioner", "metis", "--output", out,
                   "--report", tmp_path / "p.json")
    assert proc.returncode == 0, proc.stderr
    labels = np.load(out)
    assert labels.shape == (2642,) and set(np.unique(labels)) == {0, 1, 2, 3}
    data = json.loads((tmp_path / "p.json").read_text())
    graph = fastapsp.read_graph(MINNESOTA)
    src, dst, _ = graph.arcs()
    assert data["edge_cut"] == int(np.count_nonzero(labels[src] != labels[dst]) // 2)


def test_info_runs():
    proc = run_cli("info")
    assert proc.returncode == 0, proc.stderr
    assert "fastapsp" in proc.stdout and "GPUs visible" in proc.stdout


BAD_INPUTS = {
    "negative.mtx": ("%%MatrixMarket matrix coordinate real general\n3 3 2\n1 2 1.0\n2 3 -4\n", "line 4"),
    "nan.mtx": ("%%MatrixMarket matrix coordinate real general\n3 3 1\n1 2 nan\n", "line 3"),
    "complex.mtx": ("%%MatrixMarket matrix coordinate complex general\n2 2 1\n1 2 1 0\n", "complex"),
    "skew.mtx": ("%%MatrixMarket matrix coordinate real skew-symmetric\n2 2 1\n2 1 1\n", "skew"),
    "array.mtx": ("%%MatrixMarket matrix array real general\n2 2\n1\n2\n3\n4\n", "array"),
    "nonsquare.mtx": ("%%MatrixMarket matrix coordinate pattern general\n2 3 1\n1 2\n", "square"),
    "range.mtx": ("%%MatrixMarket matrix coordinate pattern general\n3 3 1\n1 9\n", "line 3"),
    "few.mtx": ("%%MatrixMarket matrix coordinate pattern general\n3 3 3\n1 2\n", "3"),
    "many.mtx": ("%%MatrixMarket matrix coordinate pattern general\n3 3 1\n1 2\n2 3\n", "1"),
    "garbled.mtx": ("%%MatrixMarket matrix coordinate real general\n3 3 1\n1 two 3\n", "line 3"),
    "empty.mtx": ("", "empty"),
}


@pytest.mark.parametrize("name", sorted(BAD_INPUTS))
def test_bad_input_one_line_no_output(tmp_path, name):
    text, fragment = BAD_INPUTS[name]
    path = tmp_path / name
    path.write_text(text)
    out = tmp_path / "d.npy"
    proc = run_cli("solve", path, "-k", 1, "--output", out)
    assert_clean_failure(proc, name, fragment)
    assert not out.exists() and not list(tmp_path.glob("*.npy*"))


def test_binary_file_is_rejected(tmp_path):
    path = tmp_path / "bin.mtx"
    path.write_bytes(bytes(range(256)) * 4)
    assert_clean_failure(run_cli("solve", path, "-k", 1), "bin.mtx")


def test_gzip_of_bad_file_names_the_line(tmp_path):
    path = tmp_path / "neg.mtx.gz"
    path.write_bytes(gzip.compress(b"%%MatrixMarket matrix coordinate real symmetric\n2 2 1\n2 1 -1\n"))
    assert_clean_failure(run_cli("solve", path, "-k", 1), "neg.mtx.gz", "line 3")


@pytest.mark.parametrize("args, fragment", [
    (["-k", "0"], "k"),
    (["-k", "5000"], "5000"),
    (["--partitioner", "nope"], "partitioner"),
    (["--backend", "tpu"], "backend"),
    (["--output", "x.csv"], "output"),
    (["--output", "/no/such/dir/x.npy"], "/no/such/dir"),
])
def test_bad_options(args, fragment, tmp_path):
    proc = run_cli("solve", MINNESOTA, *args, cwd=tmp_path)
    assert_clean_failure(proc, fragment)


def test_missing_file():
    assert_clean_failure(run_cli("solve", "/no/such/graph.mtx"), "/no/such/graph.mtx")


def test_partition_file_for_another_graph(tmp_path):
    pfile = tmp_path / "p.npz"
    assert run_cli("solve", MINNESOTA, "-k", 2, "--partition-file", pfile).returncode == 0
    other = tmp_path / "other.mtx"
    other.write_text("%%MatrixMarket matrix coordinate pattern symmetric\n4 4 2\n2 1\n4 3\n")
    assert_clean_failure(run_cli("solve", other, "--partition-file", pfile), "p.npz", "another graph")


def test_srun_without_mpi_plugin_is_refused(tmp_path, monkeypatch):
    from fastapsp.comm import get_comm
    from fastapsp.errors import BackendError

    for var in ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS", "PMI_RANK", "FASTAPSP_MPI"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("SLURM_STEP_NUM_TASKS", "4")
    monkeypatch.setenv("SLURM_PROCID", "0")
    with pytest.raises(BackendError, match="--mpi=pmi2"):
        get_comm()
    monkeypatch.setenv("SLURM_STEP_NUM_TASKS", "1")
    assert get_comm().size == 1


def test_plain_label_partition_file_gives_strict_json(tmp_path):
    labels = tmp_path / "parts.npy"  # made by the user: no sidecar, so no history
    np.save(labels, fastapsp.partition_graph(fastapsp.read_graph(MINNESOTA), 3).labels)
    report = tmp_path / "r.json"
    proc = run_cli("solve", MINNESOTA, "--partition-file", labels, "--report", report)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(report.read_text(), parse_constant=lambda c: pytest.fail(f"non-JSON constant {c}"))
    assert data["k"] == 3 and data["seed"] is None and data["imbalance_allowed"] is None
