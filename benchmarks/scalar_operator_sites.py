"""Every line of fastapsp where an array meets a scalar in an operator (``a - 1``, ``a < 0``), found in one run.

With CuPy 14.2 such an operation is handed to NumPy's ufunc, whose dispatch calls
``cupy.ndarray.__array_ufunc__``, which imports ``cupyx.scipy.special`` and so the
``cupyx`` package, SciPy's sparse module and ``numpy.f2py``: 0.3-0.5 s of imports that
hold the interpreter lock in every GPU process (``docs/performance.md``).  The same
operation called as a function (``xp.subtract(a, 1)``) imports nothing.  This tool
lists the sites: it loads fastapsp's modules with every binary operator and single
comparison rewritten into a call that does the same operation (in-place operators stay:
CuPy's do not go through NumPy's dispatch) and notes, by file and line, where one operand is an array of the
chosen kind (``--array cupy``: ``cupy.ndarray``; ``numpy`` to try it on the CPU) and
the other a Python or NumPy scalar.  Where the array type's ``__array_ufunc__`` can be
wrapped (``cupy.ndarray`` is a Python class) it also counts every call of it by the
stack that made it: its innermost line outside NumPy and the innermost line of
fastapsp, so the operations inside CuPy's own functions show too.  And it notes the
stack that first loaded ``cupyx``: ``import cupy`` leaves only a lazy ``cupyx`` module,
whose first use imports its submodules, so the first ``cupyx.*`` import is what counts.
The GPU warm-up thread runs as in any run (its operations are noted too)::

    python benchmarks/scalar_operator_sites.py --array cupy --out /tmp/sites.txt -- \\
        solve benchmarks/data/roadFLA.mtx.gz --output none

The command's own exit status is this script's.
"""

from __future__ import annotations

import argparse
import ast
import importlib.abc
import importlib.machinery
import operator
import os
import sys
import traceback
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))
from _common import command_line, run_command_line, write_text  # noqa: E402
PACKAGE = str(REPO / "fastapsp")
THIS = os.path.abspath(__file__)
HELPER = "__scalar_operator_sites__"

_BINARY = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "truediv", ast.FloorDiv: "floordiv",
           ast.Mod: "mod", ast.Pow: "pow", ast.LShift: "lshift", ast.RShift: "rshift", ast.BitOr: "or_",
           ast.BitXor: "xor", ast.BitAnd: "and_", ast.MatMult: "matmul"}
_COMPARE = {ast.Lt: "lt", ast.LtE: "le", ast.Eq: "eq", ast.NotEq: "ne", ast.Gt: "gt", ast.GtE: "ge"}


class Sites:
    """Counts array-scalar operations by (file, line, operator)."""

    def __init__(self, array_type) -> None:
        import numpy as np

        self.array_type = array_type
        self.numpy_scalar = np.generic
        self.counts: Counter = Counter()
        self.kinds: dict = {}
        self.first_cupyx: list | None = None
        self.dispatches: Counter = Counter()

    def _scalar(self, value) -> bool:
        return type(value) in (int, float, bool) or isinstance(value, self.numpy_scalar)

    def op(self, name: str, left, right, site: str):
        if (isinstance(left, self.array_type) and self._scalar(right)) or \
                (isinstance(right, self.array_type) and self._scalar(left)):
            self.counts[(site, name)] += 1
            self.kinds.setdefault((site, name), (type(left).__name__, type(right).__name__))
        return getattr(operator, name)(left, right)

    def watch_dispatch(self, array_type) -> bool:
        """Wrap ``array_type.__array_ufunc__`` so that each call is counted by its stack; False where it cannot be."""
        original = getattr(array_type, "__array_ufunc__", None)
        if original is None:
            return False
        sites = self

        def __array_ufunc__(array, ufunc, method, *inputs, **kwargs):
            sites.dispatches[(f"{ufunc.__name__}.{method}", *_stack_sites(traceback.extract_stack()[:-1]))] += 1
            return original(array, ufunc, method, *inputs, **kwargs)

        try:
            array_type.__array_ufunc__ = __array_ufunc__
        except TypeError:  # a built-in type (numpy.ndarray)
            return False
        return True


def _stack_sites(stack) -> tuple[str, str]:
    """The innermost line outside NumPy and the innermost line of fastapsp, as ``path:line`` (``-`` if none)."""
    def name(frame):
        path = frame.filename
        if path.startswith(str(REPO) + os.sep):
            path = os.path.relpath(path, REPO)
        elif "site-packages" + os.sep in path:
            path = path.split("site-packages" + os.sep, 1)[1]
        return f"{path}:{frame.lineno}"

    def numpy(frame):
        return f"{os.sep}numpy{os.sep}" in frame.filename or os.path.abspath(frame.filename) == THIS

    outside = next((name(f) for f in reversed(stack) if not numpy(f)), "-")
    ours = next((name(f) for f in reversed(stack) if f.filename.startswith(PACKAGE + os.sep)), "-")
    return outside, ours


class _Rewrite(ast.NodeTransformer):
    """``a OP b`` -> ``HELPER.op("OP", a, b, "file:line")``; ``a CMP b`` likewise; ``x OP= b`` -> ``x = ...``."""

    def __init__(self, filename: str, tree) -> None:
        self.filename = filename
        # Annotations are left as written (``int | None``): they are not operations on values.
        self.skip = {id(inner) for node in ast.walk(tree)
                     for annotation in (getattr(node, "annotation", None), getattr(node, "returns", None))
                     if annotation is not None for inner in ast.walk(annotation)}

    def _call(self, name: str, left, right, node):
        site = f"{self.filename}:{node.lineno}"
        call = ast.Call(func=ast.Attribute(value=ast.Name(id=HELPER, ctx=ast.Load()), attr="op", ctx=ast.Load()),
                        args=[ast.Constant(name), left, right, ast.Constant(site)], keywords=[])
        return ast.copy_location(call, node)

    def visit_BinOp(self, node):
        self.generic_visit(node)
        name = _BINARY.get(type(node.op))
        return node if name is None or id(node) in self.skip else self._call(name, node.left, node.right, node)

    def visit_Compare(self, node):
        self.generic_visit(node)
        if len(node.ops) != 1 or type(node.ops[0]) not in _COMPARE or id(node) in self.skip:
            return node  # chains, ``is``, ``in``: left as they are
        return self._call(_COMPARE[type(node.ops[0])], node.left, node.comparators[0], node)


class _Loader(importlib.machinery.SourceFileLoader):
    def source_to_code(self, data, path, *, _optimize=-1):
        tree = ast.parse(data, filename=path)
        tree = _Rewrite(os.path.relpath(path, REPO), tree).visit(tree)
        return compile(ast.fix_missing_locations(tree), path, "exec", dont_inherit=True)

    def exec_module(self, module):
        module.__dict__[HELPER] = SITES
        super().exec_module(module)

    def get_code(self, fullname):  # never the cached bytecode of the plain module
        path = self.get_filename(fullname)
        return self.source_to_code(self.get_data(path), path)


class _Finder(importlib.abc.MetaPathFinder):
    """fastapsp's modules through :class:`_Loader`; notes the stack that first loads ``cupyx``."""

    def find_spec(self, name, path, target=None):
        if name.startswith("cupyx.") and SITES.first_cupyx is None:
            SITES.first_cupyx = traceback.format_stack()[:-1]
        if name != "fastapsp" and not name.startswith("fastapsp."):
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or not str(spec.origin).endswith(".py"):
            return spec
        spec.loader = _Loader(name, spec.origin)
        return spec


SITES: Sites


def report(sites: Sites) -> list[str]:
    lines = [f"# {sum(sites.counts.values())} operations at {len(sites.counts)} sites "
             "(file:line operator count left-type right-type), most first"]
    for (site, name), count in sites.counts.most_common():
        left, right = sites.kinds[(site, name)]
        lines.append(f"{site} {name} {count} {left} {right}")
    if sites.dispatches:
        lines.append(f"# {sum(sites.dispatches.values())} calls of __array_ufunc__ "
                     "(ufunc.method count innermost-line-outside-numpy innermost-fastapsp-line), most first")
        for (ufunc, outside, ours), count in sites.dispatches.most_common():
            lines.append(f"# dispatch {ufunc} {count} {outside} {ours}")
    if sites.first_cupyx is None:
        lines.append("# cupyx was not loaded")
    else:
        lines.append("# cupyx was first loaded from:")
        lines.extend(line.rstrip("\n") for line in sites.first_cupyx if "importlib._bootstrap" not in line)
    return lines


def main(argv=None) -> int:
    global SITES
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--array", choices=("cupy", "numpy"), default="cupy",
                        help="the array type whose scalar operations are noted (default cupy)")
    parser.add_argument("--out", default=None, help="file of the sites (default: standard output)")
    parser.add_argument("cli", nargs=argparse.REMAINDER, help="-- then the fastapsp command line")
    args = parser.parse_args(argv)
    command = command_line(parser, args)
    if any(name == "fastapsp" or name.startswith("fastapsp.") for name in sys.modules):
        parser.error("fastapsp is already imported: run this script as a program")
    try:
        array_module = importlib.import_module(args.array)
    except ImportError as exc:
        parser.error(f"--array {args.array}: cannot import it ({exc})")
    SITES = Sites(array_module.ndarray)
    SITES.watch_dispatch(array_module.ndarray)
    sys.meta_path.insert(0, _Finder())
    status = run_command_line(command)
    text = "\n".join([f"# fastapsp {' '.join(command)} (arrays: {args.array}.ndarray)", *report(SITES)]) + "\n"
    write_text(args.out, text)
    return status


if __name__ == "__main__":
    sys.exit(main())
