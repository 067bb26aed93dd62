// The per-particle update of a step (kernels/dem_common.cu dem_integrate; the host build of
// tests/engine/test_grain_device_math.py): wall contacts, fields, semi-implicit Euler, open-side
// exits, NaN/speed bookkeeping — engine/backends/cpu_kernels.integrate for one slot. Included, not
// compiled on its own.
#pragma once
#include "dem_math.cuh"
// clump_law.h after dem_math.cuh, which brings dem_params.h (DEM_CLUMP_*).
#include "clump_law.h"

// (ax, ay, az) is gravity plus the uniform/rotating fields at t = step·dt [m/s²]; step is the global
// index of the step being taken. Wall springs live by model index (DemParams::wall_springs).
// True when the update is dem_integrate_slot_rotating's (the launchers pick the kernel by it).
__device__ __forceinline__ bool dem_uses_rotating_update(const DemParams& P) {
    return dem_rotating_law(P) || P.integrator != DEM_INTEGRATOR_EULER;
}

// Records a non-finite state (NaN step) and returns false, or true when (speed², position) are finite.
__device__ __forceinline__ bool dem_check_finite(const DemParams& P, double speed2, float4 p, int step) {
    if (!(isfinite(speed2) && isfinite(p.x + p.y + p.z))) {
        atomicMin(P.diag + DEM_DIAG_FIRST_NAN_STEP, step + 1);
        return false;
    }
    return true;
}

// Clears the active bit of a grain that left through an open side.
__device__ __forceinline__ unsigned int dem_exits(const DemParams& P, float4 p, unsigned int info) {
    const float pn[3] = {p.x, p.y, p.z};
    for (int axis = 0; axis < 3; ++axis) {
        if ((!(P.wall_mask & (1 << (2 * axis))) && (double)pn[axis] < P.lo[axis]) ||
            (!(P.wall_mask & (1 << (2 * axis + 1))) && (double)pn[axis] > P.hi[axis])) {
            info &= ~DEM_INFO_ACTIVE;
        }
    }
    return info;
}

// q ← normalize(q + (dt/2) (0, ω) ⊗ q) in double; q is (w, x, y, z) in (x, y, z, w) of the float4.
__device__ __forceinline__ float4 dem_rotate_quaternion(float4 q4, double wx, double wy, double wz, double dt) {
    const double qw = q4.x, qx = q4.y, qy = q4.z, qz = q4.w;
    const double h = 0.5 * dt;
    // (0, ω) ⊗ (qw, q) = (−ω·q, qw ω + ω × q)
    double nw = qw - h * (wx * qx + wy * qy + wz * qz);
    double nx = qx + h * (qw * wx + (wy * qz - wz * qy));
    double ny = qy + h * (qw * wy + (wz * qx - wx * qz));
    double nz = qz + h * (qw * wz + (wx * qy - wy * qx));
    const double norm = sqrt(nw * nw + nx * nx + ny * ny + nz * nz);
    if (norm > 0.0) {
        nw /= norm;
        nx /= norm;
        ny /= norm;
        nz /= norm;
    }
    return make_float4((float)nw, (float)nx, (float)ny, (float)nz);
}

// Wall contacts of slot i under the rotating law: adds their force [N] and torque [N m], evolving the
// wall springs and rolling histories (by model index). A wall is the contact's j with no arm and no
// spin; R_i = r − δ/2, R_eff = r, cohesion area π (2 r δ − δ²).
__device__ __forceinline__ void dem_walls_rotating(const DemParams& P, int i, float4 p, float4 v, int material,
                                                   float3& f, float3& torque) {
    const double pc[3] = {(double)p.x, (double)p.y, (double)p.z};
    const int model = P.slot_to_model[i];
    float4* wall_springs = P.spring_model ? P.wall_springs + 6 * model : nullptr;
    float4* wall_rolling = P.rolling_model ? P.wall_rolling + 6 * model : nullptr;
    const float mu_r = P.rolling_model ? P.wall_rolling_mu[material] : 0.0f;
    const float c = P.cohesion_model ? P.wall_cohesion[material] : 0.0f;
    for (int side = 0; side < 6; ++side) {
        if (!(P.wall_mask & (1 << side))) continue;
        const int axis = side >> 1;
        const bool low = (side & 1) == 0;
        const double gap = low ? pc[axis] - P.lo[axis] : P.hi[axis] - pc[axis];
        const double overlap = (double)p.w - gap;
        if (overlap < 0.0) {
            if (wall_springs != nullptr) wall_springs[side] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            if (wall_rolling != nullptr) wall_rolling[side] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            continue;
        }
        const float sign = low ? 1.0f : -1.0f;
        float3 spring = make_float3(0.0f, 0.0f, 0.0f), rolling = make_float3(0.0f, 0.0f, 0.0f);
        if (wall_springs != nullptr) spring = make_float3(wall_springs[side].x, wall_springs[side].y, wall_springs[side].z);
        if (wall_rolling != nullptr) rolling = make_float3(wall_rolling[side].x, wall_rolling[side].y, wall_rolling[side].z);
        ContactRotation<float> r;
        r.arm_i = (float)((double)p.w - 0.5 * overlap);
        r.arm_j = 0.0f;
        r.w_i = dem_omega(P, i);
        r.w_j = make_float3(0.0f, 0.0f, 0.0f);
        r.r_eff = p.w;
        r.mu_r = mu_r;
        r.cohesion = c > 0.0f ? (float)((double)c * dem_wall_contact_area((double)p.w, overlap)) : 0.0f;
        ContactTorqueArms<float> arms;
        const float3 w = contact_force<float, ContactLaw::Full>(
            axis == 0 ? sign : 0.0f, axis == 1 ? sign : 0.0f, axis == 2 ? sign : 0.0f, (float)overlap, v.x, v.y, v.z,
            v.w, P.stiffness, P.wall_beta[material], P.wall_mu[material], wall_springs != nullptr ? &spring : nullptr,
            *P.history_dt, P.tangential_ratio, r, mu_r > 0.0f ? &rolling : nullptr, arms);
        if (wall_springs != nullptr) wall_springs[side] = make_float4(spring.x, spring.y, spring.z, 0.0f);
        if (wall_rolling != nullptr) wall_rolling[side] = make_float4(rolling.x, rolling.y, rolling.z, 0.0f);
        f.x += w.x;
        f.y += w.y;
        f.z += w.z;
        const float3 tau = contact_torque_i(arms, r);
        torque.x += tau.x;
        torque.y += tau.y;
        torque.z += tau.z;
    }
}

// The first half of a velocity Verlet step (LAMMPS fix nve/sphere initial_integrate), before the
// forces: v ← v + (dt/2) a_old, ω ← ω + (dt/2) α_old, x ← x + dt v, q turned by the half-step ω;
// open-side exits and NaN bookkeeping. a_old, α_old: DemParams::accel, alpha of the last step.
__device__ __forceinline__ void dem_verlet_drift_slot(const DemParams& P, int step, int i) {
    unsigned int info = P.info[i];
    if (!(info & DEM_INFO_ACTIVE)) return;
    const float4 p = P.pos[i];
    const float4 v = P.vel[i];
    const float4 a = P.accel[i];
    const double h = 0.5 * (double)P.dt, dt = (double)P.dt;
    const double vx = (double)v.x + (double)a.x * h;
    const double vy = (double)v.y + (double)a.y * h;
    const double vz = (double)v.z + (double)a.z * h;
    const float4 v_half = make_float4((float)vx, (float)vy, (float)vz, v.w);
    const float4 p_new = make_float4((float)((double)p.x + (double)v_half.x * dt),
                                     (float)((double)p.y + (double)v_half.y * dt),
                                     (float)((double)p.z + (double)v_half.z * dt), p.w);
    P.vel[i] = v_half;
    P.pos[i] = p_new;
    if (P.rotation) {
        const float4 w = P.omega[i];
        const float4 al = P.alpha[i];
        const float4 w_half = make_float4((float)((double)w.x + (double)al.x * h), (float)((double)w.y + (double)al.y * h),
                                          (float)((double)w.z + (double)al.z * h), w.w);
        P.omega[i] = w_half;
        P.orientation[i] = dem_rotate_quaternion(P.orientation[i], w_half.x, w_half.y, w_half.z, dt);
    }
    if (!dem_check_finite(P, vx * vx + vy * vy + vz * vz, p_new, step)) return;
    P.info[i] = dem_exits(P, p_new, info);
}

// The per-slot update under the rotating law or velocity Verlet: wall contacts with torques, fields,
// then either semi-implicit Euler of v, x, ω and q (integrator Euler), or the second half-kick of
// velocity Verlet, which keeps this step's accelerations for the next step's first half. With prime
// (Verlet only) the accelerations of the current state are kept and nothing moves: the pass before the
// first step, with DemParams::history_dt 0 (the CPU backend's kick with dt 0).
__device__ __forceinline__ void dem_integrate_slot_rotating(const DemParams& P, float ax, float ay, float az,
                                                            int step, int i, bool prime = false) {
    unsigned int info = P.info[i];
    if (!(info & DEM_INFO_ACTIVE)) return;
    const float4 p = P.pos[i];
    const float4 v = P.vel[i];
    const float4 f4 = P.force[i];
    const int material = (int)(info >> DEM_INFO_MATERIAL_SHIFT);
    const float m = v.w;
    float3 f = make_float3(f4.x, f4.y, f4.z);
    float3 torque = make_float3(0.0f, 0.0f, 0.0f);
    if (P.rotation) {
        const float4 t4 = P.torque[i];
        torque = make_float3(t4.x, t4.y, t4.z);
    }
    dem_walls_rotating(P, i, p, v, material, f, torque);
    float3 g = make_float3(0.0f, 0.0f, 0.0f);
    if (P.field_count > 0) g = dem_field_acceleration(P, p.x, p.y, p.z, v.x, v.y, v.z);
    const double dt = (double)P.dt;
    const double acc[3] = {(double)f.x / m + (double)ax + (double)g.x, (double)f.y / m + (double)ay + (double)g.y,
                           (double)f.z / m + (double)az + (double)g.z};
    double alpha[3] = {0.0, 0.0, 0.0};
    float4 w = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (P.rotation) {
        w = P.omega[i];
        alpha[0] = (double)torque.x / (double)w.w;
        alpha[1] = (double)torque.y / (double)w.w;
        alpha[2] = (double)torque.z / (double)w.w;
    }
    if (P.integrator == DEM_INTEGRATOR_VERLET) {
        const double h = prime ? 0.0 : 0.5 * dt;
        const double vx = (double)v.x + acc[0] * h, vy = (double)v.y + acc[1] * h, vz = (double)v.z + acc[2] * h;
        P.vel[i] = make_float4((float)vx, (float)vy, (float)vz, m);
        P.accel[i] = make_float4((float)acc[0], (float)acc[1], (float)acc[2], 0.0f);
        if (P.rotation) {
            P.omega[i] = make_float4((float)((double)w.x + alpha[0] * h), (float)((double)w.y + alpha[1] * h),
                                     (float)((double)w.z + alpha[2] * h), w.w);
            P.alpha[i] = make_float4((float)alpha[0], (float)alpha[1], (float)alpha[2], 0.0f);
        }
        const double speed2 = vx * vx + vy * vy + vz * vz;
        if (!dem_check_finite(P, speed2, p, step)) return;
        if (speed2 > (double)P.speed_limit2) atomicMin(P.diag + DEM_DIAG_FIRST_FAST_STEP, step + 1);
        atomicMax(P.diag + DEM_DIAG_MAX_SPEED2, __float_as_int((float)speed2));
        return;
    }
    if (P.clump_count > 0) {  // the clumps sum their members' forces from these (dem_clump_step)
        P.accel[i] = make_float4((float)acc[0], (float)acc[1], (float)acc[2], 0.0f);
        if (P.rotation) P.alpha[i] = make_float4((float)alpha[0], (float)alpha[1], (float)alpha[2], 0.0f);
    }
    const double vx = (double)v.x + acc[0] * dt, vy = (double)v.y + acc[1] * dt, vz = (double)v.z + acc[2] * dt;
    const float4 v_new = make_float4((float)vx, (float)vy, (float)vz, m);
    const float4 p_new = make_float4((float)((double)p.x + (double)v_new.x * dt), (float)((double)p.y + (double)v_new.y * dt),
                                     (float)((double)p.z + (double)v_new.z * dt), p.w);
    P.vel[i] = v_new;
    P.pos[i] = p_new;
    if (P.rotation) {
        const float4 w_new = make_float4((float)((double)w.x + alpha[0] * dt), (float)((double)w.y + alpha[1] * dt),
                                         (float)((double)w.z + alpha[2] * dt), w.w);
        P.omega[i] = w_new;
        P.orientation[i] = dem_rotate_quaternion(P.orientation[i], w_new.x, w_new.y, w_new.z, dt);
    }
    const double speed2 = vx * vx + vy * vy + vz * vz;
    if (!dem_check_finite(P, speed2, p_new, step)) return;
    if (speed2 > (double)P.speed_limit2) atomicMin(P.diag + DEM_DIAG_FIRST_FAST_STEP, step + 1);
    atomicMax(P.diag + DEM_DIAG_MAX_SPEED2, __float_as_int((float)speed2));
    P.info[i] = dem_exits(P, p_new, info);
}

// The paper's update (no rotation, Euler, no rolling, cohesion or bonds; dem_uses_rotating_update false).
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
        const float3 w = contact_force_paper<float>(
            axis == 0 ? sign : 0.0f, axis == 1 ? sign : 0.0f, axis == 2 ? sign : 0.0f, (float)overlap, v.x, v.y, v.z, m,
            P.stiffness, P.wall_beta[material], P.wall_mu[material], wall_springs != nullptr ? &spring : nullptr, P.dt,
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

// The grains and body row of clump c, as kernels/clump_law.h reads and writes them: slots through
// model_to_slot, the rows of rotating grains only where they rotate.
struct DemClumpGrains {
    const DemParams& P;
    int c;
    __device__ __forceinline__ double* body() const { return P.clump_body + (size_t)DEM_CLUMP_BODY * c; }
    __device__ __forceinline__ double mass() const { return P.clump_mass[c]; }
    __device__ __forceinline__ const double* inertia_inv() const { return P.clump_inertia_inv + 9 * (size_t)c; }
    __device__ __forceinline__ int start(int clump) const { return P.clump_start[clump]; }
    __device__ __forceinline__ int member(int k) const { return P.clump_members[k]; }
    __device__ __forceinline__ int slot(int model) const { return P.model_to_slot[model]; }
    __device__ __forceinline__ const double* offset(int model) const { return P.clump_offset + 3 * (size_t)model; }
    __device__ __forceinline__ bool rotation() const { return P.rotation; }
    __device__ __forceinline__ float4 position(int slot) const { return P.pos[slot]; }
    __device__ __forceinline__ float4 velocity(int slot) const { return P.vel[slot]; }
    __device__ __forceinline__ float4 acceleration(int slot) const { return P.accel[slot]; }
    __device__ __forceinline__ float4 angular_acceleration(int slot) const { return P.alpha[slot]; }
    __device__ __forceinline__ float4 omega(int slot) const { return P.omega[slot]; }
    __device__ __forceinline__ void set_position(int slot, double x, double y, double z, float w) const {
        P.pos[slot] = make_float4((float)x, (float)y, (float)z, w);
    }
    __device__ __forceinline__ void set_orientation(int slot, double q0, double q1, double q2, double q3) const {
        P.orientation[slot] = make_float4((float)q0, (float)q1, (float)q2, (float)q3);
    }
    __device__ __forceinline__ void set_velocity(int slot, double x, double y, double z, float w) const {
        P.vel[slot] = make_float4((float)x, (float)y, (float)z, w);
    }
    __device__ __forceinline__ void set_omega(int slot, double x, double y, double z, float w) const {
        P.omega[slot] = make_float4((float)x, (float)y, (float)z, w);
    }
    __device__ __forceinline__ double dt() const { return (double)P.dt; }
};

// One rigid clump c moved as one body and its members set from it: kernels/clump_law.h clump_step_one
// (engine/backends/cpu_kernels.clump_step for one clump, in double, one thread per clump, members in
// their fixed order). The members' forces come from DemParams::accel and alpha (what the update left:
// force/m + gravity + fields, torque/I). phase: 0 sums only (Verlet's priming), 1 an Euler step, 2
// Verlet's first half (with the stored sums), 3 Verlet's second half (with the new sums).
__device__ __forceinline__ void dem_clump_step_one(const DemParams& P, int phase, int c) {
    const DemClumpGrains grains{P, c};
    clump_step_one(grains, phase, c);
}
