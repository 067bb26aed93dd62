"""Mesh colliders on the GPU: the launcher of kernels/colliders.cu for the CUDA grid and OptiX backends.

Every step, after the grain–grain forces and around the update (the CPU backend's order):

1. ``add_forces(step)``: each collider is moved to t = step·dt on the host (its motion, vertex
   velocities and BVH refit/rebuild: ``engine.colliders.ColliderSet.advance``, the CPU reference's own
   code) and uploaded if it moved; one ``collider_forces`` launch adds every collider's contact forces
   to the slots' forces (summed per grain in double, rounded once);
2. ``remember_positions()``: the centres before the update, for the swept test;
3. ``sweep(step + 1)``: each collider is moved to the end of the step and ``collider_sweep`` (one
   launch per collider, in order) puts back every grain whose centre path crossed its surface.

The per-grain code (kernels/collider_geometry.h and collider_contacts.h, which the rt backend's Slang
kernel includes too, through kernels/collider_math.cuh) is the numba reference's line for line in double
precision, compiled without fused multiply-adds, so on the same grain state a GPU finds the CPU's
contacts, each collider's force sum and its springs to the bit; trajectories still differ in the last
bits because the grain–grain kernels work in float32 and the GPU adds the collider sums to a float32
force.

Static friction (friction_model 'spring', as the CPU reference decides it) and rolling resistance
(some collider μ_r > 0 with rotating grains): every collider keeps, per grain and contact slot, the
tangential and rolling springs, float64 (n, MAX_CONTACTS, 6), the normal they were last used with,
float64 (n, MAX_CONTACTS, 3), and the slots in use, int32 (n,), by model index, so slot reorders never
move them (kernels/dem_params.h ``ColliderParams``): 292 bytes per grain and collider, as the CPU
reference keeps them. SJKR cohesion needs no history: each collider's μ_r and c per material
(``ColliderSet.surface_tables``, mixed as against a wall) go up with its β and μ. ``get_history``/``set_history`` convert them to
and from the CPU's history format (``engine.colliders.collider_set.history_from_springs``), with the
moving colliders' tree orders, so a bake resumes from either backend's cache.

The colliders' motion state is this object's own (``ColliderSet.fresh_copy``), so a CPU backend on
the same model is not disturbed. Nothing here imports CuPy at module import time.
"""

from __future__ import annotations

import numpy as np

from ..colliders import ColliderSet
from ..colliders import kernels as collider_kernels
from ..colliders.collider_set import history_from_springs, springs_from_history
from ..contact_law import TANGENTIAL_STIFFNESS_RATIO
from ..packing.queries import STACK_DEPTH
from .gpu_params import COLLIDER_PARAMS_DTYPE
from .gpu_toolchain import BLOCK, blocks, raw_module

#: NVRTC options of kernels/colliders.cu: IEEE rounding of every operation, as numba does it.
COLLIDER_OPTIONS = ("--fmad=false",)


def collider_defines() -> tuple[str, ...]:
    """The ``-D`` definitions that give kernels/collider_math.cuh the CPU reference's constants."""
    k = collider_kernels
    return (f"COLLIDER_MAX_CONTACTS={k.MAX_CONTACTS}", f"COLLIDER_MAX_CANDIDATES={k.MAX_CANDIDATES}",
            f"COLLIDER_STACK_DEPTH={STACK_DEPTH}", f"COLLIDER_SWEEP_PASSES={k.SWEEP_PASSES}",
            f"COLLIDER_EDGE_TOLERANCE={k.EDGE_TOLERANCE!r}",
            f"COLLIDER_ON_TRIANGLE_TOLERANCE={k.ON_TRIANGLE_TOLERANCE!r}", f"COLLIDER_MATCH_COS={k.MATCH_COS!r}")


def tree_arrays_int32(tree) -> dict[str, np.ndarray]:
    """A ``ColliderTree``'s arrays as the kernels take them: int32 topology, float64 boxes."""
    return {"order": np.ascontiguousarray(tree.order, np.int32), "box_lo": np.ascontiguousarray(tree.box_lo),
            "box_hi": np.ascontiguousarray(tree.box_hi), "left": np.ascontiguousarray(tree.left, np.int32),
            "start": np.ascontiguousarray(tree.start, np.int32), "count": np.ascontiguousarray(tree.count, np.int32)}


def fill_collider_params(record, arrays: dict, *, pointer, half_thickness: float, stiffness: float,
                         dt: float = 0.0, spring_model: bool = False, rolling_model: bool = False) -> None:
    """Write one ``ColliderParams`` record (a ``COLLIDER_PARAMS_DTYPE`` element).

    Args:
        record: The structured element to fill.
        arrays: Every pointer field's array, by field name (device or host arrays); ``springs``,
            ``normals`` and ``contact_count`` only with ``spring_model`` or ``rolling_model``; ``roll``
            and ``cohesion`` (M,) float64 always.
        pointer: Address of an array (``lambda a: a.data.ptr`` for CuPy, ``a.ctypes.data`` for numpy).
        half_thickness: thickness / 2 [m]; stiffness: normal stiffness k [N/m]; dt: time step [s].
        spring_model: Tangential springs with history (friction_model 'spring').
        rolling_model: Rolling springs (some μ_r > 0 against this collider set).
    """
    for name in COLLIDER_PARAMS_DTYPE.names:
        if name in arrays:
            record[name] = pointer(arrays[name])
    record["half_thickness"] = half_thickness
    record["stiffness"] = stiffness
    record["dt"] = dt
    record["tangential_ratio"] = TANGENTIAL_STIFFNESS_RATIO
    record["spring_model"] = int(spring_model)
    record["rolling_model"] = int(rolling_model)


def uses_collider_springs(physics) -> bool:
    """Grain–collider contacts keep springs: friction_model 'spring', as ``ColliderSet.add_forces`` decides."""
    return physics.friction_model == "spring"


def spring_arrays(cupy, particle_count: int) -> dict:
    """One collider's springs on the device, zero (``ColliderParams`` springs (n, MAX_CONTACTS, 6),
    normals (n, MAX_CONTACTS, 3), contact_count (n,))."""
    shape = (particle_count, collider_kernels.MAX_CONTACTS, 3)
    return {"springs": cupy.zeros((*shape[:2], 6), cupy.float64), "normals": cupy.zeros(shape, cupy.float64),
            "contact_count": cupy.zeros(particle_count, cupy.int32)}


class DeviceColliderMesh:
    """One collider's arrays and launch parameters on the device."""

    def __init__(self, cupy, runtime, beta: np.ndarray, mu: np.ndarray, restitution: np.ndarray, old_pos,
                 corrections, physics, particle_count: int, *, roll: np.ndarray, cohesion: np.ndarray,
                 rolling: bool):
        self.cp = cupy
        collider = runtime.collider
        vertex_count = collider.vertices.shape[0]
        tree = tree_arrays_int32(runtime.tree)
        self.arrays = {
            "vertices": cupy.zeros((vertex_count, 3), cupy.float64),
            "vertex_velocity": cupy.zeros((vertex_count, 3), cupy.float64),
            "displacement": cupy.zeros((vertex_count, 3), cupy.float64),
            "triangles": cupy.asarray(np.ascontiguousarray(collider.triangles, np.int32)),
            **{name: cupy.asarray(value) for name, value in tree.items()},
            "beta": cupy.asarray(np.ascontiguousarray(beta, np.float64)),
            "mu": cupy.asarray(np.ascontiguousarray(mu, np.float64)),
            "restitution": cupy.asarray(np.ascontiguousarray(restitution, np.float64)),
            "roll": cupy.asarray(np.ascontiguousarray(roll, np.float64)),
            "cohesion": cupy.asarray(np.ascontiguousarray(cohesion, np.float64)),
            "old_pos": old_pos,
            "corrections": corrections,
        }
        self.tangential_on = uses_collider_springs(physics)
        self.rolling_on = rolling
        self.springs_on = self.tangential_on or rolling  # the slots' history rows exist
        if self.springs_on:
            self.arrays.update(spring_arrays(cupy, particle_count))
        #: This collider's ``ColliderParams`` (host copy; ``DeviceColliders`` uploads them all).
        self.host_params = np.zeros(1, COLLIDER_PARAMS_DTYPE)
        fill_collider_params(self.host_params[0], self.arrays, pointer=lambda a: a.data.ptr,
                             half_thickness=0.5 * collider.thickness, stiffness=float(physics.stiffness),
                             dt=float(physics.dt), spring_model=self.tangential_on, rolling_model=rolling)
        self.moving = collider.moving
        self.uploaded_time: float | None = None
        self.displacement_max = 0.0

    def upload(self, runtime) -> None:
        """Copy the collider at ``runtime.time`` (vertices, velocities, step displacement, tree) if it moved."""
        if self.uploaded_time == runtime.time or (not self.moving and self.uploaded_time is not None):
            return
        displacement, self.displacement_max = runtime.displacement()
        self.arrays["vertices"].set(np.ascontiguousarray(runtime.vertices, np.float64))
        self.arrays["vertex_velocity"].set(np.ascontiguousarray(runtime.velocities, np.float64))
        self.arrays["displacement"].set(np.ascontiguousarray(displacement, np.float64))
        # A median-split tree's layout (left, start, count) never changes: only its order and boxes.
        tree = runtime.tree
        self.arrays["order"].set(np.ascontiguousarray(tree.order, np.int32))
        self.arrays["box_lo"].set(np.ascontiguousarray(tree.box_lo))
        self.arrays["box_hi"].set(np.ascontiguousarray(tree.box_hi))
        self.uploaded_time = runtime.time


class DeviceColliders:
    """A model's mesh colliders on the device and the three hooks of a GPU step (module docstring).

    Args:
        colliders: The model's ``ColliderSet``.
        particles: The backend's ``gpu_runtime.DeviceParticles``.
    """

    def __init__(self, colliders: ColliderSet, particles):
        cupy = particles.cp
        self.cp = cupy
        self.particles = particles
        physics = particles.model.physics
        self.dt = float(physics.dt)
        self.set = colliders.fresh_copy()
        beta, mu, restitution = self.set.material_tables(physics)
        roll, cohesion = self.set.surface_tables(physics)
        rolling = bool(roll.any())  # one switch for every collider: the history rows have one layout
        self.old_pos = cupy.zeros((particles.particle_count, 4), cupy.float32)
        self.corrections = cupy.zeros(1, cupy.uint32)
        runtimes = self.set.advance(0.0)  # builds every tree (any time: only the topology is kept)
        self.meshes = [DeviceColliderMesh(cupy, runtime, beta[index], mu[index], restitution[index], self.old_pos,
                                          self.corrections, physics, particles.particle_count, roll=roll[index],
                                          cohesion=cohesion[index], rolling=rolling)
                       for index, runtime in enumerate(runtimes)]
        # All colliders' parameters in one array (the forces kernel loops over them per grain) and
        # each one's on its own (the swept test runs one collider at a time, as the CPU does).
        records = np.concatenate([mesh.host_params for mesh in self.meshes])
        self.params_all = cupy.asarray(records.view(np.uint8))
        self.params_each = [cupy.asarray(mesh.host_params.view(np.uint8)) for mesh in self.meshes]
        module = raw_module("colliders.cu", defines=collider_defines(), options=COLLIDER_OPTIONS)
        self.module = module
        self._forces = module.get_function("collider_forces")
        self._sweep = module.get_function("collider_sweep")
        self.reset()

    @classmethod
    def for_model(cls, particles, **options) -> DeviceColliders | None:
        """The colliders of ``particles.model`` on the device, or None when it has none."""
        colliders = particles.model.colliders
        return None if colliders is None else cls(colliders, particles, **options)

    def reset(self) -> None:
        """Forget the motion state and the contact springs (a new particle state was uploaded)."""
        self.set.reset_history()
        for mesh in self.meshes:
            mesh.uploaded_time = None
            if mesh.springs_on:
                for name in ("springs", "normals", "contact_count"):
                    mesh.arrays[name].fill(0)

    def get_history(self) -> dict[str, np.ndarray]:
        """The grain–collider springs and the moving colliders' tree orders in the CPU backend's history
        format (``ColliderSet.get_history``); synchronises. No springs without friction_model 'spring' or
        rolling resistance."""
        history = {name: value for name, value in self.set.get_history().items()
                   if name.startswith("collider_tree_")}
        if self.meshes[0].springs_on:
            springs, normals, counts = (np.stack([mesh.arrays[name].get() for mesh in self.meshes])
                                        for name in ("springs", "normals", "contact_count"))
            history.update(history_from_springs(springs, normals, counts))
        return history

    def set_history(self, history: dict) -> None:
        """Restore what ``get_history`` (or the CPU backend) returned, replacing every spring and tree
        (after a ``reset``, as ``set_state`` does). Missing keys mean none; springs are ignored without
        friction_model 'spring' or rolling resistance."""
        self.reset()
        self.set.set_history(history)
        if self.meshes[0].springs_on and "collider_index" in history:
            n = self.particles.particle_count
            shape = (len(self.meshes), n, collider_kernels.MAX_CONTACTS, 3)
            springs, normals = np.zeros((*shape[:3], 6)), np.zeros(shape)
            counts = np.zeros(shape[:2], np.int32)
            springs_from_history(history, springs, normals, counts)
            for index, mesh in enumerate(self.meshes):
                mesh.arrays["springs"].set(springs[index])
                mesh.arrays["normals"].set(normals[index])
                mesh.arrays["contact_count"].set(counts[index])

    def _advance(self, step: int) -> tuple:
        """Move the colliders to t = step·dt and upload those that moved; their runtimes."""
        runtimes = self.set.advance(step * self.dt)
        for mesh, runtime in zip(self.meshes, runtimes):
            mesh.upload(runtime)
        return runtimes

    def add_forces(self, step: int) -> None:
        """Add every collider's contact forces at t = step·dt to the slots' forces (queued on the current
        stream; uploading a moving collider waits for the GPU, as ``ndarray.set`` does)."""
        self._advance(step)
        p = self.particles
        self._forces(blocks(p.particle_count), (BLOCK,), (p.params, self.params_all, np.int32(len(self.meshes))))

    def remember_positions(self) -> None:
        """Keep the centres before the update for the swept test (queued on the current stream)."""
        self.old_pos[...] = self.particles.pos

    def sweep(self, step: int) -> None:
        """Swept test against every collider at t = step·dt, the end of the step (queued like ``add_forces``)."""
        self._advance(step)
        p = self.particles
        for mesh, params in zip(self.meshes, self.params_each):
            self._sweep(blocks(p.particle_count), (BLOCK,), (p.params, params, np.float64(mesh.displacement_max)))

    @property
    def swept_corrections(self) -> int:
        """Grains the swept test has put back so far (synchronises)."""
        return int(self.corrections.get()[0])
