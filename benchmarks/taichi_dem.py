"""The peer baseline of the benchmarks: a hashed-grid DEM in Taichi with exactly Mochi's physics.

The Mochi paper compares its ray-traced collision detection against the usual GPU DEM approach: a
uniform grid rebuilt every step by a counting sort, each particle then scanning the 27 cells around
its own. This module is that baseline, written the way Taichi's DEM example (taichi-dev/taichi_dem)
builds it, so ``mochi bench`` can be compared with a well-known, independently written code on the
same initial state and the same arch family (Taichi ``cpu`` here, ``cuda`` on a GPU machine).

Pipeline of one step (one Taichi kernel each, no host round trip):

1. ``_count``: cell of every active particle, cell size h = 2 r_max (so every touching pair lies in
   neighbouring cells), hashed into a table of T = 2^k ≥ 2 n buckets; the slot inside its bucket
   comes from an atomic increment of the bucket count (counting sort, pass 1). The hash is the dense
   grid index of the cell (row lengths from the domain box) folded modulo T, so the three cells of
   an x-row are three consecutive buckets and the 27-cell scan reads 9 contiguous ranges.
2. prefix sum of the bucket counts → bucket starts: Taichi's ``PrefixSumExecutor`` on CUDA, a blocked
   two-level scan (parallel over blocks, serial over block sums) on the CPU where Taichi has none.
3. ``_scatter``: sorted particle ids, ``start[bucket] + slot`` (counting sort, pass 2), with a copy of
   centre and radius in that order so the neighbour scan reads memory nearly sequentially.
4. ``_pair_forces``: each particle gathers the force on itself from the 27 neighbour cells (every
   pair is evaluated twice, once from each side, so no atomics on forces). Cells far apart can fold
   onto one bucket; a contact is only taken when the other particle's cell is one of the cells being
   scanned, so no pair is counted twice.
5. ``_integrate``: wall contacts, semi-implicit Euler, open sides.

Physics (identical to ``engine.contact_law`` and ``engine.backends.cpu_kernels``): linear
spring-dashpot normal force f_n = k δ − 2 β sqrt(m_eff k) v_n, β from the averaged restitution of the
two materials (``pair_tables``), contact when d ≤ r_i + r_j; tangential force by
``Physics.friction_model``:

- 'spring' (the engine's default): a tangential spring ξ per contact, born at 0 when the pair starts
  touching, projected onto the current tangent plane and advanced by v_t dt; F_t = −k_t ξ − γ_t v_t
  with k_t = 2/7 k and γ_t = 2 β sqrt(m_eff k_t), capped by μ max(f_n, 0) with ξ shortened while
  sliding. Each particle keeps the springs of its current contacts in ``HISTORY_SLOTS`` slots
  (double-buffered by step parity); every wall side has one spring per particle.
- 'damper': F_t = −min(2 sqrt(m_eff k) |v_t|, μ max(f_n, 0)) v_t/|v_t|, no history.

Walls use the same law with m_eff = m and the wall tables (``wall_tables``), contact when gap ≤ r.
Gravity (uniform or rotating) plus the uniform and rotating force fields are evaluated on the host at
t = step × dt exactly as ``BackendCpu`` does; v += (F/m + g) dt then x += v dt; a particle crossing an
open side becomes inactive (it keeps its last position and velocity and leaves the grid).

Differences, none of them physical: arithmetic is float32 throughout (as on the GPU; the CPU backend
computes in float64 and stores float32), so trajectories agree to float32 round-off, not bit for bit;
sums over neighbours are taken in the order the atomics happened to fill the buckets, so two runs
can differ in the last bits. Position-dependent force fields (vortex, sampled) are not implemented:
a ``Physics`` that has one is refused with a ``MochiError`` rather than silently simulated without it.
There are no divergence checks inside the timed loop (they would need a host sync every step); a
particle with more than ``HISTORY_SLOTS`` simultaneous contacts is reported after the run.

Taichi can be initialised once per process; ``init(arch)`` guards that, and ``run_taichi_dem`` calls
it, so a driver may call ``init`` first (to choose the thread count) or not at all.

CLI::

    python benchmarks/taichi_dem.py --state STATE.ply --physics-json PHYSICS.json --steps 50 --arch cpu

prints one JSON line (timings, arch, versions; ``--out FINAL.ply`` writes the final state).
"""

# No `from __future__ import annotations`: Taichi reads kernel annotations as live objects.
import argparse
import json
import math
import os
import sys
import time

import numpy as np
import taichi as ti

from engine.contact_law import TANGENTIAL_STIFFNESS_RATIO, pair_tables, wall_tables
from engine.errors import MochiError
from engine.fields import uniform_acceleration
from engine.model import Physics, particle_masses

#: Arch names this module accepts, and Taichi's arch for each.
ARCHS = {"cpu": ti.cpu, "cuda": ti.cuda}
#: Tangential springs each particle can hold (its contacts at one step) in the 'spring' friction model.
HISTORY_SLOTS = 16
#: Largest |cell coordinate|; far-flung particles are clamped (clamping keeps neighbours adjacent).
CELL_COORD_LIMIT = 1 << 20

# Taichi holds one runtime per process; this records which arch it was started with. It is the only
# module-level state and holds no simulation data.
_initialised_arch: str | None = None


def init(arch: str = "cpu", *, cpu_threads: int | None = None) -> None:
    """Start Taichi once for this process (later calls with the same arch do nothing).

    Args:
        arch: "cpu" or "cuda".
        cpu_threads: Worker threads of the CPU arch; default every core (``os.cpu_count()``).

    Raises:
        MochiError: an unknown arch, or Taichi already running on another arch.
    """
    global _initialised_arch
    if arch not in ARCHS:
        raise MochiError(f"Unknown Taichi arch '{arch}'; use one of {', '.join(ARCHS)}.")
    if _initialised_arch is not None:
        if _initialised_arch != arch:
            raise MochiError(f"Taichi is already running on '{_initialised_arch}' in this process; "
                             f"start a new process to use '{arch}'.")
        return
    threads = cpu_threads or os.cpu_count() or 1
    ti.init(arch=ARCHS[arch], default_fp=ti.f32, default_ip=ti.i32, cpu_max_num_threads=threads,
            log_level=ti.WARN)
    if arch == "cuda" and ti.lang.impl.current_cfg().arch != ti.cuda:
        raise MochiError("Taichi could not start its CUDA arch on this machine.")
    _initialised_arch = arch


def _next_power_of_two(value: int) -> int:
    return 1 << max(int(value) - 1, 1).bit_length()


@ti.func
def _contact(n: ti.math.vec3, overlap: ti.f32, dv: ti.math.vec3, m_eff: ti.f32, stiffness: ti.f32,
             beta: ti.f32, mu: ti.f32) -> ti.math.vec3:
    """Force on i (engine.contact_law), n the unit normal from j to i, dv = v_i − v_j."""
    root = ti.sqrt(m_eff * stiffness)
    v_n = dv.dot(n)
    f_n = stiffness * overlap - 2.0 * beta * root * v_n
    force = f_n * n
    v_t = dv - v_n * n
    speed_t = v_t.norm()
    if speed_t > 0.0:
        force -= ti.min(2.0 * root * speed_t, mu * ti.max(f_n, 0.0)) / speed_t * v_t
    return force


@ti.func
def _contact_spring(n: ti.math.vec3, overlap: ti.f32, dv: ti.math.vec3, m_eff: ti.f32, stiffness: ti.f32,
                    beta: ti.f32, mu: ti.f32, spring: ti.math.vec3,
                    dt: ti.f32) -> (ti.math.vec3, ti.math.vec3):
    """Force on i and the contact's new tangential spring ξ [m] ('spring' friction model)."""
    root = ti.sqrt(m_eff * stiffness)
    v_n = dv.dot(n)
    f_n = stiffness * overlap - 2.0 * beta * root * v_n
    v_t = dv - v_n * n
    cap = mu * ti.max(f_n, 0.0)
    k_t = TANGENTIAL_STIFFNESS_RATIO * stiffness
    g_t = 2.0 * beta * ti.sqrt(m_eff * k_t)
    xi = spring - spring.dot(n) * n + v_t * dt  # kept in the current tangent plane
    f_t = -k_t * xi - g_t * v_t
    magnitude = f_t.norm()
    if magnitude > cap:
        f_t *= cap / magnitude
        xi = -(f_t + g_t * v_t) / k_t  # sliding: the spring holds exactly the capped force
    return f_n * n + f_t, xi


@ti.data_oriented
class TaichiDem:
    """Device fields of one particle set and the kernels of one step (module docstring).

    Args:
        radius: Radii [m], shape (particle_count,).
        mass: Masses [kg], shape (particle_count,).
        material_index: Material of each particle, shape (particle_count,), int.
        physics: Materials, domain, stiffness, dt and friction model (gravity is passed per step).
        history_slots: Contacts per particle whose tangential spring is kept ('spring' model).
    """

    def __init__(self, radius: np.ndarray, mass: np.ndarray, material_index: np.ndarray, physics: Physics,
                 *, history_slots: int = HISTORY_SLOTS):
        n = int(radius.shape[0])
        material_count = len(physics.materials)
        self.particle_count = n
        self.arch = _initialised_arch
        self.bucket_count = _next_power_of_two(max(2 * n, 1024))
        # Blocked scan on the CPU: ~sqrt(T) blocks of ~sqrt(T) buckets, both passes parallel.
        self.block_size = _next_power_of_two(int(math.sqrt(self.bucket_count)))
        self.block_count = self.bucket_count // self.block_size

        self.pos = ti.Vector.field(3, ti.f32, shape=n)
        self.vel = ti.Vector.field(3, ti.f32, shape=n)
        self.force = ti.Vector.field(3, ti.f32, shape=n)
        self.radius = ti.field(ti.f32, shape=n)
        self.mass = ti.field(ti.f32, shape=n)
        self.material = ti.field(ti.i32, shape=n)
        self.active = ti.field(ti.i32, shape=n)
        self.cell = ti.Vector.field(3, ti.i32, shape=n)
        self.bucket = ti.field(ti.i32, shape=n)
        self.slot = ti.field(ti.i32, shape=n)
        self.sorted_id = ti.field(ti.i32, shape=n)
        # Centre and radius in bucket order: the 27-cell scan then reads memory nearly sequentially.
        self.sorted_sphere = ti.Vector.field(4, ti.f32, shape=n)
        self.counts = ti.field(ti.i32, shape=self.bucket_count)
        self.start = ti.field(ti.i32, shape=self.bucket_count + 1)
        self.block_sum = ti.field(ti.i32, shape=self.block_count)
        self.block_start = ti.field(ti.i32, shape=self.block_count)
        self.beta = ti.field(ti.f32, shape=(material_count, material_count))
        self.mu = ti.field(ti.f32, shape=(material_count, material_count))
        self.wall_beta = ti.field(ti.f32, shape=material_count)
        self.wall_mu = ti.field(ti.f32, shape=material_count)
        self.lo = ti.Vector.field(3, ti.f32, shape=())
        self.hi = ti.Vector.field(3, ti.f32, shape=())
        self.wall = ti.field(ti.i32, shape=6)
        # Tangential springs ('spring' model): per particle, the other particle and ξ of each contact,
        # double-buffered by step parity (read last step's, write this step's); walls per side. Each
        # side of a pair keeps its own copy; ξ_ji = −ξ_ij exactly since every update is odd in n, v_t.
        self.spring = physics.friction_model == "spring"
        self.history_slots = history_slots
        slots = (n, history_slots) if self.spring else (1, 1)
        self.history_j = ti.field(ti.i32, shape=(2,) + slots)
        self.history_xi = ti.Vector.field(3, ti.f32, shape=(2,) + slots)
        self.history_count = ti.field(ti.i32, shape=(2, slots[0]))
        self.wall_xi = ti.Vector.field(3, ti.f32, shape=(slots[0], 6))
        self.overflow = ti.field(ti.i32, shape=())
        self.parity = 0
        self.scan = None
        if self.arch == "cuda":
            self.inclusive = ti.field(ti.i32, shape=self.bucket_count)
            self.scan = ti.algorithms.PrefixSumExecutor(self.bucket_count)

        self.radius.from_numpy(np.ascontiguousarray(radius, np.float32))
        self.mass.from_numpy(np.ascontiguousarray(mass, np.float32))
        self.material.from_numpy(np.ascontiguousarray(material_index, np.int32))
        beta, mu = pair_tables(physics.materials)
        self.beta.from_numpy(beta)
        self.mu.from_numpy(mu)
        wall_beta, wall_mu = wall_tables(physics.materials, physics.domain.wall_restitution,
                                         physics.domain.wall_friction)
        self.wall_beta.from_numpy(wall_beta)
        self.wall_mu.from_numpy(wall_mu)
        self.lo[None] = [float(v) for v in physics.domain.lo]
        self.hi[None] = [float(v) for v in physics.domain.hi]
        self.wall.from_numpy(physics.domain.wall_mask().astype(np.int32))
        self.stiffness = float(physics.stiffness)
        self.dt = float(physics.dt)
        cell_size = 2.0 * float(np.max(radius))
        self.inv_cell = 1.0 / cell_size
        # Row lengths of the linear cell key: the domain's cell counts, so that inside the domain the
        # key is the dense grid index (folded modulo T when the grid has more cells than buckets).
        dims = np.ceil(physics.domain.size / cell_size).astype(np.int64) + 1
        self.row_x = int(dims[0])
        self.row_xy = int(dims[0] * dims[1]) % (1 << 31)

    def set_state(self, positions: np.ndarray, velocities: np.ndarray, active: np.ndarray) -> None:
        """Upload positions [m] and velocities [m/s] (n, 3) and activity (n,)."""
        self.pos.from_numpy(np.ascontiguousarray(positions, np.float32))
        self.vel.from_numpy(np.ascontiguousarray(velocities, np.float32))
        self.active.from_numpy(np.ascontiguousarray(active, np.int32))
        # A state restored from outside starts with no tangential springs, as BackendCpu.set_state.
        self.history_count.fill(0)
        self.wall_xi.fill(0.0)
        self.overflow[None] = 0
        self.parity = 0

    def history_overflowed(self) -> bool:
        """Whether some particle had more contacts than ``history_slots`` (its extra springs lost)."""
        return self.overflow[None] > 0

    def get_state(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(positions float32 (n, 3), velocities float32 (n, 3), active uint8 (n,))."""
        return (self.pos.to_numpy().astype(np.float32), self.vel.to_numpy().astype(np.float32),
                self.active.to_numpy().astype(np.uint8))

    def step(self, accel: np.ndarray) -> None:
        """One step under the uniform acceleration ``accel`` [m/s²], shape (3,)."""
        self._count(self.inv_cell)
        if self.scan is not None:
            self._copy_counts()
            self.scan.run(self.inclusive)  # inclusive, in place
            self._shift_starts()
        else:
            self._scan_blocks()
            self._scan_block_sums()
            self._scan_local()
        self._scatter()
        self._pair_forces(self.stiffness, self.dt, self.parity, 1 - self.parity)
        self.parity = 1 - self.parity
        self._integrate(float(accel[0]), float(accel[1]), float(accel[2]), self.dt, self.stiffness)

    @ti.func
    def _hash(self, c: ti.math.ivec3) -> ti.i32:
        # Dense linear cell index folded onto the table (i32 wrap-around included): the three cells
        # of an x-row land in three consecutive buckets, so the 27-cell scan reads 9 ranges.
        return (c[0] + self.row_x * c[1] + self.row_xy * c[2]) & (self.bucket_count - 1)

    @ti.kernel
    def _count(self, inv_cell: ti.f32):
        for b in self.counts:
            self.counts[b] = 0
        for i in self.pos:
            self.sorted_id[i] = -1
            if self.active[i]:
                c = ti.floor((self.pos[i] - self.lo[None]) * inv_cell, ti.i32)
                c = ti.math.clamp(c, -CELL_COORD_LIMIT, CELL_COORD_LIMIT)
                self.cell[i] = c
                b = self._hash(c)
                self.bucket[i] = b
                self.slot[i] = ti.atomic_add(self.counts[b], 1)

    @ti.kernel
    def _copy_counts(self):
        for b in self.counts:
            self.inclusive[b] = self.counts[b]

    @ti.kernel
    def _shift_starts(self):
        # Inclusive sums → exclusive bucket starts, start[T] being the active count.
        for b in self.inclusive:
            self.start[b + 1] = self.inclusive[b]
        self.start[0] = 0

    @ti.kernel
    def _scan_blocks(self):
        for blk in self.block_sum:
            total = 0
            for k in range(self.block_size):
                total += self.counts[blk * self.block_size + k]
            self.block_sum[blk] = total

    @ti.kernel
    def _scan_block_sums(self):
        ti.loop_config(serialize=True)
        running = 0
        for blk in range(self.block_count):
            self.block_start[blk] = running
            running += self.block_sum[blk]
        self.start[self.bucket_count] = running

    @ti.kernel
    def _scan_local(self):
        for blk in self.block_sum:
            running = self.block_start[blk]
            for k in range(self.block_size):
                b = blk * self.block_size + k
                self.start[b] = running
                running += self.counts[b]

    @ti.kernel
    def _scatter(self):
        for i in self.pos:
            if self.active[i]:
                q = self.start[self.bucket[i]] + self.slot[i]
                self.sorted_id[q] = i
                x = self.pos[i]
                self.sorted_sphere[q] = ti.math.vec4(x[0], x[1], x[2], self.radius[i])

    @ti.func
    def _gather(self, i: ti.i32, row_first: ti.math.ivec3, span: ti.i32, begin: ti.i32, end: ti.i32,
                stiffness: ti.f32, dt: ti.f32, old: ti.i32, new: ti.i32) -> ti.math.vec3:
        """Force on i from the sorted entries begin..end whose cell lies in the x-row of cells
        row_first .. row_first + (span, 0, 0); other cells folded onto those buckets are skipped, they
        are gathered when their own row is scanned, so no pair counts twice."""
        xi = self.pos[i]
        ri = self.radius[i]
        mi = self.mass[i]
        mat_i = self.material[i]
        total = ti.math.vec3(0.0, 0.0, 0.0)
        for p in range(begin, end):
            sphere = self.sorted_sphere[p]
            delta = xi - sphere.xyz
            reach = ri + sphere[3]
            d2 = delta.dot(delta)
            j = self.sorted_id[p]
            if j != i and d2 <= reach * reach:
                cj = self.cell[j]
                if cj[1] == row_first[1] and cj[2] == row_first[2] and row_first[0] <= cj[0] <= row_first[0] + span:
                    dist = ti.sqrt(d2)
                    normal = ti.math.vec3(1.0, 0.0, 0.0)
                    if dist > 0.0:
                        normal = delta / dist
                    mj = self.mass[j]
                    mat_j = self.material[j]
                    m_eff = mi * mj / (mi + mj)
                    dv = self.vel[i] - self.vel[j]
                    if ti.static(self.spring):
                        xi_t = ti.math.vec3(0.0, 0.0, 0.0)  # a new contact's spring is born at 0
                        for s in range(self.history_count[old, i]):
                            if self.history_j[old, i, s] == j:
                                xi_t = self.history_xi[old, i, s]
                        f, xi_t = _contact_spring(normal, reach - dist, dv, m_eff, stiffness,
                                                  self.beta[mat_i, mat_j], self.mu[mat_i, mat_j], xi_t, dt)
                        total += f
                        slot = self.history_count[new, i]
                        if slot < self.history_slots:
                            self.history_j[new, i, slot] = j
                            self.history_xi[new, i, slot] = xi_t
                            self.history_count[new, i] = slot + 1
                        else:
                            self.overflow[None] += 1
                    else:
                        total += _contact(normal, reach - dist, dv, m_eff, stiffness, self.beta[mat_i, mat_j],
                                          self.mu[mat_i, mat_j])
        return total

    @ti.kernel
    def _pair_forces(self, stiffness: ti.f32, dt: ti.f32, old: ti.i32, new: ti.i32):
        # Walk particles in bucket order so neighbouring threads read neighbouring cells.
        for q in self.sorted_id:
            i = self.sorted_id[q]
            if i >= 0:
                ci = self.cell[i]
                if ti.static(self.spring):
                    self.history_count[new, i] = 0
                total = ti.math.vec3(0.0, 0.0, 0.0)
                for row in range(9):
                    c = ci + ti.math.ivec3(-1, row // 3 - 1, row % 3 - 1)
                    b = self._hash(c)
                    if b + 2 < self.bucket_count:
                        # The row's three cells are buckets b, b+1, b+2: one contiguous range.
                        total += self._gather(i, c, 2, self.start[b], self.start[b + 3], stiffness, dt,
                                              old, new)
                    else:
                        for dx in range(3):
                            cell = c + ti.math.ivec3(dx, 0, 0)
                            bw = self._hash(cell)
                            total += self._gather(i, cell, 0, self.start[bw], self.start[bw + 1], stiffness,
                                                      dt, old, new)
                self.force[i] = total

    @ti.kernel
    def _integrate(self, ax: ti.f32, ay: ti.f32, az: ti.f32, dt: ti.f32, stiffness: ti.f32):
        for i in self.pos:
            if self.active[i]:
                m = self.mass[i]
                r = self.radius[i]
                mat = self.material[i]
                x = self.pos[i]
                f = self.force[i]
                for side in range(6):
                    if self.wall[side]:
                        axis = side // 2
                        sign = 1.0
                        gap = x[axis] - self.lo[None][axis]
                        if side % 2 == 1:
                            sign = -1.0
                            gap = self.hi[None][axis] - x[axis]
                        overlap = r - gap
                        if overlap >= 0.0:
                            normal = ti.math.vec3(0.0, 0.0, 0.0)
                            normal[axis] = sign
                            if ti.static(self.spring):
                                f_wall, xi_wall = _contact_spring(normal, overlap, self.vel[i], m, stiffness,
                                                                  self.wall_beta[mat], self.wall_mu[mat],
                                                                  self.wall_xi[i, side], dt)
                                f += f_wall
                                self.wall_xi[i, side] = xi_wall
                            else:
                                f += _contact(normal, overlap, self.vel[i], m, stiffness, self.wall_beta[mat],
                                              self.wall_mu[mat])
                        else:
                            if ti.static(self.spring):
                                self.wall_xi[i, side] = ti.math.vec3(0.0, 0.0, 0.0)
                v = self.vel[i] + (f / m + ti.math.vec3(ax, ay, az)) * dt
                x += v * dt
                self.vel[i] = v
                self.pos[i] = x
                for axis in range(3):
                    if (self.wall[2 * axis] == 0 and x[axis] < self.lo[None][axis]) or \
                            (self.wall[2 * axis + 1] == 0 and x[axis] > self.hi[None][axis]):
                        self.active[i] = 0


def _check_physics(physics: Physics) -> None:
    if physics.friction_model not in ("spring", "damper"):
        raise MochiError(f"The Taichi peer does not know the friction model '{physics.friction_model}'; "
                         "use 'spring' or 'damper'.")
    if physics.rotation or physics.integrator != "euler":
        raise MochiError("The Taichi peer runs the paper's model (grains that do not rotate, semi-implicit "
                         "Euler); set rotation = false and integrator = \"euler\" to compare with it.")
    unsupported = [f.kind for f in physics.fields if f.kind not in ("uniform", "rotating")]
    if unsupported:
        raise MochiError(f"The Taichi peer does not implement {', '.join(sorted(set(unsupported)))} force "
                         "fields; remove them from the physics to compare.")


def accelerations(physics: Physics, start_step: int, steps: int) -> np.ndarray:
    """Gravity plus uniform/rotating fields at t = step × dt for each step, float64 (steps, 3) [m/s²]."""
    out = np.empty((steps, 3))
    for s in range(steps):
        t = (start_step + s) * physics.dt
        out[s] = physics.gravity.at(t) + uniform_acceleration(physics.fields, t)
    return out


def run_taichi_dem(positions: np.ndarray, velocities: np.ndarray, radius: np.ndarray, mass: np.ndarray,
                   material_index: np.ndarray, physics: Physics, *, steps: int, arch: str = "cpu",
                   warmup_steps: int = 5, active: np.ndarray | None = None, start_step: int = 0,
                   history_slots: int = HISTORY_SLOTS) -> dict:
    """Simulate ``steps`` steps with the Taichi peer and time them.

    Warm-up steps (which compile the kernels) run first from the initial state; the state is then
    restored and the ``steps`` steps are timed from a ``ti.sync()`` to the final state's arrival on
    the host (as ``engine.benchmark.run_benchmark`` times ``mochi bench``), so the returned state is
    the initial state advanced by exactly ``steps`` steps.

    Args:
        positions: Centres [m], shape (particle_count, 3).
        velocities: Velocities [m/s], shape (particle_count, 3).
        radius: Radii [m], shape (particle_count,).
        mass: Masses [kg], shape (particle_count,).
        material_index: Index into ``physics.materials``, shape (particle_count,).
        physics: Materials, domain, gravity, uniform/rotating fields, stiffness, dt, friction model.
        steps: Steps to time.
        arch: "cpu" or "cuda" (Taichi starts on it on first use; see ``init``).
        warmup_steps: Untimed steps run before (kernel compilation happens there).
        active: Initial activity (1 simulated, 0 not), shape (particle_count,); default all 1.
        start_step: Global step index of the initial state (sets the phase of rotating gravity).
        history_slots: Contacts per particle whose tangential spring is kept ('spring' model).

    Returns:
        dict with seconds (for ``steps`` steps) [s], ms_per_step, particle_steps_per_s,
        positions float32 (n, 3), velocities float32 (n, 3), active uint8 (n,), arch,
        taichi_version, particle_count, steps, friction_model.

    Raises:
        MochiError: unsupported force fields or friction model, mismatched shapes, an arch Taichi
            cannot start, or a particle with more than ``history_slots`` contacts.
    """
    _check_physics(physics)
    n = int(np.asarray(radius).shape[0])
    if np.asarray(positions).shape != (n, 3) or np.asarray(velocities).shape != (n, 3):
        raise MochiError(f"Positions {np.asarray(positions).shape} and velocities "
                         f"{np.asarray(velocities).shape} must both have shape ({n}, 3).")
    init(arch)
    active = np.ones(n, np.uint8) if active is None else np.asarray(active)
    dem = TaichiDem(radius, mass, material_index, physics, history_slots=history_slots)
    warm = accelerations(physics, start_step, warmup_steps)
    timed = accelerations(physics, start_step, steps)
    dem.set_state(positions, velocities, active)
    for accel in warm:
        dem.step(accel)
    dem.set_state(positions, velocities, active)
    ti.sync()
    t0 = time.perf_counter()
    for accel in timed:
        dem.step(accel)
    final_pos, final_vel, final_active = dem.get_state()  # waits for the device
    seconds = time.perf_counter() - t0
    if dem.history_overflowed():
        raise MochiError(f"A particle had more than {history_slots} contacts at once; raise history_slots "
                         "so that every tangential spring is kept.")
    return {
        "seconds": seconds,
        "ms_per_step": 1e3 * seconds / max(steps, 1),
        "particle_steps_per_s": n * steps / seconds if seconds > 0 else float("inf"),
        "positions": final_pos,
        "velocities": final_vel,
        "active": final_active,
        "arch": arch,
        "taichi_version": ".".join(str(v) for v in ti.__version__),
        "particle_count": n,
        "steps": steps,
        "friction_model": physics.friction_model,
    }


def _read_state(path: str, physics: Physics):
    """(positions, velocities, radius, mass, material_index) from a PLY (x y z radius [vx vy vz] [material])."""
    from engine.ply import read_particles, read_points

    positions, radius, velocities = read_particles(path)
    if velocities is None:
        velocities = np.zeros_like(positions)
    columns = read_points(path)
    material = columns["material"].astype(np.int32) if "material" in columns else np.zeros(len(radius), np.int32)
    if material.min() < 0 or material.max() >= len(physics.materials):
        raise MochiError(f"'{path}' refers to material {int(material.max())}, but the physics defines "
                         f"{len(physics.materials)}.")
    return positions, velocities, radius, particle_masses(radius, material, physics.materials), material


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Time the Taichi hashed-grid DEM peer on a state.")
    parser.add_argument("--state", required=True, help="PLY with x y z radius, optional vx vy vz, material")
    parser.add_argument("--physics-json", required=True, help="JSON written by Physics.to_json()")
    parser.add_argument("--steps", type=int, default=50, help="timed steps")
    parser.add_argument("--warmup-steps", type=int, default=5, help="untimed steps run first")
    parser.add_argument("--arch", choices=sorted(ARCHS), default="cpu")
    parser.add_argument("--cpu-threads", type=int, default=None, help="default: every core")
    parser.add_argument("--out", default=None, help="write the final state to this PLY")
    args = parser.parse_args(argv)
    try:
        try:
            with open(args.physics_json, encoding="utf-8") as handle:
                physics = Physics.from_json(json.load(handle))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise MochiError(f"'{args.physics_json}' is not a readable Physics JSON ({exc}).") from None
        positions, velocities, radius, mass, material = _read_state(args.state, physics)
        init(args.arch, cpu_threads=args.cpu_threads)
        result = run_taichi_dem(positions, velocities, radius, mass, material, physics, steps=args.steps,
                                arch=args.arch, warmup_steps=args.warmup_steps)
    except MochiError as exc:
        print(f"taichi_dem: error: {exc}", file=sys.stderr)
        return 2
    if args.out:
        from engine.ply import write_points

        p, v = result["positions"], result["velocities"]
        write_points(args.out, {"x": p[:, 0], "y": p[:, 1], "z": p[:, 2], "radius": radius.astype(np.float32),
                                "vx": v[:, 0], "vy": v[:, 1], "vz": v[:, 2], "material": material.astype(np.uint8),
                                "active": result["active"]})
    summary = {key: value for key, value in result.items() if not isinstance(value, np.ndarray)}
    summary["threads"] = args.cpu_threads or os.cpu_count() if args.arch == "cpu" else None
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
