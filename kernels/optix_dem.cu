// Mochi's ray-traced contact detection (engine/backends/optix_rt.py). Every particle has a proxy: an
// AABB of edge 4·r (twice its radius, dem_proxy_aabb in kernels/dem_math.cuh). A point ray (tmin 0, a
// tiny tmax) from every centre walks the BVH; the intersection program sees each proxy holding the
// centre, tests |c_i − c_j| ≤ r_i + r_j and keeps the partners the ray owns; it never reports an
// intersection, so any-hit and closest-hit never run. The ray-generation program then resolves them.
//
// Duplicate rule: a touching pair is resolved from its owner's ray (dem_owns in kernels/dem_math.cuh: the
// smaller sphere, whose centre always lies in the larger sphere's proxy; the smaller model index when
// both radii are equal and both rays find it). The owner keeps the pair's tangential spring.
//
// Duplicate invocations: OptiX may run an intersection program more than once for the same primitive
// and ray (the programming guide says so for custom primitives), so the intersection program only
// collects partners into a sorted list that keeps each slot once — the OPTIX_DEM_BATCH smallest
// partner slots above ``after`` — and the forces are computed from that list. A ray with more partners
// than fit is traced again for the next batch. The list does not depend on the traversal order, so
// the owner's force sum is added up in increasing partner order.
#include <optix.h>
#include "dem_math.cuh"

#ifndef OPTIX_DEM_BATCH
#define OPTIX_DEM_BATCH 16
#endif

// Which contact law the program holds: 0 the paper's only (the program as it was, registers included),
// 1 the rotating law of issue 16 only, 2 both, chosen per launch by dem_rotating_law (the host build of
// the tests). The launcher compiles the one its physics needs (engine.backends.optix_rt).
#ifndef OPTIX_DEM_LAW
#define OPTIX_DEM_LAW 2
#endif

extern "C" {
__constant__ OptixDemParams params;
}

// The partners one ray collects (in the ray-generation program's local memory; the intersection
// program reaches it through a pointer carried in payloads 0 and 1).
struct OptixDemPartners {
    int after;                     // only slots above this one are collected (the previous batch's last)
    int count;                     // partners in slot[], sorted increasing, each once
    int more;                      // 1 when a partner above slot[OPTIX_DEM_BATCH − 1] was left for the next batch
    int slot[OPTIX_DEM_BATCH];
};

// Adds partner j to the list unless it is there already; keeps the OPTIX_DEM_BATCH smallest.
__device__ __forceinline__ void optix_dem_collect(OptixDemPartners& q, int j) {
    if (j <= q.after) return;
    int k = q.count;
    while (k > 0 && q.slot[k - 1] > j) --k;
    if (k > 0 && q.slot[k - 1] == j) return;  // offered again: keep one
    if (k >= OPTIX_DEM_BATCH) {
        q.more = 1;
        return;
    }
    if (q.count == OPTIX_DEM_BATCH) q.more = 1;  // the last one drops out, for the next batch
    const int last = q.count < OPTIX_DEM_BATCH ? q.count : OPTIX_DEM_BATCH - 1;
    for (int m = last; m > k; --m) q.slot[m] = q.slot[m - 1];
    q.slot[k] = j;
    if (q.count < OPTIX_DEM_BATCH) ++q.count;
}

// Adds v to the float3 at out with atomics (the partners' shares).
__device__ __forceinline__ void optix_dem_add(float4* out4, float3 v) {
    float* out = &out4->x;
    atomicAdd(out, v.x);
    atomicAdd(out + 1, v.y);
    atomicAdd(out + 2, v.z);
}

// __raygen__dem's contact-force mode under the rotating law (issue 16): the owner's ray resolves each
// pair once, keeps its spring and rolling history, and adds the partner's force and torque with
// atomics. The partners of one ray are resolved in increasing slot order, as with the paper's law.
__device__ __forceinline__ void optix_dem_rotating(const DemParams& P, int i) {
    const int model_i = P.slot_to_model[i];
    const bool rows = dem_pair_rows(P);
    const int parity = (rows || P.bond_count > 0) ? *P.spring_parity : 0;
    DemHistoryWriter kept = dem_history_writer(P, parity ^ 1, model_i);
    if (!(P.info[i] & DEM_INFO_ACTIVE)) {
        float3 none = make_float3(0.0f, 0.0f, 0.0f), no_torque = none;
        dem_bond_forces(P, parity, model_i, none, no_torque);  // writes the states of the bonds it holds
        dem_history_close(kept);
        return;
    }
    const float4 pi = P.pos[i];
    const float4 vi = P.vel[i];
    const unsigned int info_i = P.info[i];
    float3 sum = make_float3(0.0f, 0.0f, 0.0f);
    float3 torque = make_float3(0.0f, 0.0f, 0.0f);
    OptixDemPartners q;
    q.after = -1;
    do {
        q.count = 0;
        q.more = 0;
        const unsigned long long address = reinterpret_cast<unsigned long long>(&q);
        unsigned int hi = (unsigned int)(address >> 32), lo = (unsigned int)(address & 0xffffffffull);
        optixTrace(params.handle, make_float3(pi.x, pi.y, pi.z), make_float3(1.0f, 0.0f, 0.0f), 0.0f,
                   params.ray_tmax, 0.0f, OptixVisibilityMask(255),
                   OPTIX_RAY_FLAG_DISABLE_ANYHIT | OPTIX_RAY_FLAG_DISABLE_CLOSESTHIT, 0, 1, 0, hi, lo);
        for (int k = 0; k < q.count; ++k) {
            const int j = q.slot[k];
            const float4 pj = P.pos[j];
            DemPair pair;
            dem_touch(pi, pj, pair);
            const int model_j = P.slot_to_model[j];
            if (dem_bonded(P, parity, model_i, model_j)) continue;  // the glue bond acts instead
            if (dem_same_clump(P, model_i, model_j)) continue;      // one rigid body
            const float tie = model_i < model_j ? 1.0f : -1.0f;
            float3 spring = make_float3(0.0f, 0.0f, 0.0f), rolling = make_float3(0.0f, 0.0f, 0.0f);
            if (rows) dem_pair_history(P, parity, model_i, model_j, true, spring, rolling);
            ContactRotation<float> r;
            ContactTorqueArms<float> arms;
            const float3 f = dem_pair_force_rotating(P, pair, i, j, vi, P.vel[j], info_i, P.info[j], pi.w, pj.w, tie,
                                                     P.spring_model ? &spring : nullptr, &rolling, r, arms);
            if (rows) dem_history_keep(P, kept, model_j, spring, rolling);
            sum.x += f.x;
            sum.y += f.y;
            sum.z += f.z;
            optix_dem_add(P.force + j, make_float3(-f.x, -f.y, -f.z));
            if (P.rotation) {
                const float3 tau = contact_torque_i(arms, r);
                torque.x += tau.x;
                torque.y += tau.y;
                torque.z += tau.z;
                optix_dem_add(P.torque + j, contact_torque_j(arms, r));
            }
        }
        if (q.count > 0) q.after = q.slot[q.count - 1];
    } while (q.more);
    dem_bond_forces(P, parity, model_i, sum, torque);  // both grains of a bond take their own share
    dem_history_close(kept);
    optix_dem_add(P.force + i, sum);
    if (P.rotation) optix_dem_add(P.torque + i, torque);
}

extern "C" __global__ void __raygen__dem() {
    const int i = (int)optixGetLaunchIndex().x;
    const DemParams& P = params.dem;
    if (i >= P.particle_count) return;
#if OPTIX_DEM_LAW != 0
    if (params.mode == 0 && (OPTIX_DEM_LAW == 1 || dem_rotating_law(P))) {
        optix_dem_rotating(P, i);
        return;
    }
#endif
    const int model_i = P.slot_to_model[i];
    const bool springs = P.spring_model && params.mode == 0;
    const int parity = springs ? *P.spring_parity : 0;
    DemSpringWriter kept = {springs ? dem_spring_row(P, parity ^ 1, model_i) : nullptr, 0};
    if (!(P.info[i] & DEM_INFO_ACTIVE)) {
        if (springs) dem_spring_close(kept);
        return;
    }
    const float4 pi = P.pos[i];
    const float4 vi = P.vel[i];
    const unsigned int info_i = P.info[i];
    float3 sum = make_float3(0.0f, 0.0f, 0.0f);
    OptixDemPartners q;
    q.after = -1;
    do {
        q.count = 0;
        q.more = 0;
        const unsigned long long address = reinterpret_cast<unsigned long long>(&q);
        unsigned int hi = (unsigned int)(address >> 32), lo = (unsigned int)(address & 0xffffffffull);
        optixTrace(params.handle, make_float3(pi.x, pi.y, pi.z), make_float3(1.0f, 0.0f, 0.0f), 0.0f,
                   params.ray_tmax, 0.0f, OptixVisibilityMask(255),
                   OPTIX_RAY_FLAG_DISABLE_ANYHIT | OPTIX_RAY_FLAG_DISABLE_CLOSESTHIT, 0, 1, 0, hi, lo);
        for (int k = 0; k < q.count; ++k) {
            const int j = q.slot[k];
            const float4 pj = P.pos[j];
            DemPair pair;
            dem_touch(pi, pj, pair);  // true: the intersection program collected only touching partners
            if (params.mode == 1) {
                const unsigned int slot = atomicAdd(params.pair_count, 1u);
                if (slot < params.pair_capacity) params.pairs[slot] = make_int2(i, j);
                continue;
            }
            const int model_j = P.slot_to_model[j];
            const float tie = model_i < model_j ? 1.0f : -1.0f;
            float3 f;
            if (springs) {  // the ray's particle owns the pair: its row holds the spring
                float3 spring = dem_spring_find(dem_spring_row(P, parity, model_i), model_j);
                f = dem_pair_force(P, pair, vi, P.vel[j], info_i, P.info[j], tie, &spring);
                dem_spring_keep(P, kept, model_j, spring);
            } else {
                f = dem_pair_force(P, pair, vi, P.vel[j], info_i, P.info[j], tie);
            }
            sum.x += f.x;
            sum.y += f.y;
            sum.z += f.z;
            float* out = &P.force[j].x;
            atomicAdd(out, -f.x);
            atomicAdd(out + 1, -f.y);
            atomicAdd(out + 2, -f.z);
        }
        if (q.count > 0) q.after = q.slot[q.count - 1];
    } while (q.more);
    if (springs) dem_spring_close(kept);
    if (params.mode == 0) {
        float* out = &P.force[i].x;
        atomicAdd(out, sum.x);
        atomicAdd(out + 1, sum.y);
        atomicAdd(out + 2, sum.z);
    }
}

extern "C" __global__ void __intersection__dem() {
    const int i = (int)optixGetLaunchIndex().x;
    const int j = (int)optixGetPrimitiveIndex();
    if (i == j) return;
    const DemParams& P = params.dem;
    const float4 pi = P.pos[i];
    const float4 pj = P.pos[j];
    if (!dem_owns(P.slot_to_model[i], pi.w, P.slot_to_model[j], pj.w)) return;
    if (!(P.info[j] & DEM_INFO_ACTIVE)) return;
    DemPair pair;
    if (!dem_touch(pi, pj, pair)) return;
    OptixDemPartners* q = reinterpret_cast<OptixDemPartners*>(((unsigned long long)optixGetPayload_0() << 32) |
                                                              (unsigned long long)optixGetPayload_1());
    optix_dem_collect(*q, j);
}

extern "C" __global__ void __miss__dem() {}
