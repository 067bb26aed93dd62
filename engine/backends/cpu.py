"""CPU backend: numba kernels over a Verlet list with an adaptive skin.

The list of pairs closer than r_i + r_j + skin (engine.backends.cpu_neighbors) is reused until some
particle has moved more than half the skin since the build, then rebuilt: the contacts found are always
exactly the colliding pairs, and a pile at rest keeps its list for many steps. The skin is chosen at
each build to cover the motion expected over ``rebuild_interval`` steps, capped so the list stays small
in dense packings. The list is also rebuilt at every frame boundary (``begin_frame``), which makes a
bake resumed from a cached frame bit-identical to an uninterrupted one.

Spatial reorder: at each build the particles are renumbered in cell order ("slots"), so neighbours
sit close in memory. Every per-particle array the step loop touches is held in slot order and listed
once in ``BackendCpu.PER_PARTICLE``; ``_reorder`` permutes them all and the pair history (tangential
and rolling springs) follows through ``remap_history``. Everything leaving the backend (``get_state``,
contacts, contact history) is translated back to particle ids, so the renumbering is invisible
outside. Scenes with colliders keep id order (the colliders hold per-particle history of their own),
and so do scenes with glue bonds or rigid clumps (their lists name particles by id; see
``BackendCpu.__init__``).

Step paths: the paper's model (``Physics.rotation`` false, integrator 'euler', no rolling resistance
or cohesion) runs its own kernels: fused into one pass over the renumbered slots
(engine.backends.cpu_fused) wherever the slots are renumbered, otherwise (colliders) as three passes
(``pair_forces``, ``gather_reactions``, ``integrate``). Everything else runs the full law
(``pair_forces_full``, ``kick``, and ``drift`` for velocity Verlet; engine.backends.cpu_full_steps), see
docs/physics.md.
"""

from __future__ import annotations

import math
import os
import time

import numpy as np

from . import cpu_kernels as k
from .cpu_fused import block_reach, crossing_forces, full_law_pass, fused_step, split_blocks
from .cpu_full_steps import FullLawSteps
from .cpu_neighbors import NeighborListCpu
from .cpu_load import PROCESS_LOAD
from .cpu_threads import ThreadCountChooser, step_choosing_threads
from .prepared_physics import prepare_physics
from .base import Backend, StepTimings
from ..bonds import bond_rows, bonds_per_particle
from ..contact_history import ContactHistory
from ..errors import SimulationDiverged
from ..fields import uniform_acceleration
from ..local_origin import local_to_world, round_to_world, world_to_local
from ..model import Model
from ..state import State

#: Mean candidate pairs per particle the skin may cost at most (half list).
CANDIDATES_PER_PARTICLE = 6.0
#: Safety factor on the motion the skin must cover.
SKIN_SAFETY = 1.2
#: Below this many particles one thread is faster: a step is too short to amortise waking the
#: others (and on a loaded machine parallel loops wait for their slowest thread).
SINGLE_THREAD_BELOW = 20_000


class BackendCpu(FullLawSteps, Backend):
    """Multi-threaded CPU backend (numba). See the module docstring for the neighbour policy and the
    slot order."""

    name = "cpu"

    #: Every per-particle array the step loop keeps across steps, in slot order: ``_reorder`` permutes
    #: exactly these (first axis). A new one (angular velocity, orientation, ...) is an attribute
    #: listed here, set in id order by ``_reset_slots`` (static, from the model) or ``set_state``, and
    #: translated back with ``_to_ids`` wherever it leaves the backend. Arrays rewritten from scratch
    #: at every step or build (force, torque, pos_ref) need not be listed. Per-pair history parallel
    #: to ``hist`` (P, 6) follows through ``remap_history``; data holding particle indices (bond or
    #: clump members) must store slots and be renumbered in ``_reorder`` through ``new_to_old``'s
    #: inverse, or set ``self.reorder = False`` as colliders, glue bonds and rigid clumps do.
    PER_PARTICLE = ("pos", "vel", "omega", "quat", "active", "radius", "mass", "material", "clump_of",
                    "wall_hist", "wall_touch", "acc", "alpha", "perm")

    def __init__(self, model: Model):
        super().__init__(model)
        physics = model.physics
        n = model.particle_count
        prepared = prepare_physics(model.physics)
        self.beta, self.mu = prepared.beta, prepared.mu
        self.wall_beta, self.wall_mu = prepared.wall_beta, prepared.wall_mu
        # Everything position-dependent in local coordinates (engine.local_origin).
        self.origin, self.lo, self.hi = prepared.origin, prepared.lo, prepared.hi
        self.field_table, self.field_grid = prepared.field_table.astype(np.float64), prepared.field_grid
        if model.colliders is not None:
            model.colliders.set_origin(self.origin)
        self.wall_mask = prepared.wall_mask
        self.neighbors = NeighborListCpu(n)
        self.force = np.zeros((n, 3), np.float64)
        self.touched = np.zeros(n, np.uint8)  # the fused step's: force[i] written this step
        self.pair_force = np.zeros((0, 3), np.float64)
        frictional = any(m.friction > 0 for m in physics.materials) or physics.domain.wall_friction > 0
        # Without friction both models give F_t = 0; skip the springs' bookkeeping then.
        self.spring = physics.friction_model == "spring" and frictional
        self.rotation = bool(physics.rotation)
        self.euler = physics.integrator == "euler"
        self.roll, self.wall_roll = prepared.roll, prepared.wall_roll  # zero without rotation
        self.cohesion, self.wall_cohesion = prepared.cohesion, prepared.wall_cohesion
        self.rolling = prepared.rolling
        self.law_table, self.wall_law_table = prepared.law_table, prepared.wall_law_table  # Hertz, peers' caps
        # The paper's model runs the original kernels (its results keep their bits).
        self.bonds = model.bonds if model.bonds is not None and model.bonds.count else None
        self.full = self.rotation or not self.euler or self.rolling or bool(self.cohesion.any()) \
            or bool(self.wall_cohesion.any()) or self.bonds is not None or model.clumps is not None \
            or prepared.tabled
        # The full law's fused pass, compiled without the switches this scene does not use (cpu_fused).
        self.full_pass = full_law_pass(lean=not (self.cohesion.any() or prepared.tabled)) if self.full else None
        self.clumps = model.clumps
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
        # Springs (tangential or rolling) need per-contact history; without them hist and wall_hist
        # have no rows and the kernels never touch them.
        self.keep_hist = self.spring or self.rolling
        # Not renumbered: scenes with colliders (per-particle history of their own, in id order), and
        # scenes with glue bonds or rigid clumps: their lists (model.bonds.pairs, bond_rows,
        # clumps.members, bonds_per_particle) name particles by id, and renumbering them at every build
        # is left undone; the slots then stay the particle ids and those lists are used as they are.
        self.reorder = model.colliders is None and self.bonds is None and self.clumps is None
        # Per list entry: tangential spring ξ (columns 0–2) and rolling spring ξ_r (3–5) [m].
        self.hist = np.zeros((0, 6), np.float64)
        self.torque = np.zeros((n, 3), np.float64)
        self.pair_torque = np.zeros((0, 6), np.float64)
        self.primed = False  # Verlet: acc/alpha hold the accelerations of the current state
        self.pos_ref = np.zeros((n, 3), np.float32)
        # Grains that cannot reach a side before the next build, and the slots wall_forces looks at:
        # set at each build (cpu_kernels.mark_interior); until then every grain is tested.
        self.interior = np.zeros(n, np.uint8)
        self.all_slots = np.arange(n, dtype=np.int64)
        self.near = self.all_slots
        self.drift_bound = 0.0  # [m] bound on any grain's displacement since the build (_step_fused)
        # Largest local coordinate of the box [m]: what float32 rounding of a centre scales with.
        self.box_extent = float(np.max(np.abs(np.concatenate([self.lo, self.hi]))))
        # float32 rounding a step may add to a displacement [m]: a few ulps of the largest coordinate.
        self.rounding_per_step = 4.0 * 2.0 ** -23 * max(self.box_extent, float(model.radius.max()))
        self.step_index = 0
        self.builds = 0  # list builds so far (keys the fused step's blocks)
        #: Blocks of the fused step: None = one per numba thread; a number to test other cuts.
        self.fused_blocks: int | None = None
        #: Step on whichever of all threads and one is faster right now (engine.backends.cpu_threads);
        #: False steps on numba's thread count as set (tests of a given count, fixed-count benchmarks).
        self.adaptive_threads = True
        self.threads: ThreadCountChooser | None = None
        self._blocks_key = None  # the build the block plans were made for
        self._block_plans: dict = {}
        self._reset_slots()
        self.pos = self.vel = self.active = self.omega = self.quat = None
        self._restored = None
        self.needs_build = True
        self.r_min = float(model.radius.min())
        self.r_max = float(model.radius.max())

    def _reset_slots(self) -> None:
        """Slot s holds particle s again: model arrays copied, histories cleared."""
        m = self.model
        n = m.particle_count
        self.perm = np.arange(n, dtype=np.int64)  # slot → particle id
        self.radius = m.radius.copy()
        self.mass = m.mass.copy()
        self.material = m.material_index.copy()
        self.clump_of = m.clumps.clump.copy() if m.clumps is not None else np.full(n, -1, np.int32)
        # ξ and ξ_r per particle and wall side [m]; no rows without springs (the kernels never touch it
        # then), which saves 288 bytes per particle.
        self.wall_hist = np.zeros((n, 6 if self.keep_hist else 0, 6), np.float64)
        self.wall_touch = np.zeros(n, np.uint8)  # bit s set: particle touches wall side s
        self.acc = np.zeros((n, 3), np.float64)    # Verlet: acceleration of the last step [m/s²]
        self.alpha = np.zeros((n, 3), np.float64)  # Verlet: angular acceleration of the last step [rad/s²]

    def _reorder(self, order: np.ndarray) -> None:
        """Renumber the slots: new slot s holds what old slot ``order[s]`` held, in every array of
        ``PER_PARTICLE`` (the one place that knows them all)."""
        n = order.shape[0]
        for name in self.PER_PARTICLE:
            source = np.ascontiguousarray(getattr(self, name))
            out = np.empty_like(source)
            if source.size:
                k.take_rows(source.reshape(n, -1), order, out.reshape(n, -1))
            setattr(self, name, out)

    def _to_ids(self, per_slot: np.ndarray) -> np.ndarray:
        """A per-slot array (first axis) in particle-id order."""
        out = np.empty_like(per_slot)
        out[self.perm] = per_slot
        return out

    def describe_device(self) -> str:
        import numba

        return f"cpu (numba {numba.__version__}, {numba.get_num_threads()} threads of {os.cpu_count()} cores)"

    @property
    def state(self) -> State:
        """The current state in particle-id order, local coordinates (a copy)."""
        return State(self._to_ids(self.pos), self._to_ids(self.vel), self._to_ids(self.active), self.step_index,
                     self._to_ids(self.omega), self._to_ids(self.quat))

    def set_state(self, state: State) -> None:
        self._reset_slots()
        self.pos = world_to_local(state.positions, self.origin).astype(np.float32, copy=True)
        self.vel = state.velocities.astype(np.float32, copy=True)
        self.active = state.active.astype(np.uint8, copy=True)
        self.omega = state.angular_velocities.astype(np.float32, copy=True)
        self.quat = state.orientations.astype(np.float32, copy=True)
        self.step_index = state.step
        self.needs_build = True
        self.neighbors = NeighborListCpu(self.model.particle_count)
        self.hist = np.zeros((0, 6), np.float64)
        self.primed = False
        if self.bonds is not None:
            self.bond_shear[:] = 0.0
            self.bond_intact[:] = 1
        if self.clumps is not None:
            self._clumps_from_state()
        if self.model.colliders is not None:
            self.model.colliders.reset_history()

    def _clumps_from_state(self) -> None:
        """Rigid-body state of each clump from its members (centre of mass, momentum, angular momentum
        about the centre; orientation identity: the body frame is the frame of the initial positions).
        Slots are particle ids here (no reorder with clumps)."""
        c = self.clumps
        mass = self.mass.astype(np.float64)
        x = self.pos.astype(np.float64)
        v = self.vel.astype(np.float64)
        for index in range(c.count):
            members = c.members[c.start[index]:c.start[index + 1]]
            w = mass[members, None]
            centre = (w * x[members]).sum(axis=0) / c.mass[index]
            self.body["centre"][index] = centre
            self.body["velocity"][index] = (w * v[members]).sum(axis=0) / c.mass[index]
            spin = 0.4 * w * self.radius[members, None].astype(np.float64) ** 2 * self.omega[members]
            self.body["momentum"][index] = (np.cross(x[members] - centre, w * v[members]) + spin).sum(axis=0)
        self.body["orientation"][:] = (1.0, 0.0, 0.0, 0.0)
        self.body["force"][:] = 0.0
        self.body["torque"][:] = 0.0

    def _clump_step(self, phase: int) -> float:
        c, b = self.clumps, self.body
        return k.clump_step(phase, c.start, c.members, c.offset, c.mass, c.inertia_inv, b["centre"], b["velocity"],
                            b["momentum"], b["orientation"], b["force"], b["torque"], self.pos, self.vel,
                            self.omega, self.quat, self.acc, self.alpha, self.mass, self.radius,
                            self.model.physics.dt, self.pos_ref)

    def get_contact_history(self) -> ContactHistory:
        """Contact state for exact resume, in particle ids: pair i, j (int32, i the row's particle),
        pair spring (P, 3) and wall springs (n, 6, 3) [m]; with rolling resistance the rolling springs
        too, with Verlet the stored accelerations, and the bond and clump states."""
        i, j = self.neighbors.pairs()
        n = self.model.particle_count
        keep = np.any(self.hist != 0.0, axis=1) if self.hist.shape[0] else np.zeros(i.shape[0], bool)
        hist = self.hist[keep] if self.hist.shape[0] else np.zeros((0, 6), np.float64)
        wall = self._to_ids(self.wall_hist) if self.keep_hist else np.zeros((n, 6, 6), np.float64)
        history = {"pair_i": self.perm[i[keep]].astype(np.int32), "pair_j": self.perm[j[keep]].astype(np.int32),
                   "pair_spring": hist[:, :3].copy(), "wall_spring": wall[:, :, :3].copy()}
        if self.rolling:
            history["pair_rolling"] = hist[:, 3:].copy()
            history["wall_rolling"] = wall[:, :, 3:].copy()
        if self.full and not self.euler and self.primed:
            history["acceleration"] = self._to_ids(self.acc)
            history["angular_acceleration"] = self._to_ids(self.alpha)
        if self.bonds is not None:
            history["bond_shear"] = self.bond_shear.copy()
            history["bond_intact"] = self.bond_intact.copy()
        if self.clumps is not None:
            history.update({f"clump_{name}": value.copy() for name, value in self.body.items()})
        if self.model.colliders is not None:
            history.update(self.model.colliders.get_history())
        return ContactHistory.from_arrays(history)

    def set_contact_history(self, history: ContactHistory) -> None:
        """Restore what ``get_contact_history`` returned (call after ``set_state``: slots = ids then)."""
        n = self.model.particle_count
        start = np.zeros(n + 1, np.int64)
        np.cumsum(np.bincount(history["pair_i"], minlength=n), out=start[1:])
        order = np.argsort(history["pair_i"], kind="stable")
        pair = np.zeros((order.shape[0], 6), np.float64)
        pair[:, :3] = history["pair_spring"][order]
        if "pair_rolling" in history:
            pair[:, 3:] = history["pair_rolling"][order]
        self._restored = (start, history["pair_j"][order].astype(np.int32), pair)
        if self.keep_hist:
            self.wall_hist[:] = 0.0
            self.wall_hist[:, :, :3] = history["wall_spring"]
            if "wall_rolling" in history:
                self.wall_hist[:, :, 3:] = history["wall_rolling"]
            live = np.any(self.wall_hist != 0.0, axis=2)  # (n, 6)
            self.wall_touch[:] = (live * (1 << np.arange(6))).sum(axis=1).astype(np.uint8)
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
        if self.model.colliders is not None:
            self.model.colliders.set_history(history)

    def get_state(self) -> State:
        state = self.state
        state.positions = local_to_world(state.positions, self.origin)
        if self.bonds is not None:  # slots are particle ids (no reorder with bonds)
            state.bonds = bonds_per_particle(self.bonds, self.bond_intact, self.model.particle_count)
        return state

    def begin_frame(self) -> None:
        """Force a rebuild at a frame boundary and round local positions to what the cache frame holds
        (see the module docstring and engine.local_origin: exact resume)."""
        self.needs_build = True
        if self.pos is not None and self.origin.any():
            self.pos[:] = round_to_world(self.pos, self.origin)

    def _acceleration(self, step: int) -> np.ndarray:
        physics = self.model.physics
        t = step * physics.dt
        return physics.gravity.at(t) + uniform_acceleration(physics.fields, t)

    def _choose_skin(self, accel: np.ndarray) -> float:
        """Skin [m] covering the motion over ``rebuild_interval`` steps, capped by the candidate budget."""
        physics = self.model.physics
        horizon = physics.rebuild_interval * physics.dt
        v_max = math.sqrt(k.max_speed_squared(self.vel, self.active))
        motion = 2.0 * SKIN_SAFETY * (v_max * horizon + 0.5 * float(np.linalg.norm(accel)) * horizon ** 2)
        lo, hi, count = k.active_bounds(self.pos, self.active)
        volume = float(np.prod(np.maximum(hi - lo, 2.0 * self.r_max)))
        density = max(count, 1) / volume
        # Half list: candidates ≈ ½ · density · 4/3 π (2 r_max + skin)³.
        budget = (6.0 * CANDIDATES_PER_PARTICLE / (4.0 * math.pi * density)) ** (1.0 / 3.0) - 2.0 * self.r_max
        # At least half a radius where the budget allows: slow starts then rebuild rarely, not every
        # few steps because the motion estimate was tiny.
        floor = max(min(budget, 0.5 * self.r_max), 0.05 * self.r_min)
        return max(min(motion, budget), floor)

    def _build(self, accel: np.ndarray) -> None:
        nb = self.neighbors
        old_start, old_j = nb.nbr_start.copy(), nb.nbr_j
        old_hist = self.hist
        if self._restored is not None:
            (old_start, old_j, old_hist), self._restored = self._restored, None
        nb.bin(self.pos, self.radius, self.active, self._choose_skin(accel))
        if self.reorder and nb.active_count:
            new_to_old = nb.slot_order(self.perm)
            self._reorder(new_to_old)
            nb.permute(new_to_old)
        else:
            new_to_old = np.arange(self.model.particle_count, dtype=np.int64)
        nb.build(self.pos, self.radius, in_cell_order=self.reorder)
        count = nb.pair_count
        if self.pair_force.shape[0] < count:
            self.pair_force = np.zeros((int(count * 1.25) + 16, 3), np.float64)
            if self.full:
                self.pair_torque = np.zeros((self.pair_force.shape[0], 6), np.float64)
        self.hist = np.zeros((count if self.keep_hist else 0, 6), np.float64)  # no rows: no springs
        if self.bonds is not None:
            self.bonded = np.zeros(count, np.uint8)
            k.mark_bonded(nb.nbr_start, nb.nbr_j, self.bond_start, self.bond_other, self.bond_index,
                          self.bond_intact, self.bonded)
        elif self.full and self.bonded.shape[0] < count:
            self.bonded = np.zeros(int(count * 1.25) + 16, np.uint8)  # never set without bonds
        if self.keep_hist and old_j.shape[0]:
            k.remap_history(old_start, old_j, old_hist, nb.nbr_start, nb.nbr_j, self.hist, new_to_old)
        self.pos_ref[:] = self.pos
        if self.model.colliders is None:
            # Rounding allowance of float32 centres on top of the half skin the rebuild rule allows.
            k.mark_interior(self.pos, self.radius, self.active, self.lo, self.hi,
                            0.5 * nb.skin + 1e-6 * max(self.box_extent, 1.0), self.interior)
            self.near = np.flatnonzero(self.interior == 0)
        # (With colliders every grain stays tested against the walls: their swept test moves grains
        # after the displacement check that mark_interior's margin relies on.)
        self.force[:] = 0.0  # the fused steps' invariant (engine.backends.cpu_fused)
        self.torque[:] = 0.0
        self.touched[:] = 0
        self.drift_bound = 0.0  # [m] see _step_fused
        self.builds += 1
        self.needs_build = False

    def prepare(self) -> None:
        """Build the neighbour list now if the next step would, and with velocity Verlet compute the
        state's accelerations (see ``Backend.prepare``; LAMMPS's setup computes its first forces too)."""
        if self.full and not self.euler and not self.primed:
            self._prime_verlet(StepTimings())
        elif self.needs_build:
            self._build(self._acceleration(self.step_index))

    def step(self, count: int) -> StepTimings:
        """Advance ``count`` steps on the thread count ``threads`` chooses (see ``adaptive_threads``)."""
        import numba

        threads = numba.get_num_threads()
        try:
            if self.model.particle_count < SINGLE_THREAD_BELOW or threads == 1:
                numba.set_num_threads(1)  # per calling thread; results do not depend on the thread count
                return self._step(count)
            if not self.adaptive_threads:
                return self._step(count)
            if self.threads is None or self.threads.most != threads:
                self.threads = ThreadCountChooser(threads, load=PROCESS_LOAD)
            return self._step_choosing_threads(count)
        finally:
            numba.set_num_threads(threads)

    def _step_choosing_threads(self, count: int) -> StepTimings:
        """``count`` steps in stretches, each on the count ``self.threads`` plans and timed for it."""
        return step_choosing_threads(self.threads, self._step_on, count)

    def _step_on(self, threads: int, count: int) -> StepTimings:
        """``count`` steps on ``threads`` threads (the caller restores numba's count)."""
        import numba

        numba.set_num_threads(threads)
        return self._step(count)

    def _check_diverged(self, bad: int, speed2: float) -> None:
        """Stop the run after a step that produced NaN or runaway speed (largest speed² [m²/s²])."""
        physics = self.model.physics
        if bad:
            raise SimulationDiverged(
                f"The simulation produced NaN at step {self.step_index} "
                f"(t = {self.step_index * physics.dt:.6g} s); lower dt or the stiffness.", self.step_index)
        if speed2 > physics.speed_limit ** 2:
            raise SimulationDiverged(
                f"Runaway energy at step {self.step_index} (t = {self.step_index * physics.dt:.6g} s): a "
                f"particle moves at {math.sqrt(speed2):.3g} m/s, above the limit of "
                f"{physics.speed_limit:.3g} m/s; lower dt or the stiffness.", self.step_index)

    def _blocks(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The fused step's blocks for the current list: (block_start, cross_from, reached_to), kept per
        block count until the next build (the thread count may change between steps)."""
        import numba

        blocks = self.fused_blocks or numba.get_num_threads()
        if self._blocks_key != self.builds:
            self._block_plans = {}
            self._blocks_key = self.builds
        if blocks not in self._block_plans:
            nb = self.neighbors
            start = split_blocks(nb.nbr_start, blocks)
            if blocks == 1:  # nothing crosses: skip the pass over the list
                n = self.model.particle_count
                self._block_plans[blocks] = (start, np.array([n], np.int64), np.zeros(1, np.int64))
            else:
                self._block_plans[blocks] = (start, *block_reach(nb.nbr_start, nb.nbr_j, start))
        return self._block_plans[blocks]

    def _step(self, count: int) -> StepTimings:
        if self.full:
            return self._step_full(count)
        if self.reorder:
            return self._step_fused(count)
        physics = self.model.physics
        m = self.model
        timings = StepTimings()
        stiffness = float(physics.stiffness)
        for _ in range(count):
            accel = self._acceleration(self.step_index)
            t0 = time.perf_counter()
            if self.needs_build:
                self._build(accel)
                timings.rebuilds += 1
            t1 = time.perf_counter()
            nb = self.neighbors
            k.pair_forces(self.pos, self.vel, self.radius, self.mass, self.material, self.active,
                          nb.nbr_start, nb.nbr_j, self.beta, self.mu, stiffness, self.spring, physics.dt,
                          self.hist, self.pair_force, self.force)
            k.gather_reactions(self.force, self.pair_force, nb.rev_start, nb.rev_pair)
            colliders = m.colliders
            if colliders is not None:  # slots are particle ids here (no reorder with colliders)
                c0 = time.perf_counter()
                previous = self.pos.copy()
                colliders.add_forces(self.step_index * physics.dt, self.pos, self.vel, self.radius, self.mass,
                                     self.material, self.active, self.force, physics)
                timings.colliders_s += time.perf_counter() - c0
            t2 = time.perf_counter()
            k.wall_forces(self.near, self.pos, self.vel, self.radius, self.mass, self.material, self.active, self.lo,
                          self.hi, self.wall_mask, self.wall_beta, self.wall_mu, stiffness, self.spring, self.wall_hist,
                          self.wall_touch, physics.dt, self.force, self.touched)
            disp2, speed2, bad = k.integrate(
                self.pos, self.vel, self.force, self.mass, self.active, accel, physics.dt, self.lo, self.hi,
                self.wall_mask, self.interior, self.field_table, self.field_grid, self.pos_ref)
            if colliders is not None:
                # Swept test from old to new centre: catches grains that would tunnel through a wall.
                c0 = time.perf_counter()
                colliders.after_integrate((self.step_index + 1) * physics.dt, previous, self.pos, self.vel,
                                          self.radius, self.active, physics)
                timings.colliders_s += time.perf_counter() - c0
            self.step_index += 1
            self._check_diverged(bad, speed2)
            if 4.0 * disp2 > nb.skin * nb.skin:
                self.needs_build = True
            t3 = time.perf_counter()
            timings.add_step(t0, t1, t2, t3)
        return timings

    def _step_fused(self, count: int) -> StepTimings:
        """Steps of the paper model over renumbered slots: one fused pass each (engine.backends.cpu_fused).
        Detection and integration share the pass, so their time is reported together as ``fused_s``."""
        physics = self.model.physics
        timings = StepTimings()
        stiffness = float(physics.stiffness)
        for _ in range(count):
            accel = self._acceleration(self.step_index)
            t0 = time.perf_counter()
            if self.needs_build:
                self._build(accel)
                timings.rebuilds += 1
            start, cross_from, reached_to = self._blocks()
            t1 = time.perf_counter()
            nb = self.neighbors
            k.wall_forces(self.near, self.pos, self.vel, self.radius, self.mass, self.material, self.active, self.lo,
                          self.hi, self.wall_mask, self.wall_beta, self.wall_mu, stiffness, self.spring, self.wall_hist,
                          self.wall_touch, physics.dt, self.force, self.touched)  # walls first, then pairs
            if start.shape[0] > 2:
                crossing_forces(self.pos, self.vel, self.radius, self.mass, self.material, self.active,
                                nb.nbr_start, nb.nbr_j, self.beta, self.mu, stiffness, self.spring, physics.dt,
                                self.hist, self.pair_force, start, cross_from)
            measure = self.drift_bound >= 0.5 * nb.skin
            disp2, speed2, bad = fused_step(
                self.pos, self.vel, self.force, self.touched, self.radius, self.mass, self.material, self.active,
                nb.nbr_start, nb.nbr_j, nb.rev_start, nb.rev_pair, self.beta, self.mu, stiffness, self.spring,
                physics.dt, self.hist, self.pair_force, start, reached_to, accel, self.lo, self.hi, self.wall_mask,
                self.interior, self.field_table, self.field_grid, self.pos_ref, measure)
            self.step_index += 1
            self._check_diverged(bad, speed2)
            # No grain moved further since the build than the fastest grain's speed summed over the
            # steps (plus float32 rounding): below half the skin that bound spares the pass reading
            # pos_ref; from the step it reaches it on, the displacement is measured (this step by a
            # separate pass, then inside the fused one), so the rebuilds are the very same.
            self.drift_bound += math.sqrt(speed2) * physics.dt * (1.0 + 1e-6) + self.rounding_per_step
            if not measure and self.drift_bound >= 0.5 * nb.skin:
                disp2 = k.max_displacement_squared(self.pos, self.pos_ref)
            if 4.0 * disp2 > nb.skin * nb.skin:
                self.needs_build = True
            timings.build_s += t1 - t0
            timings.fused_s += time.perf_counter() - t1
            timings.steps += 1
        return timings

    def contact_pairs(self) -> np.ndarray:
        """Colliding pairs (particle ids) from a fresh list without skin (the reference answer)."""
        nb = NeighborListCpu(self.model.particle_count)
        nb.bin(self.pos, self.radius, self.active, 0.0)
        nb.build(self.pos, self.radius, in_cell_order=False)
        return self._pairs_in(nb)

    def live_contact_pairs(self) -> np.ndarray:
        """Colliding pairs (particle ids) as the stepping loop sees them: through the current (possibly
        stale) Verlet list. Equal to ``contact_pairs`` whenever the skin policy is right."""
        if self.needs_build:
            self._build(self._acceleration(self.step_index))
        return self._pairs_in(self.neighbors)

    def _pairs_in(self, nb: NeighborListCpu) -> np.ndarray:
        flags = np.zeros(nb.pair_count, np.uint8)
        k.contact_flags(self.pos, self.radius, self.active, nb.nbr_start, nb.nbr_j, flags)
        i, j = nb.pairs()
        hit = flags.astype(bool)
        pairs = np.stack([self.perm[i[hit]], self.perm[j[hit]]], axis=1).astype(np.int32)
        return np.sort(pairs, axis=1)
