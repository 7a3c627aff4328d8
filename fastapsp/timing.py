"""Seconds per stage of a run, on the host or on the GPU (:class:`StageTimer`)."""

from __future__ import annotations

import time
from contextlib import contextmanager

import numpy as np

from .errors import StageError
from .watch import note_stage, place

__all__ = ["STAGES", "StageTimer"]

STAGES = ("sssp", "local_fw", "boundary_graph", "boundary_rows", "build", "floyd_warshall", "extract", "min_plus",
          "assemble", "stats", "host_copy", "write")



class StageTimer:
    """Seconds per stage.

    On the host, the wall clock around each stage.  On the GPU, the seconds of
    the compute stream between two events recorded as the stage begins and
    ends: the host does not wait for the device at every stage, so it queues
    the next stages (Python, launches) while the device still runs the last
    ones, and a run of a thousand components does not pay its host time on top
    of its device time.  A stage that the device reaches late (still busy with
    an earlier one) is timed from where the device reaches it.  ``seconds``
    waits for the device.  ``StageTimer.synchronise = True`` (set by the
    command line's ``--debug``), or any listener, synchronises at the end of
    every stage and reads the clock instead: slower, but a failing kernel is
    then named by the stage that ran it.

    ``StageTimer.listeners``: callables told the name of every stage as it ends
    (after the synchronisation), e.g. to sample memory (``benchmarks/memory_check.py``).
    """

    listeners: list = []
    synchronise = False
    _RESOLVE_EVERY = 256  # pending event pairs read back (those already passed) once this many wait

    def __init__(self, xp) -> None:
        self.xp = xp
        self._seconds = dict.fromkeys(STAGES, 0.0)
        self._pending: list = []  # (stage, begin event, end event) not read yet
        self._spare: list = []  # events already read, recorded again by later stages (creating one costs more)
        self.events = xp is not np and not StageTimer.synchronise
        self.component = None  # the component (or SSSP batch) being computed, named in errors
        self.notes: dict = {}  # what a stage records beside its seconds, for the report (e.g. "upper_levels")

    @property
    def seconds(self) -> dict:
        """Seconds per stage (on the GPU, after the device has finished every stage timed so far)."""
        self._resolve(wait=True)
        return self._seconds

    @contextmanager
    def __call__(self, name: str, *, sync: bool = True):
        note_stage(self.component, name)  # named by the supervisor if this rank is killed here
        events = sync and self.events and not StageTimer.listeners
        if events:
            begin = self._event()
            begin.record()
        start = time.perf_counter()
        try:
            yield
        except StageError:
            raise
        except Exception as exc:  # say which component and stage failed, e.g. a GPU out of memory
            raise StageError(f"{place(self.component, name)}: {type(exc).__name__}: {exc}", component=self.component,
                             stage=name) from exc
        if events:
            end = self._event()
            end.record()
            self._pending.append((name, begin, end))
            if len(self._pending) >= self._RESOLVE_EVERY:
                self._resolve(wait=False)
            return
        if sync and self.xp is not np:
            # The compute stream only: copies to the host run on their own stream.
            self.xp.cuda.get_current_stream().synchronize()
        self._seconds[name] += time.perf_counter() - start
        for listener in StageTimer.listeners:
            listener(name)

    def _resolve(self, *, wait: bool) -> None:
        """Add the seconds of the pending stages the device has passed (all of them with ``wait``)."""
        done = 0
        for name, begin, end in self._pending:
            if wait:
                end.synchronize()
            elif not end.done:
                break  # one stream: the later ones are not done either
            self._seconds[name] += self.xp.cuda.get_elapsed_time(begin, end) / 1e3
            self._spare += (begin, end)
            done += 1
        del self._pending[:done]

    def _event(self):
        return self._spare.pop() if self._spare else self.xp.cuda.Event()

