"""numba kernels of the contact law: one law, compiled for the physics switched on
(``make_contact_law``; instances ``contact_law_paper``, the paper's model, and ``contact_law_full``,
rotation, rolling resistance and cohesion), the law on one list entry (``make_pair_full``: distance,
normal, cohesion and the law's coefficients; ``pair_full_of`` for every setting, ``pair_full_lean`` for
scenes without cohesion or law tables), and the loops over the Verlet list that apply it and gather the
reactions. Conventions in ``cpu_kernels``; the float64 reference is ``engine.contact_law``.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from ..contact_law import SQRT_FIVE_SIXTHS, TANGENTIAL_STIFFNESS_RATIO  # numba global constants
from ..kernel_options import KERNEL_OPTIONS


@njit(inline="always", **KERNEL_OPTIONS)
def plane_cohesion(cohesion, radius, overlap):
    """SJKR pull [N] of a plane (a wall, a collider's shell face) cutting a sphere of ``radius`` [m]
    ``overlap`` δ [m] deep: c π (2 r δ − δ²), c [Pa] times the disc's area
    (``engine.contact_law.contact_area(wall=True)``). Evaluated as (c π)(…), the order the device code
    (kernels/collider_contacts.h) and the bakes so far use: its bits are compared."""
    return cohesion * math.pi * (2.0 * radius * overlap - overlap * overlap)


@njit(inline="always", **KERNEL_OPTIONS)
def law_of(stiffness, row):
    """(stiffness k [N/m] or E* [Pa], G* [Pa] (0: the linear law), friction cap code) of one row of a law
    table (engine.contact_law.law_tables: E*, G*, cap)."""
    if row[1] > 0.0:
        return row[0], row[1], np.int64(row[2])
    return stiffness, 0.0, np.int64(row[2])


def make_contact_law(*, rotation: bool, rolling: bool, cohesion: bool, tabled: bool, inline: str = "never"):
    """The contact law of engine.contact_law (``contact_response``, its float64 reference) on one contact
    of unit normal n, compiled for the physics switched on: each flag is a constant of the compiled
    function, so what it switches off costs nothing. ``contact_law_paper`` (all off: the paper's model)
    and ``contact_law_full`` (all on, each still off where its coefficient is zero) are the instances.

    Args:
        rotation: The contact point's velocity includes R_i ω_i + R_j ω_j; torques are returned.
        rolling: Rolling resistance (a rolling spring ξ_r where ``mu_roll`` > 0).
        cohesion: SJKR cohesion (``cohesive`` subtracted from the normal force).
        tabled: What the law tables (engine.contact_law.law_tables) add: Hertz–Mindlin where
            ``shear_modulus`` > 0 (stiffnesses from E*, G* and the contact's size) and the peers' friction
            caps (``cap_rule``).
        inline: numba's ``inline`` option ('always' where a call costs more than the law).

    The compiled law takes:
        n: unit normal (nx, ny, nz), from j (or the wall) to i; overlap δ [m].
        dv: v_i − v_j [m/s]; w_i, w_j: angular velocities [rad/s] (w_j = 0 for walls).
        arm_i, arm_j: R_i = r_i − δ/2, R_j = r_j − δ/2 (0 for walls) [m]; r_eff: rolling radius [m].
        m_eff [kg], stiffness k [N/m] (Hertz: E* [Pa]), shear_modulus (Hertz: G* [Pa]; 0: the linear
            law), cap_rule (index in engine.contact_law.FRICTION_CAPS; read with ``tabled`` only),
            beta (damping ratio), mu, mu_roll; cohesive: c·A [N].
        spring: tangential spring (history) or capped dashpot; hist[h, 0:3] ξ, hist[h, 3:6] ξ_r [m]
            (updated in place; ξ_r only read with rolling and mu_roll > 0); dt [s].
    and returns (fx, fy, fz) force on i [N], (tix, tiy, tiz) torque on i, (tjx, tjy, tjz) torque on j
    [N·m] (zero without rotation).
    """
    # The paper's model skips the dashpot's sqrt and division when its cap is zero (frictionless or
    # pulling apart) and adds no zero tangential force: its results keep their bits.
    paper = not (rotation or rolling or cohesion)

    @njit(inline=inline, **KERNEL_OPTIONS)
    def contact_law(nx, ny, nz, overlap, dvx, dvy, dvz, wix, wiy, wiz, wjx, wjy, wjz, arm_i, arm_j, r_eff,
                    m_eff, stiffness, shear_modulus, cap_rule, beta, mu, mu_roll, cohesive, spring, hist, h, dt):
        if tabled and shear_modulus > 0.0:
            # Hertz–Mindlin (engine.contact_law.contact_coefficients): stiffer as the contact grows.
            size = math.sqrt(r_eff * overlap)
            k_n = (4.0 / 3.0) * stiffness * size
            g_n = 2.0 * beta * SQRT_FIVE_SIXTHS * math.sqrt(2.0 * stiffness * size * m_eff)
            k_t = 8.0 * shear_modulus * size
            g_t = 2.0 * beta * SQRT_FIVE_SIXTHS * math.sqrt(k_t * m_eff)
            root = math.sqrt(m_eff * k_n)
        else:
            k_n = stiffness
            root = math.sqrt(m_eff * stiffness)
            g_n = 2.0 * beta * root
            k_t = TANGENTIAL_STIFFNESS_RATIO * stiffness
            g_t = 2.0 * beta * math.sqrt(m_eff * k_t)
        v_n = dvx * nx + dvy * ny + dvz * nz
        f_n = k_n * overlap - g_n * v_n
        cap_force = max(f_n, 0.0)  # the caps leave cohesion out, as LAMMPS/LIGGGHTS do
        if tabled and cap_rule != 0:  # 'absolute' and 'spring' (engine.contact_law.FRICTION_CAPS) cap at μ|f_n|
            cap_force = abs(f_n)
        if cohesion:
            f_n -= cohesive
        if rotation:
            # Velocity of the contact point: v_c = (v_i − v_j) − (R_i ω_i + R_j ω_j) × n.
            ax = arm_i * wix + arm_j * wjx
            ay = arm_i * wiy + arm_j * wjy
            az = arm_i * wiz + arm_j * wjz
            cvx = dvx - (ay * nz - az * ny)
            cvy = dvy - (az * nx - ax * nz)
            cvz = dvz - (ax * ny - ay * nx)
            c_n = cvx * nx + cvy * ny + cvz * nz
        else:
            cvx, cvy, cvz, c_n = dvx, dvy, dvz, v_n
        tx, ty, tz = cvx - c_n * nx, cvy - c_n * ny, cvz - c_n * nz
        cap = mu * cap_force
        ftx = fty = ftz = 0.0
        if spring:
            sx, sy, sz = hist[h, 0], hist[h, 1], hist[h, 2]
            along = sx * nx + sy * ny + sz * nz  # keep the spring in the current tangent plane
            sx = sx - along * nx + tx * dt
            sy = sy - along * ny + ty * dt
            sz = sz - along * nz + tz * dt
            # LIGGGHTS' 'spring' cap: the spring alone is capped; its dashpot acts only while it sticks.
            spring_cap = tabled and cap_rule == 2
            g_s = 0.0 if spring_cap else g_t  # the dashpot inside the capped force
            ftx = -k_t * sx - g_s * tx
            fty = -k_t * sy - g_s * ty
            ftz = -k_t * sz - g_s * tz
            magnitude = math.sqrt(ftx * ftx + fty * fty + ftz * ftz)
            if magnitude > cap:
                scale = cap / magnitude
                ftx *= scale
                fty *= scale
                ftz *= scale
                # Sliding: shorten the spring so that it alone (with the dashpot) gives the capped force.
                sx = -(ftx + g_s * tx) / k_t
                sy = -(fty + g_s * ty) / k_t
                sz = -(ftz + g_s * tz) / k_t
            elif spring_cap:
                ftx -= g_t * tx
                fty -= g_t * ty
                ftz -= g_t * tz
            hist[h, 0] = sx
            hist[h, 1] = sy
            hist[h, 2] = sz
            fx, fy, fz = f_n * nx + ftx, f_n * ny + fty, f_n * nz + ftz
        elif paper:
            fx, fy, fz = f_n * nx, f_n * ny, f_n * nz
            if cap > 0.0:
                speed_t = math.sqrt(tx * tx + ty * ty + tz * tz)
                if speed_t > 0.0:
                    f_t = min(2.0 * root * speed_t, cap) / speed_t
                    fx -= f_t * tx
                    fy -= f_t * ty
                    fz -= f_t * tz
        else:
            speed_t = math.sqrt(tx * tx + ty * ty + tz * tz)
            if speed_t > 0.0:
                f_t = min(2.0 * root * speed_t, cap) / speed_t
                ftx, fty, ftz = -f_t * tx, -f_t * ty, -f_t * tz
            fx, fy, fz = f_n * nx + ftx, f_n * ny + fty, f_n * nz + ftz
        tix = tiy = tiz = tjx = tjy = tjz = 0.0
        if rotation:
            # n × F_t; τ_i = −R_i n × F_t, τ_j = −R_j n × F_t.
            cx = ny * ftz - nz * fty
            cy = nz * ftx - nx * ftz
            cz = nx * fty - ny * ftx
            tix, tiy, tiz = -arm_i * cx, -arm_i * cy, -arm_i * cz
            tjx, tjy, tjz = -arm_j * cx, -arm_j * cy, -arm_j * cz
        if rolling and mu_roll > 0.0:
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
        return fx, fy, fz, tix, tiy, tiz, tjx, tjy, tjz

    return contact_law


#: The paper's model: no rotation, rolling resistance or cohesion (inlined: a call with this many
#: arguments costs more than the law).
contact_law_paper = make_contact_law(rotation=False, rolling=False, cohesion=False, tabled=False, inline="always")
#: Every other setting: rotation, rolling resistance, cohesion and Hertz–Mindlin, each off where its
#: coefficient is 0.
contact_law_full = make_contact_law(rotation=True, rolling=True, cohesion=True, tabled=True)
#: The full law inlined, for the list-entry functions (``make_pair_full``): every setting, and rotation
#: with rolling resistance only (no cohesion, no law tables: the add-on's default physics). They are named
#: as module globals, never captured by a closure: numba's disk cache keys a closure by its cells, and a
#: compiled function pickles differently in every process, so each process would compile it again.
contact_law_full_inlined = make_contact_law(rotation=True, rolling=True, cohesion=True, tabled=True, inline="always")
contact_law_rolling_inlined = make_contact_law(rotation=True, rolling=True, cohesion=False, tabled=False,
                                               inline="always")


@njit(inline="always", **KERNEL_OPTIONS)
def contact_along(nx, ny, nz, overlap, dvx, dvy, dvz, m_eff, stiffness, beta, mu, spring, hist, h, dt):
    """The paper's law for a given unit normal: force on i (fx, fy, fz) [N] (walls, grain pairs)."""
    f = contact_law_paper(nx, ny, nz, overlap, dvx, dvy, dvz, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, m_eff,
                          stiffness, 0.0, 0, beta, mu, 0.0, 0.0, spring, hist, h, dt)
    return f[0], f[1], f[2]


@njit(**KERNEL_OPTIONS)
def _contact(dx, dy, dz, dist, overlap, dvx, dvy, dvz, m_eff, stiffness, beta, mu, spring, hist, h, dt):
    """The paper's law on one contact of centre offset (dx, dy, dz) at distance ``dist`` [m]: force on i,
    the normal taken with three divisions, as the colliders' device code has it, to the bit."""
    if dist > 0.0:
        nx, ny, nz = dx / dist, dy / dist, dz / dist
    else:
        nx, ny, nz = 1.0, 0.0, 0.0
    return contact_along(nx, ny, nz, overlap, dvx, dvy, dvz, m_eff, stiffness, beta, mu, spring, hist, h, dt)


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


def make_pair_full(*, lean: bool):
    """The full law on one list entry, compiled for a scene's switches (inlined into the caller).

    The compiled function, ``pair_full(i, j, p, pos, ..., hist, bonded, clump)``, returns (touching, f) for
    list entry p (particles i, j, both active), f the 9-tuple of the law (force on i [N], torques on i and
    on j [N·m]); zeros when apart, held by a bond or in one rigid clump, where the entry's springs
    ``hist[p]`` are also cleared. ``law_table``: E*, G* [Pa] and friction cap per material pair (M, M, 3)
    (engine.contact_law.law_tables), no rows for the linear law of ``stiffness`` with Mochi's cap.

    ``lean``: the scene has no pair cohesion and no law tables, so neither table is read and the law
    is compiled without them (``contact_law_rolling_inlined``); otherwise ``contact_law_full_inlined``.
    Where the lean instance is valid both give the same bits; it is smaller and about 13% faster on the
    100k pile's contact pass (docs/benchmarks.md).
    """

    @njit(inline="always", **KERNEL_OPTIONS)  # inlined: called per list entry with many arguments
    def pair_full(i, j, p, pos, vel, omega, radius, mass, material, beta_table, mu_table, roll_table,
                  cohesion_table, stiffness, law_table, spring, dt, hist, bonded, clump):
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
        dvx = np.float64(vel[i, 0]) - vel[j, 0]
        dvy = np.float64(vel[i, 1]) - vel[j, 1]
        dvz = np.float64(vel[i, 2]) - vel[j, 2]
        wix, wiy, wiz = np.float64(omega[i, 0]), np.float64(omega[i, 1]), np.float64(omega[i, 2])
        wjx, wjy, wjz = np.float64(omega[j, 0]), np.float64(omega[j, 1]), np.float64(omega[j, 2])
        arm_i, arm_j = ri - 0.5 * overlap, rj - 0.5 * overlap
        r_eff, m_eff = ri * rj / reach, mi * mj / (mi + mj)
        beta, mu, mu_roll = beta_table[ci, cj], mu_table[ci, cj], roll_table[ci, cj]
        # ``lean`` is a constant of the compiled function: numba drops the branch not taken before inlining.
        if lean:
            f = contact_law_rolling_inlined(nx, ny, nz, overlap, dvx, dvy, dvz, wix, wiy, wiz, wjx, wjy, wjz, arm_i,
                                            arm_j, r_eff, m_eff, stiffness, 0.0, 0, beta, mu, mu_roll, 0.0, spring,
                                            hist, p, dt)
        else:
            k_or_e, shear, cap_rule = law_of(stiffness, law_table[ci, cj]) if law_table.shape[0] \
                else (stiffness, 0.0, 0)
            coh = cohesion_table[ci, cj]
            cohesive = 0.0
            if coh > 0.0 and dist > 0.0:
                cohesive = coh * (0.25 * math.pi * overlap * (dist + ri - rj) * (dist - ri + rj)
                                  * (dist + ri + rj) / d2)
            f = contact_law_full_inlined(nx, ny, nz, overlap, dvx, dvy, dvz, wix, wiy, wiz, wjx, wjy, wjz, arm_i,
                                         arm_j, r_eff, m_eff, k_or_e, shear, cap_rule, beta, mu, mu_roll, cohesive,
                                         spring, hist, p, dt)
        return True, f

    return pair_full


#: The full law on one list entry: every setting (the two-pass path of glue bonds, rigid clumps and
#: colliders, and the fused pass of scenes with cohesion or law tables), and the lean instance.
pair_full_of = make_pair_full(lean=False)
pair_full_lean = make_pair_full(lean=True)


@njit(parallel=True, **KERNEL_OPTIONS)
def pair_forces_full(pos, vel, omega, radius, mass, material, active, nbr_start, nbr_j, beta_table, mu_table,
                     roll_table, cohesion_table, stiffness, law_table, spring, dt, hist, pair_force, pair_torque,
                     force, torque, bonded, clump):
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
                                       roll_table, cohesion_table, stiffness, law_table, spring, dt, hist, bonded,
                                       clump)
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
