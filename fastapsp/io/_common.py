"""What every reader shares: the file's bytes, line and token scanning, value checks.

The numbers of a file are parsed in one vectorised pass over the whole text;
only when that pass fails is the text scanned token by token, to find the
line to blame.  Nothing is sized from a count the file declares before the
data bears it out: arrays grow with the bytes actually read.
"""

from __future__ import annotations

import gzip
import re
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import GraphFormatError, shorten
from ..graph import Graph
from .parallel import numbers_as, parse_parallel
from .share import Whole

FORMATS = ("mtx", "fastapsp", "metis", "snap", "cedge", "dimacs")

# Vertex ids are kept below 2**31 - 1: an all-pairs result for more vertices
# could never be stored.
MAX_VERTICES = 2**31 - 1

# Vertices that no edge mentions (isolated vertices) cost memory without any
# data to bear them out, so a declared count or a stray large id may add at
# most this many of them: a size line declaring 2e9 vertices over one entry
# fails at once instead of allocating gigabytes.
MAX_UNUSED_VERTICES = 2**24

_GZIP_MAGIC = b"\x1f\x8b"
_UTF8_BOM = b"\xef\xbb\xbf"
BANNER = b"%%matrixmarket"
_WEIGHTS_ALLOWED = "finite numbers >= 0"
_TOKEN = re.compile(rb"[^\x00-\x20]+")
_NUMBER = re.compile(
    rb"[+-]?(?:(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?|inf|infinity|nan)", re.IGNORECASE
)


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
    return shorten(text.decode("utf-8", "backslashreplace"), limit)


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
    starts: np.ndarray | None = None  # offset in ``body`` where each token starts

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


def _tokenize(source: _Source, offset: int, first_line: int, comment: bytes, end: int | None = None) -> _Tokens:
    """Parse every number from ``offset`` to ``end`` (a line start; None: the end of the file)."""
    body = source.data[offset:end]
    # Decided before comments are blanked: a comment on a last line without a newline must still count.
    unterminated = bool(body) and not body.endswith(b"\n")
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
    if unterminated:
        ends = np.append(ends, starts.size)
    counts = np.diff(ends, prepend=0)
    values = parse_parallel(body, starts)  # None: small, one core, or a run that one process must judge
    if values is None:
        values = _parse_numbers(source, body, first_line, starts.size)
    return _Tokens(source, body, first_line, counts, values, comment_lines, starts)


def _parse_numbers(source: _Source, body: bytes, first_line: int, ntokens: int) -> np.ndarray:
    if ntokens == 0:
        return np.zeros(0, dtype=np.int64)
    # Whole numbers parse several times faster as int64; try that first.
    for dtype in (np.int64, np.float64):
        values = numbers_as(body, dtype, ntokens)
        if values is not None:
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


def _tokenize_share(source: _Source, offset: int, first_line: int, comment: bytes, share):
    """This rank's share of the arc lines from ``offset`` (file line ``first_line``) to the end, tokenized,
    and the file's first line with values as every rank agrees on it (:mod:`fastapsp.io.share`):
    ``(tokens, first)`` for :func:`_table`."""
    start, end, line = share.cut(source.data, offset, first_line)
    tokens = _tokenize(source, start, line, comment, end)
    first = next((f for f in share.agree(None, _first_used(tokens)) if f is not None), None)
    return tokens, first


def _first_used(tokens: _Tokens) -> tuple[int, int] | None:
    """``(file line, values)`` of the first line of the tokens that holds values, or None."""
    used = np.flatnonzero(tokens.counts)
    return None if used.size == 0 else (tokens.first_line + int(used[0]), int(tokens.counts[used[0]]))


def _table(tokens: _Tokens, allowed: tuple[int, ...], form: str, first: tuple[int, int] | None = None) -> np.ndarray:
    """The values as rows of one line each; every non-blank line must hold k in ``allowed``.

    ``k`` is the count of the file's first line with values: ``first`` (its
    ``(line, count)``, :func:`_first_used`) when the tokens are one slice of the
    file (:mod:`fastapsp.io.share`), else the tokens' own first line.
    """
    own = _first_used(tokens)
    first = own if first is None else first
    if first is None:  # no values in the whole file
        return np.zeros((0, allowed[0]), dtype=tokens.values.dtype)
    first_line, k = first
    used = np.flatnonzero(tokens.counts)
    if k not in allowed and own == first:  # the slice that holds that line says so
        raise tokens.source.error(first_line, f"found {_values(k)}; allowed: {form}")
    if used.size == 0:
        return np.zeros((0, k), dtype=tokens.values.dtype)
    bad = np.flatnonzero(tokens.counts[used] != k)
    if bad.size:
        j = int(used[bad[0]])
        also = f", the same number on every line (line {first_line} has {k})"
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


def _not_integer_text(tokens: _Tokens, which: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Mask of the tokens ``which`` (whole ``values`` >= 1) written with a point or an exponent after their
    digits (``78.0``, ``78e0``): not vertex ids, as SciPy's reader says too.

    The byte after a whole number's digits is looked at, one gather per token (leading zeros or a sign
    move it onto a digit, never onto a point).
    """
    if tokens.starts is None or not which.size:
        return np.zeros(which.size, dtype=bool)
    body = np.frombuffer(tokens.body, dtype=np.uint8)
    digits = np.floor(np.log10(np.maximum(values, 1))).astype(np.int64) + 1
    after = np.minimum(tokens.starts[which] + digits, body.size - 1)
    byte = body[after]
    return (byte == ord(".")) | (byte == ord("e")) | (byte == ord("E"))


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
    if n > MAX_VERTICES:
        raise source.error(
            line, f"{what} = {n} is too many vertices; allowed: at most {MAX_VERTICES}"
        )


def _check_unused(source: _Source, line: int | None, n: int, ids, what: str) -> None:
    """Refuse ``n`` vertices when more than :data:`MAX_UNUSED_VERTICES` of them appear in no edge.

    ``ids`` are the 0-based vertex ids the edges use (any shape).  Called
    before anything of size ``n`` is allocated, so a declared count (``what``,
    from file line ``line``) that the data does not bear out costs nothing.
    """
    if n <= MAX_UNUSED_VERTICES:
        return
    ids = np.asarray(ids).ravel()
    if n - ids.size > MAX_UNUSED_VERTICES:  # even if every id were another vertex
        used = f"at most {ids.size}"
    else:
        # n is now within MAX_UNUSED_VERTICES of the data's size, so a mask of n bytes is borne out.
        seen = np.zeros(n, dtype=bool)
        seen[ids] = True
        count = int(np.count_nonzero(seen))
        if n - count <= MAX_UNUSED_VERTICES:
            return
        used = f"only {count}"
    raise source.error(
        line,
        f"{what} = {n} vertices, but the edges mention {used} distinct vertices; "
        f"allowed: at most {MAX_UNUSED_VERTICES} vertices that no edge mentions",
    )


def _header_words(source: _Source, comment: bytes, missing: str, offset: int = 0, line: int = 1):
    """The first line that is neither blank nor a comment: ``(line number, text, words, body offset)``.

    ``missing`` is the problem reported when the file holds no such line.
    """
    head = source.header(comment, offset, line)
    if head is None:
        raise source.error(None, missing)
    number, text, _, body_offset = head
    return number, text, text.split(), body_offset


def _graph_from_arcs(source: _Source, tokens: _Tokens, table: np.ndarray, *, n: int, declared: int, head: str,
                     head_line: int, declares: str, id_names: tuple[str, str], whole: str | None,
                     directed: bool, share=None):
    """The graph of a table of ``tail head [weight]`` rows with 1-based ids, checked against its header.

    ``declared`` is the row count the header (``head``, file line
    ``head_line``) gives, ``declares`` how a message says it ("3 entries").
    ``whole``, when given, is what the message says weights must be when a
    weight is not a whole number.  Every problem names the file line of the
    first offending row.  ``share`` (:mod:`fastapsp.io.share`): when the table
    is this rank's slice of the file's rows, the ranks agree on the problems
    and gather the rows; by default the table is the whole file's.
    """
    share = Whole() if share is None else share
    rows, width = table.shape
    counts = share.agree(None, rows)
    entries, before = sum(counts), sum(counts[: share.rank])  # the file's rows; this slice's first

    def cell(row: int, col: int, problem) -> GraphFormatError:
        token = row * width + col
        return source.error(tokens.line_of(token), problem(tokens.text(token)))

    checks = []
    if entries > declared and before <= declared < before + rows:
        extra = np.zeros(rows, dtype=bool)
        extra[declared - before] = True
        checks.append((extra, lambda i: cell(i, 0, lambda _: (
            f"{head} (line {head_line}) declares {declares} but the file has {entries}; "
            f"this is the first extra one"))))
    for col, what in enumerate(id_names):
        ids = table[:, col]
        bad = _bad_ids(ids, 1, n)
        checks.append((bad, lambda i, col=col, what=what, ids=ids: cell(
            i, col, lambda t: _id_problem(f"{what} {t}", ids[i], 1, n))))
        if ids.dtype.kind == "f":  # some number of the file is not an integer: are the ids written as ones?
            fine = ~bad  # (the others are reported as such)
            written = np.zeros(rows, dtype=bool)
            written[fine] = _not_integer_text(tokens, (np.arange(rows) * width + col)[fine], ids[fine])
            checks.append((written, lambda i, col=col, what=what: cell(i, col, lambda t: (
                f"{what} {t} is not written as a whole number; allowed: 1..{n} (digits only)"))))
    weights = None
    if width == 3:
        weights = table[:, 2]
        checks.append((_bad_weights(weights), lambda i: cell(i, 2, lambda t: _weight_problem(t, weights[i]))))
        if whole is not None:
            checks.append((_not_whole(weights), lambda i: cell(i, 2, lambda t: (
                f"weight {t} is not a whole number; allowed{whole}"))))
    _raise_first(checks)
    columns = [table[:, 0].astype(np.int64) - 1, table[:, 1].astype(np.int64) - 1]
    if weights is not None:
        columns.append(weights.astype(np.float64))
    gathered = [np.empty(entries, dtype=c.dtype) for c in columns] if share.size > 1 else columns
    share.agree(None)  # the last round: every rank's rows are good
    if entries < declared:
        raise source.error(None, f"{head} (line {head_line}) declares {declares} but the file has {entries}")
    columns = [share.gather(c, counts, out) for c, out in zip(columns, gathered)]
    share.done()
    src, dst = columns[0], columns[1]
    _check_unused(source, head_line, n, (src, dst), f"{head} declares n")
    return Graph.from_edges(n, src, dst, columns[2] if weights is not None else None, directed=directed,
                            name=source.name)
