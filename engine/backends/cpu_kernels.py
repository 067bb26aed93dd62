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


@njit(**KERNEL_OPTIONS)
def neighbour_offsets(dims):
    """Linear-index offsets of the 13 'forward' neighbour cells (half stencil), int64 (13,).

    Every pair of particles in adjacent cells is seen exactly once: from the cell whose neighbour
    lies forward of it. Pairs inside one cell are taken in sorted order.
    """
    out = np.empty(13, np.int64)
    n = 0
    for ax in range(-1, 2):
        for ay in range(-1, 2):
            for az in range(-1, 2):
                offset = (ax * dims[1] + ay) * dims[2] + az
                if offset > 0:
                    out[n] = offset
                    n += 1
    return out


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
def _within(a, b, xi, yi, zi, ri, spos, srad):
    # float64, like the contact test itself: a candidate test in float32 could drop exact touches.
    dx = xi - np.float64(spos[b, 0])
    dy = yi - np.float64(spos[b, 1])
    dz = zi - np.float64(spos[b, 2])
    reach = ri + np.float64(srad[b])
    return dx * dx + dy * dy + dz * dz <= reach * reach


@njit(**KERNEL_OPTIONS)
def _scan(a, spos, srad, scell, order, cell_start, offsets, skin, out, slot):
    """Candidates of the particle at sorted position a: later particles of its own cell and all
    particles of the 13 forward cells closer than r_i + r_j + skin. Writes their original ids to
    ``out[slot:]`` when ``slot`` ≥ 0; returns how many there are. (Driven by engine.backends.cpu_neighbors.)"""
    c = scell[a]
    xi, yi, zi = np.float64(spos[a, 0]), np.float64(spos[a, 1]), np.float64(spos[a, 2])
    ri = np.float64(srad[a]) + skin
    found = 0
    for b in range(a + 1, cell_start[c + 1]):
        if _within(a, b, xi, yi, zi, ri, spos, srad):
            if slot >= 0:
                out[slot + found] = order[b]
            found += 1
    for o in range(offsets.shape[0]):
        cell = c + offsets[o]
        for b in range(cell_start[cell], cell_start[cell + 1]):
            if _within(a, b, xi, yi, zi, ri, spos, srad):
                if slot >= 0:
                    out[slot + found] = order[b]
                found += 1
    return found


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
    """Contact law of engine.contact_law on one pair: force on i as (fx, fy, fz).

    With ``spring`` true the tangential force comes from the elastic displacement stored in
    ``hist[h]`` (3 components, updated in place); otherwise from the capped dashpot.
    """
    if dist > 0.0:
        nx, ny, nz = dx / dist, dy / dist, dz / dist
    else:
        nx, ny, nz = 1.0, 0.0, 0.0
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
    speed_t = math.sqrt(tx * tx + ty * ty + tz * tz)
    if speed_t > 0.0:
        f_t = min(2.0 * root * speed_t, cap) / speed_t
        fx -= f_t * tx
        fy -= f_t * ty
        fz -= f_t * tz
    return fx, fy, fz


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
        for p in range(nbr_start[i], nbr_start[i + 1]):
            pair_force[p, 0] = 0.0
            pair_force[p, 1] = 0.0
            pair_force[p, 2] = 0.0
            j = nbr_j[p]
            if active[i] == 0 or active[j] == 0:
                continue
            dx = np.float64(pos[i, 0]) - pos[j, 0]
            dy = np.float64(pos[i, 1]) - pos[j, 1]
            dz = np.float64(pos[i, 2]) - pos[j, 2]
            reach = np.float64(radius[i]) + radius[j]
            d2 = dx * dx + dy * dy + dz * dz
            if d2 > reach * reach:
                if spring:  # hist has no rows without springs
                    hist[p, 0] = 0.0
                    hist[p, 1] = 0.0
                    hist[p, 2] = 0.0
                continue
            dist = math.sqrt(d2)
            mi = np.float64(mass[i])
            mj = np.float64(mass[j])
            fx, fy, fz = _contact(dx, dy, dz, dist, reach - dist,
                                  np.float64(vel[i, 0]) - vel[j, 0], np.float64(vel[i, 1]) - vel[j, 1],
                                  np.float64(vel[i, 2]) - vel[j, 2], mi * mj / (mi + mj), stiffness,
                                  beta_table[material[i], material[j]], mu_table[material[i], material[j]],
                                  spring, hist, p, dt)
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
def _field_acceleration(x, y, z, table, grid):
    """Sum of vortex and sampled fields at (x, y, z) (layout in engine.fields) [m/s²]."""
    ax = ay = az = 0.0
    for f in range(table.shape[0]):
        kind = int(table[f, 0])
        if kind == 2:  # vortex
            rx, ry, rz = x - table[f, 1], y - table[f, 2], z - table[f, 3]
            ux, uy, uz = table[f, 4], table[f, 5], table[f, 6]
            along = rx * ux + ry * uy + rz * uz
            px, py, pz = rx - along * ux, ry - along * uy, rz - along * uz
            rho = math.sqrt(px * px + py * py + pz * pz)
            if rho > 0.0:
                core = table[f, 8]
                profile = rho / core if rho < core else core / rho
                scale = table[f, 7] * profile / rho
                ax += scale * (uy * pz - uz * py)
                ay += scale * (uz * px - ux * pz)
                az += scale * (ux * py - uy * px)
        elif kind == 3:  # sampled, trilinear over nodes spanning lo..hi
            offset = int(table[f, 1])
            nx, ny, nz = int(table[f, 2]), int(table[f, 3]), int(table[f, 4])
            u = (x - table[f, 5]) / (table[f, 8] - table[f, 5]) * (nx - 1)
            v = (y - table[f, 6]) / (table[f, 9] - table[f, 6]) * (ny - 1)
            w = (z - table[f, 7]) / (table[f, 10] - table[f, 7]) * (nz - 1)
            if u < 0.0 or v < 0.0 or w < 0.0 or u > nx - 1 or v > ny - 1 or w > nz - 1:
                continue
            i0 = min(int(u), nx - 2)
            j0 = min(int(v), ny - 2)
            k0 = min(int(w), nz - 2)
            fu, fv, fw = u - i0, v - j0, w - k0
            for corner in range(8):
                di, dj, dk = corner >> 2, (corner >> 1) & 1, corner & 1
                weight = ((fu if di else 1.0 - fu) * (fv if dj else 1.0 - fv) * (fw if dk else 1.0 - fw)
                          * table[f, 11])
                base = offset + (((i0 + di) * ny + (j0 + dj)) * nz + (k0 + dk)) * 3
                ax += weight * grid[base]
                ay += weight * grid[base + 1]
                az += weight * grid[base + 2]
    return ax, ay, az


@njit(parallel=True, **KERNEL_OPTIONS)
def integrate(pos, vel, force, radius, mass, material, active, accel, dt, lo, hi, wall_mask,
              wall_beta, wall_mu, stiffness, spring, wall_hist, wall_touch, field_table, field_grid, pos_ref):
    """Wall contacts, fields, semi-implicit Euler, open-side exits, displacement since last build.

    Returns:
        (largest displacement² since the last build [m²], largest speed² [m²/s²], count of particles
        with a non-finite position or velocity).
    """
    max_disp2 = 0.0
    max_speed2 = 0.0
    bad = 0
    for i in prange(pos.shape[0]):
        if active[i] == 0:
            continue
        m = np.float64(mass[i])
        r = np.float64(radius[i])
        fx, fy, fz = force[i, 0], force[i, 1], force[i, 2]
        # Most grains are clear of every wall plane and hold no wall spring: skip the six sides.
        # (gap > r ⟺ overlap < 0 exactly, so the sides skipped are those the loop would skip.)
        near = wall_touch[i] != 0 or not (pos[i, 0] - lo[0] > r and hi[0] - pos[i, 0] > r and
                                          pos[i, 1] - lo[1] > r and hi[1] - pos[i, 1] > r and
                                          pos[i, 2] - lo[2] > r and hi[2] - pos[i, 2] > r)
        for side in range(6 if near else 0):
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
            wx, wy, wz = _contact(nx, ny, nz, 1.0, overlap, np.float64(vel[i, 0]), np.float64(vel[i, 1]),
                                  np.float64(vel[i, 2]), m, stiffness, wall_beta[material[i]],
                                  wall_mu[material[i]], spring, wall_hist[i], side, dt)
            fx += wx
            fy += wy
            fz += wz
        px, py, pz = np.float64(pos[i, 0]), np.float64(pos[i, 1]), np.float64(pos[i, 2])
        gx = gy = gz = 0.0
        if field_table.shape[0]:  # the call costs ~15 ns a particle even with no field
            gx, gy, gz = _field_acceleration(px, py, pz, field_table, field_grid)
        vx = vel[i, 0] + (fx / m + accel[0] + gx) * dt
        vy = vel[i, 1] + (fy / m + accel[1] + gy) * dt
        vz = vel[i, 2] + (fz / m + accel[2] + gz) * dt
        vel[i, 0] = vx
        vel[i, 1] = vy
        vel[i, 2] = vz
        # Positions advance with the float32-rounded velocity, as a restored cache frame would.
        pos[i, 0] = px + np.float64(vel[i, 0]) * dt
        pos[i, 1] = py + np.float64(vel[i, 1]) * dt
        pos[i, 2] = pz + np.float64(vel[i, 2]) * dt
        speed2 = vx * vx + vy * vy + vz * vz
        if not (math.isfinite(speed2) and math.isfinite(pos[i, 0] + pos[i, 1] + pos[i, 2])):
            bad += 1
            continue
        for axis in range(3):
            if (wall_mask[2 * axis] == 0 and pos[i, axis] < lo[axis]) or \
                    (wall_mask[2 * axis + 1] == 0 and pos[i, axis] > hi[axis]):
                active[i] = 0
        ddx = pos[i, 0] - pos_ref[i, 0]
        ddy = pos[i, 1] - pos_ref[i, 1]
        ddz = pos[i, 2] - pos_ref[i, 2]
        max_disp2 = max(max_disp2, ddx * ddx + ddy * ddy + ddz * ddz)
        max_speed2 = max(max_speed2, speed2)
    return max_disp2, max_speed2, bad


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
    """Carry each pair's tangential spring from the old list to the rebuilt one.

    A pair may change rows between builds (the row is the particle whose cell came first); the
    spring is stored as seen from the row's particle, so it changes sign when the pair changes row.
    The new list may number the particles differently (the reorder of ``cpu_neighbors``):
    ``new_to_old[s]`` is the old slot of the particle in new slot s.
    """
    for a in prange(new_start.shape[0] - 1):
        i = new_to_old[a]
        for p in range(new_start[a], new_start[a + 1]):
            j = new_to_old[new_j[p]]
            new_hist[p, 0] = 0.0
            new_hist[p, 1] = 0.0
            new_hist[p, 2] = 0.0
            found = False
            for q in range(old_start[i], old_start[i + 1]):
                if old_j[q] == j:
                    new_hist[p, 0] = old_hist[q, 0]
                    new_hist[p, 1] = old_hist[q, 1]
                    new_hist[p, 2] = old_hist[q, 2]
                    found = True
                    break
            if not found:
                for q in range(old_start[j], old_start[j + 1]):
                    if old_j[q] == i:
                        new_hist[p, 0] = -old_hist[q, 0]
                        new_hist[p, 1] = -old_hist[q, 1]
                        new_hist[p, 2] = -old_hist[q, 2]
                        break
