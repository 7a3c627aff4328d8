// Batched boundary SSSP: up to 1024 sources advanced together, level by level,
// every read of a vertex's arcs shared by all of them (Okuyama et al.).
//
// Layout for a batch of S sources, W = ceil(S / 32) flag words, Sp = 32 W:
//   dist[v * Sp + s]              distance from source s to v (REAL)
//   visited / frontier[v * W + w] bit b stands for source 32 w + b.  BFS: visited =
//                                 v reached; frontier = reached at the last level.
//                                 Weighted: frontier = dist[v, s] dropped last round.
// Two frontier buffers alternate between levels (cur, next).  counts[L % 3] says
// whether level L has work (pull: non-zero; push: the size of queue L); level L
// zeroes counts[(L + 2) % 3], which level L + 1 fills.
//
// Two directions, both exact:
// * pull: a thread per (vertex v, word j) over all vertices, reading the
//   frontier words of v's in-neighbours (transposed CSR): no atomics, every
//   thread owns its words of visited / dist / next.  Work per level ~ n W deg.
// * push (default): warps take the vertices of a queue of those changed last level;
//   atomicOr on visited / next, atomicMin on the distance bit patterns (exact for
//   non-negative weights), each reached vertex queued once per level (stamp[v] =
//   last level it was queued for) through a per-block queue in shared memory.
//   Work per level ~ the frontier.
// Unit weights run breadth-first search on the bitsets (each (v, s) settled once);
// weights run frontier Bellman-Ford over the sources whose distance changed.
//
// *_level kernels run one level a launch; *_persistent kernels (compiled with
// -DFASTAPSP_COOPERATIVE, launched cooperatively) run every level, one grid
// barrier per level, and stop after the first level that changes nothing.
#include "common.cuh"
#ifdef FASTAPSP_COOPERATIVE
#include <cooperative_groups.h>
#endif

#define SSSP_THREADS 256

extern "C" __global__ void __launch_bounds__(SSSP_THREADS)
sssp_init(const index_t* sources, int S, int W, long long Sp, REAL* dist, word_t* visited, int unit,
          word_t* frontier, int* stamp, int* queue, int* counts)
{
    const int s = blockIdx.x * blockDim.x + threadIdx.x;
    if (s >= S) return;
    const long long v = sources[s];
    const word_t bit = 1u << (s & 31);
    dist[v * Sp + s] = (REAL)0;
    if (unit) atomicOr(visited + v * W + (s >> 5), bit);
    atomicOr(frontier + v * W + (s >> 5), bit);
    if (atomicExch(stamp + v, 0) != 0) queue[atomicAdd(counts, 1)] = (int)v;
}

// Pushes go to a per-block queue in shared memory, appended to the global queue
// once per level (one global atomicAdd per block instead of one per vertex).
#ifndef SQ_CAP
#define SQ_CAP 1024
#endif

// Called by every lane of a warp: each wanted v not yet queued for `level` is
// appended once (stamp); one shared atomicAdd per warp, the global queue only
// when the block's queue is full.
__device__ __forceinline__ void push_warp(bool want, int v, int level, int* stamp, int* sq, int* sq_count,
                                          int* queue, int* count)
{
    const bool win = want && atomicExch(stamp + v, level) != level;
    const word_t winners = __ballot_sync(FULL_MASK, win);
    if (winners == 0) return;
    const int lane = threadIdx.x & 31, leader = __ffs(winners) - 1, total = __popc(winners);
    int base = 0;
    if (lane == leader) base = atomicAdd(sq_count, total);
    base = __shfl_sync(FULL_MASK, base, leader);
    const int room = max(0, min(total, SQ_CAP - base));
    int gbase = 0;
    if (total > room) {
        if (lane == leader) gbase = atomicAdd(count, total - room);
        gbase = __shfl_sync(FULL_MASK, gbase, leader);
    }
    if (win) {
        const int rank = __popc(winners & ((1u << lane) - 1u));
        if (rank < room)
            sq[base + rank] = v;
        else
            queue[gbase + rank - room] = v;
    }
}

// End of a push level: the block's queue joins the global one.  Whole block.
__device__ __forceinline__ void flush_block_queue(const int* sq, const int* sq_count, int* queue, int* count)
{
    __shared__ int base;
    __syncthreads();
    const int k = min(*sq_count, SQ_CAP);
    if (threadIdx.x == 0 && k > 0) base = atomicAdd(count, k);
    __syncthreads();
    for (int i = threadIdx.x; i < k; i += blockDim.x) queue[base + i] = sq[i];
}

struct Lanes {  // lane = (slot `sub`, word j): 32 / W slots (vertices or arcs) per warp
    int lane, per, sub, j;
    bool active;
    __device__ __forceinline__ explicit Lanes(int W)
    {
        lane = threadIdx.x & 31;
        per = 32 / W;
        sub = lane / W;
        j = lane - sub * W;
        active = sub < per;
    }
};

__device__ __forceinline__ long long global_warp() { return ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5; }
__device__ __forceinline__ long long warp_count() { return ((long long)gridDim.x * blockDim.x) >> 5; }

__device__ __forceinline__ void write_levels(REAL* dv, word_t bits, REAL d)
{
    while (bits) {
        dv[__ffs(bits) - 1] = d;
        bits &= bits - 1;
    }
}

// ------------------------------------------------------------------ push
__device__ __forceinline__ unsigned warp_max(unsigned x)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) x = max(x, __shfl_xor_sync(FULL_MASK, x, o));
    return x;
}

// A warp takes 32 / W queued vertices at once, W lanes (one flag word each) per
// vertex, and walks their arcs side by side (W <= 16).
__device__ __forceinline__ void bfs_push_slots(int level, const index_t* indptr, const index_t* indices, int W,
                                         long long Sp, REAL* dist, word_t* visited, word_t* cur, word_t* next,
                                         int* stamp, const int* qcur, int ncur, int* qnext, int* cnext, int* sq,
                                         int* sq_count)
{
    const Lanes L(W);
    const REAL d = (REAL)(level + 1);
    const long long step = warp_count() * L.per;
    for (long long q0 = global_warp() * L.per; q0 < ncur; q0 += step) {
        const long long q = q0 + L.sub;
        long long u = 0;
        word_t f = 0;
        index_t begin = 0, degree = 0;
        if (L.active && q < ncur) {
            u = __ldcg(qcur + q);
            f = __ldcg(cur + u * W + L.j);
            begin = __ldg(indptr + u);
            degree = __ldg(indptr + u + 1) - begin;
            __stcg(cur + u * W + L.j, 0u);  // this lane's word, read just above
        }
        if (f == 0) degree = 0;
        const unsigned rounds = warp_max((unsigned)degree);
        for (unsigned k = 0; k < rounds; ++k) {
            long long v = 0;
            word_t fresh = 0;
            if (k < (unsigned)degree) {
                v = __ldg(indices + begin + k);
                // The claim itself tells which sources are new here: no read first.
                fresh = f & ~atomicOr(visited + v * W + L.j, f);
                if (fresh) {
                    atomicOr(next + v * W + L.j, fresh);
                    write_levels(dist + v * Sp + 32 * L.j, fresh, d);
                }
            }
            push_warp(fresh != 0, (int)v, level + 1, stamp, sq, sq_count, qnext, cnext);
        }
    }
}

// A warp per queued vertex, lanes = (arc offset, word): used when a vertex's words
// fill most of the warp (W > 16), where it measured faster than the slots.
__device__ __forceinline__ void bfs_push_arcs(int level, const index_t* indptr, const index_t* indices, int W,
                                              long long Sp, REAL* dist, word_t* visited, word_t* cur,
                                              word_t* next, int* stamp, const int* qcur, int ncur, int* qnext,
                                              int* cnext, int* sq, int* sq_count)
{
    const Lanes L(W);
    const REAL d = (REAL)(level + 1);
    for (long long q = global_warp(); q < ncur; q += warp_count()) {
        const long long u = __ldcg(qcur + q);
        const word_t f = L.active ? __ldcg(cur + u * W + L.j) : 0u;
        __syncwarp();
        if (L.lane < W) __stcg(cur + u * W + L.lane, 0u);
        const index_t begin = __ldg(indptr + u), end = __ldg(indptr + u + 1);
        for (index_t e0 = begin; e0 < end; e0 += L.per) {
            const index_t e = e0 + L.sub;
            long long v = 0;
            word_t fresh = 0;
            if (f != 0 && e < end) {
                v = __ldg(indices + e);
                // The claim itself tells which sources are new here: no read first.
                fresh = f & ~atomicOr(visited + v * W + L.j, f);
                if (fresh) {
                    atomicOr(next + v * W + L.j, fresh);
                    write_levels(dist + v * Sp + 32 * L.j, fresh, d);
                }
            }
            push_warp(fresh != 0, (int)v, level + 1, stamp, sq, sq_count, qnext, cnext);
        }
    }
}

#define BF_WORDS 4  // flag words relaxed together: independent atomics in flight

__device__ __forceinline__ void bf_push(int level, const index_t* indptr, const index_t* indices,
                                        const double* weights, int W, long long Sp, REAL* dist, word_t* cur,
                                        word_t* next, int* stamp, const int* qcur, int ncur, int* qnext,
                                        int* cnext, int* sq, int* sq_count)
{
    const int lane = threadIdx.x & 31;
    for (long long q = global_warp(); q < ncur; q += warp_count()) {
        const long long u = __ldcg(qcur + q);
        const word_t changed = lane < W ? __ldcg(cur + u * W + lane) : 0u;
        __syncwarp();
        if (lane < W) __stcg(cur + u * W + lane, 0u);
        const index_t begin = __ldg(indptr + u), end = __ldg(indptr + u + 1);
        word_t touched = 0;  // bit a: arc begin + a lowered some distance (first 32 arcs)
        for (int j0 = 0; j0 < W; j0 += BF_WORDS) {
            word_t bits[BF_WORDS], any = 0;
#pragma unroll
            for (int k = 0; k < BF_WORDS; ++k) {
                bits[k] = __shfl_sync(FULL_MASK, changed, (j0 + k) & 31);
                if (j0 + k >= W) bits[k] = 0;
                any |= bits[k];
            }
            if (any == 0) continue;
            bool mine[BF_WORDS];
            REAL du[BF_WORDS];
            // A drop of dist[u, s] that lands during this round sets u's bit in
            // next, so u is expanded again with the new value.
#pragma unroll
            for (int k = 0; k < BF_WORDS; ++k) {
                mine[k] = (bits[k] >> lane) & 1u;
                du[k] = mine[k] ? __ldcg(dist + u * Sp + 32 * (j0 + k) + lane) : INF_R;
            }
            for (index_t e = begin; e < end; ++e) {
                const long long v = __ldg(indices + e);
                const REAL w = (REAL)__ldg(weights + e);
                REAL* dv = dist + v * Sp + 32 * j0 + lane;
                bool better[BF_WORDS];
#pragma unroll
                for (int k = 0; k < BF_WORDS; ++k) {
                    const REAL nd = du[k] + w;
                    better[k] = mine[k] && nd < atomic_min_nonneg(dv + 32 * k, nd);
                }
                bool lowered = false;
#pragma unroll
                for (int k = 0; k < BF_WORDS; ++k) {
                    const word_t gained = __ballot_sync(FULL_MASK, better[k]);
                    if (gained != 0) {
                        if (lane == 0) atomicOr(next + v * W + j0 + k, gained);
                        lowered = true;
                    }
                }
                if (!lowered) continue;
                if (e - begin < 32)
                    touched |= 1u << (e - begin);
                else
                    push_warp(lane == 0, (int)v, level + 1, stamp, sq, sq_count, qnext, cnext);
            }
        }
        const bool want = (touched >> lane) & 1u;
        const int head = want ? (int)__ldg(indices + begin + lane) : 0;
        push_warp(want, head, level + 1, stamp, sq, sq_count, qnext, cnext);
    }
}

// ------------------------------------------------------------------ pull
// tptr / tails / tweights: the in-arcs of every vertex (transposed CSR).
__device__ __forceinline__ bool bfs_pull(int level, const index_t* tptr, const index_t* tails, int n, int W,
                                         long long Sp, REAL* dist, word_t* visited, const word_t* cur,
                                         word_t* next)
{
    const Lanes L(W);
    const REAL d = (REAL)(level + 1);
    bool any = false;
    const long long step = warp_count() * L.per;
    for (long long v = global_warp() * L.per + L.sub; v - L.sub < n; v += step) {
        if (!L.active || v >= n) continue;
        const long long t = v * W + L.j;
        word_t f = 0;
        const index_t end = __ldg(tptr + v + 1);
        for (index_t e = __ldg(tptr + v); e < end; ++e) f |= __ldcg(cur + (long long)__ldg(tails + e) * W + L.j);
        word_t fresh = 0;
        if (f) {
            const word_t seen = visited[t];
            fresh = f & ~seen;
            if (fresh) {
                visited[t] = seen | fresh;
                write_levels(dist + v * Sp + 32 * L.j, fresh, d);
                any = true;
            }
        }
        __stcg(next + t, fresh);
    }
    return any;
}

__device__ __forceinline__ bool bf_pull(int level, const index_t* tptr, const index_t* tails,
                                        const double* tweights, int n, int W, long long Sp, REAL* dist,
                                        const word_t* cur, word_t* next)
{
    const Lanes L(W);
    bool any = false;
    const long long step = warp_count() * L.per;
    for (long long v = global_warp() * L.per + L.sub; v - L.sub < n; v += step) {
        if (!L.active || v >= n) continue;
        // This thread alone writes dist[v, 32 j .. 32 j + 31] (whole cache lines).
        REAL* dv = dist + v * Sp + 32 * L.j;
        word_t gained = 0;
        const index_t end = __ldg(tptr + v + 1);
        for (index_t e = __ldg(tptr + v); e < end; ++e) {
            const long long u = __ldg(tails + e);
            word_t c = __ldcg(cur + u * W + L.j);
            if (c == 0) continue;
            const REAL w = (REAL)__ldg(tweights + e);
            const REAL* du = dist + u * Sp + 32 * L.j;
            do {
                const int b = __ffs(c) - 1;
                c &= c - 1;
                const REAL nd = __ldcg(du + b) + w;
                if (nd < dv[b]) {
                    dv[b] = nd;
                    gained |= 1u << b;
                }
            } while (c);
        }
        __stcg(next + v * W + L.j, gained);
        any |= gained != 0;
    }
    return any;
}

// ----------------------------------------------------------------- levels
#define SSSP_PARAMS                                                                                        \
    const index_t *indptr, const index_t *indices, const double *weights, int n, int W, long long Sp,        \
        REAL *dist, word_t *visited, word_t *frontier, int *stamp, int *queues, int *counts
#define SSSP_ARGS indptr, indices, weights, n, W, Sp, dist, visited, frontier, stamp, queues, counts

enum { BFS_PUSH, BF_PUSH, BFS_PULL, BF_PULL };

// One level; false when level has no work.  Every thread of the grid calls it.
template <int MODE>
__device__ __forceinline__ bool sssp_level(int level, SSSP_PARAMS)
{
    const long long nw = (long long)n * W;
    word_t* cur = frontier + (level & 1) * nw;
    word_t* next = frontier + ((level + 1) & 1) * nw;
    const int ncur = __ldcg(counts + level % 3);
    int* cnext = counts + (level + 1) % 3;
    if (blockIdx.x == 0 && threadIdx.x == 0) counts[(level + 2) % 3] = 0;
    if (ncur == 0) return false;
    if (MODE == BFS_PUSH || MODE == BF_PUSH) {
        __shared__ int sq[SQ_CAP];
        __shared__ int sq_count;
        if (threadIdx.x == 0) sq_count = 0;
        __syncthreads();
        const int* qcur = queues + (long long)(level & 1) * n;
        int* qnext = queues + (long long)((level + 1) & 1) * n;
        if (MODE == BFS_PUSH && W <= 16)
            bfs_push_slots(level, indptr, indices, W, Sp, dist, visited, cur, next, stamp, qcur, ncur, qnext, cnext,
                           sq, &sq_count);
        else if (MODE == BFS_PUSH)
            bfs_push_arcs(level, indptr, indices, W, Sp, dist, visited, cur, next, stamp, qcur, ncur, qnext, cnext,
                          sq, &sq_count);
        else
            bf_push(level, indptr, indices, weights, W, Sp, dist, cur, next, stamp, qcur, ncur, qnext, cnext, sq,
                    &sq_count);
        flush_block_queue(sq, &sq_count, qnext, cnext);
    } else {
        const bool any = MODE == BFS_PULL ? bfs_pull(level, indptr, indices, n, W, Sp, dist, visited, cur, next)
                                          : bf_pull(level, indptr, indices, weights, n, W, Sp, dist, cur, next);
        if (__syncthreads_or(any) && threadIdx.x == 0) *cnext = 1;
    }
    return true;
}

#define LEVEL_KERNEL(name, MODE)                                                                           \
    extern "C" __global__ void __launch_bounds__(SSSP_THREADS) name(SSSP_PARAMS, int level)                 \
    {                                                                                                      \
        sssp_level<MODE>(level, SSSP_ARGS);                                                                \
    }
LEVEL_KERNEL(bfs_push_level, BFS_PUSH)
LEVEL_KERNEL(bellman_ford_push_level, BF_PUSH)
LEVEL_KERNEL(bfs_pull_level, BFS_PULL)
LEVEL_KERNEL(bellman_ford_pull_level, BF_PULL)

#ifdef FASTAPSP_COOPERATIVE
template <int MODE>
__device__ __forceinline__ void sssp_all_levels(SSSP_PARAMS, int max_levels)
{
    cooperative_groups::grid_group grid = cooperative_groups::this_grid();
    for (int level = 0; level < max_levels; ++level) {
        // Every thread reads the same count: it was final at the last barrier.
        if (!sssp_level<MODE>(level, SSSP_ARGS)) break;
        grid.sync();
    }
}

#define PERSISTENT_KERNEL(name, MODE)                                                                      \
    extern "C" __global__ void __launch_bounds__(SSSP_THREADS) name(SSSP_PARAMS, int max_levels)            \
    {                                                                                                      \
        sssp_all_levels<MODE>(SSSP_ARGS, max_levels);                                                      \
    }
PERSISTENT_KERNEL(bfs_push_persistent, BFS_PUSH)
PERSISTENT_KERNEL(bellman_ford_push_persistent, BF_PUSH)
PERSISTENT_KERNEL(bfs_pull_persistent, BFS_PULL)
PERSISTENT_KERNEL(bellman_ford_pull_persistent, BF_PULL)
#endif

// out[s, v] = dist[v, s] for the batch: 32 x 32 tiles through shared memory,
// grid (ceil(n / 32), ceil(S / 32)), block (32, 8).
extern "C" __global__ void transpose_batch(const REAL* dist, long long Sp, int n, int S, REAL* out, long long ldo)
{
    __shared__ REAL tile[32][33];
    const int v0 = blockIdx.x * 32, s0 = blockIdx.y * 32;
    const int tx = threadIdx.x, ty = threadIdx.y;
    for (int r = ty; r < 32; r += 8) {
        const int v = v0 + r, s = s0 + tx;
        if (v < n && s < S) tile[r][tx] = dist[(long long)v * Sp + s];
    }
    __syncthreads();
    for (int r = ty; r < 32; r += 8) {
        const int s = s0 + r, v = v0 + tx;
        if (s < S && v < n) out[(long long)s * ldo + v] = tile[tx][r];
    }
}
