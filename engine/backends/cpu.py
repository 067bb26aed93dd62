"""CPU backend: numba kernels over a Verlet list with an adaptive skin.

The paper's maintenance policy (§4.2.4: refit every step, rebuild every n steps) maps onto the Verlet
list this way: the list of pairs closer than r_i + r_j + skin is rebuilt every ``rebuild_interval``
steps, and reused in between (the CPU's 'refit'). The skin is chosen at each build to cover the motion
expected over the interval, capped so the list stays small in dense packings; if any particle still
moves more than half the skin the list is rebuilt early, so the contacts found are always exactly the
colliding pairs. The list is also rebuilt at every frame boundary (``begin_frame``), which makes a bake
resumed from a cached frame bit-identical to an uninterrupted one.

Two step paths: the paper's model (``Physics.rotation`` false, integrator 'euler', no rolling resistance
or cohesion) runs the original kernels and keeps its bits; everything else runs the full law
(``pair_forces_full``, ``kick``, and ``drift`` for velocity Verlet), see docs/physics.md.

Per-particle arrays a reorder of the particles must permute together: the state's positions,
velocities, active, angular_velocities and orientations; the model's per-particle arrays; and here
``wall_hist``, ``wall_touch``, ``pos_ref``, ``acc`` and ``alpha`` (the Verlet accelerations); glue bonds
name particles by index (``model.bonds.pairs`` and ``bond_rows``), so a reorder must renumber them.
"""

from __future__ import annotations

import math
import os
import time

import numpy as np

from . import cpu_kernels as k
from .base import Backend, StepTimings
from ..bonds import bond_rows, bonds_per_particle
from ..contact_law import cohesion_tables, pair_tables, rolling_tables, wall_tables
from ..errors import SimulationDiverged
from ..fields import pack_fields, uniform_acceleration
from ..local_origin import local_origin, local_to_world, round_to_world, shift_field_table, world_to_local
from ..model import Model
from ..state import State

#: Mean candidate pairs per particle the skin may cost at most (half list).
CANDIDATES_PER_PARTICLE = 6.0
#: Safety factor on the motion the skin must cover.
SKIN_SAFETY = 1.2
#: Below this many particles one thread is faster: a step is too short to amortise waking the
#: others (and on a loaded machine parallel loops wait for their slowest thread).
SINGLE_THREAD_BELOW = 20_000


class NeighborListCpu:
    """The Verlet half list and its transpose (arrays described in ``cpu_kernels``)."""

    def __init__(self, particle_count: int):
        self.nbr_start = np.zeros(particle_count + 1, np.int64)
        self.nbr_j = np.zeros(0, np.int32)
        self.rev_start = np.zeros(particle_count + 1, np.int64)
        self.rev_pair = np.zeros(0, np.int64)
        self.skin = 0.0
        self.cell_of = np.zeros(particle_count, np.int64)
        self.counts = np.zeros(particle_count, np.int64)

    def build(self, pos: np.ndarray, radius: np.ndarray, active: np.ndarray, skin: float) -> None:
        """Rebuild for cut-off r_i + r_j + ``skin`` [m] through a uniform cell grid."""
        n = pos.shape[0]
        lo, hi, count = k.active_bounds(pos, active)
        self.skin = skin
        if count == 0:
            self.nbr_start[:] = 0
            self.nbr_j = np.zeros(0, np.int32)
            self.rev_start[:] = 0
            self.rev_pair = np.zeros(0, np.int64)
            return
        r_max = float(radius[active.astype(bool)].max()) if count < n else float(radius.max())
        cell = 2.0 * r_max + skin
        extent = np.maximum(hi - lo, 0.0)
        # Keep the grid at most ~2 cells per particle; larger cells stay correct, only slower.
        cell = max(cell, float(np.prod(extent + cell) / (2.0 * count + 8.0)) ** (1.0 / 3.0))
        dims = np.floor(extent / cell).astype(np.int64) + 3  # +2: an empty cell of padding on each side
        k.assign_cells(pos, active, lo, 1.0 / cell, dims, self.cell_of)
        cell_start, cell_order = k.counting_sort(self.cell_of, int(np.prod(dims)))
        offsets = k.neighbour_offsets(dims)
        m = cell_order.shape[0]
        spos, srad, scell = np.empty((m, 3), np.float32), np.empty(m, np.float32), np.empty(m, np.int64)
        k.gather_sorted(pos, radius, self.cell_of, cell_order, spos, srad, scell)
        self.counts[:] = 0
        k.count_candidates(spos, srad, scell, cell_order, cell_start, offsets, skin, self.counts)
        self.nbr_start[0] = 0
        np.cumsum(self.counts, out=self.nbr_start[1:])
        self.nbr_j = np.empty(int(self.nbr_start[-1]), np.int32)
        k.fill_candidates(spos, srad, scell, cell_order, cell_start, offsets, skin, self.nbr_start, self.nbr_j)
        self.rev_start, self.rev_pair = k.transpose_pairs(self.nbr_j, n)

    @property
    def pair_count(self) -> int:
        return int(self.nbr_j.shape[0])

    def pairs(self) -> tuple[np.ndarray, np.ndarray]:
        """(i, j) of every list entry, int32 arrays of length pair_count."""
        i = np.repeat(np.arange(self.nbr_start.shape[0] - 1, dtype=np.int32), np.diff(self.nbr_start))
        return i, self.nbr_j


class BackendCpu(Backend):
    """Multi-threaded CPU backend (numba). See the module docstring for the neighbour policy."""

    name = "cpu"

    def __init__(self, model: Model):
        super().__init__(model)
        physics = model.physics
        n = model.particle_count
        self.beta, self.mu = pair_tables(physics.materials)
        self.wall_beta, self.wall_mu = wall_tables(physics.materials, physics.domain.wall_restitution,
                                                   physics.domain.wall_friction)
        # Everything position-dependent in local coordinates (engine.local_origin).
        self.origin = local_origin(physics.domain.lo, physics.domain.hi)
        self.field_table, self.field_grid = pack_fields(physics.fields)
        self.field_table = shift_field_table(self.field_table, self.origin, physics.fields).astype(np.float64)
        self.lo = np.asarray(physics.domain.lo, np.float64) - self.origin
        self.hi = np.asarray(physics.domain.hi, np.float64) - self.origin
        if model.colliders is not None:
            model.colliders.set_origin(self.origin)
        self.wall_mask = physics.domain.wall_mask()
        self.neighbors = NeighborListCpu(n)
        self.force = np.zeros((n, 3), np.float64)
        self.pair_force = np.zeros((0, 3), np.float64)
        frictional = any(m.friction > 0 for m in physics.materials) or physics.domain.wall_friction > 0
        # Without friction both models give F_t = 0; skip the springs' bookkeeping then.
        self.spring = physics.friction_model == "spring" and frictional
        self.rotation = bool(physics.rotation)
        self.euler = physics.integrator == "euler"
        self.roll, self.wall_roll = rolling_tables(physics.materials, physics.domain.wall_rolling_friction)
        self.cohesion, self.wall_cohesion = cohesion_tables(physics.materials, physics.domain.wall_cohesion)
        self.rolling = self.rotation and (bool(self.roll.any()) or bool(self.wall_roll.any()))
        # The paper's model runs the original kernels (its results keep their bits).
        self.bonds = model.bonds if model.bonds is not None and model.bonds.count else None
        self.full = self.rotation or not self.euler or self.rolling or bool(self.cohesion.any()) \
            or bool(self.wall_cohesion.any()) or self.bonds is not None or model.clumps is not None
        self.clumps = model.clumps
        self.clump_of = model.clumps.clump if model.clumps is not None else np.full(n, -1, np.int32)
        if self.clumps is not None:
            c = self.clumps.count
            # Rigid-body state per clump: centre X, velocity V, angular momentum L, orientation q, and the
            # force and torque sums of the last pass (Verlet's first half uses them).
            self.body = {name: np.zeros((c, 4 if name == "orientation" else 3))
                         for name in ("centre", "velocity", "momentum", "orientation", "force", "torque")}
        if self.bonds is not None:
            self.bond_start, self.bond_other, self.bond_index = bond_rows(self.bonds, n)
            self.bond_shear = np.zeros((self.bonds.count, 3), np.float64)  # ξ_b [m]
            self.bond_intact = np.ones(self.bonds.count, np.uint8)
        self.bonded = np.zeros(0, np.uint8)  # per list entry: held by an intact bond
        if not self.rotation:
            self.roll[:] = 0.0
            self.wall_roll[:] = 0.0
        self.keep_hist = self.spring or self.rolling
        # Per list entry: tangential spring ξ (columns 0–2) and rolling spring ξ_r (3–5) [m].
        self.hist = np.zeros((0, 6), np.float64)
        self.wall_hist = np.zeros((n, 6, 6), np.float64)  # the same per particle and wall side [m]
        self.torque = np.zeros((n, 3), np.float64)
        self.pair_torque = np.zeros((0, 6), np.float64)
        self.acc = np.zeros((n, 3), np.float64)    # Verlet: acceleration of the last step [m/s²]
        self.alpha = np.zeros((n, 3), np.float64)  # Verlet: angular acceleration of the last step [rad/s²]
        self.primed = False  # Verlet: acc/alpha hold the accelerations of the current state
        self.wall_touch = np.zeros(n, np.uint8)  # bit s set: particle touches wall side s
        self.pos_ref = np.zeros((n, 3), np.float32)
        self.state: State | None = None
        self._restored = None
        self.needs_build = True
        self.steps_since_build = 0
        self.r_min = float(model.radius.min())
        self.r_max = float(model.radius.max())

    def describe_device(self) -> str:
        import numba

        return f"cpu (numba {numba.__version__}, {numba.get_num_threads()} threads of {os.cpu_count()} cores)"

    def set_state(self, state: State) -> None:
        self.state = state.copy()
        self.state.positions = world_to_local(state.positions, self.origin)
        self.needs_build = True
        self.neighbors = NeighborListCpu(self.model.particle_count)
        self.hist = np.zeros((0, 6), np.float64)
        self.wall_hist[:] = 0.0
        self.wall_touch[:] = 0
        self.acc[:] = 0.0
        self.alpha[:] = 0.0
        self.primed = False
        if self.bonds is not None:
            self.bond_shear[:] = 0.0
            self.bond_intact[:] = 1
        if self.clumps is not None:
            self._clumps_from_state()

    def _clumps_from_state(self) -> None:
        """Rigid-body state of each clump from its members (centre of mass, momentum, angular momentum
        about the centre; orientation identity: the body frame is the frame of the initial positions)."""
        s, m, c = self.state, self.model, self.clumps
        mass = m.mass.astype(np.float64)
        x = s.positions.astype(np.float64)
        v = s.velocities.astype(np.float64)
        for index in range(c.count):
            members = c.members[c.start[index]:c.start[index + 1]]
            w = mass[members, None]
            centre = (w * x[members]).sum(axis=0) / c.mass[index]
            self.body["centre"][index] = centre
            self.body["velocity"][index] = (w * v[members]).sum(axis=0) / c.mass[index]
            spin = 0.4 * w * m.radius[members, None].astype(np.float64) ** 2 * s.angular_velocities[members]
            self.body["momentum"][index] = (np.cross(x[members] - centre, w * v[members]) + spin).sum(axis=0)
        self.body["orientation"][:] = (1.0, 0.0, 0.0, 0.0)
        self.body["force"][:] = 0.0
        self.body["torque"][:] = 0.0

    def _clump_step(self, phase: int) -> float:
        m, s, c = self.model, self.state, self.clumps
        b = self.body
        return k.clump_step(phase, c.start, c.members, c.offset, c.mass, c.inertia_inv, b["centre"], b["velocity"],
                            b["momentum"], b["orientation"], b["force"], b["torque"], s.positions, s.velocities,
                            s.angular_velocities, s.orientations, self.acc, self.alpha, m.mass, m.radius,
                            m.physics.dt, self.pos_ref)
        if self.model.colliders is not None:
            self.model.colliders.reset_history()

    def get_contact_history(self) -> dict[str, np.ndarray]:
        """Tangential springs of the current contacts, for exact resume: pair i, j (int32), pair
        spring (P, 3) and wall springs (n, 6, 3) [m]."""
        i, j = self.neighbors.pairs()
        keep = np.any(self.hist != 0.0, axis=1) if self.hist.shape[0] else np.zeros(0, bool)
        history = {"pair_i": i[keep], "pair_j": j[keep], "pair_spring": self.hist[keep, :3],
                   "wall_spring": self.wall_hist[:, :, :3].copy()}
        if self.rolling:
            history["pair_rolling"] = self.hist[keep, 3:]
            history["wall_rolling"] = self.wall_hist[:, :, 3:].copy()
        if self.full and not self.euler and self.primed:
            history["acceleration"] = self.acc.copy()
            history["angular_acceleration"] = self.alpha.copy()
        if self.bonds is not None:
            history["bond_shear"] = self.bond_shear.copy()
            history["bond_intact"] = self.bond_intact.copy()
        if self.clumps is not None:
            history.update({f"clump_{name}": value.copy() for name, value in self.body.items()})
        if self.model.colliders is not None:
            history.update(self.model.colliders.get_history())
        return history

    def set_contact_history(self, history: dict[str, np.ndarray]) -> None:
        """Restore what ``get_contact_history`` returned (call after ``set_state``)."""
        n = self.model.particle_count
        start = np.zeros(n + 1, np.int64)
        np.cumsum(np.bincount(history["pair_i"], minlength=n), out=start[1:])
        order = np.argsort(history["pair_i"], kind="stable")
        pair = np.zeros((order.shape[0], 6), np.float64)
        pair[:, :3] = history["pair_spring"][order]
        self.wall_hist[:] = 0.0
        self.wall_hist[:, :, :3] = history["wall_spring"]
        if "pair_rolling" in history:
            pair[:, 3:] = history["pair_rolling"][order]
            self.wall_hist[:, :, 3:] = history["wall_rolling"]
        self._restored = (start, history["pair_j"][order].astype(np.int32), pair)
        if self.clumps is not None and "clump_centre" in history:
            for name in self.body:
                self.body[name][:] = history[f"clump_{name}"]
        if self.bonds is not None and "bond_intact" in history:
            self.bond_shear[:] = history["bond_shear"]
            self.bond_intact[:] = history["bond_intact"]
        if "acceleration" in history:
            self.acc[:] = history["acceleration"]
            self.alpha[:] = history["angular_acceleration"]
            self.primed = True
        live = np.any(self.wall_hist != 0.0, axis=2)  # (n, 6)
        self.wall_touch[:] = (live * (1 << np.arange(6))).sum(axis=1).astype(np.uint8)
        if self.model.colliders is not None:
            self.model.colliders.set_history(history)

    def get_state(self) -> State:
        state = self.state.copy()
        state.positions = local_to_world(self.state.positions, self.origin)
        if self.bonds is not None:
            state.bonds = bonds_per_particle(self.bonds, self.bond_intact, self.model.particle_count)
        return state

    def begin_frame(self) -> None:
        """Force a rebuild at a frame boundary and round local positions to what the cache frame holds
        (see the module docstring and engine.local_origin: exact resume)."""
        self.needs_build = True
        if self.state is not None and self.origin.any():
            self.state.positions[:] = round_to_world(self.state.positions, self.origin)

    def _acceleration(self, step: int) -> np.ndarray:
        physics = self.model.physics
        t = step * physics.dt
        return physics.gravity.at(t) + uniform_acceleration(physics.fields, t)

    def _choose_skin(self, accel: np.ndarray) -> float:
        """Skin [m] covering the motion over one rebuild interval, capped by the candidate budget."""
        physics = self.model.physics
        s = self.state
        horizon = physics.rebuild_interval * physics.dt
        v_max = math.sqrt(k.max_speed_squared(s.velocities, s.active))
        motion = 2.0 * SKIN_SAFETY * (v_max * horizon + 0.5 * float(np.linalg.norm(accel)) * horizon ** 2)
        lo, hi, count = k.active_bounds(s.positions, s.active)
        volume = float(np.prod(np.maximum(hi - lo, 2.0 * self.r_max)))
        density = max(count, 1) / volume
        # Half list: candidates ≈ ½ · density · 4/3 π (2 r_max + skin)³.
        budget = (6.0 * CANDIDATES_PER_PARTICLE / (4.0 * math.pi * density)) ** (1.0 / 3.0) - 2.0 * self.r_max
        # At least half a radius where the budget allows: slow starts then rebuild on schedule, not
        # every few steps because the motion estimate was tiny.
        floor = max(min(budget, 0.5 * self.r_max), 0.05 * self.r_min)
        return max(min(motion, budget), floor)

    def _build(self, accel: np.ndarray) -> None:
        s = self.state
        old_start, old_j = self.neighbors.nbr_start.copy(), self.neighbors.nbr_j
        old_hist = self.hist
        if getattr(self, "_restored", None) is not None:
            (old_start, old_j, old_hist), self._restored = self._restored, None
        self.neighbors.build(s.positions, self.model.radius, s.active, self._choose_skin(accel))
        count = self.neighbors.pair_count
        if self.pair_force.shape[0] < count:
            self.pair_force = np.zeros((int(count * 1.25) + 16, 3), np.float64)
            if self.full:
                self.pair_torque = np.zeros((self.pair_force.shape[0], 6), np.float64)
        self.hist = np.zeros((count, 6), np.float64)
        self.bonded = np.zeros(count, np.uint8)
        if self.bonds is not None:
            k.mark_bonded(self.neighbors.nbr_start, self.neighbors.nbr_j, self.bond_start, self.bond_other,
                          self.bond_index, self.bond_intact, self.bonded)
        if self.keep_hist and old_j.shape[0]:
            k.remap_history6(old_start, old_j, old_hist, self.neighbors.nbr_start, self.neighbors.nbr_j, self.hist)
        self.pos_ref[:] = s.positions
        self.needs_build = False
        self.steps_since_build = 0

    def step(self, count: int) -> StepTimings:
        import numba

        threads = numba.get_num_threads()
        if self.model.particle_count < SINGLE_THREAD_BELOW:
            numba.set_num_threads(1)  # per calling thread; results do not depend on the thread count
        try:
            return self._step(count)
        finally:
            numba.set_num_threads(threads)

    def _step(self, count: int) -> StepTimings:
        if self.full:
            return self._step_full(count)
        physics = self.model.physics
        m = self.model
        s = self.state
        timings = StepTimings()
        stiffness = float(physics.stiffness)
        for _ in range(count):
            accel = self._acceleration(s.step)
            t0 = time.perf_counter()
            if self.needs_build or self.steps_since_build >= physics.rebuild_interval:
                self._build(accel)
                timings.rebuilds += 1
            t1 = time.perf_counter()
            nb = self.neighbors
            k.pair_forces(s.positions, s.velocities, m.radius, m.mass, m.material_index, s.active,
                          nb.nbr_start, nb.nbr_j, self.beta, self.mu, stiffness, self.spring, physics.dt,
                          self.hist, self.pair_force, self.force)
            k.gather_reactions(self.force, self.pair_force, nb.rev_start, nb.rev_pair)
            colliders = m.colliders
            if colliders is not None:
                c0 = time.perf_counter()
                previous = s.positions.copy()
                colliders.add_forces(s.step * physics.dt, s.positions, s.velocities, m.radius, m.mass,
                                     m.material_index, s.active, self.force, physics)
                timings.colliders_s += time.perf_counter() - c0
            t2 = time.perf_counter()
            disp2, speed2, bad = k.integrate(
                s.positions, s.velocities, self.force, m.radius, m.mass, m.material_index, s.active, accel,
                physics.dt, self.lo, self.hi, self.wall_mask, self.wall_beta, self.wall_mu, stiffness,
                self.spring, self.wall_hist, self.wall_touch, self.field_table, self.field_grid, self.pos_ref)
            if colliders is not None:
                # Swept test from old to new centre: catches grains that would tunnel through a wall.
                c0 = time.perf_counter()
                colliders.after_integrate((s.step + 1) * physics.dt, previous, s.positions, s.velocities,
                                          m.radius, s.active, physics)
                timings.colliders_s += time.perf_counter() - c0
            s.step += 1
            self.steps_since_build += 1
            if bad:
                raise SimulationDiverged(
                    f"The simulation produced NaN at step {s.step} (t = {s.step * physics.dt:.6g} s); "
                    "lower dt or the stiffness.", s.step)
            if speed2 > physics.speed_limit ** 2:
                raise SimulationDiverged(
                    f"Runaway energy at step {s.step} (t = {s.step * physics.dt:.6g} s): a particle moves at "
                    f"{math.sqrt(speed2):.3g} m/s, above the limit of {physics.speed_limit:.3g} m/s; lower dt "
                    "or the stiffness.", s.step)
            if 4.0 * disp2 > nb.skin * nb.skin:
                self.needs_build = True
            t3 = time.perf_counter()
            timings.build_s += t1 - t0
            timings.detect_s += t2 - t1
            timings.update_s += t3 - t2
            timings.steps += 1
        return timings

    def _forces_full(self, time_s: float, dt_history: float, timings: StepTimings) -> None:
        """Pair, collider and (through ``kick``) wall forces and torques of the current state."""
        m = self.model
        s = self.state
        physics = m.physics
        nb = self.neighbors
        k.pair_forces_full(s.positions, s.velocities, s.angular_velocities, m.radius, m.mass, m.material_index,
                           s.active, nb.nbr_start, nb.nbr_j, self.beta, self.mu, self.roll, self.cohesion,
                           float(physics.stiffness), self.spring, dt_history, self.hist, self.pair_force,
                           self.pair_torque, self.force, self.torque, self.bonded, self.clump_of)
        k.gather_reactions(self.force, self.pair_force, nb.rev_start, nb.rev_pair)
        k.gather_torques(self.torque, self.pair_torque, nb.rev_start, nb.rev_pair)
        if self.bonds is not None:
            b = self.bonds
            if k.bond_forces(s.positions, s.velocities, s.angular_velocities, m.radius, m.mass, m.material_index,
                             s.active, self.beta, b.pairs, b.rest, b.area, b.stiffness, b.strength, self.bond_shear,
                             self.bond_intact, dt_history, self.force, self.torque):
                self.needs_build = True  # a broken bond's pair collides from the next step on
        if m.colliders is not None:
            c0 = time.perf_counter()
            m.colliders.add_forces(time_s, s.positions, s.velocities, m.radius, m.mass, m.material_index, s.active,
                                   self.force, physics, *((s.angular_velocities, self.torque) if self.rotation else ()))
            timings.colliders_s += time.perf_counter() - c0

    def _kick(self, accel, dt_history: float, kick_dt: float):
        m = self.model
        s = self.state
        physics = m.physics
        return k.kick(s.positions, s.velocities, s.angular_velocities, s.orientations, self.force, self.torque,
                      m.radius, m.mass, m.material_index, s.active, accel, dt_history, kick_dt, self.euler,
                      self.rotation, self.lo, self.hi, self.wall_mask, self.wall_beta, self.wall_mu, self.wall_roll,
                      self.wall_cohesion, float(physics.stiffness), self.spring, self.wall_hist, self.wall_touch,
                      self.field_table, self.field_grid, self.acc, self.alpha, self.pos_ref)

    def _step_full(self, count: int) -> StepTimings:
        """Steps of the full law: rotation, rolling, cohesion, Euler or velocity Verlet.

        Verlet (LAMMPS fix nve/sphere order): drift (v, ω half kick with the stored accelerations, then
        x, q), forces at the new positions and time, kick (second half). At the very start the
        accelerations of the initial state are computed once (springs not advanced: dt 0).
        """
        physics = self.model.physics
        m = self.model
        s = self.state
        timings = StepTimings()
        dt = physics.dt
        for _ in range(count):
            t0 = time.perf_counter()
            if not self.euler:
                if not self.primed:
                    accel = self._acceleration(s.step)
                    if self.needs_build or self.steps_since_build >= physics.rebuild_interval:
                        self._build(accel)
                        timings.rebuilds += 1
                    self._forces_full(s.step * dt, 0.0, timings)
                    self._kick(accel, 0.0, 0.0)
                    if self.clumps is not None:
                        self._clump_step(0)
                    self.primed = True
                previous = s.positions.copy() if m.colliders is not None else None
                disp2, bad = k.drift(s.positions, s.velocities, s.angular_velocities, s.orientations, self.acc,
                                     self.alpha, s.active, dt, self.rotation, self.lo, self.hi, self.wall_mask,
                                     self.pos_ref)
                if self.clumps is not None:
                    disp2 = max(disp2, self._clump_step(2))
                if m.colliders is not None:
                    c0 = time.perf_counter()
                    m.colliders.after_integrate((s.step + 1) * dt, previous, s.positions, s.velocities, m.radius,
                                                s.active, physics)
                    timings.colliders_s += time.perf_counter() - c0
                if bad:
                    raise SimulationDiverged(
                        f"The simulation produced NaN at step {s.step + 1} (t = {(s.step + 1) * dt:.6g} s); "
                        "lower dt or the stiffness.", s.step + 1)
                if 4.0 * disp2 > self.neighbors.skin * self.neighbors.skin:
                    self.needs_build = True
                force_step = s.step + 1  # forces at the drifted positions
            else:
                force_step = s.step
            time_s = force_step * dt
            accel = self._acceleration(force_step)
            if self.needs_build or self.steps_since_build >= physics.rebuild_interval:
                self._build(accel)
                timings.rebuilds += 1
            t1 = time.perf_counter()
            self._forces_full(time_s, dt, timings)
            previous = s.positions.copy() if (m.colliders is not None and self.euler) else None
            t2 = time.perf_counter()
            disp2, speed2, bad = self._kick(accel, dt, 0.5 * dt)
            if self.clumps is not None:
                disp2 = max(disp2, self._clump_step(1 if self.euler else 3))
            if m.colliders is not None and self.euler:
                c0 = time.perf_counter()
                m.colliders.after_integrate((s.step + 1) * dt, previous, s.positions, s.velocities, m.radius,
                                            s.active, physics)
                timings.colliders_s += time.perf_counter() - c0
            s.step += 1
            self.steps_since_build += 1
            if bad:
                raise SimulationDiverged(
                    f"The simulation produced NaN at step {s.step} (t = {s.step * dt:.6g} s); "
                    "lower dt or the stiffness.", s.step)
            if speed2 > physics.speed_limit ** 2:
                raise SimulationDiverged(
                    f"Runaway energy at step {s.step} (t = {s.step * dt:.6g} s): a particle moves at "
                    f"{math.sqrt(speed2):.3g} m/s, above the limit of {physics.speed_limit:.3g} m/s; lower dt "
                    "or the stiffness.", s.step)
            if self.euler and 4.0 * disp2 > self.neighbors.skin * self.neighbors.skin:
                self.needs_build = True
            t3 = time.perf_counter()
            timings.build_s += t1 - t0
            timings.detect_s += t2 - t1
            timings.update_s += t3 - t2
            timings.steps += 1
        return timings

    def contact_pairs(self) -> np.ndarray:
        """Colliding pairs from a fresh list without skin (the reference answer)."""
        nb = NeighborListCpu(self.model.particle_count)
        nb.build(self.state.positions, self.model.radius, self.state.active, 0.0)
        return self._pairs_in(nb)

    def live_contact_pairs(self) -> np.ndarray:
        """Colliding pairs as the stepping loop sees them: through the current (possibly stale) Verlet
        list. Equal to ``contact_pairs`` whenever the skin policy is right."""
        if self.needs_build:
            self._build(self._acceleration(self.state.step))
        return self._pairs_in(self.neighbors)

    def _pairs_in(self, nb: NeighborListCpu) -> np.ndarray:
        s = self.state
        flags = np.zeros(nb.pair_count, np.uint8)
        k.contact_flags(s.positions, self.model.radius, s.active, nb.nbr_start, nb.nbr_j, flags)
        i, j = nb.pairs()
        hit = flags.astype(bool)
        pairs = np.stack([i[hit], j[hit]], axis=1).astype(np.int32)
        return np.sort(pairs, axis=1)
