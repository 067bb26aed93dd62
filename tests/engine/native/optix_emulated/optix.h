// OptiX's device API as kernels/optix_dem.cu uses it, emulated on the host for
// tests/engine/test_grain_device_math.py (found before the real optix.h through -I).
//
// optixTrace offers the ray every primitive whose AABB the ray segment meets — the AABBs the harness
// computed with dem_proxy_aabb, in float32 as the GAS holds them — from the last to the first, each
// `optix_emulated_offers` times: OptiX walks the BVH in an order of its own and may run an
// intersection program more than once for the same primitive, so the results must not depend on
// either.
#pragma once
#include "../cuda_host.h"
#include "../slab_test.h"

typedef unsigned long long OptixTraversableHandle;
#define OPTIX_RAY_FLAG_DISABLE_ANYHIT 1u
#define OPTIX_RAY_FLAG_DISABLE_CLOSESTHIT 2u
inline unsigned int OptixVisibilityMask(unsigned int mask) { return mask; }

static uint3 optix_emulated_launch_index;
static unsigned int optix_emulated_primitive;
static unsigned int optix_emulated_payload[8];
static const float* optix_emulated_aabb;    // (primitives, 6) lo xyz, hi xyz
static int optix_emulated_primitives;
static int optix_emulated_offers = 1;
static void (*optix_emulated_intersection)();
static long long optix_emulated_calls;      // intersection programs run (all rays)

inline uint3 optixGetLaunchIndex() { return optix_emulated_launch_index; }
inline unsigned int optixGetPrimitiveIndex() { return optix_emulated_primitive; }
inline unsigned int optixGetPayload_0() { return optix_emulated_payload[0]; }
inline unsigned int optixGetPayload_1() { return optix_emulated_payload[1]; }
inline unsigned int optixGetPayload_2() { return optix_emulated_payload[2]; }
inline void optixSetPayload_0(unsigned int v) { optix_emulated_payload[0] = v; }
inline void optixSetPayload_1(unsigned int v) { optix_emulated_payload[1] = v; }
inline void optixSetPayload_2(unsigned int v) { optix_emulated_payload[2] = v; }

template <typename... Payload>
inline void optixTrace(OptixTraversableHandle, float3 origin, float3 direction, float tmin, float tmax, float,
                       unsigned int, unsigned int, unsigned int, unsigned int, unsigned int, Payload&... payload) {
    static_assert(sizeof...(Payload) <= 8, "at most 8 payload values here");
    int k = 0;
    ((optix_emulated_payload[k++] = payload), ...);
    for (int t = optix_emulated_primitives - 1; t >= 0; --t) {
        const double d[3] = {direction.x, direction.y, direction.z};
        const double o[3] = {origin.x + tmin * d[0], origin.y + tmin * d[1], origin.z + tmin * d[2]};
        if (!segment_meets_box(o, d, (double)tmax - tmin, optix_emulated_aabb + 6 * t)) continue;
        for (int offer = 0; offer < optix_emulated_offers; ++offer) {
            optix_emulated_primitive = (unsigned int)t;
            ++optix_emulated_calls;
            optix_emulated_intersection();
        }
    }
    k = 0;
    ((payload = optix_emulated_payload[k++]), ...);
}
