// One 64 x 64 tile of a min-plus product (or 64 x 128: two column groups), the inner loop of
// min_plus.cu, grouped_min_plus.cu and phases 2 and 3 of floyd_warshall.cu.
//
// A block of 256 threads owns the tile; thread (ty, tx) = (t / 16, t % 16) keeps
// the 4 x 4 outputs of rows 4*ty .. 4*ty+3 and columns 4*tx .. 4*tx+3 of each column group in
// registers.  The inner dimension is swept in chunks of MP_KC, two rows of K a step: a 64 x MP_KC
// slice of A (stored k-major, so a thread's 4 rows are one vector load) and an
// MP_KC x 64 slice of B per group pass through shared memory, and the next chunk is
// fetched into registers while the current one is used.  Entries outside the
// operands read as +inf, which leaves every minimum unchanged, so any shape works.
// A last chunk shorter than MP_KC is swept only as far as K, rounded up to 4 (sweep_k).

#define MP_TILE 64
#define MP_KC 16
#define MP_THREADS 256
// Resident blocks an SM asked of the register allocator by the kernels built on minplus_tile
// (at most 85 registers a thread in float32): left free, it takes up to 127 in Floyd-Warshall
// and the grouped product, which leaves room for two blocks.
#define MP_MIN_BLOCKS (sizeof(REAL) == 4 ? 3 : 2)
// Column groups of 64 a tile of min_plus.cu and grouped_min_plus.cu: 2 (min_plus_cuda picks it in float32)
// halves the fetches and barriers a relaxation; such a tile takes 128 registers, so its kernels ask for
// MP_CW_BLOCKS resident blocks an SM.
#ifndef MP_CW
#define MP_CW 1
#endif
#ifndef MP_CW_BLOCKS
#define MP_CW_BLOCKS 2
#endif
// Resident blocks an SM asked by the kernels of MP_CW column groups (min_plus.cu, grouped_min_plus.cu):
// MP_MIN_BLOCKS for one group (left free, the allocator took 63 registers for min_plus.cu's build into a
// device result's rows and spilled: 6-13% slower than at three blocks an SM; docs/kernels.md), MP_CW_BLOCKS
// for two.
#define MP_GROUP_BLOCKS (MP_CW == 1 ? MP_MIN_BLOCKS : MP_CW_BLOCKS)
// CW: column groups of 64 a tile (min_plus.cu's MP_CW; 1 everywhere else).
template <int CW>
struct MinPlusSmemT {
    REAL a[MP_KC][MP_TILE + 4];  // padded: the transposed stores spread over the banks
    REAL b[MP_KC][MP_TILE * CW];
};
typedef MinPlusSmemT<1> MinPlusSmem;

// The chunks of K: stage(k0) puts rows k0 .. k0 + MP_KC - 1 of the operands in shared memory (and
// asks for the next chunk's), then step(kk) relaxes row kk of the chunk (rows kk .. kk + Stride - 1).
// Whole chunks are swept fully unrolled in the loop; a partial last chunk after it, only as far as K
// rounded up to 4 (its rows past K read as +inf).  Kept out of the loop, the tail leaves the loop's
// code as it is: a test of the chunk's length inside it cost the float32 product 8-15% (docs/kernels.md).
// Cut false: the last chunk swept whole too (the least code: the packed kernels' float32 fallback).
template <int Stride = 1, bool Cut = true, class Stage, class Step>
__device__ __forceinline__ void sweep_k(int K, Stage&& stage, Step&& step)
{
    int k0 = 0;
    for (; Cut ? k0 + MP_KC <= K : k0 < K; k0 += MP_KC) {
        stage(k0);
#pragma unroll
        for (int kk = 0; kk < MP_KC; kk += Stride) step(kk);
    }
    if (Cut && k0 < K) {
        stage(k0);
#pragma unroll 1
        for (int k4 = 0; k4 < K - k0; k4 += 4) {
#pragma unroll
            for (int kk = 0; kk < 4; kk += Stride) step(k4 + kk);
        }
    }
}

__device__ __forceinline__ bool aligned16(const REAL* p, long long ld)
{
    return ((reinterpret_cast<unsigned long long>(p) | (unsigned long long)ld * sizeof(REAL)) & 15ull) == 0;
}

// MP_STREAM_STORE: the row block is written with the evict-first hint (st.global.cs), as it is
// not read again by the kernel (min_plus_smallk.cu defines it; benchmarks/minplus_u16_bench.py
// compares both ways).
__device__ __forceinline__ void store4(float* p, const float (&v)[4])
{
#ifdef MP_STREAM_STORE
    __stcs(reinterpret_cast<float4*>(p), make_float4(v[0], v[1], v[2], v[3]));
#else
    *reinterpret_cast<float4*>(p) = make_float4(v[0], v[1], v[2], v[3]);
#endif
}
__device__ __forceinline__ void store4(double* p, const double (&v)[4])
{
    reinterpret_cast<double2*>(p)[0] = make_double2(v[0], v[1]);
    reinterpret_cast<double2*>(p)[1] = make_double2(v[2], v[3]);
}

// Output rows.  Row r of a tile at C lies at C + r * ldc.  Built with MP_ROW_MAP, the rows may
// instead be scattered over a larger array (a component's rows of a result kept on the device,
// fastapsp/sink.py): row r at C + crow[r], element offsets, each a multiple of ldc (so
// aligned16(C, ldc) holds for every row); a null crow keeps the rows in order.  Without it crow is
// ignored: the map cost min_plus_u16 28 registers (80 to 108) and the products of the Delaunay
// and grid graphs 13-18% (docs/kernels.md), so only the launches that need it pay for it.
#ifdef MP_ROW_MAP
__device__ __forceinline__ long long row_offset(const long long* crow, int r, long long ldc)
{
    return crow ? crow[r] : (long long)r * ldc;
}
template <typename T>
__device__ __forceinline__ T* tile_origin(T* C, long long ldc, const long long* crow, long long r0, long long c0)
{
    return crow ? C + c0 : C + r0 * ldc + c0;  // the tile of rows r0.. and columns c0..
}
__device__ __forceinline__ const long long* tile_rows(const long long* crow, long long r0)
{
    return crow ? crow + r0 : nullptr;  // the tile's row map
}
#else
__device__ __forceinline__ long long row_offset(const long long*, int r, long long ldc) { return (long long)r * ldc; }
template <typename T>
__device__ __forceinline__ T* tile_origin(T* C, long long ldc, const long long*, long long r0, long long c0)
{
    return C + r0 * ldc + c0;
}
__device__ __forceinline__ const long long* tile_rows(const long long*, long long) { return nullptr; }
#endif

// acc <- C[0:rows, 0:cols] of the tile at C (or +inf when !from_c); crow: see row_offset.
__device__ __forceinline__ void tile_load(REAL (&acc)[4][4], const REAL* C, long long ldc, int rows, int cols,
                                          bool from_c, const long long* crow = nullptr)
{
    const int tx = threadIdx.x & 15, ty = threadIdx.x >> 4;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        const int r = 4 * ty + i;
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            const int c = 4 * tx + j;
            acc[i][j] = (from_c && r < rows && c < cols) ? C[row_offset(crow, r, ldc) + c] : INF_R;
        }
    }
}

#if defined(MP_ROW_MAP) && !defined(MP_PLAIN_FLOAT_STORES)
// One row of a float tile whose row does not start on a 16-byte boundary (a device result
// of n columns, n not a multiple of 4): its first S columns come before the row's first
// 16-byte boundary.  Each thread t of the 16 sharing the row stores the aligned vector of
// columns 4t + S .. 4t + S + 3 (its own last 4 - S values and the first S of its right
// neighbour, `next`); thread 0 also stores the head, thread 15 only its own last values.
// S is a template argument: a shift known only at run time indexes the registers
// dynamically, which puts them in local memory.
template <int S>
__device__ __forceinline__ void store_row_shifted(const float (&v)[4], const float (&next)[4], float* row, int tx,
                                                  int cols)
{
    const float x[8] = {v[0], v[1], v[2], v[3], next[0], next[1], next[2], next[3]};
    if (tx == 0) {
#pragma unroll
        for (int j = 0; j < S; ++j)
            if (j < cols) row[j] = x[j];
    }
    const int c = 4 * tx + S;
    float w[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) w[j] = x[j + S];
    if (tx < 15 && c + 4 <= cols) {
        store4(row + c, w);
    } else {  // thread 15 (the tail), or the tile's last columns
#pragma unroll
        for (int j = 0; j < 4; ++j)
            if (c + j < cols && (tx < 15 || j + S < 4)) row[c + j] = w[j];
    }
}
// Every lane of the warp calls it (the shuffles); `live`: this lane's row exists.
__device__ __forceinline__ void store_row_unaligned(const float (&v)[4], float* row, int tx, int cols, bool live)
{
    float next[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) next[j] = __shfl_down_sync(0xffffffffu, v[j], 1, 16);
    if (!live) return;
    switch ((4 - (int)((reinterpret_cast<unsigned long long>(row) >> 2) & 3)) & 3) {
    case 1: store_row_shifted<1>(v, next, row, tx, cols); break;
    case 2: store_row_shifted<2>(v, next, row, tx, cols); break;
    case 3: store_row_shifted<3>(v, next, row, tx, cols); break;
    default:  // this row is aligned after all
        if (4 * tx + 4 <= cols) {
            store4(row + 4 * tx, v);
        } else {
#pragma unroll
            for (int j = 0; j < 4; ++j)
                if (4 * tx + j < cols) row[4 * tx + j] = v[j];
        }
    }
}
// Double rows (8-byte aligned at least): element-wise.
__device__ __forceinline__ void store_row_unaligned(const double (&v)[4], double* row, int tx, int cols, bool live)
{
    if (!live) return;
#pragma unroll
    for (int j = 0; j < 4; ++j)
        if (4 * tx + j < cols) row[4 * tx + j] = v[j];
}
#endif

// C[0:rows, 0:cols] of the tile at C <- acc; crow: see row_offset.
__device__ __forceinline__ void tile_store(const REAL (&acc)[4][4], REAL* C, long long ldc, int rows, int cols,
                                           const long long* crow = nullptr)
{
    const int tx = threadIdx.x & 15, ty = threadIdx.x >> 4;
#if defined(MP_ROW_MAP) && !defined(MP_PLAIN_FLOAT_STORES)
    if (crow && !aligned16(C, ldc)) {  // scattered rows that start off 16-byte boundaries
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            const int r = 4 * ty + i;
            store_row_unaligned(acc[i], C + row_offset(crow, min(r, rows - 1), ldc), tx, cols, r < rows);
        }
        return;
    }
#endif
    const bool vec = aligned16(C, ldc) && 4 * tx + 4 <= cols;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        const int r = 4 * ty + i;
        if (r >= rows) break;
        REAL* row = C + row_offset(crow, r, ldc) + 4 * tx;
        if (vec) {
            store4(row, acc[i]);
        } else {
#pragma unroll
            for (int j = 0; j < 4; ++j)
                if (4 * tx + j < cols) row[j] = acc[i][j];
        }
    }
}

// acc[i][j] <- min(acc[i][j], a[i] + b[j]): the relaxations of one row of K.
__device__ __forceinline__ void relax_one_row(REAL (&acc)[4][4], const REAL (&a)[4], const REAL (&b)[4])
{
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] = real_min(acc[i][j], a[i] + b[j]);
}
// acc[i][j] <- min(acc[i][j], a[0][i] + b[0][j], a[1][i] + b[1][j]): the relaxations of two rows of K,
// one minimum for both sums (real_min3).
template <int W>
__device__ __forceinline__ void relax_two_rows(REAL (&acc)[4][W], const REAL (&a)[2][4], const REAL (&b)[2][W])
{
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < W; ++j) acc[i][j] = real_min3(acc[i][j], a[0][i] + b[0][j], a[1][i] + b[1][j]);
}

// tile_load and tile_store of a tile of CW column groups: acc[i][4 g + j] is column 64 g + 4 tx + j
// (minplus_tile's layout); cols counts the whole tile's columns.
template <int CW>
__device__ __forceinline__ void tile_load_groups(REAL (&acc)[4][4 * CW], const REAL* C, long long ldc, int rows,
                                                 int cols, bool from_c, const long long* crow = nullptr)
{
#pragma unroll
    for (int g = 0; g < CW; ++g) {
        REAL part[4][4];
        tile_load(part, C + MP_TILE * g, ldc, rows, cols - MP_TILE * g, from_c, crow);
#pragma unroll
        for (int i = 0; i < 4; ++i)
#pragma unroll
            for (int j = 0; j < 4; ++j) acc[i][4 * g + j] = part[i][j];
    }
}
template <int CW>
__device__ __forceinline__ void tile_store_groups(const REAL (&acc)[4][4 * CW], REAL* C, long long ldc, int rows,
                                                  int cols, const long long* crow = nullptr)
{
#pragma unroll
    for (int g = 0; g < CW; ++g) {
        REAL part[4][4];
#pragma unroll
        for (int i = 0; i < 4; ++i)
#pragma unroll
            for (int j = 0; j < 4; ++j) part[i][j] = acc[i][4 * g + j];
        tile_store(part, C + MP_TILE * g, ldc, rows, cols - MP_TILE * g, crow);
    }
}

// tile_store_groups into a block stored by columns: element (r, x) of the tile at CT + x * ldt + r
// (gather_transposed.cu reads such a block).  A thread holds 4 rows of a column, so storing straight
// from its registers a warp would write 32 bytes into each of 16 columns (four times the transactions
// of a row store); the tile goes instead through shared memory (stage, free once the product is done),
// W columns at a time, and each warp writes whole 256-byte columns of 64 rows (float32).  The stage is
// written with plain vector stores, not store4 (whose evict-first form is for global memory).
// Every thread of the block must call this (it synchronises the block).
template <int CW>
__device__ __forceinline__ void tile_store_groups_by_columns(const REAL (&acc)[4][4 * CW], REAL* CT, long long ldt,
                                                             int rows, int cols, void* stage)
{
    constexpr int V = 16 / sizeof(REAL);    // values of a 16-byte vector
    constexpr int W = 8 * V;                // columns staged at a time
    constexpr int P = MP_TILE + V;          // the staged columns' pitch (16-byte aligned, padded)
    constexpr int VPC = MP_TILE / V;        // vectors of a column of the tile
    constexpr int CPR = MP_THREADS / VPC;   // columns written by the block in one round
    static_assert(W * P * sizeof(REAL) <= sizeof(MinPlusSmemT<CW>), "the stage holds W columns");
    static_assert((MP_TILE * CW) % W == 0 && W % CPR == 0 && W % 4 == 0, "whole passes and rounds");
    REAL* st = reinterpret_cast<REAL*>(stage);
    const int tx = threadIdx.x & 15, ty = threadIdx.x >> 4;
    const int wc = threadIdx.x / VPC, wv = threadIdx.x % VPC;  // the column (of a round) and vector written
    const bool vec = rows == MP_TILE && aligned16(CT, ldt);
    __syncthreads();  // the product's last chunk is no longer read
#pragma unroll
    for (int pass = 0; pass < MP_TILE * CW / W; ++pass) {
        const int g = pass * W / MP_TILE, first = (pass * W) % MP_TILE;  // the pass's columns: group g, first ..
        if (4 * tx >= first && 4 * tx < first + W) {
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                REAL* at = st + (4 * tx + j - first) * P + 4 * ty;  // 16-byte aligned, as P is
                if constexpr (sizeof(REAL) == 4) {
                    *reinterpret_cast<float4*>(at) =
                        make_float4(acc[0][4 * g + j], acc[1][4 * g + j], acc[2][4 * g + j], acc[3][4 * g + j]);
                } else {
                    reinterpret_cast<double2*>(at)[0] = make_double2(acc[0][4 * g + j], acc[1][4 * g + j]);
                    reinterpret_cast<double2*>(at)[1] = make_double2(acc[2][4 * g + j], acc[3][4 * g + j]);
                }
            }
        }
        __syncthreads();
#pragma unroll
        for (int round = 0; round < W / CPR; ++round) {
            const int c = round * CPR + wc;      // column of the pass
            const int x = pass * W + c;          // column of the tile
            if (x < cols) {
                const REAL* from = st + c * P + V * wv;
                REAL* to = CT + (long long)x * ldt + V * wv;
                if (vec) {
                    *reinterpret_cast<int4*>(to) = *reinterpret_cast<const int4*>(from);
                } else {
#pragma unroll
                    for (int i = 0; i < V; ++i)
                        if (V * wv + i < rows) to[i] = from[i];
                }
            }
        }
        __syncthreads();  // the stage is written again by the next pass
    }
}

// acc <- min(acc, A (x) B) over the tile: A points at row 0 of the tile's rows
// (rows x K, leading dimension lda), B at column 0 of its columns (K x cols, ldb).
// Every thread of the block must call this (it synchronises the block).
//
// A tile of CW column groups is 64 x 64 CW: thread (ty, tx) keeps rows 4 ty .. 4 ty + 3 and, in
// each group g, columns 64 g + 4 tx .. 64 g + 4 tx + 3 (acc[i][4 g + j]), so a step reads one
// vector of A for CW of B, and each store of a row covers 256 contiguous bytes.
// A chunk of a whole tile (all its rows and columns, MP_KC rows of K left) is fetched without a
// test a value, from addresses formed once; float B slices on 16-byte boundaries are read as
// vectors (row t / 16 of the chunk, columns 64 g + 4 (t % 16) ..).  The chunks of the
// last row and column tiles and the last chunk of K test every value.  Spare: every chunk tested
// and one relaxation a step, fewer registers -- for the packed kernels, whose float32 path is a
// fallback that must not make them spill.
template <bool Spare = false, int CW = 1>
__device__ __forceinline__ void minplus_tile(REAL (&acc)[4][4 * CW], const REAL* A, long long lda, const REAL* B,
                                             long long ldb, int rows, int cols, int K, MinPlusSmemT<CW>& sm)
{
    static_assert(!Spare || CW == 1, "the spare form is one column group");
    const int t = threadIdx.x;
    const int tx = t & 15, ty = t >> 4;
    const int a_col = t & 15, a_row = t >> 4;  // this thread fetches A rows a_row + 16p, column a_col
    // and B rows b_row + 4p, columns 64 g + b_col -- or, as vectors, row v_row, columns 64 g + v_col ..
    const int b_col = t & 63, b_row = t >> 6;
    const int v_row = t >> 4, v_col = 4 * (t & 15);
    const bool whole = !Spare && rows == MP_TILE && cols == MP_TILE * CW;
    const bool vec_b = !Spare && sizeof(REAL) == 4 && aligned16(B, ldb);
    const REAL* a_at = A + (long long)a_row * lda + a_col;
    const long long a_step = 16 * lda;
    REAL ra[4], rb[CW][4];

    auto fetch = [&](int k0) {
        if (whole && k0 + MP_KC <= K) {
#pragma unroll
            for (int p = 0; p < 4; ++p) ra[p] = a_at[p * a_step + k0];
            if constexpr (sizeof(REAL) == 4) {
                if (vec_b) {
                    const REAL* row = B + (long long)(k0 + v_row) * ldb + v_col;
#pragma unroll
                    for (int g = 0; g < CW; ++g) {
                        const float4 v = *reinterpret_cast<const float4*>(row + MP_TILE * g);
                        rb[g][0] = v.x, rb[g][1] = v.y, rb[g][2] = v.z, rb[g][3] = v.w;
                    }
                    return;
                }
            }
#pragma unroll
            for (int g = 0; g < CW; ++g)
#pragma unroll
                for (int p = 0; p < 4; ++p) rb[g][p] = B[(long long)(k0 + b_row + 4 * p) * ldb + MP_TILE * g + b_col];
            return;
        }
#pragma unroll
        for (int p = 0; p < 4; ++p) {
            const int r = a_row + 16 * p, k = k0 + a_col;
            ra[p] = (r < rows && k < K) ? A[(long long)r * lda + k] : INF_R;
        }
        if (vec_b) {
            const int k = k0 + v_row;
#pragma unroll
            for (int g = 0; g < CW; ++g)
#pragma unroll
                for (int j = 0; j < 4; ++j) {
                    const int c = MP_TILE * g + v_col + j;
                    rb[g][j] = (k < K && c < cols) ? B[(long long)k * ldb + c] : INF_R;
                }
            return;
        }
#pragma unroll
        for (int g = 0; g < CW; ++g)
#pragma unroll
            for (int p = 0; p < 4; ++p) {
                const int k = k0 + b_row + 4 * p, c = MP_TILE * g + b_col;
                rb[g][p] = (k < K && c < cols) ? B[(long long)k * ldb + c] : INF_R;
            }
    };

    auto stage = [&](int k0) {
        __syncthreads();  // the previous chunk is no longer read
#pragma unroll
        for (int p = 0; p < 4; ++p) sm.a[a_col][a_row + 16 * p] = ra[p];
#pragma unroll
        for (int g = 0; g < CW; ++g) {
            if (vec_b) {
#pragma unroll
                for (int j = 0; j < 4; ++j) sm.b[v_row][MP_TILE * g + v_col + j] = rb[g][j];
            } else {
#pragma unroll
                for (int p = 0; p < 4; ++p) sm.b[b_row + 4 * p][MP_TILE * g + b_col] = rb[g][p];
            }
        }
        __syncthreads();
        if (k0 + MP_KC < K) fetch(k0 + MP_KC);
    };
    fetch(0);
    if constexpr (Spare) {
        sweep_k<1, false>(K, stage, [&](int kk) {
            REAL a[4], b[4];
#pragma unroll
            for (int i = 0; i < 4; ++i) a[i] = sm.a[kk][4 * ty + i];
#pragma unroll
            for (int j = 0; j < 4; ++j) b[j] = sm.b[kk][4 * tx + j];
            relax_one_row(acc, a, b);
        });
    } else {
        sweep_k<2>(K, stage, [&](int kk) {  // rows kk and kk + 1 of the chunk
            REAL a[2][4], b[2][4 * CW];
#pragma unroll
            for (int h = 0; h < 2; ++h) {
#pragma unroll
                for (int i = 0; i < 4; ++i) a[h][i] = sm.a[kk + h][4 * ty + i];
#pragma unroll
                for (int j = 0; j < 4 * CW; ++j) b[h][j] = sm.b[kk + h][MP_TILE * (j >> 2) + 4 * tx + (j & 3)];
            }
            relax_two_rows(acc, a, b);
        });
    }
}
