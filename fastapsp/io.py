"""Read graph files into a :class:`~fastapsp.graph.Graph`.

Five text formats are read, plain or gzip-compressed (recognised by the gzip
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

Comment lines, whose first non-blank character is ``%`` (mtx, fastapsp,
metis) or ``#`` (snap, cedge), are skipped wherever they are; blank lines are
skipped too, except in METIS files, where a blank line is an isolated vertex.
Line endings may be LF or CRLF.  Vertex ids must stay below 2**31 - 1.

Every reader drops self loops, keeps the lightest of parallel arcs and keeps
zero weights (see :meth:`Graph.from_edges`).  Bad input raises
:class:`~fastapsp.errors.GraphFormatError` with one line of the form
``"FILE line L: problem; allowed ..."`` (or ``"FILE: problem"`` when no single
line is to blame).

Files can have millions of lines, so the numbers are parsed in one vectorised
pass over the whole text; only when that pass fails is the text scanned token
by token, to find the line to blame.
"""

from __future__ import annotations

import gzip
import os
import re
import warnings
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .errors import GraphFormatError
from .graph import Graph

__all__ = ["FORMATS", "read_graph", "detect_format"]

FORMATS = ("mtx", "fastapsp", "metis", "snap", "cedge")

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
}

# Vertex ids are kept below 2**31 - 1: an all-pairs result for more vertices
# could never be stored, and a stray huge id in an edge list must not make us
# allocate an enormous graph.
_MAX_VERTICES = 2**31 - 1

_GZIP_MAGIC = b"\x1f\x8b"
_UTF8_BOM = b"\xef\xbb\xbf"
_BANNER = b"%%matrixmarket"
_BANNER_FORM = "'%%MatrixMarket matrix coordinate <pattern|integer|real> <general|symmetric>'"
_WEIGHTS_ALLOWED = "finite numbers >= 0"
_TOKEN = re.compile(rb"[^\x00-\x20]+")
_NUMBER = re.compile(
    rb"[+-]?(?:(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?|inf|infinity|nan)", re.IGNORECASE
)


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
        ``"snap"``; ``.cedge`` gives ``"cedge"``.

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
        return _mtx_or_fastapsp(_read_head(path, where))
    return fmt


def read_graph(path, *, format: str | None = None, undirected: bool = False) -> Graph:
    """Read a graph file.

    Parameters
    ----------
    path : str or os.PathLike
        The graph file, plain text or gzip-compressed.
    format : str, optional
        One of :data:`FORMATS` (``"mtx"``, ``"fastapsp"``, ``"metis"``,
        ``"snap"``, ``"cedge"``); by default told from the file name, see
        :func:`detect_format`.
    undirected : bool, optional
        Store every arc of a directed input in both directions too.

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
    path = Path(path)
    where = os.fspath(path)
    if format is None:
        format = _format_from_extension(path, where)
        data = _read_text(path, where)
        if format == "mtx" and _extension(path) == ".mtx":
            format = _mtx_or_fastapsp(data[:64])
    else:
        data = _read_text(path, where)
    source = _Source(where, data, path.name, bool(undirected))
    return _READERS[format](source)


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
    return "mtx" if head[: len(_BANNER)].lower() == _BANNER else "fastapsp"


# -------------------------------------------------------------------- bytes
def _read_head(path: Path, where: str, size: int = 64) -> bytes:
    """The first ``size`` bytes of the (decompressed) file."""
    with open(path, "rb") as f:
        head = f.read(size)
        if not head.startswith(_GZIP_MAGIC):
            return head
    try:
        with gzip.open(path, "rb") as f:
            return f.read(size)
    except (OSError, EOFError, zlib.error) as exc:
        raise GraphFormatError(f"{where}: damaged gzip data ({exc})") from None


def _read_text(path: Path, where: str) -> bytes:
    """The whole file as bytes, decompressed, checked to be non-empty text."""
    data = path.read_bytes()
    if data.startswith(_GZIP_MAGIC):
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as exc:
            raise GraphFormatError(f"{where}: damaged gzip data ({exc})") from None
    if data.startswith(_UTF8_BOM):
        data = data[len(_UTF8_BOM):]
    if not data or data.isspace():
        raise GraphFormatError(f"{where}: the file is empty; allowed: a text graph file")
    # Control bytes other than tab, newline, \v, \f and carriage return mark a binary file.
    octets = np.frombuffer(data, dtype=np.uint8)
    control = (octets < 9) | ((octets - np.uint8(14)) < 18)
    if control.any():
        at = int(control.argmax())
        line = data.count(b"\n", 0, at) + 1
        found = "a NUL byte" if octets[at] == 0 else f"control byte 0x{octets[at]:02x}"
        raise GraphFormatError(
            f"{where} line {line}: binary data ({found}), not a "
            f"text graph file; allowed formats: {', '.join(FORMATS)}"
        )
    if not data.isascii():
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = data.count(b"\n", 0, exc.start) + 1
            raise GraphFormatError(
                f"{where} line {line}: bytes that are not "
                f"UTF-8 text (a binary file?); allowed formats: {', '.join(FORMATS)}"
            ) from None
    return data


def _short(text: bytes, limit: int = 60) -> str:
    """Bytes as printable text for a message, cut to ``limit`` characters."""
    out = text.decode("utf-8", "backslashreplace")
    return out if len(out) <= limit else out[: limit - 3] + "..."


@dataclass(frozen=True)
class _Source:
    """A file being read: its label for messages, its bytes and options."""

    where: str
    data: bytes
    name: str
    undirected: bool

    def error(self, line: int | None, problem: str) -> GraphFormatError:
        if line is None:
            return GraphFormatError(f"{self.where}: {problem}")
        return GraphFormatError(f"{self.where} line {line}: {problem}")

    def lines(self, offset: int = 0, line: int = 1):
        """Yield ``(line number, stripped text, start offset, offset of the next line)``."""
        data = self.data
        while offset < len(data):
            end = data.find(b"\n", offset)
            end = len(data) if end < 0 else end + 1
            yield line, data[offset:end].strip(), offset, end
            offset, line = end, line + 1

    def header(self, comment: bytes, offset: int = 0, line: int = 1):
        """The first line that is neither blank nor a comment, as ``lines`` yields it."""
        for number, text, start, end in self.lines(offset, line):
            if text and not text.startswith(comment):
                return number, text, start, end
        return None


# ------------------------------------------------------------------- tokens
@dataclass(frozen=True)
class _Tokens:
    """The numbers of a file's body, parsed in one pass.

    ``counts[j]`` is the number of tokens on body line ``j`` (file line
    ``first_line + j``; comment lines count zero), ``values`` holds every
    token in file order, as int64 when all are whole numbers, else float64.
    """

    source: _Source
    body: bytes
    first_line: int
    counts: np.ndarray
    values: np.ndarray
    comment_lines: np.ndarray

    def line_of(self, token: int) -> int:
        """File line number of token ``token``."""
        ends = np.cumsum(self.counts)
        return self.first_line + int(np.searchsorted(ends, token, side="right"))

    def text(self, token: int) -> str:
        """The token as written in the file."""
        return _short(_token_match(self.body, token).group())


def _token_starts(body: bytes) -> np.ndarray:
    """Offsets where a token starts (whitespace, the bytes <= 0x20 left, separates them)."""
    space = np.frombuffer(body, dtype=np.uint8) <= 32
    starts = ~space
    starts[1:] &= space[:-1]
    return np.flatnonzero(starts)


def _token_match(body: bytes, token: int):
    return _TOKEN.match(body, int(_token_starts(body)[token]))


def _tokenize(source: _Source, offset: int, first_line: int, comment: bytes) -> _Tokens:
    """Parse every number from ``offset`` to the end of the file."""
    body = source.data[offset:]
    comment_lines = np.zeros(0, dtype=np.int64)
    if comment in body:
        # Comment lines after the header are rare: blank them out line by line,
        # keeping the line count so that line numbers stay right.
        lines = body.split(b"\n")
        hits = [j for j, text in enumerate(lines) if text.lstrip().startswith(comment)]
        if hits:
            for j in hits:
                lines[j] = b""
            body = b"\n".join(lines)
            comment_lines = np.array(hits, dtype=np.int64)
    starts = _token_starts(body)
    newlines = np.flatnonzero(np.frombuffer(body, dtype=np.uint8) == 10)
    ends = np.searchsorted(starts, newlines)
    if body and not body.endswith(b"\n"):
        ends = np.append(ends, starts.size)
    counts = np.diff(ends, prepend=0)
    values = _parse_numbers(source, body, first_line, starts.size)
    return _Tokens(source, body, first_line, counts, values, comment_lines)


def _parse_numbers(source: _Source, body: bytes, first_line: int, ntokens: int) -> np.ndarray:
    if ntokens == 0:
        return np.zeros(0, dtype=np.int64)
    # Whole numbers parse several times faster as int64; try that first.
    for dtype in (np.int64, np.float64):
        try:
            with warnings.catch_warnings():
                # Older NumPy warns and returns what it read so far instead of raising.
                warnings.simplefilter("error", DeprecationWarning)
                values = np.fromstring(body, dtype=dtype, sep=" ")
        except (ValueError, DeprecationWarning):
            continue
        if values.size == ntokens:
            return values
    for match in _TOKEN.finditer(body):
        if not _NUMBER.fullmatch(match.group()):
            line = first_line + body.count(b"\n", 0, match.start())
            raise source.error(
                line,
                f"cannot read {_short(match.group())!r} as a number; allowed: decimal numbers "
                f"such as 7, 0.25 or 1e-3",
            )
    # NumPy and the pattern above disagree on some odd spelling; Python decides.
    return np.array([float(m.group()) for m in _TOKEN.finditer(body)], dtype=np.float64)


def _table(tokens: _Tokens, allowed: tuple[int, ...], form: str) -> np.ndarray:
    """The values as rows of one line each; every non-blank line must hold k in ``allowed``."""
    used = np.flatnonzero(tokens.counts)
    if used.size == 0:
        return np.zeros((0, allowed[0]), dtype=tokens.values.dtype)
    k = int(tokens.counts[used[0]])
    if k not in allowed:
        raise tokens.source.error(
            tokens.first_line + int(used[0]), f"found {_values(k)}; allowed: {form}"
        )
    bad = np.flatnonzero(tokens.counts[used] != k)
    if bad.size:
        j = int(used[bad[0]])
        also = f", the same number on every line (line {tokens.first_line + int(used[0])} has {k})"
        raise tokens.source.error(
            tokens.first_line + j,
            f"found {_values(int(tokens.counts[j]))}; allowed: {form}"
            + (also if len(allowed) > 1 else ""),
        )
    return tokens.values.reshape(-1, k)


def _values(count: int) -> str:
    return f"{count} value" if count == 1 else f"{count} values"


# ------------------------------------------------------------------- checks
def _not_whole(values: np.ndarray) -> np.ndarray:
    if values.dtype.kind == "i":
        return np.zeros(values.shape, dtype=bool)
    return ~(np.floor(values) == values)


def _bad_ids(values: np.ndarray, low: int, high: int) -> np.ndarray:
    """Mask of ids that are not whole numbers in ``low..high``."""
    return _not_whole(values) | (values < low) | (values > high)


def _bad_weights(values: np.ndarray) -> np.ndarray:
    if values.dtype.kind == "i":
        return values < 0
    return ~np.isfinite(values) | (values < 0)


def _id_problem(subject: str, value, low: int, high: int) -> str:
    if not float(value) == np.floor(float(value)):
        return f"{subject} is not a whole number; allowed: {low}..{high}"
    return f"{subject} is outside {low}..{high}"


def _weight_problem(text: str, value) -> str:
    if not np.isfinite(value):
        return f"weight {text} is not finite; allowed: {_WEIGHTS_ALLOWED}"
    return f"weight {text} is negative; allowed: {_WEIGHTS_ALLOWED}"


def _raise_first(checks) -> None:
    """Raise the problem found at the smallest position.

    ``checks`` holds ``(mask, describe)`` pairs; ``describe(i)`` makes the
    error for the first position ``i`` where ``mask`` is set.
    """
    best = None
    for mask, describe in checks:
        if mask.size and mask.any():
            i = int(mask.argmax())
            if best is None or i < best[0]:
                best = (i, describe)
    if best is not None:
        raise best[1](best[0])


def _check_n(source: _Source, line: int | None, n: int, what: str) -> None:
    if n == 0:
        raise source.error(line, f"no vertices ({what} is 0); allowed: at least 1 vertex")
    if n > _MAX_VERTICES:
        raise source.error(
            line, f"{what} = {n} is too many vertices; allowed: at most {_MAX_VERTICES}"
        )


# ------------------------------------------------------------ Matrix Market
def _read_mtx(source: _Source) -> Graph:
    line, banner, _, end = next(source.lines())
    if not banner.lower().startswith(_BANNER):
        raise source.error(
            line,
            f"missing '%%MatrixMarket' banner, found {_short(banner)!r}; allowed: {_BANNER_FORM} "
            f"(a file without the banner can be read with format 'fastapsp')",
        )
    words = banner.decode("utf-8", "replace").lower().split()
    if len(words) != 5 or words[0] != _BANNER.decode():
        raise source.error(line, f"garbled banner {_short(banner)!r}; allowed: {_BANNER_FORM}")
    _, kind, layout, field, symmetry = words
    if kind != "matrix":
        raise source.error(line, f"object {kind!r} is not supported; allowed: matrix")
    if layout == "array":
        raise source.error(
            line, "dense 'array' format is not supported; allowed: coordinate (sparse entries)"
        )
    if layout != "coordinate":
        raise source.error(line, f"format {layout!r} is not known; allowed: coordinate")
    if field not in ("pattern", "integer", "real"):
        what = "is not supported" if field == "complex" else "is not known"
        raise source.error(line, f"field {field!r} {what}; allowed: pattern, integer, real")
    if symmetry not in ("general", "symmetric"):
        what = "is not supported" if symmetry in ("skew-symmetric", "hermitian") else "is not known"
        raise source.error(line, f"symmetry {symmetry!r} {what}; allowed: general, symmetric")
    return _read_coordinate(source, end, line + 1, field, symmetric=symmetry == "symmetric")


def _read_fastapsp(source: _Source) -> Graph:
    return _read_coordinate(source, 0, 1, None, symmetric=True)


def _read_coordinate(
    source: _Source, offset: int, line: int, field: str | None, *, symmetric: bool
) -> Graph:
    """Read the size line and entries of a Matrix Market or fastapsp file.

    ``field`` is None for the banner-less fastapsp layout, where every entry
    line holds two numbers (no weights) or three (weights).
    """
    head = source.header(b"%", offset, line)
    if head is None:
        after = "after the banner" if field is not None else "first"
        raise source.error(None, f"no size line; allowed: a line 'rows columns entries' {after}")
    size_line, text, _, body_offset = head
    words = text.split()
    if len(words) != 3 or not all(word.isdigit() for word in words):
        raise source.error(
            size_line,
            f"size line {_short(text)!r} is not 'rows columns entries' (three whole numbers >= 0)",
        )
    rows, cols, nnz = (int(word) for word in words)
    if rows != cols:
        raise source.error(
            size_line, f"the matrix is {rows} x {cols}; allowed: square (rows = columns)"
        )
    _check_n(source, size_line, rows, "the number of rows")
    n = rows

    tokens = _tokenize(source, body_offset, size_line + 1, b"%")
    if field is None:
        table = _table(tokens, (2, 3), "2 ('row column') or 3 ('row column weight')")
    elif field == "pattern":
        table = _table(tokens, (2,), "2 ('row column') for field 'pattern'")
    else:
        table = _table(tokens, (3,), f"3 ('row column weight') for field {field!r}")
    entries, k = table.shape

    def cell(row: int, col: int, problem) -> GraphFormatError:
        token = row * k + col
        return source.error(tokens.line_of(token), problem(tokens.text(token)))

    checks = []
    if entries > nnz:
        extra = np.zeros(entries, dtype=bool)
        extra[nnz] = True
        checks.append((extra, lambda i: cell(i, 0, lambda _: (
            f"the size line (line {size_line}) declares {nnz} entries but the file has "
            f"{entries}; this is the first extra one"))))
    for col, what in ((0, "row index"), (1, "column index")):
        ids = table[:, col]
        checks.append((_bad_ids(ids, 1, n), lambda i, col=col, what=what, ids=ids: cell(
            i, col, lambda t: _id_problem(f"{what} {t}", ids[i], 1, n))))
    if k == 3:
        w = table[:, 2]
        checks.append((_bad_weights(w), lambda i: cell(i, 2, lambda t: _weight_problem(t, w[i]))))
        if field == "integer":
            checks.append((_not_whole(w), lambda i: cell(i, 2, lambda t: (
                f"weight {t} is not a whole number; allowed for field 'integer': "
                f"whole numbers >= 0"))))
    _raise_first(checks)
    if entries < nnz:
        raise source.error(
            None,
            f"the size line (line {size_line}) declares {nnz} entries but the file has {entries}",
        )
    weights = table[:, 2].astype(np.float64) if k == 3 else None
    src = table[:, 0].astype(np.int64) - 1
    dst = table[:, 1].astype(np.int64) - 1
    directed = not symmetric and not source.undirected
    return Graph.from_edges(n, src, dst, weights, directed=directed, name=source.name)


# -------------------------------------------------------------------- METIS
def _read_metis(source: _Source) -> Graph:
    head = source.header(b"%")
    form = "'n m [fmt [ncon]]' (whole numbers)"
    if head is None:
        raise source.error(None, f"no header line; allowed: {form}")
    header_line, text, _, body_offset = head
    words = text.split()
    if not 2 <= len(words) <= 4 or not all(word.isdigit() for word in words):
        raise source.error(header_line, f"header {_short(text)!r} is not {form}")
    n, m = int(words[0]), int(words[1])
    fmt = words[2].decode() if len(words) > 2 else "0"
    if len(fmt) > 3 or set(fmt) - {"0", "1"}:
        raise source.error(
            header_line,
            f"fmt {fmt!r} is not known; allowed: up to three digits 0 or 1 "
            f"(1 edge weights, 10 vertex weights, 100 vertex sizes, or a sum such as 11)",
        )
    has_sizes, has_vertex_weights, has_edge_weights = (digit == "1" for digit in fmt.zfill(3))
    ncon = int(words[3]) if len(words) > 3 else 1
    if ncon < 1:
        raise source.error(header_line, f"ncon is {ncon}; allowed: at least 1")
    _check_n(source, header_line, n, "n")
    # Vertex sizes and weights come first on each vertex line; they are dropped.
    lead = int(has_sizes) + (ncon if has_vertex_weights else 0)

    tokens = _tokenize(source, body_offset, header_line + 1, b"%")
    counts = tokens.counts
    is_vertex_line = np.ones(counts.size, dtype=bool)
    is_vertex_line[tokens.comment_lines] = False
    vertex_lines = np.flatnonzero(is_vertex_line)
    if vertex_lines.size > n:
        extra = vertex_lines[n:][counts[vertex_lines[n:]] > 0]
        if extra.size:
            raise source.error(
                tokens.first_line + int(extra[0]),
                f"a vertex line beyond the n = {n} vertices the header (line {header_line}) "
                f"declares; allowed: {n} vertex lines, then only blank lines",
            )
    if vertex_lines.size < n:
        raise source.error(
            None,
            f"the header (line {header_line}) declares n = {n} vertices but {vertex_lines.size} "
            f"vertex lines follow; allowed: one line per vertex (empty for an isolated vertex)",
        )
    vertex_lines = vertex_lines[:n]
    per_vertex = counts[vertex_lines]

    def vertex_error(v: int, problem: str) -> GraphFormatError:
        return source.error(tokens.first_line + int(vertex_lines[v]), problem)

    if lead and np.any(per_vertex < lead):
        v = int(np.argmax(per_vertex < lead))
        raise vertex_error(v, (
            f"vertex {v + 1} has {_values(int(per_vertex[v]))}; allowed: at least {lead}, "
            f"as fmt {fmt} starts every vertex line with vertex sizes or weights"))
    rest = per_vertex - lead
    if has_edge_weights and np.any(rest % 2):
        v = int(np.argmax(rest % 2))
        after = " after its vertex sizes or weights" if lead else ""
        raise vertex_error(v, (
            f"vertex {v + 1} has {_values(int(rest[v]))}{after}; allowed: pairs "
            f"'neighbour weight', as fmt {fmt} has edge weights"))

    owner = np.repeat(np.arange(n, dtype=np.int64), per_vertex)
    first = np.cumsum(per_vertex) - per_vertex
    place = np.arange(owner.size, dtype=np.int64) - np.repeat(first, per_vertex) - lead
    step = 2 if has_edge_weights else 1
    neighbour_tokens = np.flatnonzero((place >= 0) & (place % step == 0))
    neighbours = tokens.values[neighbour_tokens]

    def token_error(i: int, problem) -> GraphFormatError:
        return source.error(tokens.line_of(i), problem(tokens.text(i)))

    checks = [(_bad_ids(neighbours, 1, n), lambda i: token_error(
        neighbour_tokens[i], lambda t: _id_problem(
            f"neighbour {t} of vertex {owner[neighbour_tokens[i]] + 1}", neighbours[i], 1, n)))]
    weights = None
    if has_edge_weights:
        weights = tokens.values[neighbour_tokens + 1]
        checks.append((_bad_weights(weights), lambda i: token_error(
            neighbour_tokens[i] + 1, lambda t: _weight_problem(t, weights[i]))))
    _raise_first(checks)
    if neighbours.size != 2 * m:
        raise source.error(
            None,
            f"the header (line {header_line}) declares m = {m} edges, so {2 * m} neighbour "
            f"entries, but the vertex lines hold {neighbours.size}; allowed: every edge "
            f"listed under both of its ends",
        )
    if weights is not None:
        weights = weights.astype(np.float64)
    return Graph.from_edges(
        n, owner[neighbour_tokens], neighbours.astype(np.int64) - 1, weights,
        directed=False, name=source.name,
    )


# --------------------------------------------------------- SNAP and .cedge
def _read_snap(source: _Source) -> Graph:
    return _read_edge_list(
        source, (2, 3), "2 ('from to') or 3 ('from to weight')", (0, 1), ("from id", "to id"),
        directed=not source.undirected,
    )


def _read_cedge(source: _Source) -> Graph:
    return _read_edge_list(source, (4,), "4 ('edgeID u v w')", (1, 2), ("u", "v"), directed=False)


def _read_edge_list(
    source: _Source, allowed: tuple[int, ...], form: str, id_cols: tuple[int, int],
    id_names: tuple[str, str], *, directed: bool,
) -> Graph:
    """Read one edge per line: two 0-based ids in ``id_cols``, then maybe a weight."""
    head = source.header(b"#")
    if head is None:
        raise source.error(None, f"no edges, so no vertices; allowed: lines of {form} values")
    first_line, _, start, _ = head
    tokens = _tokenize(source, start, first_line, b"#")
    table = _table(tokens, allowed, form)
    entries, k = table.shape
    if entries == 0:
        raise source.error(None, f"no edges, so no vertices; allowed: lines of {form} values")
    weight_col = id_cols[1] + 1 if k > id_cols[1] + 1 else None

    def cell(row: int, col: int, problem) -> GraphFormatError:
        token = row * k + col
        return source.error(tokens.line_of(token), problem(tokens.text(token)))

    high = _MAX_VERTICES - 1
    checks = []
    for col, what in zip(id_cols, id_names):
        ids = table[:, col]
        checks.append((_bad_ids(ids, 0, high), lambda i, col=col, what=what, ids=ids: cell(
            i, col, lambda t: _id_problem(f"{what} {t}", ids[i], 0, high))))
    if weight_col is not None:
        w = table[:, weight_col]
        checks.append((_bad_weights(w), lambda i: cell(
            i, weight_col, lambda t: _weight_problem(t, w[i]))))
    _raise_first(checks)
    src = table[:, id_cols[0]].astype(np.int64)
    dst = table[:, id_cols[1]].astype(np.int64)
    # Ids need not be contiguous: every id up to the largest is a vertex.
    n = int(max(src.max(), dst.max())) + 1
    weights = table[:, weight_col].astype(np.float64) if weight_col is not None else None
    return Graph.from_edges(n, src, dst, weights, directed=directed, name=source.name)


_READERS = {
    "mtx": _read_mtx,
    "fastapsp": _read_fastapsp,
    "metis": _read_metis,
    "snap": _read_snap,
    "cedge": _read_cedge,
}
