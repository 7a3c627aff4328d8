// Kernels of the Jet partitioner (fastapsp/partition/jet.py), one thread per vertex (or per move).
//
// Each kernel computes exactly what the array-op function of jet.py named in its
// comment computes with sorts and cumulative sums, so the CuPy path gives the same
// labels as the NumPy path.  Every result is a function of the inputs alone: ties
// are broken by fixed rules (larger hash, smaller part), and the only atomics are
// integer additions and maxima, whose results do not depend on their order.
//
// Work is O(degree) per vertex: the connections of a vertex to the other parts are
// summed in a list of at most JET_SMALL_DEGREE entries (rows of at most that many
// arcs) or in an open-addressing table of 2 * degree slots in scratch memory (the
// table of row v starts at 2 * indptr[v]; slots hold -1 between uses, as every
// kernel that fills a table empties it again).  Every loop is bounded: arcs of one
// row, slots of one table (which always has a free slot: it holds at most degree
// keys), moves of one list.
//
// Graphs are CSR with 64-bit offsets, neighbours and weights (jet.py keeps every
// level in int64); labels are int32; part weights int64 (updated through their
// unsigned 64-bit view: two's complement makes the additions of negative numbers
// exact).

typedef long long i64;
typedef unsigned int u32;
typedef unsigned long long u64;

#define JET_SMALL_DEGREE 16
// 1: the cut of jet_lp_candidates is summed over each warp first (shuffles), then
// one atomic per warp; 0: one atomic per vertex (for the host emulation of the
// kernels in tests/test_jet.py, which runs threads one at a time).
#ifndef JET_WARP_REDUCE
#define JET_WARP_REDUCE 1
#endif

// _hash32 of fastapsp/partition/refine.py: a seeded bijection of 32-bit ids.
__device__ __forceinline__ u32 jet_hash32(u32 x, u32 salt) {
    u32 h = x ^ salt;
    h ^= h >> 16;
    h *= 0x7FEB352Du;
    h ^= h >> 15;
    h *= 0x846CA68Bu;
    h ^= h >> 16;
    return h;
}

// The rule of _heaviest_neighbour for one arc to u of weight w: keep it when it is
// heavier than the pick so far, or as heavy with a larger hash of u.
__device__ __forceinline__ void jet_consider(i64 u, i64 w, u32 salt, i64& pick, i64& pick_w, u32& pick_h) {
    u32 h = jet_hash32((u32)u, salt);
    if (pick < 0 || w > pick_w || (w == pick_w && h > pick_h)) {
        pick = u;
        pick_w = w;
        pick_h = h;
    }
}

// _heaviest_neighbour: per vertex, the neighbour over the heaviest allowed arc,
// ties to the larger hash of the neighbour; -1 when no arc is allowed.
extern "C" __global__ void jet_heaviest_neighbour(const i64* __restrict__ indptr, const i64* __restrict__ indices,
                                                  const i64* __restrict__ weights, const bool* __restrict__ allowed,
                                                  u32 salt, i64 n, i64* __restrict__ best) {
    i64 v = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (v >= n) return;
    i64 pick = -1, pick_w = 0;
    u32 pick_h = 0;
    for (i64 a = indptr[v]; a < indptr[v + 1]; ++a) {
        if (allowed[a]) jet_consider(indices[a], weights[a], salt, pick, pick_w, pick_h);
    }
    best[v] = pick;
}

// One proposal pass of the heavy-edge matching in _match: an unmatched vertex
// proposes to the neighbour over its heaviest arc to an unmatched neighbour whose
// weight with its own stays within cap (the choice of jet_heaviest_neighbour).
// When *go is 0 (the pass before found no mutual pair) nobody proposes: _match
// stops there.
extern "C" __global__ void jet_propose(const i64* __restrict__ indptr, const i64* __restrict__ indices,
                                       const i64* __restrict__ weights, const i64* __restrict__ vweights,
                                       const i64* __restrict__ mate, const int* __restrict__ go, i64 cap, u32 salt,
                                       i64 n, i64* __restrict__ want) {
    i64 v = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (v >= n) return;
    i64 pick = -1, pick_w = 0;
    u32 pick_h = 0;
    if (*go != 0 && mate[v] < 0) {
        const i64 room = cap - vweights[v];
        for (i64 a = indptr[v]; a < indptr[v + 1]; ++a) {
            i64 u = indices[a];
            if (mate[u] < 0 && vweights[u] <= room) jet_consider(u, weights[a], salt, pick, pick_w, pick_h);
        }
    }
    want[v] = pick;
}

// Mutual proposals are matched: mate[v] = want[v] when want[want[v]] == v; *found
// becomes 1 when any pair is matched (the go flag of the next pass).
extern "C" __global__ void jet_mutual(const i64* __restrict__ want, i64 n, i64* __restrict__ mate,
                                      int* __restrict__ found) {
    i64 v = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (v >= n) return;
    i64 u = want[v];
    if (u >= 0 && want[u] == v) {
        mate[v] = u;
        *found = 1;
    }
}

// The connections of vertex v (the sums of _connections): to its own part (own),
// in all (total), and the other part it is most connected to among the allowed
// ones (ties: smaller part; -1 and 0 when none).  A part p is allowed when sizes
// is null or sizes[p] < soft.
struct JetConn {
    i64 part, conn, own, total;
};

// Takes part p with connection total as the best so far when it beats it
// (larger total; ties: smaller part).
__device__ void jet_consider(JetConn& c, int p, i64 total) {
    if (c.part < 0 || total > c.conn || (total == c.conn && p < c.part)) {
        c.part = p;
        c.conn = total;
    }
}

// Scans the arcs of v: adds every weight to c.total, those to v's own part to
// c.own, and hands each other allowed part with the arc's weight to add(p, w).
template <class Add>
__device__ void jet_scan_arcs(i64 v, const i64* __restrict__ indptr, const i64* __restrict__ indices,
                              const i64* __restrict__ weights, const int* __restrict__ labels,
                              const i64* __restrict__ sizes, i64 soft, JetConn& c, Add& add) {
    const int mine = labels[v];
    for (i64 a = indptr[v]; a < indptr[v + 1]; ++a) {
        const int p = labels[indices[a]];
        const i64 w = weights[a];
        c.total += w;
        if (p == mine) {
            c.own += w;
            continue;
        }
        if (sizes != nullptr && sizes[p] >= soft) continue;
        add(p, w);
    }
}

// The other parts' sums of a small-degree vertex, in a list on the thread's stack.
struct JetSmallSums {
    int parts[JET_SMALL_DEGREE];
    i64 sums[JET_SMALL_DEGREE];
    int count;
    __device__ void operator()(int p, i64 w) {
        int j = 0;
        while (j < count && parts[j] != p) ++j;
        if (j == count) {
            parts[count] = p;
            sums[count] = 0;
            ++count;
        }
        sums[j] += w;
    }
};

// The other parts' sums of a larger vertex, in a hash table of 2 * degree slots
// (owned by this thread alone; empty slots hold -1 and 0, and are left so).
struct JetTableSums {
    int* keys;
    i64* sums;
    u64 slots;
    bool used;
    __device__ void operator()(int p, i64 w) {
        u64 s = (u64)jet_hash32((u32)p, 0x9E3779B9u) % slots;
        while (keys[s] != -1 && keys[s] != p) s = (s + 1 == slots) ? 0 : s + 1;
        keys[s] = p;
        sums[s] += w;
        used = true;
    }
};

__device__ JetConn jet_connections_of(i64 v, const i64* __restrict__ indptr, const i64* __restrict__ indices,
                                      const i64* __restrict__ weights, const int* __restrict__ labels,
                                      const i64* __restrict__ sizes, i64 soft, int* __restrict__ keys,
                                      i64* __restrict__ sums) {
    const i64 start = indptr[v], degree = indptr[v + 1] - start;
    JetConn c = {-1, 0, 0, 0};
    if (degree <= JET_SMALL_DEGREE) {
        JetSmallSums list;
        list.count = 0;
        jet_scan_arcs(v, indptr, indices, weights, labels, sizes, soft, c, list);
        for (int j = 0; j < list.count; ++j) jet_consider(c, list.parts[j], list.sums[j]);
        return c;
    }
    JetTableSums table = {keys + 2 * start, sums + 2 * start, (u64)(2 * degree), false};
    jet_scan_arcs(v, indptr, indices, weights, labels, sizes, soft, c, table);
    if (table.used) {
        for (u64 s = 0; s < table.slots; ++s) {
            if (table.keys[s] == -1) continue;
            jet_consider(c, table.keys[s], table.sums[s]);
            table.keys[s] = -1;
            table.sums[s] = 0;
        }
    }
    return c;
}

// _lp_candidates: Jetlp's destination, gain and candidate mask of every vertex,
// with the statistics of the labels: stats[0] += the weight of the arcs between
// parts (twice the edge cut; stats[0] starts at 0), stats[1 + p] = sizes[p].
// next_stats[0] = 0 (the next iteration's statistics, which jet.py alternates).
// A candidate has a destination, is not locked, and its gain is >= 0 or its loss is
// below floor(c * own).  Launched with max(n, k) threads.
extern "C" __global__ void jet_lp_candidates(const i64* __restrict__ indptr, const i64* __restrict__ indices,
                                             const i64* __restrict__ weights, const int* __restrict__ labels,
                                             const bool* __restrict__ locked, const i64* __restrict__ sizes, i64 k,
                                             double c, i64 n, int* __restrict__ keys, i64* __restrict__ sums,
                                             i64* __restrict__ dest, i64* __restrict__ gain, bool* __restrict__ cand,
                                             i64* __restrict__ stats, i64* __restrict__ next_stats) {
    const i64 v = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    i64 foreign = 0;
    if (v < n) {
        const JetConn cn = jet_connections_of(v, indptr, indices, weights, labels, nullptr, 0, keys, sums);
        const i64 g = cn.conn - cn.own;
        dest[v] = cn.part;
        gain[v] = g;
        cand[v] = cn.part >= 0 && !locked[v] && (g >= 0 || -g < (i64)floor(c * (double)cn.own));
        foreign = cn.total - cn.own;
    }
#if JET_WARP_REDUCE
    // Every thread of the warp takes part (blocks are whole warps).
    for (int offset = 16; offset > 0; offset >>= 1) foreign += __shfl_down_sync(0xFFFFFFFFu, foreign, offset);
    if ((threadIdx.x & 31) == 0 && foreign != 0) atomicAdd((u64*)stats, (u64)foreign);
#else
    if (foreign != 0) atomicAdd((u64*)stats, (u64)foreign);
#endif
    if (v < k) stats[1 + v] = sizes[v];
    if (v == 0) next_stats[0] = 0;
}

// _lp_move: the afterburner of Jetlp and the move.  A candidate's gain is
// recomputed as if every candidate of higher priority (larger gain, then larger
// hash) had moved to its destination; it moves when that gain is >= 0.  Writes the
// new labels and the moved mask of every vertex and updates the part weights.
extern "C" __global__ void jet_lp_move(const i64* __restrict__ indptr, const i64* __restrict__ indices,
                                       const i64* __restrict__ weights, const i64* __restrict__ vweights,
                                       const int* __restrict__ labels, const i64* __restrict__ dest,
                                       const i64* __restrict__ gain, const bool* __restrict__ cand, u32 salt, i64 n,
                                       int* __restrict__ new_labels, bool* __restrict__ moved, i64* __restrict__ sizes) {
    const i64 v = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (v >= n) return;
    const int from = labels[v];
    if (!cand[v]) {
        new_labels[v] = from;
        moved[v] = false;
        return;
    }
    const i64 to = dest[v], gv = gain[v];
    const u32 hv = jet_hash32((u32)v, salt);
    i64 g = 0;
    for (i64 a = indptr[v]; a < indptr[v + 1]; ++a) {
        const i64 u = indices[a];
        i64 where = labels[u];
        if (cand[u]) {
            const i64 gu = gain[u];
            if (gu > gv || (gu == gv && jet_hash32((u32)u, salt) > hv)) where = dest[u];
        }
        g += weights[a] * ((i64)(where == to) - (i64)(where == (i64)from));
    }
    const bool go = g >= 0;
    new_labels[v] = go ? (int)to : from;
    moved[v] = go;
    if (go) {
        const i64 w = vweights[v];
        atomicAdd((u64*)(sizes + to), (u64)w);
        atomicAdd((u64*)(sizes + from), (u64)(-w));
    }
}

// The bucket of a loss in _rebalance_rows (monotone): 0 for loss <= 0, the loss
// itself up to 63, then 57 + its bit length (64 .. 88).
__device__ __forceinline__ int jet_loss_bucket(i64 loss) {
    if (loss <= 0) return 0;
    if (loss < 64) return (int)loss;
    return 57 + (64 - __clzll((u64)loss));
}

// _rebalance_rows, first step: for a vertex of an overweight part (sizes > bound),
// the best-connected part below soft (dest, -1 if none) and the sort key of its
// move, clip(own - conn, -2**31, 2**31 - 1) * 2**32 + hash(v); its weight is added
// to hist[part * buckets + bucket of the loss].  dest = -2 for the other vertices.
extern "C" __global__ void jet_rebalance_candidates(const i64* __restrict__ indptr, const i64* __restrict__ indices,
                                                    const i64* __restrict__ weights, const i64* __restrict__ vweights,
                                                    const int* __restrict__ labels, const i64* __restrict__ sizes,
                                                    i64 bound, i64 soft, u32 salt, i64 buckets, i64 n,
                                                    int* __restrict__ keys, i64* __restrict__ sums,
                                                    i64* __restrict__ dest, i64* __restrict__ key,
                                                    i64* __restrict__ hist) {
    const i64 v = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (v >= n) return;
    const int p = labels[v];
    if (sizes[p] <= bound) {
        dest[v] = -2;
        return;
    }
    const JetConn cn = jet_connections_of(v, indptr, indices, weights, labels, sizes, soft, keys, sums);
    i64 loss = cn.own - cn.conn;
    const i64 lo = -(1LL << 31), hi = (1LL << 31) - 1;
    loss = loss < lo ? lo : (loss > hi ? hi : loss);
    dest[v] = cn.part;
    key[v] = loss * (1LL << 32) + (i64)jet_hash32((u32)v, salt);
    atomicAdd((u64*)(hist + (i64)p * buckets + jet_loss_bucket(loss)), (u64)vweights[v]);
}

// Second step, one thread per part: for an overweight part, the first bucket at
// which the weight of its buckets so far covers its excess (sizes - bound); -1 for
// the other parts.  Empties the part's row of hist for the next call.
extern "C" __global__ void jet_rebalance_cutoff(const i64* __restrict__ sizes, i64 bound, i64 buckets, i64 k,
                                                i64* __restrict__ hist, i64* __restrict__ cutoff) {
    const i64 p = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= k) return;
    const i64 excess = sizes[p] - bound;
    if (excess <= 0) {
        cutoff[p] = -1;
        return;
    }
    i64* row = hist + p * buckets;
    i64 total = 0, cut = buckets - 1;
    bool found = false;
    for (i64 b = 0; b < buckets; ++b) {
        total += row[b];
        if (!found && total >= excess) {
            cut = b;
            found = true;
        }
        row[b] = 0;
    }
    cutoff[p] = cut;
}

// Third step: the rows (vertex, part, dest, key, weight) of the vertices of
// overweight parts whose loss bucket is at most the part's cutoff, in any order
// (their keys are distinct; the host sorts them); *count rows (count starts at 0).
extern "C" __global__ void jet_rebalance_rows(const i64* __restrict__ dest, const i64* __restrict__ key,
                                              const int* __restrict__ labels, const i64* __restrict__ vweights,
                                              const i64* __restrict__ cutoff, i64 n, unsigned long long* count,
                                              i64* __restrict__ rows) {
    const i64 v = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (v >= n || dest[v] == -2) return;
    const int p = labels[v];
    const i64 kv = key[v];
    if (jet_loss_bucket(kv >> 32) > cutoff[p]) return;
    i64* row = rows + 5 * (i64)atomicAdd(count, 1ULL);
    row[0] = v;
    row[1] = p;
    row[2] = dest[v];
    row[3] = kv;
    row[4] = vweights[v];
}

// _contract, in four steps around two cumulative sums and one sort done by the caller:
// jet_leaders marks the vertex of each matched pair (or single vertex) that names
// its coarse vertex, the smaller id; the inclusive sum of the marks numbers the
// coarse vertices in that order.
extern "C" __global__ void jet_leaders(const i64* __restrict__ mate, i64 n, i64* __restrict__ leader) {
    const i64 v = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (v >= n) return;
    const i64 m = mate[v];
    leader[v] = (m < 0 || v <= m) ? 1 : 0;
}

// jet_coarse_map: every vertex's coarse vertex (numbered by the sum of the marks),
// and each coarse vertex's weight, written by its leader.
extern "C" __global__ void jet_coarse_map(const i64* __restrict__ mate, const i64* __restrict__ numbered,
                                          const i64* __restrict__ vweights, i64 n, i64* __restrict__ cmap,
                                          i64* __restrict__ cweights) {
    const i64 v = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (v >= n) return;
    const i64 m = mate[v];
    const i64 lead = (m < 0 || v <= m) ? v : m;
    const i64 c = numbered[lead] - 1;
    cmap[v] = c;
    if (lead == v) cweights[c] = vweights[v] + ((m >= 0 && m != v) ? vweights[m] : 0);
}

// jet_coarse_keys: the key coarse_row * nc + coarse_column of every arc, or the
// largest i64 for an arc inside one coarse vertex (it sorts last and is dropped).
extern "C" __global__ void jet_coarse_keys(const i64* __restrict__ rows, const i64* __restrict__ indices,
                                           const i64* __restrict__ cmap, i64 m, i64 nc, i64* __restrict__ key) {
    const i64 e = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= m) return;
    const i64 cu = cmap[rows[e]], cv = cmap[indices[e]];
    key[e] = cu == cv ? 0x7FFFFFFFFFFFFFFFLL : cu * nc + cv;
}

// jet_coarse_starts: 1 where a run of equal sorted keys begins (not for the dropped arcs).
extern "C" __global__ void jet_coarse_starts(const i64* __restrict__ key, i64 m, i64* __restrict__ start) {
    const i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= m) return;
    start[i] = (key[i] != 0x7FFFFFFFFFFFFFFFLL && (i == 0 || key[i] != key[i - 1])) ? 1 : 0;
}

// jet_coarse_arcs: the coarse arcs from the sorted keys and weights; ``numbered`` is
// the inclusive sum of the starts, so arc numbered[i] - 1 gathers run i.  The weights
// of a run add up (cweights and rowcount start at 0), the row's arc count too.
extern "C" __global__ void jet_coarse_arcs(const i64* __restrict__ key, const i64* __restrict__ w,
                                           const i64* __restrict__ numbered, i64 m, i64 nc, i64* __restrict__ crows,
                                           i64* __restrict__ ccols, i64* __restrict__ cweights,
                                           i64* __restrict__ rowcount) {
    const i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= m) return;
    const i64 k = key[i];
    if (k == 0x7FFFFFFFFFFFFFFFLL) return;
    const i64 a = numbered[i] - 1;
    atomicAdd((u64*)(cweights + a), (u64)w[i]);
    if (i == 0 || key[i - 1] != k) {
        const i64 r = k / nc;
        crows[a] = r;
        ccols[a] = k - r * nc;
        atomicAdd((u64*)(rowcount + r), (u64)1);
    }
}

// _apply_moves: vertex verts[i] goes to part to[i] (labels updated in place, each
// vertex at most once in the list) and the part weights follow.
extern "C" __global__ void jet_apply_moves(const i64* __restrict__ verts, const i64* __restrict__ to,
                                           const i64* __restrict__ vweights, i64 count, int* __restrict__ labels,
                                           i64* __restrict__ sizes) {
    const i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= count) return;
    const i64 v = verts[i], p = to[i];
    const int from = labels[v];
    labels[v] = (int)p;
    const i64 w = vweights[v];
    atomicAdd((u64*)(sizes + p), (u64)w);
    atomicAdd((u64*)(sizes + from), (u64)(-w));
}

// _part_weights: the vertex weight of every part (sizes starts at 0).
extern "C" __global__ void jet_part_weights(const int* __restrict__ labels, const i64* __restrict__ vweights,
                                            i64 n, i64* __restrict__ sizes) {
    i64 v = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (v >= n) return;
    atomicAdd((u64*)(sizes + labels[v]), (u64)vweights[v]);
}
