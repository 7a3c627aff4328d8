#!/usr/bin/env bash
# Issue 10, the boundary refinement (metis+b, jet+b) on the device host: 16 CPU cores for the pairwise cuts
# (forked workers, FASTAPSP_REFINE_WORKERS unset: one per CPU), the cluster moves on the H100 (CuPy).
# About 2.5-3 minutes, at most BUDGET = 175 s (+ the summary):
#   1. benchmarks/partition_bench.py on roadFLA (k = 595): metis, metis+b, jet, jet+b, one warm-up on a small
#      graph then one timed run each (the partitioner's own seconds, refinement included; boundary vertices
#      before and after the refinement, refine_seconds / refine_backend / refine_workers);
#   2. the same on del20-unit (k = 583);
#   3. the GPU tests of tests/test_refine.py (CuPy cluster moves = NumPy, the +b names on the GPU), with
#      what is left of the budget (first CuPy kernel compilations happened in steps 1-2);
#   4. a summary: seconds and boundary vertices per partitioner, the +b ones against METIS (issue 10's
#      target: at least 10% fewer boundary vertices than METIS).
# Installs nothing: the wheels are installed, PYTHONPATH and OUT set beforehand (FASTAPSP_COMMIT optional).
# Written under $OUT: log.txt, summary.txt, partition-roadFLA-k595.json, partition-del20-unit-k583.json,
# the step logs (roadFLA.log, del20-unit.log, gpu_tests.log), make_delaunay.txt when del20-unit was made.
# Graphs: benchmarks/data/roadFLA.mtx.gz (else copied from shared/data); benchmarks/data/del20-unit.mtx(.gz),
# else made with scripts/make_delaunay.py --scale 20 --seed 1 (~25 s, while roadFLA runs).
set -uo pipefail
cd "$(dirname "$0")/../.."
: "${OUT:?set OUT to the folder for the results}"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
DATA=benchmarks/data
SUMMARY="$OUT/summary.txt"
mkdir -p "$DATA" "$OUT"
: > "$SUMMARY"
exec > >(tee -a "$OUT/log.txt") 2>&1
source benchmarks/device/_steps.sh
START=$SECONDS
BUDGET=${BUDGET:-175}
limit() {  # SECONDS: that limit, or what is left of the budget (at least 1)
    local left=$((BUDGET - (SECONDS - START)))
    [ "$left" -lt "$1" ] && echo $((left > 1 ? left : 1)) || echo "$1"
}

nvidia-smi --query-gpu=name,memory.total --format=csv,noheader || true
echo "commit ${FASTAPSP_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null)}"
python3 -c "import os; print('CPUs usable:', len(os.sched_getaffinity(0)), 'of', os.cpu_count(),
      '| FASTAPSP_REFINE_WORKERS:', os.environ.get('FASTAPSP_REFINE_WORKERS', 'unset'))" | tee -a "$SUMMARY"
lscpu | grep -m1 "Model name" | tee -a "$SUMMARY" || true

source benchmarks/device/_graphs.sh  # FLA, DEL20 (made in the background when missing: $making)

PARTITIONERS=(metis metis+b jet jet+b)
step roadFLA timeout "$(limit 70)" python3 benchmarks/partition_bench.py --graph "roadFLA=$FLA" --k 595 \
    --partitioners "${PARTITIONERS[@]}" --repeat 1 --out "$OUT/partition-roadFLA-k595.json"
[ -n "$making" ] && { wait "$making" || echo "issue10-refine: make_delaunay failed (see make_delaunay.txt)"; }
step del20-unit timeout "$(limit 90)" python3 benchmarks/partition_bench.py --graph "del20-unit=$DEL20" --k 583 \
    --partitioners "${PARTITIONERS[@]}" --repeat 1 --out "$OUT/partition-del20-unit-k583.json"
step gpu_tests timeout "$(limit 60)" python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_refine.py

python3 - "$OUT" <<'EOF' | tee -a "$SUMMARY"
import json, sys
from pathlib import Path

for path in sorted(Path(sys.argv[1]).glob("partition-*.json")):
    runs = {r["partitioner"]: r for r in json.loads(path.read_text())["results"]}
    metis = runs.get("metis", {}).get("boundary_vertices")
    for name, r in runs.items():
        if "error" in r:
            print(f"{r['graph']} {name}: FAILED {r['error']}")
            continue
        line = (f"{r['graph']} k={r['k']} {name}: {r['median_partition_seconds']:.2f} s, "
                f"{r['boundary_vertices']:,} boundary vertices, largest part {r['largest_part']}")
        if r.get("boundary_vertices_before_refine") is not None:
            line += (f" (before refine {r['boundary_vertices_before_refine']:,}; refine {r['refine_seconds']:.2f} s"
                     f" on {r['refine_backend']} with {r['refine_workers']} workers)")
        if metis and name != "metis":
            line += f"; vs METIS {100.0 * (r['boundary_vertices'] - metis) / metis:+.2f}%"
        print(line)
EOF
echo "issue10-refine: done in $((SECONDS - START)) s, failed=$failed"
