#!/usr/bin/env bash
# Fault handling (optional, no GPU work; about 1-2 minutes): the fault handling under the device's
# Open MPI 4.1 mpirun, which CI (MPICH's hydra) cannot run.  Open MPI sends SIGTERM and then
# SIGKILL to the other ranks when one dies; the supervisor, status files and watchdog of
# fastapsp/watch.py were written for that but only run here under hydra.
#
#   OUT=/tmp/out FASTAPSP_COMMIT=$(git rev-parse --short HEAD) bash benchmarks/device/faults.sh
#
# Steps: which launcher; the launcher tests of tests/test_faults.py that kill a rank (SIGKILL
# and SIGSEGV in every stage of both methods), signal the launcher, or need the watchdog, and
# tests/test_watch.py; then one killed rank by hand with its whole output and how long it took.
# summary.txt says what each step gave.
set -uo pipefail  # a failing step is reported and the next one still runs
cd "$(dirname "$0")/../.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
OUT=${OUT:-/tmp/faults-out}
mkdir -p "$OUT"
SUMMARY="$OUT/summary.txt"
echo "commit ${FASTAPSP_COMMIT:-unknown}" > "$SUMMARY"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1

{ command -v mpiexec; mpiexec --version 2>&1 | head -2; } > "$OUT/launcher.txt" 2>&1
head -3 "$OUT/launcher.txt" | tee -a "$SUMMARY"

start=$SECONDS
python3 -m pytest -q -p no:cacheprovider -rA tests/test_faults.py tests/test_watch.py \
    -k "kill or segv or signal or watchdog or tell" > "$OUT/faults.log" 2>&1
echo "faults tests: rc=$?, $((SECONDS - start)) s: $(tail -1 "$OUT/faults.log")" | tee -a "$SUMMARY"

# One rank SIGKILLed in the middle of its Floyd-Warshall while the other is stuck in its min-plus.
export TMPDIR="$OUT/tmp"
mkdir -p "$TMPDIR"
start=$(date +%s.%N)
mpiexec -n 2 python3 tests/fault_driver.py 1:kill:floyd_warshall 0:hang:min_plus -- solve \
    tests/data/minnesota.mtx.gz -k 4 --backend numpy --sssp-method frontier --output "$TMPDIR/d.npy" \
    > "$OUT/kill-by-hand.log" 2>&1
rc=$?
seconds=$(python3 -c "import time; print(round(time.time() - $start, 2))")
echo "killed rank by hand: rc=$rc, $seconds s, left in TMPDIR: [$(ls -A "$TMPDIR" | tr '\n' ' ')]" | tee -a "$SUMMARY"
grep "fastapsp" "$OUT/kill-by-hand.log" | tee -a "$SUMMARY"
