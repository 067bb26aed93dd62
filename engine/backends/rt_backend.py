"""The rt backend: the Mochi paper's model and everything the CPU backend bakes but Hertz–Mindlin and the
peers' friction caps, stepped through portable ray tracing (slangpy).

Issue 28's backend. Every step, in three timed phases:

1. build: the grains' current centres go to the ray-traced search (engine.backends.rt_detect), whose
   acceleration structure is rebuilt at the first step after ``set_state`` and every
   ``physics.rebuild_interval`` steps, and refitted otherwise (the OptiX backend's policy);
2. detect: a zero-length ray from every centre finds the touching pairs (4r boxes, owner rule), which
   become one row of partners per grain, both directions, sorted; with friction model 'spring' each row
   entry takes its tangential spring from the last step's rows (engine.backends.rt_springs);
   ``rt_step_forces`` (kernels/rt_dem_step.slang) gathers each grain's contact forces over its own row, in
   the row's order, with the contact law of kernels/contact_law.h, then adds the box walls, updating the
   grain's own springs (per row entry and per wall side); with rotation or cohesion the law's full form
   (as the CPU backend takes it), each grain's torque gathered the same way (its own side of each contact,
   then the walls), and with rolling resistance a rolling spring per row entry and wall side carried as
   the tangential springs are; glue bonds (engine.backends.rt_bonds) act instead of their pairs' contacts,
   each grain gathering its own bonds' forces and torques after its contacts; mesh colliders
   (engine.backends.rt_colliders) add theirs after the bonds, before the walls, and their swept test
   follows the update (Euler's integrate, Verlet's drift) and the rigid bodies' step, as on the CPU;
3. update: ``rt_step_integrate``: semi-implicit Euler (v, x, and with rotation ω and the orientation
   quaternion, as the CPU backend's kick) under gravity and the force fields (the uniform ones added to
   gravity on the host, the others per grain by kernels/field_law.h), open-side exits, NaN and speed checks. With
   velocity Verlet (``_step``) the drift (``rt_step_drift``) comes first, the forces are those of the
   drifted positions, and ``rt_step_integrate`` is the second half kick, storing the accelerations.
   Rigid bodies (engine.backends.rt_clumps) then move as one, each from its members' accelerations.

Deterministic: every force sum is taken by one thread in a fixed order and the pairs are sorted, so the
same state gives the same bits on a rerun and on a resume (no float atomics; the checks use integer
min/max only). The search runs a hair wider than touching (``PAIR_MARGIN``) and the force kernel decides
touching itself, in the backend's own float32 frame: which pairs act never depends on the search's frame
or on when its structure was last rebuilt. The springs follow the pairs by partner id, so they do not
depend on it either; ``get_contact_history`` / ``set_contact_history`` carry them across a resume in the
CPU backend's format (particle ids), bit for bit from rt to rt.

What it steps is the paper's model, with either friction model ('damper', or 'spring': static friction),
rotating grains (friction and rolling torques, rolling springs per row entry and wall side), SJKR
cohesion, glued and rigid bodies and mesh colliders, with semi-implicit Euler or velocity Verlet, and force
fields of every kind; engine.backends.rt_support refuses the rest in one sentence.

Host round trips (this slice): positions and velocities live on the device between steps, but each step
reads the positions back for the search's refit (rt_detect takes host centres), the pair list comes back
to the host to be turned into rows and uploaded again, the pair springs (and rolling springs) are read
back after the force kernel and uploaded again in the next step's rows (the wall springs stay on the
device), and the speed and NaN checks are read each step (with Verlet once more, after the drift). A
later slice can refit from the device buffer and build the rows and
carry the springs on the device.

slangpy is imported only when the backend is built (through ``open_rt_device``).
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np

from .base import Backend, StepTimings
from .gpu_failure import gpu_failure_sentence
from .gpu_toolchain import GpuUnavailable
from .prepared_physics import prepare_physics
from .rt_bonds import RtBonds
from .rt_clumps import RtClumps
from .rt_colliders import RtColliders
from .rt_detect import RayTracedPairs
from .rt_device import RtDevice, open_rt_device
from .rt_springs import carry_springs, row_keys, springs_from_history, springs_to_history
from .rt_support import check_rt_model, frictional
from ..contact_history import ContactHistory
from ..contact_law import TANGENTIAL_STIFFNESS_RATIO
from ..errors import MochiError, SimulationDiverged
from ..fields import uniform_acceleration
from ..local_origin import local_to_world, round_to_world, world_to_local
from ..model import Model
from ..neighbors.base import sorted_pairs, touching
from ..state import State

KERNEL_SOURCE = "rt_dem_step.slang"
#: Reach the search adds [m per m of the largest diameter], so that its float32 test in its own frame
#: never drops a pair the force kernel's float32 test in the backend's frame counts as touching.
PAIR_MARGIN = 1e-5
#: ``g_diag`` before a step: no NaN, nothing too fast, largest speed² 0.
NO_STEP = 0xFFFFFFFF


def pair_rows(i: np.ndarray, j: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray]:
    """Every grain's partners, from pairs listed once each.

    Args:
        i, j: Grain indices of each pair, int, shape (pairs,).
        count: Grains.

    Returns:
        (row_start uint32 (count + 1,), partner uint32 (2·pairs,)): grain g's partners are
        ``partner[row_start[g]:row_start[g + 1]]``, ascending.
    """
    rows = np.concatenate([i, j]).astype(np.int64)
    partners = np.concatenate([j, i]).astype(np.int64)
    order = np.lexsort((partners, rows))
    row_start = np.zeros(count + 1, np.uint32)
    np.cumsum(np.bincount(rows, minlength=count), out=row_start[1:])
    return row_start, partners[order].astype(np.uint32)


class BackendRt(Backend):
    """The paper's model, damper or spring friction, rotating grains, on any device with ray tracing (module
    docstring).

    Args:
        model: The static model (refused in one sentence unless it is the paper's model).
        device: An open ``RtDevice``, a kind ('vulkan', 'd3d12', 'metal', 'cuda'), or None for the first
            device with ray tracing.
    """

    name = "rt"
    deterministic = True

    def __init__(self, model: Model, *, device: str | RtDevice | None = None):
        super().__init__(model)
        check_rt_model(model)  # before any device work
        self.rt = device if isinstance(device, RtDevice) else open_rt_device(device)
        self._spy = __import__("slangpy")
        self.search = RayTracedPairs(self.rt)
        self._forces, self._integrate, self._drift = (
            self.rt.compute_kernel(KERNEL_SOURCE, entry) for entry in ("rt_step_forces", "rt_step_integrate",
                                                                       "rt_step_drift"))
        physics = model.physics
        prepared = prepare_physics(physics)
        self.origin, self.lo, self.hi = prepared.origin, prepared.lo, prepared.hi
        self.count = model.particle_count
        self.radius = model.radius.astype(np.float64)
        # The search's frame is ours shifted by whole metres (rt_detect): its float32 centres differ from ours
        # by a few float32 steps at the largest coordinate there, covered 16 times, plus the relative margin.
        reach = float(np.max(np.abs(np.concatenate([self.lo, self.hi])))) + 2.0 * float(self.radius.max()) + 1.0
        self.pair_skin = PAIR_MARGIN * 2.0 * float(self.radius.max()) + 16.0 * float(np.spacing(np.float32(reach)))
        table = {
            "g_pair_law": np.stack([prepared.beta, prepared.mu, prepared.roll, prepared.cohesion],
                                   axis=-1).reshape(-1, 4),
            "g_wall_law": np.stack([prepared.wall_beta, prepared.wall_mu, prepared.wall_roll, prepared.wall_cohesion],
                                   axis=-1),
            # The position-dependent force fields (kernels/field_law.h), in the local frame.
            "g_field_table": prepared.field_table.reshape(-1) if prepared.field_table.size else np.zeros(16),
            "g_field_grid": prepared.field_grid}
        self._tables = {name: self.rt.buffer(values.astype(np.float32)) for name, values in table.items()}
        self._material = self.rt.buffer(model.material_index.astype(np.uint32))
        self._diag = self.rt.buffer(np.zeros(3, np.uint32), write=True)
        self._force = self.rt.buffer(np.zeros((self.count, 4), np.float32), write=True)
        self._torque = self.rt.buffer(np.zeros((self.count, 4), np.float32), write=True)
        self.rotation = bool(physics.rotation)
        # The law's full form wherever the CPU backend takes it (rolling resistance is zero without rotation).
        self.rolling = prepared.rolling
        self.euler = physics.integrator == "euler"
        # Glue bonds (engine.backends.rt_bonds) act in the force kernel; with them the CPU takes the full law.
        self.bonds = RtBonds(self.rt, model)
        # Rigid bodies (engine.backends.rt_clumps): a per-body kernel after the update; the full law, as on the CPU.
        self.clumps = RtClumps(self.rt, model, self.origin)
        self.full = (self.rotation or prepared.cohesive or not self.euler or self.bonds.count > 0
                     or self.clumps.count > 0)
        # Mesh colliders (engine.backends.rt_colliders): their forces before rt_step_forces, the swept
        # test after the update.
        self.colliders = RtColliders(self.rt, model, self.origin)
        # Velocity Verlet: the accelerations a, α of the current state, stored by the kick for the next
        # drift (the CPU's acc/alpha); computed once at the start (``primed``) or restored from a history.
        self._acc, self._alpha = (self.rt.buffer(np.zeros((self.count, 4), np.float32), write=True) for _ in range(2))
        self.primed = False
        self._row_start = self.rt.buffer(np.zeros(self.count + 1, np.uint32))
        # Friction model 'spring' (engine.backends.rt_springs): one ξ per row entry, and per grain and wall
        # side. Without friction both models give F_t = 0, and the CPU backend then keeps no springs either.
        self.spring = physics.friction_model == "spring" and frictional(physics)
        # Rolling resistance: one ξ_r per row entry and per grain and wall side, kept beside the springs.
        self.keep_history = self.spring or self.rolling
        self._spring = self._rolling = None  # float4 per row entry, grown with the partner buffer
        # Bound from the start: Verlet's drift, the first kernel after a resume, runs before any rows exist.
        self._allocate_rows(16)
        self._wall_spring = self.rt.buffer(np.zeros((6 * self.count, 4), np.float32), write=True)
        self._wall_rolling = self.rt.buffer(np.zeros((6 * self.count if self.rolling else 1, 4), np.float32),
                                          write=True)
        # The histories of the rows last stepped (or restored), on the host: keys int64 (P,), ξ and ξ_r
        # float32 (P, 6).
        self._keys = np.zeros(0, np.int64)
        self._springs = np.zeros((0, 6), np.float32)
        self._uniforms = {
            "g_count": self.count, "g_material_count": len(physics.materials),
            "g_field_count": int(prepared.field_table.shape[0]),
            "g_wall_mask": int(sum(int(bit) << side for side, bit in enumerate(prepared.wall_mask))),
            "g_lo": self._spy.float3(*(float(x) for x in self.lo)),
            "g_hi": self._spy.float3(*(float(x) for x in self.hi)),
            "g_stiffness": float(physics.stiffness), "g_dt": float(physics.dt),
            "g_tangential_ratio": float(TANGENTIAL_STIFFNESS_RATIO),
            "g_speed_limit2": float(physics.speed_limit) ** 2, "g_spring_model": int(self.spring),
            "g_rotation": int(self.rotation), "g_full": int(self.full), "g_rolling_model": int(self.rolling),
            "g_verlet": int(not self.euler), "g_history_dt": float(physics.dt), "g_kick_dt": 0.5 * float(physics.dt)}
        self._pos = self._vel = self._active = self._omega = self._quat = None
        self.step_index = 0
        self.needs_rebuild = True
        self.steps_since_rebuild = 0

    # --- device buffers ---------------------------------------------------------------------------
    def _rows(self, buffer) -> np.ndarray:
        """A per-grain float4 buffer's rows, float32 (n, 4) (a copy)."""
        return buffer.to_numpy().view(np.float32)[: 4 * self.count].reshape(self.count, 4).copy()

    def describe_device(self) -> str:
        software = " — a CPU implementation: exact, not fast" if self.rt.is_software else ""
        return f"rt (slangpy {self._spy.__version__}, {self.rt.describe()}{software})"

    # --- state ------------------------------------------------------------------------------------
    def set_state(self, state: State) -> None:
        m = self.model
        pos = np.empty((self.count, 4), np.float32)
        pos[:, :3] = world_to_local(state.positions, self.origin)
        pos[:, 3] = m.radius
        vel = np.empty((self.count, 4), np.float32)
        vel[:, :3] = state.velocities
        vel[:, 3] = m.mass
        self._pos = self.rt.buffer(pos, write=True)
        self._vel = self.rt.buffer(vel, write=True)
        self._active = self.rt.buffer(np.asarray(state.active).astype(np.uint32), write=True)
        # ω and q are carried as they came without rotation (as the CPU backend carries them).
        omega = np.zeros((self.count, 4), np.float32)
        omega[:, :3] = state.angular_velocities
        self._omega = self.rt.buffer(omega, write=True)
        self._quat = self.rt.buffer(np.ascontiguousarray(state.orientations, np.float32), write=True)
        self.step_index = int(state.step)
        self.needs_rebuild = True
        self.primed = False  # a state alone has no stored accelerations (set_contact_history restores them)
        # A state alone starts without springs (set_contact_history restores them).
        self._keys = np.zeros(0, np.int64)
        self._springs = np.zeros((0, 6), np.float32)
        self.bonds.reset()
        self.clumps.from_state(State(local_to_world(pos[:, :3], self.origin).astype(np.float32), vel[:, :3],
                                     state.active, state.step, angular_velocities=omega[:, :3]))
        self.colliders.reset()
        self._wall_spring.copy_from_numpy(np.zeros((6 * self.count, 4), np.float32))
        if self.rolling:
            self._wall_rolling.copy_from_numpy(np.zeros((6 * self.count, 4), np.float32))

    def _wall_rows(self, buffer) -> np.ndarray:
        """A per grain and wall side float4 buffer's xyz, float32 (n, 6, 3) (a copy)."""
        return buffer.to_numpy().view(np.float32)[: 24 * self.count].reshape(self.count, 6, 4)[:, :, :3].copy()

    def get_contact_history(self) -> ContactHistory | None:
        """The tangential springs of the pairs and walls, and their rolling springs with rolling resistance, in
        particle ids (engine.backends.rt_springs), with Verlet the stored accelerations and with glue bonds
        their state (engine.backends.rt_bonds), with rigid bodies theirs (engine.backends.rt_clumps) and the mesh
        colliders' springs (engine.backends.rt_colliders), for a bit-exact resume; None for friction model
        'damper' without rolling resistance, bonds, rigid bodies or colliders, which keeps no history."""
        verlet = not self.euler and self.primed
        if not (self.keep_history or verlet or self.bonds.count or self.clumps.count or self.colliders.count):
            return None
        wall = np.zeros((self.count, 6, 6), np.float32)
        wall[:, :, :3] = self._wall_rows(self._wall_spring)
        if self.rolling:
            wall[:, :, 3:] = self._wall_rows(self._wall_rolling)
        history = springs_to_history(self._keys, self._springs, wall, self.count, rolling=self.rolling)
        history = dataclasses.replace(history, **self.bonds.to_history(), clumps=self.clumps.to_history(),
                                      colliders=self.colliders.to_history())
        if verlet:  # as the CPU backend: Verlet's stored accelerations, float64 (n, 3)
            history = dataclasses.replace(history, acceleration=self._rows(self._acc)[:, :3].astype(np.float64),
                                          angular_acceleration=self._rows(self._alpha)[:, :3].astype(np.float64))
        return history

    def set_contact_history(self, history: ContactHistory) -> None:
        """Restore the springs of any backend's ``get_contact_history`` (call after ``set_state``); exact
        for an rt backend's history, float32-rounded for one from a float64 backend."""
        history = ContactHistory.from_arrays(history)
        self.bonds.from_history(history.bond_shear, history.bond_intact)
        self.clumps.from_history(history.clumps)
        self.colliders.from_history(history.colliders)
        if not self.euler and history.acceleration is not None:
            for buffer, values in ((self._acc, history.acceleration), (self._alpha, history.angular_acceleration)):
                rows = np.zeros((self.count, 4), np.float32)
                rows[:, :3] = values
                buffer.copy_from_numpy(rows)
            self.primed = True
        if not self.keep_history:
            return
        self._keys, self._springs, wall = springs_from_history(history, self.count)
        for buffer, columns, kept in ((self._wall_spring, slice(0, 3), True),
                                      (self._wall_rolling, slice(3, 6), self.rolling)):
            if kept:
                rows = np.zeros((self.count, 6, 4), np.float32)
                rows[:, :, :3] = wall[:, :, columns]
                buffer.copy_from_numpy(rows.reshape(-1, 4))

    def _local_state(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(local positions float32 (n, 3), velocities float32 (n, 3), active uint8 (n,)) from the device."""
        active = self._active.to_numpy().view(np.uint32)[: self.count].astype(np.uint8)
        return self._rows(self._pos)[:, :3].copy(), self._rows(self._vel)[:, :3].copy(), active

    def get_state(self) -> State:
        pos, vel, active = self._local_state()
        return State(local_to_world(pos, self.origin), vel, active, self.step_index,
                     angular_velocities=self._rows(self._omega)[:, :3].copy(), orientations=self._rows(self._quat),
                     bonds=self.bonds.per_particle())

    def begin_frame(self) -> None:
        """Round local positions to what a cache frame holds (engine.local_origin): exact resume."""
        if self._pos is not None and self.origin.any():
            pos = self._rows(self._pos)
            pos[:, :3] = round_to_world(pos[:, :3], self.origin)
            self._pos.copy_from_numpy(pos)

    # --- stepping ---------------------------------------------------------------------------------
    def _find_pairs(self, centres: np.ndarray, rebuild: bool) -> tuple[np.ndarray, np.ndarray]:
        """Pairs within touching reach plus ``pair_skin`` of ``centres`` (local, float32 (n, 3))."""
        if rebuild:
            self.search.build(centres.astype(np.float64), self.radius, skin=self.pair_skin)
        else:
            self.search.refit(centres.astype(np.float64))
        return self.search.pairs()

    def _upload_rows(self, i: np.ndarray, j: np.ndarray) -> None:
        """The step's partner rows to the device, with the springs carried over from the last rows."""
        row_start, partner = pair_rows(i, j, self.count)
        self._row_start.copy_from_numpy(row_start)
        entries = partner.shape[0]
        if entries > self._partner_capacity:
            self._allocate_rows(entries + entries // 4)
        if entries:
            self._partner.copy_from_numpy(partner)
        if self.keep_history:
            keys = row_keys(row_start, partner, self.count)
            carried = carry_springs(self._keys, self._springs, keys)
            for buffer, columns, kept in ((self._spring, slice(0, 3), self.spring),
                                          (self._rolling, slice(3, 6), self.rolling)):
                if kept:
                    rows = np.zeros((self._partner_capacity, 4), np.float32)
                    rows[:entries, :3] = carried[:, columns]
                    buffer.copy_from_numpy(rows)
            self._keys = keys

    def _allocate_rows(self, capacity: int) -> None:
        """Partner, spring and rolling buffers for ``capacity`` row entries (at least 16), zeroed."""
        self._partner_capacity = max(16, capacity)
        self._partner = self.rt.buffer(np.zeros(self._partner_capacity, np.uint32))
        self._spring, self._rolling = (
            self.rt.buffer(np.zeros((self._partner_capacity if kept else 1, 4), np.float32), write=True)
            for kept in (self.spring, self.rolling))

    def _read_springs(self) -> None:
        """The springs the force kernel left in the rows, to the host (carried at the next step's rows)."""
        if self.keep_history:
            entries = self._keys.shape[0]
            self._springs = np.zeros((entries, 6), np.float32)
            for buffer, columns, kept in ((self._spring, slice(0, 3), self.spring),
                                          (self._rolling, slice(3, 6), self.rolling)):
                if kept:
                    rows = buffer.to_numpy().view(np.float32)[: 4 * entries].reshape(entries, 4)
                    self._springs[:, columns] = rows[:, :3]

    def _bindings(self, **extra) -> dict:
        return {"g_pos": self._pos, "g_vel": self._vel, "g_active": self._active, "g_material": self._material,
                "g_row_start": self._row_start, "g_partner": self._partner, "g_spring": self._spring,
                "g_rolling": self._rolling, "g_wall_spring": self._wall_spring, "g_wall_rolling": self._wall_rolling,
                "g_force": self._force, "g_omega": self._omega,
                "g_quat": self._quat, "g_torque": self._torque, "g_acc": self._acc, "g_alpha": self._alpha,
                "g_diag": self._diag, **self._tables, **self._uniforms, **self.bonds.bindings(),
                **self.clumps.bindings(), **self.colliders.bindings(), "g_step": self.step_index, **extra}

    def _check(self) -> None:
        """Raise ``SimulationDiverged`` after a step that produced NaN or runaway speed (CPU's sentences)."""
        first_nan, first_fast, speed2_bits = (int(v) for v in self._diag.to_numpy().view(np.uint32)[:3])
        physics = self.model.physics
        # The words store step + 1 of the step taken (0 stays free), as the CPU backend counts.
        if first_nan != NO_STEP:
            step = first_nan
            raise SimulationDiverged(
                f"The simulation produced NaN at step {step} (t = {step * physics.dt:.6g} s); lower dt or the "
                "stiffness.", step)
        if first_fast != NO_STEP:
            step = first_fast
            speed = float(np.sqrt(np.uint32(speed2_bits).view(np.float32)))
            raise SimulationDiverged(
                f"Runaway energy at step {step} (t = {step * physics.dt:.6g} s): a particle moves at {speed:.3g} "
                f"m/s, above the limit of {physics.speed_limit:.3g} m/s; lower dt or the stiffness.", step)

    def step(self, count: int) -> StepTimings:
        """Advance ``count`` steps (see the module docstring for the phases and their host round trips).

        Raises:
            SimulationDiverged: NaN or a speed above ``physics.speed_limit`` (checked every step).
            GpuUnavailable: the device failed during a step (one sentence).
        """
        try:
            return self._step(count)
        except MochiError:  # SimulationDiverged, or a search that found inconsistent pairs: one sentence
            raise
        except Exception as exc:  # a lost device, out of memory: one sentence, frames kept
            raise GpuUnavailable(gpu_failure_sentence(self.name, exc, doing="failed during a step")) from exc

    def _detect(self, timings: StepTimings) -> None:
        """The touching pairs of the current positions, as partner rows on the device (springs carried)."""
        rebuild = self.needs_rebuild or self.steps_since_rebuild >= self.model.physics.rebuild_interval
        i, j = self._find_pairs(self._rows(self._pos)[:, :3], rebuild)
        if rebuild:
            self.needs_rebuild = False
            self.steps_since_rebuild = 0
            timings.rebuilds += 1
        self._upload_rows(i, j)

    def _forces_and_kick(self, force_step: int, history_dt: float, kick_dt: float) -> float:
        """Forces of the current state (springs stretched over ``history_dt`` [s]), then the integrate kernel
        (Euler, or Verlet's kick of ``kick_dt`` [s]) under gravity at ``force_step``; returns the time
        [perf_counter s] between the two."""
        physics = self.model.physics
        self.colliders.add_forces(self._bindings(), force_step * physics.dt)
        self._forces.dispatch(thread_count=[self.count, 1, 1], vars=self._bindings(g_history_dt=history_dt))
        self.rt.device.wait_for_idle()
        self.bonds.advance()
        self._read_springs()
        between = time.perf_counter()
        t = force_step * physics.dt  # gravity plus the uniform fields, as every backend adds them
        accel = (physics.gravity.at(t) + uniform_acceleration(physics.fields, t)).astype(np.float32)
        if self.euler:
            self.colliders.remember(self._bindings())
        self._integrate.dispatch(thread_count=[self.count, 1, 1],
                                 vars=self._bindings(g_accel=self._spy.float3(*(float(a) for a in accel)),
                                                     g_kick_dt=kick_dt))
        self.rt.device.wait_for_idle()
        return between

    def _clump_step(self, phase: int) -> None:
        """The rigid bodies' step after the grains' own (engine.backends.rt_clumps; the CPU's phases)."""
        self.clumps.step(phase, {"g_pos": self._pos, "g_vel": self._vel, "g_omega": self._omega,
                                 "g_quat": self._quat, "g_acc": self._acc, "g_alpha": self._alpha})

    def _step(self, count: int) -> StepTimings:
        """Euler: detect, forces, kick-and-move. Verlet (the CPU backend's order, LAMMPS fix nve/sphere):
        drift (half kick with the stored accelerations, then x and q), detect and forces at the new positions
        and time, second half kick; at the very start the accelerations of the initial state are computed
        once (springs stretched over 0 s), as the CPU does."""
        dt = float(self.model.physics.dt)
        timings = StepTimings()
        for _ in range(count):
            t0 = time.perf_counter()
            if not self.euler and not self.primed:
                self._detect(timings)
                self._forces_and_kick(self.step_index, 0.0, 0.0)
                self._clump_step(0)
                self.primed = True
            self._diag.copy_from_numpy(np.array([NO_STEP, NO_STEP, 0], np.uint32))
            force_step = self.step_index
            if not self.euler:
                self.colliders.remember(self._bindings())
                self._drift.dispatch(thread_count=[self.count, 1, 1], vars=self._bindings())
                self.rt.device.wait_for_idle()
                self._clump_step(2)
                # The swept test after the bodies have set their members, as the CPU orders them.
                self.colliders.sweep(self._bindings(), (self.step_index + 1) * dt)
                self._check()  # NaN from the drift: before the search reads the positions
                force_step = self.step_index + 1
            tb = time.perf_counter()
            self._detect(timings)
            t1 = time.perf_counter()
            t2 = self._forces_and_kick(force_step, dt, 0.5 * dt)
            self._clump_step(1 if self.euler else 3)
            if self.euler:  # the swept test after the update and the bodies (Verlet's follows its drift)
                self.colliders.sweep(self._bindings(), (self.step_index + 1) * dt)
            self.step_index += 1
            self.steps_since_rebuild += 1
            self._check()
            t3 = time.perf_counter()
            timings.add_step(tb, t1, t2, t3)
            timings.update_s += tb - t0  # Verlet's drift (and, once, the priming)
        return timings

    def contact_pairs(self) -> np.ndarray:
        """Touching pairs of the active grains (model indices), decided in float64 from the float32
        centres as the CPU backend decides them: int32 (pairs, 2), i < j, sorted."""
        pos, _, active = self._local_state()
        index = np.flatnonzero(active)
        if index.size < 2:
            return np.zeros((0, 2), np.int32)
        # A search of the active grains only: the next step rebuilds the structure over all of them.
        self.search.build(pos[index].astype(np.float64), self.radius[index], skin=self.pair_skin)
        self.needs_rebuild = True
        i, j = self.search.pairs()
        found = touching(pos[index], self.radius[index], np.stack([i, j], axis=1))
        return sorted_pairs(index[found[:, 0]], index[found[:, 1]])
