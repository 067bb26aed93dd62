// Grains against triangle-mesh colliders on the GPU, one thread per particle slot: the per-grain code
// of kernels/collider_math.cuh (the CPU reference's, line for line). Each thread writes only its own
// slot and sums its contacts in a fixed order, so the same input gives the same bits. Launcher:
// engine/backends/gpu_colliders.py; compiled with --fmad=false (see collider_math.cuh).
#include "collider_math.cuh"

// Adds the contact forces of all colliders (an array of collider_count) to P.force of every active slot.
extern "C" __global__ void collider_forces(const DemParams* __restrict__ params,
                                           const ColliderParams* __restrict__ colliders, int collider_count) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= params->particle_count) return;
    collider_grain_forces(*params, colliders, collider_count, i);
}

// Swept test of one collider after the update (one launch per collider, in order, as the CPU does):
// puts back every slot whose centre crossed the surface during the step (from collider->old_pos) and
// counts the corrections.
extern "C" __global__ void collider_sweep(const DemParams* __restrict__ params,
                                          const ColliderParams* __restrict__ collider, double displacement_max) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= params->particle_count) return;
    const int corrected = collider_grain_sweep(*params, *collider, displacement_max, i);
    if (corrected > 0) atomicAdd(collider->corrections, (unsigned int)corrected);
}

// The OptiX proxies of a collider's triangles (kernels/optix_colliders.cu): each triangle's box widened
// by ``inflate`` [m], float32 (triangle_count, 6), rounded outwards.
extern "C" __global__ void collider_triangle_aabbs(const ColliderParams* __restrict__ collider, int triangle_count,
                                                   double inflate, float* __restrict__ aabb) {
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= triangle_count) return;
    collider_triangle_aabb(*collider, t, inflate, aabb + 6 * t);
}

// Adds the per-slot collider force sums of the OptiX path (double, summed collider by collider) to
// P.force once, rounded to float32 as collider_grain_forces does, and clears them for the next step;
// with rotation the torque sums likewise to P.torque.
extern "C" __global__ void collider_add_force_sums(const DemParams* __restrict__ params, double* __restrict__ sums,
                                                   double* __restrict__ torque_sums) {
    const DemParams& P = *params;
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= P.particle_count) return;
    double* sum = sums + 3 * i;
    if (P.info[i] & DEM_INFO_ACTIVE) {
        float4 f = P.force[i];
        f.x = (float)((double)f.x + sum[0]);
        f.y = (float)((double)f.y + sum[1]);
        f.z = (float)((double)f.z + sum[2]);
        P.force[i] = f;
    }
    sum[0] = sum[1] = sum[2] = 0.0;
    if (P.rotation) {
        double* torque_sum = torque_sums + 3 * i;
        if (P.info[i] & DEM_INFO_ACTIVE) {
            float4 t = P.torque[i];
            t.x = (float)((double)t.x + torque_sum[0]);
            t.y = (float)((double)t.y + torque_sum[1]);
            t.z = (float)((double)t.z + torque_sum[2]);
            P.torque[i] = t;
        }
        torque_sum[0] = torque_sum[1] = torque_sum[2] = 0.0;
    }
}
