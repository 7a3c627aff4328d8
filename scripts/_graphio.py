"""Shared helpers of the scripts: write a graph as Matrix Market, METIS, SNAP, ...

Every script in ``scripts/`` builds a :class:`fastapsp.graph.Graph` (through
:meth:`~fastapsp.graph.Graph.from_edges`, so self loops are dropped and of
parallel edges the lightest is kept) and writes it with :func:`write_graph`.
The files are read back by :func:`fastapsp.read_graph` into the same graph:

``mtx``
    Matrix Market coordinate, 1-based.  An undirected graph is written
    ``symmetric`` as its lower triangle (row > column), a directed one
    ``general`` (entry ``i j`` is the arc ``i -> j``).  Entries are sorted by
    column, then row, as the SuiteSparse collection stores them.  The field is
    ``pattern`` when every weight is 1, ``integer`` when every weight is a
    whole number, else ``real``.
``fastapsp``
    The banner-less research format: ``n n m``, then the lower triangle as
    1-based ``i j [w]`` lines.  Undirected graphs only.
``metis``
    ``n m [1]``, then one line of 1-based neighbours (and weights, when not
    all 1) per vertex.  Undirected graphs only.  The METIS and KaHIP programs
    themselves accept only positive integer weights; fastapsp reads any.
``snap``
    ``# comments``, then 0-based ``u v [w]`` arcs.  An undirected graph is
    written with both arcs of every edge, so it reads back as a directed
    graph with the same arcs (``--undirected`` reads it as undirected).
``cedge``
    ``edgeID u v w``, 0-based, one line per undirected edge.

SNAP and cedge readers take ``n`` as the largest vertex id + 1, so when the
last vertex has no edge a self loop ``n-1 n-1`` (weight 0) is written: readers
drop self loops, and the vertex count survives the round trip.

A name ending in ``.gz`` is written gzip-compressed.  A directed graph is
written as METIS, fastapsp or cedge only when it is symmetric (every arc has
its reverse, with the same weight); otherwise :func:`write_graph` raises
``ValueError`` and asks for ``undirected=True`` (which symmetrises, keeping
the lighter of ``u -> v`` and ``v -> u``).
"""

from __future__ import annotations

import gzip
import os
import sys
from pathlib import Path

import numpy as np

from fastapsp.graph import Graph

__all__ = ["WRITE_FORMATS", "add_output_argument", "format_from_name", "report", "symmetrised", "write_graph"]

WRITE_FORMATS = ("mtx", "fastapsp", "metis", "snap", "cedge")

_EXTENSIONS = {
    ".mtx": "mtx", ".mm": "mtx",
    ".graph": "metis", ".metis": "metis",
    ".txt": "snap", ".edges": "snap", ".el": "snap", ".snap": "snap",
    ".cedge": "cedge",
}


def format_from_name(path) -> str:
    """The format a file name asks for (``.gz`` ignored); ``.mtx`` means Matrix Market.

    Raises
    ------
    ValueError
        For an extension that names no format.
    """
    name = os.fspath(path).lower()
    if name.endswith(".gz"):
        name = name[:-3]
    ext = os.path.splitext(name)[1]
    if ext not in _EXTENSIONS:
        allowed = ", ".join(_EXTENSIONS)
        raise ValueError(f"{path}: cannot tell the output format from extension {ext!r}; "
                         f"allowed: {allowed} (optionally followed by .gz), or name it with --to")
    return _EXTENSIONS[ext]


def symmetrised(graph: Graph) -> Graph:
    """The undirected graph with an edge wherever ``graph`` has an arc (lighter weight kept)."""
    if not graph.directed:
        return graph
    src, dst, w = graph.arcs()
    return Graph.from_edges(graph.n, src, dst, w, directed=False, name=graph.name)


def write_graph(path, graph: Graph, fmt: str | None = None, *, comments=(), undirected: bool = False) -> str:
    """Write ``graph`` to ``path`` in ``fmt`` (default: from the file name).

    Parameters
    ----------
    path : str or os.PathLike
        Output file; ``.gz`` at the end compresses it.
    graph : Graph
        The graph to write.
    fmt : str, optional
        One of :data:`WRITE_FORMATS`.
    comments : iterable of str
        Lines written as comments after the banner / at the top.
    undirected : bool
        Symmetrise a directed graph first.

    Returns
    -------
    str
        The format written.

    Raises
    ------
    ValueError
        For an unknown format, or a directed, non-symmetric graph in an
        undirected-only format.
    """
    fmt = format_from_name(path) if fmt is None else fmt
    if fmt not in WRITE_FORMATS:
        raise ValueError(f"format {fmt!r} cannot be written; allowed: {', '.join(WRITE_FORMATS)}")
    if undirected:
        graph = symmetrised(graph)
    if graph.directed and fmt in ("metis", "fastapsp", "cedge"):
        graph = _as_undirected_if_symmetric(graph, fmt)
    comments = [c for line in comments for c in str(line).splitlines()]
    text = _WRITERS[fmt](graph, comments)
    data = text.encode("ascii")
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    with open(tmp, "wb") as fh:
        if path.name.lower().endswith(".gz"):
            # mtime=0: the same graph always gives the same bytes.
            with gzip.GzipFile(filename=path.name[:-3], fileobj=fh, mode="wb", mtime=0,
                               compresslevel=6) as gz:
                gz.write(data)
        else:
            fh.write(data)
    os.replace(tmp, path)
    return fmt


def add_output_argument(parser) -> None:
    """The ``-o/--output`` option every generator shares."""
    parser.add_argument("-o", "--output", required=True, metavar="FILE",
                        help="output file: .mtx (Matrix Market), .graph (METIS), .txt (SNAP), .cedge; "
                             "add .gz to compress")


def report(path, graph: Graph, fmt: str) -> None:
    """One line on stderr saying what was written."""
    kind = "directed" if graph.directed else "undirected"
    print(f"{path}: {fmt}, {kind}, n={graph.n} edges={graph.num_edges}", file=sys.stderr)


# ------------------------------------------------------------------ helpers
def _as_undirected_if_symmetric(graph: Graph, fmt: str) -> Graph:
    sym = symmetrised(graph)
    if sym.m == graph.m and np.array_equal(sym.indices, graph.indices) and np.array_equal(
            sym.weights, graph.weights):
        return sym
    raise ValueError(f"format {fmt!r} holds undirected graphs only, and graph {graph.name!r} is directed "
                     "(some arc has no reverse arc of the same weight); symmetrise it (--undirected)")


def _weight_kind(w: np.ndarray) -> str:
    """'pattern' (all 1), 'integer' (all whole) or 'real'."""
    if w.size == 0 or np.all(w == 1.0):
        return "pattern"
    if np.all(np.floor(w) == w) and w.max() < 2.0**53:
        return "integer"
    return "real"


def _strings(values: np.ndarray, kind: str = "integer") -> list[str]:
    """Decimal text of each value: whole numbers without a point, others shortest round-trip."""
    if kind == "real":
        return [repr(x) for x in values.astype(np.float64).tolist()]
    return values.astype(np.int64).astype(str).tolist()


def _lines(*columns: list[str]) -> str:
    if not columns or not columns[0]:
        return ""
    return "\n".join(map(" ".join, zip(*columns))) + "\n"


def _arcs_by_column(graph: Graph, lower_only: bool):
    """Arcs sorted by head then tail; with ``lower_only`` the edges ``u > v`` once each."""
    src, dst, w = graph.arcs()
    src = src.astype(np.int64)
    dst = dst.astype(np.int64)
    if lower_only:
        # CSR order is (tail, head); the arcs tail < head, read as (row=head, col=tail),
        # are the lower triangle already sorted by column, then row.
        keep = src < dst
        return dst[keep], src[keep], w[keep]
    order = np.lexsort((src, dst))
    return src[order], dst[order], w[order]


def _comment_block(prefix: str, comments) -> str:
    return "".join(f"{prefix} {c}".rstrip() + "\n" for c in comments)


# ------------------------------------------------------------------ writers
def _write_mtx(graph: Graph, comments) -> str:
    symmetric = not graph.directed
    rows, cols, w = _arcs_by_column(graph, lower_only=symmetric)
    kind = _weight_kind(w)
    head = (f"%%MatrixMarket matrix coordinate {kind} {'symmetric' if symmetric else 'general'}\n"
            + _comment_block("%", comments)
            + f"{graph.n} {graph.n} {rows.size}\n")
    columns = [_strings(rows + 1), _strings(cols + 1)]
    if kind != "pattern":
        columns.append(_strings(w, kind))
    return head + _lines(*columns)


def _write_fastapsp(graph: Graph, comments) -> str:
    rows, cols, w = _arcs_by_column(graph, lower_only=True)
    kind = _weight_kind(w)
    head = _comment_block("%", comments) + f"{graph.n} {graph.n} {rows.size}\n"
    columns = [_strings(rows + 1), _strings(cols + 1)]
    if kind != "pattern":
        columns.append(_strings(w, kind))
    return head + _lines(*columns)


def _write_metis(graph: Graph, comments) -> str:
    kind = _weight_kind(graph.weights)
    neighbours = _strings(graph.indices + 1)
    if kind == "pattern":
        tokens = neighbours
        per_vertex = 1
    else:
        weights = _strings(graph.weights, kind)
        tokens = [t for pair in zip(neighbours, weights) for t in pair]
        per_vertex = 2
    ptr = (graph.indptr.astype(np.int64) * per_vertex).tolist()
    body = "\n".join(" ".join(tokens[ptr[v]:ptr[v + 1]]) for v in range(graph.n))
    header = f"{graph.n} {graph.num_edges}" + ("" if kind == "pattern" else " 1")
    return _comment_block("%", comments) + header + "\n" + body + "\n"


def _write_snap(graph: Graph, comments) -> str:
    src, dst, w = graph.arcs()
    src, dst = src.astype(np.int64), dst.astype(np.int64)
    kind = _weight_kind(w)
    if graph.n and (src.size == 0 or max(src.max(), dst.max()) < graph.n - 1):
        src, dst = np.append(src, graph.n - 1), np.append(dst, graph.n - 1)
        w = np.append(w, 0.0 if kind != "pattern" else 1.0)
    note = ("Directed graph" if graph.directed
            else "Undirected graph, every edge listed as two arcs")
    head = _comment_block("#", [*comments, note, f"Nodes: {graph.n} Edges: {graph.m}", "FromNodeId\tToNodeId"
                                + ("" if kind == "pattern" else "\tWeight")])
    columns = [_strings(src), _strings(dst)]
    if kind != "pattern":
        columns.append(_strings(w, kind))
    return head + _lines(*columns)


def _write_cedge(graph: Graph, comments) -> str:
    rows, cols, w = _arcs_by_column(graph, lower_only=True)
    u, v = cols, rows
    if graph.n and (u.size == 0 or v.max() < graph.n - 1):
        u, v, w = np.append(u, graph.n - 1), np.append(v, graph.n - 1), np.append(w, 0.0)
    kind = "real" if _weight_kind(w) == "real" else "integer"
    ids = np.arange(u.size, dtype=np.int64)
    head = _comment_block("#", [*comments, "edgeID u v w (0-based, undirected)"])
    return head + _lines(_strings(ids), _strings(u), _strings(v), _strings(w, kind))


_WRITERS = {
    "mtx": _write_mtx,
    "fastapsp": _write_fastapsp,
    "metis": _write_metis,
    "snap": _write_snap,
    "cedge": _write_cedge,
}
