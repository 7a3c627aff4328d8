"""Matrix Market coordinate files and the banner-less FastAPSP research layout."""

from __future__ import annotations

from ..graph import Graph
from ._common import BANNER, _check_n, _graph_from_arcs, _header_words, _short, _Source, _table, _tokenize_share
from .share import Whole

_BANNER_FORM = "'%%MatrixMarket matrix coordinate <pattern|integer|real> <general|symmetric>'"


def _read_mtx(source: _Source, share=None) -> Graph:
    # The banner is the first line that is not blank.
    line, banner, _, end = next((found for found in source.lines() if found[1]), next(source.lines()))
    if not banner.lower().startswith(BANNER):
        raise source.error(
            line,
            f"missing '%%MatrixMarket' banner, found {_short(banner)!r}; allowed: {_BANNER_FORM} "
            f"(a file without the banner can be read with format 'fastapsp')",
        )
    words = banner.decode("utf-8", "replace").lower().split()
    if len(words) != 5 or words[0] != BANNER.decode():
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
    return _read_coordinate(source, end, line + 1, field, symmetric=symmetry == "symmetric", share=share)


def _read_fastapsp(source: _Source, share=None) -> Graph:
    return _read_coordinate(source, 0, 1, None, symmetric=True, share=share)


def _read_coordinate(
    source: _Source, offset: int, line: int, field: str | None, *, symmetric: bool, share=None
) -> Graph:
    """Read the size line and entries of a Matrix Market or fastapsp file.

    ``field`` is None for the banner-less fastapsp layout, where every entry
    line holds two numbers (no weights) or three (weights).  ``share``
    (:mod:`fastapsp.io.share`): the ranks that parse a slice of the entries each.
    """
    share = Whole() if share is None else share
    after = "after the banner" if field is not None else "first"
    size_line, text, words, body_offset = _header_words(
        source, b"%", f"no size line; allowed: a line 'rows columns entries' {after}", offset, line)
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

    tokens, first = _tokenize_share(source, body_offset, size_line + 1, b"%", share)
    if field is None:
        table = _table(tokens, (2, 3), "2 ('row column') or 3 ('row column weight')", first)
    elif field == "pattern":
        table = _table(tokens, (2,), "2 ('row column') for field 'pattern'", first)
    else:
        table = _table(tokens, (3,), f"3 ('row column weight') for field {field!r}", first)
    return _graph_from_arcs(source, tokens, table, n=n, declared=nnz, head="the size line", head_line=size_line,
                            declares=f"{nnz} entries", id_names=("row index", "column index"),
                            whole=" for field 'integer': whole numbers >= 0" if field == "integer" else None,
                            directed=not symmetric and not source.undirected, share=share)
