// Grains against triangle-mesh colliders, one grain at a time, written once for every GPU path: the
// closest point of a triangle, the candidate list of a grain and the swept test (the tunnelling guard),
// line for line as engine/colliders/kernels.py, so that every GPU path finds the same contacts and
// crossings as the CPU reference; kernels/collider_contacts.h resolves the candidates into forces with
// the accessors declared here. One source, two languages:
//   CUDA C++ — kernels/collider_math.cuh includes both (the CuPy kernels of kernels/colliders.cu and the
//     OptiX programs of kernels/optix_colliders.cu; the host build of tests/engine/native/collider_host.cpp,
//     which tests/engine/test_collider_device_math.py and test_collider_device_springs.py compare bit for
//     bit with the numba kernels); the data are the ColliderParams and DemParams of kernels/dem_params.h;
//   Slang — kernels/rt_colliders.slang includes both (the rt backend, engine/backends/rt_colliders.py); the
//     data are global buffers, the collider's declared below (bound per collider by the host), the
//     grains' (g_pos, g_vel, g_omega, g_active, g_material, g_rotation, g_col_old) by the includer.
// The differences are the macros below, as in kernels/field_law.h: COLLIDER_SOURCE and COLLIDER_GRAINS,
// the types of the parameters that carry the collider and the grains (CUDA: the params structs; Slang:
// empty stand-ins, the data being global); the accessors COLLIDER_* that read them (a row of a table is a
// pointer in CUDA, as the code always read it, and in Slang a ColliderRow whose subscript reads, and for
// the springs writes, the buffer); COLLIDER_OUT/INOUT (a reference or an out/inout parameter);
// COLLIDER_OPTIONAL_HISTORY (contact_law.h's optional history: a pointer or a flag and a value);
// COLLIDER_GENERIC_OFFER (a C++ template over any callable, or a Slang generic over IColliderOfferAll);
// COLLIDER_F64 marks the literals float32 cannot hold (Slang reads an unsuffixed literal as a float);
// COLLIDER_SCRATCH zeroes a local array in Slang only.
// One difference of behaviour: CUDA keeps a grain's slots only with springs (friction 'spring' or rolling
// resistance; the row is the grain's model index), Slang always (the row is the grain).
//
// Arithmetic is double throughout, as in the numba kernels. CUDA compiles it with --fmad=false: without
// fused multiply-adds every operation rounds as numpy/numba round it, so the same inputs give the same
// bits on the CPU reference, on the host build and on the GPU; nothing here may be regrouped, and a change
// must leave the kernels' PTX as it was (scripts/check_law_ptx.py). Slang needs shaderFloat64 for it (the
// "distinct spot" test compares distances to 1e-6 of the reach, which float32 cannot resolve); SPIR-V
// drivers make no promise on contraction, and tests/engine/test_rt_colliders.py holds the rt backend to
// the CPU. Included, not compiled on its own.
#pragma once
#include "contact_law.h"

#if defined(__SLANG__)
#define COLLIDER_HD [ForceInline]
#define COLLIDER_OUT(T) out T
#define COLLIDER_INOUT(T) inout T
#define COLLIDER_F64(x) x##l  // a double literal (Slang's unsuffixed ones are float)
#define COLLIDER_SCRATCH = {}  // zeroed: Slang cannot tell that only the entries written are read
#define COLLIDER_OPTIONAL_HISTORY(has, value) has, value  // contact_law.h's CONTACT_OPTIONAL
#define COLLIDER_GENERIC_OFFER __generic<OfferAll : IColliderOfferAll>
#define COLLIDER_OFFER_ALL(offer_all, c) offer_all.offer_all(c)

uniform StructuredBuffer<double> g_col_vertices;         // (V, 3) vertex positions [m] (local frame)
uniform StructuredBuffer<uint> g_col_triangles;          // (T, 3) vertex indices
uniform StructuredBuffer<double> g_col_vertex_velocity;  // (V, 3) vertex velocities [m/s]
uniform StructuredBuffer<double> g_col_displacement;     // (V, 3) each vertex's move over the step [m]
uniform StructuredBuffer<double> g_col_surface;          // (M, 5) per material: β, μ, μ_r, c [Pa], restitution
uniform RWStructuredBuffer<double> g_col_springs;        // (n, COLLIDER_MAX_CONTACTS, 6) ξ (0–2), ξ_r (3–5) [m]
uniform RWStructuredBuffer<double> g_col_normals;        // (n, COLLIDER_MAX_CONTACTS, 3) the normal last used
uniform RWStructuredBuffer<uint> g_col_count;            // (n,) slots in use
uniform uint g_col_spring_model;                         // 1: tangential springs kept (friction 'spring')
uniform double g_col_half_thickness;                     // thickness / 2 [m]
uniform double g_col_stiffness;                          // normal stiffness k [N/m]
uniform double g_col_dt;                                 // time step [s] (the springs stretch by it)
uniform double g_col_tangential_ratio;                   // k_t / k

/// Which buffer a ColliderRow reads.
enum ColliderTable { Vertices, VertexVelocity, Displacement, Springs, Normals };

/// Row of one of the double buffers above: row[k] reads (and, for the springs and normals, writes)
/// entry base + k, as a pointer does in CUDA.
struct ColliderRow {
    ColliderTable table;
    int base;
    __init(ColliderTable t, int first) { table = t; base = first; }
    __subscript(int k)->double {
        get {
            if (table == ColliderTable.Vertices) return g_col_vertices[base + k];
            if (table == ColliderTable.VertexVelocity) return g_col_vertex_velocity[base + k];
            if (table == ColliderTable.Displacement) return g_col_displacement[base + k];
            if (table == ColliderTable.Springs) return g_col_springs[base + k];
            return g_col_normals[base + k];
        }
        set {
            if (table == ColliderTable.Springs) g_col_springs[base + k] = newValue;
            else g_col_normals[base + k] = newValue;
        }
    }
}

/// The three vertex indices of a triangle: corners[k] reads g_col_triangles.
struct ColliderCorners {
    int base;
    __init(int first) { base = first; }
    __subscript(int k)->int { get { return (int)g_col_triangles[base + k]; } }
}

/// What offers the triangles near a grain's path to its first-crossing search (collider_grain_sweep_with;
/// in CUDA any callable).
interface IColliderOfferAll {
    void offer_all(inout ColliderCrossing c);
}

/// The stand-ins for CUDA's ColliderParams and DemParams: the data are global.
struct ColliderSource {};
struct ColliderGrains {};

#define COLLIDER_SOURCE ColliderSource
#define COLLIDER_GRAINS ColliderGrains
#define COLLIDER_CORNERS(C, t) ColliderCorners(3 * (t))
#define COLLIDER_VERTEX(C, v) ColliderRow(ColliderTable.Vertices, 3 * (v))
#define COLLIDER_VERTEX_VELOCITY(C, v) ColliderRow(ColliderTable.VertexVelocity, 3 * (v))
#define COLLIDER_DISPLACEMENT(C, v) ColliderRow(ColliderTable.Displacement, 3 * (v))
#define COLLIDER_HALF_THICKNESS(C) g_col_half_thickness
#define COLLIDER_STIFFNESS(C) g_col_stiffness
#define COLLIDER_DT(C) g_col_dt
#define COLLIDER_TANGENTIAL_RATIO(C) g_col_tangential_ratio
#define COLLIDER_SPRING_MODEL(C) (g_col_spring_model != 0)
#define COLLIDER_ROLLING_MODEL(C) true  // μ_r > 0 decides (the CUDA launcher's flag is "some μ_r > 0")
#define COLLIDER_BETA(C, m) g_col_surface[5 * (m)]
#define COLLIDER_MU(C, m) g_col_surface[5 * (m) + 1]
#define COLLIDER_ROLL(C, m) g_col_surface[5 * (m) + 2]
#define COLLIDER_COHESION(C, m) g_col_surface[5 * (m) + 3]
#define COLLIDER_RESTITUTION(C, m) g_col_surface[5 * (m) + 4]
#define COLLIDER_SPRING_ROW(P, C, i) ((int)(i))
#define COLLIDER_SPRINGS(C, row) ColliderRow(ColliderTable.Springs, COLLIDER_SPRING_WIDTH * COLLIDER_MAX_CONTACTS * (row))
#define COLLIDER_NORMALS(C, row) ColliderRow(ColliderTable.Normals, 3 * COLLIDER_MAX_CONTACTS * (row))
#define COLLIDER_CONTACT_COUNT(C, row) ((int)g_col_count[row])
#define COLLIDER_SET_CONTACT_COUNT(C, row, value) g_col_count[row] = (uint)(value)
#define COLLIDER_ACTIVE(P, i) (g_active[i] != 0)
#define COLLIDER_MATERIAL(P, i) ((int)g_material[i])
#define COLLIDER_POSITION(P, i) g_pos[i]
#define COLLIDER_VELOCITY(P, i) g_vel[i]
#define COLLIDER_OMEGA(P, i) g_omega[i]
#define COLLIDER_ROTATION(P) (g_rotation != 0)
#define COLLIDER_OLD_POSITION(C, i) g_col_old[i]
#else
#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define COLLIDER_HD __host__ __device__ __forceinline__
#else
#define COLLIDER_HD inline
#endif
#include "dem_params.h"
#define COLLIDER_OUT(T) T&
#define COLLIDER_INOUT(T) T&
#define COLLIDER_F64(x) x
#define COLLIDER_SCRATCH  // left as it is: only the entries written are read
#define COLLIDER_OPTIONAL_HISTORY(has, value) ((has) ? &(value) : nullptr)  // contact_law.h's CONTACT_OPTIONAL
#define COLLIDER_GENERIC_OFFER template <class OfferAll>
#define COLLIDER_OFFER_ALL(offer_all, c) offer_all(c)

typedef const double* ColliderRow;
typedef double* ColliderSpringRow;
typedef const int* ColliderCorners;

#define COLLIDER_SOURCE const ColliderParams&
#define COLLIDER_GRAINS const DemParams&
#define COLLIDER_CORNERS(C, t) ((C).triangles + 3 * (t))
#define COLLIDER_VERTEX(C, v) ((C).vertices + 3 * (v))
#define COLLIDER_VERTEX_VELOCITY(C, v) ((C).vertex_velocity + 3 * (v))
#define COLLIDER_DISPLACEMENT(C, v) ((C).displacement + 3 * (v))
#define COLLIDER_HALF_THICKNESS(C) (C).half_thickness
#define COLLIDER_STIFFNESS(C) (C).stiffness
#define COLLIDER_DT(C) (C).dt
#define COLLIDER_TANGENTIAL_RATIO(C) (C).tangential_ratio
#define COLLIDER_SPRING_MODEL(C) (C).spring_model
#define COLLIDER_ROLLING_MODEL(C) (C).rolling_model
#define COLLIDER_BETA(C, m) (C).beta[m]
#define COLLIDER_MU(C, m) (C).mu[m]
#define COLLIDER_ROLL(C, m) (C).roll[m]
#define COLLIDER_COHESION(C, m) (C).cohesion[m]
#define COLLIDER_RESTITUTION(C, m) (C).restitution[m]
// The contact springs of the grain in slot i: its row (by model index), −1 without springs (neither
// tangential springs nor rolling resistance).
#define COLLIDER_SPRING_ROW(P, C, i) (((C).spring_model || (C).rolling_model) ? (P).slot_to_model[i] : -1)
#define COLLIDER_SPRINGS(C, row) ((row) < 0 ? nullptr : (C).springs + COLLIDER_SPRING_WIDTH * COLLIDER_MAX_CONTACTS * (size_t)(row))
#define COLLIDER_NORMALS(C, row) ((row) < 0 ? nullptr : (C).normals + 3 * COLLIDER_MAX_CONTACTS * (size_t)(row))
#define COLLIDER_CONTACT_COUNT(C, row) (C).contact_count[row]
#define COLLIDER_SET_CONTACT_COUNT(C, row, value) (C).contact_count[row] = (value)
#define COLLIDER_ACTIVE(P, i) ((P).info[i] & DEM_INFO_ACTIVE)
#define COLLIDER_MATERIAL(P, i) ((int)((P).info[i] >> DEM_INFO_MATERIAL_SHIFT))
#define COLLIDER_POSITION(P, i) (P).pos[i]
#define COLLIDER_VELOCITY(P, i) (P).vel[i]
#define COLLIDER_OMEGA(P, i) (P).omega[i]
#define COLLIDER_ROTATION(P) (P).rotation
#define COLLIDER_OLD_POSITION(C, i) (C).old_pos[i]
#endif

#if defined(__SLANG__)
typedef ColliderRow ColliderSpringRow;
#endif

// The constants of engine/colliders/kernels.py; the CUDA launcher passes the Python values with -D so the
// two cannot drift apart (these defaults serve the Slang kernel and a compile on its own).
#ifndef COLLIDER_MAX_CONTACTS
#define COLLIDER_MAX_CONTACTS 4
#endif
#ifndef COLLIDER_MAX_CANDIDATES
#define COLLIDER_MAX_CANDIDATES 48
#endif
#ifndef COLLIDER_SWEEP_PASSES
#define COLLIDER_SWEEP_PASSES 4
#endif
#ifndef COLLIDER_EDGE_TOLERANCE
#define COLLIDER_EDGE_TOLERANCE COLLIDER_F64(1e-6)
#endif
#ifndef COLLIDER_ON_TRIANGLE_TOLERANCE
#define COLLIDER_ON_TRIANGLE_TOLERANCE COLLIDER_F64(1e-6)
#endif
#ifndef COLLIDER_MATCH_COS
#define COLLIDER_MATCH_COS COLLIDER_F64(0.7)
#endif
// Doubles per contact slot in the springs: ξ (0–2) and ξ_r (3–5).
#define COLLIDER_SPRING_WIDTH 6

// Everything below is the colliders' geometry, in both languages.

// Corner a of triangle t and its edges b − a, c − a [m] (engine.packing.queries.triangle_edges).
struct ColliderTriangle {
    double ax, ay, az, ux, uy, uz, vx, vy, vz;
};

COLLIDER_HD ColliderTriangle collider_triangle(COLLIDER_SOURCE C, int t) {
    const ColliderCorners tri = COLLIDER_CORNERS(C, t);
    const ColliderRow a = COLLIDER_VERTEX(C, tri[0]);
    const ColliderRow b = COLLIDER_VERTEX(C, tri[1]);
    const ColliderRow c = COLLIDER_VERTEX(C, tri[2]);
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

COLLIDER_HD ColliderClosest collider_closest(COLLIDER_SOURCE C, int t, double px, double py, double pz) {
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

// Unit face normal of triangle t (+y for a degenerate one), as kernels._face_normal.
COLLIDER_HD void collider_face_normal(COLLIDER_SOURCE C, int t, COLLIDER_OUT(double) nx, COLLIDER_OUT(double) ny,
                                      COLLIDER_OUT(double) nz) {
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
COLLIDER_HD void collider_surface_velocity(COLLIDER_SOURCE C, int t, double w0, double w1, double w2,
                                           COLLIDER_OUT(double) sx, COLLIDER_OUT(double) sy, COLLIDER_OUT(double) sz) {
    const ColliderCorners tri = COLLIDER_CORNERS(C, t);
    const ColliderRow a = COLLIDER_VERTEX_VELOCITY(C, tri[0]);
    const ColliderRow b = COLLIDER_VERTEX_VELOCITY(C, tri[1]);
    const ColliderRow c = COLLIDER_VERTEX_VELOCITY(C, tri[2]);
    sx = w0 * a[0] + w1 * b[0] + w2 * c[0];
    sy = w0 * a[1] + w1 * b[1] + w2 * c[1];
    sz = w0 * a[2] + w1 * b[2] + w2 * c[2];
}

// The candidate triangles of one grain: those closer than the reach, the closest
// COLLIDER_MAX_CANDIDATES sorted by (d², index) (kernels.gather_candidates). Only d² and the index are
// kept: the closest points are recomputed where needed, which keeps a GPU thread's scratch small. The
// list keeps the smallest keys of a total order, so it is the same whatever order the triangles are
// offered in (a BVH walk, an OptiX traversal, a Slang ray query).
struct ColliderCandidates {
    int found;
    int tri[COLLIDER_MAX_CANDIDATES];
    double d2[COLLIDER_MAX_CANDIDATES];
};

// Offers triangle t to the candidate list c of the grain at p [m] with squared reach [m²] (the body of
// the BVH leaf loop, of the OptiX intersection program and of the Slang ray query).
COLLIDER_HD void collider_offer_candidate(COLLIDER_SOURCE C, int t, double px, double py, double pz, double reach2,
                                          COLLIDER_INOUT(ColliderCandidates) c) {
    const double d2 = collider_closest(C, t, px, py, pz).d2;
    if (d2 >= reach2) return;
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

// Möller–Trumbore test of the segment p0 + s e, s in [0, 1], against triangle t, both sides, with the
// watertight barycentric slack (kernels.segment_triangle). Returns s, or −1 without a hit (u_out and
// v_out then as they were).
COLLIDER_HD double collider_segment(COLLIDER_SOURCE C, int t, double p0x, double p0y, double p0z, double ex,
                                    double ey, double ez, COLLIDER_INOUT(double) u_out,
                                    COLLIDER_INOUT(double) v_out) {
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

COLLIDER_HD void collider_crossing_start(COLLIDER_OUT(ColliderCrossing) c, double ox, double oy, double oz, double px,
                                         double py, double pz) {
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
// not depend on the order triangles are offered in (the body of the BVH leaf loop, of the OptiX
// intersection program and of the Slang ray query).
COLLIDER_HD void collider_offer_crossing(COLLIDER_SOURCE C, int t, COLLIDER_INOUT(ColliderCrossing) c) {
    const ColliderCorners tri = COLLIDER_CORNERS(C, t);
    const ColliderRow d0 = COLLIDER_DISPLACEMENT(C, tri[0]);
    const ColliderRow d1 = COLLIDER_DISPLACEMENT(C, tri[1]);
    const ColliderRow d2 = COLLIDER_DISPLACEMENT(C, tri[2]);
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

// Swept test of one collider for the grain in slot i (kernels.sweep): a grain whose centre path from
// its old position to its position crossed the surface is put back at contact distance on the side it
// came from and its normal velocity relative to the surface reflected; the corrected path is tested
// again, up to COLLIDER_SWEEP_PASSES times. ``offer_all`` offers the triangles near a path to a
// ColliderCrossing (COLLIDER_OFFER_ALL: a BVH walk or an OptiX trace in CUDA, a ray query in Slang).
// Returns the corrections made.
COLLIDER_GENERIC_OFFER
COLLIDER_HD int collider_grain_sweep_with(COLLIDER_GRAINS P, COLLIDER_SOURCE C, int i,
                                          CONTACT_IN(OfferAll) offer_all) {
    if (!COLLIDER_ACTIVE(P, i)) return 0;
    const float4 o4 = COLLIDER_OLD_POSITION(C, i);
    const double ox = (double)o4.x, oy = (double)o4.y, oz = (double)o4.z;
    const double reach = (double)o4.w + COLLIDER_HALF_THICKNESS(C);
    const int material = COLLIDER_MATERIAL(P, i);
    int corrected = 0;
    for (int pass = 0; pass < COLLIDER_SWEEP_PASSES; ++pass) {
        float4 p4 = COLLIDER_POSITION(P, i);
        const double px = (double)p4.x, py = (double)p4.y, pz = (double)p4.z;
        ColliderCrossing c;
        collider_crossing_start(c, ox, oy, oz, px, py, pz);
        COLLIDER_OFFER_ALL(offer_all, c);
        const int t = c.t;
        if (t < 0) break;
        double nx, ny, nz;
        collider_face_normal(C, t, nx, ny, nz);
        const ColliderCorners corners = COLLIDER_CORNERS(C, t);
        const ColliderRow a = COLLIDER_VERTEX(C, corners[0]);
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
        COLLIDER_POSITION(P, i) = p4;
        const double w0 = 1.0 - c.w1 - c.w2;
        double svx, svy, svz;
        collider_surface_velocity(C, t, w0, c.w1, c.w2, svx, svy, svz);
        float4 v4 = COLLIDER_VELOCITY(P, i);
        const double v_n = ((double)v4.x - svx) * nx + ((double)v4.y - svy) * ny + ((double)v4.z - svz) * nz;
        if (v_n < 0.0) {
            const double bounce = (1.0 + COLLIDER_RESTITUTION(C, material)) * v_n;
            v4.x = (float)((double)v4.x - bounce * nx);
            v4.y = (float)((double)v4.y - bounce * ny);
            v4.z = (float)((double)v4.z - bounce * nz);
            COLLIDER_VELOCITY(P, i) = v4;
        }
        ++corrected;
    }
    return corrected;
}
