"""The numbers of a large text, parsed by several processes: one run of whole tokens each.

``numpy.fromstring`` holds the interpreter lock while it parses, so threads
would take turns; worker processes do not.  The body is cut at token starts
into one run per worker, the workers are forked (they see the parent's bytes
without a copy) and write their values into one shared anonymous mapping at
their run's offset, which the parent then owns as an ordinary array.

The values are those of one parse of the whole body: ``fromstring`` reads
each token on its own, and the dtype rule is the same (int64 when every token
of the whole body is a whole number within int64, else float64: a run that
was read as int64 while another needed float64 is read again as float64).
Whenever a run cannot be read (a bad token, a count that does not match),
:func:`parse_parallel` returns None and the caller parses the whole body in
one process, which names the first bad token as it always does.

The workers are the cores this process may run on (``os.sched_getaffinity``);
with one core, without ``fork`` or for a body under :data:`PARALLEL_FROM_BYTES`,
nothing here runs.
"""

from __future__ import annotations

import mmap
import multiprocessing
import os
import warnings

import numpy as np

__all__ = ["PARALLEL_FROM_BYTES", "available_cores", "parse_parallel"]

# Below this a fork and its wait cost more than the parse they would share (a short one: docs/kernels.md).
PARALLEL_FROM_BYTES = 4 << 20
# No run smaller than this: a worker's start must be worth its share.
_RUN_BYTES = 2 << 20

# What a worker says through its exit code.
_INT, _FLOAT, _FAILED = 0, 1, 2


def available_cores() -> int:
    """The number of cores this process may run on (its affinity; where unknown, the machine's)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _fork_context():
    try:
        return multiprocessing.get_context("fork")
    except ValueError:
        return None


def parse_parallel(body: bytes, starts: np.ndarray, *, cores: int | None = None) -> np.ndarray | None:
    """Every token of ``body`` as a number, parsed by up to ``cores`` processes; None when not done here.

    Parameters
    ----------
    body : bytes
        Text of numbers separated by whitespace (no comments).
    starts : ndarray of int
        Offset of every token in ``body`` (see ``_token_starts``).
    cores : int, optional
        Processes to use; by default :func:`available_cores`.

    Returns
    -------
    ndarray or None
        int64 values when every token is a whole number that int64 holds, else
        float64 values, exactly as one ``numpy.fromstring`` of the whole body
        gives them.  None when one process should parse it: the body is small,
        one core is available, ``fork`` is not, or some run could not be read.
    """
    cores = available_cores() if cores is None else cores
    context = _fork_context()
    ntokens = int(starts.size)
    if cores < 2 or context is None or len(body) < PARALLEL_FROM_BYTES or ntokens < 2:
        return None
    runs = max(1, min(cores, len(body) // _RUN_BYTES, ntokens))
    if runs < 2:
        return None
    first = [ntokens * r // runs for r in range(runs + 1)]  # token index where each run starts
    bounds = [int(starts[t]) for t in first[:-1]] + [len(body)]
    shared = mmap.mmap(-1, 8 * ntokens)  # anonymous and shared: the workers write, the parent reads
    kinds = _run_all(context, body, shared, bounds, first, range(runs), try_int=True)
    if kinds is None:
        return None
    if all(k == _INT for k in kinds):
        dtype = np.int64
    else:
        again = [r for r, k in enumerate(kinds) if k == _INT]
        if again and _run_all(context, body, shared, bounds, first, again, try_int=False) is None:
            return None
        dtype = np.float64
    return np.frombuffer(shared, dtype=dtype)  # the array keeps the mapping; it is unmapped with the array


def numbers_as(text: bytes, dtype, count: int):
    """The ``count`` whitespace-separated numbers of ``text`` as ``dtype`` (int64 or float64), or None when
    NumPy cannot read them so.

    Older NumPy warns and returns what it read so far instead of raising: the warning counts as a
    failure.  NumPy saturates whole numbers beyond int64 instead of failing (a weight of 1e23 written
    out in digits would silently become 2**63 - 1), so a saturated int64 value is a failure too: such
    text reads as float64, where the checks see the real magnitude and sign.
    """
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", DeprecationWarning)
            values = np.fromstring(text, dtype=dtype, sep=" ")
    except (ValueError, DeprecationWarning):
        return None
    if values.size != count:
        return None
    if dtype is np.int64 and values.size:
        limits = np.iinfo(np.int64)
        if values.max() == limits.max or values.min() == limits.min:
            return None
    return values


def _run_all(context, body, shared, bounds, first, which, *, try_int: bool):
    """Parse the runs ``which`` in one worker each; their kinds (_INT or _FLOAT) in that order, or None when
    some run failed."""
    workers = []
    try:
        with warnings.catch_warnings():
            # Python 3.12+ warns about fork in a process with threads; the workers run NumPy's parser only
            # and leave with os._exit, touching no lock another thread may hold, and no MPI function.
            warnings.simplefilter("ignore", DeprecationWarning)
            for r in which:
                worker = context.Process(target=_parse_run, daemon=True, args=(
                    body, shared, bounds[r], bounds[r + 1], first[r], first[r + 1], try_int))
                worker.start()
                workers.append(worker)
    except (OSError, AssertionError):  # no process left to fork, or this one is a daemon: parse in one
        started = False
    else:
        started = True
    kinds = []
    for worker in workers:
        worker.join()
        kinds.append(worker.exitcode)
    if not started or any(k not in (_INT, _FLOAT) for k in kinds):
        return None
    return kinds


def _parse_run(body, shared, start, end, token, stop, try_int):
    """In a worker: parse ``body[start:end]`` (tokens ``token`` to ``stop``) into ``shared``; exit with its
    kind.  Exits directly (``os._exit``): no handler of the parent (an MPI finalisation) runs here."""
    kind = _FAILED
    try:
        text = body[start:end]
        count = stop - token
        for dtype, code in ((np.int64, _INT), (np.float64, _FLOAT)):
            if dtype is np.int64 and not try_int:
                continue
            values = numbers_as(text, dtype, count)
            if values is None:
                continue
            np.frombuffer(shared, dtype=dtype)[token:stop] = values
            kind = code
            break
    except BaseException:  # noqa: BLE001 - the parent parses again in one process and reports
        kind = _FAILED
    os._exit(kind)
