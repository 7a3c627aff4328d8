#!/bin/bash
# Submit slurm/compare_array.sbatch with one array task per config line of CONFIGS.
#
#   slurm/submit_compare.sh CONFIGS [sbatch options ...]
#   MAX_PARALLEL=4 RESULTS=runs/cmp slurm/submit_compare.sh configs.txt --gpus-per-task=0
#
# Every variable compare_array.sbatch knows (RESULTS, REPEATS, BACKEND, ...) passes through the
# environment; MAX_PARALLEL caps how many array tasks run at once.
set -euo pipefail
if [ $# -lt 1 ]; then
    echo "usage: $0 CONFIGS [sbatch options ...]" >&2
    exit 2
fi
configs=$1
shift
n=$(grep -cvE '^[[:space:]]*(#|$)' "$configs" || true)
if [ "$n" -lt 1 ]; then
    echo "$0: $configs has no config lines" >&2
    exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
export CONFIGS
CONFIGS=$(cd "$(dirname "$configs")" && pwd)/$(basename "$configs")
exec sbatch --array="0-$((n - 1))${MAX_PARALLEL:+%$MAX_PARALLEL}" "$@" "$here/compare_array.sbatch"
