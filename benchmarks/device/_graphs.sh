# Sourced by device scripts once DATA and OUT are set: FLA is roadFLA's file (copied from shared/data
# when benchmarks/data lacks it) and DEL20 del20-unit's (.mtx, else .mtx.gz); when there is neither,
# it is made in the background (scripts/make_delaunay.py, ~25 s) and `making` holds the maker's pid
# (empty otherwise: wait for it before the first use).
FLA="$DATA/roadFLA.mtx.gz"
for dir in ../shared/data shared/data; do
    [ -s "$FLA" ] || { [ -s "$dir/roadFLA.mtx.gz" ] && cp "$dir/roadFLA.mtx.gz" "$FLA"; }
done
DEL20="$DATA/del20-unit.mtx"
[ -s "$DEL20" ] || { [ -s "$DEL20.gz" ] && DEL20="$DEL20.gz"; }
making=""
if [ ! -s "$DEL20" ]; then
    echo "making $DEL20 in the background"
    ( timeout 100 python3 scripts/make_delaunay.py --scale 20 --seed 1 -o "$DATA/del20-unit.part.mtx" \
        && mv "$DATA/del20-unit.part.mtx" "$DEL20" ) > "$OUT/make_delaunay.txt" 2>&1 &
    making=$!
fi
