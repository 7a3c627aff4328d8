#!/usr/bin/env bash
# Where a GPU run meets CuPy's operator-with-scalar imports (docs/performance.md): for each graph of
# GRAPHS, benchmarks/scalar_operator_sites.py --array cupy over `fastapsp solve GRAPH --output none`
# then the same command with
# benchmarks/thread_timeline.py for the threads' seconds.  About a minute on one H100 after the
# kernels are built (`python -m fastapsp build-kernels` first, timed).
#
#   OUT=/tmp/out GRAPHS="roadBAY roadFLA" bash benchmarks/device/scalar_sites.sh
#   DRY=1 bash benchmarks/device/scalar_sites.sh      # on the CPU: tests/data/minnesota, NumPy arrays
#
# A graph NAME is benchmarks/data/NAME.mtx.gz (copied from shared/data where missing) or
# tests/data/NAME.mtx.gz.  Results: $OUT/scalar_sites/ (sites-NAME.txt, timeline-NAME.txt), without OUT a
# temporary folder; the exit status is 1 when a command failed.
set -uo pipefail
cd "$(dirname "$0")/../.."
source benchmarks/device/_setup.sh
if [ "${DRY:-0}" = 1 ]; then
    GRAPHS=${GRAPHS:-minnesota} ARRAY=numpy BACKEND=numpy
else
    GRAPHS=${GRAPHS:-"roadBAY roadFLA"} ARRAY=cupy BACKEND=auto
    start=$SECONDS
    "$PYTHON" -m fastapsp build-kernels > /dev/null 2>&1
    echo "build-kernels: rc=$?, $((SECONDS - start)) s"
fi
O=${OUT:-$(mktemp -d)}/scalar_sites
mkdir -p "$O"
status=0
for name in $GRAPHS; do
    copy_data "$name" > /dev/null
    file=benchmarks/data/$name.mtx.gz
    [ -s "$file" ] || file=tests/data/$name.mtx.gz
    if [ ! -s "$file" ]; then
        echo "scalar_sites: no graph $name" | tee -a "$O/errors.txt"; status=1; continue
    fi
    "$PYTHON" -P benchmarks/scalar_operator_sites.py --array "$ARRAY" --out "$O/sites-$name.txt" -- \
        solve "$file" --output none --backend "$BACKEND" --quiet 2>> "$O/errors.txt" || status=1
    "$PYTHON" -P benchmarks/thread_timeline.py --out "$O/timeline-$name.txt" -- \
        solve "$file" --output none --backend "$BACKEND" --quiet 2>> "$O/errors.txt" || status=1
    echo "$name: $(sed -n 2p "$O/sites-$name.txt" 2>/dev/null)"
done
echo "scalar_sites: rc=$status, results in $O"
exit "$status"
