"""Writing the result file: one run at a time per path, the disk space reserved before the work, the
sidecar written before the data is published; nothing left behind when any of it fails."""

import errno
import fcntl
import json
import os

import numpy as np
import pytest
from cli_util import DATA, run_cli

import fastapsp.sink as sink_module
from fastapsp.comm import SerialComm
from fastapsp.options import SolveOptions
from fastapsp.pipeline import solve_job
from fastapsp.sink import check_result

MINNESOTA = DATA / "minnesota.mtx.gz"


def _opts(out, **kw):
    return SolveOptions(graph=str(MINNESOTA), k=3, backend="numpy", output=str(out), quiet=True, **kw)


def test_a_second_writer_of_one_path_is_refused_at_once(tmp_path):
    out = tmp_path / "d.npy"
    fd = os.open(f"{out}.lock", os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)  # another run is writing d.npy
    try:
        proc = run_cli("solve", MINNESOTA, "-k", 3, "--backend", "numpy", "--output", out)
    finally:
        os.close(fd)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert "another run is writing it" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.npy.lock"]  # the other run's, untouched
    os.remove(f"{out}.lock")
    proc = run_cli("solve", MINNESOTA, "-k", 3, "--backend", "numpy", "--output", out)
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.npy", "d.npy.json"]  # no lock file left
    check_result(out)


def test_a_lock_file_left_by_a_killed_run_does_not_block(tmp_path):
    out = tmp_path / "d.npy"
    (tmp_path / "d.npy.lock").write_text("")  # its holder died: the system dropped its flock
    solve_job(_opts(out), comm=SerialComm())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.npy", "d.npy.json"]


def test_no_room_for_the_file_is_one_error_before_the_work(tmp_path, monkeypatch):
    def full(fd, offset, length):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "posix_fallocate", full)
    computed = []
    monkeypatch.setattr("fastapsp.execute.run_components", lambda *a, **k: computed.append(1) or {})
    with pytest.raises(OSError, match="cannot reserve .* No space left on device") as caught:
        solve_job(_opts(tmp_path / "d.npy"), comm=SerialComm())
    assert "\n" not in str(caught.value) and not computed
    assert list(tmp_path.iterdir()) == []


def test_a_sidecar_that_cannot_be_written_leaves_nothing(tmp_path, monkeypatch):
    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(json, "dump", full)
    with pytest.raises(OSError, match="sidecar"):
        solve_job(_opts(tmp_path / "d.npy"), comm=SerialComm())
    assert list(tmp_path.iterdir()) == []


def test_a_dead_runs_sidecar_temporary_is_removed(tmp_path):
    out = tmp_path / "d.npy"
    dead = 2**22 + 12345  # above the usual pid range: no such process
    (tmp_path / f"d.npy.json.tmp{dead}").write_text("{}")
    (tmp_path / f"d.npy.tmp{dead}").write_bytes(b"x")
    with pytest.warns(sink_module.OutputWarning, match="removed"):
        solve_job(_opts(out), comm=SerialComm())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.npy", "d.npy.json"]
    assert np.load(out).shape == (2642, 2642)


def test_a_live_processes_temporary_is_removed_once_the_lock_is_ours(tmp_path):
    """A worker whose supervisor was killed may outlive it for a moment; it no longer holds the lock,
    so its temporary file is stale and the next run removes it instead of leaving it for good."""
    import subprocess
    import sys

    out = tmp_path / "d.npy"
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        (tmp_path / f"d.npy.tmp{alive.pid}").write_bytes(b"x" * 1000)
        with pytest.warns(sink_module.OutputWarning, match=f"removed .*tmp{alive.pid}"):
            solve_job(_opts(out), comm=SerialComm())
    finally:
        alive.kill()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.npy", "d.npy.json"]


@pytest.mark.parametrize("flag, value, message", [
    ("--output", "folder.npy", "is a folder"),
    ("--partition-file", "nope/p.npz", "folder .* does not exist"),
    ("--report", "nope/r.json", "folder .* does not exist"),
    ("--report", "folder.npy", "is a folder"),
])
def test_paths_that_cannot_be_written_are_refused_before_the_work(tmp_path, flag, value, message):
    (tmp_path / "folder.npy").mkdir()
    proc = run_cli("solve", MINNESOTA, "-k", 3, "--backend", "numpy", flag, value, cwd=tmp_path)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    import re

    assert re.search(message, proc.stderr) and ".tmp" not in proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["folder.npy"]
