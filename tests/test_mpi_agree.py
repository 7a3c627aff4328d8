"""Ranks of one job given other settings or another graph file (``mpiexec ... A : ... B``) fail in one
line on every rank before any work, instead of computing a result that matches neither graph."""

import subprocess
import sys

import pytest
from cli_util import DATA, cli_env, find_mpiexec

from fastapsp.errors import ConfigError
from fastapsp.options import SolveOptions
from fastapsp.pipeline import _run_mark, ranks_agree

pytestmark = [
    pytest.mark.mpi,
    pytest.mark.skipif(find_mpiexec() is None, reason="no mpiexec (install the 'mpi' extra)"),
]

MINNESOTA = DATA / "minnesota.mtx.gz"


def _other_graph(tmp_path):
    """Minnesota's size line, one entry changed: the same n, another graph."""
    import gzip

    lines = gzip.open(MINNESOTA).read().decode().splitlines()
    lines[-1] = "2642 1"
    path = tmp_path / "other.mtx"
    path.write_text("\n".join(lines) + "\n")
    return path


def _mpmd(first: list, second: list):
    fastapsp = [sys.executable, "-m", "fastapsp", "solve"]
    cmd = [find_mpiexec(), "-n", "2", *fastapsp, *map(str, first), ":", "-n", "1", *fastapsp, *map(str, second)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=cli_env())


def test_ranks_given_different_graph_files_fail_in_one_line(tmp_path):
    out = tmp_path / "d.npy"
    common = ["-k", 3, "--backend", "numpy", "--output", out]
    proc = _mpmd([MINNESOTA, *common], [_other_graph(tmp_path), *common])
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    errors = [line for line in proc.stderr.splitlines() if "fastapsp: error" in line]
    assert len(errors) == 1 and "another file" in errors[0], proc.stderr
    assert not out.exists() and not list(tmp_path.glob("d.npy*"))


def test_ranks_given_different_settings_fail_in_one_line(tmp_path):
    proc = _mpmd([MINNESOTA, "-k", 3, "--backend", "numpy"], [MINNESOTA, "-k", 4, "--backend", "numpy"])
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    errors = [line for line in proc.stderr.splitlines() if "fastapsp: error" in line]
    assert len(errors) == 1 and "k: rank 0 has 3, rank 2 has 4" in errors[0], proc.stderr


def test_the_same_file_under_two_paths_agrees(tmp_path):
    copy = tmp_path / "copy.mtx.gz"
    copy.write_bytes(MINNESOTA.read_bytes())
    marks = [_run_mark(SolveOptions(graph=str(path), k=3)) for path in (MINNESOTA, copy)]
    ranks_agree(SolveOptions(graph=str(MINNESOTA), k=3), marks)  # node-local copies are fine
    other = _run_mark(SolveOptions(graph=str(_other_graph(tmp_path)), k=3))
    with pytest.raises(ConfigError, match="another file"):
        ranks_agree(SolveOptions(graph=str(MINNESOTA), k=3), [marks[0], other])
