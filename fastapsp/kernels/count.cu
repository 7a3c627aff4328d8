// Occurrences of every value: out[v] += 1 for each values[i] = v in [0, length); other values are not counted.
// Grid-stride over the values; integer atomics commute, so the counts do not depend on the schedule.

extern "C" __global__ void __launch_bounds__(256)
count_values(const long long* values, long long n, long long length, unsigned long long* out)
{
    const long long step = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += step) {
        const long long v = values[i];
        if (v >= 0 && v < length)
            atomicAdd(out + v, 1ULL);
    }
}
