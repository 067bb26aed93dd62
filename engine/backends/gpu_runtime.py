"""The particle arrays on the device and their launchers (integration, Morton reorder, bucket sort):
what every GPU backend steps with. Finding CuPy and compiling kernels is engine.backends.gpu_toolchain;
the structs' host mirrors and the law's switches are engine.backends.gpu_params.

Nothing here imports CuPy at module import time, so ``import engine.backends`` works without a GPU.

Device layout of the particles (slot order, see ``DeviceParticles``): ``pos`` float4 (x, y, z, radius),
``vel`` float4 (vx, vy, vz, mass), ``force`` float4, ``info`` uint32 (active bit | material << 8); with
rotation (``Physics.rotation``) also ``omega`` float4 (ωx, ωy, ωz, moment of inertia), ``torque`` and
``orientation`` (w, x, y, z) float4, and with velocity Verlet the last step's accelerations ``accel``
and ``alpha``. Histories live by model index: springs and, beside them, rolling histories (rows, see
engine.backends.gpu_springs), wall springs and rolling histories, glue bond states (engine.bonds).
The paper's model (no rotation, Euler, no rolling, cohesion or bonds) runs the kernels' original path
and keeps its bits.
"""

from __future__ import annotations

import numpy as np

from ..errors import MochiError, SimulationDiverged
from ..fields import uniform_acceleration
from ..local_origin import local_to_world, round_to_world, world_to_local
from ..model import Model
from ..state import State
from .gpu_params import (CLUMP_HISTORY, DEM_PARAMS_ARRAYS, DEM_PARAMS_DTYPE, DIAG_COUNT, DIAG_SPRING_OVERFLOW,
                         INFO_ACTIVE, INFO_MATERIAL_SHIFT, INT_MAX, INTEGRATORS, check_bodies, check_contact_law,
                         check_friction_model, clump_bodies, fill_dem_params, grid_fields, law_flags, model_bonds, model_clumps,
                         moments_of_inertia, rotating_law, rotating_update, rotation_tables, spring_overflow_sentence,
                         uses_springs)
from .gpu_springs import SPRING_SLOTS, SpringRows
from .gpu_toolchain import BLOCK, blocks, raw_module
from .prepared_physics import prepare_physics

#: Threads and items per block of the prefix sum (SCAN_THREADS, SCAN_ITEMS in kernels/dem_common.cu).
SCAN_THREADS = 256
SCAN_ITEMS = 1024
#: Bits per axis of the Morton key used to reorder particles at rebuilds (2^21 buckets).
MORTON_BITS = 7


class BucketSorter:
    """Deterministic stable sort of items by a small integer key (kernels/dem_common.cu).

    After ``sort``, ``sorted[start[b]:start[b + 1]]`` are the items with key b in increasing order.

    Args:
        item_count: Items to sort.
        bucket_count: Keys are in [0, bucket_count).
    """

    def __init__(self, item_count: int, bucket_count: int):
        import cupy

        self.cp = cupy
        self.item_count = item_count
        self.bucket_count = bucket_count
        self.count = cupy.zeros(bucket_count, cupy.uint32)
        self.rank = cupy.zeros(max(item_count, 1), cupy.uint32)
        self.start = cupy.zeros(bucket_count + 1, cupy.uint32)
        self.sorted = cupy.zeros(max(item_count, 1), cupy.int32)
        self.block_sum = cupy.zeros(max((bucket_count + SCAN_ITEMS - 1) // SCAN_ITEMS, 1), cupy.uint32)
        module = raw_module("dem_common.cu")
        self._scan_blocks = module.get_function("scan_blocks")
        self._scan_block_sums = module.get_function("scan_block_sums")
        self._add_block_offsets = module.get_function("add_block_offsets")
        self._count = module.get_function("bucket_count")
        self._scatter = module.get_function("bucket_scatter")
        self._order = module.get_function("bucket_order")

    def scan(self) -> None:
        """start[1:] = inclusive prefix sum of count (start[0] stays 0); asynchronous."""
        buckets = np.int32(self.bucket_count)
        block_count = self.block_sum.shape[0]
        self._scan_blocks((block_count,), (SCAN_THREADS,), (self.count, buckets, self.start, self.block_sum))
        self._scan_block_sums((1,), (SCAN_THREADS,), (self.block_sum, np.int32(block_count)))
        self._add_block_offsets(blocks(self.bucket_count), (BLOCK,), (self.start, buckets, self.block_sum))

    def sort(self, key) -> None:
        """Sort by ``key`` (cupy uint32 (item_count,)); asynchronous."""
        n = np.int32(self.item_count)
        self.count.fill(0)
        self._count(blocks(self.item_count), (BLOCK,), (key, n, self.count, self.rank))
        self.scan()
        self._scatter(blocks(self.item_count), (BLOCK,), (key, n, self.start, self.rank, self.sorted))
        self._order(blocks(self.bucket_count), (BLOCK,), (self.start, np.int32(self.bucket_count), self.sorted))


class DeviceParticles:
    """The particles of one model on the GPU, in slot order, and the launchers every backend shares.

    ``slot_to_model[k]`` is the model index of the particle in slot k; slots are reordered along a
    Morton curve at rebuilds (``morton_reorder``) so that neighbours sit close in memory.

    Args:
        model: The static model.
    """

    def __init__(self, model: Model):
        import cupy

        self.cp = cupy
        self.model = model
        physics = model.physics
        check_friction_model(physics)
        check_contact_law(physics)
        check_bodies(model)
        n = model.particle_count
        self.particle_count = n
        self.pos = cupy.zeros((n, 4), cupy.float32)
        self.vel = cupy.zeros((n, 4), cupy.float32)
        self.force = cupy.zeros((n, 4), cupy.float32)
        self.info = cupy.zeros(n, cupy.uint32)
        self.slot_to_model = cupy.arange(n, dtype=cupy.int32)
        self.diag = cupy.zeros(DIAG_COUNT, cupy.int32)
        prepared = prepare_physics(model.physics)
        self.origin = prepared.origin
        if model.colliders is not None:
            model.colliders.set_origin(self.origin)
        table, grid = prepared.field_table, prepared.field_grid
        self.beta = cupy.asarray(prepared.beta, cupy.float32).ravel()
        self.mu = cupy.asarray(prepared.mu, cupy.float32).ravel()
        self.wall_beta = cupy.asarray(prepared.wall_beta, cupy.float32)
        self.wall_mu = cupy.asarray(prepared.wall_mu, cupy.float32)
        self.field_table = cupy.asarray(table if table.size else np.zeros((1, 16), np.float32)).ravel()
        self.field_grid = cupy.asarray(grid, cupy.float32)
        self.field_count = int(table.shape[0])
        self.springs_on = uses_springs(physics)
        flags = law_flags(physics)
        self.rotation_on = bool(flags["rotation"])
        self.verlet_on = flags["integrator"] == INTEGRATORS["verlet"]
        self.rolling_on = bool(flags["rolling_model"])
        # Rows of pair history hold the springs and, beside them, the rolling histories.
        self.rows_on = self.springs_on or self.rolling_on
        rows = n if self.rows_on else 0
        self.springs = cupy.zeros((2 * rows * SPRING_SLOTS + 1, 4), cupy.float32)
        self.wall_springs = cupy.zeros((6 * (n if self.springs_on else 0) + 1, 4), cupy.float32)
        rolling_rows = n if self.rolling_on else 0
        self.rolling = cupy.zeros((2 * rolling_rows * SPRING_SLOTS + 1, 4), cupy.float32)
        self.wall_rolling = cupy.zeros((6 * rolling_rows + 1, 4), cupy.float32)
        self.spring_parity = cupy.zeros(1, cupy.int32)
        spinning = n if self.rotation_on else 0
        self.omega = cupy.zeros((max(spinning, 1), 4), cupy.float32)
        self.torque = cupy.zeros((max(spinning, 1), 4), cupy.float32)
        self.orientation = cupy.zeros((max(spinning, 1), 4), cupy.float32)
        self.alpha = cupy.zeros((max(spinning, 1), 4), cupy.float32)
        self.clumps = model_clumps(model)
        # Verlet's accelerations; the clumps sum their members' forces from them with Euler too.
        self.accel = cupy.zeros((max(n if self.verlet_on or self.clumps is not None else 0, 1), 4), cupy.float32)
        for name, table in rotation_tables(physics).items():
            setattr(self, name, cupy.asarray(np.ascontiguousarray(table.ravel())))
        self.history_dt = cupy.full(1, physics.dt, cupy.float32)
        self.model_to_slot = cupy.arange(n, dtype=cupy.int32)
        self.bonds = model_bonds(model)
        if self.bonds is not None:
            from ..bonds import bond_rows

            start, other, index = bond_rows(self.bonds, n)
            self.bond_start = cupy.asarray(start.astype(np.int32))
            self.bond_other = cupy.asarray(other.astype(np.int32))
            self.bond_index = cupy.asarray(index.astype(np.int32))
            self.bond_pairs = cupy.asarray(np.ascontiguousarray(self.bonds.pairs, np.int32))
            self.bond_props = cupy.asarray(np.ascontiguousarray(np.stack(
                [self.bonds.rest, self.bonds.area, self.bonds.stiffness, self.bonds.strength], 1), np.float64))
            self.bond_state = cupy.zeros((2 * self.bonds.count, 4), cupy.float32)
        else:
            for name in ("bond_start", "bond_other", "bond_index", "bond_pairs"):
                setattr(self, name, cupy.zeros(2, cupy.int32))
            self.bond_props = cupy.zeros(4, cupy.float64)
            self.bond_state = cupy.zeros((1, 4), cupy.float32)
        c = self.clumps
        if c is not None:
            self.clump_of = cupy.asarray(np.ascontiguousarray(c.clump, np.int32))
            self.clump_start = cupy.asarray(np.ascontiguousarray(c.start, np.int32))
            self.clump_members = cupy.asarray(np.ascontiguousarray(c.members, np.int32))
            self.clump_offset = cupy.asarray(np.ascontiguousarray(c.offset, np.float64))
            self.clump_mass = cupy.asarray(np.ascontiguousarray(c.mass, np.float64))
            self.clump_inertia_inv = cupy.asarray(np.ascontiguousarray(c.inertia_inv, np.float64).reshape(-1))
            self.clump_body = cupy.zeros((c.count, 19), cupy.float64)
        else:
            for name in ("clump_of", "clump_start", "clump_members"):
                setattr(self, name, cupy.zeros(2, cupy.int32))
            for name in ("clump_offset", "clump_mass", "clump_inertia_inv"):
                setattr(self, name, cupy.zeros(3, cupy.float64))
            self.clump_body = cupy.zeros((1, 19), cupy.float64)
        #: Velocity Verlet: ``accel``/``alpha`` hold the accelerations of the current state.
        self.primed = False
        self.host_params = np.zeros(1, DEM_PARAMS_DTYPE)
        self.params = cupy.zeros(DEM_PARAMS_DTYPE.itemsize, cupy.uint8)
        self.key = cupy.zeros(max(n, 1), cupy.uint32)
        self.morton_sorter = BucketSorter(n, (1 << (3 * MORTON_BITS)) + 1)
        self._scratch4 = cupy.zeros((n, 4), cupy.float32)
        self._scratch1 = cupy.zeros(n, cupy.uint32)
        module = raw_module("dem_common.cu")
        self.rotating_law = rotating_law(model)
        # The paper's model runs the kernels it always ran; everything else their rotating twins.
        self._integrate = module.get_function("dem_integrate_rotating" if rotating_update(model) else "dem_integrate")
        self._verlet_drift = module.get_function("dem_verlet_drift")
        self._verlet_prime = module.get_function("dem_verlet_prime")
        self._clump_step = module.get_function("dem_clump_step")
        self._morton = module.get_function("dem_morton_keys")
        self._gather4 = module.get_function("gather_float4")
        self._gather1 = module.get_function("gather_u32")
        self._flip_parity = module.get_function("dem_flip_spring_parity")
        self.last_checked_step = 0
        self.step_index = 0
        self._fill_params()

    def _fill_params(self, **extra) -> None:
        arrays = {name: getattr(self, name) for name in DEM_PARAMS_ARRAYS}
        fill_dem_params(self.host_params[0], arrays, self.model, field_count=self.field_count,
                        pointer=lambda a: a.data.ptr, **extra)
        self.params.set(self.host_params.view(np.uint8))

    def set_grid(self, cell_size: float, grid_bits: tuple[int, int, int]) -> None:
        """Grid of the CUDA grid backend: cell edge [m], cells folded onto 2^bits per axis (x, y, z)."""
        self._fill_params(**grid_fields(cell_size, grid_bits))

    def upload(self, state: State) -> None:
        """Copy ``state`` to the device in model order (slot k = particle k); synchronous."""
        cp = self.cp
        m = self.model
        n = self.particle_count
        host_pos = np.empty((n, 4), np.float32)
        host_pos[:, :3] = world_to_local(state.positions, self.origin)
        host_pos[:, 3] = m.radius
        host_vel = np.empty((n, 4), np.float32)
        host_vel[:, :3] = state.velocities
        host_vel[:, 3] = m.mass
        info = (state.active.astype(np.uint32) & INFO_ACTIVE) | (m.material_index.astype(np.uint32) << INFO_MATERIAL_SHIFT)
        self.pos.set(host_pos)
        self.vel.set(host_vel)
        self.info.set(info)
        self.force.fill(0)
        self.slot_to_model[:] = cp.arange(n, dtype=cp.int32)
        self.model_to_slot[:] = cp.arange(n, dtype=cp.int32)
        self.diag.set(np.array([INT_MAX, INT_MAX, 0, 0], np.int32))
        self.spring_parity.fill(0)
        if self.bonds is not None:
            self.set_bonds({})
        if self.rows_on:
            self.set_springs(SpringRows.empty(n, rolling=self.rolling_on))
        if self.rotation_on:
            omega = np.zeros((n, 4), np.float32)
            omega[:, 3] = moments_of_inertia(m)
            spin = getattr(state, "angular_velocities", None)
            if spin is not None:
                omega[:, :3] = spin
            self.omega.set(omega)
            orientation = np.zeros((n, 4), np.float32)
            turned = getattr(state, "orientations", None)
            if turned is not None:
                orientation[:] = turned
            else:
                orientation[:, 0] = 1.0
            self.orientation.set(orientation)
            self.torque.fill(0)
            self.alpha.fill(0)
        if self.verlet_on or self.clumps is not None:
            self.accel.fill(0)
            self.primed = False
        if self.clumps is not None:
            # The kernels set the members from the body's centre in their local frame (the CPU backend's too,
            # whose history this state also travels in).
            body = clump_bodies(m, state)
            body[:, CLUMP_HISTORY["clump_centre"]] -= self.origin
            self.clump_body.set(body)
        self.step_index = int(state.step)
        self.last_checked_step = int(state.step)

    def download(self) -> State:
        """The current state in model order; raises ``SimulationDiverged`` (see ``check``)."""
        cp = self.cp
        n = self.particle_count
        pos = cp.empty((n, 4), cp.float32)
        vel = cp.empty((n, 4), cp.float32)
        info = cp.empty(n, cp.uint32)
        pos[self.slot_to_model] = self.pos
        vel[self.slot_to_model] = self.vel
        info[self.slot_to_model] = self.info
        state = State(local_to_world(pos[:, :3].get(), self.origin), np.ascontiguousarray(vel[:, :3].get()),
                      (info.get() & INFO_ACTIVE).astype(np.uint8), self.step_index)
        if self.rotation_on and hasattr(state, "angular_velocities"):
            state.angular_velocities = np.ascontiguousarray(self.model_order(self.omega)[:, :3])
            state.orientations = np.ascontiguousarray(self.model_order(self.orientation))
        if self.bonds is not None:
            from ..bonds import bonds_per_particle

            state.bonds = bonds_per_particle(self.bonds, self.get_bonds()["bond_intact"], n)
        self.check()
        return state

    def get_clumps(self) -> dict[str, np.ndarray]:
        """The rigid clumps' body state in the CPU backend's history keys (``CLUMP_HISTORY``; centres local, as
        the CPU keeps them), float64; empty without clumps."""
        if self.clumps is None:
            return {}
        body = self.clump_body.get()
        return {name: np.ascontiguousarray(body[:, columns]) for name, columns in CLUMP_HISTORY.items()}

    def set_clumps(self, history: dict) -> None:
        """Restore ``get_clumps``'s arrays (missing keys: the state ``upload`` derived); synchronous."""
        if self.clumps is None or "clump_centre" not in history:
            return
        body = self.clump_body.get()
        for name, columns in CLUMP_HISTORY.items():
            body[:, columns] = np.asarray(history[name], np.float64).reshape(body[:, columns].shape)
        self.clump_body.set(body)

    def clump_step(self, phase: int) -> None:
        """Move every rigid clump as one body and set its members (kernels/dem_common.cu
        ``dem_clump_step``: 0 sums only, 1 Euler, 2 and 3 Verlet's halves); no-op without clumps."""
        if self.clumps is not None:
            self._clump_step(blocks(self.clumps.count), (BLOCK,), (self.params, np.int32(phase)))

    def get_bonds(self) -> dict[str, np.ndarray]:
        """The glue bonds' state the next step reads, in the CPU backend's history keys: ``bond_shear``
        ξ_b [m] float64 (B, 3) and ``bond_intact`` uint8 (B,); empty without bonds."""
        if self.bonds is None:
            return {}
        b = self.bonds.count
        half = int(self.spring_parity.get()[0])
        state = self.bond_state[half * b:(half + 1) * b].get()
        return {"bond_shear": state[:, :3].astype(np.float64), "bond_intact": (state[:, 3] != 0).astype(np.uint8)}

    def set_bonds(self, history: dict) -> None:
        """Restore ``get_bonds``'s arrays into the half the next step reads (every bond intact and
        unsheared when ``history`` has none); synchronous."""
        if self.bonds is None:
            return
        b = self.bonds.count
        data = np.zeros((2 * b, 4), np.float32)
        half = int(self.spring_parity.get()[0])
        rows = data[half * b:(half + 1) * b]
        if "bond_intact" in history:
            rows[:, :3] = np.asarray(history["bond_shear"], np.float64).reshape(b, 3)
            rows[:, 3] = np.asarray(history["bond_intact"]).reshape(b) != 0
        else:
            rows[:, 3] = 1.0
        self.bond_state.set(data)

    def model_order(self, array) -> np.ndarray:
        """A per-slot float4 array (cupy (n, 4)) in model order, on the host."""
        out = self.cp.empty_like(array)
        out[self.slot_to_model] = array
        return out.get()

    def slot_arrays4(self) -> list:
        """The per-slot float4 arrays a reorder must carry (the torque is rewritten every step)."""
        arrays = [self.pos, self.vel]
        if self.rotation_on:
            arrays += [self.omega, self.orientation, self.alpha]
        if self.verlet_on or self.clumps is not None:
            arrays.append(self.accel)
        return arrays

    def get_verlet(self) -> dict[str, np.ndarray]:
        """Velocity Verlet's accelerations of the current state in model order, in the CPU backend's
        history keys: ``acceleration`` [m/s²] and ``angular_acceleration`` [rad/s²], float64 (n, 3);
        empty with semi-implicit Euler or before they were computed."""
        if not (self.verlet_on and self.primed):
            return {}
        n = self.particle_count
        alpha = self.model_order(self.alpha)[:, :3] if self.rotation_on else np.zeros((n, 3), np.float32)
        return {"acceleration": self.model_order(self.accel)[:, :3].astype(np.float64),
                "angular_acceleration": alpha.astype(np.float64)}

    def set_verlet(self, history: dict) -> None:
        """Restore ``get_verlet``'s arrays (model order; after ``upload``, which leaves slots in model
        order). Without them the first step computes them (``prime``)."""
        if not self.verlet_on or "acceleration" not in history:
            return
        n = self.particle_count
        accel = np.zeros((n, 4), np.float32)
        accel[:, :3] = np.asarray(history["acceleration"], np.float64).reshape(n, 3)
        self.accel.set(accel)
        if self.rotation_on:
            alpha = np.zeros((n, 4), np.float32)
            alpha[:, :3] = np.asarray(history["angular_acceleration"], np.float64).reshape(n, 3)
            self.alpha.set(alpha)
        self.primed = True

    def flip_springs(self) -> None:
        """After a step's contact forces: the springs (and glue bond states) they kept are the ones the
        next step reads."""
        if self.rows_on or self.bonds is not None:
            self._flip_parity((1,), (1,), (self.spring_parity,))

    def set_springs(self, rows: "SpringRows") -> None:
        """Upload springs and rolling histories (the half the next step reads); synchronous."""
        if not self.rows_on:
            return
        n = self.particle_count
        self.spring_parity.fill(0)
        data = np.zeros((2 * n * SPRING_SLOTS + 1, 4), np.float32)
        data[:n * SPRING_SLOTS] = rows.grains.reshape(-1, 4)
        data.view(np.int32)[n * SPRING_SLOTS:2 * n * SPRING_SLOTS, 3] = -1  # the other half: empty rows
        self.springs.set(data)
        if self.springs_on:
            walls = np.zeros((6 * n + 1, 4), np.float32)
            walls[:6 * n, :3] = rows.walls.reshape(-1, 3)
            self.wall_springs.set(walls)
        if self.rolling_on:
            rolling = np.zeros((2 * n * SPRING_SLOTS + 1, 4), np.float32)
            if rows.rolling is not None:
                rolling[:n * SPRING_SLOTS, :3] = rows.rolling.reshape(-1, 3)
            self.rolling.set(rolling)
            wall_rolling = np.zeros((6 * n + 1, 4), np.float32)
            if rows.wall_rolling is not None:
                wall_rolling[:6 * n, :3] = rows.wall_rolling.reshape(-1, 3)
            self.wall_rolling.set(wall_rolling)

    def get_springs(self) -> "SpringRows":
        """Download the springs the next step reads."""
        n = self.particle_count
        if not self.rows_on:
            return SpringRows.empty(0)
        half = int(self.spring_parity.get()[0])
        grains = self.springs[half * n * SPRING_SLOTS:(half + 1) * n * SPRING_SLOTS].get().reshape(n, SPRING_SLOTS, 4)
        walls = (self.wall_springs[:6 * n, :3].get().reshape(n, 6, 3) if self.springs_on
                 else np.zeros((n, 6, 3), np.float32))
        rolling = wall_rolling = None
        if self.rolling_on:
            rolling = self.rolling[half * n * SPRING_SLOTS:(half + 1) * n * SPRING_SLOTS, :3].get()
            rolling = rolling.reshape(n, SPRING_SLOTS, 3)
            wall_rolling = self.wall_rolling[:6 * n, :3].get().reshape(n, 6, 3)
        return SpringRows(grains, walls, rolling, wall_rolling)

    def spring_overflow(self) -> int:
        """Contacts so far whose spring did not fit in their owner's row (they slid history-free)."""
        return int(self.diag[DIAG_SPRING_OVERFLOW:DIAG_SPRING_OVERFLOW + 1].get()[0])

    def check(self) -> None:
        """Raise ``SimulationDiverged`` if a NaN or a speed above the limit appeared since the last check,
        and ``MochiError`` if a contact's spring found its grain's row full (``spring_overflow``)."""
        physics = self.model.physics
        first_nan, first_fast, max_speed2_bits, overflow = (int(v) for v in self.diag.get())
        first, last = self.last_checked_step, self.step_index
        self.last_checked_step = last
        if first_nan != INT_MAX:
            raise SimulationDiverged(
                f"The simulation produced NaN at step {first_nan} (t = {first_nan * physics.dt:.6g} s), between "
                f"steps {first} and {last} checked on the GPU; lower dt or the stiffness.", first_nan)
        if first_fast != INT_MAX:
            speed = float(np.sqrt(np.int32(max_speed2_bits).view(np.float32)))
            raise SimulationDiverged(
                f"Runaway energy at step {first_fast} (t = {first_fast * physics.dt:.6g} s), between steps "
                f"{first} and {last} checked on the GPU: a particle moved at up to {speed:.3g} m/s, above the "
                f"limit of {physics.speed_limit:.3g} m/s; lower dt or the stiffness.", first_fast)
        if overflow:
            raise MochiError(spring_overflow_sentence(overflow, f"between steps {first} and {last}"))

    def acceleration(self, step: int) -> np.ndarray:
        """Gravity plus uniform/rotating fields at t = step·dt, float32 (3,) [m/s²]."""
        physics = self.model.physics
        t = step * physics.dt
        return (physics.gravity.at(t) + uniform_acceleration(physics.fields, t)).astype(np.float32)

    def prime(self) -> None:
        """Velocity Verlet's accelerations of the current state (after its forces, with ``history_dt``
        0: see ``BackendGpu``); nothing moves; asynchronous."""
        a = self.acceleration(self.step_index)
        self._verlet_prime(blocks(self.particle_count), (BLOCK,),
                           (self.params, a[0], a[1], a[2], np.int32(self.step_index)))
        self.primed = True

    def verlet_drift(self) -> None:
        """Velocity Verlet's first half-kick and drift, before the forces (no-op with Euler); asynchronous."""
        if self.verlet_on:
            self._verlet_drift(blocks(self.particle_count), (BLOCK,), (self.params, np.int32(self.step_index)))

    def integrate(self) -> None:
        """The update after the forces (walls, fields, open sides): a semi-implicit Euler step, or
        velocity Verlet's second half-kick (``verlet_drift`` did the rest); asynchronous. Verlet's
        accelerations are evaluated at the end of the step, t = (step + 1)·dt, where the positions are."""
        a = self.acceleration(self.step_index + (1 if self.verlet_on else 0))
        self._integrate(blocks(self.particle_count), (BLOCK,),
                        (self.params, a[0], a[1], a[2], np.int32(self.step_index)))
        self.step_index += 1

    def morton_reorder(self) -> None:
        """Permute every slot array along the Morton curve of the current positions; asynchronous."""
        n = np.int32(self.particle_count)
        self._morton(blocks(self.particle_count), (BLOCK,), (self.params, np.int32(MORTON_BITS), self.key))
        self.morton_sorter.sort(self.key)
        order = self.morton_sorter.sorted
        for array in self.slot_arrays4():
            self._gather4(blocks(self.particle_count), (BLOCK,), (array, order, n, self._scratch4))
            array[...] = self._scratch4
        for array in (self.info, self.slot_to_model):
            self._gather1(blocks(self.particle_count), (BLOCK,), (array.view(self.cp.uint32), order, n, self._scratch1))
            array[...] = self._scratch1.view(array.dtype)
        self.model_to_slot[self.slot_to_model] = self.cp.arange(self.particle_count, dtype=self.cp.int32)

    def restore_model_order(self) -> None:
        """Put every slot array back in model order (slot k = particle k); asynchronous. A Morton reorder
        after it depends only on the positions, not on earlier reorders: how the CUDA grid resumes bit
        for bit."""
        order = self.slot_to_model
        for array in (*self.slot_arrays4(), self.info):
            scratch = self.cp.empty_like(array)
            scratch[order] = array
            array[...] = scratch
        self.slot_to_model[:] = self.cp.arange(self.particle_count, dtype=self.cp.int32)
        self.model_to_slot[:] = self.cp.arange(self.particle_count, dtype=self.cp.int32)

    def round_to_world(self) -> None:
        """Round local positions to what a cache frame holds (engine.local_origin; at frame boundaries,
        so that a bake resumed from a frame continues from the same bits); synchronous."""
        if self.origin.any():
            host = self.pos.get()
            host[:, :3] = round_to_world(host[:, :3], self.origin)
            self.pos.set(host)

    def slots_to_model_pairs(self, slot_pairs) -> np.ndarray:
        """Model-index pairs (i < j), int32 (P, 2), rows sorted, from slot pairs (cupy int32 (P, 2))."""
        model = self.slot_to_model[slot_pairs.ravel()].reshape(-1, 2)
        pairs = np.sort(model.get(), axis=1).astype(np.int32)
        if pairs.shape[0] == 0:
            return np.zeros((0, 2), np.int32)
        return pairs[np.lexsort((pairs[:, 1], pairs[:, 0]))]


class PhaseTimer:
    """Build/detect/update times from CUDA events, read once at the end of ``Backend.step``."""

    def __init__(self, cupy):
        self.cp = cupy
        self.marks: list[tuple[str, object, object]] = []

    def mark(self, phase: str, start, end) -> None:
        self.marks.append((phase, start, end))

    def event(self):
        event = self.cp.cuda.Event()
        event.record()
        return event

    def collect(self, timings) -> None:
        """Add the recorded phases to ``timings`` (waits for the last event)."""
        if not self.marks:
            return
        self.marks[-1][2].synchronize()
        for phase, start, end in self.marks:
            seconds = self.cp.cuda.get_elapsed_time(start, end) * 1e-3
            setattr(timings, phase, getattr(timings, phase) + seconds)
        self.marks.clear()
