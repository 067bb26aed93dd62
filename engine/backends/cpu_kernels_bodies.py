"""numba kernels of glue bonds (engine.bonds, parallel bond of Potyondy & Cundall 2004) and rigid clumps
(engine.bonds.Clumps). Conventions in ``cpu_kernels``.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from ..contact_law import TANGENTIAL_STIFFNESS_RATIO  # a numba global constant
from ..kernel_options import KERNEL_OPTIONS


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
