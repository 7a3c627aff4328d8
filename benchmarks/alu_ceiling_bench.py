"""The arithmetic ceilings of a min-plus product on this GPU: relaxations a second of each way to
relax, measured with no memory traffic at all.

A relaxation is ``c <- min(a + b, c)``.  Each kernel keeps 16 independent accumulators a thread
(so the instruction latency is hidden), relaxes each of them ``ITERS`` times in registers and
writes one word a thread at the end, so the figure is the rate of the instructions alone:

- ``float32``: an add and a minimum (``fminf(a + b, c)``), one relaxation;
- ``u16x2_dpx``: ``__viaddmin_u16x2``, one instruction for two 16-bit relaxations (the packed
  kernels' default);
- ``u16x2_split``: a 32-bit add and ``__vminu2`` (the packed kernels' ``-DU16_SPLIT``), two;
- ``s32_dpx``: ``__viaddmin_s32``, one 32-bit relaxation in one instruction;
- ``u32_plain``: a 32-bit add and ``min``, one;
- two steps of K on one accumulator, four 16-bit relaxations: ``u16x2_min3_fma_adds`` (two sums as
  integer multiply-adds by a 1 the compiler cannot see, so on the FMA pipe, and ``__vimin3_u16x2``),
  ``u16x2_min3_plain_adds`` (the same with plain adds, spread over both pipes by the compiler),
  ``u16x2_dpx_two_steps`` (two ``__viaddmin_u16x2``) and ``u16x2_half_min3_half_dpx`` (``--split`` of
  the 16 accumulators as the first, the others as the third).

Plain adds and a three-way minimum beat the DPX add-min here (35.4 against 32.7 T/s on one H100),
but not inside the packed products, which then spill registers or lose a resident block
(``results/min-plus-exact-k``).

The min-plus kernels' measured rates (``minplus_u16_bench.py``, whole runs) are read against these.
One JSON under benchmarks/results/TAG/.

    python benchmarks/alu_ceiling_bench.py --tag kernels
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))
from _common import RESULTS, event_seconds, write_result  # noqa: E402

ITERS = 4096
SOURCE = r"""
template <int WAY> __device__ __forceinline__ unsigned int relax(unsigned int a, unsigned int b, unsigned int c)
{
    if (WAY == 0) return __float_as_uint(fminf(__uint_as_float(a) + __uint_as_float(b), __uint_as_float(c)));
    if (WAY == 1) return __viaddmin_u16x2(a, b, c);
    if (WAY == 2) return __vminu2(a + b, c);
    if (WAY == 3) return (unsigned int)__viaddmin_s32((int)a, (int)b, (int)c);
    return min(a + b, c);
}

// a + b on the FMA pipe: an integer multiply-add by a 1 the compiler cannot see.
__device__ __forceinline__ unsigned int add_fma(unsigned int a, unsigned int b, unsigned int one)
{
    unsigned int s;
    asm("mad.lo.u32 %0, %1, %2, %3;" : "=r"(s) : "r"(a), "r"(one), "r"(b));
    return s;
}

// Two steps of K on one accumulator (four 16-bit relaxations): WAY 5 two sums on the FMA pipe and
// one three-way packed minimum, 6 the same with plain adds, 7 two DPX add-mins.
template <int WAY> __device__ __forceinline__ unsigned int relax2(unsigned int a, unsigned int b0, unsigned int b1,
                                                                   unsigned int c, unsigned int one)
{
    if (WAY == 5) return __vimin3_u16x2(c, add_fma(a, b0, one), add_fma(a, b1, one));
    if (WAY == 6) return __vimin3_u16x2(c, a + b0, a + b1);
    return __viaddmin_u16x2(a, b1, __viaddmin_u16x2(a, b0, c));
}

// WAY 8: half the accumulators as 5, half as 7 (the two pipes shared).
template <int WAY> __device__ void run2(const unsigned int* in, unsigned int* out, int iters, unsigned int one)
{
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned int acc[16];
#pragma unroll
    for (int j = 0; j < 16; ++j) acc[j] = in[(t + j) & 1023];
    const unsigned int b0 = in[(t + 16) & 1023], b1 = in[(t + 17) & 1023];
    for (int i = 0; i < iters; ++i) {
#pragma unroll
        for (int j = 0; j < 16; ++j) {
            const unsigned int a = acc[(j + 1) & 15];
            if (WAY == 8) acc[j] = j < WAY8_SPLIT ? relax2<5>(a, b0, b1, acc[j], one) : relax2<7>(a, b0, b1, acc[j], one);
            else acc[j] = relax2<WAY>(a, b0, b1, acc[j], one);
        }
    }
    unsigned int s = 0;
#pragma unroll
    for (int j = 0; j < 16; ++j) s ^= acc[j];
    out[t] = s;
}

template <int WAY> __device__ void run(const unsigned int* in, unsigned int* out, int iters)
{
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned int acc[16];
#pragma unroll
    for (int j = 0; j < 16; ++j) acc[j] = in[(t + j) & 1023];
    const unsigned int b0 = in[(t + 16) & 1023], b1 = in[(t + 17) & 1023];
    for (int i = 0; i < iters; ++i) {
#pragma unroll
        for (int j = 0; j < 16; ++j) acc[j] = relax<WAY>(acc[j], (j & 1) ? b1 : b0, acc[(j + 1) & 15]);
    }
    unsigned int s = 0;
#pragma unroll
    for (int j = 0; j < 16; ++j) s ^= acc[j];
    out[t] = s;
}

extern "C" __global__ void way0(const unsigned int* in, unsigned int* out, int iters) { run<0>(in, out, iters); }
extern "C" __global__ void way1(const unsigned int* in, unsigned int* out, int iters) { run<1>(in, out, iters); }
extern "C" __global__ void way2(const unsigned int* in, unsigned int* out, int iters) { run<2>(in, out, iters); }
extern "C" __global__ void way3(const unsigned int* in, unsigned int* out, int iters) { run<3>(in, out, iters); }
extern "C" __global__ void way4(const unsigned int* in, unsigned int* out, int iters) { run<4>(in, out, iters); }
extern "C" __global__ void way5(const unsigned int* in, unsigned int* out, int iters) { run2<5>(in, out, iters, 1u + (iters >> 30)); }
extern "C" __global__ void way6(const unsigned int* in, unsigned int* out, int iters) { run2<6>(in, out, iters, 1u); }
extern "C" __global__ void way7(const unsigned int* in, unsigned int* out, int iters) { run2<7>(in, out, iters, 1u); }
extern "C" __global__ void way8(const unsigned int* in, unsigned int* out, int iters) { run2<8>(in, out, iters, 1u + (iters >> 30)); }
"""
WAYS = [("float32", "way0", 1), ("u16x2_dpx", "way1", 2), ("u16x2_split", "way2", 2), ("s32_dpx", "way3", 1),
        ("u32_plain", "way4", 1), ("u16x2_min3_fma_adds", "way5", 4), ("u16x2_min3_plain_adds", "way6", 4),
        ("u16x2_dpx_two_steps", "way7", 4), ("u16x2_half_min3_half_dpx", "way8", 4)]


def main(argv=None):
    import cupy as cp
    import numpy as np

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tag", default="gpu")
    parser.add_argument("--split", type=int, default=8, help="accumulators of 16 relaxed as way 5 in way 8")
    parser.add_argument("--ways", default=None, help="comma-separated names (default: all)")
    args = parser.parse_args(argv)
    module = cp.RawModule(code=SOURCE, options=("-std=c++17", f"-DWAY8_SPLIT={args.split}"))
    dev = cp.cuda.Device()
    sms = dev.attributes["MultiProcessorCount"]
    clock_khz = dev.attributes["ClockRate"]
    threads, blocks = 256, sms * 8
    values = cp.asarray(np.random.default_rng(0).integers(0, 1 << 13, 1024, dtype=np.uint32) * 0x10001)
    out = cp.empty(threads * blocks, dtype=cp.uint32)
    rows = []
    for name, kernel_name, per_op in [w for w in WAYS if args.ways is None or w[0] in args.ways.split(",")]:
        kernel = module.get_function(kernel_name)
        sec = event_seconds(cp, lambda: kernel((blocks,), (threads,), (values, out, np.int32(ITERS))), 5)
        ops = threads * blocks * ITERS * 16
        rate = ops * per_op / sec
        per_clock_sm = rate / (sms * clock_khz * 1e3)
        rows.append({"way": name, "relaxations_per_op": per_op, "seconds": sec, "relaxations_per_s": rate,
                     "relaxations_per_clock_per_sm": per_clock_sm})
        print(f"{name:12s} {rate / 1e12:6.2f} T relaxations/s  {per_clock_sm:6.1f} a clock an SM "
              f"({sms} SMs at {clock_khz / 1e6:.2f} GHz)", flush=True)
    write_result({"benchmark": "alu_ceiling_bench", "multiprocessors": sms, "clock_khz": clock_khz,
                  "results": rows}, folder=RESULTS / args.tag, name="alu-ceilings.json")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
