#!/usr/bin/env python3
"""Run the partitioner comparison: make or copy the graphs it needs, then ``benchmarks/compare.py``.

The experiment files name their graphs by path under ``benchmarks/data/`` (ignored by git);
this runner writes any that are missing with the generators in ``scripts/``, copies the
downloaded ones from a ``shared/data`` folder (beside or inside the checkout), and then
hands every other argument to ``benchmarks/compare.py``, which is resumable::

    python scripts/run_comparison.py                                   # the thesis experiment
    python scripts/run_comparison.py benchmarks/experiments/ci_small.yaml
    python scripts/run_comparison.py EXPERIMENT.yaml --partition-only  # partitions on a CPU machine first
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

# Generated instances: path as the experiment files write it -> generator command.
GENERATED = {
    "benchmarks/data/delaunay16r.mtx": ["scripts/make_delaunay.py", "--scale", "16", "--seed", "1"],
    ".data/delaunay16r.mtx.gz": ["scripts/make_delaunay.py", "--scale", "16", "--seed", "1"],
    ".data/del20-unit.mtx.gz": ["scripts/make_delaunay.py", "--scale", "20", "--seed", "1"],
    ".data/del20-euclid.mtx.gz": ["scripts/make_delaunay.py", "--scale", "20", "--seed", "1",
                                  "--weights", "euclidean"],
    "benchmarks/data/del20-unit.mtx.gz": ["scripts/make_delaunay.py", "--scale", "20", "--seed", "1"],
    "benchmarks/data/del20-euclid.mtx.gz": ["scripts/make_delaunay.py", "--scale", "20", "--seed", "1",
                                            "--weights", "euclidean"],
}
# Downloaded instances: path as the experiment files write it -> file name in shared/data.
COPIED = {f"benchmarks/data/{name}": name for name in ("roadNY.mtx.gz", "roadFLA.mtx.gz", "delaunay_n17.mtx.gz")}
SHARED = (REPO.parent / "shared" / "data", REPO / "shared" / "data")


def needed_graphs(experiment: Path, known=GENERATED) -> list[str]:
    """Graph paths of the experiment that a generator here can make (or, with ``known=COPIED``, copy)."""
    import yaml

    spec = yaml.safe_load(experiment.read_text()) or {}
    paths = [g if isinstance(g, str) else g.get("path", "") for g in spec.get("graphs", [])]
    return [p for p in paths if p in known]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("experiment", nargs="?", default="benchmarks/experiments/thesis.yaml")
    args, rest = parser.parse_known_args(argv)
    experiment = Path(args.experiment)
    if not experiment.is_file():
        print(f"run_comparison: {experiment}: no such experiment file", file=sys.stderr)
        return 2
    for path in needed_graphs(experiment):
        target = REPO / path
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            print(f"run_comparison: generating {path}", file=sys.stderr)
            subprocess.run([sys.executable, *GENERATED[path], "-o", str(target)], cwd=REPO, check=True)
    for path in needed_graphs(experiment, COPIED):
        target = REPO / path
        source = next((folder / COPIED[path] for folder in SHARED if (folder / COPIED[path]).is_file()), None)
        if not target.exists() and source is not None:
            target.parent.mkdir(parents=True, exist_ok=True)
            print(f"run_comparison: copying {source} to {path}", file=sys.stderr)
            shutil.copyfile(source, target)
    return subprocess.run([sys.executable, "benchmarks/compare.py", str(experiment), *rest], cwd=REPO).returncode


if __name__ == "__main__":
    sys.exit(main())
