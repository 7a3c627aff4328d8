"""The one line a rank says before the job ends goes out in one write, so two ranks' lines on one pipe
never run together."""

import os
import sys

from fastapsp import watch


def test_a_rank_says_its_line_in_one_write(monkeypatch):
    writes = []
    real = os.write

    def spy(fd, data):
        if fd == sys.stderr.fileno():
            writes.append(bytes(data))
            return len(data)
        return real(fd, data)

    monkeypatch.setattr(os, "write", spy)
    watch.tell("fastapsp: error: rank 1 of 3 failed during computing the components: boom")
    assert writes == [b"fastapsp: error: rank 1 of 3 failed during computing the components: boom\n"]


def test_a_failing_rank_has_the_last_word(tmp_path):
    """Under mpiexec a rank that fails says one line and aborts the job; MPICH's own ``Abort(1) on node ...``
    line (which used to follow ours) is not printed."""
    import subprocess

    import pytest
    from cli_util import DATA, ROOT, cli_env, find_mpiexec

    if find_mpiexec() is None:
        pytest.skip("no mpiexec (install the 'mpi' extra)")
    cmd = [find_mpiexec(), "-n", "2", sys.executable, str(ROOT / "tests" / "fault_driver.py"), "1:raise:min_plus",
           "--", "solve", str(DATA / "minnesota.mtx.gz"), "-k", "4", "--backend", "numpy", "--sssp-method", "frontier"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=180, env=cli_env(), cwd=tmp_path)
    assert proc.returncode != 0
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert [line for line in lines if line.startswith("fastapsp: error")] == [lines[-1]], proc.stderr
    assert "injected failure" in lines[-1] and not any(line.startswith("Abort(") for line in lines), proc.stderr
