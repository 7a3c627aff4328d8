// Shared pieces of the predecessor-carrying kernels (fw_pred.cu, min_plus_pred.cu).
//
// An entry is a path summary (d, h, p): its length d, its number of arcs h and
// the vertex p before its head (-9999: none).  Entries are ordered by (d, h):
// a shorter path first, of two equally short ones that of fewer arcs.  Every arc
// has h = 1 > 0, so following p from any head strictly lowers (d, h) until the
// source: zero-weight arcs cannot close a cycle of predecessors.  Paths to
// unreachable heads (d = inf) never win.
//
// Tiles are 32 x 32, blocks of 32 x 8 threads: thread (tx, ty) owns column tx of
// rows ty + 8 i, i < 4.
#define PT_TILE 32
#define PT_ROWS 4
#define PT_NONE (-9999)

struct PathTile {
    REAL d[PT_TILE][PT_TILE + 1];
    int h[PT_TILE][PT_TILE + 1];
    int p[PT_TILE][PT_TILE + 1];
};

// (cd, ch) strictly before (bd, bh), finite.
__device__ __forceinline__ bool path_less(REAL cd, int ch, REAL bd, int bh)
{
    return cd < bd || (cd == bd && ch < bh && cd < INF_R);
}

// t <- the rows x cols tile at (D, H, P) + r0 * ld + c0; (inf, 0, none) outside.
__device__ __forceinline__ void path_tile_load(PathTile& t, const REAL* D, const int* H, const int* P, long long ld,
                                               long long r0, long long c0, int rows, int cols)
{
    const int tx = threadIdx.x;
    for (int r = threadIdx.y; r < PT_TILE; r += blockDim.y) {
        const bool in = r < rows && tx < cols;
        const long long at = (r0 + r) * ld + c0 + tx;
        t.d[r][tx] = in ? D[at] : INF_R;
        t.h[r][tx] = in ? H[at] : 0;
        t.p[r][tx] = in ? P[at] : PT_NONE;
    }
}
