#!/usr/bin/env bash
# Issue 10's scale comparison on one H100 host (16 CPU cores), in two phases of at most ~9.5 minutes,
# one device call each, run back to back so the machine (and SCALE, outside the synced tree) stays:
#
#   PHASE=partition  every single-core partitioner of experiments/scale.yaml (metis, metis-vol, the six
#                    kahip modes, kaminpar) 14 at a time (compare.py --partition-only --jobs 14; each
#                    result says so), those not done within DEADLINE (default 150 s) recorded as failed;
#                    jet on the GPU, one at a time; then metis+b and jet+b one at a time for the
#                    configurations of experiments/scale_refined.yaml (those that are solved).
#   PHASE=solve      the solves with the saved partitions on the H100 (--require-partitions):
#                    experiments/scale_solve.yaml (roadFLA, del20-unit, del20-euclid at k ~ 600 with
#                    metis, metis+b, jet, jet+b), then scale_solve_small.yaml (roadNY and delaunay_n17
#                    at both k, every partitioner); then the report and plots of scale.yaml over
#                    everything (compare.py --report-only).
#
# Every phase resumes (compare.py skips what results.json has) and ends by packing the folder (results,
# report, plots, logs, partitions) into $OUT/scale.tgz.0, .1, ... (pieces of 15 MiB); a phase on a fresh
# machine starts from benchmarks/scale-carry/ (those pieces unpacked there and carried).
# Installs nothing: wheels installed, PYTHONPATH and OUT set beforehand (FASTAPSP_COMMIT optional).
# Graphs in benchmarks/data/: roadNY, delaunay_n17, roadFLA (.mtx.gz, carried); del20-unit and
# del20-euclid are made here when absent (scripts/make_delaunay.py, ~25 s each, in parallel).
set -uo pipefail
cd "$(dirname "$0")/../.."
: "${OUT:?set OUT to the folder for the results}"
: "${PHASE:?set PHASE to partition-cpu, partition-serial or solve}"
SCALE=${SCALE:-/tmp/scale}  # the result folder (partitions included), kept on the machine between phases
DEADLINE=${DEADLINE:-150}
DATA=benchmarks/data
mkdir -p "$OUT" "$SCALE" "$DATA"
exec > >(tee -a "$OUT/log-$PHASE.txt") 2>&1
START=$SECONDS
say() { echo "issue10-scale: [$((SECONDS - START)) s] $*"; }
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader || true
say "phase $PHASE, commit ${FASTAPSP_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null)}, $(nproc) cores"

subset() {  # FILE EXPERIMENT PARTITIONER...: EXPERIMENT with only these partitioners (same settings, same keys)
    python3 - "$@" <<'PY'
import sys, yaml
out, source, names = sys.argv[1], sys.argv[2], sys.argv[3:]
data = yaml.safe_load(open(source))
data["partitioners"] = names
yaml.safe_dump(data, open(out, "w"), sort_keys=False)
PY
}

pack() {  # everything, partitions included, in pieces of at most 15 MiB (the device tool's limit is 16)
    cp "$OUT"/log-*.txt "$SCALE"/ 2>/dev/null
    rm -f "$OUT"/scale.tgz.*
    tar czf - -C "$SCALE" . | split -b 15M -d -a 1 - "$OUT/scale.tgz." && say "packed $(du -ch "$OUT"/scale.tgz.* | tail -1)"
}
trap pack EXIT
# A fresh machine: the folder comes back from the last phase's pieces, carried in benchmarks/scale-carry/
# (cat scale.tgz.* | tar xz -C benchmarks/scale-carry).
if [ ! -s "$SCALE/results.json" ] && [ -s benchmarks/scale-carry/results.json ]; then
    cp -r benchmarks/scale-carry/. "$SCALE"/ && say "restored $SCALE from benchmarks/scale-carry"
fi

source benchmarks/device/_del20.sh  # the del20 graphs, made here when absent

case "$PHASE" in
partition)
    subset "$SCALE/cpu.yaml" benchmarks/experiments/scale.yaml metis metis-vol kahip-fast kahip-eco kahip-strong \
        kahip-fastsocial kahip-ecosocial kahip-strongsocial kaminpar
    timeout $((DEADLINE + 40)) python3 benchmarks/compare.py "$SCALE/cpu.yaml" --out "$SCALE" \
        --partition-only --jobs 14 --deadline "$DEADLINE" > "$SCALE/partition-cpu.log" 2>&1
    say "parallel partitioning: $(grep -c 'at once' "$SCALE/partition-cpu.log") done, $(grep -c FAILED "$SCALE/partition-cpu.log") failed"
    subset "$SCALE/jet.yaml" benchmarks/experiments/scale.yaml jet  # on the GPU, one at a time
    timeout 100 python3 benchmarks/compare.py "$SCALE/jet.yaml" --out "$SCALE" --partition-only \
        > "$SCALE/partition-jet.log" 2>&1
    say "jet: $(grep -c 'partition .* s (new)' "$SCALE/partition-jet.log") partitions"
    # metis+b and jet+b one at a time (the cuts use every core, the cluster moves the GPU), for the
    # configurations that are solved, the two targets first
    timeout $((570 - (SECONDS - START))) python3 benchmarks/compare.py benchmarks/experiments/scale_refined.yaml \
        --out "$SCALE" --partition-only > "$SCALE/partition-refined.log" 2>&1
    grep "+b" "$SCALE/partition-refined.log" | tail -n 20
    ;;
solve)
    timeout 360 python3 benchmarks/compare.py benchmarks/experiments/scale_solve.yaml --out "$SCALE" \
        --require-partitions > "$SCALE/solve.log" 2>&1
    grep -v "skipped$" "$SCALE/solve.log" | tail -n 16
    timeout $((545 - (SECONDS - START))) python3 benchmarks/compare.py benchmarks/experiments/scale_solve_small.yaml \
        --out "$SCALE" --require-partitions > "$SCALE/solve-small.log" 2>&1
    grep -c "exact" "$SCALE/solve-small.log"
    timeout 30 python3 benchmarks/compare.py benchmarks/experiments/scale.yaml --out "$SCALE" --report-only \
        2>&1 | tail -n 3
    ;;
*)
    say "unknown PHASE $PHASE"; exit 2 ;;
esac
say "done"
