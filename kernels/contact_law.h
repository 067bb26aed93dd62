// The contact law of engine/contact_law.py on the GPU, written once for every GPU path: the linear
// spring-dashpot with capped Coulomb friction, either in the paper's form or in the full form (rotation,
// rolling resistance, SJKR cohesion). One source, two languages:
//   CUDA C++ — kernels/dem_math.cuh, dem_integrate.cuh and collider_contacts.h include it (CuPy/NVRTC
//     kernels and the OptiX programs), and the host builds of tests/engine/native/ too;
//   Slang — kernels/rt_dem_step.slang and collider_contacts.h include it (the rt backend, slangpy).
// It is written in the subset the two languages share; the few differences are the macros below
// (CONTACT_GENERIC: a C++ template or a Slang generic over the precision; CONTACT_IN/INOUT: a reference
// or an in/inout parameter; CONTACT_CONSTEXPR: `if constexpr` or a plain `if` that Slang folds, the law
// being a generic value) and, for each language, its own vector constructor, square root, max(x, 0) and
// min. A history the caller may not keep (the tangential spring, the rolling history) is
// CONTACT_OPTIONAL: in CUDA a pointer, null for none, as the CUDA callers have always passed it (their
// `keep ? &history : nullptr` keeps the history in local memory, and their PTX with it); in Slang, which
// has no pointers, a flag has_<name> beside an inout value that the law leaves untouched when the flag
// is off. CONTACT_HAS, CONTACT_VALUE, CONTACT_PASS and CONTACT_NONE test, read, hand on and omit one.
// Two compile-time parameters pick an instance, folded by the compilers:
//   Real: float for grain pairs and the box walls (kernels/dem_math.cuh, dem_integrate.cuh; the Slang
//         kernel), double for mesh colliders (kernels/collider_contacts.h), as the CPU reference evaluates
//         those in float64;
//   Law:  ContactLaw::Paper or ContactLaw::Full (engine/backends/cpu_kernels_law: contact_law_paper,
//         contact_law_full).
// In CUDA, each instance does the operations, in the order, that the tests compare bit for bit with the
// CPU reference (host builds without fused multiply-adds): nothing here may be regrouped, and a change
// must leave the kernels' PTX as it was (scripts/check_law_ptx.py). The double instances compile with
// --fmad=false; the float32 ones with NVRTC's default contraction, so the shape of each expression also
// decides which multiply-adds the GPU fuses. Slang makes no such promise (SPIR-V drivers may contract and
// round sqrt and division within a few ulps): the rt tests (tests/engine/test_rt_backend.py,
// test_rt_rotation.py, test_rt_colliders.py, …) hold its instances to the CPU backend within float32
// rounding. Included, not compiled on its own.
#pragma once

#if defined(__SLANG__)
#define CONTACT_LAW_HD [ForceInline]
#define CONTACT_GENERIC __generic<Real : __BuiltinFloatingPointType>
#define CONTACT_GENERIC_LAW __generic<Real : __BuiltinFloatingPointType, let Law : ContactLaw>
#define CONTACT_IN(T) T
#define CONTACT_INOUT(T) inout T
#define CONTACT_OPTIONAL(T, name) bool has_##name, inout T name
#define CONTACT_HAS(name) has_##name
#define CONTACT_VALUE(name) name
#define CONTACT_PASS(name) has_##name, name
#define CONTACT_NONE(name) false, name
#define CONTACT_CONSTEXPR
#else
#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define CONTACT_LAW_HD __host__ __device__ __forceinline__
#else
#include <vector_functions.h>  // make_float3, make_double3 on the host
#include <cmath>
#define CONTACT_LAW_HD inline
#endif
#define CONTACT_GENERIC template <typename Real>
#define CONTACT_GENERIC_LAW template <typename Real, ContactLaw Law>
#define CONTACT_IN(T) const T&
#define CONTACT_INOUT(T) T&
#define CONTACT_OPTIONAL(T, name) T* name
#define CONTACT_HAS(name) (name != nullptr)
#define CONTACT_VALUE(name) (*name)
#define CONTACT_PASS(name) name
#define CONTACT_NONE(name) ((void)name, nullptr)  // names the stand-in Slang needs, so C++ sees it used
#define CONTACT_CONSTEXPR constexpr
#endif

// The two forms of the law. Paper: normal spring-dashpot, tangential capped dashpot or spring, no
// torques. Full: the tangential slip also carries the grains' spin, cohesion lowers the normal force,
// rolling resistance, and the torque arms come back.
enum class ContactLaw { Paper, Full };

#if defined(__SLANG__)
// Slang's 3-vector of each precision, and the square root, max(x, 0) and min of any.
typealias ContactVector<Real : __BuiltinFloatingPointType> = vector<Real, 3>;
CONTACT_GENERIC CONTACT_LAW_HD ContactVector<Real> contact_vector(Real x, Real y, Real z) {
    return ContactVector<Real>(x, y, z);
}
CONTACT_GENERIC CONTACT_LAW_HD Real contact_sqrt(Real x) { return sqrt(x); }
CONTACT_GENERIC CONTACT_LAW_HD Real contact_positive_part(Real x) { return max(x, Real(0)); }
CONTACT_GENERIC CONTACT_LAW_HD Real contact_min(Real a, Real b) { return min(a, b); }
#else
// CUDA's 3-vector of each precision.
template <typename Real>
struct ContactVectorOf;
template <>
struct ContactVectorOf<float> {
    using type = float3;
};
template <>
struct ContactVectorOf<double> {
    using type = double3;
};
template <typename Real>
using ContactVector = typename ContactVectorOf<Real>::type;

CONTACT_LAW_HD float3 contact_vector(float x, float y, float z) { return make_float3(x, y, z); }
CONTACT_LAW_HD double3 contact_vector(double x, double y, double z) { return make_double3(x, y, z); }

// The square root, max(x, 0) and min of each precision. The float32 kernels use
// sqrtf/fmaxf/fminf; the double ones copy the numba collider reference's Python max(x, 0.0) and
// min(a, b), which keep a first argument of −0 or NaN where fmax/fmin would not. Each precision keeps its
// own so that both stay bit for bit with what they were validated against.
CONTACT_LAW_HD float contact_sqrt(float x) { return sqrtf(x); }
CONTACT_LAW_HD double contact_sqrt(double x) { return sqrt(x); }
CONTACT_LAW_HD float contact_positive_part(float x) { return fmaxf(x, 0.0f); }
CONTACT_LAW_HD double contact_positive_part(double x) { return 0.0 > x ? 0.0 : x; }
CONTACT_LAW_HD float contact_min(float a, float b) { return fminf(a, b); }
CONTACT_LAW_HD double contact_min(double a, double b) { return b < a ? b : a; }
#endif

// Everything below is the law itself, in both languages.

CONTACT_GENERIC
CONTACT_LAW_HD ContactVector<Real> contact_cross(CONTACT_IN(ContactVector<Real>) a, CONTACT_IN(ContactVector<Real>) b) {
    return contact_vector(a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x);
}

// What the full law adds to one contact (issue 16): the branch arms and angular velocities that give
// the velocity at the contact point, the rolling spring–dashpot–slider (LAMMPS pair granular "rolling
// sds") and the SJKR cohesive force. A wall or a mesh collider is j with arm_j = 0 and w_j = 0.
CONTACT_GENERIC
struct ContactRotation {
    Real arm_i, arm_j;               // R_i = r_i − δ/2, R_j = r_j − δ/2 [m] (contact point at −R_i n from i)
    ContactVector<Real> w_i, w_j;    // angular velocities [rad/s] (zero without rotation)
    Real r_eff;                      // rolling radius r_i r_j / (r_i + r_j) [m] (wall: r_i)
    Real mu_r;                       // rolling friction coefficient (rolling runs only with a history)
    Real cohesion;                   // SJKR attraction c·A [N], ≥ 0, subtracted from the normal force
};

// The torque-carrying parts of a contact's force, for the torques of both particles:
//   τ_i = −R_i n × F_t + R_eff n × F_r,   τ_j = −R_j n × F_t − R_eff n × F_r.
CONTACT_GENERIC
struct ContactTorqueArms {
    ContactVector<Real> n_x_ft;  // n × F_t [N] (F_t: tangential force on i)
    ContactVector<Real> n_x_fr;  // n × F_r [N] (F_r: rolling resistance "force" of i, torque only)
};

// Torque on i [N m]. Colliders sum these from +0, so the +0 that R_eff n × F_r adds without rolling
// leaves their sums' bits as the CPU reference's (which adds nothing).
CONTACT_GENERIC
CONTACT_LAW_HD ContactVector<Real> contact_torque_i(CONTACT_IN(ContactTorqueArms<Real>) t,
                                                    CONTACT_IN(ContactRotation<Real>) r) {
    return contact_vector(-r.arm_i * t.n_x_ft.x + r.r_eff * t.n_x_fr.x, -r.arm_i * t.n_x_ft.y + r.r_eff * t.n_x_fr.y,
                          -r.arm_i * t.n_x_ft.z + r.r_eff * t.n_x_fr.z);
}

// Torque on j [N m].
CONTACT_GENERIC
CONTACT_LAW_HD ContactVector<Real> contact_torque_j(CONTACT_IN(ContactTorqueArms<Real>) t,
                                                    CONTACT_IN(ContactRotation<Real>) r) {
    return contact_vector(-r.arm_j * t.n_x_ft.x - r.r_eff * t.n_x_fr.x, -r.arm_j * t.n_x_ft.y - r.r_eff * t.n_x_fr.y,
                          -r.arm_j * t.n_x_ft.z - r.r_eff * t.n_x_fr.z);
}

// A spring–dashpot–slider in the tangent plane of unit normal n, shared by the tangential spring and
// the rolling history: the history ξ [m] is turned into the current plane, stretched by v dt, and gives
// F = −k ξ − g v [N], capped at |F| ≤ cap; when sliding, ξ is shortened so that it alone (with the
// dashpot) gives the capped force. Updates xi, returns F.
CONTACT_GENERIC
CONTACT_LAW_HD ContactVector<Real> contact_spring_slider(CONTACT_INOUT(ContactVector<Real>) xi, Real nx, Real ny,
                                                         Real nz, Real vx, Real vy, Real vz, Real k, Real g, Real cap,
                                                         Real dt) {
    const Real along = xi.x * nx + xi.y * ny + xi.z * nz;  // keep ξ in the tangent plane
    Real sx = xi.x - along * nx + vx * dt;
    Real sy = xi.y - along * ny + vy * dt;
    Real sz = xi.z - along * nz + vz * dt;
    Real fx = -k * sx - g * vx, fy = -k * sy - g * vy, fz = -k * sz - g * vz;
    const Real magnitude = contact_sqrt(fx * fx + fy * fy + fz * fz);
    if (magnitude > cap) {
        const Real scale = cap / magnitude;
        fx *= scale;
        fy *= scale;
        fz *= scale;
        sx = -(fx + g * vx) / k;
        sy = -(fy + g * vy) / k;
        sz = -(fz + g * vz) / k;
    }
    xi = contact_vector(sx, sy, sz);
    return contact_vector(fx, fy, fz);
}

// Force on i [N] of the contact law (engine/backends/cpu_kernels_law.make_contact_law). n is the unit
// normal from j to i, overlap δ ≥ 0 [m], dv = v_i − v_j [m/s], m_eff [kg], stiffness k [N/m], beta the
// damping ratio, mu the friction coefficient. Without a spring (CONTACT_OPTIONAL: null in CUDA,
// has_spring false in Slang) the tangential force is the history-free capped dashpot ('damper');
// otherwise spring is the tangential spring ξ [m] as seen from i, updated over dt [s] with
// k_t = tangential_ratio·k ('spring': static friction).
// Law Full adds (r, rolling and arms are unused by Paper; contact_force_paper fills them):
//   v_c = (v_i − v_j) − (R_i ω_i + R_j ω_j) × n replaces v_i − v_j in the tangential part,
//   v_t = v_c − (v_c·n) n (the normal force keeps v_n = (v_i − v_j)·n);
//   f_n ← f_n − c·A (cohesion; the friction and rolling caps use f_n without it, as LAMMPS/LIGGGHTS);
//   with a rolling history (callers pass one only when μ_r > 0), ξ_r [m] evolves as the
//   tangential spring does with v_r = R_eff (ω_i − ω_j) × n, F_r = −k_r ξ_r − γ_r v_r capped at
//   μ_r max(f_n, 0), k_r = k_t; arms receives n × F_t and n × F_r for the torques.
// ξ_r and v_r are the same seen from either particle (both factors of the cross product change sign),
// so a pair's rolling history is never negated, unlike its spring.
CONTACT_GENERIC_LAW
CONTACT_LAW_HD ContactVector<Real> contact_force(Real nx, Real ny, Real nz, Real overlap, Real dvx, Real dvy, Real dvz,
                                                 Real m_eff, Real stiffness, Real beta, Real mu,
                                                 CONTACT_OPTIONAL(ContactVector<Real>, spring), Real dt,
                                                 Real tangential_ratio, CONTACT_IN(ContactRotation<Real>) r,
                                                 CONTACT_OPTIONAL(ContactVector<Real>, rolling),
                                                 CONTACT_INOUT(ContactTorqueArms<Real>) arms) {
    const bool full = Law == ContactLaw::Full;
    const Real two = Real(2), zero = Real(0);
    const Real root = contact_sqrt(m_eff * stiffness);
    const Real v_n = dvx * nx + dvy * ny + dvz * nz;
    const Real f_n = stiffness * overlap - two * beta * root * v_n;
    Real f_applied = f_n;
    if CONTACT_CONSTEXPR (full) f_applied = f_n - r.cohesion;
    ContactVector<Real> f = contact_vector(f_applied * nx, f_applied * ny, f_applied * nz);
    const ContactVector<Real> n = contact_vector(nx, ny, nz);
    Real tx, ty, tz;  // tangential slip velocity [m/s]
    if CONTACT_CONSTEXPR (full) {
        const ContactVector<Real> spin = contact_vector(r.arm_i * r.w_i.x + r.arm_j * r.w_j.x,
                                                        r.arm_i * r.w_i.y + r.arm_j * r.w_j.y,
                                                        r.arm_i * r.w_i.z + r.arm_j * r.w_j.z);
        const ContactVector<Real> surface = contact_cross<Real>(spin, n);
        const Real cx = dvx - surface.x, cy = dvy - surface.y, cz = dvz - surface.z;
        const Real c_n = cx * nx + cy * ny + cz * nz;
        tx = cx - c_n * nx;
        ty = cy - c_n * ny;
        tz = cz - c_n * nz;
    } else {
        tx = dvx - v_n * nx;
        ty = dvy - v_n * ny;
        tz = dvz - v_n * nz;
    }
    const Real cap = mu * contact_positive_part(f_n);
    const Real k_t = tangential_ratio * stiffness;
    const Real g_t = two * beta * contact_sqrt(m_eff * k_t);
    // The paper's form adds F_t as soon as it has it, subtracts the dashpot from f and adds nothing
    // without slip; the full form adds F_t once, at the end, a zero one too (x + 0 turns −0 into +0). Each
    // keeps the operations, and the float32 kernels' compiled code, it was validated with.
    ContactVector<Real> ft = contact_vector(zero, zero, zero);  // tangential force on i [N]
    if (CONTACT_HAS(spring)) {
        ft = contact_spring_slider(CONTACT_VALUE(spring), nx, ny, nz, tx, ty, tz, k_t, g_t, cap, dt);
        if CONTACT_CONSTEXPR (!full) {
            f.x += ft.x;
            f.y += ft.y;
            f.z += ft.z;
            return f;
        }
    } else {
        const Real speed_t = contact_sqrt(tx * tx + ty * ty + tz * tz);
        if (speed_t > zero) {
            const Real f_t = contact_min(two * root * speed_t, cap) / speed_t;
            if CONTACT_CONSTEXPR (full) {
                ft = contact_vector(-f_t * tx, -f_t * ty, -f_t * tz);
            } else {
                f.x -= f_t * tx;
                f.y -= f_t * ty;
                f.z -= f_t * tz;
            }
        }
    }
    if CONTACT_CONSTEXPR (full) {
        f.x += ft.x;
        f.y += ft.y;
        f.z += ft.z;
        arms.n_x_ft = contact_cross<Real>(n, ft);
        arms.n_x_fr = contact_vector(zero, zero, zero);
        if (CONTACT_HAS(rolling)) {
            const ContactVector<Real> relrot = contact_vector(r.w_i.x - r.w_j.x, r.w_i.y - r.w_j.y, r.w_i.z - r.w_j.z);
            const ContactVector<Real> rc = contact_cross<Real>(relrot, n);
            const Real vrx = r.r_eff * rc.x, vry = r.r_eff * rc.y, vrz = r.r_eff * rc.z;
            const ContactVector<Real> fr = contact_spring_slider(CONTACT_VALUE(rolling), nx, ny, nz, vrx, vry, vrz,
                                                                 k_t, g_t, r.mu_r * contact_positive_part(f_n), dt);
            arms.n_x_fr = contact_cross<Real>(n, fr);
        }
    }
    return f;
}

// The paper's form of contact_force, which needs no rotation, rolling history or torque arms.
CONTACT_GENERIC
CONTACT_LAW_HD ContactVector<Real> contact_force_paper(Real nx, Real ny, Real nz, Real overlap, Real dvx, Real dvy,
                                                       Real dvz, Real m_eff, Real stiffness, Real beta, Real mu,
                                                       CONTACT_OPTIONAL(ContactVector<Real>, spring), Real dt,
                                                       Real tangential_ratio) {
    // Never read by the paper's form (the compilers drop them): they only fill the parameter list.
    const ContactRotation<Real> no_rotation = {};
    ContactVector<Real> no_rolling = {};
    ContactTorqueArms<Real> no_arms = {};
    return contact_force<Real, ContactLaw::Paper>(nx, ny, nz, overlap, dvx, dvy, dvz, m_eff, stiffness, beta, mu,
                                                  CONTACT_PASS(spring), dt, tangential_ratio, no_rotation,
                                                  CONTACT_NONE(no_rolling), no_arms);
}
