#!/usr/bin/env bash
# A user's first contact on a fresh machine (about a minute on one H100): with empty caches (CuPy's
# kernel cache, per-user caches, no binary copy of the graph), `python -m fastapsp build-kernels`
# timed where the command exists (skipped and noted otherwise), then roadBAY solved twice with
# `--output none`, process start to exit (benchmarks/first_contact.py).  One JSON record with graph,
# first_seconds, second_seconds, build_seconds, device, commit.
#
#   OUT=/tmp/out FASTAPSP_COMMIT=$(git rev-parse --short HEAD) bash benchmarks/device/first_contact.sh
#   DRY=1 bash benchmarks/device/first_contact.sh      # on the CPU: tests/data/minnesota, NumPy backend
#
# Needs benchmarks/data/roadBAY.mtx.gz (carried, or copied here from shared/data) and .whl.
# Results: benchmarks/results/first_contact/ (with DRY=1 a temporary folder, or RESULTS), copied to
# $OUT/first_contact when OUT is set.
set -uo pipefail
cd "$(dirname "$0")/../.."
source benchmarks/device/_setup.sh
if [ "${DRY:-0}" = 1 ]; then
    GRAPH=${GRAPH:-tests/data/minnesota.mtx.gz} BACKEND=${BACKEND:-numpy}
    RESULTS=${RESULTS:-$(mktemp -d)/first_contact}
else
    copy_data roadBAY
    GRAPH=${GRAPH:-benchmarks/data/roadBAY.mtx.gz} BACKEND=${BACKEND:-auto}
    RESULTS=${RESULTS:-benchmarks/results/first_contact}
fi
mkdir -p "$RESULTS"
name=$(basename "$GRAPH"); name=${name%%.*}
"$PYTHON" benchmarks/first_contact.py "$GRAPH" --backend "$BACKEND" --out "$RESULTS/first_contact-$name.json"
rc=$?
if [ -n "${OUT:-}" ]; then
    mkdir -p "$OUT/first_contact" && cp -r "$RESULTS"/. "$OUT/first_contact/"
fi
exit "$rc"
