"""Choosing between the NumPy/SciPy reference path and the CuPy (GPU) path.

The user picks a backend once (``auto``, ``numpy`` or ``cupy``); every stage
then takes its array module from the arrays it is given.
"""

from __future__ import annotations

import functools
import os

import numpy as np

from .errors import BackendError

__all__ = ["BACKENDS", "resolve_backend", "mark_gpu_warm", "gpu_warm", "array_module", "gpu_count", "gpu_name", "device_csr", "start_gpu_warmup",
           "available_bytes", "host_available_bytes"]

BACKENDS = ("auto", "numpy", "cupy")


def gpu_count() -> int:
    """Number of CUDA devices CuPy can see (0 when CuPy or a driver is missing)."""
    try:
        import cupy
    except Exception:
        return 0
    try:
        return int(cupy.cuda.runtime.getDeviceCount())
    except Exception:
        return 0


# Launcher variables that give a process's rank on its node (Open MPI, MPICH/Hydra, SLURM).
_LOCAL_RANK_VARS = ("OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID")


def launcher_local_rank(ranks: int) -> int | None:
    """This process's rank on its node as its launcher says it: 0 for one process, None where no launcher
    variable says it (a process's GPU is then chosen by :func:`fastapsp.comm.select_device` alone)."""
    if ranks == 1:
        return 0
    return next((int(os.environ[v]) for v in _LOCAL_RANK_VARS if os.environ.get(v, "").isdigit()), None)


def start_gpu_warmup(backend: str, ranks: int):
    """Import CuPy and create the CUDA context in a background thread; returns the thread or None.

    Starting CUDA takes a good part of a second; done while the graph is read
    and partitioned on the CPU, it is off the critical path.  The thread only
    prepares: the device is still chosen by :func:`fastapsp.comm.select_device`,
    and any failure here is left for the real path to meet and report.  The
    context is made on the device that this process will use: device 0 for
    one process, else ``local rank mod visible devices`` when the launcher
    says the local rank (no context is made on another process's GPU).
    The thread also starts the check of the kernel cache (and, on a machine
    that has not built them, the compilation of every kernel variant:
    :mod:`fastapsp.kernels.catalog`); :func:`fastapsp.execute.execute` waits
    for it.  The thread competes with the reading for the interpreter (the
    read is a little slower with it), but without it the GPU partitioner
    waited for CUDA instead.
    """
    if backend == "numpy":
        return None
    import threading

    local = launcher_local_rank(ranks)

    def warm():
        try:
            import cupy

            count = cupy.cuda.runtime.getDeviceCount()
            if count and local is not None:
                with cupy.cuda.Device(local % count):
                    cupy.cuda.runtime.free(0)  # creates the device's primary context
                    from .kernels.catalog import ensure_built

                    # Reads the compiler banners kept by the build first (CuPy then finds its cached kernels,
                    # compiling nothing); a first run on this machine compiles.
                    ensure_built(device=local % count, background=True)
        except Exception:  # noqa: BLE001 - the real path reports problems
            pass

    thread = threading.Thread(target=warm, name="fastapsp-gpu-warmup", daemon=True)
    thread.start()
    return thread


_GPU_WARM = False  # True once this process has finished work on its GPU


def mark_gpu_warm() -> None:
    """Note that this process has finished work on its GPU (a solve, a Jet partition): its CUDA
    context is made and the kernels a run launches are loaded, so the next run pays only its work
    (:func:`fastapsp.partition.auto_partitioner` takes Jet from a smaller size then)."""
    global _GPU_WARM
    _GPU_WARM = True


def gpu_warm() -> bool:
    """Whether :func:`mark_gpu_warm` was called in this process."""
    return _GPU_WARM


def resolve_backend(name: str) -> str:
    """Turn ``auto|numpy|cupy`` into the backend that will run: ``numpy`` or ``cupy``.

    Raises
    ------
    ValueError
        For an unknown name.
    BackendError
        When ``cupy`` is asked for and no GPU is usable.
    """
    if name not in BACKENDS:
        raise ValueError(f"backend: {name!r} is not one of {', '.join(BACKENDS)}")
    if name == "numpy":
        return "numpy"
    if gpu_count() > 0:
        return "cupy"
    if name == "cupy":
        raise BackendError(
            "backend 'cupy': no usable GPU (CuPy missing or no CUDA device visible); "
            "install the 'gpu' extra or use --backend numpy"
        )
    return "numpy"


def array_module(*arrays):
    """``cupy`` if any argument is a CuPy array, else ``numpy``."""
    for a in arrays:
        if type(a).__module__.startswith("cupy"):
            import cupy

            return cupy
    return np


@functools.lru_cache(maxsize=None)
def _device_properties(device: int) -> dict:
    """CUDA's properties of device ``device``, asked once a process: they do not change, and the query
    waits behind whatever the driver is doing (a result of tens of gigabytes being mapped in the
    background, :class:`fastapsp.sink.DeviceAllocation`), which the host work that follows need not."""
    import cupy

    return cupy.cuda.runtime.getDeviceProperties(device)


def gpu_name(device: int) -> str:
    """Product name of CUDA device ``device`` (e.g. "NVIDIA H100 80GB HBM3")."""
    name = _device_properties(device)["name"]
    return name.decode() if isinstance(name, bytes) else str(name)


def gpu_total_bytes(device: int) -> int:
    """The memory of CUDA device ``device`` in bytes."""
    return int(_device_properties(device)["totalGlobalMem"])


def device_csr(graph, xp):
    """The graph's CSR arrays ``(indptr, indices, weights)`` on ``xp``, cached per device.

    The host arrays are returned as they are for NumPy; for CuPy one upload is
    made per graph and device and reused by every component.
    """
    if xp is np:
        return graph.indptr, graph.indices, graph.weights
    key = ("csr", xp.cuda.Device().id)
    if key not in graph._cache:
        graph._cache[key] = (xp.asarray(graph.indptr), xp.asarray(graph.indices), xp.asarray(graph.weights))
    return graph._cache[key]


def host_available_bytes() -> int | None:
    """The host memory available to new allocations (Linux ``MemAvailable``), or None where unknown."""
    try:
        with open("/proc/meminfo") as fh:
            info = dict(line.split(":", 1) for line in fh)
        return int(info["MemAvailable"].split()[0]) * 1024
    except (OSError, KeyError, ValueError):
        return None


def available_bytes(xp) -> int:
    """Memory a row block may use: most of the free GPU memory, half the free host memory."""
    if xp is not np:
        free, _ = xp.cuda.runtime.memGetInfo()
        return int(0.85 * (free + xp.get_default_memory_pool().free_bytes()))
    host = host_available_bytes()
    return 4 << 30 if host is None else host // 2

