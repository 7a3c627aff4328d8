"""The settings of a run: one list for the command line, run files and the Python API.

Every field of :class:`SolveOptions` is a ``fastapsp solve`` flag (``-`` for
``_``), a run-file key (see :mod:`fastapsp.config`) and, where it makes sense
in a process, a keyword of :func:`fastapsp.solve`, :func:`fastapsp.stats` and
:func:`fastapsp.plan`.  The decisions a run makes from them live in
:func:`fastapsp.planning.make_plan`, once.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass

from .cost import SSSP_METHODS
from .errors import ConfigError
from .partition import AUTO, DEFAULT_IMBALANCE, DEFAULT_SEED, PARTITIONERS, REFINEMENTS
from .paths import ids_path, predecessors_path
from .precision import DTYPES
from .smalldist import SMALL_DTYPES
from .stages.floyd_warshall import DEFAULT_TILE

__all__ = ["SolveOptions", "RUN_FILE_TYPES", "OUTPUTS", "SOURCE_ROWS", "PARALLEL_PARTITION"]

# Where the result goes: discarded, host memory, GPU memory (a CuPy array), or a .npy file (any other value).
OUTPUTS = ("none", "memory", "device")
SOURCE_ROWS = ("auto", "pipeline", "sssp")
PARALLEL_PARTITION = ("auto", "on", "off")  # whether several ranks partition side by side, a piece each  # how the rows of --sources are computed (fastapsp/sources.py)


@dataclass
class SolveOptions:
    """Every setting of a run (flags and run-file keys share these names)."""

    graph: str = ""
    k: int | None = None
    partitioner: str = AUTO  # fastapsp.partition.auto_partitioner
    refine: str = "none"
    seed: int = DEFAULT_SEED
    imbalance: float = DEFAULT_IMBALANCE
    parallel_partition: str = "auto"  # under several ranks: auto | on | off (fastapsp.distributed.in_pieces)
    backend: str = "auto"
    undirected: bool = False
    format: str | None = None
    graph_cache: str = "auto"  # a binary copy of a large parsed graph: auto (beside it), none, or a folder
    output: str = "none"  # none | memory | device | PATH.npy
    dtype: str | None = None  # None or "auto": chosen from the graph (see fastapsp.precision)
    result_dtype: str | None = None  # the output's float dtype when wider than the one computed in (Python API)
    partition_file: str | None = None
    plan: str | None = None  # --plan FILE: the whole plan loaded from FILE, or made and saved there
    report: str | None = None
    tile: int = DEFAULT_TILE
    block_mb: float | None = None
    sssp_method: str = "auto"  # where the boundary rows come from: frontier | boundary-graph
    stats: str | bool | None = None  # --stats PREFIX (fastapsp/reductions.py); True: reduce, write no file
    sources: object = None  # --sources SPEC or an array of ids (fastapsp/sources.py)
    sources_method: str = "auto"  # how the rows of the sources are computed: pipeline | sssp
    verify: int = 0  # --verify N (fastapsp/verify.py)
    predecessors: bool = False  # --predecessors (fastapsp/paths.py)
    dry_run: bool = False  # --dry-run: print the plan and its estimates, compute nothing
    quiet: bool = False  # --quiet: no progress bar (fastapsp/progress.py)

    def check(self, *, need_graph: bool = True) -> None:
        """Reject values no run could use, before any work starts (same on every rank)."""
        if need_graph and not self.graph:
            raise ConfigError("graph: no graph file given")
        if self.k is not None and (not isinstance(self.k, int) or isinstance(self.k, bool) or self.k < 1):
            raise ConfigError(f"k: {self.k!r} is not a positive integer")
        if self.partitioner != AUTO and self.partitioner not in PARTITIONERS:
            raise ConfigError(f"partitioner: {self.partitioner!r} is not one of {AUTO}, {', '.join(PARTITIONERS)}")
        if self.refine not in REFINEMENTS:
            raise ConfigError(f"refine: {self.refine!r} is not one of {', '.join(REFINEMENTS)}")
        if not 0 <= self.imbalance < 1:
            raise ConfigError(f"imbalance: {self.imbalance} is outside [0, 1)")
        if self.parallel_partition not in PARALLEL_PARTITION:
            raise ConfigError(f"parallel_partition: {self.parallel_partition!r} is not one of "
                              f"{', '.join(PARALLEL_PARTITION)}")
        if self.dtype not in (None, "auto", *DTYPES, *SMALL_DTYPES):
            raise ConfigError(f"dtype: {self.dtype!r} is not one of auto, {', '.join(DTYPES + SMALL_DTYPES)}")
        if self.result_dtype not in (None, *DTYPES):
            raise ConfigError(f"result_dtype: {self.result_dtype!r} is not one of {', '.join(DTYPES)}")
        if self.backend not in ("auto", "numpy", "cupy"):
            raise ConfigError(f"backend: {self.backend!r} is not one of auto, numpy, cupy")
        out = str(self.output)
        if out not in OUTPUTS and not out.endswith(".npy"):
            raise ConfigError(f"output: {out!r} is not 'none', 'memory', 'device' or a path ending in .npy")
        written = [("output", out if out.endswith(".npy") else None), ("report", self.report),
                   ("partition_file", self.partition_file), ("plan", self.plan),
                   ("stats", self.stats if isinstance(self.stats, str) else None)]
        for name, path in written:
            if not path:
                continue
            folder = os.path.dirname(os.path.abspath(str(path)))
            if not os.path.isdir(folder):
                raise ConfigError(f"{name}: folder {folder} does not exist")
            if name != "stats" and os.path.isdir(str(path)):  # (stats: a prefix of two file names)
                raise ConfigError(f"{name}: {path} is a folder; allowed: a file name")
        if self.graph_cache not in ("auto", "none") and not os.path.isdir(self.graph_cache):
            raise ConfigError(f"graph_cache: {self.graph_cache!r} is not auto, none or an existing folder")
        if self.sources_method not in SOURCE_ROWS:
            raise ConfigError(f"sources_method: {self.sources_method!r} is not one of {', '.join(SOURCE_ROWS)}")
        if self.stats and self.sources is not None:
            raise ConfigError("stats: --stats reduces the whole matrix and cannot be combined with --sources")
        if self.predecessors and not (out.endswith(".npy") or out in ("memory", "device")):
            raise ConfigError(f"predecessors: needs --output PATH.npy (they are written beside it), found {out!r}")
        if not isinstance(self.verify, int) or self.verify < 0:
            raise ConfigError(f"verify: {self.verify!r} is not a number of rows >= 0")
        if self.tile < 1:
            raise ConfigError(f"tile: {self.tile} is not a positive integer")
        if self.block_mb is not None and self.block_mb <= 0:
            raise ConfigError(f"block_mb: {self.block_mb} must be > 0")
        if self.sssp_method not in SSSP_METHODS:
            raise ConfigError(f"sssp_method: {self.sssp_method!r} is not one of {', '.join(SSSP_METHODS)}")
        self._check_paths()

    @property
    def block_bytes(self) -> int | None:
        """``block_mb`` in bytes (None: row blocks sized from the free memory)."""
        return None if self.block_mb is None else int(self.block_mb * 2**20)

    def files(self) -> list[tuple[str, str]]:
        """``(setting, path)`` of every file a run reads or writes: the graph, the output and what is written
        beside it (sidecar, predecessors, source ids), the report, the statistics, the partition and plan files."""
        found = [("graph", self.graph)] if self.graph else []
        out = str(self.output)
        if out.endswith(".npy"):
            found += [("output", out), ("output", out + ".json")]
            if self.predecessors:
                found += [("predecessors", predecessors_path(out)), ("predecessors", predecessors_path(out) + ".json")]
            if self.sources is not None:
                found.append(("sources", ids_path(out)))
        if self.report:
            found.append(("report", str(self.report)))
        if isinstance(self.stats, str):
            found += [("stats", self.stats + ".json"), ("stats", self.stats + ".npz")]
        for name in ("partition_file", "plan"):
            path = getattr(self, name)
            if path:
                found += [(name, str(path)), (name, str(path) + ".json")]
        return found

    def _check_paths(self) -> None:
        """Two settings that name one file would overwrite each other's (or the graph): refused up front."""
        seen: dict = {}
        for name, path in self.files():
            real = os.path.realpath(path)
            if real in seen and seen[real][0] != name:
                raise ConfigError(f"{name}: {path} is also the file of {seen[real][0]} ({seen[real][1]}); every "
                                  "file a run reads or writes needs a path of its own")
            seen.setdefault(real, (name, path))

    def to_dict(self) -> dict:
        """The settings as plain values (what a saved plan records)."""
        values = asdict(self)
        if values["sources"] is not None and not isinstance(values["sources"], str):
            values["sources"] = "<array>"
        return values


# Run-file keys and their types (every field but the graph-independent Python-only ones).
RUN_FILE_TYPES = {"graph": str, "k": int, "partitioner": str, "refine": str, "seed": int, "imbalance": float,
                  "parallel_partition": str, "backend": str, "undirected": bool, "format": str, "graph_cache": str, "output": str,
                  "dtype": str,
                  "partition_file": str, "plan": str, "report": str, "tile": int, "block_mb": float, "stats": str,
                  "sources": str, "sources_method": str, "verify": int, "predecessors": bool, "dry_run": bool,
                  "quiet": bool, "sssp_method": str}
