"""The experiment file of ``benchmarks/compare.py``: its keys, defaults, checks and configurations."""

from __future__ import annotations

import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # _common and the compare_* modules
sys.path.insert(0, str(HERE.parent))  # measure this checkout's fastapsp, installed or not
from dataclasses import dataclass, field

from _common import REPO  # noqa: E402

from fastapsp.partition import PARTITIONERS  # noqa: E402
from fastapsp.timing import STAGES  # noqa: E402

# What an experiment measures: partitioners compared in one process (this file's keys), or a family of
# graphs solved by the command line (benchmarks/family.py, its own keys).
KINDS = ("partitioners", "family")
TOP_KEYS = ("kind", "graphs", "k", "partitioners", "backend", "repetitions", "output", "dtype", "check_samples", "seed",
            "imbalance", "sssp_method")
GRAPH_KEYS = ("path", "name", "k", "format", "undirected", "sssp_method")
DEFAULTS = {"partitioners": "all", "backend": "auto", "repetitions": 3, "output": "none", "dtype": "float32",
            "check_samples": 4, "seed": 42, "imbalance": 0.03, "sssp_method": "frontier"}
# Where the boundary rows come from (run_components' method): the SSSP over the whole graph, or the
# boundary graph.
SSSP_METHODS = ("frontier", "boundary-graph")
# Settings that change a result: a stored result made with other values is run again.  sssp_method
# may differ per graph, so the settings are a configuration's (Experiment.settings_for).
SETTINGS = ("backend", "dtype", "output", "repetitions", "check_samples", "seed", "imbalance", "sssp_method")
# What a stored result made before a setting existed was made with: results.json files written
# before sssp_method have no such setting, and were solved with the frontier method.
OLD_SETTINGS = {"sssp_method": "frontier"}
REFERENCE = "metis"
RTOL = 1e-6
CSV_FIELDS = ("graph", "n", "m", "k", "partitioner", "status", "edge_cut", "boundary_vertices",
              "boundary_max_per_part", "boundary_vertices_before_refine", "boundary_ratio", "imbalance", "partition_seconds", "solve_seconds",
              "total_seconds", *(f"stage_{s}" for s in STAGES), "exact", "max_abs_error", "checked_rows",
              "backend", "sssp_method", "dtype", "output", "repetitions", "seed", "imbalance_allowed",
              "partition_reused", "finished", "device", "commit", "partition_device", "partition_host", "error")
# 'all' in an experiment: every partitioner that runs on a CPU, without the boundary refinement
# (the thesis's comparison); jet (GPU) and the NAME+b twins are asked for by name.
ALL_PARTITIONERS = [p for p in PARTITIONERS if not p.endswith("+b") and p != "jet"]
PARTITIONED = "partitioned"  # status of a --partition-only result: partition saved and measured, not solved


class ExperimentError(ValueError):
    """The experiment file cannot be used (unknown key, bad value)."""


# ----------------------------------------------------------------- experiment
@dataclass
class GraphEntry:
    name: str
    path: Path | None  # None: the file was not found
    given: str
    k: list[int]
    format: str | None = None
    undirected: bool = False
    sssp_method: str = "frontier"  # the experiment's unless the graph entry has its own


@dataclass
class Experiment:
    name: str
    source: Path
    graphs: list[GraphEntry]
    partitioners: list[str]
    backend: str
    repetitions: int
    output: str
    dtype: str
    check_samples: int
    seed: int
    imbalance: float
    missing: list[GraphEntry] = field(default_factory=list)
    sssp_method: str = "frontier"  # of graphs without their own

    def settings_for(self, cfg: Config) -> dict:
        """The settings of one configuration: the experiment's, with its graph's sssp_method."""
        return {key: cfg.graph.sssp_method if key == "sssp_method" else getattr(self, key) for key in SETTINGS}


def _k_list(value, where: str) -> list[int]:
    values = value if isinstance(value, list) else [value]
    if not values or any(isinstance(v, bool) or not isinstance(v, int) or v < 1 for v in values):
        raise ExperimentError(f"{where}: {value!r} is not a positive integer or a list of them")
    return list(dict.fromkeys(values))


def _graph_name(path: str) -> str:
    name = Path(path).name
    if name.endswith(".gz"):
        name = name[:-3]
    return name.split(".", 1)[0] or name


def graph_entries(raw, path, allowed: tuple):
    """``(where, entry, name, format, undirected)`` for every item of an experiment's ``graphs`` list.

    ``raw`` must be a non-empty list; each item goes through :func:`graph_entry` (names unique), and the
    keys every kind of experiment shares, ``format`` (a string or None) and ``undirected`` (a bool,
    default False), are checked.  ``where`` names the item in error messages.
    """
    if not isinstance(raw, list) or not raw:
        raise ExperimentError(f"{path}: graphs: expected a non-empty list of paths or {{path: ...}} entries")
    names: set = set()
    for i, entry in enumerate(raw):
        where = f"{path}: graphs[{i}]"
        entry, name = graph_entry(entry, where, allowed, names)
        fmt = entry.get("format")
        if fmt is not None and not isinstance(fmt, str):
            raise ExperimentError(f"{where}: format: {fmt!r} is not a string")
        undirected = entry.get("undirected", False)
        if not isinstance(undirected, bool):
            raise ExperimentError(f"{where}: undirected: {undirected!r} is not true or false")
        yield where, entry, name, fmt, undirected


def graph_entry(entry, where: str, allowed: tuple, names: set) -> tuple[dict, str]:
    """One item of an experiment's ``graphs`` list as a mapping, and its name (unique: added to ``names``).

    An item is a path or a mapping with a ``path`` key and keys from ``allowed``; its name is its
    ``name`` key or the file's stem.
    """
    if isinstance(entry, str):
        entry = {"path": entry}
    if not isinstance(entry, dict) or not isinstance(entry.get("path"), str):
        raise ExperimentError(f"{where}: expected a path or a mapping with a 'path' key, found {entry!r}")
    for key in entry:
        if key not in allowed:
            raise ExperimentError(f"{where}: unknown key {key!r}; allowed: {', '.join(allowed)}")
    name = str(entry.get("name") or _graph_name(entry["path"]))
    if not re.fullmatch(r"[A-Za-z0-9_.+-]+", name):
        raise ExperimentError(f"{where}: name {name!r} may hold only letters, digits and _ . + -")
    if name in names:
        raise ExperimentError(f"{where}: a second graph named {name!r}; give one of them another name")
    names.add(name)
    return entry, name


def _resolve(path: str) -> Path | None:
    """An existing file: the path itself, or relative to the repository root; None when neither exists."""
    p = Path(path).expanduser()
    if p.is_file():
        return p.resolve()
    if not p.is_absolute() and (REPO / p).is_file():
        return (REPO / p).resolve()
    return None


def load_experiment(path):
    """Read and check an experiment file; raises ExperimentError naming the key at fault.

    Returns an :class:`Experiment`, or a ``family.Family`` for ``kind: family``.
    """
    import yaml

    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text())
    except OSError as exc:
        raise ExperimentError(f"{path}: cannot read ({exc.strerror or exc})") from None
    except yaml.YAMLError as exc:
        raise ExperimentError(f"{path}: not valid YAML ({str(exc).splitlines()[0]})") from None
    if not isinstance(data, dict):
        raise ExperimentError(f"{path}: expected a mapping of settings, found {type(data).__name__}")
    kind = data.pop("kind", "partitioners")
    if kind not in KINDS:
        raise ExperimentError(f"{path}: kind: {kind!r} is not one of {', '.join(KINDS)}")
    if kind == "family":
        from family import load_family

        return load_family(path, data)
    for key in data:
        if key not in TOP_KEYS:
            raise ExperimentError(f"{path}: unknown key {key!r}; allowed: {', '.join(TOP_KEYS)}")
    opts = {**DEFAULTS, **data}
    if opts["sssp_method"] not in SSSP_METHODS:
        raise ExperimentError(f"{path}: sssp_method: {opts['sssp_method']!r} is not one of {', '.join(SSSP_METHODS)}")

    default_k = _k_list(opts["k"], f"{path}: k") if "k" in opts else None
    graphs, missing = [], []
    for where, entry, name, fmt, undirected in graph_entries(opts.get("graphs"), path, GRAPH_KEYS):
        if "k" in entry:
            ks = _k_list(entry["k"], f"{where}: k")
        elif default_k is not None:
            ks = default_k
        else:
            raise ExperimentError(f"{where}: no k list for {name!r}; set the experiment's k or the graph's k")
        method = entry.get("sssp_method", opts["sssp_method"])
        if method not in SSSP_METHODS:
            raise ExperimentError(f"{where}: sssp_method: {method!r} is not one of {', '.join(SSSP_METHODS)}")
        g = GraphEntry(name, _resolve(entry["path"]), entry["path"], ks, fmt, undirected, method)
        (graphs if g.path is not None else missing).append(g)

    parts = opts["partitioners"]
    if parts == "all":
        parts = ALL_PARTITIONERS
    if isinstance(parts, str):
        parts = [parts]
    if not isinstance(parts, list) or not parts:
        raise ExperimentError(f"{path}: partitioners: expected 'all' or a non-empty list of names")
    for p in parts:
        if p not in PARTITIONERS:
            raise ExperimentError(f"{path}: partitioners: {p!r} is not one of all, {', '.join(PARTITIONERS)}")
    parts = list(dict.fromkeys(parts))

    choices = {"backend": ("auto", "numpy", "cupy"), "output": ("none", "memory"), "dtype": ("float32", "float64")}
    for key, allowed in choices.items():
        if str(opts[key]) not in allowed:
            raise ExperimentError(f"{path}: {key}: {opts[key]!r} is not one of {', '.join(allowed)}")
    for key, low in (("repetitions", 1), ("check_samples", 0), ("seed", 0)):
        value = opts[key]
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ExperimentError(f"{path}: {key}: {value!r} is not an integer >= {low}")
    imbalance = opts["imbalance"]
    if isinstance(imbalance, bool) or not isinstance(imbalance, (int, float)) or not 0 <= imbalance < 1:
        raise ExperimentError(f"{path}: imbalance: {imbalance!r} is not a number in [0, 1)")
    return Experiment(path.stem, path, graphs, parts, str(opts["backend"]), opts["repetitions"], str(opts["output"]),
                      str(opts["dtype"]), opts["check_samples"], opts["seed"], float(imbalance), missing,
                      opts["sssp_method"])


@dataclass
class Config:
    graph: GraphEntry
    k: int
    partitioner: str

    @property
    def key(self) -> str:
        return f"{self.graph.name}/k={self.k}/{self.partitioner}"


def configurations(exp: Experiment) -> list[Config]:
    """Every (graph, k, partitioner), graph by graph, so each graph is read once."""
    return [Config(g, k, p) for g in exp.graphs for k in g.k for p in exp.partitioners]

