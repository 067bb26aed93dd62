// Host build of the grain kernels for tests/engine/test_grain_device_math.py: kernels/grid.cu,
// kernels/optix_dem.cu and the per-slot update of kernels/dem_integrate.cuh themselves, their CUDA built-ins defined in cuda_host.h and OptiX's traversal
// emulated in optix_emulated/optix.h. The launch structs are filled from Python with the host mirrors
// of engine/backends/gpu_params.py, so a layout mismatch fails here too.
#include "cuda_host.h"
#include "dem_integrate.cuh"
#include "grid.cu"
#include "optix_dem.cu"

extern "C" void grid_keys_host(const DemParams* params, unsigned int* key) {
    host_launch(params->particle_count, 256, grid_keys, params, key);
}

extern "C" void grid_gather_sorted_host(const DemParams* params, const int* sorted, float4* pos_sorted) {
    host_launch(params->particle_count, 256, grid_gather_sorted, params, sorted, pos_sorted);
}

extern "C" void grid_forces_host(const DemParams* params, const unsigned int* start, const int* sorted,
                                 const float4* pos_sorted) {
    host_launch(params->particle_count, 256, grid_forces, params, start, sorted, pos_sorted);
}

extern "C" void grid_forces_rotating_host(const DemParams* params, const unsigned int* start, const int* sorted,
                                          const float4* pos_sorted) {
    host_launch(params->particle_count, 256, grid_forces_rotating, params, start, sorted, pos_sorted);
}

extern "C" void grid_pairs_host(const DemParams* params, const unsigned int* start, const int* sorted,
                                const float4* pos_sorted, int2* pairs, unsigned int* count, unsigned int capacity) {
    host_launch(params->particle_count, 256, grid_pairs, params, start, sorted, pos_sorted, pairs, count, capacity);
}

extern "C" void dem_proxy_aabbs_host(const DemParams* params, float* aabb) {
    for (int i = 0; i < params->particle_count; ++i) dem_proxy_aabb(*params, i, aabb + 6 * i);
}

// One optixLaunch of kernels/optix_dem.cu over every slot; returns the intersection programs run.
extern "C" long long optix_dem_launch_host(const OptixDemParams* launch, const float* aabb, int offers) {
    params = *launch;
    optix_emulated_aabb = aabb;
    optix_emulated_primitives = launch->dem.particle_count;
    optix_emulated_offers = offers;
    optix_emulated_intersection = __intersection__dem;
    optix_emulated_calls = 0;
    for (int i = 0; i < launch->dem.particle_count; ++i) {
        optix_emulated_launch_index = make_uint3((unsigned int)i, 0u, 0u);
        __raygen__dem();
    }
    return optix_emulated_calls;
}

// dem_integrate (kernels/dem_common.cu) over every slot.
extern "C" void dem_integrate_host(const DemParams* params, float ax, float ay, float az, int step) {
    for (int i = 0; i < params->particle_count; ++i) dem_integrate_slot(*params, ax, ay, az, step, i);
}

// dem_integrate_rotating (kernels/dem_common.cu) over every slot.
extern "C" void dem_integrate_rotating_host(const DemParams* params, float ax, float ay, float az, int step) {
    for (int i = 0; i < params->particle_count; ++i) dem_integrate_slot_rotating(*params, ax, ay, az, step, i);
}

// dem_clump_step (kernels/dem_common.cu) over every clump.
extern "C" void dem_clump_step_host(const DemParams* params, int phase) {
    for (int c = 0; c < params->clump_count; ++c) dem_clump_step_one(*params, phase, c);
}

// Velocity Verlet's first half (dem_verlet_drift in kernels/dem_common.cu) over every slot.
extern "C" void dem_verlet_drift_host(const DemParams* params, int step) {
    for (int i = 0; i < params->particle_count; ++i) dem_verlet_drift_slot(*params, step, i);
}

// Velocity Verlet's priming pass (dem_verlet_prime) over every slot.
extern "C" void dem_verlet_prime_host(const DemParams* params, float ax, float ay, float az, int step) {
    for (int i = 0; i < params->particle_count; ++i) dem_integrate_slot_rotating(*params, ax, ay, az, step, i, true);
}

// The wall contacts of every active slot under the rotating law (dem_walls_rotating), force [N] and
// torque [N m] (n, 3) each, evolving the wall histories as the update does.
extern "C" void dem_walls_rotating_host(const DemParams* params, float* force, float* torque) {
    const DemParams& P = *params;
    for (int i = 0; i < P.particle_count; ++i) {
        float3 f = make_float3(0.0f, 0.0f, 0.0f), t = make_float3(0.0f, 0.0f, 0.0f);
        if (P.info[i] & DEM_INFO_ACTIVE) {
            dem_walls_rotating(P, i, P.pos[i], P.vel[i], (int)(P.info[i] >> DEM_INFO_MATERIAL_SHIFT), f, t);
        }
        force[3 * i] = f.x;
        force[3 * i + 1] = f.y;
        force[3 * i + 2] = f.z;
        torque[3 * i] = t.x;
        torque[3 * i + 1] = t.y;
        torque[3 * i + 2] = t.z;
    }
}
