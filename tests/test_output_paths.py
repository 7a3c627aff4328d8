"""Two outputs of one run (or an output and the graph) on one path are refused before any work,
in one line, and nothing is written."""

import pytest
from cli_util import DATA, run_cli

from fastapsp.errors import ConfigError
from fastapsp.options import SolveOptions

MINNESOTA = DATA / "minnesota.mtx.gz"


@pytest.mark.parametrize("flags", [
    ("--report", "d.npy", "--output", "d.npy"),
    ("--partition-file", "d.npy", "--output", "d.npy"),
    ("--plan", "d.npy", "--output", "d.npy"),
    ("--report", "d.npy.json", "--output", "d.npy"),  # the output's sidecar
    ("--stats", "s", "--report", "s.json"),
    ("--predecessors", "--output", "d.npy", "--report", "d.predecessors.npy"),
    ("--sources", "0:5", "--output", "d.npy", "--report", "d.sources.npy"),
    ("--plan", "p.npz", "--partition-file", "p.npz"),
])
def test_two_outputs_on_one_path_are_refused_up_front(tmp_path, flags):
    proc = run_cli("solve", MINNESOTA, "-k", 2, "--backend", "numpy", *flags, cwd=tmp_path)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "path of its own" in proc.stderr
    assert list(tmp_path.iterdir()) == []


def test_an_output_on_the_graph_file_is_refused(tmp_path):
    graph = tmp_path / "g.mtx"
    graph.write_text("%%MatrixMarket matrix coordinate real general\n2 2 1\n1 2 1\n")
    with pytest.raises(ConfigError, match="graph"):
        SolveOptions(graph=str(graph), report=str(graph)).check()
    assert graph.read_text().startswith("%%MatrixMarket")


def test_partition_labels_and_report_on_one_path_are_refused(tmp_path):
    proc = run_cli("partition", MINNESOTA, "-k", 2, "--output", "p.npy", "--report", "p.npy", cwd=tmp_path)
    assert proc.returncode != 0 and "path of its own" in proc.stderr and "Traceback" not in proc.stderr
    assert list(tmp_path.iterdir()) == []


def test_distinct_paths_still_run(tmp_path):
    proc = run_cli("solve", MINNESOTA, "-k", 2, "--backend", "numpy", "--output", "d.npy", "--report", "r.json",
                   "--stats", "s", "--partition-file", "p.npz", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert {p.name for p in tmp_path.iterdir()} >= {"d.npy", "d.npy.json", "r.json", "s.json", "s.npz", "p.npz"}
