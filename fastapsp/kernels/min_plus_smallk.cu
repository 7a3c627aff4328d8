// Min-plus product C = min(C, A (x) B) (or C = A (x) B) for a short inner
// dimension, K <= SK_MAXK: the interior rows of road networks, whose components
// have ~20 boundary vertices.  min_plus.cu spends most of such a product on
// per-tile overhead (loading A, two barriers per chunk, loads that nothing hides),
// so here a block keeps its 64 x K slice of A in shared memory and sweeps SK_CT
// column tiles of 64 with it (minplus_smallk.cuh).  Grid: (ceil(M / 64),
// ceil(N / (64 SK_CT))), 256 threads; row tiles vary fastest, as in min_plus.cu.
// The row block is written with the evict-first hint: at K <= 32 the product is bound by its
// writes, and the hint makes it faster here (it made min_plus.cu slower at K = 100 and 150;
// docs/kernels.md has the measurements).  -DMP_NO_STREAM_STORE turns it off.
#ifndef MP_NO_STREAM_STORE
#define MP_STREAM_STORE
#endif
#include "common.cuh"
#include "minplus_tile.cuh"
#include "minplus_smallk.cuh"

#define SK_CT 8

#ifndef SK_MIN_BLOCKS  // resident blocks per SM asked of the register allocator
#define SK_MIN_BLOCKS (sizeof(REAL) == 4 ? 4 : 3)
#endif

extern "C" __global__ void __launch_bounds__(MP_THREADS, SK_MIN_BLOCKS)
min_plus_smallk(const REAL* A, long long lda, const REAL* B, long long ldb, REAL* C, long long ldc,
                int M, int N, int K, int accumulate, const long long* crow)
{
    __shared__ __align__(16) SmallKSmem sm;
    static_assert(sizeof(SmallKSmem) <= 48 * 1024, "static shared memory");
    smallk_columns(A, lda, B, ldb, C, ldc, M, N, K, accumulate, (long long)blockIdx.x * MP_TILE,
                   (long long)blockIdx.y * SK_CT * MP_TILE, SK_CT, sm, crow);
}
