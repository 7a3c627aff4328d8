# Shared by device scripts: `source benchmarks/device/_steps.sh` after setting OUT and SUMMARY.
# step NAME COMMAND...: runs the command, keeps its log in $OUT/NAME.log, adds one line to $SUMMARY,
# shows the log's tail, and sets failed=1 when the command fails (the next step still runs).
failed=0

step() {
    local name=$1; shift
    local start=$SECONDS
    echo "== $name: $*"
    "$@" > "$OUT/$name.log" 2>&1
    local rc=$?
    local line="$name: rc=$rc, $((SECONDS - start)) s"
    echo "$line" | tee -a "$SUMMARY"
    tail -n 12 "$OUT/$name.log"
    [ $rc -eq 0 ] || failed=1
}
