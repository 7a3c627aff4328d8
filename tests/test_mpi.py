"""Real launcher runs: several ranks write the same file as one process, and never hang."""

import numpy as np
import pytest

from cli_util import DATA, find_mpiexec, run_cli
from test_cli import BAD_INPUTS

pytestmark = [
    pytest.mark.mpi,
    pytest.mark.skipif(find_mpiexec() is None, reason="no mpiexec (install the 'mpi' extra)"),
]

MINNESOTA = DATA / "minnesota.mtx.gz"


@pytest.fixture(scope="module")
def serial_result(tmp_path_factory):
    out = tmp_path_factory.mktemp("serial") / "d.npy"
    proc = run_cli("solve", MINNESOTA, "-k", 9, "--output", out, "--backend", "numpy")
    assert proc.returncode == 0, proc.stderr
    return np.load(out)


@pytest.mark.parametrize("ranks", [2, 3])
def test_ranks_write_the_same_file(tmp_path, serial_result, ranks):
    out, report = tmp_path / "d.npy", tmp_path / "r.json"
    proc = run_cli("solve", MINNESOTA, "-k", 9, "--output", out, "--backend", "numpy", "--report", report,
                   ranks=ranks)
    assert proc.returncode == 0, proc.stderr
    assert len(proc.stdout.strip().splitlines()) == 1, proc.stdout
    np.testing.assert_array_equal(np.load(out), serial_result)
    assert f'"ranks": {ranks}' in report.read_text()
    assert not list(tmp_path.glob("*.tmp*"))


@pytest.mark.parametrize("ranks", [2, 3])
def test_ranks_partitioning_in_pieces_write_the_same_file(tmp_path, serial_result, ranks):
    """--parallel-partition on: another partition (one piece a rank), the same distances."""
    import json

    out, report = tmp_path / "d.npy", tmp_path / "r.json"
    proc = run_cli("solve", MINNESOTA, "-k", 9, "--output", out, "--backend", "numpy", "--report", report,
                   "--parallel-partition", "on", "--partitioner", "metis", ranks=ranks)
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_array_equal(np.load(out), serial_result)
    pieces = json.loads(report.read_text())["partition_pieces"]
    assert pieces["ranks"] == ranks and sum(pieces["vertices"]) == 2642 and sum(pieces["components"]) == 9


def test_more_ranks_than_components(tmp_path, serial_result):
    small = tmp_path / "small.npy"
    proc = run_cli("solve", MINNESOTA, "-k", 2, "--output", small, "--backend", "numpy", ranks=3)
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_array_equal(np.load(small), serial_result)


@pytest.mark.parametrize("name", sorted(BAD_INPUTS))
def test_bad_input_under_mpi_fails_once_without_hanging(tmp_path, name):
    text, fragment = BAD_INPUTS[name]
    path = tmp_path / name
    path.write_text(text)
    out = tmp_path / "d.npy"
    proc = run_cli("solve", path, "-k", 1, "--output", out, ranks=2, timeout=120)
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    errors = [line for line in proc.stderr.splitlines() if "fastapsp: error" in line]
    assert len(errors) == 1 and fragment in errors[0], proc.stderr
    assert not out.exists()


def test_k_larger_than_n_under_mpi(tmp_path):
    proc = run_cli("solve", MINNESOTA, "-k", 99999, ranks=2, timeout=120)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert sum("fastapsp: error" in line for line in proc.stderr.splitlines()) == 1


def test_failure_on_one_rank_ends_every_rank(tmp_path):
    # A partition file that fails to load is read by rank 0 only: the others must not wait forever.
    bad = tmp_path / "p.npz"
    bad.write_bytes(b"not a partition")
    proc = run_cli("solve", MINNESOTA, "-k", 2, "--partition-file", bad, ranks=2, timeout=120)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert "p.npz" in proc.stderr


@pytest.mark.parametrize("method", ["frontier", "boundary-graph"])
@pytest.mark.parametrize("ranks", [2, 3])
def test_both_boundary_methods_under_mpi(tmp_path, serial_result, method, ranks):
    out, report = tmp_path / "d.npy", tmp_path / "r.json"
    proc = run_cli("solve", MINNESOTA, "-k", 9, "--output", out, "--backend", "numpy", "--sssp-method", method,
                   "--report", report, ranks=ranks)
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_array_equal(np.load(out), serial_result)
    assert f'"sssp_method": "{method}"' in report.read_text()
    if method == "boundary-graph":  # NumPy's closures are slow: the cost model shares the rows
        assert '"local_closures": "each rank closes its share"' in report.read_text()
        assert '"peer_bytes_per_second": null' in report.read_text()  # on the host: no GPUs to copy between


def test_every_rank_closing_every_component_gives_the_same_file(tmp_path, serial_result):
    """A plan where every rank closes every component (no rows travel; each keeps its own), as the
    cost model picks on GPUs; on the CPU it shares the rows (closures are slow there): imposed here."""
    import subprocess
    import sys

    from cli_util import ROOT, cli_env

    out = tmp_path / "d.npy"
    cmd = [find_mpiexec(), "-n", "3", sys.executable, str(ROOT / "tests" / "plan_driver.py"), str(MINNESOTA),
           str(out), "9", "boundary-graph", "close_everywhere=1"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=180, env=cli_env())
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_array_equal(np.load(out), serial_result)
    assert '"local_closures": "every rank closes every component"' in proc.stdout


@pytest.mark.gpu
@pytest.mark.parametrize("ranks", [2, 3])
@pytest.mark.parametrize("everywhere", ["0", "1"])
def test_closures_travel_gpu_to_gpu(tmp_path, serial_result, ranks, everywhere):
    """Ranks of one node (here sharing the GPUs there are) copy the closures from each other's GPU:
    the local closures' rows (unless every rank closes every component) and the upper levels' (small
    limits make several levels of minnesota; a received distance priced at nothing, so the ranks share
    out every super-group: at the real price super-groups this small are closed by every rank); the
    distances of one process."""
    import json
    import subprocess
    import sys

    pytest.importorskip("cupy")
    from cli_util import ROOT, cli_env

    out = tmp_path / "d.npy"
    cmd = [find_mpiexec(), "-n", str(ranks), sys.executable, str(ROOT / "tests" / "plan_driver.py"), str(MINNESOTA),
           str(out), "9", "boundary-graph", f"close_everywhere={everywhere}", "backend=cupy", "dense_limit=20",
           "super_size=12", "receive_cost=0"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=cli_env())
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_array_equal(np.load(out), serial_result)
    said = json.loads(proc.stdout.strip().splitlines()[-1])
    assert said["peer_rate"] and said["peer_rate"] > 0
    levels = said["upper_levels"]  # per rank, per level
    assert len(levels) == ranks and len(levels[0]) >= 2
    assert any(level["received_bytes"] > 0 for mine in levels for level in mine)
    closes = "every rank closes every component" if everywhere == "1" else "each rank closes its share"
    assert said["local_closures"] == closes


@pytest.mark.gpu
def test_a_failing_gpu_to_gpu_copy_sends_the_closures_through_the_host(tmp_path, serial_result):
    """Rank 1's copies from the other GPUs fail (after the rate was measured): every exchange goes
    through the host instead, the job does not fail and the distances are one process's."""
    import json
    import subprocess
    import sys

    pytest.importorskip("cupy")
    from cli_util import ROOT, cli_env

    out = tmp_path / "d.npy"
    cmd = [find_mpiexec(), "-n", "2", sys.executable, str(ROOT / "tests" / "plan_driver.py"), str(MINNESOTA),
           str(out), "9", "boundary-graph", "close_everywhere=0", "backend=cupy", "dense_limit=20",
           "super_size=12", "receive_cost=0", "fail_copy=1"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=cli_env())
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_array_equal(np.load(out), serial_result)
    said = json.loads(proc.stdout.strip().splitlines()[-1])
    assert said["peer_rate"] and said["peer_rate"] > 0  # the plan meant the closures to travel GPU to GPU
    assert any(level["received_bytes"] > 0 for mine in said["upper_levels"] for level in mine)


def test_bad_line_in_the_last_ranks_share_fails_once(tmp_path):
    """The ranks parse a share of the lines each (fastapsp/io/share.py): a bad weight that only the last
    rank's share holds ends every rank, with the one-process message printed once."""
    rng = np.random.default_rng(0)
    lines = [f"{rng.integers(1, 501)} {rng.integers(1, 501)} {rng.integers(1, 9)}" for _ in range(3000)]
    lines[2900] = "5 6 -2"
    path = tmp_path / "late.mtx"
    path.write_text("%%MatrixMarket matrix coordinate real general\n500 500 3000\n" + "\n".join(lines) + "\n")
    proc = run_cli("solve", path, "-k", 2, "--backend", "numpy", ranks=3, timeout=120)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    errors = [line for line in proc.stderr.splitlines() if "fastapsp: error" in line]
    assert len(errors) == 1 and "line 2903" in errors[0] and "negative" in errors[0], proc.stderr
