// Grains against triangle-mesh colliders, the contacts of one grain, written once for every GPU path: its
// candidate triangles resolved into the distinct touching spots and their forces and torques (the double
// instances of kernels/contact_law.h; friction models 'damper' and 'spring', the tangential and rolling
// springs kept per grain and contact slot), line for line as collider_forces in
// engine/colliders/kernels.py. One source, two languages, through the macros and accessors of
// kernels/collider_geometry.h (which says who includes it, and how each language compiles it):
//   CUDA C++ — kernels/collider_math.cuh includes it;
//   Slang — kernels/rt_colliders.slang includes it.
// Included, not compiled on its own.
#pragma once
#include "collider_geometry.h"

// Forgets the springs of the grain in slot i (no contact with C, or inactive), as kernels._clear_slots.
COLLIDER_HD void collider_forget(COLLIDER_GRAINS P, COLLIDER_SOURCE C, int i) {
    const int row = COLLIDER_SPRING_ROW(P, C, i);
    if (row < 0) return;
    const int old = COLLIDER_CONTACT_COUNT(C, row);
    ColliderSpringRow springs = COLLIDER_SPRINGS(C, row);
    ColliderSpringRow normals = COLLIDER_NORMALS(C, row);
    for (int s = 0; s < COLLIDER_SPRING_WIDTH * old; ++s) springs[s] = 0.0;
    for (int s = 0; s < 3 * old; ++s) normals[s] = 0.0;
    COLLIDER_SET_CONTACT_COUNT(C, row, 0);
}

// Force [N] on the grain in slot i from its candidate triangles, summed over the distinct touching
// spots in double (kernels.collider_forces), and their torque [N m] into torque_sum. With springs, a new
// contact inherits the spring of the grain's unused slot whose normal is closest (cosine above
// COLLIDER_MATCH_COS), and the slots are then rewritten with this step's contacts in order, as the CPU
// reference keeps them. With rotation or cohesion against C the contacts use the full law
// (ContactLaw::Full: the grain's ω in the slip and rolling velocities, the tangential force at the arm
// r − δ/2, rolling resistance μ_r, SJKR cohesion c·π(2rδ − δ²)); otherwise the paper's, whose torque is
// zero.
COLLIDER_HD ContactVector<double> collider_resolve_sum(COLLIDER_GRAINS P, COLLIDER_SOURCE C, int i,
                                                       CONTACT_IN(ColliderCandidates) candidates,
                                                       COLLIDER_OUT(ContactVector<double>) torque_sum) {
    const double zero = 0.0;
    ContactVector<double> sum = contact_vector(zero, zero, zero);
    torque_sum = contact_vector(zero, zero, zero);
    const float4 p4 = COLLIDER_POSITION(P, i);
    const float4 v4 = COLLIDER_VELOCITY(P, i);
    const double px = (double)p4.x, py = (double)p4.y, pz = (double)p4.z;
    const double reach = (double)p4.w + COLLIDER_HALF_THICKNESS(C);
    const double tolerance = COLLIDER_ON_TRIANGLE_TOLERANCE * reach;
    const double tolerance2 = tolerance * tolerance;
    const int material = COLLIDER_MATERIAL(P, i);
    const double m = (double)v4.w;
    const int row = COLLIDER_SPRING_ROW(P, C, i);
    ColliderSpringRow springs = COLLIDER_SPRINGS(C, row);
    ColliderSpringRow normals = COLLIDER_NORMALS(C, row);
    const int old = row < 0 ? 0 : COLLIDER_CONTACT_COUNT(C, row);
    bool used[COLLIDER_MAX_CONTACTS] COLLIDER_SCRATCH;
    double hist[COLLIDER_MAX_CONTACTS][COLLIDER_SPRING_WIDTH] COLLIDER_SCRATCH;
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
        if (dist <= COLLIDER_F64(1e-12) * reach) {  // centre on the surface: no direction from q, take the face normal
            collider_face_normal(C, t, dx, dy, dz);
            dist_used = 1.0;
        }
        const double nx = dx / dist_used, ny = dy / dist_used, nz = dz / dist_used;
        bool has_spring = false, has_rolling = false;
        if (row >= 0) {
            // Inherit the spring of the old slot with the nearest normal, if near enough.
            int best = -1;
            double best_cos = COLLIDER_MATCH_COS;
            for (int s = 0; s < old; ++s) {
                if (used[s]) continue;
                const double cosine = nx * normals[3 * s] + ny * normals[3 * s + 1] + nz * normals[3 * s + 2];
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
            if (COLLIDER_SPRING_MODEL(C)) has_spring = true;
            if (COLLIDER_ROLLING_MODEL(C)) has_rolling = true;
        }
        double svx, svy, svz;
        collider_surface_velocity(C, t, q.w0, q.w1, q.w2, svx, svy, svz);
        // The springs as the law evolves them (ξ and ξ_r of the slot, the CPU reference's layout).
        ContactVector<double> xi = contact_vector(zero, zero, zero), xi_r = contact_vector(zero, zero, zero);
        if (has_spring) xi = contact_vector(hist[c][0], hist[c][1], hist[c][2]);
        if (has_rolling) xi_r = contact_vector(hist[c][3], hist[c][4], hist[c][5]);
        ContactVector<double> f;
        const double c_surface = COLLIDER_COHESION(C, material);
        if (COLLIDER_ROTATION(P) || c_surface > 0.0) {
            const double overlap = reach - dist;
            const double r = (double)p4.w;
            ContactRotation<double> rotation;
            rotation.arm_i = r - 0.5 * overlap;
            rotation.arm_j = 0.0;
            rotation.w_i = contact_vector(zero, zero, zero);
            if (COLLIDER_ROTATION(P)) {
                const float4 w = COLLIDER_OMEGA(P, i);
                rotation.w_i = contact_vector((double)w.x, (double)w.y, (double)w.z);
            }
            rotation.w_j = contact_vector(zero, zero, zero);
            rotation.r_eff = r;
            rotation.mu_r = COLLIDER_ROLL(C, material);
            // The wall's contact disc: the shell's face cuts the sphere δ deep (math.pi's double).
            rotation.cohesion = c_surface > 0.0
                ? c_surface * COLLIDER_F64(3.141592653589793) * (2.0 * r * overlap - overlap * overlap) : 0.0;
            ContactTorqueArms<double> arms;
            f = contact_force<double, ContactLaw::Full>(
                nx, ny, nz, overlap, (double)v4.x - svx, (double)v4.y - svy, (double)v4.z - svz, m,
                COLLIDER_STIFFNESS(C), COLLIDER_BETA(C, material), COLLIDER_MU(C, material),
                COLLIDER_OPTIONAL_HISTORY(has_spring, xi), COLLIDER_DT(C), COLLIDER_TANGENTIAL_RATIO(C), rotation,
                COLLIDER_OPTIONAL_HISTORY(rotation.mu_r > 0.0 && has_rolling, xi_r), arms);
            const ContactVector<double> tau = contact_torque_i<double>(arms, rotation);
            torque_sum.x += tau.x;
            torque_sum.y += tau.y;
            torque_sum.z += tau.z;
        } else {
            // As the CPU reference's _contact: +x where there is no distance (a NaN centre only).
            const bool has_normal = dist_used > 0.0;
            f = contact_force_paper<double>(
                has_normal ? nx : 1.0, has_normal ? ny : 0.0, has_normal ? nz : 0.0, reach - dist,
                (double)v4.x - svx, (double)v4.y - svy, (double)v4.z - svz, m, COLLIDER_STIFFNESS(C),
                COLLIDER_BETA(C, material), COLLIDER_MU(C, material), COLLIDER_OPTIONAL_HISTORY(has_spring, xi),
                COLLIDER_DT(C), COLLIDER_TANGENTIAL_RATIO(C));
        }
        if (has_spring) {
            hist[c][0] = xi.x;
            hist[c][1] = xi.y;
            hist[c][2] = xi.z;
        }
        if (has_rolling) {
            hist[c][3] = xi_r.x;
            hist[c][4] = xi_r.y;
            hist[c][5] = xi_r.z;
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
        COLLIDER_SET_CONTACT_COUNT(C, row, kept);
    }
    return sum;
}
