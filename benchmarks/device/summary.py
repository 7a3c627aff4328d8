"""One line per run JSON of benchmarks/gpu_pipeline.py: graph, k, partitioner, ranks, total seconds,
the stages over 0.01 s, boundary vertices, the exactness check and the device.

    python3 benchmarks/device/summary.py TAG [TAG...]   # benchmarks/results/TAG*/ (TAG-metis too)
"""

import glob
import json
import sys


def main(tags) -> int:
    for tag in tags:
        for path in sorted(glob.glob(f"benchmarks/results/{tag}*/*-k*.json")):
            with open(path) as fh:
                run = json.load(fh)
            if "stages" not in run:  # another benchmark's JSON in the same folder (level_tree_bench.py, ...)
                continue
            stages = {name: round(sec, 2) for name, sec in run["stages"].items() if sec > 0.01}
            print(run["graph"], run["k"], run["partitioner"], run["ranks"], round(run["total_seconds"], 2), stages,
                  run["boundary_vertices"], (run.get("exactness_check") or {}).get("exact"), run["device"])
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
