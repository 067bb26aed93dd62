"""The CPU step in one pass: contact forces and integration fused, in blocks of slots (the paper's
model; the full law, ``fused_step_full``, the same way).

Why one pass is enough: after the cell-order renumbering (engine.backends.cpu_neighbors) every entry of
particle i's half-list row names a later slot, j > i. Walking the slots in order, when the pass reaches i
every row that holds i is done except i's own; the reactions of those rows were added straight into
``force[i]`` (Newton's third law, as LAMMPS's serial pair loop does), so after i's own row the force on
i is complete and i is advanced at once (``cpu_kernels.advance``: fields, Euler, exits). Moving i changes
nothing a later row reads, since later rows name only later slots. This drops the two-pass path's
per-entry force buffer, its gather pass and its separate integration pass, which cost more than the
contact arithmetic itself.

Threads: the slots are cut into consecutive blocks, one per thread, of about equal cost (list entries
plus particles, ``split_blocks``). A row near the end of a block may name slots of later blocks; those
"crossing" entries are computed first, before anything moves (``crossing_forces``, into ``pair_force``),
and each later block starts its particles' forces from them (``fused_step``). Every particle's force is
summed in the same order whatever the blocks: the walls' push (``cpu_kernels.wall_forces``, a pass of
its own over the grains near a side, before this one), the reactions of earlier rows in row order, then
its own row's entries in order. Sums start at +0.0, so adding the zero force of a non-touching entry never
changes a bit. The result is therefore the same for any number of blocks or threads (same bits).

Force invariant: ``force`` is all zero between steps and ``touched`` (n,) uint8 marks the particles
whose entry was written during the step (each is cleared as its particle is advanced), so only the
slots reached by crossing entries need setting at the start of a block, and a particle nothing pushed
costs one byte read instead of a 24-byte read and store (most of them, in a falling cloud).
"""

from __future__ import annotations

import functools

import numpy as np
from numba import njit, prange

from .cpu_kernels import KERNEL_OPTIONS, advance, kick_one, pair_force_from
from .cpu_kernels_law import pair_full_lean, pair_full_of

#: Cost of advancing one particle, in list entries, for balancing the blocks.
PARTICLE_COST = 1.5


def split_blocks(nbr_start: np.ndarray, blocks: int) -> np.ndarray:
    """Block boundaries over the slots, int64 (blocks + 1,): block b is [start[b], start[b + 1]), each of
    about equal cost (its list entries plus ``PARTICLE_COST`` per particle)."""
    n = nbr_start.shape[0] - 1
    cost = nbr_start.astype(np.float64) + PARTICLE_COST * np.arange(n + 1)
    targets = cost[-1] * np.arange(1, blocks) / blocks
    inner = np.searchsorted(cost, targets).astype(np.int64)
    return np.concatenate(([0], inner, [n])).astype(np.int64)


@njit(**KERNEL_OPTIONS)
def block_reach(nbr_start, nbr_j, block_start):
    """Where the crossing entries are, per block b (each int64 (blocks,)):

    - ``cross_from[b]``: the first row of block b holding an entry past the block (its rows from there
      on are the ones ``crossing_forces`` scans; the block's end when there is none);
    - ``reached_to[b]``: one past the last slot of block b named by a row of an earlier block (the slots
      [block_start[b], reached_to[b]) start their force from crossing reactions).
    """
    blocks = block_start.shape[0] - 1
    cross_from = np.empty(blocks, np.int64)
    reached_to = np.empty(blocks, np.int64)
    furthest = -1  # largest slot named by any row so far
    for b in range(blocks):
        s0 = block_start[b]
        s1 = block_start[b + 1]
        reached_to[b] = min(max(furthest + 1, s0), s1)
        first = s1
        for i in range(s0, s1):
            for p in range(nbr_start[i], nbr_start[i + 1]):
                j = nbr_j[p]
                if j >= s1 and i < first:
                    first = i
                if j > furthest:
                    furthest = j
        cross_from[b] = first
    return cross_from, reached_to


@njit(parallel=True, **KERNEL_OPTIONS)
def crossing_forces(pos, vel, radius, mass, material, active, nbr_start, nbr_j, beta_table, mu_table, stiffness,
                    spring, dt, hist, pair_force, block_start, cross_from):
    """Force on i [N] of every entry whose j lies in a later block, to ``pair_force[p]`` (zero when either
    particle is inactive), from the state before the step."""
    for b in prange(block_start.shape[0] - 1):
        s1 = block_start[b + 1]
        for i in range(cross_from[b], s1):
            xi, yi, zi, ri = np.float64(pos[i, 0]), np.float64(pos[i, 1]), np.float64(pos[i, 2]), np.float64(radius[i])
            for p in range(nbr_start[i], nbr_start[i + 1]):
                j = nbr_j[p]
                if j < s1:
                    continue
                fx = fy = fz = 0.0
                if active[i] != 0 and active[j] != 0:
                    _, fx, fy, fz = pair_force_from(i, j, p, xi, yi, zi, ri, pos, vel, radius, mass, material,
                                                    beta_table, mu_table, stiffness, spring, dt, hist)
                pair_force[p, 0] = fx
                pair_force[p, 1] = fy
                pair_force[p, 2] = fz


@njit(inline="always", **KERNEL_OPTIONS)
def _open_block(b, block_start, reached_to, nbr_start, rev_start, rev_pair, pair_force, force, pair_torque, torque,
                torques, touched):
    """Start block b: its slots that crossing entries name receive those reactions
    (``_take_crossing_reactions``) and are marked ``touched``. Returns the block's slots (s0, s1)."""
    s0 = block_start[b]
    first_own = nbr_start[s0]
    for j in range(s0, reached_to[b]):
        _take_crossing_reactions(j, first_own, rev_start, rev_pair, pair_force, force, pair_torque, torque, torques)
        touched[j] = 1
    return s0, block_start[b + 1]


@njit(inline="always", **KERNEL_OPTIONS)
def _take_crossing_reactions(j, first_own, rev_start, rev_pair, pair_force, force, pair_torque, torque, torques):
    """Add to ``force[j]`` (zero, or the walls' push) the reactions of the crossing entries naming j
    (rows before ``first_own``, the block's first entry), in row order; with ``torques`` also their
    torques on j (``pair_torque[p, 3:6]``) to ``torque[j]`` (the paper model passes its force arrays
    twice and false)."""
    fx, fy, fz = force[j, 0], force[j, 1], force[j, 2]
    tx, ty, tz = 0.0, 0.0, 0.0
    if torques:
        tx, ty, tz = torque[j, 0], torque[j, 1], torque[j, 2]
    for q in range(rev_start[j], rev_start[j + 1]):
        p = rev_pair[q]
        if p >= first_own:
            break
        fx -= pair_force[p, 0]
        fy -= pair_force[p, 1]
        fz -= pair_force[p, 2]
        if torques:
            tx += pair_torque[p, 3]
            ty += pair_torque[p, 4]
            tz += pair_torque[p, 5]
    force[j, 0], force[j, 1], force[j, 2] = fx, fy, fz
    if torques:
        torque[j, 0], torque[j, 1], torque[j, 2] = tx, ty, tz


@njit(parallel=True, **KERNEL_OPTIONS)
def fused_step(pos, vel, force, touched, radius, mass, material, active, nbr_start, nbr_j, rev_start, rev_pair,
               beta_table, mu_table, stiffness, spring, dt, hist, pair_force, block_start, reached_to, accel, lo, hi,
               wall_mask, interior, field_table, field_grid, pos_ref, measure):
    """One step of the paper model for every slot (see the module docstring); call
    ``cpu_kernels.wall_forces`` first (it adds the walls' push to ``force``), then ``crossing_forces``
    when there is more than one block. ``interior``, ``measure``: see ``cpu_kernels.advance``.

    Returns:
        (largest displacement² since the last build [m²], largest speed² [m²/s²], count of particles
        with a non-finite position or velocity), as ``cpu_kernels.integrate``.
    """
    blocks = block_start.shape[0] - 1
    open_sides = not wall_mask.all()
    disp2_of = np.zeros(blocks)
    speed2_of = np.zeros(blocks)
    bad_of = np.zeros(blocks, np.int64)
    for b in prange(blocks):
        s0, s1 = _open_block(b, block_start, reached_to, nbr_start, rev_start, rev_pair, pair_force, force, pair_force,
                             force, False, touched)
        max_disp2 = 0.0
        max_speed2 = 0.0
        bad = 0
        for i in range(s0, s1):
            fx = 0.0
            fy = 0.0
            fz = 0.0
            if touched[i]:  # only then is force[i] not zero: one byte read instead of 24, and no store
                fx = force[i, 0]
                fy = force[i, 1]
                fz = force[i, 2]
                force[i, 0] = 0.0  # the invariant: zero again for the next step
                force[i, 1] = 0.0
                force[i, 2] = 0.0
                touched[i] = 0
            if active[i] == 0:
                continue
            # i's centre in registers: the loop stores to force[], which the compiler must otherwise
            # assume could change pos[i].
            xi = np.float64(pos[i, 0])
            yi = np.float64(pos[i, 1])
            zi = np.float64(pos[i, 2])
            ri = np.float64(radius[i])
            for p in range(nbr_start[i], nbr_start[i + 1]):
                j = nbr_j[p]
                if j >= s1:  # crossing: computed by crossing_forces
                    gx = pair_force[p, 0]
                    gy = pair_force[p, 1]
                    gz = pair_force[p, 2]
                else:
                    if active[j] == 0:
                        continue
                    touching, gx, gy, gz = pair_force_from(i, j, p, xi, yi, zi, ri, pos, vel, radius, mass, material,
                                                           beta_table, mu_table, stiffness, spring, dt, hist)
                    if not touching:  # apart: no force (adding its zero would change no bit)
                        continue
                    force[j, 0] -= gx
                    force[j, 1] -= gy
                    force[j, 2] -= gz
                    touched[j] = 1
                fx += gx
                fy += gy
                fz += gz
            disp2, speed2, broken = advance(i, fx, fy, fz, pos, vel, mass, active, accel, dt, lo, hi, wall_mask,
                                            open_sides, interior, field_table, field_grid, pos_ref, measure)
            bad += broken
            max_disp2 = max(max_disp2, disp2)
            max_speed2 = max(max_speed2, speed2)
        disp2_of[b] = max_disp2
        speed2_of[b] = max_speed2
        bad_of[b] = bad
    return disp2_of.max(), speed2_of.max(), bad_of.sum()


# --- the full law (rotation, rolling resistance, cohesion; Euler or velocity Verlet) ----------------------


@functools.cache
def full_law_pass(*, lean: bool):
    """The full law's fused pass, ``(crossing_forces_full, fused_step_full)``, compiled for a scene's
    switches: ``lean`` where no pair of materials has cohesion and the law tables have no rows (no
    Hertz–Mindlin, Mochi's friction cap), the list entries then take ``pair_full_lean`` (the law without
    those switches, inlined), otherwise ``pair_full_of`` (every setting). Same bits where both are valid.
    (``lean`` is a closure constant: numba keeps the branch it selects and caches each instance. Both
    kernels write the two calls out: one inlined helper taking ``lean`` as an argument types both laws
    and cost about 4 s more of compiling on a cold cache.)
    """

    @njit(parallel=True, **KERNEL_OPTIONS)
    def crossing_forces_full(pos, vel, omega, radius, mass, material, active, nbr_start, nbr_j, beta_table,
                             mu_table, roll_table, cohesion_table, stiffness, law_table, spring, dt, hist, bonded,
                             clump, pair_force, pair_torque, block_start, cross_from):
        """``crossing_forces`` for the full law: force on i to ``pair_force[p]`` (3), torques on i and on j
        to ``pair_torque[p]`` (6) of every entry whose j lies in a later block (zero when not touching)."""
        for b in prange(block_start.shape[0] - 1):
            s1 = block_start[b + 1]
            for i in range(cross_from[b], s1):
                for p in range(nbr_start[i], nbr_start[i + 1]):
                    j = nbr_j[p]
                    if j < s1:
                        continue
                    f = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
                    if active[i] != 0 and active[j] != 0:
                        if lean:
                            touching, f = pair_full_lean(i, j, p, pos, vel, omega, radius, mass, material,
                                                         beta_table, mu_table, roll_table, cohesion_table, stiffness,
                                                         law_table, spring, dt, hist, bonded, clump)
                        else:
                            touching, f = pair_full_of(i, j, p, pos, vel, omega, radius, mass, material, beta_table,
                                                       mu_table, roll_table, cohesion_table, stiffness, law_table,
                                                       spring, dt, hist, bonded, clump)
                    for a in range(3):
                        pair_force[p, a] = f[a]
                    for a in range(6):
                        pair_torque[p, a] = f[3 + a]

    @njit(parallel=True, **KERNEL_OPTIONS)
    def fused_step_full(pos, vel, omega, quat, force, torque, touched, radius, mass, material, active, nbr_start,
                        nbr_j, rev_start, rev_pair, beta_table, mu_table, roll_table, cohesion_table, stiffness,
                        law_table, spring, dt, kick_dt, hist, bonded, clump, pair_force, pair_torque, block_start,
                        reached_to, accel, euler, rotation, lo, hi, wall_mask, field_table, field_grid, acc, alpha,
                        pos_ref):
        """The full law's forces and kick (``cpu_kernels.pair_forces_full``, the gathers and ``kick``) in one
        pass, as ``fused_step`` does for the paper model: a particle's force and torque are its earlier
        rows' reactions in row order, then its own row's entries (after the walls' push, which
        ``cpu_kernels.wall_forces_full`` adds first); ``kick_one`` then moves it.
        ``dt``: the springs' step (0 when only priming Verlet's accelerations); ``kick_dt``: see ``kick``.
        Call ``crossing_forces_full`` first when there is more than one block. (Velocity Verlet's first half,
        ``drift``, stays a pass of its own: forces need every grain drifted.)

        Returns:
            as ``cpu_kernels.kick``.
        """
        blocks = block_start.shape[0] - 1
        disp2_of = np.zeros(blocks)
        speed2_of = np.zeros(blocks)
        bad_of = np.zeros(blocks, np.int64)
        for b in prange(blocks):
            s0, s1 = _open_block(b, block_start, reached_to, nbr_start, rev_start, rev_pair, pair_force, force,
                                 pair_torque, torque, True, touched)
            max_disp2 = 0.0
            max_speed2 = 0.0
            bad = 0
            for i in range(s0, s1):
                fx = fy = fz = 0.0
                tx = ty = tz = 0.0
                if touched[i]:  # force and torque are zero otherwise (the invariant of fused_step)
                    fx, fy, fz = force[i, 0], force[i, 1], force[i, 2]
                    tx, ty, tz = torque[i, 0], torque[i, 1], torque[i, 2]
                    for a in range(3):
                        force[i, a] = 0.0
                        torque[i, a] = 0.0
                    touched[i] = 0
                if active[i] == 0:
                    continue
                for p in range(nbr_start[i], nbr_start[i + 1]):
                    j = nbr_j[p]
                    if j >= s1:  # crossing: computed by crossing_forces_full
                        gx, gy, gz = pair_force[p, 0], pair_force[p, 1], pair_force[p, 2]
                        sx, sy, sz = pair_torque[p, 0], pair_torque[p, 1], pair_torque[p, 2]
                    else:
                        if active[j] == 0:
                            continue
                        if lean:
                            touching, f = pair_full_lean(i, j, p, pos, vel, omega, radius, mass, material,
                                                         beta_table, mu_table, roll_table, cohesion_table, stiffness,
                                                         law_table, spring, dt, hist, bonded, clump)
                        else:
                            touching, f = pair_full_of(i, j, p, pos, vel, omega, radius, mass, material, beta_table,
                                                       mu_table, roll_table, cohesion_table, stiffness, law_table,
                                                       spring, dt, hist, bonded, clump)
                        if not touching:  # no force (adding its zeros would change no bit)
                            continue
                        force[j, 0] -= f[0]
                        force[j, 1] -= f[1]
                        force[j, 2] -= f[2]
                        torque[j, 0] += f[6]
                        torque[j, 1] += f[7]
                        torque[j, 2] += f[8]
                        touched[j] = 1
                        gx, gy, gz = f[0], f[1], f[2]
                        sx, sy, sz = f[3], f[4], f[5]
                    fx += gx
                    fy += gy
                    fz += gz
                    tx += sx
                    ty += sy
                    tz += sz
                disp2, speed2, broken = kick_one(i, fx, fy, fz, tx, ty, tz, pos, vel, omega, quat, radius, mass, active,
                                                 accel, dt, kick_dt, euler, rotation, lo, hi, wall_mask, field_table,
                                                 field_grid, acc, alpha, pos_ref)
                bad += broken
                max_disp2 = max(max_disp2, disp2)
                max_speed2 = max(max_speed2, speed2)
            disp2_of[b] = max_disp2
            speed2_of[b] = max_speed2
            bad_of[b] = bad
        return disp2_of.max(), speed2_of.max(), bad_of.sum()

    return crossing_forces_full, fused_step_full
