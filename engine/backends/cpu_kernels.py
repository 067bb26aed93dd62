"""numba kernels of the CPU backend. Each has one launcher in ``engine.backends.cpu``.

All kernels are ``nogil`` so the Blender add-on can run a bake in a worker thread, and parallel loops
are over particles with every particle's sums taken in a fixed order, so results are identical for any
thread count (same seed, same bits). Arrays are stored float32 (positions, velocities, radii, masses)
and arithmetic is float64 inside the kernels.

Neighbour structure: a Verlet list with a skin. ``nbr_start``/``nbr_j`` is a CSR half list (each
candidate pair once, in the row of the particle whose cell comes first) of pairs closer than
r_i + r_j + skin; ``rev_start``/``rev_pair``
is its transpose (for particle j, the list entries p with nbr_j[p] == j) so the reaction forces are
gathered without atomics.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

KERNEL_OPTIONS = dict(nogil=True, cache=True, fastmath=False, error_model="numpy")
from ..contact_law import TANGENTIAL_STIFFNESS_RATIO  # noqa: E402  (a numba global constant)
from .cpu_fields import field_acceleration  # noqa: E402


@njit(parallel=True, **KERNEL_OPTIONS)
def active_bounds(pos, active):
    """Bounding box of active centres: (lo float64 (3,), hi float64 (3,), active count)."""
    n = pos.shape[0]
    lx = ly = lz = np.inf
    hx = hy = hz = -np.inf
    count = 0
    for i in prange(n):
        if active[i]:
            lx = min(lx, pos[i, 0])
            ly = min(ly, pos[i, 1])
            lz = min(lz, pos[i, 2])
            hx = max(hx, pos[i, 0])
            hy = max(hy, pos[i, 1])
            hz = max(hz, pos[i, 2])
            count += 1
    return np.array([lx, ly, lz]), np.array([hx, hy, hz]), count


@njit(parallel=True, **KERNEL_OPTIONS)
def max_speed_squared(vel, active):
    """Largest |v|² among active particles [m²/s²]."""
    best = 0.0
    for i in prange(vel.shape[0]):
        if active[i]:
            best = max(best, vel[i, 0] * vel[i, 0] + vel[i, 1] * vel[i, 1] + vel[i, 2] * vel[i, 2])
    return best


@njit(**KERNEL_OPTIONS)
def _cell_coord(x, lo, inv_h, dim):
    """Cell coordinate along one axis in a grid padded by one empty cell on each side."""
    c = int(math.floor((x - lo) * inv_h))
    return min(max(c, 0), dim - 3) + 1


@njit(parallel=True, **KERNEL_OPTIONS)
def assign_cells(pos, active, lo, inv_h, dims, cell_of):
    """Linear cell index of every particle (−1 when inactive), written to ``cell_of`` (int64).

    ``dims`` includes the padding, so the 27 neighbours of any occupied cell exist and the neighbour
    scan needs no bounds checks.
    """
    for i in prange(pos.shape[0]):
        if active[i]:
            cx = _cell_coord(pos[i, 0], lo[0], inv_h, dims[0])
            cy = _cell_coord(pos[i, 1], lo[1], inv_h, dims[1])
            cz = _cell_coord(pos[i, 2], lo[2], inv_h, dims[2])
            cell_of[i] = (cx * dims[1] + cy) * dims[2] + cz
        else:
            cell_of[i] = -1


@njit(parallel=True, **KERNEL_OPTIONS)
def take_rows(source, order, out):
    """out[s] = source[order[s]] for 2-D arrays (first axis: particles); numpy's fancy indexing is
    several times slower on the narrow rows the backend keeps."""
    for s in prange(order.shape[0]):
        src = order[s]
        for c in range(source.shape[1]):
            out[s, c] = source[src, c]


@njit(**KERNEL_OPTIONS)
def counting_sort(cell_of, cell_count):
    """Stable counting sort of particles by cell: (cell_start (cells+1,), sorted particle ids)."""
    start = np.zeros(cell_count + 1, np.int64)
    for i in range(cell_of.shape[0]):
        if cell_of[i] >= 0:
            start[cell_of[i] + 1] += 1
    for c in range(cell_count):
        start[c + 1] += start[c]
    fill = start[:-1].copy()
    order = np.empty(start[cell_count], np.int32)
    for i in range(cell_of.shape[0]):
        c = cell_of[i]
        if c >= 0:
            order[fill[c]] = i
            fill[c] += 1
    return start, order


@njit(parallel=True, **KERNEL_OPTIONS)
def gather_sorted(pos, radius, cell_of, order, spos, srad, scell):
    """Copies of centres, radii and cells in cell order, so the neighbour scan reads memory in order."""
    for a in prange(order.shape[0]):
        i = order[a]
        spos[a, 0] = pos[i, 0]
        spos[a, 1] = pos[i, 1]
        spos[a, 2] = pos[i, 2]
        srad[a] = radius[i]
        scell[a] = cell_of[i]


@njit(**KERNEL_OPTIONS)
def transpose_pairs(nbr_j, particle_count):
    """Transpose of the half list: (rev_start (n+1,), rev_pair (P,)), entries in increasing p."""
    rev_start = np.zeros(particle_count + 1, np.int64)
    for p in range(nbr_j.shape[0]):
        rev_start[nbr_j[p] + 1] += 1
    for j in range(particle_count):
        rev_start[j + 1] += rev_start[j]
    fill = rev_start[:-1].copy()
    rev_pair = np.empty(nbr_j.shape[0], np.int64)
    for p in range(nbr_j.shape[0]):
        j = nbr_j[p]
        rev_pair[fill[j]] = p
        fill[j] += 1
    return rev_start, rev_pair


@njit(**KERNEL_OPTIONS)
def _contact(dx, dy, dz, dist, overlap, dvx, dvy, dvz, m_eff, stiffness, beta, mu, spring, hist, h, dt):
    """Contact law of engine.contact_law on one pair: force on i as (fx, fy, fz), the normal being
    (dx, dy, dz) / dist (three divisions, as the device code of the colliders has it, to the bit).

    With ``spring`` true the tangential force comes from the elastic displacement stored in
    ``hist[h]`` (3 components, updated in place); otherwise from the capped dashpot.
    """
    if dist > 0.0:
        nx, ny, nz = dx / dist, dy / dist, dz / dist
    else:
        nx, ny, nz = 1.0, 0.0, 0.0
    return contact_along(nx, ny, nz, overlap, dvx, dvy, dvz, m_eff, stiffness, beta, mu, spring, hist, h, dt)


@njit(inline="always", **KERNEL_OPTIONS)
def contact_along(nx, ny, nz, overlap, dvx, dvy, dvz, m_eff, stiffness, beta, mu, spring, hist, h, dt):
    """``_contact`` for a given unit normal (nx, ny, nz) (walls; grain pairs, whose normal
    ``pair_force_from`` forms with one division)."""
    root = math.sqrt(m_eff * stiffness)
    v_n = dvx * nx + dvy * ny + dvz * nz
    f_n = stiffness * overlap - 2.0 * beta * root * v_n
    fx, fy, fz = f_n * nx, f_n * ny, f_n * nz
    tx, ty, tz = dvx - v_n * nx, dvy - v_n * ny, dvz - v_n * nz
    cap = mu * max(f_n, 0.0)
    if spring:
        k_t = TANGENTIAL_STIFFNESS_RATIO * stiffness
        g_t = 2.0 * beta * math.sqrt(m_eff * k_t)
        sx, sy, sz = hist[h, 0], hist[h, 1], hist[h, 2]
        along = sx * nx + sy * ny + sz * nz  # keep the spring in the current tangent plane
        sx = sx - along * nx + tx * dt
        sy = sy - along * ny + ty * dt
        sz = sz - along * nz + tz * dt
        ftx = -k_t * sx - g_t * tx
        fty = -k_t * sy - g_t * ty
        ftz = -k_t * sz - g_t * tz
        magnitude = math.sqrt(ftx * ftx + fty * fty + ftz * ftz)
        if magnitude > cap:
            scale = cap / magnitude
            ftx *= scale
            fty *= scale
            ftz *= scale
            # Sliding: shorten the spring so that it alone (with the dashpot) gives the capped force.
            sx = -(ftx + g_t * tx) / k_t
            sy = -(fty + g_t * ty) / k_t
            sz = -(ftz + g_t * tz) / k_t
        hist[h, 0] = sx
        hist[h, 1] = sy
        hist[h, 2] = sz
        return fx + ftx, fy + fty, fz + ftz
    if cap <= 0.0:  # frictionless or pulling apart: F_t = min(·, 0) = 0 (skips a sqrt and a division)
        return fx, fy, fz
    speed_t = math.sqrt(tx * tx + ty * ty + tz * tz)
    if speed_t > 0.0:
        f_t = min(2.0 * root * speed_t, cap) / speed_t
        fx -= f_t * tx
        fy -= f_t * ty
        fz -= f_t * tz
    return fx, fy, fz


@njit(inline="always", **KERNEL_OPTIONS)  # inlined: a call with this many arguments costs more than the pair
def pair_force_from(i, j, p, xi, yi, zi, ri, pos, vel, radius, mass, material, beta_table, mu_table, stiffness, spring,
                    dt, hist):
    """Force on i [N] of list entry p (particles i, j, both active), i's centre (xi, yi, zi) and radius
    ri given as float64 (callers keep them in registers across a row that stores to memory):
    (touching, fx, fy, fz), zero when apart, where a live tangential spring ``hist[p]`` is also
    cleared."""
    dx = xi - pos[j, 0]
    dy = yi - pos[j, 1]
    dz = zi - pos[j, 2]
    reach = ri + radius[j]
    d2 = dx * dx + dy * dy + dz * dz
    if d2 > reach * reach:
        if spring:  # hist has no rows without springs
            hist[p, 0] = 0.0
            hist[p, 1] = 0.0
            hist[p, 2] = 0.0
        return False, 0.0, 0.0, 0.0
    dist = math.sqrt(d2)
    if dist > 0.0:
        inverse = 1.0 / dist  # one division, not three (divisions bound this kernel)
        nx, ny, nz = dx * inverse, dy * inverse, dz * inverse
    else:
        nx, ny, nz = 1.0, 0.0, 0.0
    mi = np.float64(mass[i])
    mj = np.float64(mass[j])
    fx, fy, fz = contact_along(nx, ny, nz, reach - dist, np.float64(vel[i, 0]) - vel[j, 0],
                               np.float64(vel[i, 1]) - vel[j, 1], np.float64(vel[i, 2]) - vel[j, 2],
                               mi * mj / (mi + mj), stiffness, beta_table[material[i], material[j]],
                               mu_table[material[i], material[j]], spring, hist, p, dt)
    return True, fx, fy, fz


@njit(parallel=True, **KERNEL_OPTIONS)
def pair_forces(pos, vel, radius, mass, material, active, nbr_start, nbr_j, beta_table, mu_table,
                stiffness, spring, dt, hist, pair_force, force):
    """Detect contacts in the candidate list and resolve each colliding pair once.

    Writes the force on i of every list entry to ``pair_force`` (P, 3) (zero when not touching) and
    the sum of its own entries to ``force[i]`` (n, 3) [N]. ``hist`` (P, 3) is the tangential spring
    of each entry [m], reset when the pair separates; without ``spring`` it may have no rows.
    """
    for i in prange(pos.shape[0]):
        fx_sum = 0.0
        fy_sum = 0.0
        fz_sum = 0.0
        xi, yi, zi, ri = np.float64(pos[i, 0]), np.float64(pos[i, 1]), np.float64(pos[i, 2]), np.float64(radius[i])
        for p in range(nbr_start[i], nbr_start[i + 1]):
            pair_force[p, 0] = 0.0
            pair_force[p, 1] = 0.0
            pair_force[p, 2] = 0.0
            j = nbr_j[p]
            if active[i] == 0 or active[j] == 0:
                continue
            _, fx, fy, fz = pair_force_from(i, j, p, xi, yi, zi, ri, pos, vel, radius, mass, material, beta_table,
                                            mu_table, stiffness, spring, dt, hist)
            pair_force[p, 0] = fx
            pair_force[p, 1] = fy
            pair_force[p, 2] = fz
            fx_sum += fx
            fy_sum += fy
            fz_sum += fz
        force[i, 0] = fx_sum
        force[i, 1] = fy_sum
        force[i, 2] = fz_sum


@njit(parallel=True, **KERNEL_OPTIONS)
def gather_reactions(force, pair_force, rev_start, rev_pair):
    """force[j] −= pair_force[p] for every entry p where j is the second particle."""
    for j in prange(force.shape[0]):
        fx = 0.0
        fy = 0.0
        fz = 0.0
        for q in range(rev_start[j], rev_start[j + 1]):
            p = rev_pair[q]
            fx += pair_force[p, 0]
            fy += pair_force[p, 1]
            fz += pair_force[p, 2]
        force[j, 0] -= fx
        force[j, 1] -= fy
        force[j, 2] -= fz


@njit(**KERNEL_OPTIONS)
def _field_acceleration(x, y, z, vx, vy, vz, table, grid):
    """Sum of the per-particle fields at (x, y, z) [m] for velocity (vx, vy, vz) [m/s] (layout in
    engine.fields; formulas in engine.backends.cpu_fields) [m/s²]."""
    return field_acceleration(x, y, z, vx, vy, vz, table, grid)


@njit(parallel=True, **KERNEL_OPTIONS)
def wall_forces(near, pos, vel, radius, mass, material, active, lo, hi, wall_mask, wall_beta, wall_mu, stiffness,
                spring, wall_hist, wall_touch, dt, force, touched):
    """Wall contacts of the particles ``near`` (slots, int64): each side's force added to ``force[i]``
    [N] in side order, ``touched[i]`` set where one pushes; springs cleared where they end.

    A pass of its own, over the few grains that can be at a wall (``mark_interior``), so the
    integration loop every grain runs stays small. Uses the state before the step, as the pair forces do.
    """
    for k in prange(near.shape[0]):
        i = near[k]
        if active[i] != 0 and wall_candidate(i, pos, radius, lo, hi, wall_touch):
            fx, fy, fz, pushed = _wall_sum(i, force[i, 0], force[i, 1], force[i, 2], pos, vel, radius, mass, material,
                                           lo, hi, wall_mask, wall_beta, wall_mu, stiffness, spring, wall_hist,
                                           wall_touch, dt)
            if pushed:
                force[i, 0] = fx
                force[i, 1] = fy
                force[i, 2] = fz
                touched[i] = 1


@njit(inline="always", **KERNEL_OPTIONS)
def wall_candidate(i, pos, radius, lo, hi, wall_touch):
    """Whether particle i may touch a side or holds a wall spring. Most grains are clear of every wall
    plane (gap > r ⟺ overlap < 0 exactly, so the grains skipped are those the sides' loop would skip)."""
    r = np.float64(radius[i])
    return wall_touch[i] != 0 or not (pos[i, 0] - lo[0] > r and hi[0] - pos[i, 0] > r and
                                      pos[i, 1] - lo[1] > r and hi[1] - pos[i, 1] > r and
                                      pos[i, 2] - lo[2] > r and hi[2] - pos[i, 2] > r)


@njit(**KERNEL_OPTIONS)
def _wall_sum(i, fx, fy, fz, pos, vel, radius, mass, material, lo, hi, wall_mask, wall_beta, wall_mu, stiffness,
              spring, wall_hist, wall_touch, dt):
    """(fx, fy, fz) [N] plus the six sides' forces on particle i, added in side order, and whether any
    side pushes."""
    m = np.float64(mass[i])
    r = np.float64(radius[i])
    pushed = False
    for side in range(6):
        axis = side >> 1
        if side & 1:
            gap = hi[axis] - pos[i, axis]
            sign = -1.0
        else:
            gap = pos[i, axis] - lo[axis]
            sign = 1.0
        overlap = r - gap
        bit = 1 << side
        if overlap < 0.0 or wall_mask[side] == 0:  # (one test first: cheaper than the mask)
            # wall_touch remembers which springs are live, so the (n, 6, 3) history is only
            # touched by particles at a wall: most particles never read it.
            if wall_touch[i] & bit:
                wall_hist[i, side, 0] = 0.0
                wall_hist[i, side, 1] = 0.0
                wall_hist[i, side, 2] = 0.0
                wall_touch[i] &= ~bit
            continue
        if spring:  # only springs need clearing later (wall_hist has no rows without them)
            wall_touch[i] |= bit
        nx = sign if axis == 0 else 0.0
        ny = sign if axis == 1 else 0.0
        nz = sign if axis == 2 else 0.0
        wx, wy, wz = contact_along(nx, ny, nz, overlap, np.float64(vel[i, 0]), np.float64(vel[i, 1]),
                                   np.float64(vel[i, 2]), m, stiffness, wall_beta[material[i]],
                                   wall_mu[material[i]], spring, wall_hist[i], side, dt)
        fx += wx
        fy += wy
        fz += wz
        pushed = True
    return fx, fy, fz, pushed


@njit(inline="always", **KERNEL_OPTIONS)  # inlined: a call with this many arguments costs ~150 ns
def advance(i, fx, fy, fz, pos, vel, mass, active, accel, dt, lo, hi, wall_mask, open_sides, interior, field_table,
            field_grid, pos_ref, measure):
    """One active particle i under force (fx, fy, fz) [N] (pairs and walls, see ``wall_forces``):
    fields, semi-implicit Euler, exit through an open side (``open_sides``: some ``wall_mask`` entry is
    0), displacement since the last build. ``interior`` (n,) uint8: 1 where i cannot reach the box's
    sides before the next build (``mark_interior``; all 0 is always right, only slower). ``measure``
    false: the displacement is not wanted (returned as 0), see ``BackendCpu._step_fused``.

    Returns:
        (displacement² since the last build [m²], speed² [m²/s²], 1 if the position or velocity is no
        longer finite, else 0; the first two are 0 then).
    """
    m = np.float64(mass[i])
    px, py, pz = np.float64(pos[i, 0]), np.float64(pos[i, 1]), np.float64(pos[i, 2])
    gx = gy = gz = 0.0
    if field_table.shape[0]:  # the call costs ~15 ns a particle even with no field
        gx, gy, gz = _field_acceleration(px, py, pz, np.float64(vel[i, 0]), np.float64(vel[i, 1]),
                                         np.float64(vel[i, 2]), field_table, field_grid)
    inverse_m = 1.0 / m  # one division, not three
    vx = vel[i, 0] + (fx * inverse_m + accel[0] + gx) * dt
    vy = vel[i, 1] + (fy * inverse_m + accel[1] + gy) * dt
    vz = vel[i, 2] + (fz * inverse_m + accel[2] + gz) * dt
    vel[i, 0] = vx
    vel[i, 1] = vy
    vel[i, 2] = vz
    # Positions advance with the float32-rounded velocity, as a restored cache frame would.
    pos[i, 0] = px + np.float64(vel[i, 0]) * dt
    pos[i, 1] = py + np.float64(vel[i, 1]) * dt
    pos[i, 2] = pz + np.float64(vel[i, 2]) * dt
    speed2 = vx * vx + vy * vy + vz * vz
    if not (math.isfinite(speed2) and math.isfinite(pos[i, 0] + pos[i, 1] + pos[i, 2])):
        return 0.0, 0.0, 1
    for axis in range(3 if open_sides and interior[i] == 0 else 0):
        if (wall_mask[2 * axis] == 0 and pos[i, axis] < lo[axis]) or \
                (wall_mask[2 * axis + 1] == 0 and pos[i, axis] > hi[axis]):
            active[i] = 0
    if not measure:
        return 0.0, speed2, 0
    ddx = pos[i, 0] - pos_ref[i, 0]
    ddy = pos[i, 1] - pos_ref[i, 1]
    ddz = pos[i, 2] - pos_ref[i, 2]
    return ddx * ddx + ddy * ddy + ddz * ddz, speed2, 0


@njit(parallel=True, **KERNEL_OPTIONS)
def mark_interior(pos, radius, active, lo, hi, margin, interior):
    """interior[i] = 1 where particle i is further than r_i + ``margin`` [m] from all six sides of the
    box [lo, hi], else 0. With ``margin`` at least the displacement that triggers a rebuild (half the
    skin) plus rounding, such a particle can neither touch a wall nor leave through an open side
    before the next build: ``wall_forces`` is given only the others, and ``advance`` tests only them
    for exits."""
    for i in prange(pos.shape[0]):
        reach = np.float64(radius[i]) + margin
        inside = active[i] != 0
        for axis in range(3):
            x = np.float64(pos[i, axis])
            if not (x - lo[axis] > reach and hi[axis] - x > reach):
                inside = False
        interior[i] = 1 if inside else 0


@njit(parallel=True, **KERNEL_OPTIONS)
def integrate(pos, vel, force, mass, active, accel, dt, lo, hi, wall_mask, interior, field_table, field_grid,
              pos_ref):
    """``advance`` for every active particle under ``force`` (n, 3) [N] (walls included: ``wall_forces``).

    Returns:
        (largest displacement² since the last build [m²], largest speed² [m²/s²], count of particles
        with a non-finite position or velocity).
    """
    max_disp2 = 0.0
    max_speed2 = 0.0
    bad = 0
    open_sides = not wall_mask.all()
    for i in prange(pos.shape[0]):
        if active[i] == 0:
            continue
        disp2, speed2, broken = advance(i, force[i, 0], force[i, 1], force[i, 2], pos, vel, mass, active, accel, dt,
                                        lo, hi, wall_mask, open_sides, interior, field_table, field_grid, pos_ref,
                                        True)
        bad += broken
        max_disp2 = max(max_disp2, disp2)
        max_speed2 = max(max_speed2, speed2)
    return max_disp2, max_speed2, bad


@njit(parallel=True, **KERNEL_OPTIONS)
def max_displacement_squared(pos, pos_ref):
    """Largest |x − x_ref|² over all slots [m²], computed as ``advance`` computes it (float32)."""
    out = 0.0
    for i in prange(pos.shape[0]):
        ddx = pos[i, 0] - pos_ref[i, 0]
        ddy = pos[i, 1] - pos_ref[i, 1]
        ddz = pos[i, 2] - pos_ref[i, 2]
        out = max(out, ddx * ddx + ddy * ddy + ddz * ddz)
    return out


@njit(parallel=True, **KERNEL_OPTIONS)
def contact_flags(pos, radius, active, nbr_start, nbr_j, flags):
    """flags[p] = 1 where list entry p touches (|x_i − x_j| ≤ r_i + r_j), else 0."""
    for i in prange(pos.shape[0]):
        for p in range(nbr_start[i], nbr_start[i + 1]):
            j = nbr_j[p]
            flags[p] = 0
            if active[i] == 0 or active[j] == 0:
                continue
            dx = np.float64(pos[i, 0]) - pos[j, 0]
            dy = np.float64(pos[i, 1]) - pos[j, 1]
            dz = np.float64(pos[i, 2]) - pos[j, 2]
            reach = np.float64(radius[i]) + radius[j]
            if dx * dx + dy * dy + dz * dz <= reach * reach:
                flags[p] = 1


@njit(parallel=True, **KERNEL_OPTIONS)
def remap_history(old_start, old_j, old_hist, new_start, new_j, new_hist, new_to_old):
    """Carry each pair's history (P, 6) from the old list to the rebuilt one.

    A pair may change rows between builds (the row is the particle whose cell came first); the
    tangential spring ξ (columns 0–2) is stored as seen from the row's particle, so it changes sign
    when the pair changes row; the rolling spring ξ_r (3–5) does not (ω_i − ω_j and n both flip, so
    v_r and ξ_r stay). The new list may number the particles differently (the reorder of
    ``cpu_neighbors``): ``new_to_old[s]`` is the old slot of the particle in new slot s.
    """
    for a in prange(new_start.shape[0] - 1):
        i = new_to_old[a]
        for p in range(new_start[a], new_start[a + 1]):
            j = new_to_old[new_j[p]]
            for c in range(6):
                new_hist[p, c] = 0.0
            found = False
            for q in range(old_start[i], old_start[i + 1]):
                if old_j[q] == j:
                    for c in range(6):
                        new_hist[p, c] = old_hist[q, c]
                    found = True
                    break
            if not found:
                for q in range(old_start[j], old_start[j + 1]):
                    if old_j[q] == i:
                        for c in range(3):
                            new_hist[p, c] = -old_hist[q, c]
                        for c in range(3, 6):
                            new_hist[p, c] = old_hist[q, c]
                        break


# --- rotation, rolling resistance, cohesion, velocity Verlet (engine.contact_law, docs/physics.md) ---------
# The kernels above are the paper's non-rotating Euler model and stay untouched, so that model keeps its
# bits; the ones below serve every other setting (Physics.rotation, integrator 'verlet', rolling, cohesion).
# Per-entry history is one (P, 6) array: tangential ξ in columns 0–2, rolling ξ_r in 3–5.


@njit(**KERNEL_OPTIONS)
def _contact_full(nx, ny, nz, overlap, dvx, dvy, dvz, wix, wiy, wiz, wjx, wjy, wjz, arm_i, arm_j, r_eff,
                  m_eff, stiffness, beta, mu, mu_roll, cohesive, spring, hist, h, dt):
    """The full law of engine.contact_law.contact_response on one contact of unit normal n (its
    divisions as the colliders' device code has them, to the bit).

    Args:
        dv: v_i − v_j [m/s]; w_i, w_j: angular velocities [rad/s] (w_j = 0 for walls).
        arm_i, arm_j: R_i = r_i − δ/2, R_j = r_j − δ/2 (0 for walls) [m]; r_eff: rolling radius [m].
        cohesive: c·A, the SJKR attraction [N] (0 without cohesion).
        spring: tangential spring (history) or capped dashpot; hist[h, 0:3] ξ, hist[h, 3:6] ξ_r
            (read only where used: ξ_r only when mu_roll > 0).

    Returns:
        (fx, fy, fz) force on i [N], (tix, tiy, tiz) torque on i, (tjx, tjy, tjz) torque on j [N·m].
    """
    root = math.sqrt(m_eff * stiffness)
    v_n = dvx * nx + dvy * ny + dvz * nz
    f_n = stiffness * overlap - 2.0 * beta * root * v_n
    cap_force = max(f_n, 0.0)  # the caps leave cohesion out, as LAMMPS/LIGGGHTS do
    f_n -= cohesive
    # Velocity of the contact point: v_c = (v_i − v_j) − (R_i ω_i + R_j ω_j) × n.
    ax = arm_i * wix + arm_j * wjx
    ay = arm_i * wiy + arm_j * wjy
    az = arm_i * wiz + arm_j * wjz
    cvx = dvx - (ay * nz - az * ny)
    cvy = dvy - (az * nx - ax * nz)
    cvz = dvz - (ax * ny - ay * nx)
    c_n = cvx * nx + cvy * ny + cvz * nz
    tx, ty, tz = cvx - c_n * nx, cvy - c_n * ny, cvz - c_n * nz
    cap = mu * cap_force
    k_t = TANGENTIAL_STIFFNESS_RATIO * stiffness
    g_t = 2.0 * beta * math.sqrt(m_eff * k_t)
    if spring:
        sx, sy, sz = hist[h, 0], hist[h, 1], hist[h, 2]
        along = sx * nx + sy * ny + sz * nz
        sx = sx - along * nx + tx * dt
        sy = sy - along * ny + ty * dt
        sz = sz - along * nz + tz * dt
        ftx = -k_t * sx - g_t * tx
        fty = -k_t * sy - g_t * ty
        ftz = -k_t * sz - g_t * tz
        magnitude = math.sqrt(ftx * ftx + fty * fty + ftz * ftz)
        if magnitude > cap:
            scale = cap / magnitude
            ftx *= scale
            fty *= scale
            ftz *= scale
            sx = -(ftx + g_t * tx) / k_t
            sy = -(fty + g_t * ty) / k_t
            sz = -(ftz + g_t * tz) / k_t
        hist[h, 0] = sx
        hist[h, 1] = sy
        hist[h, 2] = sz
    else:
        ftx = fty = ftz = 0.0
        speed_t = math.sqrt(tx * tx + ty * ty + tz * tz)
        if speed_t > 0.0:
            f_t = min(2.0 * root * speed_t, cap) / speed_t
            ftx, fty, ftz = -f_t * tx, -f_t * ty, -f_t * tz
    # n × F_t; τ_i = −R_i n × F_t, τ_j = −R_j n × F_t.
    cx = ny * ftz - nz * fty
    cy = nz * ftx - nx * ftz
    cz = nx * fty - ny * ftx
    tix, tiy, tiz = -arm_i * cx, -arm_i * cy, -arm_i * cz
    tjx, tjy, tjz = -arm_j * cx, -arm_j * cy, -arm_j * cz
    if mu_roll > 0.0:
        rx, ry, rz = wix - wjx, wiy - wjy, wiz - wjz
        vrx = r_eff * (ry * nz - rz * ny)
        vry = r_eff * (rz * nx - rx * nz)
        vrz = r_eff * (rx * ny - ry * nx)
        sx, sy, sz = hist[h, 3], hist[h, 4], hist[h, 5]
        along = sx * nx + sy * ny + sz * nz
        sx = sx - along * nx + vrx * dt
        sy = sy - along * ny + vry * dt
        sz = sz - along * nz + vrz * dt
        frx = -k_t * sx - g_t * vrx
        fry = -k_t * sy - g_t * vry
        frz = -k_t * sz - g_t * vrz
        magnitude = math.sqrt(frx * frx + fry * fry + frz * frz)
        cap_r = mu_roll * cap_force
        if magnitude > cap_r:
            scale = cap_r / magnitude
            frx *= scale
            fry *= scale
            frz *= scale
            sx = -(frx + g_t * vrx) / k_t
            sy = -(fry + g_t * vry) / k_t
            sz = -(frz + g_t * vrz) / k_t
        hist[h, 3] = sx
        hist[h, 4] = sy
        hist[h, 5] = sz
        qx = r_eff * (ny * frz - nz * fry)
        qy = r_eff * (nz * frx - nx * frz)
        qz = r_eff * (nx * fry - ny * frx)
        tix += qx
        tiy += qy
        tiz += qz
        tjx -= qx
        tjy -= qy
        tjz -= qz
    return f_n * nx + ftx, f_n * ny + fty, f_n * nz + ftz, tix, tiy, tiz, tjx, tjy, tjz


@njit(inline="always", **KERNEL_OPTIONS)  # inlined: called per list entry with many arguments
def pair_full_of(i, j, p, pos, vel, omega, radius, mass, material, beta_table, mu_table, roll_table, cohesion_table,
                 stiffness, spring, dt, hist, bonded, clump):
    """The full law on list entry p (particles i, j, both active): (touching, f) with f the 9-tuple of
    ``_contact_full`` (force on i [N], torques on i and on j [N·m]); zeros when apart, held by a bond or
    in one rigid clump, where the entry's springs ``hist[p]`` are also cleared."""
    dx = np.float64(pos[i, 0]) - pos[j, 0]
    dy = np.float64(pos[i, 1]) - pos[j, 1]
    dz = np.float64(pos[i, 2]) - pos[j, 2]
    ri = np.float64(radius[i])
    rj = np.float64(radius[j])
    reach = ri + rj
    d2 = dx * dx + dy * dy + dz * dz
    if d2 > reach * reach or bonded[p] or (clump[i] >= 0 and clump[i] == clump[j]):
        if hist.shape[0]:  # hist has no rows without springs
            for a in range(6):
                hist[p, a] = 0.0
        return False, (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    dist = math.sqrt(d2)
    if dist > 0.0:
        inverse = 1.0 / dist  # one division, not three
        nx, ny, nz = dx * inverse, dy * inverse, dz * inverse
    else:
        nx, ny, nz = 1.0, 0.0, 0.0
    overlap = reach - dist
    mi = np.float64(mass[i])
    mj = np.float64(mass[j])
    ci, cj = material[i], material[j]
    coh = cohesion_table[ci, cj]
    cohesive = 0.0
    if coh > 0.0 and dist > 0.0:
        cohesive = coh * (0.25 * math.pi * overlap * (dist + ri - rj) * (dist - ri + rj)
                          * (dist + ri + rj) / d2)
    f = _contact_full(nx, ny, nz, overlap, np.float64(vel[i, 0]) - vel[j, 0],
                      np.float64(vel[i, 1]) - vel[j, 1], np.float64(vel[i, 2]) - vel[j, 2],
                      np.float64(omega[i, 0]), np.float64(omega[i, 1]), np.float64(omega[i, 2]),
                      np.float64(omega[j, 0]), np.float64(omega[j, 1]), np.float64(omega[j, 2]),
                      ri - 0.5 * overlap, rj - 0.5 * overlap, ri * rj / reach, mi * mj / (mi + mj),
                      stiffness, beta_table[ci, cj], mu_table[ci, cj], roll_table[ci, cj], cohesive,
                      spring, hist, p, dt)
    return True, f


@njit(parallel=True, **KERNEL_OPTIONS)
def pair_forces_full(pos, vel, omega, radius, mass, material, active, nbr_start, nbr_j, beta_table, mu_table,
                     roll_table, cohesion_table, stiffness, spring, dt, hist, pair_force, pair_torque, force,
                     torque, bonded, clump):
    """``pair_forces`` with rotation, rolling resistance and cohesion.

    Writes per list entry the force on i (``pair_force`` (P, 3)) and the torques on i and on j
    (``pair_torque`` (P, 6)), and the sums of a row's own entries to ``force[i]``/``torque[i]`` (n, 3).
    ``hist`` (P, 6): ξ then ξ_r of each entry [m], reset when the pair separates (no rows without
    tangential or rolling springs). Entries flagged in
    ``bonded`` (P,) are held by an intact glue bond: no contact (``bond_forces`` acts instead); two
    grains of one rigid clump (``clump`` (n,) int32, −1: none) never touch.
    """
    for i in prange(pos.shape[0]):
        fx_sum = fy_sum = fz_sum = 0.0
        tx_sum = ty_sum = tz_sum = 0.0
        for p in range(nbr_start[i], nbr_start[i + 1]):
            for a in range(3):
                pair_force[p, a] = 0.0
            for a in range(6):
                pair_torque[p, a] = 0.0
            j = nbr_j[p]
            if active[i] == 0 or active[j] == 0:
                continue
            touching, f = pair_full_of(i, j, p, pos, vel, omega, radius, mass, material, beta_table, mu_table,
                                       roll_table, cohesion_table, stiffness, spring, dt, hist, bonded, clump)
            if not touching:
                continue
            for a in range(3):
                pair_force[p, a] = f[a]
            for a in range(6):
                pair_torque[p, a] = f[3 + a]
            fx_sum += f[0]
            fy_sum += f[1]
            fz_sum += f[2]
            tx_sum += f[3]
            ty_sum += f[4]
            tz_sum += f[5]
        force[i, 0] = fx_sum
        force[i, 1] = fy_sum
        force[i, 2] = fz_sum
        torque[i, 0] = tx_sum
        torque[i, 1] = ty_sum
        torque[i, 2] = tz_sum


@njit(parallel=True, **KERNEL_OPTIONS)
def gather_torques(torque, pair_torque, rev_start, rev_pair):
    """torque[j] += pair_torque[p, 3:6] for every entry p where j is the second particle."""
    for j in prange(torque.shape[0]):
        tx = ty = tz = 0.0
        for q in range(rev_start[j], rev_start[j + 1]):
            p = rev_pair[q]
            tx += pair_torque[p, 3]
            ty += pair_torque[p, 4]
            tz += pair_torque[p, 5]
        torque[j, 0] += tx
        torque[j, 1] += ty
        torque[j, 2] += tz


@njit(**KERNEL_OPTIONS)
def _turn(quat, i, wx, wy, wz, dt):
    """q ← normalize(q + dt/2 (0, ω) ⊗ q), stored float32 (w, x, y, z)."""
    qw, qx, qy, qz = np.float64(quat[i, 0]), np.float64(quat[i, 1]), np.float64(quat[i, 2]), np.float64(quat[i, 3])
    h = 0.5 * dt
    nw = qw - h * (wx * qx + wy * qy + wz * qz)
    nx = qx + h * (wx * qw + wy * qz - wz * qy)
    ny = qy + h * (wy * qw + wz * qx - wx * qz)
    nz = qz + h * (wz * qw + wx * qy - wy * qx)
    norm = math.sqrt(nw * nw + nx * nx + ny * ny + nz * nz)
    quat[i, 0] = nw / norm
    quat[i, 1] = nx / norm
    quat[i, 2] = ny / norm
    quat[i, 3] = nz / norm


@njit(**KERNEL_OPTIONS)
def _exit_and_displacement(i, pos, active, lo, hi, wall_mask, pos_ref):
    """Deactivate particle i if it left through an open side; its displacement² since the last build."""
    for axis in range(3):
        if (wall_mask[2 * axis] == 0 and pos[i, axis] < lo[axis]) or \
                (wall_mask[2 * axis + 1] == 0 and pos[i, axis] > hi[axis]):
            active[i] = 0
    ddx = pos[i, 0] - pos_ref[i, 0]
    ddy = pos[i, 1] - pos_ref[i, 1]
    ddz = pos[i, 2] - pos_ref[i, 2]
    return ddx * ddx + ddy * ddy + ddz * ddz


@njit(parallel=True, **KERNEL_OPTIONS)
def drift(pos, vel, omega, quat, acc, alpha, active, dt, rotation, lo, hi, wall_mask, pos_ref):
    """First half of a velocity-Verlet step (LAMMPS fix nve/sphere's initial_integrate):
    v ← v + dt/2 a, x ← x + dt v, ω ← ω + dt/2 α, q turned by ω over dt.

    Returns:
        (largest displacement² since the last build [m²], count of non-finite positions).
    """
    max_disp2 = 0.0
    bad = 0
    h = 0.5 * dt
    for i in prange(pos.shape[0]):
        if active[i] == 0:
            continue
        for a in range(3):
            vel[i, a] = np.float64(vel[i, a]) + h * acc[i, a]
        for a in range(3):
            pos[i, a] = np.float64(pos[i, a]) + np.float64(vel[i, a]) * dt
        if rotation:
            for a in range(3):
                omega[i, a] = np.float64(omega[i, a]) + h * alpha[i, a]
            _turn(quat, i, np.float64(omega[i, 0]), np.float64(omega[i, 1]), np.float64(omega[i, 2]), dt)
        if not math.isfinite(pos[i, 0] + pos[i, 1] + pos[i, 2]):
            bad += 1
            continue
        max_disp2 = max(max_disp2, _exit_and_displacement(i, pos, active, lo, hi, wall_mask, pos_ref))
    return max_disp2, bad


@njit(parallel=True, **KERNEL_OPTIONS)
def wall_forces_full(near, pos, vel, omega, radius, mass, material, active, lo, hi, wall_mask, wall_beta, wall_mu,
                     wall_roll, wall_cohesion, stiffness, spring, wall_hist, wall_touch, dt, force, torque, touched):
    """``wall_forces`` for the full law: each side's force and torque on the particles ``near`` added to
    ``force[i]``/``torque[i]`` in side order (``touched[i]`` set where one pushes); ``wall_hist``
    (n, 6, 6): ξ and ξ_r per side, (n, 0, 6) without springs (never touched then)."""
    for k in prange(near.shape[0]):
        i = near[k]
        if active[i] != 0 and wall_candidate(i, pos, radius, lo, hi, wall_touch):
            f = _wall_sum_full(i, force[i, 0], force[i, 1], force[i, 2], torque[i, 0], torque[i, 1], torque[i, 2],
                               pos, vel, omega, radius, mass, material, lo, hi, wall_mask, wall_beta, wall_mu,
                               wall_roll, wall_cohesion, stiffness, spring, wall_hist, wall_touch, dt)
            if f[6]:
                force[i, 0], force[i, 1], force[i, 2] = f[0], f[1], f[2]
                torque[i, 0], torque[i, 1], torque[i, 2] = f[3], f[4], f[5]
                touched[i] = 1


@njit(**KERNEL_OPTIONS)
def _wall_sum_full(i, fx, fy, fz, tx, ty, tz, pos, vel, omega, radius, mass, material, lo, hi, wall_mask, wall_beta,
                   wall_mu, wall_roll, wall_cohesion, stiffness, spring, wall_hist, wall_touch, dt):
    """(force, torque) on particle i plus the six sides' (full law), added in side order, and whether
    any side pushes: (fx, fy, fz, tx, ty, tz, pushed)."""
    m = np.float64(mass[i])
    r = np.float64(radius[i])
    mat = material[i]
    wix, wiy, wiz = np.float64(omega[i, 0]), np.float64(omega[i, 1]), np.float64(omega[i, 2])
    pushed = False
    for side in range(6):
        if wall_mask[side] == 0:
            continue
        axis = side // 2
        if side % 2 == 0:
            gap = pos[i, axis] - lo[axis]
            sign = 1.0
        else:
            gap = hi[axis] - pos[i, axis]
            sign = -1.0
        overlap = r - gap
        bit = 1 << side
        if overlap < 0.0:
            if wall_touch[i] & bit:
                for a in range(6):
                    wall_hist[i, side, a] = 0.0
                wall_touch[i] &= ~bit
            continue
        if wall_hist.shape[1]:  # only springs need clearing later (wall_hist has no rows without them)
            wall_touch[i] |= bit
        nx = sign if axis == 0 else 0.0
        ny = sign if axis == 1 else 0.0
        nz = sign if axis == 2 else 0.0
        cohesive = 0.0
        if wall_cohesion[mat] > 0.0:
            cohesive = wall_cohesion[mat] * math.pi * (2.0 * r * overlap - overlap * overlap)
        f = _contact_full(nx, ny, nz, overlap, np.float64(vel[i, 0]), np.float64(vel[i, 1]),
                          np.float64(vel[i, 2]), wix, wiy, wiz, 0.0, 0.0, 0.0, r - 0.5 * overlap, 0.0, r, m,
                          stiffness, wall_beta[mat], wall_mu[mat], wall_roll[mat], cohesive, spring,
                          wall_hist[i], side, dt)
        fx += f[0]
        fy += f[1]
        fz += f[2]
        tx += f[3]
        ty += f[4]
        tz += f[5]
        pushed = True
    return fx, fy, fz, tx, ty, tz, pushed


@njit(inline="always", **KERNEL_OPTIONS)  # inlined: a call with this many arguments costs more than its work
def kick_one(i, fx, fy, fz, tx, ty, tz, pos, vel, omega, quat, radius, mass, active, accel, dt, kick_dt, euler,
             rotation, lo, hi, wall_mask, field_table, field_grid, acc, alpha, pos_ref):
    """``kick`` for one active particle i under force (fx, fy, fz) [N] and torque (tx, ty, tz) [N·m], walls
    included (``wall_forces_full``). (Keep it under 30 arguments: a longer call is compiled as
    f(*args), which numba cannot inline; packing arrays in tuples instead costs reference counting per
    particle.)

    Returns:
        (displacement² since the last build [m²] (Euler only, else 0), speed² [m²/s²], 1 if a value
        is no longer finite else 0; the first two are 0 then).
    """
    m = np.float64(mass[i])
    r = np.float64(radius[i])
    wix, wiy, wiz = np.float64(omega[i, 0]), np.float64(omega[i, 1]), np.float64(omega[i, 2])
    px, py, pz = np.float64(pos[i, 0]), np.float64(pos[i, 1]), np.float64(pos[i, 2])
    # Fields see the velocity the contact forces saw (Verlet: the half-step velocity).
    gx = gy = gz = 0.0
    if field_table.shape[0]:  # the call costs ~15 ns a particle even with no field
        gx, gy, gz = _field_acceleration(px, py, pz, np.float64(vel[i, 0]), np.float64(vel[i, 1]),
                                         np.float64(vel[i, 2]), field_table, field_grid)
    ax = fx / m + accel[0] + gx
    ay = fy / m + accel[1] + gy
    az = fz / m + accel[2] + gz
    inertia = 0.4 * m * r * r
    step = dt if euler else kick_dt
    vel[i, 0] = np.float64(vel[i, 0]) + ax * step
    vel[i, 1] = np.float64(vel[i, 1]) + ay * step
    vel[i, 2] = np.float64(vel[i, 2]) + az * step
    if rotation:
        omega[i, 0] = wix + tx / inertia * step
        omega[i, 1] = wiy + ty / inertia * step
        omega[i, 2] = wiz + tz / inertia * step
    if euler:
        pos[i, 0] = px + np.float64(vel[i, 0]) * dt
        pos[i, 1] = py + np.float64(vel[i, 1]) * dt
        pos[i, 2] = pz + np.float64(vel[i, 2]) * dt
        if rotation:
            _turn(quat, i, np.float64(omega[i, 0]), np.float64(omega[i, 1]), np.float64(omega[i, 2]), dt)
    # Stored with Euler too: rigid clumps sum their members' forces from them.
    acc[i, 0] = ax
    acc[i, 1] = ay
    acc[i, 2] = az
    alpha[i, 0] = tx / inertia
    alpha[i, 1] = ty / inertia
    alpha[i, 2] = tz / inertia
    vx, vy, vz = np.float64(vel[i, 0]), np.float64(vel[i, 1]), np.float64(vel[i, 2])
    speed2 = vx * vx + vy * vy + vz * vz
    if not (math.isfinite(speed2) and math.isfinite(pos[i, 0] + pos[i, 1] + pos[i, 2])
            and math.isfinite(tx + ty + tz)):
        return 0.0, 0.0, 1
    disp2 = _exit_and_displacement(i, pos, active, lo, hi, wall_mask, pos_ref) if euler else 0.0
    return disp2, speed2, 0


@njit(parallel=True, **KERNEL_OPTIONS)
def kick(pos, vel, omega, quat, force, torque, radius, mass, active, accel, dt, kick_dt, euler, rotation, lo, hi,
         wall_mask, field_table, field_grid, acc, alpha, pos_ref):
    """Fields, then the velocity update (``kick_one`` per active particle) under ``force``/``torque``
    (n, 3), the walls' included (``wall_forces_full`` first).

    ``euler``: semi-implicit Euler with rotation (v, ω ← + dt·a; x ← x + dt v; q turned by ω).
    Otherwise the second half of velocity Verlet: v ← v + kick_dt·a, ω ← ω + kick_dt·α, with
    a, α stored in ``acc``/``alpha`` (n, 3) for the next step's ``drift`` (kick_dt = dt/2, or 0 to only
    compute them at the start).

    Returns:
        (largest displacement² since the last build [m²] (Euler only, else 0), largest speed²,
        count of non-finite values).
    """
    max_disp2 = 0.0
    max_speed2 = 0.0
    bad = 0
    for i in prange(pos.shape[0]):
        if active[i] == 0:
            continue
        disp2, speed2, broken = kick_one(i, force[i, 0], force[i, 1], force[i, 2], torque[i, 0], torque[i, 1],
                                         torque[i, 2], pos, vel, omega, quat, radius, mass, active, accel, dt, kick_dt,
                                         euler, rotation, lo, hi, wall_mask, field_table, field_grid, acc, alpha,
                                         pos_ref)
        bad += broken
        max_disp2 = max(max_disp2, disp2)
        max_speed2 = max(max_speed2, speed2)
    return max_disp2, max_speed2, bad


# --- glue bonds (engine.bonds) -------------------------------------------------------------------------


@njit(parallel=True, **KERNEL_OPTIONS)
def mark_bonded(nbr_start, nbr_j, bond_start, bond_other, bond_index, intact, bonded):
    """bonded[p] = 1 where list entry p is a pair held by an intact bond (its contact is skipped)."""
    for i in prange(nbr_start.shape[0] - 1):
        for p in range(nbr_start[i], nbr_start[i + 1]):
            j = nbr_j[p]
            bonded[p] = 0
            for q in range(bond_start[i], bond_start[i + 1]):
                if bond_other[q] == j and intact[bond_index[q]]:
                    bonded[p] = 1
                    break


@njit(**KERNEL_OPTIONS)
def bond_forces(pos, vel, omega, radius, mass, material, active, beta_table, pairs, rest, area, stiffness,
                strength, shear, intact, dt, force, torque):
    """Add the force and torque of every intact bond to ``force``/``torque`` (n, 3); one thread, in bond
    order, so sums never depend on the thread count. ``shear`` (B, 3) ξ_b [m] and ``intact`` (B,) uint8
    are updated; a bond stressed beyond its strength breaks (ξ_b = 0) and exerts nothing.

    Returns:
        Number of bonds broken in this call.
    """
    broken = 0
    for b in range(pairs.shape[0]):
        if intact[b] == 0:
            continue
        i = pairs[b, 0]
        j = pairs[b, 1]
        if active[i] == 0 or active[j] == 0:
            continue
        dx = np.float64(pos[i, 0]) - pos[j, 0]
        dy = np.float64(pos[i, 1]) - pos[j, 1]
        dz = np.float64(pos[i, 2]) - pos[j, 2]
        dist = math.sqrt(dx * dx + dy * dy + dz * dz)
        if dist > 0.0:
            nx, ny, nz = dx / dist, dy / dist, dz / dist
        else:
            nx, ny, nz = 1.0, 0.0, 0.0
        ri = np.float64(radius[i])
        rj = np.float64(radius[j])
        overlap = ri + rj - dist
        arm_i = ri - 0.5 * overlap
        arm_j = rj - 0.5 * overlap
        mi = np.float64(mass[i])
        mj = np.float64(mass[j])
        m_eff = mi * mj / (mi + mj)
        k_n = stiffness[b] * area[b]
        k_t = TANGENTIAL_STIFFNESS_RATIO * k_n
        stretch = dist - rest[b]
        dvx = np.float64(vel[i, 0]) - vel[j, 0]
        dvy = np.float64(vel[i, 1]) - vel[j, 1]
        dvz = np.float64(vel[i, 2]) - vel[j, 2]
        v_n = dvx * nx + dvy * ny + dvz * nz
        ax = arm_i * omega[i, 0] + arm_j * omega[j, 0]
        ay = arm_i * omega[i, 1] + arm_j * omega[j, 1]
        az = arm_i * omega[i, 2] + arm_j * omega[j, 2]
        cvx = dvx - (ay * nz - az * ny)
        cvy = dvy - (az * nx - ax * nz)
        cvz = dvz - (ax * ny - ay * nx)
        c_n = cvx * nx + cvy * ny + cvz * nz
        tx, ty, tz = cvx - c_n * nx, cvy - c_n * ny, cvz - c_n * nz
        sx, sy, sz = shear[b, 0], shear[b, 1], shear[b, 2]
        along = sx * nx + sy * ny + sz * nz
        sx = sx - along * nx + tx * dt
        sy = sy - along * ny + ty * dt
        sz = sz - along * nz + tz * dt
        ftx, fty, ftz = -k_t * sx, -k_t * sy, -k_t * sz
        shear_stress = math.sqrt(ftx * ftx + fty * fty + ftz * ftz) / area[b]
        if stiffness[b] * stretch > strength[b] or shear_stress > strength[b]:
            intact[b] = 0
            shear[b, 0] = 0.0
            shear[b, 1] = 0.0
            shear[b, 2] = 0.0
            broken += 1
            continue
        shear[b, 0] = sx
        shear[b, 1] = sy
        shear[b, 2] = sz
        beta = beta_table[material[i], material[j]]
        f_n = -k_n * stretch - 2.0 * beta * math.sqrt(m_eff * k_n) * v_n
        fx, fy, fz = f_n * nx + ftx, f_n * ny + fty, f_n * nz + ftz
        force[i, 0] += fx
        force[i, 1] += fy
        force[i, 2] += fz
        force[j, 0] -= fx
        force[j, 1] -= fy
        force[j, 2] -= fz
        cx = ny * ftz - nz * fty
        cy = nz * ftx - nx * ftz
        cz = nx * fty - ny * ftx
        torque[i, 0] -= arm_i * cx
        torque[i, 1] -= arm_i * cy
        torque[i, 2] -= arm_i * cz
        torque[j, 0] -= arm_j * cx
        torque[j, 1] -= arm_j * cy
        torque[j, 2] -= arm_j * cz
    return broken


# --- rigid clumps (engine.bonds.Clumps) ---------------------------------------------------------------


@njit(**KERNEL_OPTIONS)
def _rotation_matrix(q0, q1, q2, q3):
    """Rotation matrix (3, 3) of the unit quaternion (w, x, y, z)."""
    m = np.empty((3, 3))
    m[0, 0] = 1.0 - 2.0 * (q2 * q2 + q3 * q3)
    m[0, 1] = 2.0 * (q1 * q2 - q0 * q3)
    m[0, 2] = 2.0 * (q1 * q3 + q0 * q2)
    m[1, 0] = 2.0 * (q1 * q2 + q0 * q3)
    m[1, 1] = 1.0 - 2.0 * (q1 * q1 + q3 * q3)
    m[1, 2] = 2.0 * (q2 * q3 - q0 * q1)
    m[2, 0] = 2.0 * (q1 * q3 - q0 * q2)
    m[2, 1] = 2.0 * (q2 * q3 + q0 * q1)
    m[2, 2] = 1.0 - 2.0 * (q1 * q1 + q2 * q2)
    return m


@njit(**KERNEL_OPTIONS)
def _clump_omega(rot, inertia_inv, lx, ly, lz):
    """Ω = R I_b⁻¹ Rᵀ L (world frame)."""
    bx = rot[0, 0] * lx + rot[1, 0] * ly + rot[2, 0] * lz
    by = rot[0, 1] * lx + rot[1, 1] * ly + rot[2, 1] * lz
    bz = rot[0, 2] * lx + rot[1, 2] * ly + rot[2, 2] * lz
    wx = inertia_inv[0, 0] * bx + inertia_inv[0, 1] * by + inertia_inv[0, 2] * bz
    wy = inertia_inv[1, 0] * bx + inertia_inv[1, 1] * by + inertia_inv[1, 2] * bz
    wz = inertia_inv[2, 0] * bx + inertia_inv[2, 1] * by + inertia_inv[2, 2] * bz
    return (rot[0, 0] * wx + rot[0, 1] * wy + rot[0, 2] * wz, rot[1, 0] * wx + rot[1, 1] * wy + rot[1, 2] * wz,
            rot[2, 0] * wx + rot[2, 1] * wy + rot[2, 2] * wz)


@njit(**KERNEL_OPTIONS)
def clump_step(phase, start, members, offset, body_mass, inertia_inv, centre, velocity, momentum, orientation,
               body_force, body_torque, pos, vel, omega, quat, acc, alpha, mass, radius, dt, pos_ref):
    """Move every clump as one rigid body, then set its members from it. One thread, fixed order.

    The members' total forces and torques come from ``acc``/``alpha`` (n, 3) (what ``kick`` left:
    force/m + gravity + fields, torque/I). Angular motion integrates the world angular momentum L
    (so a free clump keeps L exactly) with Ω = R I_b⁻¹ Rᵀ L and the quaternion turned by Ω.

    Args:
        phase: 0 sums only (Verlet start), 1 Euler step, 2 Verlet drift (first half, with the stored
            ``body_force``/``body_torque``), 3 Verlet kick (second half with the new sums).
        centre, velocity, momentum: X [m], V [m/s], L [kg m²/s] per clump, float64 (C, 3).
        orientation: Body quaternion (w, x, y, z), float64 (C, 4).
        body_force, body_torque: Sums of the last force pass [N], [N m], float64 (C, 3).

    Returns:
        Largest member displacement² since the last neighbour build [m²].
    """
    max_disp2 = 0.0
    for c in range(body_mass.shape[0]):
        rot = _rotation_matrix(orientation[c, 0], orientation[c, 1], orientation[c, 2], orientation[c, 3])
        if phase != 2:
            fx = fy = fz = tx = ty = tz = 0.0
            for k in range(start[c], start[c + 1]):
                i = members[k]
                m = np.float64(mass[i])
                px = rot[0, 0] * offset[i, 0] + rot[0, 1] * offset[i, 1] + rot[0, 2] * offset[i, 2]
                py = rot[1, 0] * offset[i, 0] + rot[1, 1] * offset[i, 1] + rot[1, 2] * offset[i, 2]
                pz = rot[2, 0] * offset[i, 0] + rot[2, 1] * offset[i, 1] + rot[2, 2] * offset[i, 2]
                gx, gy, gz = m * acc[i, 0], m * acc[i, 1], m * acc[i, 2]
                inertia = 0.4 * m * np.float64(radius[i]) ** 2
                fx += gx
                fy += gy
                fz += gz
                tx += py * gz - pz * gy + inertia * alpha[i, 0]
                ty += pz * gx - px * gz + inertia * alpha[i, 1]
                tz += px * gy - py * gx + inertia * alpha[i, 2]
            body_force[c, 0], body_force[c, 1], body_force[c, 2] = fx, fy, fz
            body_torque[c, 0], body_torque[c, 1], body_torque[c, 2] = tx, ty, tz
        if phase == 0:
            continue
        h = dt if phase == 1 else 0.5 * dt
        for a in range(3):
            velocity[c, a] += h * body_force[c, a] / body_mass[c]
            momentum[c, a] += h * body_torque[c, a]
        if phase != 3:
            for a in range(3):
                centre[c, a] += dt * velocity[c, a]
            wx, wy, wz = _clump_omega(rot, inertia_inv[c], momentum[c, 0], momentum[c, 1], momentum[c, 2])
            q0, q1, q2, q3 = orientation[c, 0], orientation[c, 1], orientation[c, 2], orientation[c, 3]
            n0 = q0 - 0.5 * dt * (wx * q1 + wy * q2 + wz * q3)
            n1 = q1 + 0.5 * dt * (wx * q0 + wy * q3 - wz * q2)
            n2 = q2 + 0.5 * dt * (wy * q0 + wz * q1 - wx * q3)
            n3 = q3 + 0.5 * dt * (wz * q0 + wx * q2 - wy * q1)
            norm = math.sqrt(n0 * n0 + n1 * n1 + n2 * n2 + n3 * n3)
            orientation[c, 0], orientation[c, 1] = n0 / norm, n1 / norm
            orientation[c, 2], orientation[c, 3] = n2 / norm, n3 / norm
            rot = _rotation_matrix(orientation[c, 0], orientation[c, 1], orientation[c, 2], orientation[c, 3])
        wx, wy, wz = _clump_omega(rot, inertia_inv[c], momentum[c, 0], momentum[c, 1], momentum[c, 2])
        for k in range(start[c], start[c + 1]):
            i = members[k]
            px = rot[0, 0] * offset[i, 0] + rot[0, 1] * offset[i, 1] + rot[0, 2] * offset[i, 2]
            py = rot[1, 0] * offset[i, 0] + rot[1, 1] * offset[i, 1] + rot[1, 2] * offset[i, 2]
            pz = rot[2, 0] * offset[i, 0] + rot[2, 1] * offset[i, 1] + rot[2, 2] * offset[i, 2]
            if phase != 3:
                pos[i, 0] = centre[c, 0] + px
                pos[i, 1] = centre[c, 1] + py
                pos[i, 2] = centre[c, 2] + pz
                for a in range(4):
                    quat[i, a] = orientation[c, a]
                ddx = pos[i, 0] - pos_ref[i, 0]
                ddy = pos[i, 1] - pos_ref[i, 1]
                ddz = pos[i, 2] - pos_ref[i, 2]
                max_disp2 = max(max_disp2, ddx * ddx + ddy * ddy + ddz * ddz)
            vel[i, 0] = velocity[c, 0] + wy * pz - wz * py
            vel[i, 1] = velocity[c, 1] + wz * px - wx * pz
            vel[i, 2] = velocity[c, 2] + wx * py - wy * px
            omega[i, 0] = wx
            omega[i, 1] = wy
            omega[i, 2] = wz
    return max_disp2
