"""A binary copy of a parsed graph, so that the next read of a large text file reads arrays instead of parsing.

The first read of a graph file of at least :data:`CACHE_FROM_BYTES` of text writes
its CSR arrays (``indptr``, ``indices``, ``weights`` as ``.npy`` files; no
weights where every arc weighs 1, as in a pattern file) and a
``meta.json`` into a folder beside it, ``FILE.<format>[-undirected].fastapsp-csr``
(or into the folder given as the cache location).  A later read with the same
format and ``undirected`` setting reads the arrays (``numpy.load``)
when the record still matches the file: its size, modification time and the
hash of its first MiB, and the cache format's version; each array's CRC-32 is
checked and the CSR validated (:class:`fastapsp.graph.Graph`).  A stale,
damaged or foreign cache is ignored and written anew.  The folder is written
under a temporary name and renamed into place, so a reader sees a whole cache
or none; a location that cannot be written is skipped without a word.

A graph read from its cache, or whose cache was just written, knows that
folder: what a run measures of the graph itself and a later run may reuse is
kept there as a *note* (``notes.json``, :func:`keep_note` and
:func:`kept_note`; the k choice keeps the boundary law it sampled), tied to
the arrays' CRC-32, so a cache written anew drops its notes.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import zlib
from pathlib import Path

import numpy as np

__all__ = ["CACHE_FROM_BYTES", "CACHE_VERSION", "cache_folder", "load_cached", "save_cached", "source_record",
           "keep_note", "kept_note"]

CACHE_VERSION = 1
# Text parses at about 25 ms a MiB on one core of the development machine and a cache is read and checked
# in about 1 ms a MiB (benchmarks/graph_cache_bench.py: luxembourg_osm's 1.4 MiB 29 against 2 ms, roadNY's
# 4.6 MiB 115 against 4 ms, roadFLA's 17.8 MiB 432 against 16 ms).  Below a MiB the read costs a few
# hundredths of a second either way, and no cache folder is left beside the file.
CACHE_FROM_BYTES = 1 << 20
_ARRAYS = ("indptr", "indices", "weights")
_HEAD = 1 << 20
_NOTES = "notes.json"
_STORED = "binary cache"  # key of Graph._cache: (folder, CRC-32 of the arrays) of the cache the graph is in


def cache_folder(path, fmt: str, undirected: bool, location: str | None) -> Path | None:
    """Where the cache of ``path`` read as ``fmt`` lives: beside it (``location`` ``"auto"``), in the folder
    ``location``, or nowhere (``"none"``)."""
    if location in (None, "none"):
        return None
    path = Path(path)
    name = f"{path.name}.{fmt}{'-undirected' if undirected else ''}.fastapsp-csr"
    return (path.parent if location == "auto" else Path(location)) / name


def source_record(path) -> dict:
    """What ties a cache to its text file: size, modification time and the SHA-256 of the first MiB."""
    stat = os.stat(path)
    with open(path, "rb") as fh:
        head = hashlib.sha256(fh.read(_HEAD)).hexdigest()
    return {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "head_sha256": head}


def load_cached(folder: Path | None, path, fmt: str, undirected: bool, *, verify: bool = True):
    """The cached graph of ``path``, or None when there is no cache that matches it.

    ``verify=False`` skips the CRC-32 of the arrays (the record and the CSR are still checked): for the
    ranks of a node whose first rank has just checked the same folder (:mod:`fastapsp.io.nodes`)."""
    from ..graph import Graph

    if folder is None or not (folder / "meta.json").is_file():
        return None
    try:
        meta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
        if (meta.get("version") != CACHE_VERSION or meta.get("format") != fmt
                or meta.get("undirected") != bool(undirected) or meta.get("source") != source_record(path)):
            return None
        arrays = {}
        unit = meta.get("unit_weights") is True
        for name in _ARRAYS[:2] if unit else _ARRAYS:
            # Read whole, not mapped: NumPy's memmap subclass slowed every later operation on the arrays
            # (METIS on roadNY 0.218 -> 0.345 s), and reading costs milliseconds (graph_cache_bench.py).
            # Read-only, as the mapped arrays were: a graph's arrays are never written.
            array = np.load(folder / f"{name}.npy", allow_pickle=False)
            array.flags.writeable = False
            if verify and zlib.crc32(memoryview(np.ascontiguousarray(array)).cast("B")) != meta["crc32"][name]:
                return None
            arrays[name] = array
        if unit:  # every arc weighs 1: the weights were not written (a pattern file's 8 bytes an arc)
            arrays["weights"] = np.ones(arrays["indices"].size)
            arrays["weights"].flags.writeable = False
        graph = Graph(arrays["indptr"], arrays["indices"], arrays["weights"], directed=bool(meta["directed"]),
                      name=str(meta["name"]))
    except (OSError, ValueError, TypeError, KeyError):
        return None  # damaged or foreign: read the text and write the cache anew
    if graph.n != meta["n"] or graph.m != meta["arcs"]:
        return None
    if unit:
        graph._cache["unit"] = True  # Graph.unit_weights, known without a pass over the weights
    graph._cache[_STORED] = (folder, meta["crc32"])
    return graph


def save_cached(folder: Path | None, path, fmt: str, undirected: bool, graph, size: int) -> bool:
    """Write the cache of ``graph`` (read from ``path``, ``size`` bytes of text); False when it is not
    worth it or the folder cannot be written."""
    if folder is None or size < CACHE_FROM_BYTES:
        return False
    tmp = folder.with_name(f"{folder.name}.tmp{os.getpid()}")
    try:
        record = source_record(path)
        tmp.mkdir(parents=False, exist_ok=True)
        crc = {}
        unit = bool(graph.unit_weights)
        for name in _ARRAYS[:2] if unit else _ARRAYS:
            array = np.ascontiguousarray(getattr(graph, name))
            np.save(tmp / f"{name}.npy", array, allow_pickle=False)
            crc[name] = zlib.crc32(memoryview(array).cast("B"))
        meta = {"version": CACHE_VERSION, "format": fmt, "undirected": bool(undirected), "source": record,
                "name": graph.name, "n": graph.n, "arcs": graph.m, "directed": graph.directed, "crc32": crc,
                "unit_weights": unit}
        (tmp / "meta.json").write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        if folder.exists():
            shutil.rmtree(folder, ignore_errors=True)
        os.rename(tmp, folder)
        graph._cache[_STORED] = (folder, crc)
        return True
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)  # read-only folder, full disk, another process won the rename
        return False


def _notes(folder: Path, crc: dict) -> dict:
    """The notes of the cache in ``folder`` whose arrays have the CRC-32s ``crc`` (others are dropped)."""
    try:
        notes = json.loads((folder / _NOTES).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(notes, dict):
        return {}
    return {name: note for name, note in notes.items() if isinstance(note, dict) and note.get("crc32") == crc}


def kept_note(graph, name: str):
    """The value kept under ``name`` beside ``graph``'s binary cache (:func:`keep_note`), or None: no cache,
    no such note, or one written for other arrays."""
    stored = graph._cache.get(_STORED)
    if stored is None:
        return None
    note = _notes(*stored).get(name)
    return None if note is None else note.get("value")


def keep_note(graph, name: str, value) -> bool:
    """Keep ``value`` (plain JSON) under ``name`` beside ``graph``'s binary cache, for later runs of the same
    file; False where the graph has no cache or its folder cannot be written (nothing is kept then)."""
    stored = graph._cache.get(_STORED)
    if stored is None:
        return False
    folder, crc = stored
    notes = _notes(folder, crc)
    notes[name] = {"crc32": crc, "value": value}
    tmp = folder / f"{_NOTES}.tmp{os.getpid()}"
    try:
        tmp.write_text(json.dumps(notes, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        os.replace(tmp, folder / _NOTES)  # a reader sees the old notes or the new ones, never half
        return True
    except OSError:
        try:
            tmp.unlink()
        except OSError:
            pass
        return False
