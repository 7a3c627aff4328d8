"""The sbatch scripts of ``slurm/`` under a real SLURM: a one-node cluster on localhost.

The module fixture starts munged, slurmctld and slurmd (Debian packages
``munge`` and ``slurm-wlm``, which ``.ci/run`` installs when it runs as root)
with their configuration, key, sockets and state in a temporary folder, on
free ports, so nothing of a system SLURM is used or touched.  The jobs run
``slurm/single_node.sbatch`` with 2 tasks on the CPU backend and
``slurm/compare_array.sbatch`` as a two-task job array, with ``sbatch --wait``
under a timeout.  The tests skip (with the reason) when not root, when the
binaries are missing or when the daemons do not come up; the finalizer cancels
every job, stops the daemons and ends whatever process of this cluster is left.

Launchers: ``srun --mpi=pmi2`` works with the MPICH of the ``mpi`` extra (the
``mpich`` wheel): MPICH's built-in PMI client speaks the PMI-2 wire protocol
that SLURM's ``mpi/pmi2`` plugin serves over ``PMI_FD``, so the two ranks find
each other.  (Without ``--mpi=pmi2`` each task would start as a singleton of
size 1.)  ``mpiexec`` inside the allocation works too: Hydra sees the SLURM
allocation and starts its proxies with srun.  Both are run.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest

from cli_util import DATA, ROOT, cli_env, find_mpiexec

pytestmark = pytest.mark.mpi

SLURM = ROOT / "slurm"
MINNESOTA = DATA / "minnesota.mtx.gz"
START_TIMEOUT = 60       # seconds for the daemons to come up
JOB_TIMEOUT = 240        # seconds for one sbatch --wait
BINARIES = ("munged", "slurmctld", "slurmd", "sbatch", "srun", "sinfo", "squeue", "scancel")
SEARCH_PATH = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin", "/usr/bin"])


def _which(name):
    return shutil.which(name, path=SEARCH_PATH)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _node_resources() -> tuple[int, int]:
    """CPUs and memory (MiB) of this machine, as slurmd sees them."""
    cpus, memory = os.cpu_count() or 1, 1024
    try:
        out = subprocess.run([_which("slurmd"), "-C"], capture_output=True, text=True, timeout=30).stdout
        fields = dict(word.split("=", 1) for word in out.split() if "=" in word)
        cpus, memory = int(fields["CPUs"]), int(fields["RealMemory"])
    except Exception:  # noqa: BLE001 - fall back to what Python sees
        try:
            with open("/proc/meminfo") as fh:
                memory = int(fh.readline().split()[1]) // 1024
        except OSError:
            pass
    return cpus, memory


def _tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return f"({path.name} missing)"


class Cluster:
    """A running one-node SLURM cluster: its folder, configuration and processes."""

    def __init__(self, root: Path):
        self.root = root
        self.conf = root / "slurm.conf"
        self.logs = root / "log"
        self.procs: list[subprocess.Popen] = []

    def env(self, **extra) -> dict:
        """Environment for sbatch and the job: this cluster's SLURM_CONF, no outer SLURM_* settings."""
        env = {k: v for k, v in cli_env().items()
               if not k.startswith(("SLURM_", "SBATCH_", "SRUN_", "SALLOC_", "PMI_", "PMIX_", "OMPI_COMM"))}
        # The venv's bin first: mpiexec of the 'mpi' extra, and the fastapsp command.
        env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), SEARCH_PATH])
        env["SLURM_CONF"] = str(self.conf)
        env.update({k: str(v) for k, v in extra.items()})
        return env

    def run(self, *cmd, timeout=30, **kwargs):
        return subprocess.run([_which(cmd[0]), *map(str, cmd[1:])], capture_output=True, text=True,
                              timeout=timeout, env=kwargs.pop("env", None) or self.env(), **kwargs)

    def start(self, name, *cmd):
        log = open(self.logs / f"{name}.out", "wb")
        self.procs.append(subprocess.Popen([_which(cmd[0]), *map(str, cmd[1:])], stdout=log,
                                           stderr=subprocess.STDOUT, env=self.env(),
                                           start_new_session=True, cwd=self.root))
        log.close()

    def node_state(self) -> str:
        try:
            return self.run("sinfo", "-h", "-N", "-o", "%t", timeout=10).stdout.strip()
        except subprocess.TimeoutExpired:
            return ""

    def diagnostics(self) -> str:
        return "\n".join(f"--- {p.name}\n{_tail(p)}" for p in sorted(self.logs.glob("*")))

    def sbatch(self, *args, log: Path, **env):
        """``sbatch --wait`` under a timeout; returns (CompletedProcess, job log text)."""
        try:
            proc = self.run("sbatch", "--wait", f"--output={log}", "--time=10", *args,
                            timeout=JOB_TIMEOUT, env=self.env(**env), cwd=ROOT)
        except subprocess.TimeoutExpired:
            self.cancel_all()
            pytest.fail(f"sbatch --wait did not return within {JOB_TIMEOUT} s\n{_tail(log, 40)}\n"
                        f"{self.diagnostics()}")
        return proc, _tail(log, 60)

    def cancel_all(self) -> None:
        try:
            jobs = self.run("squeue", "-h", "-o", "%i", timeout=10).stdout.split()
            if jobs:
                self.run("scancel", *jobs, timeout=10)
            deadline = time.monotonic() + 15
            while jobs and time.monotonic() < deadline:
                time.sleep(0.5)
                jobs = self.run("squeue", "-h", "-o", "%i", timeout=10).stdout.split()
        except (subprocess.TimeoutExpired, OSError):
            pass

    def stop(self) -> None:
        for proc in reversed(self.procs):        # slurmd, slurmctld, then munged
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(timeout=10)
        # slurmstepd and job processes outlive slurmd by design: end those that carry this
        # cluster's SLURM_CONF (they were all started by it), by pid.
        marker = f"SLURM_CONF={self.conf}".encode()
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit() or int(entry.name) == os.getpid():
                continue
            try:
                if marker in (entry / "environ").read_bytes().split(b"\0"):
                    os.kill(int(entry.name), signal.SIGKILL)
            except (OSError, ValueError):
                continue


@pytest.fixture(scope="module")
def cluster():
    if os.name != "posix" or os.geteuid() != 0:
        pytest.skip("needs root: slurmd starts job steps as the submitting user and munged/slurmd need "
                    "their own state folders")
    missing = [b for b in BINARIES if _which(b) is None]
    if missing:
        pytest.skip(f"SLURM not installed ({', '.join(missing)} not found); .ci/run installs the Debian "
                    "packages slurm-wlm and munge when it runs as root with apt-get")
    # Short path: the munge socket path must fit in a sockaddr_un (108 bytes).
    root = Path(tempfile.mkdtemp(prefix="fastapsp-slurm-", dir="/tmp"))
    root.chmod(0o755)
    c = Cluster(root)
    try:
        for sub in ("log", "state", "spool", "munge"):
            (root / sub).mkdir()
        (root / "munge").chmod(0o755)
        key = root / "munge" / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o600)
        sock = root / "munge" / "munge.sock"
        c.start("munged", "munged", "--foreground", "--force", f"--key-file={key}", f"--socket={sock}",
                f"--pid-file={root / 'munge' / 'munged.pid'}", f"--seed-file={root / 'munge' / 'seed'}",
                f"--log-file={c.logs / 'munged.log'}")
        deadline = time.monotonic() + START_TIMEOUT
        while not sock.exists() and time.monotonic() < deadline and c.procs[0].poll() is None:
            time.sleep(0.1)
        if not sock.exists():
            pytest.skip(f"munged did not start:\n{c.diagnostics()}")

        cpus, memory = _node_resources()
        c.conf.write_text("\n".join([
            "ClusterName=fastapsptest",
            "SlurmctldHost=localhost",
            f"SlurmctldPort={_free_port()}",
            f"SlurmdPort={_free_port()}",
            "SlurmUser=root",
            "SlurmdUser=root",
            "AuthType=auth/munge",
            "CredType=cred/munge",
            f"AuthInfo=socket={sock}",
            f"StateSaveLocation={root / 'state'}",
            f"SlurmdSpoolDir={root / 'spool'}",
            f"SlurmctldPidFile={root / 'slurmctld.pid'}",
            f"SlurmdPidFile={root / 'slurmd.pid'}",
            f"SlurmctldLogFile={c.logs / 'slurmctld.log'}",
            f"SlurmdLogFile={c.logs / 'slurmd.log'}",
            # No cgroups in containers: track and start tasks the plain way.
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_Core",
            # srun --mpi=pmi2 is chosen by the script; none is the default for everything else.
            "MpiDefault=none",
            "SwitchType=switch/none",
            "SchedulerType=sched/backfill",
            "JobCompType=jobcomp/none",
            "AccountingStorageType=accounting_storage/none",
            "JobAcctGatherType=jobacct_gather/none",
            "MailProg=/bin/true",
            "ReturnToService=2",
            "InactiveLimit=0",
            "KillWait=5",
            "MinJobAge=300",
            "SlurmctldTimeout=30",
            "SlurmdTimeout=30",
            # The test needs 2 tasks even on a 1-CPU runner: trust the CPU count below.
            "SlurmdParameters=config_overrides",
            f"NodeName=localhost NodeAddr=127.0.0.1 CPUs={max(cpus, 2)} RealMemory={memory} State=UNKNOWN",
            "PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP",
            "",
        ]))
        c.start("slurmctld", "slurmctld", "-D", "-f", c.conf)
        c.start("slurmd", "slurmd", "-D", "-N", "localhost", "-f", c.conf)
        state = ""
        while time.monotonic() < deadline:
            state = c.node_state()
            if state == "idle":
                break
            if any(p.poll() is not None for p in c.procs):
                break
            time.sleep(0.5)
        if state != "idle":
            pytest.skip(f"the SLURM daemons did not come up within {START_TIMEOUT} s (node state "
                        f"{state!r}):\n{c.diagnostics()}")
        yield c
    finally:
        c.cancel_all()
        c.stop()
        shutil.rmtree(root, ignore_errors=True)


def _reference():
    from scipy.sparse.csgraph import shortest_path

    from fastapsp import read_graph

    return shortest_path(read_graph(MINNESOTA).to_scipy(), method="D", directed=True).astype(np.float32)


@pytest.mark.parametrize("launcher", ["srun", "mpiexec"])
def test_single_node_sbatch_two_cpu_ranks(cluster, tmp_path, launcher):
    if launcher == "mpiexec" and find_mpiexec() is None:
        pytest.skip("no mpiexec (install the 'mpi' extra)")
    out, report, log = tmp_path / "d.npy", tmp_path / "r.json", tmp_path / "job.out"
    # --ntasks-per-node and --gpus-per-task override the script's GPU-node defaults (4 tasks,
    # one GPU each): 2 CPU tasks, and GPUS_PER_TASK follows the allocation's 0.
    proc, job_log = cluster.sbatch(
        "--ntasks=2", "--ntasks-per-node=2", "--gpus-per-task=0", SLURM / "single_node.sbatch", log=log,
        GRAPH=MINNESOTA, K=8, BACKEND="numpy", OUTPUT=out, REPORT=report, LAUNCHER=launcher,
        SRUN_MPI="pmi2", PYTHON=sys.executable, CUPY_CACHE_DIR=tmp_path / "cupy")
    assert proc.returncode == 0, f"{proc.stdout}{proc.stderr}\n{job_log}\n{cluster.diagnostics()}"
    assert "ranks=2" in job_log, job_log
    data = json.loads(report.read_text())
    assert data["ranks"] == 2 and data["backend"] == "numpy" and data["k"] == 8
    np.testing.assert_array_equal(np.load(out), _reference())
    assert (tmp_path / "cupy").is_dir()


def _large_text_graph(path):
    """A small graph in a text of more than the cache's 8 MiB: 300 vertices, 700,000 weighted arcs (parallel
    arcs keep the lightest), so that its cache is written and the APSP stays quick.  Weights are written
    as reals with whole values, so that float32 sums are exact."""
    rng = np.random.default_rng(11)
    src, dst = rng.integers(1, 301, 700_000), rng.integers(1, 301, 700_000)
    weights = rng.integers(1, 10_000, 700_000)
    with open(path, "w") as fh:
        fh.write(f"%%MatrixMarket matrix coordinate real general\n300 300 {src.size}\n")
        fh.writelines(f"{a} {b} {w}.0\n" for a, b, w in zip(src, dst, weights))
    from fastapsp import read_graph
    from scipy.sparse.csgraph import shortest_path

    return shortest_path(read_graph(path).to_scipy(), method="D", directed=True).astype(np.float32)


def test_multi_node_sbatch_two_ranks_and_the_graph_cache(cluster, tmp_path):
    """multi_node.sbatch as far as one node goes: 2 tasks; the first run writes the cache into GRAPH_CACHE,
    the second maps it (its record is not written again) and gives the same distances."""
    graph, caches = tmp_path / "big.mtx", tmp_path / "caches"
    caches.mkdir()
    want = _large_text_graph(graph)
    assert graph.stat().st_size > 8 << 20
    meta = caches / "big.mtx.mtx.fastapsp-csr" / "meta.json"
    stamps = []
    for run in (1, 2):
        out, report, log = tmp_path / f"d{run}.npy", tmp_path / f"r{run}.json", tmp_path / f"job{run}.out"
        proc, job_log = cluster.sbatch(
            "--nodes=1", "--ntasks=2", "--ntasks-per-node=2", "--gpus-per-task=0", SLURM / "multi_node.sbatch",
            log=log, GRAPH=graph, GRAPH_CACHE=caches, K=4, BACKEND="numpy", OUTPUT=out, REPORT=report,
            LAUNCHER="srun", SRUN_MPI="pmi2", PYTHON=sys.executable, CUPY_CACHE_DIR=tmp_path / "cupy")
        assert proc.returncode == 0, f"{proc.stdout}{proc.stderr}\n{job_log}\n{cluster.diagnostics()}"
        assert "--graph-cache" in job_log and json.loads(report.read_text())["ranks"] == 2
        np.testing.assert_array_equal(np.load(out), want)
        assert meta.is_file()
        stamps.append(meta.stat().st_mtime_ns)
    assert stamps[0] == stamps[1]


def test_compare_array_reuses_partitions(cluster, tmp_path):
    configs = tmp_path / "configs.txt"
    configs.write_text(f"# two partitioners\n{MINNESOTA} 4 metis\n\n{MINNESOTA} 4 kahip-fast --dtype float64\n")
    results, log = tmp_path / "results", tmp_path / "job_%a.out"
    proc, _ = cluster.sbatch(
        "--array=0-1", "--ntasks=1", "--ntasks-per-node=1", "--gpus-per-task=0",
        SLURM / "compare_array.sbatch", log=log,
        CONFIGS=configs, RESULTS=results, REPEATS=1, BACKEND="numpy", PYTHON=sys.executable,
        CUPY_CACHE_DIR=tmp_path / "cupy")
    logs = "\n".join(_tail(p, 40) for p in sorted(tmp_path.glob("job_*.out")))
    assert proc.returncode == 0, f"{proc.stdout}{proc.stderr}\n{logs}\n{cluster.diagnostics()}"
    for index, name in enumerate(("metis", "kahip-fast")):
        tag = f"minnesota.k4.{name}.s42"
        part = json.loads((results / "partitions" / f"{tag}.json").read_text())
        labels = np.load(results / "partitions" / f"{tag}.npy")
        assert labels.shape == (2642,) and labels.max() == 3
        solve = json.loads((results / f"{tag}.line{index}.run1.json").read_text())
        # The solve used the saved partition, and the report names the partitioner that made it.
        assert solve["partitioner"] == name and solve["seed"] == 42
        assert solve["edge_cut"] == part["edge_cut"]
        assert solve["boundary_vertices"] == part["boundary_vertices"]
        assert solve["config_index"] == index
    assert json.loads((results / "minnesota.k4.kahip-fast.s42.line1.run1.json").read_text())["dtype"] == "float64"
    assert not list(results.glob("*.solve*")) and not list(results.glob("partitions/*tmp*"))
    table = subprocess.run([sys.executable, SLURM / "collect_results.py", results], capture_output=True,
                           text=True, timeout=60)
    assert table.returncode == 0 and "kahip-fast" in table.stdout and "metis" in table.stdout


# ------------------------------------------------------- without a cluster
@pytest.mark.parametrize("script", ["single_node.sbatch", "multi_node.sbatch", "compare_array.sbatch",
                                    "submit_compare.sh"])
def test_scripts_are_valid_bash(script):
    proc = subprocess.run(["bash", "-n", SLURM / script], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    text = (SLURM / script).read_text()
    # Nothing site-specific is switched on: partition / account lines stay commented examples.
    assert "#SBATCH --partition" not in text.replace("##SBATCH", "")
    assert "#SBATCH --account" not in text.replace("##SBATCH", "")


def test_multi_node_runs_the_same_commands_as_single_node():
    single = (SLURM / "single_node.sbatch").read_text().split("\nset -euo pipefail\n", 1)[1]
    multi = (SLURM / "multi_node.sbatch").read_text().split("\nset -euo pipefail\n", 1)[1]
    assert single == multi


def test_single_node_without_slurm_runs_one_process(tmp_path):
    # Outside an allocation the script is plain bash: LAUNCHER=mpiexec with SLURM_NTASKS unset runs
    # one rank, which checks the argument plumbing without SLURM.
    if find_mpiexec() is None:
        pytest.skip("no mpiexec (install the 'mpi' extra)")
    env = {k: v for k, v in cli_env().items() if not k.startswith(("SLURM_", "SBATCH_", "SRUN_"))}
    env.update(GRAPH=str(MINNESOTA), K="3", BACKEND="numpy", OUTPUT=str(tmp_path / "d.npy"),
               REPORT=str(tmp_path / "r.json"), LAUNCHER="mpiexec", MPIEXEC=find_mpiexec(),
               PYTHON=sys.executable, CUPY_CACHE_DIR=str(tmp_path / "cupy"),
               FASTAPSP_ARGS="--dtype float64 --partition-file " + str(tmp_path / "p.npz"))
    proc = subprocess.run(["bash", SLURM / "single_node.sbatch"], capture_output=True, text=True,
                          timeout=180, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["k"] == 3 and report["dtype"] == "float64" and report["ranks"] == 1
    assert (tmp_path / "p.npz").exists()
    np.testing.assert_array_equal(np.load(tmp_path / "d.npy"), _reference().astype(np.float64))
