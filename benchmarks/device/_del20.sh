# Sourced by the scale-comparison device scripts once DATA is set: makes del20-unit.mtx.gz and
# del20-euclid.mtx.gz in $DATA when absent (scripts/make_delaunay.py, ~25 s each, side by side)
# and waits for them -- for these processes only: a plain `wait` would wait for a `tee` the
# caller's output goes through.
making=()
for args in "del20-unit --scale 20 --seed 1" "del20-euclid --scale 20 --seed 1 --weights euclidean"; do
    set -- $args
    if [ ! -s "$DATA/$1.mtx.gz" ]; then
        python3 scripts/make_delaunay.py "${@:2}" -o "$DATA/$1.mtx.gz" >/dev/null &
        making+=($!)
    fi
done
for pid in "${making[@]}"; do wait "$pid"; done
