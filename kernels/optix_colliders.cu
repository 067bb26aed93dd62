// Grains against triangle-mesh colliders through OptiX (engine/backends/optix_colliders.py): the
// triangles of a collider are custom primitives whose boxes are widened by the largest reach (and by
// the collider's motion over the step), in a GAS refit as the collider moves.
//
// mode 0 (contact forces): a point ray from every centre finds the boxes holding it; the intersection
//   program offers each triangle to the grain's candidate list (collider_offer_triangle), which the
//   ray-generation program then resolves into the contact force (collider_resolve, which also evolves
//   the grain's tangential springs against this collider under friction_model 'spring') and adds to
//   force_sum. The list keeps the closest candidates by (d², index), so the traversal order does not
//   matter: the result is the CUDA kernel's and the CPU reference's.
// mode 1 (swept test): a ray along each centre's path over the step; the intersection program offers
//   each triangle to the first-crossing search (collider_offer_crossing, in the triangle's own frame),
//   and the ray-generation program puts back the grains that crossed (collider_grain_sweep_with).
//
// The intersection program never reports an intersection (any-hit and closest-hit never run); the
// query lives in the ray-generation program's local memory and travels as a pointer in two payloads.
#include <optix.h>
#include "collider_math.cuh"

extern "C" {
__constant__ OptixColliderParams params;
}

__device__ __forceinline__ void optix_collider_trace(float3 origin, float3 direction, float tmax, void* query) {
    const unsigned long long address = reinterpret_cast<unsigned long long>(query);
    unsigned int hi = (unsigned int)(address >> 32), lo = (unsigned int)(address & 0xffffffffull);
    optixTrace(params.handle, origin, direction, 0.0f, tmax, 0.0f, OptixVisibilityMask(255),
               OPTIX_RAY_FLAG_DISABLE_ANYHIT | OPTIX_RAY_FLAG_DISABLE_CLOSESTHIT, 0, 1, 0, hi, lo);
}

__device__ __forceinline__ void* optix_collider_query() {
    return reinterpret_cast<void*>(((unsigned long long)optixGetPayload_0() << 32) |
                                   (unsigned long long)optixGetPayload_1());
}

// Offers the triangles whose widened boxes the path o → p meets (the box holds every point within the
// collider's largest vertex displacement of the triangle, which bounds how far the triangle-frame path
// strays from o → p).
struct OptixColliderCrossings {
    __device__ void operator()(ColliderCrossing& c) const {
        // o and p are float32 positions: the origin is exact, the direction rounds (the boxes' slack).
        const float3 origin = make_float3((float)c.ox, (float)c.oy, (float)c.oz);
        const float3 path = make_float3((float)(c.px - c.ox), (float)(c.py - c.oy), (float)(c.pz - c.oz));
        if (path.x == 0.0f && path.y == 0.0f && path.z == 0.0f) {
            optix_collider_trace(origin, make_float3(1.0f, 0.0f, 0.0f), params.ray_tmax, &c);
        } else {
            optix_collider_trace(origin, path, 1.0f + 1.0e-6f, &c);
        }
    }
};

extern "C" __global__ void __raygen__collider() {
    const int i = (int)optixGetLaunchIndex().x;
    const DemParams& P = params.dem;
    if (i >= P.particle_count) return;
    const ColliderParams& C = params.collider;
    if (!(P.info[i] & DEM_INFO_ACTIVE)) {
        if (params.mode == 0) collider_forget(P, C, i);  // an inactive grain keeps no springs
        return;
    }
    if (params.mode == 0) {
        ColliderCandidates candidates;
        ColliderProximity query = collider_proximity(P, C, i, candidates);
        const float4 p = P.pos[i];
        optix_collider_trace(make_float3(p.x, p.y, p.z), make_float3(1.0f, 0.0f, 0.0f), params.ray_tmax, &query);
        double3 torque;
        const double3 f = collider_resolve(P, C, i, candidates, &torque);
        double* sum = params.force_sum + 3 * i;
        sum[0] += f.x;
        sum[1] += f.y;
        sum[2] += f.z;
        if (P.rotation) {
            double* torque_sum = params.torque_sum + 3 * i;
            torque_sum[0] += torque.x;
            torque_sum[1] += torque.y;
            torque_sum[2] += torque.z;
        }
    } else {
        const int corrected = collider_grain_sweep_with(P, C, i, OptixColliderCrossings{});
        if (corrected > 0) atomicAdd(C.corrections, (unsigned int)corrected);
    }
}

extern "C" __global__ void __intersection__collider() {
    const int t = (int)optixGetPrimitiveIndex();
    if (params.mode == 0) {
        collider_offer_triangle(params.collider, t, *static_cast<ColliderProximity*>(optix_collider_query()));
    } else {
        collider_offer_crossing(params.collider, t, *static_cast<ColliderCrossing*>(optix_collider_query()));
    }
}

extern "C" __global__ void __miss__collider() {}
