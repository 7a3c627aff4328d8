"""The CUDA kernels of fastapsp: ``.cu`` sources shipped with the package, compiled at first use.

Each ``.cu`` file is compiled by CuPy (NVRTC, for the architecture of the current
device) into one :class:`cupy.RawModule` per file, distance type, index type,
options and device, and kept for the life of the process; CuPy also keeps the
binaries on disk.  Where ``fastapsp build-kernels --aot`` left a binary of the
module that this device can run (:mod:`fastapsp.kernels.binaries`), that file
is loaded instead, and NVRTC compiles only what is not there or fails to load.
Nothing here imports CuPy or compiles at import time.  The text of a module
(its macros as ``#define`` lines, its includes inlined) is made by
:mod:`fastapsp.kernels.source`.
"""

from __future__ import annotations

import warnings

import numpy as np

from .source import KERNEL_DIR, kernel_source, module_code, module_key

__all__ = ["get_kernel", "kernel_source", "module_code", "module_key", "loaded_modules", "prebuilt_modules",
           "KERNEL_DIR"]

_modules: dict = {}
_functions: dict = {}
_prebuilt: set = set()  # the keys of _modules loaded from prebuilt binaries


def loaded_modules() -> list[tuple]:
    """:func:`module_key` of every module this process has built or loaded so far."""
    return sorted({key[:3] for key in _modules})


def prebuilt_modules() -> list[tuple]:
    """:func:`module_key` of the modules of :func:`loaded_modules` that came from prebuilt binaries."""
    return sorted({key[:3] for key in _prebuilt})


def _load_prebuilt(file: str, flags: tuple, cooperative: bool, name: str):
    """The module loaded from its prebuilt binary for the current device, or ``None`` (NVRTC compiles it): no
    binary, or one that failed to load (one warning naming the file and why)."""
    import cupy

    from ..errors import PrebuiltKernelWarning
    from .binaries import prebuilt_binary

    path = prebuilt_binary((file, flags, cooperative), "sm_" + cupy.cuda.Device().compute_capability)
    if path is None:
        return None
    try:
        module = cupy.RawModule(path=path, enable_cooperative_groups=cooperative)
        module.get_function(name)  # the file is loaded here (the driver compiles PTX now), so a failure falls back
    except Exception as exc:  # noqa: BLE001 - a driver too old for the PTX, a damaged file: compile instead
        warnings.warn(f"fastapsp: prebuilt kernel binary {path} not loaded ({type(exc).__name__}: "
                      f"{' '.join(str(exc).split())}); compiling {file} with NVRTC instead", PrebuiltKernelWarning,
                      stacklevel=3)
        return None
    return module


def get_kernel(file: str, name: str, dtype=np.float32, *, index_dtype=np.int32, options: tuple = (),
               cooperative: bool = False):
    """The compiled kernel ``name`` of ``fastapsp/kernels/<file>``: loaded from its prebuilt binary, or built by
    NVRTC, on first use.

    Parameters
    ----------
    file : str
        Kernel source file, e.g. ``"min_plus.cu"``.
    name : str
        ``extern "C"`` kernel name in that file.
    dtype : {float32, float64}
        Distance type, compiled in as ``REAL``.
    index_dtype : {int32, int64}
        Type of graph ids and offsets (``index_t`` in the sources).
    options : tuple of str
        Extra NVRTC options (``-D`` macros and the like).
    cooperative : bool
        Build for cooperative launches (grid-wide barriers); launch the kernel
        with ``enable_cooperative_groups=True``.

    Returns
    -------
    cupy.cuda.Function
        Call it as ``kernel(grid, block, args, shared_mem=0)``.

    Raises
    ------
    TypeError
        For a ``dtype`` or ``index_dtype`` the kernels are not built for.
    """
    import cupy

    file, flags, cooperative = module_key(file, dtype, index_dtype, options, cooperative)
    key = (file, flags, cooperative, cupy.cuda.Device().id)
    function = _functions.get((key, name))
    if function is None:
        module = _modules.get(key)
        if module is None:
            module = _load_prebuilt(file, flags, cooperative, name)
            if module is not None:
                _prebuilt.add(key)
            else:
                # CuPy picks -arch for the current device (sm_XX when NVRTC knows it).
                code, compile_options = module_code(file, flags)
                module = cupy.RawModule(code=code, options=compile_options,
                                        enable_cooperative_groups=bool(cooperative))
            _modules[key] = module
        function = module.get_function(name)
        _functions[(key, name)] = function
    return function
