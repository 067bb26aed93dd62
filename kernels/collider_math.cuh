// Grains against triangle-mesh colliders, one grain at a time: the contact forces and the swept test
// of engine/colliders/kernels.py (friction model 'damper'), line for line, so that the GPU finds the
// same contacts as the CPU reference. kernels/colliders.cu wraps these in CUDA kernels (one thread per
// slot); tests/engine/test_collider_device_math.py compiles them for the host and compares them with
// the numba kernels. Included, not compiled on its own.
//
// Arithmetic is double throughout, as in the numba kernels, and the launcher compiles with
// --fmad=false: without fused multiply-adds every operation rounds as numpy/numba round it, so the same
// inputs give the same bits on the CPU reference, on the host build and on the GPU.
#pragma once
#include "dem_params.h"

#if defined(__CUDACC__)
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

// Triangles closer than sqrt(reach2) to p, the closest COLLIDER_MAX_CANDIDATES sorted by (d², index)
// (kernels.gather_candidates). Only d² and the index are kept: the closest points are recomputed
// where needed, which keeps a GPU thread's scratch small. Returns the candidate count.
COLLIDER_HD int collider_gather(const ColliderParams& C, double px, double py, double pz, double reach2,
                                int* stack, int* cand_tri, double* cand_d2) {
    int found = 0;
    stack[0] = 0;
    int top = 1;
    while (top > 0) {
        const int node = stack[--top];
        if (collider_box_distance2(C, node, px, py, pz) >= reach2) continue;
        if (C.left[node] >= 0) {
            stack[top] = C.left[node];
            stack[top + 1] = C.left[node] + 1;
            top += 2;
            continue;
        }
        for (int slot = C.start[node]; slot < C.start[node] + C.count[node]; ++slot) {
            const int t = C.order[slot];
            const double d2 = collider_closest(C, t, px, py, pz).d2;
            if (d2 >= reach2) continue;
            int k = found;
            while (k > 0 && (cand_d2[k - 1] > d2 || (cand_d2[k - 1] == d2 && cand_tri[k - 1] > t))) --k;
            if (k >= COLLIDER_MAX_CANDIDATES) continue;
            const int last = found < COLLIDER_MAX_CANDIDATES - 1 ? found : COLLIDER_MAX_CANDIDATES - 1;
            for (int m = last; m > k; --m) {
                cand_tri[m] = cand_tri[m - 1];
                cand_d2[m] = cand_d2[m - 1];
            }
            cand_tri[k] = t;
            cand_d2[k] = d2;
            if (found < COLLIDER_MAX_CANDIDATES) ++found;
        }
    }
    return found;
}

// The wall form of the contact law (kernels._contact with spring = False) in double: force on the
// grain from a contact at distance dist along (dx, dy, dz), overlap δ, relative velocity dv.
COLLIDER_HD void collider_contact(double dx, double dy, double dz, double dist, double overlap, double dvx,
                                  double dvy, double dvz, double m_eff, double stiffness, double beta, double mu,
                                  double& fx, double& fy, double& fz) {
    double nx = 1.0, ny = 0.0, nz = 0.0;
    if (dist > 0.0) {
        nx = dx / dist;
        ny = dy / dist;
        nz = dz / dist;
    }
    const double root = sqrt(m_eff * stiffness);
    const double v_n = dvx * nx + dvy * ny + dvz * nz;
    const double f_n = stiffness * overlap - 2.0 * beta * root * v_n;
    fx = f_n * nx;
    fy = f_n * ny;
    fz = f_n * nz;
    const double tx = dvx - v_n * nx, ty = dvy - v_n * ny, tz = dvz - v_n * nz;
    const double cap = mu * (0.0 > f_n ? 0.0 : f_n);  // Python's max(f_n, 0.0), signed zeros included
    const double speed_t = sqrt(tx * tx + ty * ty + tz * tz);
    if (speed_t > 0.0) {
        const double spring_t = 2.0 * root * speed_t;
        const double f_t = (cap < spring_t ? cap : spring_t) / speed_t;
        fx -= f_t * tx;
        fy -= f_t * ty;
        fz -= f_t * tz;
    }
}

// Force [N] of one collider on the grain in slot i, summed over its contacts in double
// (kernels.collider_forces, 'damper' friction, without the clearance cache: the cache only skips
// work, never changes a result). Zero for an inactive slot.
COLLIDER_HD double3 collider_grain_force_sum(const DemParams& P, const ColliderParams& C, int i) {
    double3 sum = make_double3(0.0, 0.0, 0.0);
    const unsigned int info = P.info[i];
    if (!(info & DEM_INFO_ACTIVE)) return sum;
    const float4 p4 = P.pos[i];
    const float4 v4 = P.vel[i];
    const double px = (double)p4.x, py = (double)p4.y, pz = (double)p4.z;
    const double reach = (double)p4.w + C.half_thickness;
    const double reach2 = reach * reach;
    if (collider_box_distance2(C, 0, px, py, pz) >= reach2) return sum;
    int stack[COLLIDER_STACK_DEPTH];
    int cand_tri[COLLIDER_MAX_CANDIDATES];
    double cand_d2[COLLIDER_MAX_CANDIDATES];
    const int found = collider_gather(C, px, py, pz, reach2, stack, cand_tri, cand_d2);
    const double tolerance = COLLIDER_ON_TRIANGLE_TOLERANCE * reach;
    const double tolerance2 = tolerance * tolerance;
    const int material = (int)(info >> DEM_INFO_MATERIAL_SHIFT);
    const double m = (double)v4.w;
    int kept = 0;
    for (int a = 0; a < found && kept < COLLIDER_MAX_CONTACTS; ++a) {
        const int t = cand_tri[a];
        const ColliderClosest q = collider_closest(C, t, px, py, pz);
        // A spot that also lies on a closer candidate is not a distinct touching spot (kernels module
        // docstring): a neighbour slopes closer, or it is an edge or corner seen from another face.
        bool covered = false;
        for (int b = 0; b < a && !covered; ++b) {
            covered = collider_closest(C, cand_tri[b], q.qx, q.qy, q.qz).d2 <= tolerance2;
        }
        if (covered) continue;
        ++kept;
        const double dist = sqrt(q.d2);
        double dx = px - q.qx, dy = py - q.qy, dz = pz - q.qz;
        double dist_used = dist;
        if (dist <= 1e-12 * reach) {  // centre on the surface: no direction from q, take the face normal
            collider_face_normal(C, t, dx, dy, dz);
            dist_used = 1.0;
        }
        double svx, svy, svz;
        collider_surface_velocity(C, t, q.w0, q.w1, q.w2, svx, svy, svz);
        double fx, fy, fz;
        collider_contact(dx, dy, dz, dist_used, reach - dist, (double)v4.x - svx, (double)v4.y - svy,
                         (double)v4.z - svz, m, C.stiffness, C.beta[material], C.mu[material], fx, fy, fz);
        sum.x += fx;
        sum.y += fy;
        sum.z += fz;
    }
    return sum;
}

// Adds the force of every collider (colliders[0 .. count)) on the grain in slot i to P.force[i]: summed
// in double in collider order, as the CPU adds them to its float64 forces, then rounded once to the
// float32 force.
COLLIDER_HD void collider_grain_forces(const DemParams& P, const ColliderParams* colliders, int count, int i) {
    if (!(P.info[i] & DEM_INFO_ACTIVE)) return;
    double3 sum = make_double3(0.0, 0.0, 0.0);
    for (int c = 0; c < count; ++c) {
        const double3 one = collider_grain_force_sum(P, colliders[c], i);
        sum.x += one.x;
        sum.y += one.y;
        sum.z += one.z;
    }
    float4 f = P.force[i];
    f.x = (float)((double)f.x + sum.x);
    f.y = (float)((double)f.y + sum.y);
    f.z = (float)((double)f.z + sum.z);
    P.force[i] = f;
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

// The first triangle the path o → p crosses, each tested in its own frame (kernels.first_crossing):
// the start moved by the triangle's mean displacement over the step. Returns the triangle or −1, with
// the hit's weights (w1, w2) and the moved start (sx, sy, sz).
COLLIDER_HD int collider_first_crossing(const ColliderParams& C, double displacement_max, double ox, double oy,
                                        double oz, double px, double py, double pz, int* stack, double& best_w1,
                                        double& best_w2, double& best_sx, double& best_sy, double& best_sz) {
    const double lx = (px < ox ? px : ox) - displacement_max;
    const double ly = (py < oy ? py : oy) - displacement_max;
    const double lz = (pz < oz ? pz : oz) - displacement_max;
    const double hx = (px > ox ? px : ox) + displacement_max;
    const double hy = (py > oy ? py : oy) + displacement_max;
    const double hz = (pz > oz ? pz : oz) + displacement_max;
    double best_s = 2.0;
    int best_t = -1;
    best_w1 = best_w2 = best_sx = best_sy = best_sz = 0.0;
    stack[0] = 0;
    int top = 1;
    while (top > 0) {
        const int node = stack[--top];
        const double* lo = C.box_lo + 3 * node;
        const double* hi = C.box_hi + 3 * node;
        if (lx > hi[0] || ly > hi[1] || lz > hi[2] || hx < lo[0] || hy < lo[1] || hz < lo[2]) continue;
        if (C.left[node] >= 0) {
            stack[top] = C.left[node];
            stack[top + 1] = C.left[node] + 1;
            top += 2;
            continue;
        }
        for (int slot = C.start[node]; slot < C.start[node] + C.count[node]; ++slot) {
            const int t = C.order[slot];
            const int* tri = C.triangles + 3 * t;
            const double* d0 = C.displacement + 3 * tri[0];
            const double* d1 = C.displacement + 3 * tri[1];
            const double* d2 = C.displacement + 3 * tri[2];
            const double sx = ox + (d0[0] + d1[0] + d2[0]) / 3.0;
            const double sy = oy + (d0[1] + d1[1] + d2[1]) / 3.0;
            const double sz = oz + (d0[2] + d1[2] + d2[2]) / 3.0;
            double w1 = 0.0, w2 = 0.0;
            const double s = collider_segment(C, t, sx, sy, sz, px - sx, py - sy, pz - sz, w1, w2);
            if (s < 0.0 || s > best_s || (s == best_s && t > best_t)) continue;
            best_s = s;
            best_t = t;
            best_w1 = w1;
            best_w2 = w2;
            best_sx = sx;
            best_sy = sy;
            best_sz = sz;
        }
    }
    return best_t;
}

// Swept test of one collider for the grain in slot i (kernels.sweep): a grain whose centre path from
// C.old_pos[i] to P.pos[i] crossed the surface is put back at contact distance on the side it came
// from and its normal velocity relative to the surface reflected. Returns the corrections made.
COLLIDER_HD int collider_grain_sweep(const DemParams& P, const ColliderParams& C, double displacement_max, int i) {
    const unsigned int info = P.info[i];
    if (!(info & DEM_INFO_ACTIVE)) return 0;
    const float4 o4 = C.old_pos[i];
    const double ox = (double)o4.x, oy = (double)o4.y, oz = (double)o4.z;
    const double reach = (double)o4.w + C.half_thickness;
    const int material = (int)(info >> DEM_INFO_MATERIAL_SHIFT);
    int stack[COLLIDER_STACK_DEPTH];
    int corrected = 0;
    for (int pass = 0; pass < COLLIDER_SWEEP_PASSES; ++pass) {
        float4 p4 = P.pos[i];
        const double px = (double)p4.x, py = (double)p4.y, pz = (double)p4.z;
        double w1, w2, sx, sy, sz;
        const int t = collider_first_crossing(C, displacement_max, ox, oy, oz, px, py, pz, stack, w1, w2, sx, sy, sz);
        if (t < 0) break;
        double nx, ny, nz;
        collider_face_normal(C, t, nx, ny, nz);
        const double* a = C.vertices + 3 * C.triangles[3 * t];
        const double came = (sx - a[0]) * nx + (sy - a[1]) * ny + (sz - a[2]) * nz;
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
        const double w0 = 1.0 - w1 - w2;
        double svx, svy, svz;
        collider_surface_velocity(C, t, w0, w1, w2, svx, svy, svz);
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
