"""How fast a min-plus kernel's row block can be written, by the way its threads store it.

The packed small-K product (road networks, K <= 48) does little arithmetic a column and is bound by
writing its |C| x n float32 block. This measures the writing alone, with the products' grid and tile
(blocks of 256 threads, 64 rows x 4 tiles of 128 columns; thread (ty, tx) holds rows 4 ty .. 4 ty + 3
and 8 columns of a tile) and no arithmetic:

- ``interleaved``: thread tx stores columns 8 tx .. 8 tx + 7 as two 16-byte stores, so each store
  instruction of 16 lanes covers every other 16 bytes of 512 (half of each 32-byte sector);
- ``split``: thread tx stores columns 4 tx .. 4 tx + 3 and 64 + 4 tx .. 64 + 4 tx + 3, so each store
  instruction covers 256 contiguous bytes (whole sectors);

each with plain stores and with the evict-first hint (``st.global.cs``), and ``memset`` (CuPy's
``fill(0)``, a device memset, as ``minplus_u16_bench.py``'s ``fill_only``) as the device's write
ceiling. One JSON under benchmarks/results/TAG/.

    python benchmarks/store_pattern_bench.py --tag kernels --rows 1700 --cols 1070376
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))
from _common import RESULTS, event_seconds, write_result  # noqa: E402

SOURCE = r"""
template <int SPLIT, int CS>
__device__ __forceinline__ void put(float* row, int tx, float4 lo, float4 hi)
{
    float4* p0 = reinterpret_cast<float4*>(row + (SPLIT ? 4 * tx : 8 * tx));
    float4* p1 = reinterpret_cast<float4*>(row + (SPLIT ? 64 + 4 * tx : 8 * tx + 4));
    if (CS) { __stcs(p0, lo); __stcs(p1, hi); }
    else { *p0 = lo; *p1 = hi; }
}

template <int SPLIT, int CS>
__device__ void tiles(float* C, long long ldc, int M, int N)
{
    const int t = threadIdx.x, tx = t & 15, ty = t >> 4;
    const long long r0 = (long long)blockIdx.x * 64;
    const long long first = (long long)blockIdx.y * 512;
    for (int tile = 0; tile < 4; ++tile) {
        const long long c0 = first + tile * 128;
        if (c0 >= N) break;
        for (int i = 0; i < 4; ++i) {
            const long long r = r0 + 4 * ty + i;
            if (r >= M) break;
            const float v = (float)(r + c0 + tx);
            if (c0 + 128 <= N)
                put<SPLIT, CS>(C + r * ldc + c0, tx, make_float4(v, v, v, v), make_float4(v, v, v, v));
        }
    }
}

extern "C" __global__ void __launch_bounds__(256, 4) interleaved_plain(float* C, long long ldc, int M, int N)
{ tiles<0, 0>(C, ldc, M, N); }
extern "C" __global__ void __launch_bounds__(256, 4) interleaved_cs(float* C, long long ldc, int M, int N)
{ tiles<0, 1>(C, ldc, M, N); }
extern "C" __global__ void __launch_bounds__(256, 4) split_plain(float* C, long long ldc, int M, int N)
{ tiles<1, 0>(C, ldc, M, N); }
extern "C" __global__ void __launch_bounds__(256, 4) split_cs(float* C, long long ldc, int M, int N)
{ tiles<1, 1>(C, ldc, M, N); }
"""
WAYS = ["interleaved_plain", "interleaved_cs", "split_plain", "split_cs"]


def main(argv=None):
    import cupy as cp
    import numpy as np

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tag", default="gpu")
    parser.add_argument("--rows", type=int, default=1700)
    parser.add_argument("--cols", type=int, default=1070376)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    M, N = args.rows, args.cols - args.cols % 128
    module = cp.RawModule(code=SOURCE, options=("-std=c++17",))
    C = cp.empty((M, N), dtype=cp.float32)
    grid = ((M + 63) // 64, (N + 511) // 512)
    nbytes = M * N * 4
    rows = []

    def record(name, sec):
        rows.append({"way": name, "seconds": sec, "bytes": nbytes, "bytes_per_s": nbytes / sec})
        print(f"{name:18s} {sec * 1e3:8.3f} ms  {nbytes / sec / 1e12:5.2f} TB/s", flush=True)

    record("memset", event_seconds(cp, lambda: C.fill(0), args.repeats))
    for name in WAYS:
        kernel = module.get_function(name)
        sec = event_seconds(cp, lambda: kernel(grid, (256,), (C, np.int64(N), np.int32(M), np.int32(N))),
                            args.repeats)
        if name.startswith("split"):  # the pattern writes every column: check one row
            c = np.arange(256)
            want = M - 1 + c // 128 * 128 + c % 64 // 4
            assert np.array_equal(cp.asnumpy(C[M - 1, :256]), want.astype(np.float32)), name
        record(name, sec)
    write_result({"benchmark": "store_pattern_bench", "rows": M, "cols": N, "results": rows},
                 folder=RESULTS / args.tag, name=f"store-patterns-{M}x{N}.json")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
