// Host build of kernels/collider_math.cuh for tests/engine/test_collider_device_math.py: the same
// per-grain functions the CUDA kernels of kernels/colliders.cu run, looped over the grains on the CPU.
// The structs are filled from Python with the host mirrors of engine/backends/gpu_params.py, so a
// layout mismatch fails here too.
#include "collider_math.cuh"
#include "slab_test.h"

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

// The double force and torque sums of one collider (torque: with DemParams::rotation), (n, 3) each.
extern "C" void collider_force_torque_sums_host(const DemParams* params, const ColliderParams* collider,
                                                double* force, double* torque) {
    for (int i = 0; i < params->particle_count; ++i) {
        double3 t;
        const double3 f = collider_grain_force_sum(*params, *collider, i, &t);
        force[3 * i] = f.x;
        force[3 * i + 1] = f.y;
        force[3 * i + 2] = f.z;
        torque[3 * i] = t.x;
        torque[3 * i + 1] = t.y;
        torque[3 * i + 2] = t.z;
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

// --- the OptiX path (kernels/optix_colliders.cu) with its traversal emulated -------------------------
// OptiX offers a ray every custom primitive whose box the ray meets, in an order of its own; here every
// triangle is tested against its float32 box (collider_triangle_aabb) and offered from the last to the
// first, twice (OptiX may run an intersection program more than once per primitive), so the results
// show that the boxes are wide enough and that neither the order nor repeats matter.

extern "C" void collider_triangle_aabbs_host(const ColliderParams* collider, int triangle_count, double inflate,
                                             float* aabb) {
    for (int t = 0; t < triangle_count; ++t) collider_triangle_aabb(*collider, t, inflate, aabb + 6 * t);
}

extern "C" void collider_force_sums_optix_host(const DemParams* params, const ColliderParams* collider,
                                               const float* aabb, int triangle_count, double* out) {
    for (int i = 0; i < params->particle_count; ++i) {
        double3 f = make_double3(0.0, 0.0, 0.0);
        if (params->info[i] & DEM_INFO_ACTIVE) {
            ColliderCandidates candidates;
            const ColliderProximity query = collider_proximity(*params, *collider, i, candidates);
            const float4 p = params->pos[i];
            const double origin[3] = {p.x, p.y, p.z}, direction[3] = {1.0, 0.0, 0.0};
            for (int t = triangle_count - 1; t >= 0; --t) {
                if (!segment_meets_box(origin, direction, 0.0, aabb + 6 * t)) continue;
                collider_offer_triangle(*collider, t, query);
                collider_offer_triangle(*collider, t, query);
            }
            f = collider_resolve(*params, *collider, i, candidates);
        } else {
            collider_forget(*params, *collider, i);  // as __raygen__collider does
        }
        out[3 * i] = f.x;
        out[3 * i + 1] = f.y;
        out[3 * i + 2] = f.z;
    }
}

struct EmulatedOptixCrossings {
    const ColliderParams* C;
    const float* aabb;
    int triangle_count;

    void operator()(ColliderCrossing& c) const {
        // The ray of OptixColliderCrossings: float32 origin and path.
        const double origin[3] = {(float)c.ox, (float)c.oy, (float)c.oz};
        const double path[3] = {(float)(c.px - c.ox), (float)(c.py - c.oy), (float)(c.pz - c.oz)};
        const double tmax = (float)(1.0f + 1.0e-6f);
        for (int t = triangle_count - 1; t >= 0; --t) {
            if (!segment_meets_box(origin, path, tmax, aabb + 6 * t)) continue;
            collider_offer_crossing(*C, t, c);
            collider_offer_crossing(*C, t, c);
        }
    }
};

extern "C" int collider_sweep_optix_host(const DemParams* params, const ColliderParams* collider,
                                         const float* aabb, int triangle_count) {
    const EmulatedOptixCrossings offer_all{collider, aabb, triangle_count};
    int corrected = 0;
    for (int i = 0; i < params->particle_count; ++i) {
        corrected += collider_grain_sweep_with(*params, *collider, i, offer_all);
    }
    return corrected;
}
