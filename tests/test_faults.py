"""Faults: a rank that raises, runs out of memory, dies or is signalled ends the job promptly and cleanly.

Faults are injected by ``tests/fault_driver.py``, which replaces one stage on one
rank, in the stages of both ways of making the boundary rows (``--sssp-method
frontier`` and ``boundary-graph``).  Every launcher run has a timeout, so a hang
fails the test instead of CI; a job must end within ``JOB_LIMIT`` seconds.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import fault_driver
from cli_util import DATA, cli_env, find_mpiexec, run_cli
from fastapsp.cli import main
from fastapsp.errors import PartitionError
from fastapsp.io import read_graph
from fastapsp.partition import load_partition, partition_graph, save_partition
from fastapsp.sink import check_result, sidecar_path

MINNESOTA = DATA / "minnesota.mtx.gz"
DRIVER = Path(__file__).with_name("fault_driver.py")
JOB_LIMIT = 30  # seconds a failing job may take (the bound); the launcher runs get twice that to report
METHOD_STAGES = [(method, stage) for method, stages in fault_driver.METHOD_STAGES.items() for stage in stages]


def driver_cmd(faults, *args, ranks=None, launcher_flags=()):
    cmd = [sys.executable, str(DRIVER), *faults, "--", *map(str, args)]
    return [find_mpiexec(), *launcher_flags, "-n", str(ranks), *cmd] if ranks else cmd


def run_driver(faults, *args, ranks=None, env=None, launcher_flags=()):
    return subprocess.run(driver_cmd(faults, *args, ranks=ranks, launcher_flags=launcher_flags),
                          capture_output=True, text=True, timeout=2 * JOB_LIMIT, env=env or cli_env())


def error_lines(stderr):
    return [line for line in stderr.splitlines() if line.startswith("fastapsp: error")]


def leftovers(folder):
    return sorted(p.name for p in Path(folder).glob("*.tmp*"))


def job_env(tmp_path, **extra):
    """The environment of a run whose job folders (fastapsp.watch) go to ``tmp_path / "tmp"``."""
    (tmp_path / "tmp").mkdir(exist_ok=True)
    return dict(cli_env(), TMPDIR=str(tmp_path / "tmp"), **extra)


def job_folders(tmp_path):
    return sorted(p.name for p in (tmp_path / "tmp").glob("fastapsp-job-*"))


# ------------------------------------------------------------- one process
@pytest.mark.parametrize("mode", ["raise", "oom"])
@pytest.mark.parametrize("method, stage", METHOD_STAGES)
def test_serial_stage_failure_is_one_line_naming_component_and_stage(tmp_path, monkeypatch, capsys, method,
                                                                     stage, mode):
    fault_driver.inject(f"0:{mode}:{stage}", monkeypatch.setattr)
    out = tmp_path / "d.npy"
    code = main(["solve", str(MINNESOTA), "-k", "4", "--output", str(out), "--backend", "numpy",
                 "--sssp-method", method, "--quiet"])
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert code != 0 and len(lines) == 1 and "Traceback" not in lines[0], lines
    assert lines[0].startswith("fastapsp: error: ") and f"stage {stage}:" in lines[0]
    assert bool(re.search(r"components? \d", lines[0])) == (stage not in fault_driver.SHARED_STAGES), lines[0]
    words = ["RuntimeError", "injected failure"] if mode == "raise" else ["MemoryError", "Out of memory"]
    assert all(word in lines[0] for word in words), lines[0]
    assert not out.exists() and leftovers(tmp_path) == []


def test_serial_process_killed_leaves_a_temporary_that_the_next_run_removes(tmp_path):
    out = tmp_path / "d.npy"
    proc = run_driver(["0:kill:floyd_warshall"], "solve", MINNESOTA, "-k", 4, "--output", out,
                      "--backend", "numpy", "--sssp-method", "frontier")
    assert proc.returncode == -signal.SIGKILL
    stale = leftovers(tmp_path)
    assert len(stale) == 1 and not out.exists()  # nobody was left to remove it
    proc = run_cli("solve", MINNESOTA, "-k", 4, "--output", out, "--backend", "numpy", timeout=2 * JOB_LIMIT)
    assert proc.returncode == 0, proc.stderr
    warning = [line for line in proc.stderr.splitlines() if "warning" in line]
    assert len(warning) == 1 and stale[0] in warning[0] and "died" in warning[0], proc.stderr
    assert leftovers(tmp_path) == []
    check_result(out, expect={"graph_checksum": read_graph(MINNESOTA).checksum()})


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_serial_signal_removes_the_temporary_file(tmp_path, sig):
    env = dict(cli_env(), READY_FILE=str(tmp_path / "ready"))
    out = tmp_path / "d.npy"
    proc = subprocess.Popen(driver_cmd(["0:hang:floyd_warshall"], "solve", MINNESOTA, "-k", 4, "--output", out,
                                       "--backend", "numpy", "--sssp-method", "frontier"),
                            stderr=subprocess.PIPE, text=True, env=env)
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
    assert not (tmp_path / "d.npy.lock").exists()


def wait_for(path, proc, limit=JOB_LIMIT):
    start = time.monotonic()
    while not Path(path).exists():
        assert proc.poll() is None, "the run ended before reaching the fault"
        assert time.monotonic() - start < limit, f"{path} never appeared"
        time.sleep(0.1)


# ----------------------------------------------------------------- MPI runs
def run_failing_job(tmp_path, method, stage, mode, failing, *, launcher_flags=(), **env):
    """Two ranks: ``failing`` does ``mode`` in ``stage``, the other is stuck in its min-plus.

    The other rank never finishes, so only the fault handling can end the job.
    ``env`` adds environment variables.  Returns the finished process and the
    seconds it took.
    """
    other = 1 - failing
    start = time.monotonic()
    proc = run_driver([f"{failing}:{mode}:{stage}", f"{other}:hang:min_plus"], "solve", MINNESOTA, "-k", 4,
                      "--output", tmp_path / "d.npy", "--backend", "numpy", "--sssp-method", method, ranks=2,
                      env=job_env(tmp_path, **env), launcher_flags=launcher_flags)
    return proc, time.monotonic() - start


def assert_ended_cleanly(tmp_path, proc, seconds):
    assert proc.returncode != 0 and "Traceback" not in proc.stderr, proc.stderr
    assert seconds < JOB_LIMIT, f"the job took {seconds:.1f} s"
    assert leftovers(tmp_path) == [] and not (tmp_path / "d.npy").exists()
    assert job_folders(tmp_path) == []


@pytest.mark.mpi
@pytest.mark.skipif(find_mpiexec() is None, reason="no mpiexec")
@pytest.mark.parametrize("mode", ["raise", "oom", "kill"])
@pytest.mark.parametrize("method, stage", METHOD_STAGES)
def test_rank_fault_ends_the_job_with_one_message(tmp_path, method, stage, mode):
    failing = fault_driver.METHOD_STAGES[method].index(stage) % 2  # both ranks take a turn
    proc, seconds = run_failing_job(tmp_path, method, stage, mode, failing)
    assert_ended_cleanly(tmp_path, proc, seconds)
    lines = error_lines(proc.stderr)
    assert len(lines) == 1, (proc.returncode, proc.stdout, proc.stderr)
    assert f"rank {failing} of 2" in lines[0] and f"stage {stage}" in lines[0], lines[0]
    assert bool(re.search(r"components? \d", lines[0])) == (stage not in fault_driver.SHARED_STAGES), lines[0]
    phase = "closing the components" if stage == "local_fw" else "computing the components"
    assert f"during {phase}: " in lines[0], lines[0]
    words = {"raise": ["failed", "RuntimeError", "injected failure"], "oom": ["failed", "MemoryError", "Out of memory"],
             "kill": ["was killed by SIGKILL", "out-of-memory killer"]}[mode]
    assert all(word in lines[0] for word in words), lines[0]


@pytest.mark.mpi
@pytest.mark.skipif(find_mpiexec() is None, reason="no mpiexec")
def test_crash_in_native_code_is_named_like_a_kill(tmp_path):
    proc, seconds = run_failing_job(tmp_path, "frontier", "floyd_warshall", "segv", 1)
    assert_ended_cleanly(tmp_path, proc, seconds)
    lines = error_lines(proc.stderr)
    assert len(lines) == 1 and "rank 1 of 2" in lines[0] and "was killed by SIGSEGV" in lines[0], proc.stderr
    assert "stage floyd_warshall" in lines[0] and "out-of-memory" not in lines[0]


def _hydra():
    path = find_mpiexec()
    if path is None:
        return False
    proc = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30)
    return "HYDRA" in proc.stdout


@pytest.mark.mpi
@pytest.mark.skipif(not _hydra(), reason="needs MPICH's hydra mpiexec (-disable-auto-cleanup)")
def test_watchdog_ends_a_job_the_launcher_leaves_running(tmp_path):
    # With -disable-auto-cleanup hydra leaves the other ranks running when the killed rank's supervisor
    # exits, as srun without --kill-on-bad-exit does: the watchdog of the rank beside it must end the job.
    # (Without a supervisor hydra's fault-tolerance mode may SIGKILL the survivor itself; the watchdog
    # alone is tested without a launcher in test_watch.py.)
    proc, seconds = run_failing_job(tmp_path, "boundary-graph", "assemble", "kill", 1,
                                    launcher_flags=["-disable-auto-cleanup"])
    assert_ended_cleanly(tmp_path, proc, seconds)
    lines = error_lines(proc.stderr)
    assert len(lines) == 1 and "rank 1 of 2" in lines[0] and "stage assemble" in lines[0], proc.stderr
    assert "was killed by SIGKILL" in lines[0]


@pytest.mark.mpi
@pytest.mark.skipif(find_mpiexec() is None, reason="no mpiexec")
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signal_to_the_launcher_stops_every_rank_and_removes_temporaries(tmp_path, sig):
    env = job_env(tmp_path, READY_FILE=str(tmp_path / "ready"))
    out = tmp_path / "d.npy"
    proc = subprocess.Popen(driver_cmd(["0:hang:floyd_warshall", "1:hang:floyd_warshall"], "solve", MINNESOTA,
                                       "-k", 4, "--output", out, "--backend", "numpy", "--sssp-method", "frontier",
                                       ranks=2),
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
    assert "stopped by" in stderr and not error_lines(stderr), stderr
    assert leftovers(tmp_path) == [] and not out.exists() and job_folders(tmp_path) == []


# ------------------------------------------------------- sidecar and checks
def test_the_sidecar_metadata_is_made_for_a_result_file_only(tmp_path, monkeypatch):
    """The checksums of the graph and of the labels (SHA-256 over every arc) are made for a ``.npy``'s
    sidecar; a run to none or to memory has no sidecar and does not make them."""
    import fastapsp.execute as execute

    made = []
    real = execute.result_metadata
    monkeypatch.setattr(execute, "result_metadata", lambda *args, **kwargs: made.append(1) or real(*args, **kwargs))
    for output in ("none", "memory"):
        assert main(["solve", str(MINNESOTA), "-k", "4", "--output", output, "--backend", "numpy", "--quiet"]) == 0
    assert made == []
    out = tmp_path / "d.npy"
    assert main(["solve", str(MINNESOTA), "-k", "4", "--output", str(out), "--backend", "numpy", "--quiet"]) == 0
    assert made == [1] and check_result(out, expect={"graph_checksum": read_graph(MINNESOTA).checksum()})


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
