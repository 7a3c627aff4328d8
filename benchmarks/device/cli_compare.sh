#!/usr/bin/env bash
# The command line of this checkout against a baseline copy of the package, in one run on one machine:
# `fastapsp solve GRAPH --output none` (defaults, process start to exit), alternating baseline and current,
# REPEAT times each, on luxembourg_osm, delaunay16r, roadFLA and del20-unit; then one --verify 8 run of the
# current code per graph (8 rows against SciPy's Dijkstra). One JSON line per run in $OUT/cli-compare.jsonl.
#
#   BASE=benchmarks/data/base OUT=/tmp/out bash benchmarks/device/cli_compare.sh [EXTRA FLAGS...]
#
# BASE holds a `fastapsp/` folder of the baseline (e.g. `git archive COMMIT fastapsp | tar -x -C BASE`);
# graphs are read from benchmarks/data (roadFLA.mtx.gz and luxembourg_osm.mtx.gz copied from ../shared/data;
# the Delaunay graphs made here with scripts/make_delaunay.py when missing).
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/cli-compare}
BASE=${BASE:?BASE: folder holding the baseline fastapsp/}
REPEAT=${REPEAT:-2}
DATA=$PWD/benchmarks/data
BASE=$(cd "$BASE" && pwd)
SITE=${SITE:-/tmp/site}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
for made in "delaunay16r 16" "del20-unit 20"; do
    read -r name scale <<< "$made"
    [ -s "$DATA/$name.mtx" ] || [ -s "$DATA/$name.mtx.gz" ] || PYTHONPATH="$PWD:$SITE" python3 scripts/make_delaunay.py --scale "$scale" --seed 1 \
        -o "$DATA/$name.mtx" > "$OUT/make-$name.txt" 2>&1
done
for root in "$BASE" "$PWD"; do  # which package each side imports
    (cd "$root" && PYTHONPATH="$root:$SITE" python3 -c "import fastapsp; print('imports', fastapsp.__file__)")
done
GRAPHS=${GRAPHS:-"luxembourg_osm.mtx.gz delaunay16r roadFLA.mtx.gz del20-unit"}
solve() {  # which (base|current), graph file, extra flags
    local which=$1 graph=$2; shift 2
    local root=$PWD
    [ "$which" = base ] && root=$BASE
    local report="$OUT/report.json" start end
    rm -f "$report"
    start=$(date +%s.%N)
    # Run from the package's own folder: `python -m` puts the working directory first on sys.path.
    (cd "$root" && PYTHONPATH="$root:$SITE" timeout 300 python3 -m fastapsp solve "$DATA/$graph" --output none \
        --quiet --report "$report" "$@" > "$OUT/last.txt" 2>&1)
    local rc=$?
    end=$(date +%s.%N)
    python3 - "$which" "$graph" "$rc" "$start" "$end" "$report" "$*" >> "$OUT/cli-compare.jsonl" <<'PY'
import json, sys
which, graph, rc, start, end, report, flags = sys.argv[1:]
data = {}
try:
    data = json.load(open(report))
except OSError:
    pass
print(json.dumps({"code": which, "graph": graph, "flags": flags, "rc": int(rc),
                  "process_seconds": round(float(end) - float(start), 3), "total_seconds": data.get("total_seconds"),
                  "k": data.get("k"), "partitioner": data.get("partitioner"), "boundary_vertices": data.get("boundary_vertices"),
                  "verified_rows": data.get("verified_rows"), "stages": data.get("stages"), "device": data.get("device")}))
PY
    tail -1 "$OUT/cli-compare.jsonl" | cut -c1-200
}
for graph in $GRAPHS; do
    [ -s "$DATA/$graph" ] || graph=$(cd "$DATA" && ls "$graph".mtx* 2>/dev/null | head -1)
    solve current "$graph" "$@"  # warm-up: kernels compiled and cached for both
    solve base "$graph" "$@"
    for _ in $(seq "$REPEAT"); do
        solve base "$graph" "$@"
        solve current "$graph" "$@"
    done
    solve current "$graph" --verify 8 "$@"
done
