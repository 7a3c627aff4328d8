#!/usr/bin/env bash
# Every GPU test of the suite (`pytest -m gpu` over each file that marks some) on one device, in PARTS
# pytest processes side by side (default 3): one process takes longer than a device call should.  Files
# go to the parts largest first, each to the part with the fewest lines so far.
#
#   OUT=/tmp/out bash benchmarks/device/gpu_tests.sh
#   DRY=1 bash benchmarks/device/gpu_tests.sh      # on the CPU: every GPU test skips
#
# Results: $OUT/gpu_tests/part-N.txt (pytest's output) and summary.txt (each part's last line), without
# OUT a temporary folder.  TIMEOUT a part (default 300 s).  Exit status 1 when a part failed.
set -uo pipefail
cd "$(dirname "$0")/../.."
source benchmarks/device/_setup.sh
PARTS=${PARTS:-3} TIMEOUT=${TIMEOUT:-300}
O=${OUT:-$(mktemp -d)}/gpu_tests
mkdir -p "$O"
mapfile -t files < <(grep -l "mark\.gpu" tests/test_*.py | xargs wc -l | grep -v " total$" | sort -rn | awk '{print $2}')
declare -a lines groups
for ((p = 0; p < PARTS; p++)); do lines[p]=0; groups[p]=""; done
for f in "${files[@]}"; do
    best=0
    for ((p = 1; p < PARTS; p++)); do (( lines[p] < lines[best] )) && best=$p; done
    groups[best]+=" $f"
    lines[best]=$(( lines[best] + $(wc -l < "$f") ))
done
start=$SECONDS
for ((p = 0; p < PARTS; p++)); do
    [ -n "${groups[p]}" ] || continue
    # shellcheck disable=SC2086  # the file list is split on purpose
    timeout "$TIMEOUT" "$PYTHON" -m pytest -q -p no:cacheprovider -m gpu ${groups[p]} > "$O/part-$p.txt" 2>&1 &
done
wait
status=0
: > "$O/summary.txt"
for ((p = 0; p < PARTS; p++)); do
    [ -n "${groups[p]}" ] || continue
    last=$(tail -n 1 "$O/part-$p.txt")
    echo "part $p (${groups[p]# }): $last" | tee -a "$O/summary.txt"
    grep -q " failed\| error" <<< "$last" && status=1
    grep -qE "passed|skipped|deselected" <<< "$last" || status=1  # cut off or did not start
done
grep -h "^FAILED\|^ERROR" "$O"/part-*.txt | tee -a "$O/summary.txt"
echo "gpu_tests: rc=$status, $((SECONDS - start)) s, results in $O"
exit "$status"
