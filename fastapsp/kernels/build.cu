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
