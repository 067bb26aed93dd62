// Host build of kernels/collider_math.cuh for tests/engine/test_collider_device_math.py: the same
// per-grain functions the CUDA kernels of kernels/colliders.cu run, looped over the grains on the CPU.
// The structs are filled from Python with the host mirrors of engine/backends/gpu_runtime.py, so a
// layout mismatch fails here too.
#include "collider_math.cuh"

extern "C" void collider_forces_host(const DemParams* params, const ColliderParams* colliders, int count) {
    for (int i = 0; i < params->particle_count; ++i) collider_grain_forces(*params, colliders, count, i);
}

// The double sums before they are added to the float32 forces, (n, 3).
extern "C" void collider_force_sums_host(const DemParams* params, const ColliderParams* collider, double* out) {
    for (int i = 0; i < params->particle_count; ++i) {
        const double3 sum = collider_grain_force_sum(*params, *collider, i);
        out[3 * i] = sum.x;
        out[3 * i + 1] = sum.y;
        out[3 * i + 2] = sum.z;
    }
}

// Like the collider_sweep kernel, also adds the corrections to collider->corrections; returns them.
extern "C" int collider_sweep_host(const DemParams* params, const ColliderParams* collider,
                                   double displacement_max) {
    int corrected = 0;
    for (int i = 0; i < params->particle_count; ++i) {
        corrected += collider_grain_sweep(*params, *collider, displacement_max, i);
    }
    *collider->corrections += (unsigned int)corrected;
    return corrected;
}
