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

// Swept test of one collider after the update (one launch per collider, in order, as the CPU does): puts back every slot whose centre crossed the surface
// during the step (from collider->old_pos) and counts the corrections.
extern "C" __global__ void collider_sweep(const DemParams* __restrict__ params,
                                          const ColliderParams* __restrict__ collider, double displacement_max) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= params->particle_count) return;
    const int corrected = collider_grain_sweep(*params, *collider, displacement_max, i);
    if (corrected > 0) atomicAdd(collider->corrections, (unsigned int)corrected);
}
