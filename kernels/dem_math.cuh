// Device functions shared by kernels/dem_common.cu, kernels/grid.cu and kernels/optix_dem.cu: the
// pair test and the grain pairs' contact forces (the float32 instances of kernels/contact_law.h), the
// force fields (kernels/field_law.h, shared with the rt backend's Slang), and the cell/hash/Morton
// helpers. Included, not compiled on its own.
#pragma once
#include "bond_law.h"
#include "contact_law.h"
#include "dem_params.h"
#include "field_law.h"

#define DEM_INT_MAX 2147483647

// The pair test in double, from float32 inputs, so that every backend agrees with the CPU reference
// (which tests in float64) even for spheres that touch exactly (lattices).
struct DemPair {
    double dx, dy, dz;  // x_i − x_j [m]
    double d2;          // |x_i − x_j|² [m²]
    double reach;       // r_i + r_j [m]
};

__device__ __forceinline__ bool dem_touch(const float4 a, const float4 b, DemPair& p) {
    p.dx = (double)a.x - (double)b.x;
    p.dy = (double)a.y - (double)b.y;
    p.dz = (double)a.z - (double)b.z;
    p.reach = (double)a.w + (double)b.w;
    // Explicit roundings: no fused multiply-add, so the sum is rounded exactly as numpy/numba do it.
    p.d2 = __dadd_rn(__dadd_rn(__dmul_rn(p.dx, p.dx), __dmul_rn(p.dy, p.dy)), __dmul_rn(p.dz, p.dz));
    return p.d2 <= __dmul_rn(p.reach, p.reach);
}

// SJKR contact area [m²] of two spheres whose centres are d apart (d2 = d², overlap δ = r_i + r_j − d),
// from the float32 radii, as engine.contact_law.contact_area and the CPU kernels:
// A = π/4 δ (d + r_i − r_j)(d − r_i + r_j)(d + r_i + r_j) / d², 0 for coincident centres. Grouped as
// ((δ·e)·(b·c)) so that swapping i and j (b and c) gives the same bits.
__device__ __forceinline__ double dem_contact_area(double ri, double rj, double d2, double overlap) {
    const double pi = 3.14159265358979323846;
    if (!(d2 > 0.0)) return 0.0;
    const double d = sqrt(d2);
    const double b = d + ri - rj, c = d - ri + rj, e = d + ri + rj;
    return 0.25 * pi * ((overlap * e) * (b * c)) / d2;
}

// SJKR contact area of a sphere of radius r pressed δ into a plane [m²]: π (2 r δ − δ²).
__device__ __forceinline__ double dem_wall_contact_area(double r, double overlap) {
    const double pi = 3.14159265358979323846;
    return pi * (2.0 * r * overlap - overlap * overlap);
}

// True when a contact needs the rotating law (issue 16, ContactLaw::Full) rather than the paper's.
__device__ __forceinline__ bool dem_rotating_law(const DemParams& P) {
    return P.rotation || P.rolling_model || P.cohesion_model || P.bond_count > 0 || P.clump_count > 0;
}

// True when model indices a and b belong to one rigid clump: they never touch.
__device__ __forceinline__ bool dem_same_clump(const DemParams& P, int a, int b) {
    return P.clump_count > 0 && P.clump_of[a] >= 0 && P.clump_of[a] == P.clump_of[b];
}

// Angular velocity of slot i [rad/s], zero without rotation.
__device__ __forceinline__ float3 dem_omega(const DemParams& P, int i) {
    if (!P.rotation) return make_float3(0.0f, 0.0f, 0.0f);
    const float4 w = P.omega[i];
    return make_float3(w.x, w.y, w.z);
}

// Force on particle i from touching particle j under the rotating law (contact_force, ContactLaw::Full,
// float32), with the same normal and material look-up as dem_pair_force; arms receives what the torques
// need and r the contact's arms. rolling is used only when the pair has rolling friction (else left
// untouched, zero).
__device__ __forceinline__ float3 dem_pair_force_rotating(const DemParams& P, const DemPair& p, int i, int j,
                                                          const float4 vi, const float4 vj, unsigned int info_i,
                                                          unsigned int info_j, float ri, float rj, float tie_sign,
                                                          float3* spring, float3* rolling, ContactRotation<float>& r,
                                                          ContactTorqueArms<float>& arms) {
    const double dist = sqrt(p.d2);
    float nx = tie_sign, ny = 0.0f, nz = 0.0f;
    if (dist > 0.0) {
        nx = (float)(p.dx / dist);
        ny = (float)(p.dy / dist);
        nz = (float)(p.dz / dist);
    }
    const int mi = (int)(info_i >> DEM_INFO_MATERIAL_SHIFT), mj = (int)(info_j >> DEM_INFO_MATERIAL_SHIFT);
    const int k = mi * P.material_count + mj;
    const float m_eff = vi.w * vj.w / (vi.w + vj.w);
    const double overlap = p.reach - dist;
    r.arm_i = (float)((double)ri - 0.5 * overlap);
    r.arm_j = (float)((double)rj - 0.5 * overlap);
    r.w_i = dem_omega(P, i);
    r.w_j = dem_omega(P, j);
    r.r_eff = ri * rj / (ri + rj);
    r.mu_r = P.rolling_model ? P.rolling_mu[k] : 0.0f;
    r.cohesion = 0.0f;
    if (P.cohesion_model && P.cohesion[k] > 0.0f) {
        r.cohesion = (float)((double)P.cohesion[k] * dem_contact_area((double)ri, (double)rj, p.d2, overlap));
    }
    return contact_force<float, ContactLaw::Full>(nx, ny, nz, (float)overlap, vi.x - vj.x, vi.y - vj.y, vi.z - vj.z,
                                                  m_eff, P.stiffness, P.beta[k], P.mu[k], spring, *P.history_dt,
                                                  P.tangential_ratio, r, r.mu_r > 0.0f ? rolling : nullptr, arms);
}

// Force on particle i from touching particle j (p from dem_touch) under the paper's law (contact_force,
// ContactLaw::Paper, float32). Exactly antisymmetric: swapping i and j negates every input that carries
// a direction (the spring too), and IEEE negation is exact.
// Coincident centres have no normal: ±x, with tie_sign = +1 on one side of the pair and −1 on the other.
__device__ __forceinline__ float3 dem_pair_force(const DemParams& P, const DemPair& p,
                                                 const float4 vi, const float4 vj,
                                                 unsigned int info_i, unsigned int info_j, float tie_sign,
                                                 float3* spring = nullptr) {
    const double dist = sqrt(p.d2);
    float nx = tie_sign, ny = 0.0f, nz = 0.0f;
    if (dist > 0.0) {
        nx = (float)(p.dx / dist);
        ny = (float)(p.dy / dist);
        nz = (float)(p.dz / dist);
    }
    const int mi = (int)(info_i >> DEM_INFO_MATERIAL_SHIFT), mj = (int)(info_j >> DEM_INFO_MATERIAL_SHIFT);
    const int k = mi * P.material_count + mj;
    const float m_eff = vi.w * vj.w / (vi.w + vj.w);
    return contact_force_paper<float>(nx, ny, nz, (float)(p.reach - dist), vi.x - vj.x, vi.y - vj.y, vi.z - vj.z,
                                      m_eff, P.stiffness, P.beta[k], P.mu[k], spring, P.dt, P.tangential_ratio);
}

// The particle of a touching pair that owns it: the smaller sphere, the smaller model index on ties
// (model indices, not slots, so that reordering never changes it). The owner keeps the pair's spring
// (both backends) and resolves the pair (OptiX). A touching pair satisfies |c_i − c_j| ≤ r_i + r_j ≤
// 2·max(r_i, r_j), so the owner's centre lies in the partner's OptiX proxy.
__device__ __forceinline__ bool dem_owns(int model_i, float ri, int model_j, float rj) {
    return ri < rj || (ri == rj && model_i < model_j);
}

// Row of springs of model index `model` in the half `parity` of DemParams::springs.
__device__ __forceinline__ float4* dem_spring_row(const DemParams& P, int parity, int model) {
    return P.springs + ((size_t)parity * (size_t)P.particle_count + (size_t)model) * DEM_SPRING_SLOTS;
}

// The spring kept for `partner` in `row`, zero if none (a new contact).
__device__ __forceinline__ float3 dem_spring_find(const float4* row, int partner) {
    for (int k = 0; k < DEM_SPRING_SLOTS; ++k) {
        const float4 e = row[k];
        const int p = __float_as_int(e.w);
        if (p < 0) break;
        if (p == partner) return make_float3(e.x, e.y, e.z);
    }
    return make_float3(0.0f, 0.0f, 0.0f);
}

// Writes one owner's row of springs for the next step.
struct DemSpringWriter {
    float4* row;
    int count;
};

__device__ __forceinline__ void dem_spring_keep(const DemParams& P, DemSpringWriter& w, int partner, float3 s) {
    if (w.count < DEM_SPRING_SLOTS) {
        w.row[w.count++] = make_float4(s.x, s.y, s.z, __int_as_float(partner));
    } else {
        atomicAdd(P.diag + DEM_DIAG_SPRING_OVERFLOW, 1);
    }
}

__device__ __forceinline__ void dem_spring_close(DemSpringWriter& w) {
    if (w.count < DEM_SPRING_SLOTS) w.row[w.count] = make_float4(0.0f, 0.0f, 0.0f, __int_as_float(-1));
}

// The spring of the touching pair (slot i, slot j) as seen from i, from the springs the last step
// kept: the owner's row holds it as seen from the owner.
__device__ __forceinline__ float3 dem_pair_spring(const DemParams& P, int parity, int model_i, int model_j,
                                                  bool i_owns) {
    if (i_owns) return dem_spring_find(dem_spring_row(P, parity, model_i), model_j);
    const float3 s = dem_spring_find(dem_spring_row(P, parity, model_j), model_i);
    return make_float3(-s.x, -s.y, -s.z);
}

// Rows of pair history are kept (springs and, beside them, rolling histories) when the tangential
// springs or the rolling resistance need them.
__device__ __forceinline__ bool dem_pair_rows(const DemParams& P) {
    return P.spring_model || P.rolling_model;
}

// Index in `row` of the entry kept for `partner`, −1 if none (a new contact).
__device__ __forceinline__ int dem_spring_index(const float4* row, int partner) {
    for (int k = 0; k < DEM_SPRING_SLOTS; ++k) {
        const int p = __float_as_int(row[k].w);
        if (p < 0) break;
        if (p == partner) return k;
    }
    return -1;
}

// Rolling history beside the spring row of model index `model` in half `parity` (DemParams::rolling).
__device__ __forceinline__ float4* dem_rolling_row(const DemParams& P, int parity, int model) {
    return P.rolling + ((size_t)parity * (size_t)P.particle_count + (size_t)model) * DEM_SPRING_SLOTS;
}

// The spring (as seen from i) and the rolling history of the touching pair (model_i, model_j) that the
// last step kept in the owner's rows; zero for a new contact.
__device__ __forceinline__ void dem_pair_history(const DemParams& P, int parity, int model_i, int model_j,
                                                 bool i_owns, float3& spring, float3& rolling) {
    const int owner = i_owns ? model_i : model_j;
    const int k = dem_spring_index(dem_spring_row(P, parity, owner), i_owns ? model_j : model_i);
    spring = make_float3(0.0f, 0.0f, 0.0f);
    rolling = make_float3(0.0f, 0.0f, 0.0f);
    if (k < 0) return;
    const float4 s = dem_spring_row(P, parity, owner)[k];
    spring = i_owns ? make_float3(s.x, s.y, s.z) : make_float3(-s.x, -s.y, -s.z);
    if (P.rolling_model) {
        const float4 q = dem_rolling_row(P, parity, owner)[k];
        rolling = make_float3(q.x, q.y, q.z);
    }
}

// Writes one owner's rows (spring and rolling history) for the next step.
struct DemHistoryWriter {
    float4* row;
    float4* rolling_row;  // null without rolling resistance
    int count;
};

__device__ __forceinline__ DemHistoryWriter dem_history_writer(const DemParams& P, int parity, int model) {
    DemHistoryWriter w = {nullptr, nullptr, 0};
    if (!dem_pair_rows(P)) return w;
    w.row = dem_spring_row(P, parity, model);
    if (P.rolling_model) w.rolling_row = dem_rolling_row(P, parity, model);
    return w;
}

__device__ __forceinline__ void dem_history_keep(const DemParams& P, DemHistoryWriter& w, int partner, float3 s,
                                                 float3 rolling) {
    if (w.count < DEM_SPRING_SLOTS) {
        if (w.rolling_row != nullptr) w.rolling_row[w.count] = make_float4(rolling.x, rolling.y, rolling.z, 0.0f);
        w.row[w.count++] = make_float4(s.x, s.y, s.z, __int_as_float(partner));
    } else {
        atomicAdd(P.diag + DEM_DIAG_SPRING_OVERFLOW, 1);
    }
}

__device__ __forceinline__ void dem_history_close(DemHistoryWriter& w) {
    if (w.row != nullptr && w.count < DEM_SPRING_SLOTS) {
        w.row[w.count] = make_float4(0.0f, 0.0f, 0.0f, __int_as_float(-1));
    }
}

// True when model indices a and b are held by a glue bond that was intact at the start of the step
// (half `parity` of DemParams::bond_state): their contact is skipped, the bond acts instead.
__device__ __forceinline__ bool dem_bonded(const DemParams& P, int parity, int a, int b) {
    if (P.bond_count == 0) return false;
    for (int q = P.bond_start[a]; q < P.bond_start[a + 1]; ++q) {
        if (P.bond_other[q] == b) return P.bond_state[(size_t)parity * P.bond_count + P.bond_index[q]].w != 0.0f;
    }
    return false;
}

// What kernels/bond_law.h reads of bond b and its two grains (slots si, sj), each where the law needs it.
struct DemBondGrains {
    const DemParams& P;
    int si, sj, b;
    __device__ __forceinline__ const double* props() const { return P.bond_props + 4 * (size_t)b; }
    __device__ __forceinline__ float tangential_ratio() const { return P.tangential_ratio; }
    __device__ __forceinline__ bool rotation() const { return P.rotation; }
    __device__ __forceinline__ float4 omega_i() const { return P.omega[si]; }
    __device__ __forceinline__ float4 omega_j() const { return P.omega[sj]; }
};

// Force [N] and torque [N m] that the glue bonds of the grain with model index `model` put on it (added
// to f and t): the bond law of kernels/bond_law.h in double, as engine/backends/cpu_kernels.bond_forces
// evaluates each bond (the spin and the torques with rotating grains only). Both grains of a bond evaluate
// it from the same inputs in the pair's own order (the same bits, opposite forces); grain i of the pair
// writes its state for the next step (half parity ^ 1), inactive grains included, so every bond is written
// once per step.
__device__ __forceinline__ void dem_bond_forces(const DemParams& P, int parity, int model, float3& f, float3& t) {
    if (P.bond_count == 0) return;
    const double dt = (double)*P.history_dt;
    for (int q = P.bond_start[model]; q < P.bond_start[model + 1]; ++q) {
        const int b = P.bond_index[q];
        const int2 pair = P.bond_pairs[b];
        const bool first = pair.x == model;
        const float4 s = P.bond_state[(size_t)parity * P.bond_count + b];
        float4* out = P.bond_state + (size_t)(parity ^ 1) * P.bond_count + b;
        const int si = P.model_to_slot[pair.x], sj = P.model_to_slot[pair.y];
        if (s.w == 0.0f || !(P.info[si] & DEM_INFO_ACTIVE) || !(P.info[sj] & DEM_INFO_ACTIVE)) {
            if (first) *out = s;
            continue;
        }
        const float4 pi = P.pos[si], pj = P.pos[sj], vi = P.vel[si], vj = P.vel[sj];
        const DemBondGrains grains = {P, si, sj, b};
        BondEvaluation<double> e;
        if (!bond_holds<double>(e, grains, pi, pj, vi, vj, s, dt)) {
            if (first) *out = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            continue;
        }
        if (first) *out = make_float4((float)e.shear.x, (float)e.shear.y, (float)e.shear.z, 1.0f);
        const int mat_i = (int)(P.info[si] >> DEM_INFO_MATERIAL_SHIFT), mat_j = (int)(P.info[sj] >> DEM_INFO_MATERIAL_SHIFT);
        bond_add_force<double>(f, e, (double)P.beta[mat_i * P.material_count + mat_j], first);
        if (P.rotation) bond_add_torque<double>(t, e, first);
    }
}

// Integer cell coordinate of x for cells of edge 1/inv_h; NaN and huge values are clamped so the
// conversion is defined.
__device__ __forceinline__ int dem_cell_coord(float x, float inv_h) {
    const float c = floorf(x * inv_h);
    return (int)fminf(fmaxf(c, -1.0e9f), 1.0e9f);
}

__device__ __forceinline__ int3 dem_cell(const float4 p, float inv_h) {
    return make_int3(dem_cell_coord(p.x, inv_h), dem_cell_coord(p.y, inv_h), dem_cell_coord(p.z, inv_h));
}

// Bucket of a cell: the grid folded onto a periodic block of 2^bits cells along each axis, z fastest.
// Unlike a scrambling hash this keeps neighbouring cells in neighbouring buckets, so the three cells
// along z around a particle are one contiguous run of the sorted slots.
__device__ __forceinline__ unsigned int dem_cell_bucket(int3 c, const DemParams& P) {
    const unsigned int mx = (1u << P.grid_bits_x) - 1u, my = (1u << P.grid_bits_y) - 1u;
    const unsigned int mz = (1u << P.grid_bits_z) - 1u;
    return (((((unsigned int)c.x & mx) << P.grid_bits_y) | ((unsigned int)c.y & my)) << P.grid_bits_z) |
           ((unsigned int)c.z & mz);
}

// Spread the low 10 bits of v so that two zero bits separate each (Morton interleave).
__device__ __forceinline__ unsigned int dem_spread_bits(unsigned int v) {
    v &= 0x3ffu;
    v = (v | (v << 16)) & 0x030000ffu;
    v = (v | (v << 8)) & 0x0300f00fu;
    v = (v | (v << 4)) & 0x030c30c3u;
    v = (v | (v << 2)) & 0x09249249u;
    return v;
}

// AABB of slot i's OptiX proxy (lo xyz, hi xyz) [m]: a cube of edge 4·r (twice the radius), grown by a
// relative and an absolute margin so float32 rounding of the box never loses a touching pair (the
// intersection program's exact test removes the extra candidates). Inactive slots get an inverted
// (empty) box.
__device__ __forceinline__ void dem_proxy_aabb(const DemParams& P, int i, float* box) {
    const float4 p = P.pos[i];
    if (!(P.info[i] & DEM_INFO_ACTIVE)) {
        box[0] = box[1] = box[2] = 1.0f;
        box[3] = box[4] = box[5] = -1.0f;
        return;
    }
    const float ax = fabsf(p.x), ay = fabsf(p.y), az = fabsf(p.z);
    const float slack = 2.0f * p.w * 1.0e-4f + 4.0f * 1.1920929e-7f * fmaxf(ax, fmaxf(ay, az));
    const float h = 2.0f * p.w + slack;
    box[0] = p.x - h;
    box[1] = p.y - h;
    box[2] = p.z - h;
    box[3] = p.x + h;
    box[4] = p.y + h;
    box[5] = p.z + h;
}
