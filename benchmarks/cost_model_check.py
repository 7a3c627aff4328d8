"""The cost model (``fastapsp/cost.py``) against whole runs: stage by stage, and the k it chose.

Every report of ``fastapsp solve --report`` (and every record of ``gpu_pipeline.py`` or
``family.py``, which carry the same keys) holds the measured stage seconds and the model's
prediction for that run's own partition (``predicted_seconds``, per method).  For each run this
prints, for each stage the model prices, measured / predicted; over all runs the median of those
ratios per stage (below 1: the model overprices the stage, its rate is too low); and for each graph
run at several k, the k the model chose against the fastest k measured and what the model's k lost.
Where the ratios differ between stages, the model weighs the stages wrongly and chooses k wrongly,
however good its total is.

    python benchmarks/cost_model_check.py benchmarks/results/k-sweep-c3a4181/runs
    python benchmarks/cost_model_check.py DIR_OR_FILE... --json check.json

Runs are grouped by graph name (the file name without its extensions), backend and dtype; the k of
a graph are compared by ``total_seconds`` (the report's, not the process's) less the stages that do
not depend on k (``FIXED``: a file's first run parses its text and writes the graph cache; only the
model's runs choose k).  Where the model's run is a graph's first GPU work, its partition stage
is the one that also waits for the device (a run with ``-k`` pays that in ``partition``, a run
choosing k pays it while choosing): compare partitions of the same kind of run.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import write_json_atomic  # noqa: E402

# The stages the model prices for each method of the boundary rows (fastapsp.cost.predict).
PRICED = {"boundary-graph": ("local_fw", "boundary_graph", "boundary_rows", "min_plus"),
          "frontier": ("sssp", "floyd_warshall", "min_plus")}
# Stages whose seconds do not depend on k, left out where the k of a graph are compared.
FIXED = ("read", "backend", "choose_k")
# Rules of a k the model did not choose (fastapsp.planning.make_plan's k_choice).
NOT_CHOSEN = ("given", "from the partition given", "from the partition file", "from the plan file")


def records(paths) -> list[dict]:
    """Every run record under ``paths`` (files, or folders searched for ``*.json``) that has stage seconds
    and the model's prediction."""
    found = []
    for path in map(Path, paths):
        for file in sorted(path.rglob("*.json")) if path.is_dir() else [path]:
            try:
                data = json.loads(file.read_text())
            except (OSError, ValueError):
                continue
            for record in data if isinstance(data, list) else [data]:
                if isinstance(record, dict) and isinstance(record.get("stages"), dict) \
                        and isinstance(record.get("predicted_seconds"), dict) and "k" in record:
                    found.append({**record, "_file": str(file)})
    return found


def graph_key(record: dict) -> tuple:
    name = Path(str(record.get("graph", "?"))).name.split(".")[0]
    return name, str(record.get("backend", "?")), str(record.get("dtype", "?"))


def check(runs: list[dict]) -> dict:
    """The ratios, factors and k comparison of :mod:`cost_model_check` for ``runs`` (see :func:`records`)."""
    rows, ratios = [], {}
    for r in runs:
        method = r.get("sssp_method") if r.get("sssp_method") in PRICED else "boundary-graph"
        predicted = r["predicted_seconds"].get(method, {})
        stages = {}
        for stage in PRICED[method]:
            measured, pred = r["stages"].get(stage), predicted.get(stage)
            if measured is None or not pred:
                continue
            stages[stage] = {"measured": measured, "predicted": pred, "ratio": measured / pred}
            ratios.setdefault(stage, []).append(measured / pred)
        choice = r.get("k_choice") if isinstance(r.get("k_choice"), dict) else {}
        total = r.get("total_seconds")
        k_seconds = None if total is None else total - sum(float(r["stages"].get(stage) or 0.0) for stage in FIXED)
        rows.append({"graph": graph_key(r)[0], "key": graph_key(r), "k": int(r["k"]), "method": method,
                     "total_seconds": total, "k_seconds": k_seconds, "chosen": choice.get("rule") not in NOT_CHOSEN + (None,),
                     "stages": stages, "file": r["_file"]})
    graphs = {}
    for key in sorted({row["key"] for row in rows}):
        mine = [row for row in rows if row["key"] == key and row["k_seconds"] is not None]
        best = {}
        for row in mine:  # the least seconds of each k, its fixed stages left out
            best[row["k"]] = min(best.get(row["k"], float("inf")), row["k_seconds"])
        chosen = sorted({row["k"] for row in mine if row["chosen"]})
        fastest = min(best, key=best.get) if best else None
        entry = {"seconds_by_k": {str(k): best[k] for k in sorted(best)}, "model_k": chosen, "fastest_k": fastest}
        if len(chosen) == 1 and fastest is not None:
            entry["model_loss_seconds"] = best[chosen[0]] - best[fastest]
        graphs["/".join(key)] = entry
    factors = {stage: statistics.median(values) for stage, values in sorted(ratios.items())}
    return {"runs": rows, "factors": factors, "graphs": graphs}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="+", help="report files, or folders searched for *.json")
    parser.add_argument("--json", help="write the ratios, factors and k comparison here")
    args = parser.parse_args(argv)
    runs = records(args.paths)
    if not runs:
        print(f"cost_model_check: no run with stages and predicted_seconds under {' '.join(args.paths)}",
              file=sys.stderr)
        return 1
    result = check(runs)
    for row in sorted(result["runs"], key=lambda row: (row["graph"], row["k"])):
        parts = " ".join(f"{stage} {v['measured']:.3f}/{v['predicted']:.3f}={v['ratio']:.2f}"
                         for stage, v in row["stages"].items())
        mark = " (model's k)" if row["chosen"] else ""
        print(f"{row['graph']} k={row['k']}{mark} total {row['total_seconds']:.2f} s "
              f"({row['k_seconds']:.2f} s but {', '.join(FIXED)}): {parts}")
    print("measured / predicted, median over runs: "
          + ", ".join(f"{stage} {factor:.2f}" for stage, factor in result["factors"].items()))
    for name, entry in result["graphs"].items():
        if len(entry["seconds_by_k"]) > 1:
            loss = entry.get("model_loss_seconds")
            print(f"{name}: model's k {entry['model_k'] or 'not run'}, fastest measured k {entry['fastest_k']}"
                  + ("" if loss is None else f" ({loss:.2f} s less)"))
    if args.json:
        write_json_atomic(args.json, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
