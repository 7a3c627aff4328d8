"""Read graph files into a :class:`~fastapsp.graph.Graph`.

Six text formats are read, one module each, plain or gzip-compressed (recognised by the gzip
magic bytes, whatever the file is called):

``mtx``
    Matrix Market ``coordinate`` files, fields ``pattern`` (weight 1),
    ``integer`` and ``real``; symmetry ``symmetric`` (an undirected graph,
    entries from either triangle) or ``general`` (entry ``i j`` is the arc
    ``i -> j``).  Indices are 1-based.
``fastapsp``
    The banner-less layout of the FastAPSP research code: a first line
    ``n n m``, then ``m`` lines ``i j`` or ``i j w``, 1-based.  It is read as
    an undirected graph, like the symmetric Matrix Market file it was cut from.
``metis``
    METIS ``.graph`` files: header ``n m [fmt [ncon]]``, then one line of
    1-based neighbours per vertex (an empty line for an isolated vertex).
    Edge weights (``fmt`` 1) are used; vertex sizes and vertex weights
    (``fmt`` 100 and 10) are read and dropped, they do not change distances.
``snap``
    SNAP edge lists: ``from to`` or ``from to weight`` per line, 0-based
    directed arcs, ``#`` comments.  The ids need not be contiguous: the graph
    gets ``n = largest id + 1`` vertices and unused ids are isolated vertices.
``cedge``
    ``edgeID u v w`` per line, 0-based, one undirected edge per line; the
    edge id is ignored.
``dimacs``
    9th DIMACS Challenge shortest-path files (``USA-road-*.gr``): ``c``
    comments, a problem line ``p sp n m``, then ``m`` arc lines ``a u v w``,
    1-based directed arcs with whole-number weights.

Comment lines, whose first non-blank character is ``%`` (mtx, fastapsp,
metis), ``#`` (snap, cedge) or ``c`` (dimacs), are skipped wherever they are; blank lines are
skipped too, except in METIS files, where a blank line is an isolated vertex.
Line endings may be LF or CRLF.  Vertex ids must stay below 2**31 - 1, and at
most ``MAX_UNUSED_VERTICES`` (2**24) vertices may appear in no edge: memory is
never sized from a declared count, or one stray large id, that the data does
not bear out.

The numbers of a text of 4 MiB or more are parsed by one worker process per
core this process may use (:mod:`fastapsp.io.parallel`), with the values and
the messages of a parse in one process.  Under MPI one rank per node reads the
file and gives the graph to the others (:mod:`fastapsp.io.nodes`).

Every reader drops self loops, keeps the lightest of parallel arcs and keeps
zero weights (see :meth:`Graph.from_edges`).  Bad input raises
:class:`~fastapsp.errors.GraphFormatError` with one line of the form
``"FILE line L: problem; allowed ..."`` (or ``"FILE: problem"`` when no single
line is to blame).
"""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import GraphFormatError
from ..graph import Graph
from ._common import BANNER, FORMATS, MAX_UNUSED_VERTICES, MAX_VERTICES, _read_head, _read_text, _Source, _UTF8_BOM
from .cache import cache_folder, load_cached, save_cached
from .cedge import _read_cedge
from .dimacs import _read_dimacs
from .metis import _read_metis
from .mtx import _read_fastapsp, _read_mtx
from .nodes import read_on_nodes
from .share import share_for
from .snap import _read_snap

# Formats whose arc lines the ranks of a communicator parse a share each (fastapsp/io/share.py).
_SHARED = ("mtx", "fastapsp", "dimacs")

__all__ = ["FORMATS", "read_graph", "detect_format", "MAX_VERTICES", "MAX_UNUSED_VERTICES"]

# File extension (after stripping ".gz") -> format.
_EXTENSIONS = {
    ".mtx": "mtx",
    ".mm": "mtx",
    ".graph": "metis",
    ".metis": "metis",
    ".txt": "snap",
    ".edges": "snap",
    ".el": "snap",
    ".snap": "snap",
    ".cedge": "cedge",
    ".gr": "dimacs",
}

_READERS = {
    "mtx": _read_mtx,
    "fastapsp": _read_fastapsp,
    "metis": _read_metis,
    "snap": _read_snap,
    "cedge": _read_cedge,
    "dimacs": _read_dimacs,
}


# --------------------------------------------------------------------- public
def detect_format(path) -> str:
    """Tell the format of a graph file from its name (and its first line).

    Parameters
    ----------
    path : str or os.PathLike
        The graph file; a trailing ``.gz`` is ignored.

    Returns
    -------
    str
        One of :data:`FORMATS`.  ``.mtx`` and ``.mm`` give ``"mtx"``, except a
        ``.mtx`` file whose first line is not a ``%%MatrixMarket`` banner,
        which is read as ``"fastapsp"``; ``.graph`` and ``.metis`` give
        ``"metis"``; ``.txt``, ``.edges``, ``.el`` and ``.snap`` give
        ``"snap"``; ``.cedge`` gives ``"cedge"``; ``.gr`` gives ``"dimacs"``.

    Raises
    ------
    GraphFormatError
        For an extension that names no format.

    Examples
    --------
    >>> detect_format("tests/data/cal.cedge.gz")
    'cedge'
    """
    path = Path(path)
    where = os.fspath(path)
    fmt = _format_from_extension(path, where)
    if fmt == "mtx" and _extension(path) == ".mtx":
        return _mtx_or_fastapsp(_read_head(path, where, 4096))
    return fmt


def read_graph(path, *, format: str | None = None, undirected: bool = False, comm=None, cache: str = "none") -> Graph:
    """Read a graph file.

    Parameters
    ----------
    path : str or os.PathLike
        The graph file, plain text or gzip-compressed.
    format : str, optional
        One of :data:`FORMATS` (``"mtx"``, ``"fastapsp"``, ``"metis"``,
        ``"snap"``, ``"cedge"``, ``"dimacs"``); by default told from the file name, see
        :func:`detect_format`.
    undirected : bool, optional
        Store every arc of a directed input in both directions too.
    comm : communicator, optional
        The ranks that all need this graph (collective: every rank of
        ``comm`` calls this).  One rank per node reads the file
        (:mod:`fastapsp.io.nodes`); the node's other ranks read the cache it
        read or receive its arrays.  For the formats of one arc per line
        (``mtx``, ``fastapsp``, ``dimacs``) the readers of several nodes parse
        and check a share of the lines each (:mod:`fastapsp.io.share`).  A bad
        file fails with the same message on every rank.
    cache : {"none", "auto"} or str, optional
        A binary copy of the parsed graph (:mod:`fastapsp.io.cache`): ``"auto"``
        keeps it beside the file, any other value is the folder to keep it in.
        A read maps a cache that matches the file (all ranks, or none, use it);
        a text of at least 8 MiB that was parsed writes one (rank 0, once
        every rank has the graph).

    Returns
    -------
    Graph
        Named after the file's base name.  Directed for Matrix Market
        ``general`` files and SNAP edge lists (unless ``undirected``),
        undirected otherwise.

    Raises
    ------
    ValueError
        For a ``format`` that is not in :data:`FORMATS`.
    GraphFormatError
        For a file that cannot be read as a graph: unknown extension, empty
        or binary file, bad header, bad number, vertex id out of range,
        negative or non-finite weight, wrong number of entries.  The message
        names the file and, where one line is to blame, the line.
    OSError
        When the file cannot be opened.

    Examples
    --------
    >>> g = read_graph("tests/data/minnesota.mtx.gz")
    >>> g.n, g.num_edges, g.directed
    (2642, 3303, False)
    """
    if format is not None and format not in FORMATS:
        raise ValueError(f"format {format!r} is not known; allowed: {', '.join(FORMATS)}")
    if comm is None or comm.size == 1:
        graph, _, save = _read(path, format, undirected, comm, None, cache)
    else:
        # One rank per node reads; the node's others read the cache it read, or receive its arrays.
        found = {}

        def read(readers, names):
            graph, cached, found["save"] = _read(path, format, undirected, readers, names, cache)
            return graph, cached

        def open_cache(cached):
            folder, fmt = cached
            return load_cached(folder, path, fmt, undirected, verify=False)

        def guess():  # the node's other ranks, while its reader reads: the cache they find, unchecked
            if cache in (None, "none"):
                return None
            cached = _cache_location(path, format, undirected, cache)
            return cached, open_cache(cached)

        graph, _ = read_on_nodes(comm, read, open_cache, guess)
        save = found.get("save") if comm.rank == 0 else None
    if save is not None:
        save(graph)
    return graph


def _read(path, format, undirected: bool, comm, names, cache: str):
    """``(graph, cached, save)`` on every rank of ``comm`` (all of them read the file): ``cached`` is
    ``(folder, format)`` when the graph was mapped from that cache, else None; ``save(graph)`` writes the
    cache of a parsed text (rank 0; None elsewhere or when there is nothing to write)."""
    folder = None
    if cache not in (None, "none"):
        folder, fmt, graph = _cached(path, format, undirected, cache, comm)
        if graph is not None:
            return graph, (folder, fmt), None
    share = share_for(comm, names)
    try:
        path = Path(path)
        where = os.fspath(path)
        if format is None:
            format = _format_from_extension(path, where)
            data = _read_text(path, where)
            if format == "mtx" and _extension(path) == ".mtx":
                format = _mtx_or_fastapsp(data[:4096])
        else:
            data = _read_text(path, where)
        source = _Source(where, data, path.name, bool(undirected))
        graph = None
        if format in _SHARED:
            graph = _READERS[format](source, share)
        else:
            share.agree(None)  # every rank read the file: each now parses all of it, alone
            share.done()
    except Exception as exc:  # noqa: BLE001 - taken to the other ranks, who raise it too (share.py)
        share.fail(exc)
    if graph is None:
        graph = _READERS[format](source)
    if folder is None or (comm is not None and comm.rank != 0):
        return graph, None, None
    size = len(data)

    def save(parsed):  # the format the head told _cached: the same
        save_cached(folder, path, format, undirected, parsed, size)

    return graph, None, save


def _cache_location(path, format, undirected: bool, cache: str):
    """``(folder, format)``: where the cache of ``path`` read as ``format`` (told from the file when None)
    lives."""
    fmt = format or detect_format(path)
    return cache_folder(path, fmt, undirected, cache), fmt


def _cached(path, format, undirected: bool, cache: str, comm):
    """``(folder, format, graph)``: where the cache of ``path`` lives, the format it was read as and the
    graph it holds, when every rank of ``comm`` found one that matches the file (else None: the text is
    read, and a bad file reported there)."""
    graph = folder = fmt = None
    try:
        folder, fmt = _cache_location(path, format, undirected, cache)
        graph = load_cached(folder, path, fmt, undirected)
    except Exception:  # noqa: BLE001 - the text path names what is wrong with the file
        graph = None
    if comm is not None and comm.size > 1 and not all(comm.allgather(graph is not None)):
        graph = None
    return folder, fmt, graph


# ------------------------------------------------------------ format by name
def _extension(path: Path) -> str:
    name = path.name.lower()
    if name.endswith(".gz"):
        name = name[:-3]
    return os.path.splitext(name)[1]


def _format_from_extension(path: Path, where: str) -> str:
    ext = _extension(path)
    if ext in _EXTENSIONS:
        return _EXTENSIONS[ext]
    known = ", ".join(f"{e} ({f})" for e, f in _EXTENSIONS.items())
    found = f"extension {ext!r}" if ext else "no extension"
    raise GraphFormatError(
        f"{where}: cannot tell the graph format from {found}; allowed extensions "
        f"(optionally followed by .gz): {known}; or name the format with format=... "
        f"(--format on the command line), one of {', '.join(FORMATS)}"
    )


def _mtx_or_fastapsp(head: bytes) -> str:
    if head.startswith(_UTF8_BOM):
        head = head[len(_UTF8_BOM):]
    # Blank lines or spaces before the banner must not turn a directed file into the undirected layout.
    head = head.lstrip()
    if head[: len(BANNER)].lower() == BANNER:
        return "mtx"
    # The research layout may open with '%' comments.  A comment line before the first entry that reads
    # like a banner (misspelled, one '%' short, or below another comment) means a Matrix Market file,
    # whose reader then names what is wrong: read as the undirected layout it would give wrong distances.
    for line in head.splitlines():
        text = line.strip()
        if not text:
            continue
        if not text.startswith(b"%"):
            break
        if _reads_like_banner(text):
            return "mtx"
    return "fastapsp"


def _reads_like_banner(line: bytes) -> bool:
    """Whether a '%' line looks like a Matrix Market banner: '%%' first, or the word MatrixMarket within
    two typos, or the words 'matrix' and 'coordinate'."""
    text = line.lower()
    if text.startswith(b"%%"):
        return True
    words = text.lstrip(b"%").split()
    if not words:
        return False
    return _within(words[0], b"matrixmarket", 2) or (b"matrix" in words and b"coordinate" in words)


def _within(word: bytes, target: bytes, limit: int) -> bool:
    """Whether ``word`` is at most ``limit`` single-letter edits from ``target`` (Levenshtein)."""
    if abs(len(word) - len(target)) > limit:
        return False
    previous = list(range(len(target) + 1))
    for i, a in enumerate(word, 1):
        current = [i]
        for j, b in enumerate(target, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a != b)))
        previous = current
    return previous[-1] <= limit
