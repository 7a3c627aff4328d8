"""Running the real command line (optionally under mpiexec) from tests."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
TIMEOUT = 180


def find_mpiexec():
    """mpiexec next to this Python (the 'mpi' extra), else on PATH; None when absent."""
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    return shutil.which("mpiexec", path=path) or shutil.which("mpirun", path=path)


def cli_env():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    # Open MPI refuses root and more ranks than cores unless told; MPICH ignores these.
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    env.setdefault("OMPI_MCA_rmaps_base_oversubscribe", "1")
    env.pop("FASTAPSP_MPI", None)
    return env


def run_cli(*args, ranks=None, cwd=None, timeout=TIMEOUT):
    """Run ``fastapsp ARGS``; with ``ranks`` under mpiexec. Returns the CompletedProcess."""
    cmd = [sys.executable, "-m", "fastapsp", *map(str, args)]
    if ranks is not None:
        cmd = [find_mpiexec(), "-n", str(ranks), *cmd]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=cwd, env=cli_env())
