"""The communicator: MPI under a launcher, a one-rank stand-in otherwise.

Functions that communicate take ``comm`` as a keyword argument; only the entry
points call :func:`get_comm`.  Every step that can fail on some ranks runs
through :func:`run_phase`, so that a failure on one rank is raised on all of
them instead of leaving the others waiting in a collective.
"""

from __future__ import annotations

import os
import sys
import time

from .errors import BackendError, RankError
from .launcher import launched_under_mpi, mpi_forced
from .watch import abort_job, end_job, note_phase, tell

__all__ = ["SerialComm", "get_comm", "launched_under_mpi", "run_phase", "run_or_abort", "select_device",
           "max_over_ranks", "process_age"]


def _process_started() -> float | None:
    """Wall-clock time at which this process started (Linux: ``/proc``), else None."""
    try:
        with open("/proc/self/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()  # after the command name: fields 3, 4, ...
        with open("/proc/uptime") as uptime:
            up = float(uptime.read().split()[0])
        return time.time() - (up - int(fields[19]) / os.sysconf("SC_CLK_TCK"))  # field 22: start, in ticks
    except (OSError, ValueError, IndexError):
        return None


_STARTED = _process_started()  # read at import: a worker forked later (fastapsp.watch) keeps its parent's


def process_age() -> float:
    """Seconds since this process started (imports and MPI start-up included); 0 where unknown."""
    return 0.0 if _STARTED is None else max(0.0, time.time() - _STARTED)


class SerialComm:
    """A one-rank communicator with the subset of mpi4py's API that fastapsp uses."""

    rank = 0
    size = 1

    def Get_rank(self) -> int:
        return 0

    def Get_size(self) -> int:
        return 1

    def bcast(self, obj, root: int = 0):
        return obj

    def allgather(self, obj):
        return [obj]

    def gather(self, obj, root: int = 0):
        return [obj]

    def allreduce(self, obj, op=None):
        return obj

    def Barrier(self) -> None:
        return None

    barrier = Barrier

    def Abort(self, errorcode: int = 1):
        sys.exit(errorcode)

    def __repr__(self) -> str:
        return "SerialComm(rank=0, size=1)"


def _srun_without_pmi() -> int:
    """Task count of an srun step that gave its tasks no MPI process manager (0 otherwise)."""
    tasks = int(os.environ.get("SLURM_STEP_NUM_TASKS", "1") or 1)
    return tasks if tasks > 1 and "SLURM_PROCID" in os.environ and not launched_under_mpi() else 0


def get_comm():
    """``MPI.COMM_WORLD`` under a launcher, else a :class:`SerialComm`.

    A plain process never initialises MPI, so it runs where no MPI library is
    installed.  Set ``FASTAPSP_MPI=1`` (or ``0``) to force the choice.

    Raises
    ------
    BackendError
        When a launcher started the process but mpi4py cannot load an MPI library.
    """
    if _srun_without_pmi() and mpi_forced() is not False:
        # Each task would run alone and compute everything: refuse instead of wasting N-1 nodes.
        raise BackendError(
            f"srun started {_srun_without_pmi()} tasks without an MPI plugin, so they cannot talk; "
            "use srun --mpi=pmi2 (or --mpi=pmix), or mpiexec inside the allocation"
        )
    if not launched_under_mpi():
        return SerialComm()
    try:
        # At mpi4py's default thread level, MPI_THREAD_MULTIPLE: the watchdog (fastapsp.watch) calls
        # MPI_Abort from its own thread while the main thread may be inside a collective.
        from mpi4py import MPI
    except Exception as exc:
        raise BackendError(
            f"started by an MPI launcher but mpi4py cannot load an MPI library ({exc}); "
            "install the 'mpi' extra (pip install 'fastapsp[mpi]') or a system MPI"
        ) from None
    return MPI.COMM_WORLD


def _local_rank(comm) -> int:
    """Rank of this process among the ranks on the same node."""
    if isinstance(comm, SerialComm):
        return 0
    from mpi4py import MPI

    node = comm.Split_type(MPI.COMM_TYPE_SHARED, key=comm.rank)
    try:
        return node.rank
    finally:
        node.Free()


def select_device(comm) -> int:
    """Make this rank use GPU ``local rank mod visible devices`` and return its id.

    With one visible device per task (SLURM ``--gpus-per-task=1``) that is device 0.
    Collective: every rank of ``comm`` must call it; a failure on one rank is
    raised on all of them.
    """
    return run_phase(comm, "selecting the GPU", _use_gpu, _local_rank(comm))


def _use_gpu(local_rank: int) -> int:
    import cupy

    device = local_rank % cupy.cuda.runtime.getDeviceCount()
    cupy.cuda.Device(device).use()
    return device


def run_phase(comm, name: str, fn, *args, **kwargs):
    """Run ``fn`` on every rank; if it fails on any rank, raise on every rank.

    The failing rank re-raises its own exception; the others raise
    :class:`RankError` naming the first failing rank and its message.  With a
    single rank the original exception passes through unchanged.
    """
    note_phase(name)
    try:
        result = fn(*args, **kwargs)
        failure = None
    except Exception as exc:  # noqa: BLE001 - every failure must reach the other ranks
        if comm.size == 1:
            raise
        result, failure, error = None, f"{exc}", exc
    failures = comm.allgather(failure)
    if any(f is not None for f in failures):
        if failure is not None:
            raise error
        first = next(r for r, f in enumerate(failures) if f is not None)
        raise RankError(f"rank {first} failed during {name}: {failures[first]}")
    return result


def run_or_abort(comm, name: str, fn, *args, cleanup=None, **kwargs):
    """Run ``fn`` on this rank; with several ranks a failure ends the whole job at once.

    For long work that ranks do independently (their components): instead
    of meeting the other ranks in a collective when they are done, which
    could be hours later, the failing rank runs ``cleanup``, prints one line
    naming itself and the failure, and calls ``comm.Abort``, which stops
    every rank.  With a single rank the exception passes through unchanged.
    """
    note_phase(name)
    try:
        return fn(*args, **kwargs)
    except Exception as exc:  # noqa: BLE001 - every failure must end the job
        if comm.size == 1:
            raise
        if cleanup is not None:
            try:
                cleanup()
            except Exception:  # noqa: BLE001 - the failure itself is what must be reported
                pass
        end_job()
        text = " ".join((str(exc) or type(exc).__name__).split())
        tell(f"fastapsp: error: rank {comm.rank} of {comm.size} failed during {name}: {text}")
        abort_job(comm, 1)
        os._exit(1)  # MPI_Abort may return before the launcher kills this process: say nothing more


def max_over_ranks(comm, values: dict, *, each: list | None = None) -> dict:
    """Key-wise maximum of a dict of numbers across ranks (collective).

    ``each``, when given, receives every rank's own dict, in rank order.
    """
    merged: dict = {}
    parts = comm.allgather(values)
    for part in parts:
        for key, value in part.items():
            merged[key] = max(merged.get(key, value), value)
    if each is not None:
        each.extend(parts)
    return merged
