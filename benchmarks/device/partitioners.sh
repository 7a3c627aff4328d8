#!/usr/bin/env bash
# The partitioner comparison at scale (experiments/scale.yaml): the million-vertex graphs (roadFLA,
# del20-unit, del20-euclid, both k, every partitioner) solved with the boundary-graph method (scale.yaml's
# per-graph sssp_method), and the roadNY k = 147 configurations that results/scale-h100/ lacked when
# this ran.  One H100 host (16 CPU cores), three phases of at most ~9.5 minutes, one device call each:
#
#   PHASE=partition  the single-core partitioners (metis, metis-vol, the six kahip modes, kaminpar)
#                    on the big graphs 14 at a time on cores 0-13 (compare.py --partition-only
#                    --jobs 14, slowest first), any not done DEADLINE s (default 470) after the
#                    start recorded as failed; meanwhile the GPU tests run on cores 14-15
#                    (correctness only, their log in $OUT); then roadNY's three.
#   PHASE=refine     jet on the GPU, then metis+b and jet+b, one configuration at a time (the
#                    cuts use every core, the cluster moves the GPU), then roadFLA's solves as
#                    long as the call lasts.
#   PHASE=solve      the solves with the saved partitions (--require-partitions), then the report
#                    and plots of scale.yaml over everything (compare.py --report-only).
#
# Every phase resumes (compare.py skips what results.json holds) and ends by packing the result folder
# (results, report, plots, logs, partitions) into $OUT/scale.tgz.0, .1, ... (pieces of 15 MiB); a phase
# on a fresh machine starts from benchmarks/scale-carry/ (those pieces unpacked there and carried).
# A fresh folder starts from the committed results/scale-h100/results.json (the small graphs' solves).
# Installs nothing: wheels installed, PYTHONPATH and OUT set beforehand (FASTAPSP_COMMIT optional).
set -uo pipefail
cd "$(dirname "$0")/../.."
: "${OUT:?set OUT to the folder for the results}"
: "${PHASE:?set PHASE to partition, refine or solve}"
SCALE=${SCALE:-/tmp/scale}
DEADLINE=${DEADLINE:-470}
DATA=benchmarks/data
EXP=benchmarks/experiments/scale.yaml
BIG=roadFLA,del20-unit,del20-euclid
mkdir -p "$OUT" "$SCALE" "$DATA"
exec > >(tee -a "$OUT/log-$PHASE.txt") 2>&1
START=$SECONDS
say() { echo "partitioners: [$((SECONDS - START)) s] $*"; }
left() { echo $((${1:-560} - (SECONDS - START))); }
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader || true
say "phase $PHASE, commit ${FASTAPSP_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null)}, $(nproc) cores"

subset() {  # FILE GRAPHS K PARTITIONERS: scale.yaml with only these graphs (comma list), k (comma list or
            # 'all') and partitioners (comma list); same settings, so the result keys are the same
    python3 - "$EXP" "$@" <<'PY'
import sys, yaml
source, out, graphs, ks, names = sys.argv[1:6]
data = yaml.safe_load(open(source))
keep = graphs.split(",")
data["graphs"] = [g for g in data["graphs"] if g["name"] in keep]
if ks != "all":
    for g in data["graphs"]:
        g["k"] = [k for k in g["k"] if str(k) in ks.split(",")]
data["partitioners"] = names.split(",")
yaml.safe_dump(data, open(out, "w"), sort_keys=False)
PY
}

pack() {  # the solve phase leaves the partitions out (they came from here; 1.7 MB each for del20)
    cp "$OUT"/log-*.txt "$SCALE"/ 2>/dev/null
    rm -f "$OUT"/scale.tgz.*
    local skip=()
    [ "$PHASE" = solve ] && skip=(--exclude=./partitions)
    tar czf - "${skip[@]}" -C "$SCALE" . | split -b 15M -d -a 1 - "$OUT/scale.tgz." \
        && say "packed $(du -ch "$OUT"/scale.tgz.* | tail -1)"
}
trap pack EXIT
if [ ! -s "$SCALE/results.json" ]; then
    if [ -s benchmarks/scale-carry/results.json ]; then
        cp -r benchmarks/scale-carry/. "$SCALE"/ && say "restored $SCALE from benchmarks/scale-carry"
    else
        cp benchmarks/results/scale-h100/results.json "$SCALE"/ && say "started from results/scale-h100/results.json"
    fi
fi

source benchmarks/device/_del20.sh  # the del20 graphs, made here when absent

CPU=metis,metis-vol,kahip-fast,kahip-eco,kahip-strong,kahip-fastsocial,kahip-ecosocial,kahip-strongsocial,kaminpar
case "$PHASE" in
partition)
    subset "$SCALE/cpu-big.yaml" "$BIG" all "$CPU"
    subset "$SCALE/cpu-roadny.yaml" roadNY 147 kahip-strong,kahip-strongsocial,kaminpar
    # The GPU tests beside the partitioners, on the two cores these leave free (correctness, not timing).
    ( taskset -c 14,15 timeout "$DEADLINE" python3 -m pytest -q -m gpu -p no:cacheprovider tests \
        > "$OUT/gpu-tests.txt" 2>&1; echo "exit $?" >> "$OUT/gpu-tests.txt" ) &
    tests=$!
    taskset -c 0-13 timeout $((DEADLINE + 30)) python3 benchmarks/compare.py "$SCALE/cpu-big.yaml" --out "$SCALE" \
        --partition-only --jobs 14 --deadline "$DEADLINE" > "$SCALE/partition-cpu-big.log" 2>&1
    say "cpu-big: $(grep -c 'at once' "$SCALE/partition-cpu-big.log") done, $(grep -c FAILED "$SCALE/partition-cpu-big.log") failed"
    wait "$tests"
    say "GPU tests: $(tail -n 2 "$OUT/gpu-tests.txt" | tr '\n' ' ')"
    timeout "$(left 575)" python3 benchmarks/compare.py "$SCALE/cpu-roadny.yaml" --out "$SCALE" --partition-only \
        --jobs 3 --deadline 90 > "$SCALE/partition-cpu-roadny.log" 2>&1
    say "cpu-roadny: $(grep -c 'at once' "$SCALE/partition-cpu-roadny.log") done"
    ;;
refine)
    subset "$SCALE/jet-big.yaml" "$BIG" all jet  # on the GPU, one at a time
    timeout 120 python3 benchmarks/compare.py "$SCALE/jet-big.yaml" --out "$SCALE" --partition-only \
        > "$SCALE/partition-jet-big.log" 2>&1
    say "jet: $(grep -c 'partition .* s (new)' "$SCALE/partition-jet-big.log") partitions"
    subset "$SCALE/refined-big.yaml" "$BIG" all metis+b,jet+b
    timeout "$(left 480)" python3 benchmarks/compare.py "$SCALE/refined-big.yaml" --out "$SCALE" --partition-only \
        > "$SCALE/partition-refined-big.log" 2>&1
    grep "+b" "$SCALE/partition-refined-big.log" | tail -n 12
    subset "$SCALE/solve-fla.yaml" roadFLA all "$CPU,jet,jet+b,metis+b"
    timeout "$(left)" python3 benchmarks/compare.py "$SCALE/solve-fla.yaml" --out "$SCALE" --require-partitions \
        > "$SCALE/solve-fla.log" 2>&1
    grep -c "exact" "$SCALE/solve-fla.log"
    ;;
solve)
    # Partitions the refine phase had no time for, or whose files did not come back (made again).
    subset "$SCALE/jet-big.yaml" "$BIG" all jet
    timeout 100 python3 benchmarks/compare.py "$SCALE/jet-big.yaml" --out "$SCALE" --partition-only \
        > "$SCALE/partition-jet-big-2.log" 2>&1
    subset "$SCALE/refined-big.yaml" "$BIG" all metis+b,jet+b
    timeout 200 python3 benchmarks/compare.py "$SCALE/refined-big.yaml" --out "$SCALE" --partition-only \
        > "$SCALE/partition-refined-big-2.log" 2>&1
    subset "$SCALE/solve-big.yaml" "roadNY,$BIG" all "$CPU,jet,jet+b,metis+b"
    timeout "$(left 545)" python3 benchmarks/compare.py "$SCALE/solve-big.yaml" --out "$SCALE" --require-partitions \
        > "$SCALE/solve-big.log" 2>&1
    grep -v "skipped$" "$SCALE/solve-big.log" | tail -n 8
    timeout 30 python3 benchmarks/compare.py "$EXP" --out "$SCALE" --report-only 2>&1 | tail -n 3
    ;;
*)
    say "unknown PHASE $PHASE"; exit 2 ;;
esac
say "done"
