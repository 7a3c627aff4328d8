// Hops and predecessors behind S rows of exact distances (fastapsp/stages/predecessors.py):
// a breadth-first search from each row's source over its tight arcs u -> v,
// D[s, u] + w == D[s, v], computed in REAL exactly as the SSSP kernels relax an arc
// (sssp.cu), so every reached vertex has at least one tight in-arc.  A vertex is
// claimed at the first level a tight arc reaches it: its hop count is the fewest
// arcs of any shortest path, and its predecessor one level nearer the source.
//
// Layout: D, hops, pred row-major (S x n, leading dimensions ld and n); frontier
// bit sets cur / next of W = ceil(n / 32) words per row.  hops is -1 where not
// (yet) reached.  The host launches tight_bfs_level for level L = 0, 1, ... until
// a level claims nothing (*claimed stays 0), clearing `next` between levels.
#include "common.cuh"

#define NO_PREDECESSOR (-9999)

// One thread per row: the source is at hop 0, without predecessor, in the first frontier.
extern "C" __global__ void tight_bfs_init(const index_t* sources, int S, int n, int* hops, word_t* cur, int W)
{
    const int s = blockIdx.x * blockDim.x + threadIdx.x;
    if (s >= S) return;
    const long long v = sources[s];
    hops[(long long)s * n + v] = 0;
    cur[(long long)s * W + (v >> 5)] |= 1u << (v & 31);
}

// One thread per (row, frontier word): each vertex of the word expands its tight arcs.
extern "C" __global__ void __launch_bounds__(256)
tight_bfs_level(const index_t* indptr, const index_t* indices, const double* weights, const REAL* D, long long ld,
                int n, int S, int W, int level, int* hops, int* pred, const word_t* cur, word_t* next, int* claimed)
{
    const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= (long long)S * W) return;
    word_t word = cur[t];
    if (word == 0u) return;
    const long long s = t / W;
    const long long first = (t - s * W) * 32;
    const REAL* row = D + s * ld;
    int* hrow = hops + s * n;
    int* prow = pred + s * n;
    word_t* nrow = next + s * W;
    bool any = false;
    while (word) {
        const int b = __ffs(word) - 1;
        word &= word - 1u;
        const long long u = first + b;
        const REAL du = row[u];
        const index_t end = indptr[u + 1];
        for (index_t e = indptr[u]; e < end; ++e) {
            const long long v = indices[e];
            if (hrow[v] != -1) continue;
            const REAL w = (REAL)weights[e];
            if (du + w != row[v]) continue;
            if (atomicCAS(hrow + v, -1, level + 1) == -1) {
                prow[v] = (int)u;
                atomicOr(nrow + (v >> 5), 1u << (v & 31));
                any = true;
            }
        }
    }
    if (any) *claimed = 1;
}
