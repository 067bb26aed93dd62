// Kernels shared by the CUDA grid and the OptiX backends: integration with walls and fields, the
// deterministic bucket sort (used for the hashed grid and the Morton reorder), slot permutations and
// the AABBs of the OptiX proxies. Launchers: engine/backends/gpu_runtime.py.
#include "dem_integrate.cuh"

// Wall contacts, fields, semi-implicit Euler, open-side exits (dem_integrate_slot in
// kernels/dem_integrate.cuh); step is the global index of the step being taken.
extern "C" __global__ void dem_integrate(const DemParams* __restrict__ params, float ax, float ay, float az,
                                         int step) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < params->particle_count) dem_integrate_slot(*params, ax, ay, az, step, i);
}

// The first half of a velocity Verlet step, before the forces (dem_verlet_drift_slot in
// kernels/dem_integrate.cuh); step is the global index of the step being taken.
extern "C" __global__ void dem_verlet_drift(const DemParams* __restrict__ params, int step) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < params->particle_count) dem_verlet_drift_slot(*params, step, i);
}

// dem_integrate under the rotating law or velocity Verlet (dem_integrate_slot_rotating): a kernel of its
// own, so the paper's stays as it was.
extern "C" __global__ void dem_integrate_rotating(const DemParams* __restrict__ params, float ax, float ay, float az,
                                                 int step) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < params->particle_count) dem_integrate_slot_rotating(*params, ax, ay, az, step, i);
}

// Rigid clumps moved as one body each (dem_clump_step_one in kernels/dem_integrate.cuh), one thread per
// clump; phase as there.
extern "C" __global__ void dem_clump_step(const DemParams* __restrict__ params, int phase) {
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c < params->clump_count) dem_clump_step_one(*params, phase, c);
}

// Velocity Verlet's accelerations of the current state, before the first step (walls and fields
// included; nothing moves); launched with DemParams::history_dt 0.
extern "C" __global__ void dem_verlet_prime(const DemParams* __restrict__ params, float ax, float ay, float az,
                                           int step) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < params->particle_count) dem_integrate_slot_rotating(*params, ax, ay, az, step, i, true);
}

// After the contact forces of a step: the springs they kept become the ones the next step reads.
extern "C" __global__ void dem_flip_spring_parity(int* __restrict__ parity) {
    if (blockIdx.x == 0 && threadIdx.x == 0) *parity ^= 1;
}

// Morton key of every slot over the domain box, bits_per_axis ≤ 10 bits per axis; inactive slots get
// the last key (1 << 3·bits_per_axis) so they sort to the end.
extern "C" __global__ void dem_morton_keys(const DemParams* __restrict__ params, int bits_per_axis,
                                           unsigned int* __restrict__ key) {
    const DemParams& P = *params;
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= P.particle_count) return;
    if (!(P.info[i] & DEM_INFO_ACTIVE)) {
        key[i] = 1u << (3 * bits_per_axis);
        return;
    }
    const float4 p = P.pos[i];
    const float pc[3] = {p.x, p.y, p.z};
    const float top = (float)((1 << bits_per_axis) - 1);
    unsigned int q[3];
    for (int axis = 0; axis < 3; ++axis) {
        const double u = ((double)pc[axis] - P.lo[axis]) / (P.hi[axis] - P.lo[axis]);
        q[axis] = (unsigned int)fminf(fmaxf((float)u * (top + 1.0f), 0.0f), top);
    }
    key[i] = (dem_spread_bits(q[0]) << 2) | (dem_spread_bits(q[1]) << 1) | dem_spread_bits(q[2]);
}

// Deterministic stable bucket sort of n items by key < bucket_count: count (each item keeps the
// rank its atomic increment returned), prefix sum (below), scatter to start + rank, and an insertion
// sort inside each bucket that restores item order (the atomics hand out ranks in any order).
extern "C" __global__ void bucket_count(const unsigned int* __restrict__ key, int n, unsigned int* __restrict__ count,
                                        unsigned int* __restrict__ rank) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) rank[i] = atomicAdd(count + key[i], 1u);
}

// Inclusive prefix sum of count[0..n) into out[1..n] (out[0] = 0 is left to the caller), in three
// launches: scan_blocks (each block scans SCAN_ITEMS items and writes its total to block_sum),
// scan_block_sums (one block turns the totals into exclusive offsets), add_block_offsets.
#define SCAN_THREADS 256
#define SCAN_PER_THREAD 4
#define SCAN_ITEMS (SCAN_THREADS * SCAN_PER_THREAD)

__device__ __forceinline__ unsigned int block_exclusive_scan(unsigned int value, unsigned int* total) {
    __shared__ unsigned int warp_sums[SCAN_THREADS / 32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    unsigned int inclusive = value;
    for (int offset = 1; offset < 32; offset <<= 1) {
        const unsigned int up = __shfl_up_sync(0xffffffffu, inclusive, offset);
        if (lane >= offset) inclusive += up;
    }
    if (lane == 31) warp_sums[warp] = inclusive;
    __syncthreads();
    if (warp == 0) {
        unsigned int w = lane < SCAN_THREADS / 32 ? warp_sums[lane] : 0u;
        for (int offset = 1; offset < 32; offset <<= 1) {
            const unsigned int up = __shfl_up_sync(0xffffffffu, w, offset);
            if (lane >= offset) w += up;
        }
        if (lane < SCAN_THREADS / 32) warp_sums[lane] = w;  // inclusive over warps
    }
    __syncthreads();
    const unsigned int before = warp > 0 ? warp_sums[warp - 1] : 0u;
    *total = warp_sums[SCAN_THREADS / 32 - 1];
    return before + inclusive - value;
}

extern "C" __global__ void __launch_bounds__(SCAN_THREADS) scan_blocks(const unsigned int* __restrict__ count, int n,
                                                                       unsigned int* __restrict__ out,
                                                                       unsigned int* __restrict__ block_sum) {
    const long long base = (long long)blockIdx.x * SCAN_ITEMS + (long long)threadIdx.x * SCAN_PER_THREAD;
    unsigned int items[SCAN_PER_THREAD];
    unsigned int local = 0;
#pragma unroll
    for (int k = 0; k < SCAN_PER_THREAD; ++k) {
        items[k] = base + k < n ? count[base + k] : 0u;
        local += items[k];
    }
    unsigned int total;
    unsigned int running = block_exclusive_scan(local, &total);
#pragma unroll
    for (int k = 0; k < SCAN_PER_THREAD; ++k) {
        running += items[k];
        if (base + k < n) out[base + k + 1] = running;
    }
    if (threadIdx.x == 0) block_sum[blockIdx.x] = total;
}

extern "C" __global__ void __launch_bounds__(SCAN_THREADS) scan_block_sums(unsigned int* __restrict__ block_sum, int count) {
    const int per_thread = (count + SCAN_THREADS - 1) / SCAN_THREADS;
    const int first = threadIdx.x * per_thread;
    unsigned int local = 0;
    for (int k = first; k < min(first + per_thread, count); ++k) local += block_sum[k];
    unsigned int total;
    unsigned int running = block_exclusive_scan(local, &total);
    for (int k = first; k < min(first + per_thread, count); ++k) {
        const unsigned int value = block_sum[k];
        block_sum[k] = running;
        running += value;
    }
}

extern "C" __global__ void add_block_offsets(unsigned int* __restrict__ out, int n,
                                             const unsigned int* __restrict__ block_offset) {
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i + 1] += block_offset[i / SCAN_ITEMS];
}

extern "C" __global__ void bucket_scatter(const unsigned int* __restrict__ key, int n,
                                          const unsigned int* __restrict__ start, const unsigned int* __restrict__ rank,
                                          int* __restrict__ sorted) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) sorted[start[key[i]] + rank[i]] = i;
}

extern "C" __global__ void bucket_order(const unsigned int* __restrict__ start, int bucket_count,
                                        int* __restrict__ sorted) {
    const int b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b >= bucket_count) return;
    const unsigned int lo = start[b], hi = start[b + 1];
    for (unsigned int a = lo + 1; a < hi; ++a) {
        const int item = sorted[a];
        unsigned int c = a;
        while (c > lo && sorted[c - 1] > item) {
            sorted[c] = sorted[c - 1];
            --c;
        }
        sorted[c] = item;
    }
}

// dst[k] = src[order[k]] for the per-slot arrays (Morton reorder at rebuilds).
extern "C" __global__ void gather_float4(const float4* __restrict__ src, const int* __restrict__ order, int n,
                                         float4* __restrict__ dst) {
    const int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k < n) dst[k] = src[order[k]];
}

extern "C" __global__ void gather_u32(const unsigned int* __restrict__ src, const int* __restrict__ order, int n,
                                      unsigned int* __restrict__ dst) {
    const int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k < n) dst[k] = src[order[k]];
}

// AABBs of the OptiX proxies (dem_proxy_aabb in kernels/dem_math.cuh).
extern "C" __global__ void dem_proxy_aabbs(const DemParams* __restrict__ params, float* __restrict__ aabb) {
    const DemParams& P = *params;
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < P.particle_count) dem_proxy_aabb(P, i, aabb + 6 * i);
}

// Writes one 64-bit value into device memory without a host copy (the OptiX traversable handle in
// the launch parameters after a rebuild).
extern "C" __global__ void set_u64(unsigned long long* __restrict__ target, unsigned long long value) {
    if (blockIdx.x == 0 && threadIdx.x == 0) *target = value;
}
