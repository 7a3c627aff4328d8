// The histogram count and the sums of the --stats kernels (reduce_stats.cu,
// min_plus_stats.cu): see reduce_stats.cu for the histogram's levels.
//
// Macros: STATS_INTEGER when the distances are whole numbers and the base bin
// width is 1 (sums in int64, fine index = distance).

#define ST_FINE_LIMIT 4.611686018427387904e18  // 2^62
#define ST_NOT_COUNTED (-2ll)                  // an unreachable entry: no bin

#ifdef STATS_INTEGER
typedef long long sum_t;
#else
typedef double sum_t;
#endif

__device__ __forceinline__ float st_max(float a, float b) { return fmaxf(a, b); }
__device__ __forceinline__ double st_max(double a, double b) { return fmax(a, b); }

// 1/v for v > 0 (harmonic centrality): the single-precision reciprocal refined by
// two Newton steps (relative error 2^-24, then 2^-48, then below double rounding),
// in place of __drcp_rn, which still takes the values a float cannot hold.
__device__ __forceinline__ double st_inverse(double v)
{
    if (!(v > 1e-30 && v < 1e30)) return __drcp_rn(v);
    double r = (double)__frcp_rn((float)v);
    r = fma(r, fma(-v, r, 1.0), r);
    return fma(r, fma(-v, r, 1.0), r);
}

__device__ __forceinline__ void atomic_add_sum(long long* p, long long v)
{
    atomicAdd(reinterpret_cast<unsigned long long*>(p), (unsigned long long)v);
}
__device__ __forceinline__ void atomic_add_sum(double* p, double v) { atomicAdd(p, v); }

// Count fine index f (< 0: too large) at the block's level, or at the smallest level holding it.
__device__ __forceinline__ void st_count(long long f, int level, int log2bins, int shared_bins, int levels,
                                         unsigned int* sh_hist, int* sh_want, unsigned long long* hist,
                                         unsigned long long* overflow, unsigned int count = 1u)
{
    if (f < 0) {
        atomicAdd(overflow, (unsigned long long)count);
        return;
    }
    const long long bins = 1ll << log2bins;
    const long long i = f >> level;
    if (i < bins) {
        if (i < shared_bins)
            atomicAdd(sh_hist + i, count);
        else
            atomicAdd(hist + (long long)level * bins + i, (unsigned long long)count);
        return;
    }
    // f >= bins << level: the level whose bins hold f is 1 + (highest bit of f) - log2bins > level.
    const int L = (63 - __clzll(f)) - log2bins + 1;
    if (L >= levels) {
        atomicAdd(overflow, (unsigned long long)count);
        return;
    }
    atomicAdd(hist + (long long)L * bins + (f >> L), (unsigned long long)count);
    atomicMax(sh_want, L);
}
