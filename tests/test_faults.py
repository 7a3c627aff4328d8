"""Faults: a rank that raises, runs out of memory, dies or is signalled ends the job promptly and cleanly.

Faults are injected by ``tests/fault_driver.py``, which replaces one stage on one
rank.  Every launcher run has a timeout, so a hang fails the test instead of CI.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from cli_util import DATA, cli_env, find_mpiexec, run_cli
from fastapsp.errors import PartitionError
from fastapsp.io import read_graph
from fastapsp.partition import load_partition, partition_graph, save_partition
from fastapsp.sink import check_result, sidecar_path

MINNESOTA = DATA / "minnesota.mtx.gz"
DRIVER = Path(__file__).with_name("fault_driver.py")
JOB_LIMIT = 60  # seconds a failing job may take before the test calls it a hang (the issue allows 30 s of it)

def driver_cmd(faults, *args, ranks=None):
    cmd = [sys.executable, str(DRIVER), *faults, "--", *map(str, args)]
    return [find_mpiexec(), "-n", str(ranks), *cmd] if ranks else cmd


def run_driver(faults, *args, ranks=None, env=None):
    return subprocess.run(driver_cmd(faults, *args, ranks=ranks), capture_output=True, text=True,
                          timeout=JOB_LIMIT, env=env or cli_env())


def error_lines(stderr):
    return [line for line in stderr.splitlines() if line.startswith("fastapsp: error")]


def leftovers(folder):
    return sorted(p.name for p in Path(folder).glob("*.tmp*"))


# ------------------------------------------------------------- one process
def test_serial_stage_failure_names_component_and_stage(tmp_path):
    out = tmp_path / "d.npy"
    proc = run_driver(["0:raise:floyd_warshall"], "solve", MINNESOTA, "-k", 4, "--output", out,
                      "--backend", "numpy")
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    lines = error_lines(proc.stderr)
    assert len(lines) == 1 and "component" in lines[0] and "stage floyd_warshall" in lines[0], proc.stderr
    assert "injected failure" in lines[0]
    assert not out.exists() and leftovers(tmp_path) == []


def test_serial_out_of_memory_is_one_line(tmp_path):
    proc = run_driver(["0:oom:min_plus"], "solve", MINNESOTA, "-k", 4, "--output", tmp_path / "d.npy",
                      "--backend", "numpy")
    lines = error_lines(proc.stderr)
    assert proc.returncode != 0 and len(lines) == 1, proc.stderr
    assert "stage min_plus" in lines[0] and "MemoryError" in lines[0] and "Out of memory" in lines[0]
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_serial_signal_removes_the_temporary_file(tmp_path, sig):
    env = dict(cli_env(), READY_FILE=str(tmp_path / "ready"))
    out = tmp_path / "d.npy"
    proc = subprocess.Popen(driver_cmd(["0:hang:floyd_warshall"], "solve", MINNESOTA, "-k", 4, "--output", out,
                                       "--backend", "numpy"), stderr=subprocess.PIPE, text=True, env=env)
    try:
        wait_for(tmp_path / "ready.0", proc)
        assert len(leftovers(tmp_path)) == 1  # the output is being written
        proc.send_signal(sig)
        _, stderr = proc.communicate(timeout=JOB_LIMIT)
    finally:
        proc.kill()
    assert proc.returncode == 128 + sig, stderr
    assert f"stopped by {signal.Signals(sig).name}" in stderr and "Traceback" not in stderr
    assert leftovers(tmp_path) == [] and not out.exists()


def wait_for(path, proc, limit=JOB_LIMIT):
    start = time.monotonic()
    while not Path(path).exists():
        assert proc.poll() is None, "the run ended before reaching the fault"
        assert time.monotonic() - start < limit, f"{path} never appeared"
        time.sleep(0.1)


# ----------------------------------------------------------------- MPI runs
@pytest.mark.parametrize("mode, stage, words", [
    ("raise", "floyd_warshall", ["RuntimeError", "injected failure"]),
    ("oom", "min_plus", ["MemoryError", "Out of memory"]),
    ("raise", "sssp", ["RuntimeError"]),
])
@pytest.mark.parametrize("failing", [0, 1])
@pytest.mark.mpi
@pytest.mark.skipif(find_mpiexec() is None, reason="no mpiexec")
def test_rank_failure_ends_the_job_with_one_message(tmp_path, mode, stage, words, failing):
    other = 1 - failing
    out = tmp_path / "d.npy"
    # The other rank is stuck in its work: only an abort can end the job in time.
    proc = run_driver([f"{failing}:{mode}:{stage}", f"{other}:hang:floyd_warshall"], "solve", MINNESOTA,
                      "-k", 4, "--output", out, "--backend", "numpy", ranks=2)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    lines = error_lines(proc.stderr)
    assert len(lines) == 1, proc.stderr
    assert f"rank {failing} of 2" in lines[0] and "component" in lines[0] and f"stage {stage}" in lines[0]
    for word in words:
        assert word in lines[0], lines[0]
    assert leftovers(tmp_path) == [] and not out.exists()


@pytest.mark.mpi
@pytest.mark.skipif(find_mpiexec() is None, reason="no mpiexec")
def test_killed_rank_ends_the_job_and_the_next_run_cleans_up(tmp_path):
    out = tmp_path / "d.npy"
    proc = run_driver(["1:kill:floyd_warshall", "0:hang:floyd_warshall"], "solve", MINNESOTA, "-k", 4,
                      "--output", out, "--backend", "numpy", ranks=2)
    assert proc.returncode != 0
    stale = leftovers(tmp_path)
    assert len(stale) == 1 and not out.exists()  # nobody was left to remove it
    proc = run_cli("solve", MINNESOTA, "-k", 4, "--output", out, "--backend", "numpy", ranks=2, timeout=JOB_LIMIT)
    assert proc.returncode == 0, proc.stderr
    warning = [line for line in proc.stderr.splitlines() if "warning" in line]
    assert len(warning) == 1 and stale[0] in warning[0] and "died" in warning[0], proc.stderr
    assert leftovers(tmp_path) == []
    check_result(out, expect={"graph_checksum": read_graph(MINNESOTA).checksum()})


@pytest.mark.mpi
@pytest.mark.skipif(find_mpiexec() is None, reason="no mpiexec")
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signal_to_the_launcher_stops_every_rank_and_removes_temporaries(tmp_path, sig):
    env = dict(cli_env(), READY_FILE=str(tmp_path / "ready"))
    out = tmp_path / "d.npy"
    proc = subprocess.Popen(driver_cmd(["0:hang:floyd_warshall", "1:hang:floyd_warshall"], "solve", MINNESOTA,
                                       "-k", 4, "--output", out, "--backend", "numpy", ranks=2),
                            stderr=subprocess.PIPE, text=True, env=env, start_new_session=True)
    try:
        wait_for(tmp_path / "ready.0", proc)
        wait_for(tmp_path / "ready.1", proc)
        proc.send_signal(sig)
        _, stderr = proc.communicate(timeout=JOB_LIMIT)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode != 0, stderr
    assert "stopped by" in stderr, stderr
    assert leftovers(tmp_path) == [] and not out.exists()


# ------------------------------------------------------- sidecar and checks
def test_sidecar_tells_complete_from_partial_and_foreign(tmp_path):
    out = tmp_path / "d.npy"
    proc = run_cli("solve", MINNESOTA, "-k", 4, "--output", out, "--backend", "numpy")
    assert proc.returncode == 0, proc.stderr
    record = json.loads(Path(sidecar_path(out)).read_text())
    graph = read_graph(MINNESOTA)
    for key in ("graph_checksum", "dtype", "unreachable", "version", "k", "partitioner", "seed", "bytes", "n"):
        assert key in record, key
    assert record["graph_checksum"] == graph.checksum() and record["dtype"] == str(np.load(out).dtype)
    assert check_result(out, expect={"graph_checksum": graph.checksum(), "n": graph.n})["k"] == 4
    with pytest.raises(ValueError, match="graph_checksum"):
        check_result(out, expect={"graph_checksum": "0" * 32})  # a result of another graph
    with open(out, "r+b") as fh:  # a partial file
        fh.truncate(os.path.getsize(out) - 1000)
    with pytest.raises(ValueError, match="partial or replaced"):
        check_result(out)
    os.remove(sidecar_path(out))
    with pytest.raises(ValueError, match="no sidecar"):
        check_result(out)


def test_other_weights_give_another_checksum(tmp_path):
    a = tmp_path / "a.mtx"
    b = tmp_path / "b.mtx"
    a.write_text("%%MatrixMarket matrix coordinate integer general\n3 3 2\n1 2 5\n2 3 1\n")
    b.write_text("%%MatrixMarket matrix coordinate integer general\n3 3 2\n1 2 5\n2 3 2\n")
    assert read_graph(a).checksum() != read_graph(b).checksum()


def test_partition_file_checked_against_graph_and_damage(tmp_path):
    graph = read_graph(MINNESOTA)
    path = tmp_path / "p.npz"
    save_partition(path, graph, partition_graph(graph, 4))
    assert load_partition(path, graph, 4).k == 4
    with pytest.raises(PartitionError, match="k=4"):
        load_partition(path, graph, 5)
    other = read_graph(DATA / "cal.cedge.gz")
    with pytest.raises(PartitionError, match="another graph"):
        load_partition(path, other)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])  # a partition file cut short
    with pytest.raises(PartitionError, match="p.npz"):
        load_partition(path, graph, 4)
