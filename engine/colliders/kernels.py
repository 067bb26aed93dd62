"""numba kernels of the colliders: BVH refit, contact forces against triangles, swept test.

The tree is ``engine.packing.bvh``'s flat layout (``order``, ``box_lo``, ``box_hi``, ``left``, ``start``,
``count``; children after their parent), built there and refit here when the vertices move.

Contacts. For each grain near a collider, every triangle closer than the reach R = r + thickness/2 is
a candidate, sorted by (squared distance, triangle index), so the answer never depends on the tree.
A candidate whose closest point q also lies on an earlier (closer, or as close with a lower index)
candidate triangle is dropped: q is then not a local minimum of the distance over the surface (a
neighbour slopes closer) or is the same edge/vertex contact seen from another face. What is left are
the distinct touching spots: one on a flat or smoothly curved surface however finely it is
tessellated, one at a convex edge or corner, two or three in a concave crease or corner (stairs).
Each spot is a contact with the law of ``engine.contact_law`` (the wall form, m_eff = m_i), normal
from q to the centre, relative velocity against the surface velocity at q (interpolated from the
vertex velocities with q's barycentric weights, exact for rigid motion).

Each contact has the wall's full law (``cpu_kernels_law.contact_law_full``, as ``wall_forces_full``
calls it): with rotation the grain's ω in the slip velocity and the tangential force at the arm
r − δ/2, rolling resistance μ_r with the rolling radius r (a wall's), and SJKR cohesion c·π(2rδ − δ²)
(the contact disc of a sphere on a plane), with or without rotation.

Tangential and rolling springs (ξ, ξ_r) are kept per (grain, collider) in up to ``MAX_CONTACTS`` slots
with the normal they were last used with; a new contact inherits the springs of the unused slot whose
normal is closest (within ``MATCH_COS``), so a grain sliding, resting or rolling across triangle edges
keeps its static friction and rolling resistance.

Every loop is parallel over blocks of grains, each grain computed alone in a fixed order, so results do
not depend on the thread count.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from ..backends.cpu_kernels_law import _contact, contact_law_full, law_of, plane_cohesion
from ..kernel_options import KERNEL_OPTIONS

#: Barycentric slack of the swept segment–triangle test (relative to the triangle's size).
EDGE_TOLERANCE = 1e-6
from ..packing.queries import (STACK_DEPTH, _box_distance_squared, _triangle_distance_squared,
                               closest_on_triangle, triangle_edges)

#: Distinct touching spots kept per grain and collider (a box corner seen from inside has 3).
MAX_CONTACTS = 4
#: Candidate triangles kept per grain: the closest ones. Enough for every triangle within reach while
#: triangles are no smaller than about half the reach; with finer meshes the farthest are dropped,
#: which can only lose a second touching spot far from the first, never add a spurious one.
MAX_CANDIDATES = 48
#: A new contact inherits an old spring when their normals are closer than this cosine (≈ 45°).
MATCH_COS = 0.7
#: Grains per parallel block (scratch arrays are allocated per block, not per grain).
BLOCK = 512
#: Swept-test passes per grain and step (each undoes one crossing; three faces meet at a corner).
SWEEP_PASSES = 4
#: Clearances are shortened by this fraction of the reach against rounding.
CLEARANCE_MARGIN = 1e-6
#: Closest points closer than this fraction of the reach to a triangle count as lying on it.
ON_TRIANGLE_TOLERANCE = 1e-6


@njit(**KERNEL_OPTIONS)
def refit(vertices, triangles, order, left, start, count, box_lo, box_hi):
    """Recompute every node box from the current vertices, children first (reverse index order).

    Returns:
        Sum of the node boxes' surface areas [m²]: the tree's query cost, compared with its value at
        the last build to decide when a rebuild pays off.
    """
    cost = 0.0
    for node in range(left.shape[0] - 1, -1, -1):
        for a in range(3):
            box_lo[node, a] = np.inf
            box_hi[node, a] = -np.inf
        if left[node] < 0:
            for slot in range(start[node], start[node] + count[node]):
                t = order[slot]
                for corner in range(3):
                    v = triangles[t, corner]
                    for a in range(3):
                        box_lo[node, a] = min(box_lo[node, a], vertices[v, a])
                        box_hi[node, a] = max(box_hi[node, a], vertices[v, a])
        else:
            for child in (left[node], left[node] + 1):
                for a in range(3):
                    box_lo[node, a] = min(box_lo[node, a], box_lo[child, a])
                    box_hi[node, a] = max(box_hi[node, a], box_hi[child, a])
        cost += tree_node_area(box_lo[node], box_hi[node])
    return cost


@njit(**KERNEL_OPTIONS)
def tree_node_area(lo, hi):
    ex = hi[0] - lo[0]
    ey = hi[1] - lo[1]
    ez = hi[2] - lo[2]
    return 2.0 * (ex * ey + ey * ez + ez * ex)


@njit(**KERNEL_OPTIONS)
def tree_cost(box_lo, box_hi):
    """Sum of node surface areas [m²] (see ``refit``)."""
    cost = 0.0
    for node in range(box_lo.shape[0]):
        cost += tree_node_area(box_lo[node], box_hi[node])
    return cost


@njit(**KERNEL_OPTIONS)
def gather_candidates(px, py, pz, reach2, vertices, triangles, order, box_lo, box_hi, left, start, count,
                      stack, cand_tri, cand_geo):
    """Triangles closer than sqrt(reach2) to p, the closest ``cand_tri.shape[0]`` sorted by (d², index).

    Writes ``cand_tri[k]`` and ``cand_geo[k] = (d², qx, qy, qz, w0, w1, w2)``.

    Returns:
        (candidate count, a lower bound of the squared distance [m²] from p to every triangle that is
        not a candidate: the nearest pruned box or rejected triangle).
    """
    capacity = cand_tri.shape[0]
    found = 0
    bound2 = np.inf
    stack[0] = 0
    top = 1
    while top > 0:
        top -= 1
        node = stack[top]
        box2 = _box_distance_squared(px, py, pz, box_lo[node], box_hi[node])
        if box2 >= reach2:
            bound2 = min(bound2, box2)
            continue
        if left[node] >= 0:
            stack[top] = left[node]
            stack[top + 1] = left[node] + 1
            top += 2
            continue
        for slot in range(start[node], start[node] + count[node]):
            t = order[slot]
            d2, qx, qy, qz, w0, w1, w2 = closest_on_triangle(px, py, pz, vertices, triangles[t])
            if d2 >= reach2:
                bound2 = min(bound2, d2)
                continue
            # Insertion into the sorted list, dropping the farthest when full.
            k = found
            while k > 0 and (cand_geo[k - 1, 0] > d2 or (cand_geo[k - 1, 0] == d2 and cand_tri[k - 1] > t)):
                k -= 1
            if k >= capacity:
                continue
            last = min(found, capacity - 1)
            for m in range(last, k, -1):
                cand_tri[m] = cand_tri[m - 1]
                for c in range(7):
                    cand_geo[m, c] = cand_geo[m - 1, c]
            cand_tri[k] = t
            cand_geo[k, 0] = d2
            cand_geo[k, 1] = qx
            cand_geo[k, 2] = qy
            cand_geo[k, 3] = qz
            cand_geo[k, 4] = w0
            cand_geo[k, 5] = w1
            cand_geo[k, 6] = w2
            if found < capacity:
                found += 1
    return found, bound2


@njit(**KERNEL_OPTIONS)
def distinct_contacts(found, cand_tri, cand_geo, vertices, triangles, tolerance2, accepted):
    """Indices into the candidates of the distinct touching spots (module docstring); returns count."""
    kept = 0
    for a in range(found):
        qx = cand_geo[a, 1]
        qy = cand_geo[a, 2]
        qz = cand_geo[a, 3]
        covered = False
        for b in range(a):
            if _triangle_distance_squared(qx, qy, qz, vertices, triangles[cand_tri[b]]) <= tolerance2:
                covered = True
                break
        if not covered:
            accepted[kept] = a
            kept += 1
            if kept == accepted.shape[0]:
                break
    return kept


@njit(**KERNEL_OPTIONS)
def _face_normal(vertices, tri):
    ax, ay, az, ux, uy, uz, vx, vy, vz = triangle_edges(vertices, tri)
    nx = uy * vz - uz * vy
    ny = uz * vx - ux * vz
    nz = ux * vy - uy * vx
    length = math.sqrt(nx * nx + ny * ny + nz * nz)
    if length > 0.0:
        return nx / length, ny / length, nz / length
    return 0.0, 1.0, 0.0


@njit(**KERNEL_OPTIONS)
def _clear_slots(i, springs, normals, contact_count):
    for s in range(contact_count[i]):
        for a in range(6):
            springs[i, s, a] = 0.0
        for a in range(3):
            normals[i, s, a] = 0.0
    contact_count[i] = 0


@njit(parallel=True, **KERNEL_OPTIONS)
def collider_forces(pos, vel, radius, mass, material, active, force, vertices, vertex_velocity, triangles,
                    order, box_lo, box_hi, left, start, count, half_thickness, beta_table, mu_table, roll_table,
                    cohesion_table, stiffness, law_table, spring, dt, springs, normals, contact_count, clock,
                    clearance, clear_from, clear_clock, omega, torque, rotation):
    """Add the force of one collider on every grain to ``force`` (n, 3) [N] (and, with ``rotation``,
    its torque to ``torque`` (n, 3) [N·m], the tangential force acting at the arm r − δ/2, the rolling
    resistance's torque, and the grain's angular velocity ``omega`` (n, 3) [rad/s] entering the slip
    and rolling velocities). Cohesion acts with or without rotation; without rotation, a grain whose
    material has no cohesion against this collider runs the paper's law, its bits kept.

    Grains with a known clearance skip the tree: grain i is certainly out of reach while
    |x_i − clear_from_i| + (clock − clear_clock_i) < clearance_i, where ``clock`` sums the collider's
    largest vertex displacement per step. The skip is exact (no contact is ever missed), so results
    are the same with or without it.

    Args:
        pos, vel: Grain centres [m] and velocities [m/s], float32 (n, 3).
        radius, mass: Grain radii [m] and masses [kg], float32 (n,).
        material, active: Material index (n,) int32, activity (n,) uint8.
        vertices, vertex_velocity: Current world vertex positions [m] and velocities [m/s], (V, 3).
        triangles: Vertex indices (T, 3); the tree arrays describe them at ``vertices``.
        half_thickness: thickness / 2 [m].
        beta_table, mu_table: Damping ratio β and friction μ of each material against this collider (M,).
        roll_table, cohesion_table: Rolling coefficient μ_r (zero without rotation) and SJKR cohesion c
            [Pa] of each material against this collider, float64 (M,).
        stiffness: Normal stiffness k [N/m]; spring: tangential-spring model; dt: step [s].
        law_table: E*, G* [Pa] and friction cap of each material against the collider, float64 (M, 3)
            (engine.contact_law.law_tables); no rows for the linear law of ``stiffness`` with Mochi's cap.
        springs: Per grain and slot: tangential spring ξ (columns 0–2) and rolling spring ξ_r (3–5) [m],
            (n, MAX_CONTACTS, 6).
        normals: Per grain and slot: the unit normal the springs were last used with, (n, MAX_CONTACTS, 3).
        contact_count: Slots in use per grain, int8 (n,).
        clock: Summed largest vertex displacement of the collider so far [m].
        clearance: Distance beyond reach known free of triangles, per grain [m], or ≤ 0 when unknown.
        clear_from, clear_clock: Grain centre (n, 3) [m] and clock [m] when the clearance was measured.
    """
    n = pos.shape[0]
    tabled = law_table.shape[0] > 0  # Hertz–Mindlin or a peer's friction cap: the full law
    blocks = (n + BLOCK - 1) // BLOCK
    root_lo = box_lo[0]
    root_hi = box_hi[0]
    for block in prange(blocks):
        stack = np.empty(STACK_DEPTH, np.int64)
        cand_tri = np.empty(MAX_CANDIDATES, np.int64)
        cand_geo = np.empty((MAX_CANDIDATES, 7))
        accepted = np.empty(MAX_CONTACTS, np.int64)
        hist = np.zeros((MAX_CONTACTS, 6))
        used = np.zeros(MAX_CONTACTS, np.bool_)
        contact_normal = np.zeros((MAX_CONTACTS, 3))
        for i in range(block * BLOCK, min(n, (block + 1) * BLOCK)):
            if active[i] == 0:
                if contact_count[i] > 0:
                    _clear_slots(i, springs, normals, contact_count)
                continue
            px = np.float64(pos[i, 0])
            py = np.float64(pos[i, 1])
            pz = np.float64(pos[i, 2])
            if clearance[i] > 0.0:
                mx = px - clear_from[i, 0]
                my = py - clear_from[i, 1]
                mz = pz - clear_from[i, 2]
                if math.sqrt(mx * mx + my * my + mz * mz) + (clock - clear_clock[i]) < clearance[i]:
                    continue
            reach = np.float64(radius[i]) + half_thickness
            reach2 = reach * reach
            bound2 = _box_distance_squared(px, py, pz, root_lo, root_hi)
            found = 0
            if bound2 < reach2:
                found, bound2 = gather_candidates(px, py, pz, reach2, vertices, triangles, order, box_lo, box_hi, left,
                                                  start, count, stack, cand_tri, cand_geo)
            clearance[i] = -1.0
            if found == 0:
                # Nothing within reach: remember how far the nearest triangle is at least (less a
                # margin for rounding), and skip this grain until it or the collider has moved that far.
                clearance[i] = math.sqrt(bound2) - reach - CLEARANCE_MARGIN * reach
                clear_from[i, 0] = px
                clear_from[i, 1] = py
                clear_from[i, 2] = pz
                clear_clock[i] = clock
                if contact_count[i] > 0:
                    _clear_slots(i, springs, normals, contact_count)
                continue
            kept = distinct_contacts(found, cand_tri, cand_geo, vertices, triangles,
                                     (ON_TRIANGLE_TOLERANCE * reach) ** 2, accepted)
            old = contact_count[i]
            for s in range(old):
                used[s] = False
            fx_sum = 0.0
            fy_sum = 0.0
            fz_sum = 0.0
            tx_sum = ty_sum = tz_sum = 0.0
            m = np.float64(mass[i])
            mat = material[i]
            k_or_e, shear, cap_rule = law_of(stiffness, law_table[mat]) if tabled else (stiffness, 0.0, 0)
            for c in range(kept):
                a = accepted[c]
                t = cand_tri[a]
                dist = math.sqrt(cand_geo[a, 0])
                dx = px - cand_geo[a, 1]
                dy = py - cand_geo[a, 2]
                dz = pz - cand_geo[a, 3]
                if dist <= 1e-12 * reach:
                    # Centre on the surface: no direction from q; take the face normal.
                    dx, dy, dz = _face_normal(vertices, triangles[t])
                    dist_used = 1.0
                else:
                    dist_used = dist
                nx = dx / dist_used
                ny = dy / dist_used
                nz = dz / dist_used
                # Inherit the spring of the old slot with the nearest normal, if near enough.
                best = -1
                best_cos = MATCH_COS
                for s in range(old):
                    if not used[s]:
                        cos = nx * normals[i, s, 0] + ny * normals[i, s, 1] + nz * normals[i, s, 2]
                        if cos > best_cos:
                            best_cos = cos
                            best = s
                for ax in range(6):
                    hist[c, ax] = springs[i, best, ax] if best >= 0 else 0.0
                if best >= 0:
                    used[best] = True
                contact_normal[c, 0] = nx
                contact_normal[c, 1] = ny
                contact_normal[c, 2] = nz
                tri = triangles[t]
                w0 = cand_geo[a, 4]
                w1 = cand_geo[a, 5]
                w2 = cand_geo[a, 6]
                svx = w0 * vertex_velocity[tri[0], 0] + w1 * vertex_velocity[tri[1], 0] + w2 * vertex_velocity[tri[2], 0]
                svy = w0 * vertex_velocity[tri[0], 1] + w1 * vertex_velocity[tri[1], 1] + w2 * vertex_velocity[tri[2], 1]
                svz = w0 * vertex_velocity[tri[0], 2] + w1 * vertex_velocity[tri[1], 2] + w2 * vertex_velocity[tri[2], 2]
                if rotation or cohesion_table[mat] > 0.0 or tabled:
                    overlap = reach - dist
                    r = np.float64(radius[i])
                    cohesive = 0.0
                    if cohesion_table[mat] > 0.0:  # the wall's disc: the shell's face cuts the sphere δ deep
                        cohesive = plane_cohesion(cohesion_table[mat], r, overlap)
                    wx = wy = wz = 0.0
                    if rotation:
                        wx, wy, wz = np.float64(omega[i, 0]), np.float64(omega[i, 1]), np.float64(omega[i, 2])
                    f = contact_law_full(nx, ny, nz, overlap, np.float64(vel[i, 0]) - svx,
                                         np.float64(vel[i, 1]) - svy, np.float64(vel[i, 2]) - svz, wx, wy, wz,
                                         0.0, 0.0, 0.0, r - 0.5 * overlap, 0.0, r, m, k_or_e, shear, cap_rule,
                                         beta_table[mat], mu_table[mat], roll_table[mat], cohesive, spring, hist,
                                         c, dt)
                    fx, fy, fz = f[0], f[1], f[2]
                    tx_sum += f[3]
                    ty_sum += f[4]
                    tz_sum += f[5]
                else:
                    fx, fy, fz = _contact(dx, dy, dz, dist_used, reach - dist, np.float64(vel[i, 0]) - svx,
                                          np.float64(vel[i, 1]) - svy, np.float64(vel[i, 2]) - svz, m, stiffness,
                                          beta_table[mat], mu_table[mat], spring, hist, c, dt)
                fx_sum += fx
                fy_sum += fy
                fz_sum += fz
            for c in range(max(kept, old)):
                for ax in range(6):
                    springs[i, c, ax] = hist[c, ax] if c < kept else 0.0
                for ax in range(3):
                    normals[i, c, ax] = contact_normal[c, ax] if c < kept else 0.0
            contact_count[i] = kept
            force[i, 0] += fx_sum
            force[i, 1] += fy_sum
            force[i, 2] += fz_sum
            if rotation:
                torque[i, 0] += tx_sum
                torque[i, 1] += ty_sum
                torque[i, 2] += tz_sum


@njit(**KERNEL_OPTIONS)
def segment_triangle(p0x, p0y, p0z, ex, ey, ez, vertices, tri):
    """Möller–Trumbore intersection of the segment p0 + s e, s in [0, 1], with a triangle (two-sided).

    Returns:
        (s, w1, w2) of the hit (barycentric weights of corners 1 and 2), or s = −1 when there is none.
    """
    ax, ay, az, e1x, e1y, e1z, e2x, e2y, e2z = triangle_edges(vertices, tri)
    hx = ey * e2z - ez * e2y
    hy = ez * e2x - ex * e2z
    hz = ex * e2y - ey * e2x
    det = e1x * hx + e1y * hy + e1z * hz
    if det == 0.0:
        return -1.0, 0.0, 0.0
    inv = 1.0 / det
    sx = p0x - ax
    sy = p0y - ay
    sz = p0z - az
    u = (sx * hx + sy * hy + sz * hz) * inv
    # A small tolerance makes the test watertight: a segment through an edge or vertex shared by two
    # triangles would otherwise be missed by both when rounding puts it just outside each.
    if u < -EDGE_TOLERANCE or u > 1.0 + EDGE_TOLERANCE:
        return -1.0, 0.0, 0.0
    qx = sy * e1z - sz * e1y
    qy = sz * e1x - sx * e1z
    qz = sx * e1y - sy * e1x
    v = (ex * qx + ey * qy + ez * qz) * inv
    if v < -EDGE_TOLERANCE or u + v > 1.0 + EDGE_TOLERANCE:
        return -1.0, 0.0, 0.0
    s = (e2x * qx + e2y * qy + e2z * qz) * inv
    if s < 0.0 or s > 1.0:
        return -1.0, 0.0, 0.0
    return s, u, v


@njit(**KERNEL_OPTIONS)
def first_crossing(ox, oy, oz, px, py, pz, vertices, displacement, triangles, order, box_lo, box_hi, left, start,
                   count, displacement_max, stack):
    """First triangle the path from o to p crosses, in each triangle's frame (see ``sweep``).

    Returns:
        (triangle or −1, w1, w2 barycentric weights of the hit, start point moved with the triangle
        (x, y, z)); the first crossing is the one with the smallest path fraction, then lowest index.
    """
    lx = min(ox, px) - displacement_max
    ly = min(oy, py) - displacement_max
    lz = min(oz, pz) - displacement_max
    hx = max(ox, px) + displacement_max
    hy = max(oy, py) + displacement_max
    hz = max(oz, pz) + displacement_max
    best_s = 2.0
    best_t = -1
    best_w1 = 0.0
    best_w2 = 0.0
    best_sx = 0.0
    best_sy = 0.0
    best_sz = 0.0
    stack[0] = 0
    top = 1
    while top > 0:
        top -= 1
        node = stack[top]
        if lx > box_hi[node, 0] or ly > box_hi[node, 1] or lz > box_hi[node, 2] or \
                hx < box_lo[node, 0] or hy < box_lo[node, 1] or hz < box_lo[node, 2]:
            continue
        if left[node] >= 0:
            stack[top] = left[node]
            stack[top + 1] = left[node] + 1
            top += 2
            continue
        for slot in range(start[node], start[node] + count[node]):
            t = order[slot]
            tri = triangles[t]
            # Start point moved with the triangle: the test is in the triangle's frame.
            sx = ox + (displacement[tri[0], 0] + displacement[tri[1], 0] + displacement[tri[2], 0]) / 3.0
            sy = oy + (displacement[tri[0], 1] + displacement[tri[1], 1] + displacement[tri[2], 1]) / 3.0
            sz = oz + (displacement[tri[0], 2] + displacement[tri[1], 2] + displacement[tri[2], 2]) / 3.0
            s, w1, w2 = segment_triangle(sx, sy, sz, px - sx, py - sy, pz - sz, vertices, tri)
            if s < 0.0 or s > best_s or (s == best_s and t > best_t):
                continue
            best_s = s
            best_t = t
            best_w1 = w1
            best_w2 = w2
            best_sx = sx
            best_sy = sy
            best_sz = sz
    return best_t, best_w1, best_w2, best_sx, best_sy, best_sz


@njit(parallel=True, **KERNEL_OPTIONS)
def sweep(old_pos, pos, vel, radius, material, active, vertices, displacement, vertex_velocity, triangles, order,
          box_lo, box_hi, left, start, count, displacement_max, half_thickness, restitution_table, clock, clearance,
          clear_from, clear_clock):
    """Swept test of one collider: undo any step whose centre path crossed the surface.

    The path of grain i is tested relative to each triangle: from old centre + the triangle's mean
    displacement over the step to the new centre, against the triangle at the end of the step. At the
    first crossing (smallest path fraction, then lowest index) the grain is put back on the side it
    came from at contact distance (moved along the face normal) and its normal velocity relative to
    the surface is reflected with the pair's restitution. The corrected path is tested again (a grain
    can cross two faces near an edge or corner), up to ``SWEEP_PASSES`` times.

    Args:
        old_pos: Centres before the step [m], float32 (n, 3).
        pos, vel: Centres and velocities after the step, float32 (n, 3), corrected in place.
        displacement: Vertex displacement over the step [m], (V, 3).
        displacement_max: Largest vertex displacement [m] (widens the boxes tested).
        restitution_table: Restitution of each material against this collider (M,).
        clock, clearance, clear_from, clear_clock: As in ``collider_forces``; a grain whose whole path
            stays within its clearance + reach of where that was measured cannot have crossed.

    Returns:
        Number of corrections made.
    """
    n = pos.shape[0]
    blocks = (n + BLOCK - 1) // BLOCK
    corrected = 0
    for block in prange(blocks):
        stack = np.empty(STACK_DEPTH, np.int64)
        for i in range(block * BLOCK, min(n, (block + 1) * BLOCK)):
            if active[i] == 0:
                continue
            ox = np.float64(old_pos[i, 0])
            oy = np.float64(old_pos[i, 1])
            oz = np.float64(old_pos[i, 2])
            reach = np.float64(radius[i]) + half_thickness
            if clearance[i] > 0.0:
                # The path lies in the ball about clear_from through its farther end.
                far = 0.0
                for ex, ey, ez in ((ox, oy, oz), (np.float64(pos[i, 0]), np.float64(pos[i, 1]), np.float64(pos[i, 2]))):
                    far = max(far, math.sqrt((ex - clear_from[i, 0]) ** 2 + (ey - clear_from[i, 1]) ** 2
                                             + (ez - clear_from[i, 2]) ** 2))
                if far + (clock - clear_clock[i]) < clearance[i] + reach:
                    continue
            for _ in range(SWEEP_PASSES):
                px = np.float64(pos[i, 0])
                py = np.float64(pos[i, 1])
                pz = np.float64(pos[i, 2])
                t, w1, w2, sx, sy, sz = first_crossing(ox, oy, oz, px, py, pz, vertices, displacement, triangles,
                                                       order, box_lo, box_hi, left, start, count,
                                                       displacement_max, stack)
                if t < 0:
                    break
                tri = triangles[t]
                nx, ny, nz = _face_normal(vertices, tri)
                ax = vertices[tri[0], 0]
                ay = vertices[tri[0], 1]
                az = vertices[tri[0], 2]
                came = (sx - ax) * nx + (sy - ay) * ny + (sz - az) * nz
                if came == 0.0:
                    break  # started on the surface: no side to return to
                sign = 1.0 if came > 0.0 else -1.0
                nx *= sign
                ny *= sign
                nz *= sign
                push = reach - ((px - ax) * nx + (py - ay) * ny + (pz - az) * nz)
                pos[i, 0] = px + push * nx
                pos[i, 1] = py + push * ny
                pos[i, 2] = pz + push * nz
                w0 = 1.0 - w1 - w2
                svx = w0 * vertex_velocity[tri[0], 0] + w1 * vertex_velocity[tri[1], 0] + w2 * vertex_velocity[tri[2], 0]
                svy = w0 * vertex_velocity[tri[0], 1] + w1 * vertex_velocity[tri[1], 1] + w2 * vertex_velocity[tri[2], 1]
                svz = w0 * vertex_velocity[tri[0], 2] + w1 * vertex_velocity[tri[1], 2] + w2 * vertex_velocity[tri[2], 2]
                v_n = (vel[i, 0] - svx) * nx + (vel[i, 1] - svy) * ny + (vel[i, 2] - svz) * nz
                if v_n < 0.0:
                    bounce = (1.0 + restitution_table[material[i]]) * v_n
                    vel[i, 0] = vel[i, 0] - bounce * nx
                    vel[i, 1] = vel[i, 1] - bounce * ny
                    vel[i, 2] = vel[i, 2] - bounce * nz
                corrected += 1
    return corrected
