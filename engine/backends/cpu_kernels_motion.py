"""numba kernels of the walls and the integrators: the box walls (paper and full law), semi-implicit
Euler (``advance``, ``integrate``), velocity Verlet with rotation (``drift``, ``kick_one``, ``kick``), the
grains that cannot reach a side before the next build. Conventions in ``cpu_kernels``.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from .cpu_fields import field_acceleration
from ..kernel_options import KERNEL_OPTIONS
from .cpu_kernels_law import contact_along, contact_law_full, law_of, plane_cohesion


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
                     wall_roll, wall_cohesion, stiffness, wall_law_table, spring, wall_hist, wall_touch, dt, force, torque, touched):
    """``wall_forces`` for the full law: each side's force and torque on the particles ``near`` added to
    ``force[i]``/``torque[i]`` in side order (``touched[i]`` set where one pushes); ``wall_hist``
    (n, 6, 6): ξ and ξ_r per side, (n, 0, 6) without springs (never touched then); ``wall_law_table`` (M, 3):
    E*, G* [Pa] and friction cap of each material against the walls (engine.contact_law.law_tables), no rows
    for the linear law with Mochi's cap."""
    for k in prange(near.shape[0]):
        i = near[k]
        if active[i] != 0 and wall_candidate(i, pos, radius, lo, hi, wall_touch):
            f = _wall_sum_full(i, force[i, 0], force[i, 1], force[i, 2], torque[i, 0], torque[i, 1], torque[i, 2],
                               pos, vel, omega, radius, mass, material, lo, hi, wall_mask, wall_beta, wall_mu,
                               wall_roll, wall_cohesion, stiffness, wall_law_table, spring, wall_hist, wall_touch, dt)
            if f[6]:
                force[i, 0], force[i, 1], force[i, 2] = f[0], f[1], f[2]
                torque[i, 0], torque[i, 1], torque[i, 2] = f[3], f[4], f[5]
                touched[i] = 1


@njit(**KERNEL_OPTIONS)
def _wall_sum_full(i, fx, fy, fz, tx, ty, tz, pos, vel, omega, radius, mass, material, lo, hi, wall_mask, wall_beta,
                   wall_mu, wall_roll, wall_cohesion, stiffness, wall_law_table, spring, wall_hist, wall_touch, dt):
    """(force, torque) on particle i plus the six sides' (full law), added in side order, and whether
    any side pushes: (fx, fy, fz, tx, ty, tz, pushed)."""
    m = np.float64(mass[i])
    r = np.float64(radius[i])
    mat = material[i]
    wix, wiy, wiz = np.float64(omega[i, 0]), np.float64(omega[i, 1]), np.float64(omega[i, 2])
    k_or_e, shear, cap_rule = law_of(stiffness, wall_law_table[mat]) if wall_law_table.shape[0] else (stiffness, 0.0, 0)
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
            cohesive = plane_cohesion(wall_cohesion[mat], r, overlap)
        f = contact_law_full(nx, ny, nz, overlap, np.float64(vel[i, 0]), np.float64(vel[i, 1]),
                             np.float64(vel[i, 2]), wix, wiy, wiz, 0.0, 0.0, 0.0, r - 0.5 * overlap, 0.0, r, m,
                             k_or_e, shear, cap_rule, wall_beta[mat], wall_mu[mat], wall_roll[mat], cohesive, spring,
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
