"""A stand-in for CuPy on NumPy that records every operator between a "device" array and a scalar.

DEVELOPERS.md: on the GPU path an operation between a CuPy array and a scalar
is called as a function (``xp.subtract(a, 1)``), because CuPy hands ``a - 1``
to NumPy's ufunc dispatch, whose CuPy side imports ``cupyx`` and SciPy's
sparse module.  No GPU is needed to find such operators: :func:`install` puts
a module named ``cupy`` built on NumPy into ``sys.modules``, so that
``_array_module`` returns it, ``xp is not np`` and the CuPy branches of
fastapsp run on the CPU.

* Its arrays are :class:`Arr`, an ``ndarray`` subclass whose module name starts
  with ``cupy`` (as fastapsp's checks read it).  It survives ``xp.*`` calls and
  indexing; integer indexing and reductions give 0-d arrays, as CuPy's do;
  ``xp.asarray`` of a host array copies it, ``.get()`` and ``xp.asnumpy``
  return a plain ``ndarray``; sorts are stable, as CuPy's are.
* Every ufunc call with an :class:`Arr` operand and an operand that is not one
  (a Python or NumPy scalar, or a NumPy array) reaches
  ``Arr.__array_ufunc__``, which reads the bytecode instruction that the
  calling frame (the first outside this file and NumPy) is executing:
  ``BINARY_OP`` (not in place) or ``COMPARE_OP`` is an operator, recorded in
  :attr:`Arr.sites`; ``BINARY_OP`` in place (``a -= 1``: CuPy handles it
  itself) and a call (``xp.subtract(a, 1)``) are fine.  ``frame.f_lasti`` is
  the offset of an instruction of ``dis.get_instructions`` on Python 3.10 and
  later; 3.10 has an instruction per operator (``BINARY_SUBTRACT``,
  ``INPLACE_SUBTRACT``), 3.11 and later ``BINARY_OP``.
"""

from __future__ import annotations

import dis
import os
import sys
import types
from collections import Counter
from typing import NamedTuple

import numpy as np

NB_INPLACE_ADD = 13  # BINARY_OP's opargs from here on are the in-place operators (3.11 and later)
_OPS_310 = {"ADD": "+", "SUBTRACT": "-", "MULTIPLY": "*", "TRUE_DIVIDE": "/", "FLOOR_DIVIDE": "//", "MODULO": "%",
            "POWER": "**", "AND": "&", "OR": "|", "XOR": "^", "LSHIFT": "<<", "RSHIFT": ">>",
            "MATRIX_MULTIPLY": "@"}  # Python 3.10: one instruction per operator, BINARY_SUBTRACT, INPLACE_SUBTRACT, ...
_NUMPY_DIR = os.path.dirname(np.__file__) + os.sep
_HERE = os.path.abspath(__file__)


class Site(NamedTuple):
    """A line of Python where a ufunc met an :class:`Arr` and a scalar operand."""

    filename: str
    line: int
    function: str
    ufunc: str  # e.g. "subtract.__call__"
    kind: str  # "operator", "in-place", "function" or "unknown" (no instruction found at the frame's offset)
    op: str  # the operator ("-", "<", ...) or the instruction's name

    def __str__(self) -> str:
        return f"{self.filename}:{self.line} ({self.function}) {self.ufunc} {self.kind} {self.op!r}"


_instructions: dict = {}  # code object -> {offset: instruction}


def _instruction(frame):
    code = frame.f_code
    table = _instructions.get(code)
    if table is None:
        table = _instructions[code] = {ins.offset: ins for ins in dis.get_instructions(code)}
    return table.get(frame.f_lasti)


def _classify(ins) -> tuple[str, str]:
    if ins is None:
        return "unknown", "?"
    if ins.opname == "BINARY_OP":
        # 3.14 adds NB_SUBSCR after the in-place opargs: in place means also an argrepr like "-=".
        if ins.arg >= NB_INPLACE_ADD and ins.argrepr.endswith("="):
            return "in-place", ins.argrepr
        return "operator", ins.argrepr
    kind, _, name = ins.opname.partition("_")
    if kind in ("BINARY", "INPLACE") and name in _OPS_310:
        return ("operator" if kind == "BINARY" else "in-place"), _OPS_310[name] + ("=" if kind == "INPLACE" else "")
    if ins.opname == "COMPARE_OP":
        return "operator", ins.argrepr.removeprefix("bool(").removesuffix(")")  # 3.13: "bool(<)" before a jump
    return "function", ins.opname


def _foreign(x) -> bool:
    """An operand CuPy does not hold: a Python or NumPy scalar, or a NumPy array."""
    return isinstance(x, (int, float, complex, np.generic, np.ndarray)) and not isinstance(x, Arr)


def _record(ufunc, method: str, inputs) -> None:
    if Arr.sites is None or not any(isinstance(x, Arr) for x in inputs) or not any(_foreign(x) for x in inputs):
        return
    frame = sys._getframe(2)  # the caller of Arr.__array_ufunc__
    while frame is not None and (frame.f_code.co_filename == _HERE
                                 or frame.f_code.co_filename.startswith(_NUMPY_DIR)):
        frame = frame.f_back
    if frame is None:
        return
    kind, op = _classify(_instruction(frame))
    code = frame.f_code
    name = getattr(code, "co_qualname", code.co_name)
    Arr.sites[Site(code.co_filename, frame.f_lineno, name, f"{ufunc.__name__}.{method}", kind, op)] += 1


def _wrap(x):
    """NumPy results as fake device arrays: arrays as :class:`Arr`, NumPy scalars as 0-d arrays."""
    if isinstance(x, Arr):
        return x
    if isinstance(x, np.ndarray):
        return x.view(Arr)
    if isinstance(x, np.generic):
        return np.asarray(x).view(Arr)
    if isinstance(x, tuple):
        return tuple(_wrap(y) for y in x)
    if isinstance(x, list):
        return [_wrap(y) for y in x]
    return x


def plain(x):
    """Fake device arrays (also inside tuples and lists) as plain ``ndarray`` views of the same memory."""
    if isinstance(x, Arr):
        return x.view(np.ndarray)
    if isinstance(x, (tuple, list)):
        return type(x)(plain(y) for y in x)
    return x


class Arr(np.ndarray):
    """A fake CuPy array: an ``ndarray`` whose operations with a scalar operand are looked at."""

    __module__ = "cupy_fake"  # fastapsp tells CuPy arrays by type(a).__module__.startswith("cupy")
    sites: Counter | None = None  # set by install()

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        _record(ufunc, method, inputs)
        out = kwargs.get("out")
        if out is not None:
            kwargs["out"] = plain(out)
        result = getattr(ufunc, method)(*plain(inputs), **kwargs)
        if out is not None:
            return out[0] if len(out) == 1 else out
        return _wrap(result)

    def __getitem__(self, key):
        return _wrap(np.ndarray.__getitem__(self.view(np.ndarray), plain(key)))

    def __setitem__(self, key, value):
        np.ndarray.__setitem__(self.view(np.ndarray), plain(key), plain(value))

    def get(self):
        return np.array(self.view(np.ndarray))

    def argsort(self, axis=-1):
        return _wrap(self.view(np.ndarray).argsort(axis=axis, kind="stable"))

    def sort(self, axis=-1):
        self.view(np.ndarray).sort(axis=axis, kind="stable")

    def argmax(self, *args, **kwargs):
        return _wrap(self.view(np.ndarray).argmax(*args, **kwargs))

    def argmin(self, *args, **kwargs):
        return _wrap(self.view(np.ndarray).argmin(*args, **kwargs))

    def nonzero(self):
        return _wrap(self.view(np.ndarray).nonzero())


_METADATA = {"ndim", "size", "shape", "isscalar", "can_cast", "result_type", "promote_types", "issubdtype"}


class FakeCupy(types.ModuleType):
    """The module ``cupy``: NumPy's names, functions returning :class:`Arr`, ufuncs as they are."""

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)  # no __path__, __file__, ...: not a package, nothing of NumPy's
        if name == "cuda":
            device = types.SimpleNamespace(synchronize=lambda: None)
            return types.SimpleNamespace(Device=lambda *args: device)
        if name == "ndarray":
            return Arr
        if name == "asnumpy":
            return lambda a: np.array(plain(a))
        if name in ("asarray", "array"):
            return _asarray
        obj = getattr(np, name)
        if isinstance(obj, (type, np.ufunc, types.ModuleType)) or not callable(obj):
            return obj  # dtypes, constants; ufuncs reach Arr.__array_ufunc__ themselves

        def call(*args, **kwargs):
            if name in ("argsort", "sort"):
                kwargs.setdefault("kind", "stable")  # CuPy's sorts are stable
            result = obj(*plain(args), **{key: plain(value) for key, value in kwargs.items()})
            if isinstance(result, (bool, int, float)) and name not in _METADATA:
                result = np.asarray(result)  # count_nonzero and the like: 0-d arrays on CuPy
            return _wrap(result)

        call.__name__ = name
        return call


def _asarray(a, dtype=None, **kwargs):
    """A device array as it is (cast if asked), a host array or list copied, as CuPy's transfer does."""
    if isinstance(a, Arr):
        return a if dtype is None else a.astype(dtype, copy=False)
    return np.array(plain(a), dtype=dtype, copy=True, **kwargs).view(Arr)


def install(monkeypatch) -> FakeCupy:
    """``sys.modules["cupy"]`` becomes a new :class:`FakeCupy` until ``monkeypatch`` undoes it; a fresh record.

    ``Arr.sites`` (also the module's ``sites``) counts every :class:`Site` from then on.
    """
    fake = FakeCupy("cupy")
    monkeypatch.setitem(sys.modules, "cupy", fake)
    monkeypatch.setattr(Arr, "sites", Counter())
    fake.__dict__["sites"] = Arr.sites
    return fake
