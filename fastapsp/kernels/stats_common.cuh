// The per-entry pieces of the --stats reductions, shared by reduce_stats.cu (a row block read
// once) and min_plus_stats.cu (the statistics of a min-plus product as it is made): the sum type,
// the reciprocals of the harmonic sums and the histogram count (see reduce_stats.cu's header for
// the histogram levels, the reciprocals' accuracy and the macros STATS_INTEGER, ST_PAIRS,
// ST_EXACT_RCP).

#ifdef ST_PAIRS
#undef ST_NO_COLS
#define ST_WEIGHT 2u  // the entry d(u, v) stands for d(v, u) too
#else
#define ST_WEIGHT 1u
#endif
#define ST_FINE_LIMIT 4.611686018427387904e18  // 2^62
#define ST_NOT_COUNTED (-2ll)                  // an unreachable entry: no bin
#define ST_SMALL_LIMIT 8388608.0f              // 2^23: whole-number floats below it take 32-bit sums

#ifdef STATS_INTEGER
typedef long long sum_t;
#else
typedef double sum_t;
#endif

__device__ __forceinline__ float st_max(float a, float b) { return fmaxf(a, b); }
__device__ __forceinline__ double st_max(double a, double b) { return fmax(a, b); }

__device__ __forceinline__ void atomic_add_sum(long long* p, long long v)
{
    atomicAdd(reinterpret_cast<unsigned long long*>(p), (unsigned long long)v);
}
__device__ __forceinline__ void atomic_add_sum(double* p, double v) { atomicAdd(p, v); }

// 1/v for v > 0 (see "Harmonic sums" above).
__device__ __forceinline__ double st_recip(float v)
{
#ifdef ST_EXACT_RCP
    return __drcp_rn((double)v);
#else
    float r;
    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(v));
    const double d = (double)v, x = (double)r;
    return fma(x, fma(-d, x, 1.0), x);
#endif
}
__device__ __forceinline__ double st_recip(double v) { return __drcp_rn(v); }

// 1/z of a whole number 0 < z < 2^23 held as float v: st_recip's arithmetic (the same result) with
// the conversions to double done by integer and double adds instead of the conversion unit, which
// the entries' other work keeps busy: z exactly from its bits under 2^52, and the approximation's
// exponent rebiased from float to double (a positive normal float: 2^-23 <= r <= 1).
__device__ __forceinline__ double st_recip_small(float v, unsigned int z)
{
#ifdef ST_EXACT_RCP
    return __drcp_rn((double)v);
#else
    float r;
    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(v));
    const double d = __hiloint2double(0x43300000, (int)z) - 4503599627370496.0;  // 2^52 + z - 2^52
    const double x = __longlong_as_double((long long)(((unsigned long long)__float_as_uint(r) << 29)
                                                      + (896ull << 52)));
    return fma(x, fma(-d, x, 1.0), x);
#endif
}

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


// Count a whole number z (the 32-bit path, ST_WEIGHT times): in the block's shared bins where its bin at the
// block's level (shift = min(level, 31)) is one of them, else as st_count.
__device__ __forceinline__ void st_count_small(unsigned int z, int shift, int level, int log2bins, int shared_bins,
                                               int levels, unsigned int* sh_hist, int* sh_want,
                                               unsigned long long* hist, unsigned long long* overflow)
{
    const unsigned int i = z >> shift;
    if (i < (unsigned int)shared_bins)
        atomicAdd(sh_hist + i, ST_WEIGHT);
    else
        st_count((long long)z, level, log2bins, shared_bins, levels, sh_hist, sh_want, hist, overflow, ST_WEIGHT);
}

// The block's shared bins added to level `level` of hist, and cleared with `clear` (THREADS: the block's).
template <int THREADS>
__device__ __forceinline__ void st_flush_bins(unsigned int* sh_hist, int shared_bins, unsigned long long* hist,
                                              long long bins, int level, bool clear)
{
    for (int i = threadIdx.x; i < shared_bins; i += THREADS) {
        const unsigned int v = sh_hist[i];
        if (v) {
            atomicAdd(hist + (long long)level * bins + i, (unsigned long long)v);
            if (clear) sh_hist[i] = 0u;
        }
    }
}

// A value needed a wider bin than the block's level (want > level, the same for every thread): the shared
// bins go to their level and the block goes up to want.  Every thread of the block calls it.
template <int THREADS>
__device__ __forceinline__ void st_raise_level(unsigned int* sh_hist, int shared_bins, unsigned long long* hist,
                                               long long bins, int* level_hint, int want, int& level, int& shift)
{
    st_flush_bins<THREADS>(sh_hist, shared_bins, hist, bins, level, true);
    if (threadIdx.x == 0) atomicMax(level_hint, want);
    level = want;
    shift = min(level, 31);
    __syncthreads();
}
