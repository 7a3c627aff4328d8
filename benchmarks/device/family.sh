#!/usr/bin/env bash
# The family of graphs to tune on (benchmarks/experiments/family.yaml, about 4-5 minutes on one H100):
# real road networks, Delaunay graphs (unit and Euclidean weights, one directed) and grid road networks
# of several sizes, densities and diameters, each solved by `fastapsp solve` once untimed (kernels
# compiled, partition saved, rows checked against SciPy) and twice timed, process start to exit.
# One record per timed run: graph, n, m, k, partitioner, stages, min-plus and boundary-row rates,
# compile seconds where the report has them, device, versions, commit (benchmarks/family.py).
#
#   OUT=/tmp/out FASTAPSP_COMMIT=$(git rev-parse --short HEAD) bash benchmarks/device/family.sh
#   DRY=1 bash benchmarks/device/family.sh     # on the CPU, benchmarks/experiments/family_dry.yaml
#
# Needs benchmarks/data/{luxembourg_osm,roadNY,roadBAY,roadFLA,delaunay_n17,del20-unit}.mtx.gz (carried,
# or copied here from shared/data; a missing one is skipped) and .whl; the other graphs are made into
# benchmarks/data/family/ on first use.  Results: benchmarks/results/family/ (with DRY=1 a temporary
# folder, or RESULTS), copied to $OUT/family when OUT is set; the runner's log beside them.
set -uo pipefail
cd "$(dirname "$0")/../.."
source benchmarks/device/_setup.sh
if [ "${DRY:-0}" = 1 ]; then
    EXPERIMENT=${EXPERIMENT:-benchmarks/experiments/family_dry.yaml}
    RESULTS=${RESULTS:-$(mktemp -d)/family}
else
    EXPERIMENT=${EXPERIMENT:-benchmarks/experiments/family.yaml}
    RESULTS=${RESULTS:-benchmarks/results/family}
    copy_data luxembourg_osm roadNY roadBAY roadFLA delaunay_n17
    [ -s benchmarks/data/del20-unit.mtx.gz ] || "$PYTHON" scripts/make_delaunay.py --scale 20 --seed 1 \
        -o benchmarks/data/del20-unit.mtx.gz > /dev/null
fi
mkdir -p "$RESULTS"
if [ "${DRY:-0}" != 1 ] && "$PYTHON" -m fastapsp build-kernels --help > /dev/null 2>&1; then
    # Every kernel variant compiled once for this machine first, so no run of the family waits for it.
    start=$SECONDS
    "$PYTHON" -m fastapsp build-kernels > "$RESULTS/build-kernels.txt" 2>&1
    echo "build-kernels: rc=$?, $((SECONDS - start)) s" | tee -a "$RESULTS/build-kernels.txt"
fi
"$PYTHON" benchmarks/compare.py "$EXPERIMENT" --out "$RESULTS" 2>&1 | tee "$RESULTS/log.txt"
rc=${PIPESTATUS[0]}
if [ -n "${OUT:-}" ]; then
    mkdir -p "$OUT/family" && cp -r "$RESULTS"/. "$OUT/family/"
fi
echo "family: rc=$rc, results in $RESULTS"
exit "$rc"
