#!/usr/bin/env bash
# Whole runs of graphs at several k, with reports: what the cost model (fastapsp/cost.py) is fitted to
# and checked against (docs/kernels.md, "The cost model's rates"; benchmarks/cost_model_check.py).
# Each graph is first solved with --dry-run (its binary graph cache written, nothing timed); then for
# each k of KS (`auto`: the cost model's) REPS runs of `fastapsp solve GRAPH --output none --report`,
# process start to exit.  With BASE (a folder holding another tree's `fastapsp` package) each run is
# paired with one of that tree, alternately: an A/B of two cost models or kernels (where the kernel
# sources differ, the other tree's first run compiles its own).
#
#   OUT=/tmp/out FASTAPSP_COMMIT=$(git rev-parse --short HEAD) GRAPHS="del20-euclid roadNY" \
#       KS="auto 1722 2435" bash benchmarks/device/k_sweep.sh
#   DRY=1 GRAPHS=minnesota KS="auto 4" bash benchmarks/device/k_sweep.sh      # on the CPU, NumPy
#
# A graph NAME is DATA/NAME.mtx[.gz] (DATA: benchmarks/data unless set) or tests/data/NAME.mtx.gz,
# copied from shared/data where missing, or made into DATA: del<S>-unit and del<S>-euclid (scripts/make_delaunay.py
# --scale S --seed 1 [--weights euclidean]), grid<R>-real (scripts/make_grid_road.py --rows R --weights
# real --seed 1).  Results under $OUT/k_sweep (reports in runs/, process seconds in times.txt) and the
# same as one archive, $OUT/k_sweep.tgz (a device call returns a few files); without OUT a temporary
# folder.  REPS (default 1), TIMEOUT a run (default 300 s), BACKEND (default auto; numpy with DRY=1).
set -uo pipefail
cd "$(dirname "$0")/../.."
source benchmarks/device/_setup.sh
GRAPHS=${GRAPHS:-"roadNY del20-unit"} KS=${KS:-auto} REPS=${REPS:-1} TIMEOUT=${TIMEOUT:-300}
DATA=${DATA:-benchmarks/data}
if [ "${DRY:-0}" = 1 ]; then BACKEND=${BACKEND:-numpy}; else BACKEND=${BACKEND:-auto}; fi
ROOT=${OUT:-$(mktemp -d)}
O=$ROOT/k_sweep
mkdir -p "$O/runs" "$DATA"

graph_file() {  # NAME -> the file, made or copied where needed
    local name=$1 f scale rows
    for f in "$DATA/$name.mtx" "$DATA/$name.mtx.gz" "tests/data/$name.mtx.gz"; do
        [ -s "$f" ] && { echo "$f"; return 0; }
    done
    copy_data "$name" > /dev/null
    [ -s "benchmarks/data/$name.mtx.gz" ] && { echo "benchmarks/data/$name.mtx.gz"; return 0; }
    f="$DATA/$name.mtx"
    case $name in
        del[0-9]*-unit) scale=${name#del}; scale=${scale%-unit}
            "$PYTHON" scripts/make_delaunay.py --scale "$scale" --seed 1 -o "$f" > /dev/null || return 1 ;;
        del[0-9]*-euclid) scale=${name#del}; scale=${scale%-euclid}
            "$PYTHON" scripts/make_delaunay.py --scale "$scale" --seed 1 --weights euclidean -o "$f" > /dev/null \
                || return 1 ;;
        grid[0-9]*-real) rows=${name#grid}; rows=${rows%-real}
            "$PYTHON" scripts/make_grid_road.py --rows "$rows" --weights real --seed 1 -o "$f" > /dev/null || return 1 ;;
        *) return 1 ;;
    esac
    echo "$f"
}

run() {  # TREE NAME FILE K REP
    local path=$PYTHONPATH kopt=() t0 t1 rc
    [ "$1" = base ] && path="$BASE:$PYTHONPATH"
    [ "$4" = auto ] || kopt=(-k "$4")
    t0=$(date +%s.%N)
    PYTHONPATH=$path timeout "$TIMEOUT" "$PYTHON" -P -m fastapsp solve "$3" --output none --quiet --backend "$BACKEND" \
        "${kopt[@]}" --report "$O/runs/$2-k$4-$1-$5.json" > /dev/null 2>> "$O/errors.txt"
    rc=$?
    t1=$(date +%s.%N)
    echo "$2 k=$4 $1 $5 rc=$rc $(awk "BEGIN{print $t1 - $t0}")" | tee -a "$O/times.txt"
}

status=0
for name in $GRAPHS; do
    if ! file=$(graph_file "$name"); then
        echo "k_sweep: no graph $name (not in $DATA, tests/data or shared/data, and no maker)" \
            | tee -a "$O/times.txt"
        status=1
        continue
    fi
    "$PYTHON" -P -m fastapsp solve "$file" --dry-run --output none --backend "$BACKEND" > "$O/dry-$name.txt" 2>&1
    for k in $KS; do
        for rep in $(seq "$REPS"); do
            for tree in new ${BASE:+base}; do
                run "$tree" "$name" "$file" "$k" "$rep"
            done
        done
    done
done
grep -q " rc=[1-9]" "$O/times.txt" && status=1
[ -n "${OUT:-}" ] && tar czf "$OUT/k_sweep.tgz" -C "$OUT" k_sweep
echo "k_sweep: rc=$status, results in $O"
exit "$status"
