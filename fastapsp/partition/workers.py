"""Forked worker processes that each hold a copy of one state object, for the refinement's pairwise cuts
and the pieces of Jet's initial partition (:mod:`fastapsp.partition.initial`).

:class:`ForkedWorkers` forks ``count`` processes after the state is built, so
every worker starts with the parent's arrays (the graph's CSR structure is
shared copy-on-write and only read).  ``map(tasks)`` calls
``state.solve(*task)`` in whichever worker is free and returns the results
in the order of the tasks; ``broadcast(updates)`` calls ``state.apply(*update)``
in every worker, so their copies follow the parent's.  The results are those
of the same calls in one process, whatever the number of workers.
``start(task)`` / ``finish()`` run one call in a forked worker while the
caller goes on (the refinement's restart layout).

A worker that raises sends the traceback and exits; one that dies (killed,
out of memory) is seen through its sentinel; either way ``map`` and
``finish`` raise :class:`WorkerError` naming the task, and leaving the
``with`` block ends every worker (asked to stop, killed after
``STOP_SECONDS``; terminated at once when the block ends by an exception).
A worker is killed by Linux when its parent ends (``PR_SET_PDEATHSIG``), so a
parent killed by a timeout leaves none computing on.

:func:`worker_count` resolves how many workers to use.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import time
import traceback
from multiprocessing.connection import wait

__all__ = ["ForkedWorkers", "WorkerError", "worker_count", "WORKERS_ENV"]

WORKERS_ENV = "FASTAPSP_REFINE_WORKERS"
STOP_SECONDS = 5.0


class WorkerError(RuntimeError):
    """A worker process raised or died while solving a task."""


def _mpi_running() -> bool:
    """True when mpi4py is imported and MPI is initialised (and not finalised) in this process."""
    mpi = sys.modules.get("mpi4py.MPI")
    if mpi is None:
        return False
    try:
        return bool(mpi.Is_initialized()) and not bool(mpi.Is_finalized())
    except Exception:
        return True


def worker_count(requested: int | None = None, *, brief: bool = False) -> int:
    """Worker processes for the pairwise cuts (and the pieces of Jet's initial partition).

    ``requested`` when given; else the environment variable
    ``FASTAPSP_REFINE_WORKERS``; else the CPUs this process may run on
    (``os.sched_getaffinity``), or 1 inside an initialised MPI process (forking
    an MPI rank is not safe with every MPI library and transport: set the
    variable to opt in) and where processes cannot be forked.  1 means no
    worker process: the cuts run in the calling process.

    ``brief``: the workers only compute (METIS calls) while this process
    makes no MPI call, and all end before it makes one (the pieces of Jet's
    coarsest graph); such workers fork inside an MPI process too, as the text
    parser's do (:mod:`fastapsp.io.parallel`): with one rank per GPU, a rank
    solving its share of the pieces one after the other would take several
    times as long as its workers do.

    Raises
    ------
    ValueError
        When ``requested`` or the variable is not an integer of at least 1.
    """
    if requested is None:
        text = os.environ.get(WORKERS_ENV, "").strip()
        if text:
            try:
                requested = int(text)
            except ValueError:
                raise ValueError(f"{WORKERS_ENV}: {text!r} is not an integer; allowed: 1 or more") from None
            if requested < 1:
                raise ValueError(f"{WORKERS_ENV}: {requested} is below 1; allowed: 1 or more")
    elif int(requested) < 1:
        raise ValueError(f"workers: {requested} is below 1; allowed: 1 or more")
    if requested is not None:
        return int(requested) if "fork" in multiprocessing.get_all_start_methods() else 1
    if "fork" not in multiprocessing.get_all_start_methods() or (_mpi_running() and not brief):
        return 1
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)


def _die_with_parent(parent: int) -> None:
    """Have Linux kill this process when its parent ends (a parent killed by a timeout leaves no worker behind)."""
    try:
        import ctypes
        import signal

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except Exception:  # not Linux: the closed pipe still ends the worker once it waits for a task
        return
    if os.getppid() != parent:  # the parent ended before the request
        os._exit(1)


def _serve(conn, state, parent: int) -> None:
    """A worker's loop: ("solve", task) -> ("ok", result); ("apply", updates) -> no reply; None -> exit."""
    _die_with_parent(parent)
    try:
        while True:
            message = conn.recv()
            if message is None:
                return
            what, payload = message
            if what == "solve":
                start = time.perf_counter()
                result = state.solve(*payload)
                conn.send(("ok", result, time.perf_counter() - start))
            else:
                for update in payload:
                    state.apply(*update)
    except EOFError:  # the parent went away
        return
    except BaseException:
        try:
            conn.send(("error", traceback.format_exc()))
        except Exception:
            pass
        raise SystemExit(1)
    finally:
        conn.close()


class ForkedWorkers:
    """``count`` forked copies of ``state``; with ``count == 1`` the calls run on ``state`` itself.

    ``fork=True`` forks even one worker (for :meth:`start`, a call that runs
    while the caller goes on).  Use as a context manager, so the workers end
    however the block ends.  The workers are not daemons, so they may fork
    workers of their own; should the parent die, each one's pipe reports the
    end of file and it exits.
    """

    def __init__(self, state, count: int, *, fork: bool | None = None, name: str = "refine"):
        self.state = state
        self.name = name  # what the workers do, for the messages
        self.count = int(count)
        self.fork = self.count > 1 if fork is None else bool(fork)
        self.started = None  # the task of start(), until finish()
        self.finish_seconds = 0.0  # seconds of the call that finish() answered
        self.workers: list = []  # (process, parent's end of the pipe)
        self.round_seconds: list = []  # per map: (seconds of all its tasks, seconds of the longest)
        self.broadcast_seconds = 0.0

    def __enter__(self):
        if self.fork:
            context = multiprocessing.get_context("fork")
            try:
                for _ in range(self.count):
                    mine, theirs = context.Pipe()
                    process = context.Process(target=_serve, args=(theirs, self.state, os.getpid()), daemon=False)
                    process.start()
                    theirs.close()
                    self.workers.append((process, mine))
            except BaseException:
                self.close(force=True)
                raise
        return self

    def __exit__(self, kind, value, tb):
        self.close(force=kind is not None)
        return False

    def map(self, tasks: list) -> list:
        """``state.solve(*task)`` for every task, in a free worker; the results in the order of ``tasks``."""
        seconds = [0.0] * len(tasks)
        if not self.workers:
            results = []
            for i, task in enumerate(tasks):
                start = time.perf_counter()
                results.append(self.state.solve(*task))
                seconds[i] = time.perf_counter() - start
            self.round_seconds.append((sum(seconds), max(seconds, default=0.0)))
            return results
        results = [None] * len(tasks)
        idle = list(range(len(self.workers)))
        busy: dict = {}  # worker -> task index
        waiting = 0
        done = 0
        while done < len(tasks):
            while idle and waiting < len(tasks):
                w = idle.pop()
                self._send(w, ("solve", tasks[waiting]), tasks[waiting])
                busy[w] = waiting
                waiting += 1
            ends = {self.workers[w][1]: w for w in busy}
            sentinels = {self.workers[w][0].sentinel: w for w in busy}
            for ready in wait(list(ends) + list(sentinels)):
                w = ends.get(ready, sentinels.get(ready))
                if w not in busy:  # both its pipe and its sentinel were ready; handled once
                    continue
                results[busy[w]], seconds[busy[w]] = self._receive(w, tasks[busy[w]])
                busy.pop(w)
                idle.append(w)
                done += 1
        self.round_seconds.append((sum(seconds), max(seconds, default=0.0)))
        return results

    def _receive(self, w: int, task):
        """The answer of worker ``w`` to ``task`` and its seconds; WorkerError when it raised or died."""
        process, conn = self.workers[w]
        if not conn.poll() and wait([conn, process.sentinel]) == [process.sentinel] and not conn.poll():
            process.join(STOP_SECONDS)
            raise WorkerError(f"{self.name} worker process {process.pid} exited with code {process.exitcode} "
                              f"while solving task {task}")
        try:
            status, value, *took = conn.recv()
        except EOFError:
            process.join(STOP_SECONDS)
            raise WorkerError(f"{self.name} worker process {process.pid} exited with code {process.exitcode} "
                              f"while solving task {task} (its pipe closed)") from None
        if status != "ok":
            last = value.strip().splitlines()[-1] if value.strip() else "no traceback"
            raise WorkerError(f"{self.name} worker process {process.pid} failed on task {task}: {last}\n{value}")
        return value, took[0]

    def start(self, task) -> None:
        """Begin ``state.solve(*task)`` in the first worker and return at once (in-process: at :meth:`finish`)."""
        self.started = task
        if self.workers:
            self._send(0, ("solve", task), task)

    def finish(self):
        """The answer of the call that :meth:`start` began."""
        task, self.started = self.started, None
        if not self.workers:
            clock = time.perf_counter()
            value = self.state.solve(*task)
            self.finish_seconds = time.perf_counter() - clock
            return value
        value, self.finish_seconds = self._receive(0, task)
        return value

    def broadcast(self, updates: list) -> None:
        """``state.apply(*update)`` for every update, in every worker (the parent applies its own)."""
        if not self.workers or not updates:
            return
        start = time.perf_counter()
        for w in range(len(self.workers)):
            self._send(w, ("apply", updates), "apply")
        self.broadcast_seconds += time.perf_counter() - start

    def _send(self, w: int, message, task) -> None:
        process, conn = self.workers[w]
        try:
            conn.send(message)
        except (BrokenPipeError, ConnectionResetError, EOFError, OSError):
            process.join(STOP_SECONDS)
            raise WorkerError(f"{self.name} worker process {process.pid} is gone (exit code {process.exitcode}) "
                              f"before task {task}") from None

    def close(self, *, force: bool = False) -> None:
        """Stop every worker: asked to exit (or terminated at once when ``force``), then joined."""
        for process, conn in self.workers:
            if not force and process.is_alive():
                try:
                    conn.send(None)
                except Exception:
                    pass
        for process, conn in self.workers:
            if force:
                process.terminate()
            process.join(STOP_SECONDS)
            if process.is_alive():
                process.kill()
                process.join()
            conn.close()
        self.workers = []
