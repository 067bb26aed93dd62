// Grains against triangle-mesh colliders in CUDA: what only the CUDA paths have around the shared
// geometry and swept test of kernels/collider_geometry.h and contacts of kernels/collider_contacts.h — the walk of the uploaded BVH
// (engine.packing.bvh) that offers triangles to a grain's candidate list and to its first-crossing search,
// the sums over a grain's colliders, and the OptiX boxes of the triangles.
// kernels/colliders.cu wraps these in CUDA kernels (one thread per slot), kernels/optix_colliders.cu in
// OptiX programs; tests/engine/test_collider_device_math.py compiles them for the host and compares them
// with the numba kernels. Included, not compiled on its own.
//
// Arithmetic is double throughout, as in the numba kernels, and the launcher compiles with
// --fmad=false: without fused multiply-adds every operation rounds as numpy/numba round it, so the same
// inputs give the same bits on the CPU reference, on the host build and on the GPU.
#pragma once
#include "collider_contacts.h"

#if !defined(__CUDACC__) && !defined(__CUDACC_RTC__)
#include <vector_functions.h>  // make_double3 on the host
#include <cmath>
#endif

// The BVH walk's stack (engine/colliders/kernels.py's; the launcher passes it with -D).
#ifndef COLLIDER_STACK_DEPTH
#define COLLIDER_STACK_DEPTH 128
#endif

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

// One grain's proximity query: centre [m] and squared reach [m²], and its candidate list.
struct ColliderProximity {
    double px, py, pz, reach2;
    ColliderCandidates* candidates;
};

// Offers triangle t to the query (the body of the BVH leaf loop and of the OptiX intersection program).
COLLIDER_HD void collider_offer_triangle(const ColliderParams& C, int t, const ColliderProximity& q) {
    collider_offer_candidate(C, t, q.px, q.py, q.pz, q.reach2, *q.candidates);
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

// Force [N] on the grain in slot i from its candidate triangles (collider_resolve_sum); with rotation or
// cohesion the torque [N m] into *torque.
COLLIDER_HD double3 collider_resolve(const DemParams& P, const ColliderParams& C, int i,
                                     const ColliderCandidates& candidates, double3* torque = nullptr) {
    double3 torque_sum;
    const double3 sum = collider_resolve_sum(P, C, i, candidates, torque_sum);
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
