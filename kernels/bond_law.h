// The glue bond law of engine/bonds.py on the GPU (the parallel bond of Potyondy & Cundall 2004, without
// bending moment), written once for every GPU path, as engine/backends/cpu_kernels_bodies.bond_forces
// evaluates one bond:
//   force on i = −k_bn A_b (d − d0) n − 2β sqrt(m_eff k_bn A_b) v_n n − k_bt A_b ξ_b,  k_bt = 2/7 k_bn,
//   ξ_b ← ξ_b − (ξ_b·n) n + v_t dt   (v_t the slip of the contact point, the grains' spin included),
//   torque on i = −R_i n × F_t, on j = −R_j n × F_t (R = r − δ/2, δ = r_i + r_j − d);
// the bond breaks, for good, when its tensile stress k_bn (d − d0) or its shear stress k_bt |ξ_b| exceeds
// the glue strength σ_b, and then exerts nothing.
// One source, two languages, through the macros of kernels/contact_law.h (included first):
//   CUDA C++ — kernels/dem_math.cuh includes it (dem_bond_forces: the grid and OptiX kernels), in double
//     from the float32 state, as it always evaluated bonds (scripts/check_law_ptx.py: the same PTX);
//   Slang — kernels/rt_dem_step.slang includes it (the rt backend), in float32 (Metal has no float64).
// Each grain of a bond evaluates it from the same inputs in the pair's own order (i < j), so both threads
// get the same bits and opposite forces, without atomics. Nothing here may be regrouped: the CUDA
// instance must keep the operations, in the order, that its PTX had. Included, not compiled on its own.
#pragma once

#include "contact_law.h"

// What differs between the languages. BOND_GENERIC: the precision and the accessor of the bond's data
// (below) as a C++ template or a Slang generic. BOND_PROPS: the bond's rest length d0 [m], area A_b [m²],
// k_bn [N/m³] and σ_b [Pa], indexed 0–3: a pointer to its double row in CUDA, a float4 in Slang.
// BOND_TO_FLOAT: a value of the precision rounded to float32, for the float32 sums.
// The accessor reads what the law needs only where it needs it, so that the CUDA instance loads each
// value at the point its PTX always did: props() (BOND_PROPS), tangential_ratio() (k_bt / k_bn),
// rotation() (whether the grains' spin enters the slip) and omega_i(), omega_j() (xyz: the two grains'
// angular velocities [rad/s]).
#if defined(__SLANG__)
#define BOND_GENERIC __generic<Real : __BuiltinFloatingPointType, Grains : IBondGrains>
#define BOND_PROPS float4
#define BOND_TO_FLOAT(x) __realCast<float>(x)
interface IBondGrains {
    float4 props();
    float tangential_ratio();
    bool rotation();
    float4 omega_i();
    float4 omega_j();
}
#else
#define BOND_GENERIC template <typename Real, typename Grains>
#define BOND_PROPS const double*
#define BOND_TO_FLOAT(x) ((float)(x))
#endif

// One bond, evaluated from grain i's side (i the pair's first grain).
CONTACT_GENERIC
struct BondEvaluation {
    Real nx, ny, nz;             // unit normal from j to i (+x for coincident centres)
    Real arm_i, arm_j;           // R_i, R_j [m]
    Real m_eff;                  // effective mass [kg]
    Real k_n;                    // k_bn A_b [N/m]
    Real stretch;                // d − d0 [m]
    Real v_n;                    // (v_i − v_j)·n [m/s]
    ContactVector<Real> shear;   // ξ_b after this step [m], as seen from i
    ContactVector<Real> ft;      // tangential force on i, −k_bt A_b ξ_b [N]
};

// Evaluates one intact bond into e: its geometry, and its shear spring turned into the current tangent
// plane and stretched by the slip over dt [s]. pi, pj: xyz = centres [m], w = radii [m]; vi, vj: xyz =
// velocities [m/s], w = masses [kg]; s: xyz = ξ_b before the step [m], seen from i. Returns false when
// the bond is stressed beyond σ_b: it breaks now and exerts nothing (e is then not to be used).
BOND_GENERIC
CONTACT_LAW_HD bool bond_holds(CONTACT_INOUT(BondEvaluation<Real>) e, CONTACT_IN(Grains) g, CONTACT_IN(float4) pi,
                                CONTACT_IN(float4) pj, CONTACT_IN(float4) vi, CONTACT_IN(float4) vj,
                                CONTACT_IN(float4) s, Real dt) {
    const Real dx = Real(pi.x) - Real(pj.x), dy = Real(pi.y) - Real(pj.y), dz = Real(pi.z) - Real(pj.z);
    const Real dist = contact_sqrt(dx * dx + dy * dy + dz * dz);
    e.nx = Real(1);
    e.ny = Real(0);
    e.nz = Real(0);
    if (dist > Real(0)) {
        e.nx = dx / dist;
        e.ny = dy / dist;
        e.nz = dz / dist;
    }
    BOND_PROPS props = g.props();
    const Real ri = Real(pi.w), rj = Real(pj.w);
    const Real overlap = ri + rj - dist;
    e.arm_i = ri - Real(0.5) * overlap;
    e.arm_j = rj - Real(0.5) * overlap;
    const Real mi = Real(vi.w), mj = Real(vj.w);
    e.m_eff = mi * mj / (mi + mj);
    e.k_n = Real(props[2]) * Real(props[1]);
    const Real k_t = Real(g.tangential_ratio()) * e.k_n;
    e.stretch = dist - Real(props[0]);
    const Real dvx = Real(vi.x) - Real(vj.x), dvy = Real(vi.y) - Real(vj.y), dvz = Real(vi.z) - Real(vj.z);
    e.v_n = dvx * e.nx + dvy * e.ny + dvz * e.nz;
    Real wix = Real(0), wiy = Real(0), wiz = Real(0), wjx = Real(0), wjy = Real(0), wjz = Real(0);
    if (g.rotation()) {
        const float4 wi = g.omega_i(), wj = g.omega_j();
        wix = Real(wi.x);
        wiy = Real(wi.y);
        wiz = Real(wi.z);
        wjx = Real(wj.x);
        wjy = Real(wj.y);
        wjz = Real(wj.z);
    }
    const Real ax = e.arm_i * wix + e.arm_j * wjx, ay = e.arm_i * wiy + e.arm_j * wjy,
               az = e.arm_i * wiz + e.arm_j * wjz;
    const Real cvx = dvx - (ay * e.nz - az * e.ny), cvy = dvy - (az * e.nx - ax * e.nz),
               cvz = dvz - (ax * e.ny - ay * e.nx);
    const Real c_n = cvx * e.nx + cvy * e.ny + cvz * e.nz;
    const Real tx = cvx - c_n * e.nx, ty = cvy - c_n * e.ny, tz = cvz - c_n * e.nz;
    Real sx = Real(s.x), sy = Real(s.y), sz = Real(s.z);
    const Real along = sx * e.nx + sy * e.ny + sz * e.nz;
    sx = sx - along * e.nx + tx * dt;
    sy = sy - along * e.ny + ty * dt;
    sz = sz - along * e.nz + tz * dt;
    const Real ftx = -k_t * sx, fty = -k_t * sy, ftz = -k_t * sz;
    const Real shear_stress = contact_sqrt(ftx * ftx + fty * fty + ftz * ftz) / Real(props[1]);
    e.shear = contact_vector(sx, sy, sz);
    e.ft = contact_vector(ftx, fty, ftz);
    return !(Real(props[2]) * e.stretch > Real(props[3]) || shear_stress > Real(props[3]));
}

// Adds the force of an intact bond on its grain i (first) or j [N] to the float32 sum f, for the damping
// ratio β of the pair's materials: the same bits, negated, for the two grains.
CONTACT_GENERIC
CONTACT_LAW_HD void bond_add_force(CONTACT_INOUT(float3) f, CONTACT_IN(BondEvaluation<Real>) e, Real beta, bool first) {
    const Real f_n = -e.k_n * e.stretch - Real(2) * beta * contact_sqrt(e.m_eff * e.k_n) * e.v_n;
    const Real sign = first ? Real(1) : Real(-1);
    f.x += BOND_TO_FLOAT(sign * (f_n * e.nx + e.ft.x));
    f.y += BOND_TO_FLOAT(sign * (f_n * e.ny + e.ft.y));
    f.z += BOND_TO_FLOAT(sign * (f_n * e.nz + e.ft.z));
}

// Adds the torque of an intact bond on its grain i (first) or j [N m] to the float32 sum t: −R n × F_t.
CONTACT_GENERIC
CONTACT_LAW_HD void bond_add_torque(CONTACT_INOUT(float3) t, CONTACT_IN(BondEvaluation<Real>) e, bool first) {
    const Real arm = first ? e.arm_i : e.arm_j;
    t.x -= BOND_TO_FLOAT(arm * (e.ny * e.ft.z - e.nz * e.ft.y));
    t.y -= BOND_TO_FLOAT(arm * (e.nz * e.ft.x - e.nx * e.ft.z));
    t.z -= BOND_TO_FLOAT(arm * (e.nx * e.ft.y - e.ny * e.ft.x));
}
