// Grains against triangle-mesh colliders, one grain at a time: the contact forces (the double instances
// of kernels/contact_law.h; friction models 'damper' and 'spring', the latter with the tangential
// springs kept per grain and contact slot) and the swept test of engine/colliders/kernels.py, line for
// line, so that the GPU finds the same contacts, forces and springs as the CPU reference.
// kernels/colliders.cu wraps these in CUDA kernels (one thread per slot);
// tests/engine/test_collider_device_math.py compiles them for the host and compares them with the numba
// kernels. Included, not compiled on its own.
//
// Arithmetic is double throughout, as in the numba kernels, and the launcher compiles with
// --fmad=false: without fused multiply-adds every operation rounds as numpy/numba round it, so the same
// inputs give the same bits on the CPU reference, on the host build and on the GPU.
#pragma once
#include "contact_law.h"
#include "dem_params.h"

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define COLLIDER_HD __host__ __device__ __forceinline__
#else
#include <vector_functions.h>  // make_double3 on the host
#include <cmath>
#define COLLIDER_HD inline
#endif

// The constants of engine/colliders/kernels.py; the launcher passes the Python values with -D so the
// two cannot drift apart (these defaults only serve a compile on its own).
#ifndef COLLIDER_MAX_CONTACTS
#define COLLIDER_MAX_CONTACTS 4
#endif
#ifndef COLLIDER_MAX_CANDIDATES
#define COLLIDER_MAX_CANDIDATES 48
#endif
#ifndef COLLIDER_STACK_DEPTH
#define COLLIDER_STACK_DEPTH 128
#endif
#ifndef COLLIDER_SWEEP_PASSES
#define COLLIDER_SWEEP_PASSES 4
#endif
#ifndef COLLIDER_EDGE_TOLERANCE
#define COLLIDER_EDGE_TOLERANCE 1e-6
#endif
#ifndef COLLIDER_ON_TRIANGLE_TOLERANCE
#define COLLIDER_ON_TRIANGLE_TOLERANCE 1e-6
#endif
#ifndef COLLIDER_MATCH_COS
#define COLLIDER_MATCH_COS 0.7
#endif

// Corner a of triangle t and its edges b − a, c − a [m] (engine.packing.queries.triangle_edges).
struct ColliderTriangle {
    double ax, ay, az, ux, uy, uz, vx, vy, vz;
};

COLLIDER_HD ColliderTriangle collider_triangle(const ColliderParams& C, int t) {
    const int* tri = C.triangles + 3 * t;
    const double* a = C.vertices + 3 * tri[0];
    const double* b = C.vertices + 3 * tri[1];
    const double* c = C.vertices + 3 * tri[2];
    ColliderTriangle e;
    e.ax = a[0];
    e.ay = a[1];
    e.az = a[2];
    e.ux = b[0] - e.ax;
    e.uy = b[1] - e.ay;
    e.uz = b[2] - e.az;
    e.vx = c[0] - e.ax;
    e.vy = c[1] - e.ay;
    e.vz = c[2] - e.az;
    return e;
}

// Closest point q of triangle t to p and its barycentric weights (Ericson, RTCD §5.1.5; the branch
// order of engine.packing.queries.closest_on_triangle). Returns |p − q|² [m²].
struct ColliderClosest {
    double d2, qx, qy, qz, w0, w1, w2;
};

COLLIDER_HD ColliderClosest collider_closest(const ColliderParams& C, int t, double px, double py, double pz) {
    const ColliderTriangle e = collider_triangle(C, t);
    const double apx = px - e.ax, apy = py - e.ay, apz = pz - e.az;
    const double d1 = e.ux * apx + e.uy * apy + e.uz * apz;
    const double d2 = e.vx * apx + e.vy * apy + e.vz * apz;
    double v = 0.0, w = 0.0;
    if (!(d1 <= 0.0 && d2 <= 0.0)) {
        const double bpx = apx - e.ux, bpy = apy - e.uy, bpz = apz - e.uz;
        const double d3 = e.ux * bpx + e.uy * bpy + e.uz * bpz;
        const double d4 = e.vx * bpx + e.vy * bpy + e.vz * bpz;
        const double cpx = apx - e.vx, cpy = apy - e.vy, cpz = apz - e.vz;
        const double d5 = e.ux * cpx + e.uy * cpy + e.uz * cpz;
        const double d6 = e.vx * cpx + e.vy * cpy + e.vz * cpz;
        const double vc = d1 * d4 - d3 * d2;
        const double vb = d5 * d2 - d1 * d6;
        const double va = d3 * d6 - d5 * d4;
        if (d3 >= 0.0 && d4 <= d3) {
            v = 1.0;
        } else if (d6 >= 0.0 && d5 <= d6) {
            w = 1.0;
        } else if (vc <= 0.0 && d1 >= 0.0 && d3 <= 0.0 && d1 - d3 > 0.0) {  // edges of zero length are
            v = d1 / (d1 - d3);                                                 // left to the others
        } else if (vb <= 0.0 && d2 >= 0.0 && d6 <= 0.0 && d2 - d6 > 0.0) {
            w = d2 / (d2 - d6);
        } else if (va <= 0.0 && (d4 - d3) >= 0.0 && (d5 - d6) >= 0.0 && (d4 - d3) + (d5 - d6) > 0.0) {
            w = (d4 - d3) / ((d4 - d3) + (d5 - d6));
            v = 1.0 - w;
        } else {
            const double denom = va + vb + vc;
            if (denom > 0.0) {
                v = vb / denom;
                w = vc / denom;
            } else {  // degenerate (zero-area) triangle: the nearest of its corners
                double best = apx * apx + apy * apy + apz * apz;
                const double db = bpx * bpx + bpy * bpy + bpz * bpz;
                const double dc = cpx * cpx + cpy * cpy + cpz * cpz;
                if (db < best) {
                    best = db;
                    v = 1.0;
                }
                if (dc < best) {
                    v = 0.0;
                    w = 1.0;
                }
            }
        }
    }
    ColliderClosest q;
    q.qx = e.ax + e.ux * v + e.vx * w;
    q.qy = e.ay + e.uy * v + e.vy * w;
    q.qz = e.az + e.uz * v + e.vz * w;
    const double dx = px - q.qx, dy = py - q.qy, dz = pz - q.qz;
    q.d2 = dx * dx + dy * dy + dz * dz;
    q.w0 = 1.0 - v - w;
    q.w1 = v;
    q.w2 = w;
    return q;
}

// Python's max(a, b, c) for numbers: the first of the largest.
COLLIDER_HD double collider_max3(double a, double b, double c) {
    double m = a;
    if (b > m) m = b;
    if (c > m) m = c;
    return m;
}

COLLIDER_HD double collider_box_distance2(const ColliderParams& C, int node, double px, double py, double pz) {
    const double* lo = C.box_lo + 3 * node;
    const double* hi = C.box_hi + 3 * node;
    const double dx = collider_max3(lo[0] - px, 0.0, px - hi[0]);
    const double dy = collider_max3(lo[1] - py, 0.0, py - hi[1]);
    const double dz = collider_max3(lo[2] - pz, 0.0, pz - hi[2]);
    return dx * dx + dy * dy + dz * dz;
}

// Unit face normal of triangle t (+y for a degenerate one), as kernels._face_normal.
COLLIDER_HD void collider_face_normal(const ColliderParams& C, int t, double& nx, double& ny, double& nz) {
    const ColliderTriangle e = collider_triangle(C, t);
    nx = e.uy * e.vz - e.uz * e.vy;
    ny = e.uz * e.vx - e.ux * e.vz;
    nz = e.ux * e.vy - e.uy * e.vx;
    const double length = sqrt(nx * nx + ny * ny + nz * nz);
    if (length > 0.0) {
        nx = nx / length;
        ny = ny / length;
        nz = nz / length;
    } else {
        nx = 0.0;
        ny = 1.0;
        nz = 0.0;
    }
}

// Surface velocity at barycentric weights (w0, w1, w2) of triangle t [m/s].
COLLIDER_HD void collider_surface_velocity(const ColliderParams& C, int t, double w0, double w1, double w2,
                                           double& sx, double& sy, double& sz) {
    const int* tri = C.triangles + 3 * t;
    const double* a = C.vertex_velocity + 3 * tri[0];
    const double* b = C.vertex_velocity + 3 * tri[1];
    const double* c = C.vertex_velocity + 3 * tri[2];
    sx = w0 * a[0] + w1 * b[0] + w2 * c[0];
    sy = w0 * a[1] + w1 * b[1] + w2 * c[1];
    sz = w0 * a[2] + w1 * b[2] + w2 * c[2];
}

// The candidate triangles of one grain: those closer than the reach, the closest
// COLLIDER_MAX_CANDIDATES sorted by (d², index) (kernels.gather_candidates). Only d² and the index are
// kept: the closest points are recomputed where needed, which keeps a GPU thread's scratch small. The
// list keeps the smallest keys of a total order, so it is the same whatever order the triangles are
// offered in (a BVH walk here, an OptiX traversal in kernels/optix_colliders.cu).
struct ColliderCandidates {
    int found;
    int tri[COLLIDER_MAX_CANDIDATES];
    double d2[COLLIDER_MAX_CANDIDATES];
};

// One grain's proximity query: centre [m] and squared reach [m²], and its candidate list.
struct ColliderProximity {
    double px, py, pz, reach2;
    ColliderCandidates* candidates;
};

// Offers triangle t to the query (the body of the BVH leaf loop and of the OptiX intersection program).
COLLIDER_HD void collider_offer_triangle(const ColliderParams& C, int t, const ColliderProximity& q) {
    const double d2 = collider_closest(C, t, q.px, q.py, q.pz).d2;
    if (d2 >= q.reach2) return;
    ColliderCandidates& c = *q.candidates;
    int k = c.found;
    while (k > 0 && (c.d2[k - 1] > d2 || (c.d2[k - 1] == d2 && c.tri[k - 1] > t))) --k;
    // Offered twice (OptiX may call an intersection program more than once per primitive): keep one.
    if (k > 0 && c.tri[k - 1] == t) return;
    if (k >= COLLIDER_MAX_CANDIDATES) return;
    const int last = c.found < COLLIDER_MAX_CANDIDATES - 1 ? c.found : COLLIDER_MAX_CANDIDATES - 1;
    for (int m = last; m > k; --m) {
        c.tri[m] = c.tri[m - 1];
        c.d2[m] = c.d2[m - 1];
    }
    c.tri[k] = t;
    c.d2[k] = d2;
    if (c.found < COLLIDER_MAX_CANDIDATES) ++c.found;
}

// Offers every triangle whose BVH leaf box is within reach (the uploaded engine.packing.bvh tree).
COLLIDER_HD void collider_gather(const ColliderParams& C, const ColliderProximity& q, int* stack) {
    stack[0] = 0;
    int top = 1;
    while (top > 0) {
        const int node = stack[--top];
        if (collider_box_distance2(C, node, q.px, q.py, q.pz) >= q.reach2) continue;
        if (C.left[node] >= 0) {
            stack[top] = C.left[node];
            stack[top + 1] = C.left[node] + 1;
            top += 2;
            continue;
        }
        for (int slot = C.start[node]; slot < C.start[node] + C.count[node]; ++slot) {
            collider_offer_triangle(C, C.order[slot], q);
        }
    }
}

// The contact springs of the grain in slot i against collider C: its row (by model index), −1
// without springs (neither tangential springs nor rolling resistance).
COLLIDER_HD int collider_spring_row(const DemParams& P, const ColliderParams& C, int i) {
    return (C.spring_model || C.rolling_model) ? P.slot_to_model[i] : -1;
}

// Doubles per contact slot in ColliderParams::springs: ξ (0–2) and ξ_r (3–5).
#define COLLIDER_SPRING_WIDTH 6

// Forgets the springs of the grain in slot i (no contact with C, or inactive), as kernels._clear_slots.
COLLIDER_HD void collider_forget(const DemParams& P, const ColliderParams& C, int i) {
    const int row = collider_spring_row(P, C, i);
    if (row < 0) return;
    const int old = C.contact_count[row];
    double* springs = C.springs + COLLIDER_SPRING_WIDTH * COLLIDER_MAX_CONTACTS * (size_t)row;
    double* normals = C.normals + 3 * COLLIDER_MAX_CONTACTS * (size_t)row;
    for (int s = 0; s < COLLIDER_SPRING_WIDTH * old; ++s) springs[s] = 0.0;
    for (int s = 0; s < 3 * old; ++s) normals[s] = 0.0;
    C.contact_count[row] = 0;
}

// Force [N] on the grain in slot i from its candidate triangles, summed over the distinct touching
// spots in double (kernels.collider_forces). With springs, a new contact inherits the spring of the
// grain's unused slot whose normal is closest (cosine above COLLIDER_MATCH_COS), and the slots are then
// rewritten with this step's contacts in order, as the CPU reference keeps them. With rotation
// (DemParams::rotation) or cohesion against C the contacts use the full law (ContactLaw::Full: the
// grain's ω in the slip and rolling velocities, the tangential force at the arm r − δ/2, rolling
// resistance μ_r, SJKR cohesion c·π(2rδ − δ²)) and their torques [N m] are summed into *torque.
COLLIDER_HD double3 collider_resolve(const DemParams& P, const ColliderParams& C, int i,
                                     const ColliderCandidates& candidates, double3* torque = nullptr) {
    double3 sum = make_double3(0.0, 0.0, 0.0);
    double3 torque_sum = make_double3(0.0, 0.0, 0.0);
    const unsigned int info = P.info[i];
    const float4 p4 = P.pos[i];
    const float4 v4 = P.vel[i];
    const double px = (double)p4.x, py = (double)p4.y, pz = (double)p4.z;
    const double reach = (double)p4.w + C.half_thickness;
    const double tolerance = COLLIDER_ON_TRIANGLE_TOLERANCE * reach;
    const double tolerance2 = tolerance * tolerance;
    const int material = (int)(info >> DEM_INFO_MATERIAL_SHIFT);
    const double m = (double)v4.w;
    const int row = collider_spring_row(P, C, i);
    double* springs = row < 0 ? nullptr : C.springs + COLLIDER_SPRING_WIDTH * COLLIDER_MAX_CONTACTS * (size_t)row;
    double* normals = row < 0 ? nullptr : C.normals + 3 * COLLIDER_MAX_CONTACTS * (size_t)row;
    const int old = row < 0 ? 0 : C.contact_count[row];
    bool used[COLLIDER_MAX_CONTACTS];
    double hist[COLLIDER_MAX_CONTACTS][COLLIDER_SPRING_WIDTH];
    double contact_normal[COLLIDER_MAX_CONTACTS][3];
    for (int s = 0; s < old; ++s) used[s] = false;
    int kept = 0;
    for (int a = 0; a < candidates.found && kept < COLLIDER_MAX_CONTACTS; ++a) {
        const int t = candidates.tri[a];
        const ColliderClosest q = collider_closest(C, t, px, py, pz);
        // A spot that also lies on a closer candidate is not a distinct touching spot (kernels module
        // docstring): a neighbour slopes closer, or it is an edge or corner seen from another face.
        bool covered = false;
        for (int b = 0; b < a && !covered; ++b) {
            covered = collider_closest(C, candidates.tri[b], q.qx, q.qy, q.qz).d2 <= tolerance2;
        }
        if (covered) continue;
        const int c = kept++;
        const double dist = sqrt(q.d2);
        double dx = px - q.qx, dy = py - q.qy, dz = pz - q.qz;
        double dist_used = dist;
        if (dist <= 1e-12 * reach) {  // centre on the surface: no direction from q, take the face normal
            collider_face_normal(C, t, dx, dy, dz);
            dist_used = 1.0;
        }
        const double nx = dx / dist_used, ny = dy / dist_used, nz = dz / dist_used;
        double* spring = nullptr;
        double* rolling = nullptr;
        if (row >= 0) {
            // Inherit the spring of the old slot with the nearest normal, if near enough.
            int best = -1;
            double best_cos = COLLIDER_MATCH_COS;
            for (int s = 0; s < old; ++s) {
                if (used[s]) continue;
                const double* n_old = normals + 3 * s;
                const double cosine = nx * n_old[0] + ny * n_old[1] + nz * n_old[2];
                if (cosine > best_cos) {
                    best_cos = cosine;
                    best = s;
                }
            }
            for (int axis = 0; axis < COLLIDER_SPRING_WIDTH; ++axis) {
                hist[c][axis] = best >= 0 ? springs[COLLIDER_SPRING_WIDTH * best + axis] : 0.0;
            }
            if (best >= 0) used[best] = true;
            contact_normal[c][0] = nx;
            contact_normal[c][1] = ny;
            contact_normal[c][2] = nz;
            if (C.spring_model) spring = hist[c];
            if (C.rolling_model) rolling = hist[c] + 3;
        }
        double svx, svy, svz;
        collider_surface_velocity(C, t, q.w0, q.w1, q.w2, svx, svy, svz);
        // The law's histories as vectors, written back below (hist keeps the CPU reference's layout).
        double3 xi = make_double3(0.0, 0.0, 0.0), xi_r = make_double3(0.0, 0.0, 0.0);
        if (spring != nullptr) xi = make_double3(spring[0], spring[1], spring[2]);
        if (rolling != nullptr) xi_r = make_double3(rolling[0], rolling[1], rolling[2]);
        double3 f;
        const double c_surface = C.cohesion[material];
        if (P.rotation || c_surface > 0.0) {
            const double overlap = reach - dist;
            const double r = (double)p4.w;
            ContactRotation<double> rotation;
            rotation.arm_i = r - 0.5 * overlap;
            rotation.arm_j = 0.0;
            rotation.w_i = make_double3(0.0, 0.0, 0.0);
            if (P.rotation) {
                const float4 w = P.omega[i];
                rotation.w_i = make_double3((double)w.x, (double)w.y, (double)w.z);
            }
            rotation.w_j = make_double3(0.0, 0.0, 0.0);
            rotation.r_eff = r;
            rotation.mu_r = C.roll[material];
            // The wall's contact disc: the shell's face cuts the sphere δ deep (math.pi's double).
            rotation.cohesion = c_surface > 0.0
                ? c_surface * 3.141592653589793 * (2.0 * r * overlap - overlap * overlap) : 0.0;
            ContactTorqueArms<double> arms;
            f = contact_force<double, ContactLaw::Full>(
                nx, ny, nz, overlap, (double)v4.x - svx, (double)v4.y - svy, (double)v4.z - svz, m, C.stiffness,
                C.beta[material], C.mu[material], spring != nullptr ? &xi : nullptr, C.dt, C.tangential_ratio,
                rotation, rotation.mu_r > 0.0 && rolling != nullptr ? &xi_r : nullptr, arms);
            const double3 tau = contact_torque_i(arms, rotation);
            torque_sum.x += tau.x;
            torque_sum.y += tau.y;
            torque_sum.z += tau.z;
        } else {
            // As the CPU reference's _contact: +x where there is no distance (a NaN centre only).
            const bool has_normal = dist_used > 0.0;
            f = contact_force_paper<double>(
                has_normal ? nx : 1.0, has_normal ? ny : 0.0, has_normal ? nz : 0.0, reach - dist,
                (double)v4.x - svx, (double)v4.y - svy, (double)v4.z - svz, m, C.stiffness, C.beta[material],
                C.mu[material], spring != nullptr ? &xi : nullptr, C.dt, C.tangential_ratio);
        }
        if (spring != nullptr) {
            spring[0] = xi.x;
            spring[1] = xi.y;
            spring[2] = xi.z;
        }
        if (rolling != nullptr) {
            rolling[0] = xi_r.x;
            rolling[1] = xi_r.y;
            rolling[2] = xi_r.z;
        }
        sum.x += f.x;
        sum.y += f.y;
        sum.z += f.z;
    }
    if (row >= 0) {
        const int written = kept > old ? kept : old;
        for (int c = 0; c < written; ++c) {
            for (int axis = 0; axis < COLLIDER_SPRING_WIDTH; ++axis) {
                springs[COLLIDER_SPRING_WIDTH * c + axis] = c < kept ? hist[c][axis] : 0.0;
            }
            for (int axis = 0; axis < 3; ++axis) normals[3 * c + axis] = c < kept ? contact_normal[c][axis] : 0.0;
        }
        C.contact_count[row] = kept;
    }
    if (torque != nullptr) *torque = torque_sum;
    return sum;
}

// The proximity query of the active grain in slot i against collider C (reach r + thickness/2).
COLLIDER_HD ColliderProximity collider_proximity(const DemParams& P, const ColliderParams& C, int i,
                                                 ColliderCandidates& candidates) {
    const float4 p4 = P.pos[i];
    const double reach = (double)p4.w + C.half_thickness;
    candidates.found = 0;
    ColliderProximity q;
    q.px = (double)p4.x;
    q.py = (double)p4.y;
    q.pz = (double)p4.z;
    q.reach2 = reach * reach;
    q.candidates = &candidates;
    return q;
}

// Force [N] of one collider on the grain in slot i through the uploaded BVH (kernels.collider_forces
// without the clearance cache, which only skips work, never changes a result). Zero when inactive.
// With rotation, *torque receives the collider's torque on the grain [N m] (zero without contact).
COLLIDER_HD double3 collider_grain_force_sum(const DemParams& P, const ColliderParams& C, int i,
                                             double3* torque = nullptr) {
    if (torque != nullptr) *torque = make_double3(0.0, 0.0, 0.0);
    if (!(P.info[i] & DEM_INFO_ACTIVE)) {
        collider_forget(P, C, i);
        return make_double3(0.0, 0.0, 0.0);
    }
    ColliderCandidates candidates;
    const ColliderProximity q = collider_proximity(P, C, i, candidates);
    if (collider_box_distance2(C, 0, q.px, q.py, q.pz) >= q.reach2) {
        collider_forget(P, C, i);
        return make_double3(0.0, 0.0, 0.0);
    }
    int stack[COLLIDER_STACK_DEPTH];
    collider_gather(C, q, stack);
    return collider_resolve(P, C, i, candidates, torque);
}

// Adds the force of every collider (colliders[0 .. count)) on the grain in slot i to P.force[i]: summed
// in double in collider order, then rounded once to the float32 force. The CPU adds each collider's
// sum to its float64 force in turn, ((f + s0) + s1); with no grain–grain force and one collider the
// two give the same bits.
COLLIDER_HD void collider_grain_forces(const DemParams& P, const ColliderParams* colliders, int count, int i) {
    if (!(P.info[i] & DEM_INFO_ACTIVE)) {
        for (int c = 0; c < count; ++c) collider_forget(P, colliders[c], i);
        return;
    }
    double3 sum = make_double3(0.0, 0.0, 0.0);
    double3 torque = make_double3(0.0, 0.0, 0.0);
    for (int c = 0; c < count; ++c) {
        double3 one_torque;
        const double3 one = collider_grain_force_sum(P, colliders[c], i, &one_torque);
        sum.x += one.x;
        sum.y += one.y;
        sum.z += one.z;
        torque.x += one_torque.x;
        torque.y += one_torque.y;
        torque.z += one_torque.z;
    }
    float4 f = P.force[i];
    f.x = (float)((double)f.x + sum.x);
    f.y = (float)((double)f.y + sum.y);
    f.z = (float)((double)f.z + sum.z);
    P.force[i] = f;
    if (P.rotation) {
        float4 t = P.torque[i];
        t.x = (float)((double)t.x + torque.x);
        t.y = (float)((double)t.y + torque.y);
        t.z = (float)((double)t.z + torque.z);
        P.torque[i] = t;
    }
}

// Möller–Trumbore test of the segment p0 + s e, s in [0, 1], against triangle t, both sides, with the
// watertight barycentric slack (kernels.segment_triangle). Returns s, or −1 without a hit.
COLLIDER_HD double collider_segment(const ColliderParams& C, int t, double p0x, double p0y, double p0z, double ex,
                                    double ey, double ez, double& u_out, double& v_out) {
    const ColliderTriangle e = collider_triangle(C, t);
    const double hx = ey * e.vz - ez * e.vy;
    const double hy = ez * e.vx - ex * e.vz;
    const double hz = ex * e.vy - ey * e.vx;
    const double det = e.ux * hx + e.uy * hy + e.uz * hz;
    if (det == 0.0) return -1.0;
    const double inv = 1.0 / det;
    const double sx = p0x - e.ax, sy = p0y - e.ay, sz = p0z - e.az;
    const double u = (sx * hx + sy * hy + sz * hz) * inv;
    if (u < -COLLIDER_EDGE_TOLERANCE || u > 1.0 + COLLIDER_EDGE_TOLERANCE) return -1.0;
    const double qx = sy * e.uz - sz * e.uy;
    const double qy = sz * e.ux - sx * e.uz;
    const double qz = sx * e.uy - sy * e.ux;
    const double v = (ex * qx + ey * qy + ez * qz) * inv;
    if (v < -COLLIDER_EDGE_TOLERANCE || u + v > 1.0 + COLLIDER_EDGE_TOLERANCE) return -1.0;
    const double s = (e.vx * qx + e.vy * qy + e.vz * qz) * inv;
    if (s < 0.0 || s > 1.0) return -1.0;
    u_out = u;
    v_out = v;
    return s;
}

// The first crossing of one grain's centre path o → p [m] found so far (kernels.first_crossing): path
// fraction s (2 while none), triangle t (−1), the hit's weights (w1, w2) and the start moved with the
// triangle (sx, sy, sz).
struct ColliderCrossing {
    double ox, oy, oz, px, py, pz;
    double s, w1, w2, sx, sy, sz;
    int t;
};

COLLIDER_HD void collider_crossing_start(ColliderCrossing& c, double ox, double oy, double oz, double px, double py,
                                         double pz) {
    c.ox = ox;
    c.oy = oy;
    c.oz = oz;
    c.px = px;
    c.py = py;
    c.pz = pz;
    c.s = 2.0;
    c.t = -1;
    c.w1 = c.w2 = c.sx = c.sy = c.sz = 0.0;
}

// Tests the path against triangle t in the triangle's frame (the start moved by its mean displacement
// over the step) and keeps the first crossing: smallest fraction, then lowest index, so the answer does
// not depend on the order triangles are offered in (the body of the BVH leaf loop and of the OptiX
// intersection program).
COLLIDER_HD void collider_offer_crossing(const ColliderParams& C, int t, ColliderCrossing& c) {
    const int* tri = C.triangles + 3 * t;
    const double* d0 = C.displacement + 3 * tri[0];
    const double* d1 = C.displacement + 3 * tri[1];
    const double* d2 = C.displacement + 3 * tri[2];
    const double sx = c.ox + (d0[0] + d1[0] + d2[0]) / 3.0;
    const double sy = c.oy + (d0[1] + d1[1] + d2[1]) / 3.0;
    const double sz = c.oz + (d0[2] + d1[2] + d2[2]) / 3.0;
    double w1 = 0.0, w2 = 0.0;
    const double s = collider_segment(C, t, sx, sy, sz, c.px - sx, c.py - sy, c.pz - sz, w1, w2);
    if (s < 0.0 || s > c.s || (s == c.s && t > c.t)) return;
    c.s = s;
    c.t = t;
    c.w1 = w1;
    c.w2 = w2;
    c.sx = sx;
    c.sy = sy;
    c.sz = sz;
}

// Offers every triangle whose BVH box meets the path's box widened by the largest vertex displacement.
struct ColliderBvhCrossings {
    const ColliderParams* C;
    double displacement_max;
    int* stack;

    COLLIDER_HD void operator()(ColliderCrossing& c) const {
        const double lx = (c.px < c.ox ? c.px : c.ox) - displacement_max;
        const double ly = (c.py < c.oy ? c.py : c.oy) - displacement_max;
        const double lz = (c.pz < c.oz ? c.pz : c.oz) - displacement_max;
        const double hx = (c.px > c.ox ? c.px : c.ox) + displacement_max;
        const double hy = (c.py > c.oy ? c.py : c.oy) + displacement_max;
        const double hz = (c.pz > c.oz ? c.pz : c.oz) + displacement_max;
        stack[0] = 0;
        int top = 1;
        while (top > 0) {
            const int node = stack[--top];
            const double* lo = C->box_lo + 3 * node;
            const double* hi = C->box_hi + 3 * node;
            if (lx > hi[0] || ly > hi[1] || lz > hi[2] || hx < lo[0] || hy < lo[1] || hz < lo[2]) continue;
            if (C->left[node] >= 0) {
                stack[top] = C->left[node];
                stack[top + 1] = C->left[node] + 1;
                top += 2;
                continue;
            }
            for (int slot = C->start[node]; slot < C->start[node] + C->count[node]; ++slot) {
                collider_offer_crossing(*C, C->order[slot], c);
            }
        }
    }
};

// Swept test of one collider for the grain in slot i (kernels.sweep): a grain whose centre path from
// C.old_pos[i] to P.pos[i] crossed the surface is put back at contact distance on the side it came
// from and its normal velocity relative to the surface reflected; the corrected path is tested again,
// up to COLLIDER_SWEEP_PASSES times. ``offer_all`` offers the triangles near a path to a
// ColliderCrossing (ColliderBvhCrossings here, an OptiX trace in kernels/optix_colliders.cu). Returns
// the corrections made.
template <class OfferAll>
COLLIDER_HD int collider_grain_sweep_with(const DemParams& P, const ColliderParams& C, int i,
                                          const OfferAll& offer_all) {
    const unsigned int info = P.info[i];
    if (!(info & DEM_INFO_ACTIVE)) return 0;
    const float4 o4 = C.old_pos[i];
    const double ox = (double)o4.x, oy = (double)o4.y, oz = (double)o4.z;
    const double reach = (double)o4.w + C.half_thickness;
    const int material = (int)(info >> DEM_INFO_MATERIAL_SHIFT);
    int corrected = 0;
    for (int pass = 0; pass < COLLIDER_SWEEP_PASSES; ++pass) {
        float4 p4 = P.pos[i];
        const double px = (double)p4.x, py = (double)p4.y, pz = (double)p4.z;
        ColliderCrossing c;
        collider_crossing_start(c, ox, oy, oz, px, py, pz);
        offer_all(c);
        const int t = c.t;
        if (t < 0) break;
        double nx, ny, nz;
        collider_face_normal(C, t, nx, ny, nz);
        const double* a = C.vertices + 3 * C.triangles[3 * t];
        const double came = (c.sx - a[0]) * nx + (c.sy - a[1]) * ny + (c.sz - a[2]) * nz;
        if (came == 0.0) break;  // started on the surface: no side to return to
        const double sign = came > 0.0 ? 1.0 : -1.0;
        nx *= sign;
        ny *= sign;
        nz *= sign;
        const double push = reach - ((px - a[0]) * nx + (py - a[1]) * ny + (pz - a[2]) * nz);
        p4.x = (float)(px + push * nx);
        p4.y = (float)(py + push * ny);
        p4.z = (float)(pz + push * nz);
        P.pos[i] = p4;
        const double w0 = 1.0 - c.w1 - c.w2;
        double svx, svy, svz;
        collider_surface_velocity(C, t, w0, c.w1, c.w2, svx, svy, svz);
        float4 v4 = P.vel[i];
        const double v_n = ((double)v4.x - svx) * nx + ((double)v4.y - svy) * ny + ((double)v4.z - svz) * nz;
        if (v_n < 0.0) {
            const double bounce = (1.0 + C.restitution[material]) * v_n;
            v4.x = (float)((double)v4.x - bounce * nx);
            v4.y = (float)((double)v4.y - bounce * ny);
            v4.z = (float)((double)v4.z - bounce * nz);
            P.vel[i] = v4;
        }
        ++corrected;
    }
    return corrected;
}

// The swept test through the uploaded BVH.
COLLIDER_HD int collider_grain_sweep(const DemParams& P, const ColliderParams& C, double displacement_max, int i) {
    int stack[COLLIDER_STACK_DEPTH];
    const ColliderBvhCrossings offer_all{&C, displacement_max, stack};
    return collider_grain_sweep_with(P, C, i, offer_all);
}

// Box of triangle t widened by ``inflate`` [m], as float32 (OptiX AABB layout: min xyz, max xyz),
// rounded outwards so that it holds every point within ``inflate`` of the triangle.
COLLIDER_HD void collider_triangle_aabb(const ColliderParams& C, int t, double inflate, float* box) {
    const int* tri = C.triangles + 3 * t;
    for (int axis = 0; axis < 3; ++axis) {
        double lo = C.vertices[3 * tri[0] + axis], hi = lo;
        for (int corner = 1; corner < 3; ++corner) {
            const double x = C.vertices[3 * tri[corner] + axis];
            lo = x < lo ? x : lo;
            hi = x > hi ? x : hi;
        }
        // The float cast may round inwards by half an ulp; step a whole float32 ulp (2^-23 relative)
        // out, plus a margin for the float32 ray origin and direction.
        const double magnitude = (fabs(lo) > fabs(hi) ? fabs(lo) : fabs(hi)) + inflate;
        const double slack = inflate * 1e-4 + magnitude * 4.0 * 1.1920928955078125e-7;
        box[axis] = (float)(lo - inflate - slack);
        box[3 + axis] = (float)(hi + inflate + slack);
    }
}
