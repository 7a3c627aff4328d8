#!/usr/bin/env bash
# The Python library against the command line on one GPU: the GPU tests of tests/test_engine_parity.py
# (library, CLI and plans give the same numbers; device output; cupyx shortest_path), then
# benchmarks/library_bench.py in one warm process on luxembourg_osm, roadNY and roadFLA (solve to the
# device with and without a plan, solve to host memory, stats with and without a plan, shortest_path on
# cupyx, and the CLI's own seconds for the same runs), the pool kept; then the device results with the pool
# emptied between calls. Calls whose output cannot fit are recorded as
# skipped (roadNY's and roadFLA's n x n matrices fit neither the GPU nor the host).
#
#   OUT=/tmp/out FASTAPSP_COMMIT=$(git rev-parse --short HEAD) bash benchmarks/device/library.sh
#
# Run from the repo root with benchmarks/data (luxembourg_osm, roadNY, roadFLA .mtx.gz: the ignored folder,
# carried) and .whl (pymetis, kahip wheels) carried; nothing is copied from ../shared.
# Results: $OUT/library/library-<graph>.json ($OUT/library-fresh-pool/ for step 3), each step's log in $OUT,
# summary.txt.
set -uo pipefail  # a failing step is reported and the next one still runs
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/library-out}
DATA=benchmarks/data
REPEAT=${REPEAT:-3}
export PYTHONPATH=$PWD:/tmp/site PYTHONUNBUFFERED=1
mkdir -p "$OUT/library"
SUMMARY="$OUT/summary.txt"
: > "$SUMMARY"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    || exit 1
source benchmarks/device/_steps.sh  # step NAME COMMAND...

graphs=()
for name in luxembourg_osm roadNY roadFLA; do
    if [ -s "$DATA/$name.mtx.gz" ]; then
        graphs+=(--graph "$name=$DATA/$name.mtx.gz")
    else
        echo "missing $DATA/$name.mtx.gz (carry benchmarks/data)" | tee -a "$SUMMARY"
        failed=1
    fi
done

# 1. The parity tests on this machine: the GPU ones run here, the CPU and MPI ones too (about a minute).
step tests timeout 300 python3 -m pytest -q -p no:cacheprovider tests/test_engine_parity.py

# 2. The library calls, one warm process (the warm-up solve on Minnesota compiles the kernels first), with
# the memory pool kept between calls (a session that drops one result before asking for the next: CuPy's
# default pool keeps the freed block).
[ ${#graphs[@]} -gt 0 ] && step library python3 benchmarks/library_bench.py --backend cupy --repeat "$REPEAT" \
    --keep-pool "${graphs[@]}" --out "$OUT/library"
# 3. The device results again with the pool emptied between calls: each call maps its result afresh, what the
# first call of a process pays (benchmarks/device_allocation_bench.py times the mapping alone).
[ ${#graphs[@]} -gt 0 ] && step library-fresh-pool python3 benchmarks/library_bench.py --backend cupy \
    --repeat "$REPEAT" --calls "solve->cupy" "solve->cupy(plan)" "${graphs[@]}" --out "$OUT/library-fresh-pool"

sed -n '/^graph /,$p' "$OUT/library.log" >> "$SUMMARY"
echo "pool emptied between calls:" >> "$SUMMARY"
sed -n '/^graph /,$p' "$OUT/library-fresh-pool.log" >> "$SUMMARY"
echo "summary: $SUMMARY"
cat "$SUMMARY"
exit $failed
