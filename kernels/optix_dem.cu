// Mochi's ray-traced contact detection (engine/backends/optix_rt.py). Every particle has a proxy: an
// AABB of edge 4·r (twice its radius, kernels/dem_common.cu dem_proxy_aabbs). A point ray (tmin 0, a
// tiny tmax) from every centre walks the BVH; the intersection program sees each proxy holding the
// centre, tests |c_i − c_j| ≤ r_i + r_j and resolves the pair, never reporting an intersection, so
// any-hit and closest-hit never run.
//
// Duplicate rule: a touching pair satisfies |c_i − c_j| ≤ r_i + r_j ≤ 2·max(r_i, r_j), so the smaller
// sphere's centre always lies in the larger sphere's proxy; the pair is resolved from the smaller
// sphere's ray, and when both radii are equal (both rays find it) from the smaller slot's.
#include <optix.h>
#include "dem_math.cuh"

extern "C" {
__constant__ OptixDemParams params;
}

__device__ __forceinline__ bool optix_dem_owns(int i, float ri, int j, float rj) {
    return ri < rj || (ri == rj && i < j);
}

extern "C" __global__ void __raygen__dem() {
    const int i = (int)optixGetLaunchIndex().x;
    const DemParams& P = params.dem;
    if (i >= P.particle_count || !(P.info[i] & DEM_INFO_ACTIVE)) return;
    const float4 p = P.pos[i];
    unsigned int fx = __float_as_uint(0.0f), fy = __float_as_uint(0.0f), fz = __float_as_uint(0.0f);
    optixTrace(params.handle, make_float3(p.x, p.y, p.z), make_float3(1.0f, 0.0f, 0.0f), 0.0f, params.ray_tmax,
               0.0f, OptixVisibilityMask(255), OPTIX_RAY_FLAG_DISABLE_ANYHIT | OPTIX_RAY_FLAG_DISABLE_CLOSESTHIT,
               0, 1, 0, fx, fy, fz);
    if (params.mode == 0) {
        float* out = &P.force[i].x;
        atomicAdd(out, __uint_as_float(fx));
        atomicAdd(out + 1, __uint_as_float(fy));
        atomicAdd(out + 2, __uint_as_float(fz));
    }
}

extern "C" __global__ void __intersection__dem() {
    const int i = (int)optixGetLaunchIndex().x;
    const int j = (int)optixGetPrimitiveIndex();
    if (i == j) return;
    const DemParams& P = params.dem;
    const float4 pi = P.pos[i];
    const float4 pj = P.pos[j];
    if (!optix_dem_owns(i, pi.w, j, pj.w)) return;
    const unsigned int info_j = P.info[j];
    if (!(info_j & DEM_INFO_ACTIVE)) return;
    DemPair pair;
    if (!dem_touch(pi, pj, pair)) return;
    if (params.mode == 1) {
        const unsigned int k = atomicAdd(params.pair_count, 1u);
        if (k < params.pair_capacity) params.pairs[k] = make_int2(i, j);
        return;
    }
    const float3 f = dem_pair_force(P, pair, P.vel[i], P.vel[j], P.info[i], info_j, i < j ? 1.0f : -1.0f);
    // The ray owner's share stays in the payload registers; the partner's goes out by atomics.
    optixSetPayload_0(__float_as_uint(__uint_as_float(optixGetPayload_0()) + f.x));
    optixSetPayload_1(__float_as_uint(__uint_as_float(optixGetPayload_1()) + f.y));
    optixSetPayload_2(__float_as_uint(__uint_as_float(optixGetPayload_2()) + f.z));
    float* out = &P.force[j].x;
    atomicAdd(out, -f.x);
    atomicAdd(out + 1, -f.y);
    atomicAdd(out + 2, -f.z);
}

extern "C" __global__ void __miss__dem() {}
