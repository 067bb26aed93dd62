// The CUDA grid backend (engine/backends/cuda_grid.py): each step the slots are bucketed by their cell
// (edge 2·r_max, so touching spheres are in neighbouring cells) folded onto a periodic block of
// buckets (a spatial hash that keeps neighbours together), and each particle
// gathers its own contact force from the 27 cells around it, without atomics and in a fixed order.
#include "dem_math.cuh"

// Bucket of every slot: the bucket of its cell, or table_mask + 1 for inactive slots.
extern "C" __global__ void grid_keys(const DemParams* __restrict__ params, unsigned int* __restrict__ key) {
    const DemParams& P = *params;
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= P.particle_count) return;
    key[i] = (P.info[i] & DEM_INFO_ACTIVE) ? dem_cell_bucket(dem_cell(P.pos[i], P.inv_cell_size), P)
                                           : P.table_mask + 1u;
}

// pos_sorted[s] = pos[sorted[s]]: the candidates of a run of buckets are then read contiguously, and
// the slot id only for the few that touch.
extern "C" __global__ void grid_gather_sorted(const DemParams* __restrict__ params, const int* __restrict__ sorted,
                                              float4* __restrict__ pos_sorted) {
    const DemParams& P = *params;
    const int s = blockIdx.x * blockDim.x + threadIdx.x;
    if (s < P.particle_count) pos_sorted[s] = P.pos[sorted[s]];
}

// Visits every active j ≠ i touching slot i, once each. The 27 cells around i are read as 9 runs of
// three cells along z (consecutive buckets, split in two where the periodic fold wraps). The 27
// buckets are distinct and every j sits in one bucket, so no j is seen twice; a bucket also holds far
// cells folded onto it, whose particles the exact pair test rejects.
template <typename Visit>
__device__ __forceinline__ void grid_for_each_contact(const DemParams& P, const unsigned int* start,
                                                      const int* sorted, const float4* pos_sorted, int i,
                                                      float4 pi, Visit visit) {
    const int3 ci = dem_cell(pi, P.inv_cell_size);
    const unsigned int m = (1u << P.grid_bits_z) - 1u;
    const unsigned int z_lo = (unsigned int)(ci.z - 1) & m, z_hi = (unsigned int)(ci.z + 1) & m;
    for (int dx = -1; dx <= 1; ++dx) {
        for (int dy = -1; dy <= 1; ++dy) {
            const unsigned int row = dem_cell_bucket(make_int3(ci.x + dx, ci.y + dy, 0), P);
            // One run when z_lo..z_hi does not wrap, else [z_lo, m] and [0, z_hi]. The host keeps
            // every grid_bits_* ≥ 2, so the 27 cells fall in 27 distinct buckets.
            unsigned int runs[2][2];
            int run_count = 1;
            if (z_lo <= z_hi) {
                runs[0][0] = row + z_lo; runs[0][1] = row + z_hi;
            } else {
                runs[0][0] = row + z_lo; runs[0][1] = row + m;
                runs[1][0] = row; runs[1][1] = row + z_hi;
                run_count = 2;
            }
            for (int r = 0; r < run_count; ++r) {
                const unsigned int end = start[runs[r][1] + 1];
                for (unsigned int s = start[runs[r][0]]; s < end; ++s) {
                    const float4 pj = pos_sorted[s];
                    DemPair pair;
                    if (!dem_touch(pi, pj, pair)) continue;
                    const int j = sorted[s];
                    if (j != i) visit(j, pj, pair);
                }
            }
        }
    }
}

// Minimum resident blocks of 256 threads per SM asked of the compiler for grid_forces (a register cap:
// the double-precision pair test and the contact law would otherwise lower the occupancy of what is
// mostly a latency-bound gather). Set by the host with -DGRID_FORCES_MIN_BLOCKS.
#ifndef GRID_FORCES_MIN_BLOCKS
#define GRID_FORCES_MIN_BLOCKS 1
#endif

// Contact force on every slot [N] (written whole; inactive slots get zero). Thread t takes the t-th
// slot in bucket order, so a warp's neighbour runs are neighbouring buckets (coalesced reads). With
// springs, both particles of a pair evolve the spring from the owner's row of the last step (the same
// bits, negated), and the owner writes it into its row of the other half.
extern "C" __global__ void __launch_bounds__(256, GRID_FORCES_MIN_BLOCKS) grid_forces(
        const DemParams* __restrict__ params, const unsigned int* __restrict__ start, const int* __restrict__ sorted,
        const float4* __restrict__ pos_sorted) {
    const DemParams& P = *params;
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= P.particle_count) return;
    const int i = sorted[t];
    const unsigned int info_i = P.info[i];
    const int model_i = P.slot_to_model[i];
    const int parity = P.spring_model ? *P.spring_parity : 0;
    DemSpringWriter kept = {P.spring_model ? dem_spring_row(P, parity ^ 1, model_i) : nullptr, 0};
    float3 sum = make_float3(0.0f, 0.0f, 0.0f);
    if (info_i & DEM_INFO_ACTIVE) {
        const float4 pi = pos_sorted[t];
        const float4 vi = P.vel[i];
        grid_for_each_contact(P, start, sorted, pos_sorted, i, pi, [&](int j, float4 pj, const DemPair& pair) {
            const int model_j = P.slot_to_model[j];
            const float tie = model_i < model_j ? 1.0f : -1.0f;
            float3 f;
            if (P.spring_model) {
                const bool owner = dem_owns(model_i, pi.w, model_j, pj.w);
                float3 spring = dem_pair_spring(P, parity, model_i, model_j, owner);
                f = dem_pair_force(P, pair, vi, P.vel[j], info_i, P.info[j], tie, &spring);
                if (owner) dem_spring_keep(P, kept, model_j, spring);
            } else {
                f = dem_pair_force(P, pair, vi, P.vel[j], info_i, P.info[j], tie);
            }
            sum.x += f.x;
            sum.y += f.y;
            sum.z += f.z;
        });
    }
    if (P.spring_model) dem_spring_close(kept);
    P.force[i] = make_float4(sum.x, sum.y, sum.z, 0.0f);
}

// grid_forces under the rotating law (issue 16; the launcher picks it when dem_rotating_law holds, so
// the paper's kernel stays as it was, registers included): the force and the torque of slot t's
// particle, its springs and rolling histories (kept by the owner as with the paper's law) and its glue
// bonds. Each particle of a pair evaluates the pair itself from the same inputs: the forces are exact
// opposites, and each side takes the torque of its own arm.
extern "C" __global__ void __launch_bounds__(256, GRID_FORCES_MIN_BLOCKS) grid_forces_rotating(
        const DemParams* __restrict__ params, const unsigned int* __restrict__ start, const int* __restrict__ sorted,
        const float4* __restrict__ pos_sorted) {
    const DemParams& P = *params;
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= P.particle_count) return;
    const int i = sorted[t];
    const unsigned int info_i = P.info[i];
    const int model_i = P.slot_to_model[i];
    const bool rows = dem_pair_rows(P);
    const int parity = (rows || P.bond_count > 0) ? *P.spring_parity : 0;
    DemHistoryWriter kept = dem_history_writer(P, parity ^ 1, model_i);
    float3 sum = make_float3(0.0f, 0.0f, 0.0f);
    float3 torque = make_float3(0.0f, 0.0f, 0.0f);
    if (info_i & DEM_INFO_ACTIVE) {
        const float4 pi = pos_sorted[t];
        const float4 vi = P.vel[i];
        grid_for_each_contact(P, start, sorted, pos_sorted, i, pi, [&](int j, float4 pj, const DemPair& pair) {
            const int model_j = P.slot_to_model[j];
            if (dem_bonded(P, parity, model_i, model_j)) return;  // the glue bond acts instead
            if (dem_same_clump(P, model_i, model_j)) return;      // one rigid body
            const float tie = model_i < model_j ? 1.0f : -1.0f;
            const bool owner = dem_owns(model_i, pi.w, model_j, pj.w);
            float3 spring = make_float3(0.0f, 0.0f, 0.0f), rolling = make_float3(0.0f, 0.0f, 0.0f);
            if (rows) dem_pair_history(P, parity, model_i, model_j, owner, spring, rolling);
            ContactRotation<float> r;
            ContactTorqueArms<float> arms;
            const float3 f = dem_pair_force_rotating(P, pair, i, j, vi, P.vel[j], info_i, P.info[j], pi.w, pj.w, tie,
                                                     P.spring_model ? &spring : nullptr, &rolling, r, arms);
            if (rows && owner) dem_history_keep(P, kept, model_j, spring, rolling);
            sum.x += f.x;
            sum.y += f.y;
            sum.z += f.z;
            const float3 tau = contact_torque_i(arms, r);
            torque.x += tau.x;
            torque.y += tau.y;
            torque.z += tau.z;
        });
    }
    dem_bond_forces(P, parity, model_i, sum, torque);  // after the contacts, as the CPU adds them
    dem_history_close(kept);
    P.force[i] = make_float4(sum.x, sum.y, sum.z, 0.0f);
    if (P.rotation) P.torque[i] = make_float4(torque.x, torque.y, torque.z, 0.0f);
}

// Touching pairs (slot i < slot j) into pairs[0 .. capacity); *count ends as the number found.
extern "C" __global__ void grid_pairs(const DemParams* __restrict__ params, const unsigned int* __restrict__ start,
                                      const int* __restrict__ sorted, const float4* __restrict__ pos_sorted,
                                      int2* __restrict__ pairs, unsigned int* __restrict__ count, unsigned int capacity) {
    const DemParams& P = *params;
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= P.particle_count) return;
    const int i = sorted[t];
    if (!(P.info[i] & DEM_INFO_ACTIVE)) return;
    grid_for_each_contact(P, start, sorted, pos_sorted, i, pos_sorted[t], [&](int j, float4, const DemPair&) {
        if (j < i) return;
        const unsigned int k = atomicAdd(count, 1u);
        if (k < capacity) pairs[k] = make_int2(i, j);
    });
}
