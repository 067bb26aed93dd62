// The rigid bodies (clumps, engine/bonds.py Clumps) on the GPU, written once for every GPU path: one clump
// moved as one body and its members set from it, as engine/backends/cpu_kernels_bodies.py clump_step moves
// each clump, in double (one thread per clump, its members in their fixed order, so no atomics). The
// members' forces come from their stored accelerations (what the update left: F/m + g + fields, τ/I);
// the body integrates its centre X, velocity V, world angular momentum L (so a free body keeps L exactly)
// with Ω = R I_b⁻¹ Rᵀ L, and its orientation q turned by Ω. phase: 0 sums only (Verlet's priming), 1 an
// Euler step, 2 Verlet's first half (with the stored sums), 3 Verlet's second half (with the new sums).
// One source, two languages:
//   CUDA C++ — kernels/dem_integrate.cuh includes it (dem_clump_step_one: the grid and OptiX backends),
//     its grains the DemParams' slots (scripts/check_law_ptx.py: the same PTX as before it moved here);
//   Slang — kernels/rt_clumps.slang includes it (the rt backend), its grains the global buffers.
// The differences are the macros below and the accessor of the grains and the clump's data
// (CLUMP_GENERIC: a C++ template or a Slang generic over it; IClumpGrains lists what it gives). Rows of
// doubles (the clump's body row, kernels/clump_layout.h DEM_CLUMP_*; its I_b⁻¹; a member's offset) are
// CLUMP_ROW: a pointer in CUDA, as the code always read them, and in Slang a ClumpRow whose subscript
// reads (and for the body, writes) the buffer. CLUMP_F64 marks the one literal float32 cannot hold (Slang
// reads an unsuffixed literal as float). In CUDA nothing here may be regrouped: each value is loaded where
// the code always loaded it, and a change must leave the kernels' PTX as it was. Slang makes no such
// promise (SPIR-V drivers may contract multiply-adds): tests/engine/test_rt_clumps.py holds the rt backend
// to the CPU. Included, not compiled on its own.
#pragma once

#if defined(__SLANG__)
#define CLUMP_LAW_HD [ForceInline]
#define CLUMP_GENERIC __generic<Grains : IClumpGrains>
#define CLUMP_MATRIX_IN(name) double name[9]
#define CLUMP_MATRIX_OUT(name) out double name[9]
#define CLUMP_VECTOR_OUT(name) out double name[3]
#define CLUMP_ROW(name) ClumpRow name
#define CLUMP_CONST_ROW(name) ClumpRow name
#define CLUMP_FLOAT4_ZERO float4(0.0f)
#define CLUMP_F64(x) x##l  // a double literal (Slang's unsuffixed ones are float)
// DEM_CLUMP_* (CUDA has them through dem_params.h).
#include "clump_layout.h"

uniform StructuredBuffer<double> g_clump_offset;       // (n, 3) member offset in the body frame [m]
uniform StructuredBuffer<double> g_clump_inertia_inv;  // (C, 9) I_b⁻¹, body frame, row-major [1/(kg m²)]
uniform RWStructuredBuffer<double> g_clump_body;       // (C, DEM_CLUMP_BODY) body rows (kernels/dem_params.h)

/// Which buffer a ClumpRow reads.
enum ClumpTable { Offset, InertiaInv, Body };

/// A row of one of the buffers above: row[k] reads (and, for a body row, writes) entry base + k, as a
/// pointer does in CUDA.
struct ClumpRow {
    ClumpTable table;
    int base;
    __init(ClumpTable t, int first) { table = t; base = first; }
    __subscript(int k)->double {
        get {
            if (table == ClumpTable.Offset) return g_clump_offset[base + k];
            if (table == ClumpTable.InertiaInv) return g_clump_inertia_inv[base + k];
            return g_clump_body[base + k];
        }
        set { g_clump_body[base + k] = newValue; }
    }
}

/// The grains and the clump's static data, as clump_step_one reads and writes them (module comment).
interface IClumpGrains {
    ClumpRow body();                   // the clump's body row
    double mass();                     // [kg]
    ClumpRow inertia_inv();            // I_b⁻¹ row-major
    int start(int clump);              // first member entry of the clump
    int member(int k);                 // grain of member entry k
    int slot(int grain);               // where that grain is stored
    ClumpRow offset(int grain);        // its offset in the body frame [m]
    bool rotation();                   // whether the grains rotate (ω, q, α kept)
    float4 position(int slot);         // xyz centre [m], w radius [m]
    float4 velocity(int slot);         // xyz [m/s], w mass [kg]
    float4 acceleration(int slot);     // F/m + g + fields [m/s²]
    float4 angular_acceleration(int slot);  // τ/I [rad/s²]
    float4 omega(int slot);            // ω [rad/s]
    void set_position(int slot, double x, double y, double z, float w);  // world centre [m]
    void set_orientation(int slot, double q0, double q1, double q2, double q3);
    void set_velocity(int slot, double x, double y, double z, float w);
    void set_omega(int slot, double x, double y, double z, float w);
    double dt();                       // [s]
}
#else
#define CLUMP_LAW_HD __device__ __forceinline__
#define CLUMP_GENERIC template <typename Grains>
#define CLUMP_MATRIX_IN(name) const double* name
#define CLUMP_MATRIX_OUT(name) double* name
#define CLUMP_VECTOR_OUT(name) double* name
#define CLUMP_ROW(name) double* name
#define CLUMP_CONST_ROW(name) const double* name
#define CLUMP_FLOAT4_ZERO make_float4(0.0f, 0.0f, 0.0f, 0.0f)
#define CLUMP_F64(x) x
#endif

// Rotation matrix (row-major 3×3) of the unit quaternion (w, x, y, z) q[0..3].
CLUMP_LAW_HD void clump_rotation_matrix(CLUMP_CONST_ROW(q), int first, CLUMP_MATRIX_OUT(m)) {
    const double q0 = q[first], q1 = q[first + 1], q2 = q[first + 2], q3 = q[first + 3];
    m[0] = 1.0 - 2.0 * (q2 * q2 + q3 * q3);
    m[1] = 2.0 * (q1 * q2 - q0 * q3);
    m[2] = 2.0 * (q1 * q3 + q0 * q2);
    m[3] = 2.0 * (q1 * q2 + q0 * q3);
    m[4] = 1.0 - 2.0 * (q1 * q1 + q3 * q3);
    m[5] = 2.0 * (q2 * q3 - q0 * q1);
    m[6] = 2.0 * (q1 * q3 - q0 * q2);
    m[7] = 2.0 * (q2 * q3 + q0 * q1);
    m[8] = 1.0 - 2.0 * (q1 * q1 + q2 * q2);
}

// Ω = R I_b⁻¹ Rᵀ L (world frame), L = l[first .. first + 3).
CLUMP_LAW_HD void clump_omega(CLUMP_MATRIX_IN(rot), CLUMP_CONST_ROW(inv), CLUMP_CONST_ROW(l), int first,
                              CLUMP_VECTOR_OUT(w)) {
    const double bx = rot[0] * l[first] + rot[3] * l[first + 1] + rot[6] * l[first + 2];
    const double by = rot[1] * l[first] + rot[4] * l[first + 1] + rot[7] * l[first + 2];
    const double bz = rot[2] * l[first] + rot[5] * l[first + 1] + rot[8] * l[first + 2];
    const double wx = inv[0] * bx + inv[1] * by + inv[2] * bz;
    const double wy = inv[3] * bx + inv[4] * by + inv[5] * bz;
    const double wz = inv[6] * bx + inv[7] * by + inv[8] * bz;
    w[0] = rot[0] * wx + rot[1] * wy + rot[2] * wz;
    w[1] = rot[3] * wx + rot[4] * wy + rot[5] * wz;
    w[2] = rot[6] * wx + rot[7] * wy + rot[8] * wz;
}

// Clump c moved as one body in `phase` (above) and its members set from it.
CLUMP_GENERIC CLUMP_LAW_HD void clump_step_one(Grains g, int phase, int c) {
    CLUMP_ROW(body) = g.body();
    double rot[9];
    clump_rotation_matrix(body, DEM_CLUMP_ORIENTATION, rot);
    const int first = g.start(c), last = g.start(c + 1);
    if (phase != 2) {
        double f[3] = {0.0, 0.0, 0.0}, t[3] = {0.0, 0.0, 0.0};
        for (int k = first; k < last; ++k) {
            const int model = g.member(k);
            const int slot = g.slot(model);
            CLUMP_CONST_ROW(o) = g.offset(model);
            const double m = (double)g.velocity(slot).w;
            const double px = rot[0] * o[0] + rot[1] * o[1] + rot[2] * o[2];
            const double py = rot[3] * o[0] + rot[4] * o[1] + rot[5] * o[2];
            const double pz = rot[6] * o[0] + rot[7] * o[1] + rot[8] * o[2];
            const float4 a = g.acceleration(slot);
            const double gx = m * (double)a.x, gy = m * (double)a.y, gz = m * (double)a.z;
            const double r = (double)g.position(slot).w;
            const double inertia = CLUMP_F64(0.4) * m * (r * r);
            float4 al = CLUMP_FLOAT4_ZERO;
            if (g.rotation()) al = g.angular_acceleration(slot);
            f[0] += gx;
            f[1] += gy;
            f[2] += gz;
            t[0] += py * gz - pz * gy + inertia * (double)al.x;
            t[1] += pz * gx - px * gz + inertia * (double)al.y;
            t[2] += px * gy - py * gx + inertia * (double)al.z;
        }
        for (int a = 0; a < 3; ++a) {
            body[DEM_CLUMP_FORCE + a] = f[a];
            body[DEM_CLUMP_TORQUE + a] = t[a];
        }
    }
    if (phase == 0) return;
    const double dt = g.dt();
    const double h = phase == 1 ? dt : 0.5 * dt;
    for (int a = 0; a < 3; ++a) {
        body[DEM_CLUMP_VELOCITY + a] += h * body[DEM_CLUMP_FORCE + a] / g.mass();
        body[DEM_CLUMP_MOMENTUM + a] += h * body[DEM_CLUMP_TORQUE + a];
    }
    CLUMP_CONST_ROW(inv) = g.inertia_inv();
    double w[3];
    if (phase != 3) {
        for (int a = 0; a < 3; ++a) body[DEM_CLUMP_CENTRE + a] += dt * body[DEM_CLUMP_VELOCITY + a];
        clump_omega(rot, inv, body, DEM_CLUMP_MOMENTUM, w);
        const double q0 = body[DEM_CLUMP_ORIENTATION], q1 = body[DEM_CLUMP_ORIENTATION + 1];
        const double q2 = body[DEM_CLUMP_ORIENTATION + 2], q3 = body[DEM_CLUMP_ORIENTATION + 3];
        const double n0 = q0 - 0.5 * dt * (w[0] * q1 + w[1] * q2 + w[2] * q3);
        const double n1 = q1 + 0.5 * dt * (w[0] * q0 + w[1] * q3 - w[2] * q2);
        const double n2 = q2 + 0.5 * dt * (w[1] * q0 + w[2] * q1 - w[0] * q3);
        const double n3 = q3 + 0.5 * dt * (w[2] * q0 + w[0] * q2 - w[1] * q1);
        const double norm = sqrt(n0 * n0 + n1 * n1 + n2 * n2 + n3 * n3);
        body[DEM_CLUMP_ORIENTATION] = n0 / norm;
        body[DEM_CLUMP_ORIENTATION + 1] = n1 / norm;
        body[DEM_CLUMP_ORIENTATION + 2] = n2 / norm;
        body[DEM_CLUMP_ORIENTATION + 3] = n3 / norm;
        clump_rotation_matrix(body, DEM_CLUMP_ORIENTATION, rot);
    }
    clump_omega(rot, inv, body, DEM_CLUMP_MOMENTUM, w);
    for (int k = first; k < last; ++k) {
        const int model = g.member(k);
        const int slot = g.slot(model);
        CLUMP_CONST_ROW(o) = g.offset(model);
        const double px = rot[0] * o[0] + rot[1] * o[1] + rot[2] * o[2];
        const double py = rot[3] * o[0] + rot[4] * o[1] + rot[5] * o[2];
        const double pz = rot[6] * o[0] + rot[7] * o[1] + rot[8] * o[2];
        if (phase != 3) {
            const float4 p = g.position(slot);
            g.set_position(slot, body[DEM_CLUMP_CENTRE] + px, body[DEM_CLUMP_CENTRE + 1] + py,
                           body[DEM_CLUMP_CENTRE + 2] + pz, p.w);
            if (g.rotation())
                g.set_orientation(slot, body[DEM_CLUMP_ORIENTATION], body[DEM_CLUMP_ORIENTATION + 1],
                                  body[DEM_CLUMP_ORIENTATION + 2], body[DEM_CLUMP_ORIENTATION + 3]);
        }
        const float4 v = g.velocity(slot);
        g.set_velocity(slot, body[DEM_CLUMP_VELOCITY] + w[1] * pz - w[2] * py,
                       body[DEM_CLUMP_VELOCITY + 1] + w[2] * px - w[0] * pz,
                       body[DEM_CLUMP_VELOCITY + 2] + w[0] * py - w[1] * px, v.w);
        if (g.rotation()) {
            const float4 om = g.omega(slot);
            g.set_omega(slot, w[0], w[1], w[2], om.w);
        }
    }
}
