"""fastapsp.watch: each rank's status file, the watchdog over the ranks beside it, stale job folders.

The launcher runs (a rank killed under mpiexec, the supervisor's message) are in
test_faults.py; here the pieces are checked alone, and the watchdog ends a
"job" of two plain processes whose communicator only records ``Abort``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from fastapsp import watch
from fastapsp.comm import SerialComm

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def tmpdir_env(tmp_path, monkeypatch):
    """Job folders under ``tmp_path`` (tempfile reads TMPDIR once; reset its cache)."""
    import tempfile

    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", None)
    yield tmp_path
    monkeypatch.setattr(tempfile, "tempdir", None)


def test_describe_says_phase_component_and_stage():
    assert watch.describe(None) == "while starting (before its first stage)"
    assert watch.describe({"phase": "reading the graph"}) == "during reading the graph"
    record = {"phase": "computing the components", "component": 3, "stage": "min_plus"}
    assert watch.describe(record) == "during computing the components: component 3, stage min_plus"
    record = {"phase": "computing the components", "component": None, "stage": "boundary_rows"}
    assert watch.describe(record) == "during computing the components: stage boundary_rows"
    record = {"phase": "computing the components", "component": [1, 2, 0], "stage": "sssp"}  # one SSSP batch
    assert watch.describe(record) == "during computing the components: components 1, 2, 0, stage sssp"


def test_status_is_written_when_the_stage_changes_and_removed_at_the_end(tmpdir_env, monkeypatch):
    writes = []
    original = watch._StatusFile.write
    monkeypatch.setattr(watch._StatusFile, "write", lambda self, record: (writes.append(record), original(self, record)))
    job = watch.JobStatus(SerialComm(), period=None)
    try:
        assert Path(job.folder).parent == tmpdir_env and Path(job.file).is_file()
        watch.note_phase("computing the components")
        for _ in range(3):  # the same place again: nothing to write
            watch.note_stage(7, "floyd_warshall")
        watch.note_stage(7, "min_plus")
        record = watch._read_record(job.file)
        assert (record["phase"], record["component"], record["stage"]) == ("computing the components", 7, "min_plus")
        assert record["pid"] == os.getpid() and record["rank"] == 0 and record["state"] == "running"
        assert [w["stage"] for w in writes] == [None, None, "floyd_warshall", "min_plus"]
        from fastapsp.temporaries import TEMPORARY_FILES

        TEMPORARY_FILES.add("/nonexistent/out.npy.tmp1")  # a new temporary output is recorded at the next note
        try:
            watch.note_stage(7, "min_plus")
            assert watch._read_record(job.file)["temporaries"] == ["/nonexistent/out.npy.tmp1"]
        finally:
            TEMPORARY_FILES.discard("/nonexistent/out.npy.tmp1")
    finally:
        job.close()
    assert not Path(job.folder).exists() and watch._JOB is None
    watch.note_stage(1, "sssp")  # without a job: nothing happens


def test_a_zombie_is_not_alive():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    deadline = time.monotonic() + 30
    while watch._alive(child.pid) and time.monotonic() < deadline:  # exited, not yet reaped
        time.sleep(0.05)
    assert not watch._alive(child.pid)
    if sys.platform.startswith("linux"):
        assert os.path.exists(f"/proc/{child.pid}")  # still there: a zombie, as os.kill(pid, 0) would miss
    child.wait()
    assert watch._alive(os.getpid()) and not watch._alive(None) and not watch._alive(0)


def test_stale_job_folders_are_swept(tmpdir_env):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    host = watch.socket.gethostname()
    prefix = f"{watch._PREFIX}{os.getuid()}-"

    def folder(name, records, age=0.0):
        path = tmpdir_env / f"{prefix}{name}"
        path.mkdir()
        for rank, pid in enumerate(records):
            status = watch._StatusFile(str(path / f"rank{rank}.status"), create=True)
            status.write({"pid": pid, "supervisor": None, "host": host, "rank": rank})
            status.close()
        if age:
            os.utime(path, (time.time() - age, time.time() - age))
        return path

    gone = folder("dead", [dead.pid, dead.pid])
    running = folder("alive", [dead.pid, os.getpid()])
    fresh = folder("fresh", [])
    old = folder("old", [], age=2 * watch._STALE_EMPTY)
    other = tmpdir_env / "fastapsp-job-someone-else"
    other.mkdir()
    job = watch.JobStatus(SerialComm(), period=None)
    job.close()
    assert not gone.exists() and not old.exists()
    assert running.exists() and fresh.exists() and other.exists()


PEER = """
import os, sys, time
sys.path.insert(0, {root!r})
from fastapsp import watch

class Comm:
    # Two processes of one job without MPI: the folder name is given, Barrier waits for both status files.
    def __init__(self, rank, name):
        self.rank, self.size, self.name = rank, 2, name
    def bcast(self, obj, root=0):
        return self.name
    def Barrier(self):
        folder = os.path.join(os.environ["TMPDIR"], self.name)
        while not all(os.path.exists(os.path.join(folder, f"rank{{r}}.status")) for r in range(2)):
            time.sleep(0.02)
    def Abort(self, code):
        print(f"Abort({{code}})", flush=True)
        os._exit(7)

job = watch.JobStatus(Comm(int(sys.argv[1]), sys.argv[2]), period=0.1)
watch.note_phase("computing the components")
watch.note_stage(int(sys.argv[1]) + 3, "min_plus")
print("ready", flush=True)
time.sleep(120)
"""


@contextmanager
def two_peers(tmp_path):
    """Rank 0 (the survivor) and rank 1 (the victim) of one job, and rank 1's status file; both end after."""
    name = f"{watch._PREFIX}{os.getuid()}-test-{os.getpid()}"
    script = tmp_path / "peer.py"
    script.write_text(PEER.format(root=str(ROOT)))
    env = dict(os.environ, TMPDIR=str(tmp_path))
    peers = [subprocess.Popen([sys.executable, str(script), str(rank), name], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env) for rank in range(2)]
    try:
        for peer in peers:
            assert peer.stdout.readline().strip() == "ready"
        yield peers[0], peers[1], str(tmp_path / name / "rank1.status")
    finally:
        for peer in peers:
            peer.kill()
            peer.wait()
    assert not (tmp_path / name).exists()  # the survivor removed the job's folder


def test_watchdog_ends_the_job_when_the_rank_beside_it_vanishes(tmp_path):
    with two_peers(tmp_path) as (survivor, victim, _):
        victim.send_signal(signal.SIGKILL)  # not reaped until the end: the survivor sees a zombie
        start = time.monotonic()
        out, err = survivor.communicate(timeout=30)
        seconds = time.monotonic() - start
    assert survivor.returncode == 7 and out.strip() == "Abort(1)", (out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"fastapsp: error: rank 1 of 2 (pid {victim.pid} on "), err
    assert lines[0].endswith("vanished during computing the components: component 4, stage min_plus; "
                             "rank 0 ends the job"), lines[0]
    assert seconds < 10


def test_watchdog_is_quiet_when_the_supervisor_reported(tmp_path):
    with two_peers(tmp_path) as (survivor, victim, status):
        # As a supervisor does: the rank is marked killed (its supervisor printed the line).
        watch._write_record(status, dict(watch._read_record(status), state="killed", supervisor=os.getpid()))
        victim.send_signal(signal.SIGKILL)
        out, err = survivor.communicate(timeout=30)
    assert survivor.returncode == 7 and out.strip() == "Abort(1)" and err.strip() == "", (out, err)


def test_watchdog_leaves_the_report_to_a_live_supervisor(tmp_path):
    with two_peers(tmp_path) as (survivor, victim, status):
        record = watch._read_record(status)
        watch._write_record(status, dict(record, supervisor=os.getpid()))  # a supervisor that lives on
        victim.send_signal(signal.SIGKILL)
        victim.wait()
        time.sleep(1.0)  # ten periods of the watchdog
        assert survivor.poll() is None
        watch._write_record(status, dict(record, supervisor=None))  # the supervisor is gone too
        out, err = survivor.communicate(timeout=30)
    assert survivor.returncode == 7 and "vanished" in err, (out, err)


def test_tell_waits_until_the_reader_took_the_line():
    # A launcher may stop forwarding output once it hears of an abort: the last line must be read first.
    child = subprocess.Popen([sys.executable, "-c", (
        "import sys, time\n"
        f"sys.path.insert(0, {str(ROOT)!r})\n"
        "from fastapsp.watch import tell\n"
        "print('ready', flush=True)\n"
        "start = time.monotonic()\n"
        "tell('fastapsp: error: the last line')\n"
        "print(time.monotonic() - start, flush=True)\n")], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline() == "ready\n"
        time.sleep(0.6)  # nobody reads standard error meanwhile
        assert child.stderr.readline() == "fastapsp: error: the last line\n"
        waited = float(child.stdout.readline())
    finally:
        child.kill()
        child.wait()
    assert 0.4 < waited < 2.5, waited  # it returned once the line was read, not before (nor hung)
