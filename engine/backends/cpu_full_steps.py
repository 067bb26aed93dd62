"""The full law's step loop of the CPU backend (rotation, rolling resistance, cohesion, glue bonds,
rigid clumps, colliders; Euler or velocity Verlet), as a mixin of ``engine.backends.cpu.BackendCpu``.

It reads the backend's slot arrays and switches (``pos``, ``vel``, ``omega``, ``quat``, ``force``,
``torque``, ``hist``, ``wall_hist``, ``neighbors``, ``reorder``, ``euler``, ``rotation``, ``spring`` ...; see
``BackendCpu.__init__``) and calls its ``_acceleration``, ``_build``, ``_blocks``, ``_clump_step`` and
``_check_diverged``. The paper's model never comes here: ``BackendCpu._step`` and ``_step_fused`` run it
with its own kernels, keeping its bits.
"""

from __future__ import annotations

import time

import numpy as np

from . import cpu_kernels as k
from .base import StepTimings
from ..errors import SimulationDiverged


class FullLawSteps:
    """``step`` of the full law (``BackendCpu.full``): forces, walls, kick and drift as named phases."""

    def _forces_full(self, time_s: float, dt_history: float, timings: StepTimings) -> None:
        """Pair, bond and collider forces and torques of the current state (walls: in ``kick``)."""
        m = self.model
        physics = m.physics
        nb = self.neighbors
        k.pair_forces_full(self.pos, self.vel, self.omega, self.radius, self.mass, self.material, self.active,
                           nb.nbr_start, nb.nbr_j, self.beta, self.mu, self.roll, self.cohesion,
                           float(physics.stiffness), self.law_table, self.spring, dt_history, self.hist, self.pair_force,
                           self.pair_torque, self.force, self.torque, self.bonded, self.clump_of)
        k.gather_reactions(self.force, self.pair_force, nb.rev_start, nb.rev_pair)
        k.gather_torques(self.torque, self.pair_torque, nb.rev_start, nb.rev_pair)
        if self.bonds is not None:  # slots are particle ids (no reorder with bonds)
            b = self.bonds
            if k.bond_forces(self.pos, self.vel, self.omega, self.radius, self.mass, self.material, self.active,
                             self.beta, b.pairs, b.rest, b.area, b.stiffness, b.strength, self.bond_shear,
                             self.bond_intact, dt_history, self.force, self.torque):
                self.needs_build = True  # a broken bond's pair collides from the next step on
        if m.colliders is not None:  # slots are particle ids (no reorder with colliders)
            c0 = time.perf_counter()
            m.colliders.add_forces(time_s, self.pos, self.vel, self.radius, self.mass, self.material, self.active,
                                   self.force, physics, *((self.omega, self.torque) if self.rotation else ()))
            timings.colliders_s += time.perf_counter() - c0

    def _fused_full(self, accel, dt_history: float, kick_dt: float):
        """Pair forces and kick of the full law in one pass (engine.backends.cpu_fused); returns as ``_kick``."""
        physics = self.model.physics
        nb = self.neighbors
        start, cross_from, reached_to = self._blocks()
        stiffness = float(physics.stiffness)
        self._wall_forces_full(self.near, dt_history)  # grains near a side: walls first, then pairs
        crossing_forces_full, fused_step_full = self.full_pass
        if start.shape[0] > 2:
            crossing_forces_full(self.pos, self.vel, self.omega, self.radius, self.mass, self.material, self.active,
                                 nb.nbr_start, nb.nbr_j, self.beta, self.mu, self.roll, self.cohesion, stiffness,
                                 self.law_table, self.spring, dt_history, self.hist, self.bonded, self.clump_of, self.pair_force,
                                 self.pair_torque, start, cross_from)
        return fused_step_full(
            self.pos, self.vel, self.omega, self.quat, self.force, self.torque, self.touched, self.radius, self.mass,
            self.material, self.active, nb.nbr_start, nb.nbr_j, nb.rev_start, nb.rev_pair, self.beta, self.mu,
            self.roll, self.cohesion, stiffness, self.law_table, self.spring, dt_history, kick_dt, self.hist, self.bonded,
            self.clump_of, self.pair_force, self.pair_torque, start, reached_to, accel, self.euler, self.rotation,
            self.lo, self.hi, self.wall_mask, self.field_table, self.field_grid, self.acc, self.alpha, self.pos_ref)

    def _kick(self, accel, dt_history: float, kick_dt: float):
        self._wall_forces_full(self.all_slots, dt_history)  # after every other force: pairs, bonds, colliders
        return k.kick(self.pos, self.vel, self.omega, self.quat, self.force, self.torque, self.radius, self.mass,
                      self.active, accel, dt_history, kick_dt, self.euler, self.rotation, self.lo, self.hi,
                      self.wall_mask, self.field_table, self.field_grid, self.acc, self.alpha, self.pos_ref)

    def _wall_forces_full(self, near: np.ndarray, dt_history: float) -> None:
        k.wall_forces_full(near, self.pos, self.vel, self.omega, self.radius, self.mass, self.material, self.active,
                           self.lo, self.hi, self.wall_mask, self.wall_beta, self.wall_mu, self.wall_roll,
                           self.wall_cohesion, float(self.model.physics.stiffness), self.wall_law_table, self.spring, self.wall_hist,
                           self.wall_touch, dt_history, self.force, self.torque, self.touched)

    def _prime_verlet(self, timings: StepTimings) -> None:
        """Velocity Verlet's start: the accelerations of the current state, computed once (springs not
        advanced: dt 0) for the first step's drift; the neighbour list is built first if due."""
        accel = self._acceleration(self.step_index)
        if self.needs_build:
            self._build(accel)
            timings.rebuilds += 1
        if self.reorder:
            self._fused_full(accel, 0.0, 0.0)
        else:
            self._forces_full(self.step_index * self.model.physics.dt, 0.0, timings)
            self._kick(accel, 0.0, 0.0)
        if self.clumps is not None:
            self._clump_step(0)
        self.primed = True

    def _step_full(self, count: int) -> StepTimings:
        """Steps of the full law: rotation, rolling, cohesion, Euler or velocity Verlet.

        Verlet (LAMMPS fix nve/sphere order): drift (v, ω half kick with the stored accelerations, then
        x, q), forces at the new positions and time, kick (second half). At the very start the
        accelerations of the initial state are computed once (``_prime_verlet``; ``prepare`` does it
        ahead of the steps).
        """
        m = self.model
        physics = m.physics
        timings = StepTimings()
        dt = physics.dt
        for _ in range(count):
            t0 = time.perf_counter()
            if not self.euler:
                if not self.primed:
                    self._prime_verlet(timings)
                    primed_at = time.perf_counter()
                    timings.setup_s += primed_at - t0
                    t0 = primed_at
                previous = self.pos.copy() if m.colliders is not None else None
                disp2, bad = k.drift(self.pos, self.vel, self.omega, self.quat, self.acc, self.alpha, self.active,
                                     dt, self.rotation, self.lo, self.hi, self.wall_mask, self.pos_ref)
                if self.clumps is not None:
                    disp2 = max(disp2, self._clump_step(2))
                if m.colliders is not None:
                    c0 = time.perf_counter()
                    m.colliders.after_integrate((self.step_index + 1) * dt, previous, self.pos, self.vel,
                                                self.radius, self.active, physics)
                    timings.colliders_s += time.perf_counter() - c0
                if bad:
                    raise SimulationDiverged(
                        f"The simulation produced NaN at step {self.step_index + 1} "
                        f"(t = {(self.step_index + 1) * dt:.6g} s); lower dt or the stiffness.", self.step_index + 1)
                if 4.0 * disp2 > self.neighbors.skin * self.neighbors.skin:
                    self.needs_build = True
                force_step = self.step_index + 1  # forces at the drifted positions
            else:
                force_step = self.step_index
            accel = self._acceleration(force_step)
            tb = time.perf_counter()  # [t0, tb): Verlet's drift
            if self.needs_build:
                self._build(accel)
                timings.rebuilds += 1
            t1 = time.perf_counter()
            if self.reorder:  # no bonds, clumps or colliders: forces and kick fused
                disp2, speed2, bad = self._fused_full(accel, dt, 0.5 * dt)
                t2 = t1
            else:
                self._forces_full(force_step * dt, dt, timings)
                previous = self.pos.copy() if (m.colliders is not None and self.euler) else None
                t2 = time.perf_counter()
                disp2, speed2, bad = self._kick(accel, dt, 0.5 * dt)
            if self.clumps is not None:
                disp2 = max(disp2, self._clump_step(1 if self.euler else 3))
            if m.colliders is not None and self.euler:
                c0 = time.perf_counter()
                m.colliders.after_integrate((self.step_index + 1) * dt, previous, self.pos, self.vel, self.radius,
                                            self.active, physics)
                timings.colliders_s += time.perf_counter() - c0
            self.step_index += 1
            self._check_diverged(bad, speed2)
            if self.euler and 4.0 * disp2 > self.neighbors.skin * self.neighbors.skin:
                self.needs_build = True
            t3 = time.perf_counter()
            timings.build_s += t1 - tb
            timings.update_s += tb - t0
            if self.reorder:
                timings.fused_s += t3 - t1
            else:
                timings.detect_s += t2 - t1
                timings.update_s += t3 - t2
            timings.steps += 1
        return timings
