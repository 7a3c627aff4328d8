// What the --stats kernels share (reduce_stats.cu, min_plus_stats.cu): the sum type, the
// histogram count of one distance, and the steps applied to each distance (st_value).
// The histogram levels are described in reduce_stats.cu.  Macros: REAL; STATS_INTEGER
// (whole-number distances, base width 1: sums in int64, f = z).
#define ST_FINE_LIMIT 4.611686018427387904e18  // 2^62
#define ST_NOT_COUNTED (-2ll)                  // an unreachable entry: no bin

#ifdef STATS_INTEGER
typedef long long sum_t;
#else
typedef double sum_t;
#endif

// The fine histogram index of a finite distance v (-1: 2^62 or more, not countable) and its term s of the sums.
__device__ __forceinline__ long long st_value(REAL v, double inv_base, sum_t& s)
{
#ifdef STATS_INTEGER
    const long long f = v < (REAL)ST_FINE_LIMIT ? (long long)v : -1ll;
    s = f;
#else
    const double zd = (double)v;
    const double q = zd * inv_base;
    const long long f = q < ST_FINE_LIMIT ? (long long)q : -1ll;  // truncation is floor for q >= 0
    s = zd;
#endif
    return f;
}

__device__ __forceinline__ float st_max(float a, float b) { return fmaxf(a, b); }
__device__ __forceinline__ double st_max(double a, double b) { return fmax(a, b); }

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
