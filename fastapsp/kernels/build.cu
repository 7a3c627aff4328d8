// The |C| x |C| matrix of one component (see fastapsp/stages/build.py).
// Grid: one block of 256 threads per matrix row a.  Boundary rows gather the
// SSSP distances of the component's vertices; interior rows are +inf except the
// arcs that stay inside the component (local[] maps a vertex to its local index,
// -1 outside); every row gets its zero on the diagonal last.
#include "common.cuh"

extern "C" __global__ void __launch_bounds__(256)
build_component_matrix(const index_t* indptr, const index_t* indices, const double* weights,
                       const index_t* vertices, const int* local, const REAL* brows, long long ldb,
                       int n_boundary, int gather, int c, REAL* M)
{
    const int a = blockIdx.x;
    REAL* row = M + (long long)a * c;
    if (a < n_boundary) {
        if (gather) {
            const REAL* src = brows + (long long)a * ldb;
            for (int j = threadIdx.x; j < c; j += blockDim.x) row[j] = src[vertices[j]];
        }
    } else {
        for (int j = threadIdx.x; j < c; j += blockDim.x) row[j] = INF_R;
        __syncthreads();
        const index_t u = vertices[a];
        const index_t end = indptr[u + 1];
        for (index_t e = indptr[u] + threadIdx.x; e < end; e += blockDim.x) {
            const int h = local[indices[e]];
            if (h >= 0) row[h] = (REAL)weights[e];
        }
    }
    __syncthreads();
    if (threadIdx.x == 0) row[a] = (REAL)0;
}

// The matrices of several components over their own arcs only (the local closures of the
// boundary-graph method, before Floyd-Warshall), all in one launch.  Grid: one block of 256
// threads per matrix row, over every row of the batch; row r is vertex row_vertex[r], whose row
// starts at out + row_start[r] and holds row_c[r] entries, its diagonal at row_a[r].  An arc stays
// inside when both ends carry the same label; local_of[v] is v's index in its component.
extern "C" __global__ void __launch_bounds__(256)
build_local_batch(const index_t* indptr, const index_t* indices, const double* weights, const int* label,
                  const int* local_of, const index_t* row_vertex, const long long* row_start, const int* row_c,
                  const int* row_a, REAL* out)
{
    const long long r = blockIdx.x;
    REAL* row = out + row_start[r];
    const int c = row_c[r];
    for (int j = threadIdx.x; j < c; j += blockDim.x) row[j] = INF_R;
    __syncthreads();
    const index_t u = row_vertex[r];
    const int own = label[u];
    const index_t end = indptr[u + 1];
    for (index_t e = indptr[u] + threadIdx.x; e < end; e += blockDim.x) {
        const index_t h = indices[e];
        if (label[h] == own) row[local_of[h]] = (REAL)weights[e];
    }
    __syncthreads();
    if (threadIdx.x == 0) row[row_a[r]] = (REAL)0;
}

// The closures of the components of a graph whose arcs all weigh 1, in place of build_local_batch and
// Floyd-Warshall: breadth-first searches from every vertex of a component over its own arcs, 32 searches
// a block, one bit each (a vertex's frontier, visited and next sets of the 32 searches are one word
// each, in shared memory: 12 bytes a vertex).  The block first fills its 32 rows (+inf, the zero
// diagonal); then, level by level, the frontier pushes its bits along the arcs (shared atomicOr) and
// each vertex's new bits are the searches that reach it at this distance, which goes to the source's
// row in the vertex's column.  Arcs come as a CSR of local ids per row of the batch (lptr over all the
// batch's rows, lidx local heads), made beforehand (fastapsp/stages/_cuda.py's _local_csr).  Block b searches from sources
// block_source[b] .. + 31 of component block_comp[b] (c = sizes[z] rows from row first_row[z] of the
// batch, matrix at D[z], c x c); dynamic shared memory: 3 words a vertex of the largest component.
extern "C" __global__ void __launch_bounds__(256)
closure_bfs_batch(const long long* lptr, const int* lidx, const long long* first_row, const int* sizes,
                  REAL* const* D, const int* block_comp, const int* block_source)
{
    extern __shared__ unsigned int sets[];
    const int z = block_comp[blockIdx.x], s0 = block_source[blockIdx.x];
    const int c = sizes[z];
    const int ns = min(32, c - s0);
    unsigned int* frontier = sets;
    unsigned int* visited = sets + c;
    unsigned int* next = sets + 2 * c;
    const long long* ptr = lptr + first_row[z];
    REAL* rows = D[z] + (long long)s0 * c;
    for (long long e = threadIdx.x; e < (long long)ns * c; e += blockDim.x) rows[e] = INF_R;
    for (int v = threadIdx.x; v < c; v += blockDim.x) {
        const unsigned int bit = (v >= s0 && v - s0 < 32) ? 1u << (v - s0) : 0u;
        frontier[v] = bit;
        visited[v] = bit;
        next[v] = 0u;
    }
    __syncthreads();  // the fill before any distance
    if (threadIdx.x < ns) rows[(long long)threadIdx.x * c + s0 + threadIdx.x] = (REAL)0;
    for (int level = 1;; ++level) {
        for (int u = threadIdx.x; u < c; u += blockDim.x) {
            const unsigned int f = frontier[u];
            if (f == 0u) continue;
            const long long end = __ldg(ptr + u + 1);
            for (long long e = __ldg(ptr + u); e < end; ++e) atomicOr(&next[__ldg(lidx + e)], f);
        }
        __syncthreads();
        int found = 0;
        for (int v = threadIdx.x; v < c; v += blockDim.x) {
            const unsigned int fresh = next[v] & ~visited[v];
            next[v] = 0u;
            frontier[v] = fresh;
            if (fresh == 0u) continue;
            visited[v] |= fresh;
            found = 1;
            for (unsigned int m = fresh; m != 0u; m &= m - 1u) rows[(long long)(__ffs(m) - 1) * c + v] = (REAL)level;
        }
        if (!__syncthreads_or(found)) break;
    }
}
