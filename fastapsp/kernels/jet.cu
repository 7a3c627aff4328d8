// Kernels of the Jet partitioner (fastapsp/partition/jet.py), one thread per vertex.
//
// Each kernel computes exactly what the NumPy function named in its comment
// computes with sorts and cumulative sums, so the CuPy path gives the same
// labels as the NumPy path.  Every result is a function of the inputs alone:
// ties are broken by fixed rules (larger hash, smaller part), and the only
// atomics are integer additions, whose sum does not depend on their order.
//
// Graphs are CSR with 64-bit offsets, neighbours and weights (jet.py keeps
// every level in int64); labels are int32.

typedef long long i64;
typedef unsigned int u32;
typedef unsigned long long u64;

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
        if (!allowed[a]) continue;
        i64 u = indices[a];
        i64 w = weights[a];
        u32 h = jet_hash32((u32)u, salt);
        if (pick < 0 || w > pick_w || (w == pick_w && h > pick_h)) {
            pick = u;
            pick_w = w;
            pick_h = h;
        }
    }
    best[v] = pick;
}

// _connections: per vertex, its connection to its own part, and the other part
// (among those allowed) it is most connected to (ties: smaller part; -1 and 0
// when none).  Each distinct part of the row is summed once, at its first arc:
// O(degree^2) per vertex, no scratch memory.
extern "C" __global__ void jet_connections(const i64* __restrict__ indptr, const i64* __restrict__ indices,
                                           const i64* __restrict__ weights, const int* __restrict__ labels,
                                           const bool* __restrict__ allowed_part, i64 n, i64* __restrict__ best,
                                           i64* __restrict__ conn, i64* __restrict__ own) {
    i64 v = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (v >= n) return;
    const i64 start = indptr[v], end = indptr[v + 1];
    const int mine = labels[v];
    i64 o = 0, best_p = -1, best_c = 0;
    for (i64 a = start; a < end; ++a) {
        const int p = labels[indices[a]];
        if (p == mine) {
            o += weights[a];
            continue;
        }
        if (!allowed_part[p]) continue;
        bool seen = false;
        for (i64 b = start; b < a; ++b) {
            if (labels[indices[b]] == p) {
                seen = true;
                break;
            }
        }
        if (seen) continue;
        i64 s = weights[a];
        for (i64 b = a + 1; b < end; ++b) {
            if (labels[indices[b]] == p) s += weights[b];
        }
        if (best_p < 0 || s > best_c || (s == best_c && p < best_p)) {
            best_p = p;
            best_c = s;
        }
    }
    best[v] = best_p;
    conn[v] = best_c;
    own[v] = o;
}

// The afterburner of _jetlp: the gain of moving candidate v to dest[v] when every
// candidate of higher rank has already moved to its own destination.  0 for
// vertices that are not candidates.
extern "C" __global__ void jet_afterburner(const i64* __restrict__ indptr, const i64* __restrict__ indices,
                                           const i64* __restrict__ weights, const int* __restrict__ labels,
                                           const i64* __restrict__ dest, const bool* __restrict__ cand,
                                           const i64* __restrict__ rank, i64 n, i64* __restrict__ gain) {
    i64 v = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (v >= n) return;
    if (!cand[v]) {
        gain[v] = 0;
        return;
    }
    const i64 to = dest[v], from = labels[v], r = rank[v];
    i64 g = 0;
    for (i64 a = indptr[v]; a < indptr[v + 1]; ++a) {
        const i64 u = indices[a];
        const i64 where = (cand[u] && rank[u] > r) ? dest[u] : (i64)labels[u];
        g += weights[a] * ((i64)(where == to) - (i64)(where == from));
    }
    gain[v] = g;
}

// _bin_weights over the labels: the vertex weight of every part (integer atomics).
extern "C" __global__ void jet_part_weights(const int* __restrict__ labels, const i64* __restrict__ vweights,
                                            i64 n, u64* __restrict__ out) {
    i64 v = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (v >= n) return;
    atomicAdd(out + labels[v], (u64)vweights[v]);
}
