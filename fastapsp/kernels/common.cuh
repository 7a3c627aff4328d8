// Shared definitions of the fastapsp kernels.
//
// The loader (fastapsp/kernels/source.py) inlines this file and compiles every
// kernel file with -DREAL=float or -DREAL=double (the distance type) and, for
// graphs whose ids or offsets need 64 bits, -DFASTAPSP_INDEX64.  NVRTC compiles
// these sources: no host headers.

#ifndef REAL
#define REAL float
#endif

#ifdef FASTAPSP_INDEX64
typedef long long index_t;
#else
typedef int index_t;
#endif

typedef unsigned int word_t;

#define FULL_MASK 0xffffffffu

__device__ __forceinline__ float real_inf(float) { return __int_as_float(0x7f800000); }
__device__ __forceinline__ double real_inf(double) { return __longlong_as_double(0x7ff0000000000000LL); }
#define INF_R real_inf((REAL)0)

__device__ __forceinline__ float real_min(float a, float b) { return fminf(a, b); }
__device__ __forceinline__ double real_min(double a, double b) { return fmin(a, b); }

// min(a, b, c) of non-negative values (+inf included), the inner step of the float min-plus
// products with two relaxations a step.  On sm_90 one three-way integer minimum (DPX) of the bit
// patterns, whose order read as signed integers is the numeric order for such numbers: one
// instruction where two fminf take two (docs/kernels.md has the measurements).
__device__ __forceinline__ float real_min3(float a, float b, float c)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    return __int_as_float(__vimin3_s32(__float_as_int(a), __float_as_int(b), __float_as_int(c)));
#else
    return fminf(fminf(a, b), c);
#endif
}
__device__ __forceinline__ double real_min3(double a, double b, double c) { return fmin(fmin(a, b), c); }

// Atomic minimum of a non-negative value (+inf included): for such IEEE numbers
// the order of the bit patterns read as unsigned integers is the numeric order.
// Returns the value held before.
__device__ __forceinline__ float atomic_min_nonneg(float* p, float v)
{
    return __uint_as_float(atomicMin(reinterpret_cast<unsigned int*>(p), __float_as_uint(v)));
}
__device__ __forceinline__ double atomic_min_nonneg(double* p, double v)
{
    return __longlong_as_double((long long)atomicMin(reinterpret_cast<unsigned long long*>(p),
                                                     (unsigned long long)__double_as_longlong(v)));
}
