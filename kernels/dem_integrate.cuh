// The per-particle update of a step (kernels/dem_common.cu dem_integrate; the host build of
// tests/engine/test_grain_device_math.py): wall contacts, fields, semi-implicit Euler, open-side
// exits, NaN/speed bookkeeping — engine/backends/cpu_kernels.integrate for one slot. Included, not
// compiled on its own.
#pragma once
#include "dem_math.cuh"

// (ax, ay, az) is gravity plus the uniform/rotating fields at t = step·dt [m/s²]; step is the global
// index of the step being taken. Wall springs live by model index (DemParams::wall_springs).
__device__ __forceinline__ void dem_integrate_slot(const DemParams& P, float ax, float ay, float az, int step,
                                                   int i) {
    unsigned int info = P.info[i];
    if (!(info & DEM_INFO_ACTIVE)) return;
    const float4 p = P.pos[i];
    const float4 v = P.vel[i];
    const float4 f = P.force[i];
    const int material = (int)(info >> DEM_INFO_MATERIAL_SHIFT);
    const float m = v.w;
    float fx = f.x, fy = f.y, fz = f.z;
    const double pc[3] = {(double)p.x, (double)p.y, (double)p.z};
    float4* wall_springs = P.spring_model ? P.wall_springs + 6 * P.slot_to_model[i] : nullptr;
    for (int side = 0; side < 6; ++side) {
        if (!(P.wall_mask & (1 << side))) continue;
        const int axis = side >> 1;
        const bool low = (side & 1) == 0;
        const double gap = low ? pc[axis] - P.lo[axis] : P.hi[axis] - pc[axis];
        const double overlap = (double)p.w - gap;
        if (overlap < 0.0) {
            if (wall_springs != nullptr) wall_springs[side] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            continue;
        }
        const float sign = low ? 1.0f : -1.0f;
        float3 spring = make_float3(0.0f, 0.0f, 0.0f);
        if (wall_springs != nullptr) spring = make_float3(wall_springs[side].x, wall_springs[side].y, wall_springs[side].z);
        const float3 w = dem_contact(axis == 0 ? sign : 0.0f, axis == 1 ? sign : 0.0f, axis == 2 ? sign : 0.0f,
                                     (float)overlap, v.x, v.y, v.z, m, P.stiffness, P.wall_beta[material],
                                     P.wall_mu[material], wall_springs != nullptr ? &spring : nullptr, P.dt,
                                     P.tangential_ratio);
        if (wall_springs != nullptr) wall_springs[side] = make_float4(spring.x, spring.y, spring.z, 0.0f);
        fx += w.x;
        fy += w.y;
        fz += w.z;
    }
    float3 g = make_float3(0.0f, 0.0f, 0.0f);
    if (P.field_count > 0) g = dem_field_acceleration(P, p.x, p.y, p.z, v.x, v.y, v.z);
    const double dt = (double)P.dt;
    const double vx = (double)v.x + ((double)fx / m + (double)ax + (double)g.x) * dt;
    const double vy = (double)v.y + ((double)fy / m + (double)ay + (double)g.y) * dt;
    const double vz = (double)v.z + ((double)fz / m + (double)az + (double)g.z) * dt;
    const float4 v_new = make_float4((float)vx, (float)vy, (float)vz, m);
    // Positions advance with the float32-rounded velocity, as the CPU backend does.
    const float4 p_new = make_float4((float)(pc[0] + (double)v_new.x * dt), (float)(pc[1] + (double)v_new.y * dt),
                                     (float)(pc[2] + (double)v_new.z * dt), p.w);
    P.vel[i] = v_new;
    P.pos[i] = p_new;
    const double speed2 = vx * vx + vy * vy + vz * vz;
    if (!(isfinite(speed2) && isfinite(p_new.x + p_new.y + p_new.z))) {
        atomicMin(P.diag + DEM_DIAG_FIRST_NAN_STEP, step + 1);
        return;
    }
    if (speed2 > (double)P.speed_limit2) atomicMin(P.diag + DEM_DIAG_FIRST_FAST_STEP, step + 1);
    atomicMax(P.diag + DEM_DIAG_MAX_SPEED2, __float_as_int((float)speed2));
    const float pn[3] = {p_new.x, p_new.y, p_new.z};
    for (int axis = 0; axis < 3; ++axis) {
        if ((!(P.wall_mask & (1 << (2 * axis))) && (double)pn[axis] < P.lo[axis]) ||
            (!(P.wall_mask & (1 << (2 * axis + 1))) && (double)pn[axis] > P.hi[axis])) {
            info &= ~DEM_INFO_ACTIVE;
        }
    }
    P.info[i] = info;
}
