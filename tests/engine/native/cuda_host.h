// The CUDA built-ins the grain kernels use (kernels/dem_math.cuh, grid.cu, optix_dem.cu), defined for a
// host build in which one thread runs at a time, in launch order: thread indices are globals the
// harness sets, atomics are plain read-modify-writes, the rounding intrinsics plain double operations
// (the harness compiles with -ffp-contract=off, as the launcher compiles with --fmad=false).
#pragma once
#include <vector_types.h>
#include <vector_functions.h>
#include <cmath>
#include <cstring>

#define __launch_bounds__(...)

struct HostThreadIndex {
    unsigned int x, y, z;
};
static HostThreadIndex blockIdx, blockDim, threadIdx;

inline double __dadd_rn(double a, double b) { return a + b; }
inline double __dmul_rn(double a, double b) { return a * b; }
inline unsigned int __float_as_uint(float f) { unsigned int u; std::memcpy(&u, &f, 4); return u; }
inline float __uint_as_float(unsigned int u) { float f; std::memcpy(&f, &u, 4); return f; }
inline int __float_as_int(float f) { int u; std::memcpy(&u, &f, 4); return u; }
inline float __int_as_float(int u) { float f; std::memcpy(&f, &u, 4); return f; }
inline int atomicAdd(int* a, int v) { const int old = *a; *a += v; return old; }
inline int atomicMin(int* a, int v) { const int old = *a; if (v < old) *a = v; return old; }
inline int atomicMax(int* a, int v) { const int old = *a; if (v > old) *a = v; return old; }
using std::isfinite;
inline unsigned int atomicAdd(unsigned int* a, unsigned int v) { const unsigned int old = *a; *a += v; return old; }
inline float atomicAdd(float* a, float v) { const float old = *a; *a += v; return old; }
inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }

// Runs kernel(args...) as a launch of `count` threads in blocks of `block`.
template <typename Kernel, typename... Args>
void host_launch(int count, int block, Kernel kernel, Args... args) {
    blockDim.x = (unsigned int)block;
    for (int t = 0; t < count; ++t) {
        blockIdx.x = (unsigned int)(t / block);
        threadIdx.x = (unsigned int)(t % block);
        kernel(args...);
    }
}
