"""Where every rank is, so that a rank that dies is named with its component and stage.

A rank killed by SIGKILL (the kernel's out-of-memory killer, ``kill -9``, the
batch system) or by a crash in native code cannot say anything itself, and
MPICH's hydra SIGKILLs the other ranks within milliseconds of seeing a rank
end, so they cannot either.  Two pieces still end such a job within seconds
with one line naming the rank, its component and its stage:

- :func:`supervise`: under a launcher, ``fastapsp solve`` forks at start.  The
  process the launcher started stays behind as a small supervisor (it waits,
  and passes SIGINT, SIGTERM and SIGHUP on); the child does the work and never
  outlives it (``PR_SET_PDEATHSIG``).  The launcher waits for the supervisor,
  so when the worker is killed the supervisor still runs: it prints the line
  from the worker's last status, removes the temporary output, gives the
  watchdogs of the ranks beside it a moment (below) and exits with 128 + the
  signal number, upon which the launcher ends the job.
- :class:`JobStatus`: every worker records where it is (phase, component,
  stage) in ``rankR.status`` under a folder of the job in the temporary
  directory, written only when that changes, in place (two small ``pwrite``
  calls) and atomically (a killed rank leaves its last status whole).  A daemon thread on
  every rank checks every :data:`PERIOD` seconds that the other ranks on its
  host are alive; when one vanished without finishing, it removes the job's
  temporary files and calls ``MPI_Abort``, printing the line itself when no
  supervisor did.  That ends jobs whose launcher leaves the other ranks
  running (``srun`` without ``--kill-on-bad-exit``, ``mpiexec
  -disable-auto-cleanup``).  The folder is removed when the job ends.

Ranks on other hosts are not watched (their process ids mean nothing here);
their launcher ends them when the supervisor exits.  The supervisor is on by
default under MPICH's hydra only (tested there); ``FASTAPSP_SUPERVISE=1``
turns it on elsewhere, ``FASTAPSP_SUPERVISE=0`` off.
"""

from __future__ import annotations

import json
import numbers
import os
import secrets
import shutil
import signal
import socket
import sys
import tempfile
import threading
import time
import warnings

from .launcher import launched_under_mpi
from .temporaries import TEMPORARY_FILES, remove_temporary_files

__all__ = ["PERIOD", "GRACE", "JobStatus", "supervise", "note_phase", "note_stage", "end_job", "failed_peer", "place",
           "describe", "tell"]

PERIOD = 0.5  # seconds between two looks of a watchdog at the ranks beside it
GRACE = 2.0  # seconds a supervisor leaves the watchdogs beside it to end the job before it exits
_PREFIX = "fastapsp-job-"
_STALE_EMPTY = 600  # seconds after which a job folder holding no status at all counts as left behind
_RANK_VARS = ("PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "SLURM_PROCID")
_SIZE_VARS = ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "SLURM_NTASKS")
_PR_SET_PDEATHSIG = 1

_JOB: JobStatus | None = None  # the job this process takes part in, while it runs
_PIPE: int | None = None  # in a supervised worker: where it tells its supervisor the name of its status file


# ------------------------------------------------------------------ the supervisor
def _supervise_wanted() -> bool:
    """``FASTAPSP_SUPERVISE`` (1 or 0) decides; by default only under MPICH's hydra.

    The forked worker initialises MPI from the launcher's environment.  That is
    tested with hydra (its PMI connection is an inherited descriptor,
    ``PMI_FD``); under Open MPI's ``mpirun`` and SLURM's ``srun`` it has not
    been tried yet, so there the supervisor is off unless asked for (Open MPI
    signals the surviving ranks with SIGTERM first, and their handlers name the
    dead rank from its status file).
    """
    asked = os.environ.get("FASTAPSP_SUPERVISE", "").lower()
    if asked in ("0", "no", "off"):
        return False
    if asked in ("1", "yes", "on"):
        return True
    hydra = "PMI_FD" in os.environ or "PMI_PORT" in os.environ
    return hydra and not any(v in os.environ for v in ("OMPI_COMM_WORLD_RANK", "SLURM_PROCID"))


def supervise() -> None:
    """Under a launcher on Linux, fork: the child returns and does the work; the parent supervises it.

    The parent never returns: it waits for the child and exits with its exit
    status, or, when a signal killed the child, reports the rank's last
    status in one line on standard error and exits with 128 + the signal.
    Does nothing without a launcher, with one rank, without ``fork`` and
    ``prctl``, or when :func:`_supervise_wanted` says no.
    """
    global _PIPE
    if not _supervise_wanted() or not launched_under_mpi():
        return
    if _env_int(_SIZE_VARS, 2) < 2 or not sys.platform.startswith("linux") or not hasattr(os, "fork"):
        return
    try:
        import ctypes

        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return
    read_end, write_end = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    parent = os.getpid()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # Python 3.12 warns when (BLAS) threads exist
        worker = os.fork()
    if worker == 0:
        os.close(read_end)
        prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)  # the work stops when its supervisor is killed
        if os.getppid() != parent:  # the supervisor died before prctl took effect
            os._exit(1)
        _PIPE = write_end
        return
    os.close(write_end)
    code = 1
    try:
        code = _supervise(worker, read_end)
    finally:
        os._exit(code)  # never back into the command line: the worker runs it


def _supervise(worker: int, pipe: int) -> int:
    """Wait for ``worker``; the exit status to pass on to the launcher."""
    forwarded: set[int] = set()

    def forward(signum, frame):
        forwarded.add(signum)
        try:
            os.kill(worker, signum)
        except ProcessLookupError:
            pass

    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, forward)
    try:
        _, status = os.waitpid(worker, 0)
    except ChildProcessError:
        return 1
    code = os.waitstatus_to_exitcode(status)
    if code >= 0:
        return code
    signum = -code
    if signum not in forwarded:  # a stop that was asked for says nothing more
        record, status_file = None, _read_pipe(pipe)
        if status_file:
            record = _read_record(status_file)
        _report_death(signum, worker, record, status_file)
    return 128 + signum


def _read_pipe(pipe: int) -> str:
    os.set_blocking(pipe, False)
    try:
        return os.read(pipe, 65536).decode("utf-8", "replace").strip()
    except (BlockingIOError, OSError):
        return ""


def _report_death(signum: int, worker: int, record: dict | None, status_file: str) -> None:
    """The one line about a worker that a signal killed; then its temporary files and the job folder."""
    rank = record["rank"] if record else _env_int(_RANK_VARS, "?")
    size = record["size"] if record else _env_int(_SIZE_VARS, "?")
    try:
        name = signal.Signals(signum).name
    except ValueError:
        name = f"signal {signum}"
    hint = ("; SIGKILL comes from kill -9, the batch system or the kernel's out-of-memory killer"
            if signum == signal.SIGKILL else "")
    where = "while finishing (after its status was removed)" if record is None and status_file else describe(record)
    message = (f"fastapsp: error: rank {rank} of {size} (pid {worker} on {socket.gethostname()}) was killed by "
               f"{name} {where}{hint}")
    if record is None:
        tell(message)
        return
    for path in record.get("temporaries", ()):
        _remove(path)
    folder = os.path.dirname(status_file)
    _write_record(status_file, dict(record, state="killed"))  # the watchdogs beside it end the job quietly
    tell(message)
    deadline = time.monotonic() + GRACE
    while time.monotonic() < deadline and any(_alive(r.get("pid")) for r in _records(folder, record["host"])
                                              if r.get("rank") != rank):
        time.sleep(0.1)
    _remove_folder(folder)


def abort_job(comm, code: int) -> None:
    """``comm.Abort(code)`` after this rank has said its one line (:func:`tell`): the MPI library's own
    abort message (MPICH prints ``Abort(1) on node ...`` after ours) goes to ``/dev/null``, so the job's
    last word is fastapsp's line."""
    try:
        sys.stderr.flush()
        quiet = os.open(os.devnull, os.O_WRONLY)
        os.dup2(quiet, 2)
        os.close(quiet)
    except (OSError, ValueError):
        pass
    comm.Abort(code)


def tell(line: str) -> None:
    """Print ``line`` on standard error and wait (at most 2 s) until the reader of the pipe has taken it.

    Said just before the job is ended: a launcher that hears of an abort or
    a dead rank may stop forwarding output at once, and a line still in the
    pipe would be lost.
    """
    try:  # one write of the whole line: lines of two ranks on one pipe never run together
        sys.stderr.flush()
        os.write(sys.stderr.fileno(), (line + "\n").encode("utf-8", "replace"))
    except (OSError, ValueError, AttributeError):
        print(line, file=sys.stderr, flush=True)
    try:
        import array
        import fcntl
        import stat
        import termios

        fd = sys.stderr.fileno()
        if not stat.S_ISFIFO(os.fstat(fd).st_mode):
            return
        unread = array.array("i", [0])
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline:
            fcntl.ioctl(fd, termios.FIONREAD, unread)
            if unread[0] == 0:
                return
            time.sleep(0.005)
    except (OSError, ValueError, AttributeError, ImportError):  # not a pipe we can ask, or no such ioctl
        return


def place(component, stage: str | None) -> str:
    """``component 3, stage min_plus``; ``components 1, 2, stage sssp`` for a batch; ``stage S`` alone."""
    parts = []
    if isinstance(component, (list, tuple)):
        parts.append(f"components {', '.join(map(str, component))}")
    elif component is not None:
        parts.append(f"component {component}")
    if stage:
        parts.append(f"stage {stage}")
    return ", ".join(parts)


def describe(record: dict | None) -> str:
    """Where a rank was, from its status: ``during PHASE: component P, stage S``."""
    if not record or not (record.get("phase") or record.get("stage")):
        return "while starting (before its first stage)"
    detail = place(record.get("component"), record.get("stage"))
    if record.get("phase"):
        return f"during {record['phase']}" + (f": {detail}" if detail else "")
    return f"during {detail}"


# ------------------------------------------------------------- status and watchdog
class JobStatus:
    """This rank's status file and the watchdog over the ranks on the same host (collective to create).

    ``period`` is the watchdog's interval in seconds (``None``: no watchdog).
    Nothing here may fail the run: a status that cannot be written is skipped.
    """

    def __init__(self, comm, *, period: float | None = PERIOD) -> None:
        global _JOB, _PIPE
        self.comm = comm
        self.rank, self.size = comm.rank, comm.size
        self.host = socket.gethostname()
        self.temporaries = TEMPORARY_FILES  # the sinks' temporary outputs, kept in the status
        name = comm.bcast(f"{_PREFIX}{os.getuid()}-{os.getpid()}-{secrets.token_hex(4)}" if comm.rank == 0 else None)
        self.folder = os.path.join(tempfile.gettempdir(), name)
        self.file = os.path.join(self.folder, f"rank{self.rank}.status")
        self.status = None
        self.supervisor = os.getppid() if _PIPE is not None else None
        self.where: tuple = ()
        self.peers: dict[int, dict] = {}
        self._stop = threading.Event()
        self._thread = None
        _sweep_stale(os.path.dirname(self.folder), name, self.host)
        try:
            os.makedirs(self.folder, mode=0o700, exist_ok=True)
            self.status = _StatusFile(self.file, create=True)
        except OSError:  # no status on this rank: the supervisor and the watchdogs then know less
            pass
        self.set(None, None, None)
        if _PIPE is not None:
            try:
                os.write(_PIPE, f"{self.file}\n".encode())
                os.close(_PIPE)
            except OSError:
                pass
            _PIPE = None
        comm.Barrier()  # every rank's first status is written: the peers can be read ...
        self.peers = {r["rank"]: r for r in _records(self.folder, self.host) if r.get("rank") != self.rank}
        comm.Barrier()  # ... before any of them writes again
        _JOB = self
        if period is not None:
            self._thread = threading.Thread(target=self._watch, args=(period,), name="fastapsp-watchdog",
                                            daemon=True)
            self._thread.start()

    def set(self, phase, component, stage) -> None:
        """Record where this rank is, when that or the set of temporary files changed."""
        where = (phase, _plain(component), stage, tuple(sorted(self.temporaries)))
        if where == self.where:
            return
        self.where = where
        if self.status is None:
            return
        try:
            self.status.write({"pid": os.getpid(), "supervisor": self.supervisor, "host": self.host, "rank": self.rank,
                               "size": self.size, "phase": phase, "component": where[1], "stage": stage,
                               "state": "running", "temporaries": list(where[3])})
        except OSError:  # a full disk: the status only helps
            pass

    def close(self) -> None:
        """The run ended here (finished or failed together with every rank): stop watching, remove my status."""
        global _JOB
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=2 * PERIOD)
        if _JOB is self:
            _JOB = None
        if self.status is not None:
            self.status.close()
            self.status = None
        _remove(self.file)
        try:
            os.rmdir(self.folder)  # the last rank out on this host
        except OSError:
            pass

    def dead_peer(self, *, wait_for_supervisor: bool = True) -> str | None:
        """A line about a rank beside this one that vanished without finishing.

        ``None`` when every such rank is alive or left cleanly; ``""`` when its
        supervisor has reported it already.  While a dead rank's supervisor
        still runs it will report, so (with ``wait_for_supervisor``) it is
        given the time.
        """
        for rank, start in list(self.peers.items()):
            if _alive(start.get("pid")):
                continue
            record = _read_record(os.path.join(self.folder, f"rank{rank}.status"))
            if record is None:  # it left cleanly (or the job is being ended)
                del self.peers[rank]
                continue
            if record.get("state") == "killed":
                return ""
            if wait_for_supervisor and _alive(record.get("supervisor")):
                continue
            return (f"rank {rank} of {self.size} (pid {record.get('pid')} on {self.host}) vanished "
                    f"{describe(record)}; rank {self.rank} ends the job")
        return None

    def _watch(self, period: float) -> None:
        while not self._stop.wait(period):
            message = self.dead_peer()
            if message is None:
                continue
            if self._stop.is_set():  # the run ended meanwhile
                return
            # Clean up first: a launcher may end this process as soon as it sees more output.
            speak = bool(message) and _claim(self.folder)
            remove_temporary_files()
            end_job()
            if speak:
                tell(f"fastapsp: error: {message}")
            abort_job(self.comm, 1)
            os._exit(1)  # MPI_Abort may return before the launcher ends this process


def note_phase(name: str) -> None:
    """This rank enters a phase of the run (reading, partitioning, computing the components, ...)."""
    job = _JOB
    if job is not None:
        job.set(name, None, None)


def note_stage(component, stage: str) -> None:
    """This rank enters a stage of a component (see :data:`fastapsp.pipeline.STAGES`)."""
    job = _JOB
    if job is not None:
        job.set(job.where[0] if job.where else None, component, stage)


def failed_peer() -> str | None:
    """For a stop signal: the line about a rank beside this one that died (see :meth:`JobStatus.dead_peer`)."""
    job = _JOB
    if job is None:
        return None
    message = job.dead_peer(wait_for_supervisor=False)
    if message and not _claim(job.folder):
        return ""
    return message


def end_job() -> None:
    """The job ends after a failure or a signal: stop watching and remove the job's folder on this host."""
    global _JOB
    job = _JOB
    if job is None:
        return
    _JOB = None
    job._stop.set()
    _remove_folder(job.folder)


# ------------------------------------------------------------------------ files
# A status file holds two slots of JSON (padded with blanks) and, in its first byte, which one is current.
# A new status goes into the other slot, then the byte flips: writing in place costs two small pwrite
# calls (no new file, no rename) and a rank killed halfway still leaves its previous status whole.
_SLOT = 4096


class _StatusFile:
    """One rank's status file, kept open by the rank that writes it."""

    def __init__(self, path: str, *, create: bool) -> None:
        self.fd = os.open(path, os.O_RDWR | (os.O_CREAT | os.O_TRUNC if create else 0), 0o600)
        self.current = None
        if create:
            os.ftruncate(self.fd, 3 * _SLOT)
        else:
            self.current = os.pread(self.fd, 1, 0)

    def write(self, record: dict) -> None:
        payload = json.dumps(record).encode()
        if len(payload) > _SLOT:  # only a huge list of temporary files could do that
            payload = json.dumps(dict(record, temporaries=[])).encode()
        slot = b"1" if self.current == b"0" else b"0"
        os.pwrite(self.fd, payload.ljust(_SLOT), _SLOT * (1 + int(slot)))
        os.pwrite(self.fd, slot, 0)
        self.current = slot

    def close(self) -> None:
        os.close(self.fd)


def _write_record(path: str, record: dict) -> None:
    """Replace the status in the status file ``path`` (a supervisor's or a test's write)."""
    try:
        status = _StatusFile(path, create=False)
    except OSError:  # gone: the job is ending
        return
    try:
        status.write(record)
    except OSError:
        pass
    finally:
        status.close()


def _read_record(path: str) -> dict | None:
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError:
        return None
    if len(data) != 3 * _SLOT or data[:1] not in (b"0", b"1"):
        return None
    start = _SLOT * (1 + int(data[:1]))
    try:
        record = json.loads(data[start : start + _SLOT])
    except ValueError:
        return None
    return record if isinstance(record, dict) else None


def _records(folder: str, host: str) -> list[dict]:
    """The status of every rank of the job on ``host``."""
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    found = (_read_record(os.path.join(folder, name)) for name in names
             if name.startswith("rank") and name.endswith(".status"))
    return [r for r in found if r is not None and r.get("host") == host and isinstance(r.get("rank"), int)]


def _claim(folder: str) -> bool:
    """True for the first process of the job on this host to ask: it prints the failure."""
    try:
        os.close(os.open(os.path.join(folder, "reported"), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
        return True
    except OSError:
        return False


def _remove(path: str) -> None:
    try:
        os.remove(path)
    except OSError:
        pass


def _remove_folder(folder: str) -> None:
    for _ in range(3):  # a rank still running may write its status meanwhile
        shutil.rmtree(folder, ignore_errors=True)
        if not os.path.exists(folder):
            return
        time.sleep(0.01)


def _sweep_stale(tmp: str, mine: str, host: str) -> None:
    """Remove job folders of this user that no running process on this host owns (a job killed whole)."""
    prefix = f"{_PREFIX}{os.getuid()}-"
    try:
        names = [name for name in os.listdir(tmp) if name.startswith(prefix) and name != mine]
    except OSError:
        return
    for name in names:
        folder = os.path.join(tmp, name)
        try:
            everyone = [_read_record(os.path.join(folder, f)) for f in os.listdir(folder) if f.endswith(".status")]
            age = time.time() - os.stat(folder).st_mtime
        except OSError:
            continue
        everyone = [r for r in everyone if r is not None]
        if not everyone and age < _STALE_EMPTY:
            continue  # a job being set up, or a folder we cannot judge yet
        if any(r.get("host") != host or _alive(r.get("pid")) or _alive(r.get("supervisor")) for r in everyone):
            continue
        shutil.rmtree(folder, ignore_errors=True)


# ------------------------------------------------------------------------ small
def _alive(pid) -> bool:
    """True while process ``pid`` runs on this host (a zombie, dead but not yet reaped, is not running)."""
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a launcher that leaves dead ranks unreaped (mpiexec -disable-auto-cleanup) keeps zombies
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except (OSError, IndexError):
        return True


def _plain(component):
    """A component for JSON: an int, a tuple of ints (an SSSP batch), a string or None."""
    if component is None or isinstance(component, str):
        return component
    if isinstance(component, numbers.Integral):
        return int(component)
    if isinstance(component, (list, tuple)):
        return tuple(_plain(c) for c in component)
    return str(component)


def _env_int(names, default):
    for name in names:
        value = os.environ.get(name, "")
        if value.isdigit():
            return int(value)
    return default
