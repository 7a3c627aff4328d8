"""Where finished row blocks go: a shared ``.npy`` file, host memory, GPU memory, or nowhere.

A sink receives row blocks: ``write(vertices, column_start, block)`` puts
``block[a, j]`` at row ``vertices[a]``, column ``column_start + j``.  Two class
attributes say where it wants them: ``needs_host`` (NumPy blocks, copied from
the GPU by :class:`fastapsp.hostcopy.HostWriter`) and ``on_device`` (CuPy
blocks where they are made, :class:`DeviceSink`); neither: nothing is kept.
"""

from __future__ import annotations

import errno
import fcntl
import glob
import json
import os
import re
import warnings

import numpy as np

from .comm import run_phase
from .errors import OutputWarning
from .temporaries import TEMPORARY_FILES as _TEMPORARY, remove_temporary_files

__all__ = ["NullSink", "MemorySink", "NpySink", "DeviceSink", "DeviceAllocation", "make_sink", "remove_temporary_files",
           "sidecar_path", "publish", "read_sidecar", "check_result"]

_POOL = None
_TASK_BYTES = 4 << 20  # bytes per piece of a threaded copy into the output
SIDECAR_FORMAT = 1

def sidecar_path(path) -> str:
    """The JSON file that certifies a finished ``.npy`` result: ``PATH.json`` next to ``PATH``."""
    return f"{os.fspath(path)}.json"


def _scatter_rows(dest, vertices, column_start, block) -> None:
    """``dest[vertices, start:start + w] = block``, split over a few threads in pieces of about ``_TASK_BYTES``.

    The copy is bound by memory and, on a fresh array, by page faults; NumPy
    releases the GIL while it copies, so threads overlap both.  Pieces are
    whole rows when rows are short, column spans of one row when they are
    long (the few long rows of ``--sources``).  Consecutive ``vertices`` are
    written as one slice.
    """
    global _POOL
    rows, width = block.shape
    vertices = np.asarray(vertices)
    first = int(vertices[0]) if rows else 0
    consecutive = rows > 0 and int(vertices[-1]) - first == rows - 1 and bool(np.all(np.diff(vertices) == 1))

    def piece(r0, r1, c0, c1):
        cols = slice(column_start + c0, column_start + c1)
        if consecutive:
            np.copyto(dest[first + r0 : first + r1, cols], block[r0:r1, c0:c1], casting="unsafe")
        else:
            dest[vertices[r0:r1], cols] = block[r0:r1, c0:c1]

    if block.nbytes < 2 * _TASK_BYTES:
        piece(0, rows, 0, width)
        return
    row_bytes = width * block.itemsize
    if row_bytes <= _TASK_BYTES:
        step = _TASK_BYTES // row_bytes
        pieces = [(r0, min(rows, r0 + step), 0, width) for r0 in range(0, rows, step)]
    else:
        span = max(1, _TASK_BYTES // block.itemsize)
        pieces = [(r, r + 1, c0, min(width, c0 + span)) for r in range(rows) for c0 in range(0, width, span)]
    if _POOL is None:
        from concurrent.futures import ThreadPoolExecutor

        _POOL = ThreadPoolExecutor(max_workers=min(16, os.cpu_count() or 1), thread_name_prefix="fastapsp-sink")
    for future in [_POOL.submit(piece, *p) for p in pieces]:
        future.result()


class NullSink:
    """Discards every block; the GPU path does not even copy them to the host."""

    needs_host = False  # blocks are wanted on the host (copied there by fastapsp.hostcopy.HostWriter)
    on_device = False  # blocks are taken where they are made, on the GPU (DeviceSink)
    certified = False  # commit writes a sidecar of the result's metadata (NpySink), which the caller fills in
    path = None

    def write(self, vertices, column_start, block) -> None:
        return None

    def commit(self) -> None:
        return None

    def abort(self) -> None:
        return None

    def discard(self) -> None:
        return None


class MemorySink(NullSink):
    """Keeps the rows of this rank in one host array of shape (n, n) (``(rows, n)`` when given).

    With one rank this is the whole answer; with no file there is nothing to
    commit or drop (the methods of :class:`NullSink`).  The array is not
    initialised (an n x n fill would cost as much as the copy itself);
    ``rows_written`` tells which rows this rank has filled.
    """

    needs_host = True
    path = None

    def __init__(self, n: int, dtype, *, rows: int | None = None) -> None:
        rows = n if rows is None else rows
        self.result = np.empty((rows, n), dtype=dtype)
        self.rows_written = np.zeros(rows, dtype=bool)

    def write(self, vertices, column_start, block) -> None:
        _scatter_rows(self.result, vertices, column_start, block)
        self.rows_written[vertices] = True


class NpySink:
    """One ``.npy`` file of shape (n, n) (``(rows, n)`` when given) that every rank writes its own rows into.

    Rank 0 creates the file (header and full size) under a temporary name; every
    rank then maps it and writes its rows; :meth:`commit` renames it to ``path``
    once all ranks are done, so a failed run leaves no partial result behind.
    Works past 2 GiB: the file is memory-mapped, never held in memory.
    """

    needs_host = True
    on_device = False
    certified = True

    def __init__(self, path: str, n: int, dtype, *, comm, rows: int | None = None) -> None:
        self.path = os.fspath(path)
        self.comm = comm
        self.dtype = np.dtype(dtype)
        self.n = n
        self.rows = n if rows is None else rows
        self.metadata: dict = {}
        self.lock = None  # rank 0's hold on PATH.lock while the run writes PATH (OutputLock)
        self.tmp = comm.bcast(f"{self.path}.tmp{os.getpid()}" if comm.rank == 0 else None)
        _TEMPORARY.add(self.tmp)  # every rank knows the name, so any rank stopped by a signal can remove it
        try:
            offset = run_phase(comm, "creating the output file", self._create if comm.rank == 0 else lambda: None)
        except BaseException:  # nothing was made (or it was removed): nothing for a signal handler to remove
            _TEMPORARY.discard(self.tmp)
            raise
        offset = comm.bcast(offset)
        self.array = run_phase(comm, "opening the output file", self._open, offset)

    def _create(self) -> int:
        self.lock = OutputLock(self.path)  # another run writing this path is refused here, before any work
        _TEMPORARY.add(self.lock.path)  # a run stopped by a signal removes it with its temporary file
        _clear_stale_temporaries(self.path)
        try:
            mm = np.lib.format.open_memmap(self.tmp, mode="w+", dtype=self.dtype, shape=(self.rows, self.n))
            offset = mm.offset
            del mm
            reserve(self.tmp, self.path)
        except OSError as exc:
            self._unlock()
            try:
                os.remove(self.tmp)
            except OSError:
                pass
            if str(exc).startswith("output "):
                raise
            raise OSError(f"output {self.path}: cannot create {self.tmp}: {exc.strerror or exc}") from None
        return offset

    def _open(self, offset: int):
        if self.n == 0 or self.rows == 0:
            return np.empty((self.rows, self.n), dtype=self.dtype)
        return np.memmap(self.tmp, mode="r+", dtype=self.dtype, offset=offset, shape=(self.rows, self.n))

    def write(self, vertices, column_start, block) -> None:
        _scatter_rows(self.array, vertices, column_start, block)

    def commit(self) -> None:
        """Flush on every rank, then rename and certify on rank 0 (collective).

        The sidecar ``PATH.json`` (see :func:`check_result`) is removed before
        the rename and written after it, so a ``.npy`` with a sidecar that
        matches is complete.
        """
        run_phase(self.comm, "writing the output file", self._flush)
        run_phase(self.comm, "renaming the output file", self._publish if self.comm.rank == 0 else (lambda: None))
        _TEMPORARY.discard(self.tmp)

    def _publish(self) -> None:
        try:
            publish(self.tmp, self.path, dict(self.metadata, n=self.n, dtype=str(self.dtype), unreachable="inf"))
        finally:
            self._unlock()

    def _unlock(self) -> None:
        if self.lock is not None:
            _TEMPORARY.discard(self.lock.path)
            self.lock.release()
            self.lock = None

    def _flush(self) -> None:
        if isinstance(self.array, np.memmap):
            self.array.flush()
        self.array = None

    def abort(self) -> None:
        """Drop the temporary file (called on every rank after a failure)."""
        self.array = None
        _TEMPORARY.discard(self.tmp)
        if self.comm.rank == 0:
            try:
                os.remove(self.tmp)
            except OSError:
                pass
            self._unlock()

    def discard(self) -> None:
        """Drop the temporary file from this rank alone (before it ends the job with Abort)."""
        self.array = None
        _TEMPORARY.discard(self.tmp)
        try:
            os.remove(self.tmp)
        except OSError:
            pass
        self._unlock()


class OutputLock:
    """An exclusive hold on ``PATH.lock`` while one run writes ``PATH``: a second run is refused at once.

    Two runs writing one path would each publish their own file and sidecar, and the last rename of
    each could come from different runs (data of one graph certified by the other's sidecar).  The
    hold is an ``flock``, which the system drops when the process dies, so a lock file left by a
    killed run does not block the next one; the file is removed on release (checked to be the
    file still at that path, so two runs never both hold a lock).
    """

    def __init__(self, path: str) -> None:
        self.path = f"{path}.lock"
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                os.close(fd)
                if exc.errno in (errno.EWOULDBLOCK, errno.EACCES):
                    raise OSError(f"output {path}: another run is writing it ({self.path} is held); wait for "
                                  "that run or choose another path") from None
                raise
            try:
                same = os.fstat(fd).st_ino == os.stat(self.path).st_ino
            except FileNotFoundError:
                same = False
            if same:  # not a file its last holder removed between our open and our lock
                self.fd = fd
                return
            os.close(fd)

    def release(self) -> None:
        if self.fd is None:
            return
        try:
            os.remove(self.path)
        except OSError:
            pass
        os.close(self.fd)
        self.fd = None


def reserve(path: str, output: str) -> None:
    """Give the sparse file ``path`` its blocks now (``posix_fallocate``), so that a full disk is one
    clear error before the compute instead of SIGBUS when a mapped page finds no room.

    File systems that cannot reserve (the call is not supported there) are left as they are.
    """
    size = os.path.getsize(path)
    if size == 0 or not hasattr(os, "posix_fallocate"):
        return
    fd = os.open(path, os.O_RDWR)
    try:
        os.posix_fallocate(fd, 0, size)
    except OSError as exc:
        if exc.errno in (errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS):
            return
        folder = os.path.dirname(os.path.abspath(output))
        raise OSError(f"output {output}: cannot reserve {size / 2**30:.2f} GiB in {folder}: "
                      f"{exc.strerror or exc}; free space there or write elsewhere") from None
    finally:
        os.close(fd)


def make_sink(output, n: int, dtype, *, comm, rows: int | None = None, allocation=None):
    """Sink for the ``output`` value: ``none``, ``memory``, ``device`` or a ``.npy`` path; ``rows`` x n (default n x n).

    ``allocation``: a :class:`DeviceAllocation` already started for a ``device`` output.
    """
    if output is None or str(output) == "none":
        return NullSink()
    if str(output) == "memory":
        return MemorySink(n, dtype, rows=rows)
    if str(output) == "device":
        return DeviceSink(n, dtype, rows=rows, allocation=allocation)
    if not str(output).endswith(".npy"):
        raise ValueError(f"--output: {output!r} is not 'none', 'memory', 'device' or a path ending in .npy")
    return NpySink(output, n, dtype, comm=comm, rows=rows)


def _clear_stale_temporaries(path: str) -> None:
    """Remove the ``PATH.tmpPID`` and ``PATH.json.tmpPID`` files that earlier runs left behind (with a warning).

    Called while this run holds ``PATH.lock`` (:class:`OutputLock`): no other run is writing the path, so
    every temporary file of it is stale, whatever its process does now (a worker whose supervisor was
    killed may outlive it for a moment: its file would otherwise stay for good).
    """
    for stale in glob.glob(glob.escape(path) + ".tmp*") + glob.glob(glob.escape(sidecar_path(path)) + ".tmp*"):
        match = re.fullmatch(r"(?:\.json)?\.tmp(\d+)", stale[len(path):])
        if match is None:
            continue
        try:
            os.remove(stale)
        except OSError as exc:
            warnings.warn(f"output {path}: cannot remove {stale} left by an earlier run: {exc.strerror or exc}",
                          OutputWarning, stacklevel=2)
            continue
        warnings.warn(f"output {path}: removed {stale}, left by a run (process {match.group(1)}) that died or no "
                      "longer writes it", OutputWarning, stacklevel=2)


def publish(tmp, path, record: dict) -> None:
    """Rename the finished file ``tmp`` to ``path`` and certify it with the sidecar ``PATH.json``.

    The old sidecar is removed before the rename and the new one (``record``
    plus the format version, file name and size) written after it, atomically:
    a file whose sidecar exists and matches its size is complete.  Used for
    ``.npy`` results and saved partitions alike.
    """
    path = os.fspath(path)
    sidecar = sidecar_path(path)
    record = dict(record, sidecar_version=SIDECAR_FORMAT, file=os.path.basename(path), bytes=os.path.getsize(tmp))
    # The sidecar is written in full before the data moves: when it cannot be (a full disk), the data
    # stays temporary and nothing half-certified is left.
    tmp_sidecar = f"{sidecar}.tmp{os.getpid()}"
    try:
        with open(tmp_sidecar, "w", encoding="utf-8") as fh:
            json.dump(record, fh, indent=2, sort_keys=True)
            fh.write("\n")
            fh.flush()
            os.fsync(fh.fileno())
    except OSError as exc:
        try:
            os.remove(tmp_sidecar)
        except OSError:
            pass
        raise OSError(f"{sidecar}: cannot write the sidecar: {exc.strerror or exc}") from None
    if os.path.exists(sidecar):
        os.remove(sidecar)
    os.replace(tmp, path)
    os.replace(tmp_sidecar, sidecar)


def read_sidecar(path) -> dict | None:
    """The sidecar record of ``path`` (see :func:`publish`), or None when it has none.

    Raises
    ------
    ValueError
        When the sidecar cannot be read, is not a fastapsp sidecar, or
        records another size than ``path`` has (a partial or replaced file);
        the message names the file.
    """
    path = os.fspath(path)
    sidecar = sidecar_path(path)
    try:
        with open(sidecar, encoding="utf-8") as fh:
            record = json.load(fh)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise ValueError(f"{sidecar}: unreadable sidecar ({exc})") from None
    if not isinstance(record, dict) or "bytes" not in record:
        raise ValueError(f"{sidecar}: not a fastapsp sidecar")
    size = os.path.getsize(path) if os.path.exists(path) else None
    if size != record["bytes"]:
        raise ValueError(f"{path}: {size} bytes, the sidecar records {record['bytes']}; partial or replaced file")
    return record


def check_result(path, *, expect: dict | None = None) -> dict:
    """Tell a complete ``.npy`` result from a partial or foreign one, by its sidecar ``PATH.json``.

    Parameters
    ----------
    path : str or os.PathLike
        The ``.npy`` file written by ``fastapsp solve --output``.
    expect : dict, optional
        Sidecar entries the result must have, e.g. ``{"graph_checksum": ...,
        "dtype": "float64"}`` (see :func:`fastapsp.report.result_metadata`).

    Returns
    -------
    dict
        The sidecar record.

    Raises
    ------
    ValueError
        When the sidecar is missing or unreadable, the file's size differs
        from the one recorded (a partial or replaced file), or an entry of
        ``expect`` differs; the message names the file and the entry.
    """
    path = os.fspath(path)
    record = read_sidecar(path)
    if record is None:
        raise ValueError(f"{path}: no sidecar {sidecar_path(path)}, so not a result certified complete by fastapsp")
    for key, value in (expect or {}).items():
        if record.get(key) != value:
            raise ValueError(f"{path}: {key} is {record.get(key)!r} in the sidecar, expected {value!r}")
    return record


class DeviceAllocation:
    """An uninitialised CuPy array of ``shape`` and ``dtype``, allocated in a background thread.

    Mapping device memory costs about 3 ms a GB (0.15 s for the 52 GB of a
    115k-vertex result in float32 on an H100), and the driver maps it while
    this thread's host work (choosing k, partitioning) and the GPU's first
    stages go on: the wait moves off the critical path.  The thread uses the
    device and stream current where the allocation was asked for, so the
    memory pool files the block as if it had been allocated there.
    :meth:`array` waits for it (and raises what the allocation raised, e.g. an
    out-of-memory error).
    """

    def __init__(self, shape, dtype) -> None:
        import threading

        import cupy

        self.shape, self.dtype = tuple(int(s) for s in shape), np.dtype(dtype)
        self._device, self._stream = cupy.cuda.Device().id, cupy.cuda.get_current_stream()
        self._array = self._error = None
        self._thread = threading.Thread(target=self._allocate, name="fastapsp-device-result", daemon=True)
        self._thread.start()

    def _allocate(self) -> None:
        import cupy

        try:
            with cupy.cuda.Device(self._device), self._stream:
                self._array = cupy.empty(self.shape, dtype=self.dtype)
        except BaseException as exc:  # noqa: BLE001 - raised where the array is wanted
            self._error = exc

    def matches(self, shape, dtype) -> bool:
        return self.shape == tuple(int(s) for s in shape) and self.dtype == np.dtype(dtype)

    def array(self):
        """The array, once allocated."""
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._array

    def release(self) -> None:
        """Drop the array (after the allocation has ended)."""
        self._thread.join()
        self._array = None


class DeviceSink(NullSink):
    """Keeps the rows in one CuPy array on the GPU, of shape (n, n) (``(rows, n)`` when given).

    Row blocks are written where they are made, on the device, before any
    copy (the executor hands them over with the device consumers such as
    ``--stats``): nothing goes to the host.  Blocks of another float dtype are
    converted on the device (a float32 run widened to a float64 result).
    ``rows_written`` (host, bool) tells which rows are filled.  A run in the result's dtype makes
    a component's rows where they lie instead (:meth:`direct`, :meth:`written`).  The array is
    allocated in the background (:class:`DeviceAllocation`; ``allocation``:
    one already started for this shape and dtype) and waited for at the first
    block.
    """

    on_device = True

    def __init__(self, n: int, dtype, *, rows: int | None = None, allocation: DeviceAllocation | None = None) -> None:
        rows = n if rows is None else rows
        if allocation is None or not allocation.matches((rows, n), dtype):
            allocation = DeviceAllocation((rows, n), dtype)
        self._allocation = allocation
        self.rows_written = np.zeros(rows, dtype=bool)

    @property
    def result(self):
        return self._allocation.array()

    def direct(self, dtype):
        """The result itself, for rows made where they lie (the run's ``dtype`` is the result's), else None."""
        return self.result if self._allocation.dtype == np.dtype(dtype) else None

    def written(self, vertices) -> None:
        """Rows made in :meth:`direct`'s array."""
        self.rows_written[np.asarray(vertices)] = True

    def write(self, vertices, column_start, block) -> None:
        vertices = np.asarray(vertices)
        rows, cols = block.shape
        result = self.result
        if vertices.size and vertices[-1] - vertices[0] + 1 == vertices.size and np.all(np.diff(vertices) == 1):
            # a run of rows: one strided copy (and conversion)
            result[int(vertices[0]) : int(vertices[-1]) + 1, column_start : column_start + cols] = block
        elif rows and cols:
            _scatter_rows_device(block, result, vertices, column_start)
        self.written(vertices)

    def abort(self) -> None:
        self._allocation.release()

    def discard(self) -> None:
        self._allocation.release()


# C names of the types a device result holds (distances, 16-bit distances, predecessors).
_C_TYPES = {"float32": "float", "float64": "double", "uint16": "unsigned short", "uint8": "unsigned char",
            "int32": "int"}


def _scatter_options(block_dtype, out_dtype) -> tuple:
    return (f"-DIN_T={_C_TYPES[str(block_dtype)]}", f"-DOUT_T={_C_TYPES[str(out_dtype)]}")


def kernel_variants() -> list[tuple]:
    """The scatter kernels of device results: distances (computed as float32 or float64, kept as either or
    as a narrow whole number) and predecessors (:func:`fastapsp.stages._cuda.kernel_variants`' form)."""
    pairs = [(a, b) for a in ("float32", "float64") for b in ("float32", "float64", "uint16", "uint8")]
    pairs += [("uint16", "uint16"), ("uint8", "uint8"), ("int32", "int32")]
    return [("scatter_rows.cu", "scatter_rows", "float32", "int32", _scatter_options(a, b)) for a, b in pairs]


def _scatter_rows_device(block, out, vertices, column_start: int) -> None:
    """``out[vertices[r], column_start:][:cols] = block[r]`` on the device (``kernels/scatter_rows.cu``)."""
    import cupy

    from .kernels import get_kernel

    rows, cols = block.shape
    if not (cols <= 1 or block.strides[1] == block.itemsize) or block.strides[0] % block.itemsize:
        block = cupy.ascontiguousarray(block)
    ldb = block.strides[0] // block.itemsize if rows > 1 else cols
    kernel = get_kernel("scatter_rows.cu", "scatter_rows", np.float32, options=_scatter_options(block.dtype, out.dtype))
    grid = (max(1, min(-(-cols // 1024), 1024)), min(rows, 65535))
    kernel(grid, (256,), (block, np.int64(ldb), out, np.int64(out.shape[1]), cupy.asarray(vertices, dtype=np.int64),
                          np.int64(column_start), np.int64(cols), np.int32(rows)))
