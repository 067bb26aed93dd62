"""The rt backend's mesh colliders on the host: each collider's triangles in an acceleration structure of its
own, the per-grain contact springs on the device, and their launches (kernels/rt_colliders.slang).

The OptiX backend's design (kernels/optix_colliders.cu) in Slang: the triangles of a collider are procedural
boxes widened by the largest reach r + thickness/2 (rounded outwards, as ``collider_triangle_aabb``), in a
BLAS under one TLAS instance, apart from the grains' structure (engine.backends.rt_detect), which is rebuilt
every few steps while a static collider's never changes. The boxes are stored in Morton order of the
triangles' centroids (Mesa's lavapipe splits the primitive list at its index midpoint without sorting) and
``g_col_order`` maps a box back to its triangle, whose index alone decides every tie.

Every step, around the grains' own kernels (the CPU backend's order, ``engine.colliders.ColliderSet``):

1. ``add_forces(bindings)`` before ``rt_step_forces``: one ``rt_collider_forces`` dispatch per collider, in
   order: a point ray per centre gathers the candidate triangles, which are resolved into the distinct
   touching spots, their forces, torques and springs, in double precision by the CUDA kernels' own source
   (kernels/collider_geometry.h, collider_contacts.h) as the CPU reference evaluates them; the sums are rounded once into ``force`` / ``torque``, which ``rt_step_forces``
   adds after the pairs and bonds and before the walls;
2. ``remember(bindings)`` before the update (Euler's integrate, Verlet's drift): the centres it starts from;
3. ``sweep(bindings)`` after it: one ``rt_collider_sweep`` per collider, a ray along each centre's path puts
   back the grains that crossed a surface during the step.

The springs (ξ and ξ_r per grain, collider and contact slot, with the normal they were last used with and the
slots in use) stay on the device in float64, and travel in the CPU backend's history keys
(``engine.colliders.collider_set.history_from_springs``), so a resume is bit for bit and a CPU history
resumes on rt exactly. Moving colliders are moved on the host by the CPU backend's own code
(``ColliderSet.advance``, on a copy of the model's colliders), to the step's time before the forces and to
its end before the swept test, as the CPU moves them; each time a moving collider's vertices, their
velocities and displacement are uploaded and its structure is built again (boxes widened by the
displacement too: the OptiX backend's refit, as a rebuild). float64 in shaders is needed (Metal has none:
refused in one sentence), and inline ray queries.
"""

from __future__ import annotations

import numpy as np

from ..colliders import kernels as collider_kernels
from ..colliders.collider_set import history_from_springs, springs_from_history
from ..contact_law import TANGENTIAL_STIFFNESS_RATIO
from ..errors import MochiError
from ..model import Model
from .rt_detect import morton_order
from .rt_device import RtDevice
from .rt_support import USE_CPU

KERNEL_SOURCE = "rt_colliders.slang"
SLOTS = collider_kernels.MAX_CONTACTS
#: float32's unit round-off, for the boxes' outward rounding (collider_triangle_aabb).
FLOAT32_EPS = 1.1920928955078125e-7


def triangle_boxes(vertices: np.ndarray, triangles: np.ndarray, inflate: float) -> np.ndarray:
    """Boxes of the triangles widened by ``inflate`` [m], rounded outwards, float32 (T, 6) (min, max xyz),
    as kernels/collider_math.cuh's ``collider_triangle_aabb``: each holds every point within ``inflate`` of
    its triangle, and a margin for the float32 ray origin and direction.

    Args:
        vertices: float64 (V, 3) [m]; triangles: int (T, 3).
    """
    corners = vertices[triangles]  # (T, 3, 3)
    lo, hi = corners.min(axis=1), corners.max(axis=1)
    magnitude = np.maximum(np.abs(lo), np.abs(hi)) + inflate
    slack = inflate * 1e-4 + magnitude * 4.0 * FLOAT32_EPS
    return np.ascontiguousarray(np.concatenate([lo - inflate - slack, hi + inflate + slack], axis=1), np.float32)


def rt_collider_refusal(model: Model, rt: RtDevice) -> str | None:
    """The sentence refusing ``model``'s colliders on ``rt`` (no float64 or ray queries), or None."""
    if model.colliders is None:
        return None
    if rt.kind == "metal":
        return (f"The rt backend's mesh colliders need float64 in shaders, which Metal lacks; {USE_CPU}, or "
                "remove the colliders.")
    if not rt.ray_query:
        return (f"The rt backend's mesh colliders need inline ray queries, which {rt.describe()} lacks; "
                f"{USE_CPU}, or use --rt-device vulkan.")
    return None


class RtColliders:
    """A model's static mesh colliders on an rt device (none: ``count`` 0, nothing launched).

    Args:
        rt: The open device.
        model: The static model (its ``colliders``, static or moving).
        origin: The backend's local origin [m], float64 (3,): the vertices are taken relative to it.
    """

    def __init__(self, rt: RtDevice, model: Model, origin: np.ndarray):
        self.rt = rt
        self.count = 0 if model.colliders is None else len(model.colliders)
        self.particle_count = n = model.particle_count
        self.swept_corrections = 0
        self._colliders: list[dict] = []  # per collider: its buffers, structure and thickness (kernel names)
        refusal = rt_collider_refusal(model, rt)
        if refusal is not None:
            raise MochiError(refusal)
        if self.count == 0:
            # One-row buffers for rt_step_forces's bindings (never read: g_collider_count 0).
            self.force = rt.buffer(np.zeros((1, 4), np.float32), write=True)
            self.torque = rt.buffer(np.zeros((1, 4), np.float32), write=True)
            return
        self._spy = spy = __import__("slangpy")
        self._forces, self._sweep, self._remember = (
            rt.compute_kernel(KERNEL_SOURCE, entry)
            for entry in ("rt_collider_forces", "rt_collider_sweep", "rt_collider_remember"))
        physics = model.physics
        # A motion state of our own (the model's stays the CPU backend's), moved by the CPU's own code.
        self._set = colliders = model.colliders.fresh_copy()
        colliders.set_origin(origin)
        beta, mu, restitution = colliders.material_tables(physics)
        roll, cohesion = colliders.surface_tables(physics)
        self._largest = float(np.max(model.radius))
        for index, runtime in enumerate(colliders.advance(0.0)):
            collider = runtime.collider
            half = 0.5 * float(collider.thickness)
            triangles = np.asarray(collider.triangles, np.int64)
            order = morton_order(runtime.vertices[triangles].mean(axis=1))  # at t = 0: only speed depends on it
            surface = np.stack([beta[index], mu[index], roll[index], cohesion[index], restitution[index]], axis=-1)
            vertex_count = runtime.vertices.shape[0]
            entry = {
                "g_col_vertices": rt.buffer(np.ascontiguousarray(runtime.vertices, np.float64).reshape(-1)),
                "g_col_vertex_velocity": rt.buffer(np.zeros(3 * vertex_count)),
                "g_col_displacement": rt.buffer(np.zeros(3 * vertex_count)),
                "g_col_triangles": rt.buffer(triangles.astype(np.uint32).reshape(-1)),
                "g_col_order": rt.buffer(order.astype(np.uint32)),
                "g_col_surface": rt.buffer(np.ascontiguousarray(surface, np.float64).reshape(-1)),
                "g_col_springs": rt.buffer(np.zeros(n * SLOTS * 6), write=True),
                "g_col_normals": rt.buffer(np.zeros(n * SLOTS * 3), write=True),
                "g_col_count": rt.buffer(np.zeros(n, np.uint32), write=True),
                "g_col_half_thickness": half}
            # Host-side state ("_": not a kernel binding); the TLAS and what it needs alive.
            entry.update(_moving=collider.moving, _triangles=triangles[order], _time=None)
            self._place(entry, runtime)
            self._colliders.append(entry)
        self.force = rt.buffer(np.zeros((n, 4), np.float32), write=True)
        self.torque = rt.buffer(np.zeros((n, 4), np.float32), write=True)
        self._sum = rt.buffer(np.zeros(6 * n), write=True)
        self._old = rt.buffer(np.zeros((n, 4), np.float32), write=True)
        self._corrections = rt.buffer(np.zeros(1, np.uint32), write=True)
        self._uniforms = {
            "g_col_spring_model": int(physics.friction_model == "spring"),
            "g_col_stiffness": float(physics.stiffness), "g_col_dt": float(physics.dt),
            "g_col_tangential_ratio": float(TANGENTIAL_STIFFNESS_RATIO)}

    def _place(self, entry: dict, runtime) -> None:
        """Upload a collider where ``runtime`` has it (vertices, their velocities and displacement over the
        last advance) and build its structure, the boxes widened by the largest reach and that displacement
        (the swept test's triangle-frame paths stray that far from the centres' paths)."""
        displacement, displacement_max = runtime.displacement()
        for name, values in (("g_col_vertices", runtime.vertices), ("g_col_vertex_velocity", runtime.velocities),
                             ("g_col_displacement", displacement)):
            entry[name].copy_from_numpy(np.ascontiguousarray(values, np.float64).reshape(-1))
        inflate = self._largest + entry["g_col_half_thickness"] + displacement_max
        entry["g_col_tlas"], entry["_structures"] = self._structure(
            triangle_boxes(runtime.vertices, entry["_triangles"], inflate))
        entry["_time"] = runtime.time

    def _advance(self, time: float) -> None:
        """Move the colliders to ``time`` [s] (engine.colliders' own code) and upload the moving ones."""
        for entry, runtime in zip(self._colliders, self._set.advance(time)):
            if entry["_moving"] and entry["_time"] != runtime.time:
                self._place(entry, runtime)

    def _structure(self, boxes: np.ndarray):
        """A TLAS over one BLAS of ``boxes`` (float32 (T, 6)); returns it and what must outlive it."""
        spy, device = self._spy, self.rt.device
        usage = spy.BufferUsage
        box_buffer = device.create_buffer(usage=usage.shader_resource | usage.acceleration_structure_build_input,
                                          data=boxes)
        geometry = spy.AccelerationStructureBuildInputProceduralPrimitives({
            "aabb_buffers": [box_buffer], "aabb_stride": 24, "primitive_count": boxes.shape[0],
            "flags": spy.AccelerationStructureGeometryFlags.no_duplicate_any_hit_invocation})
        flags = spy.AccelerationStructureBuildFlags
        blas_desc = spy.AccelerationStructureBuildDesc({"inputs": [geometry], "flags": flags.prefer_fast_trace})
        blas = self._build(blas_desc, spy.AccelerationStructureKind.bottom_level)
        instances = device.create_acceleration_structure_instance_list(1)
        instances.write(0, {"transform": spy.float3x4.identity(), "instance_id": 0, "instance_mask": 0xFF,
                            "instance_contribution_to_hit_group_index": 0,
                            "flags": spy.AccelerationStructureInstanceFlags.none,
                            "acceleration_structure": blas.handle})
        tlas_desc = spy.AccelerationStructureBuildDesc({"inputs": [instances.build_input_instances()]})
        tlas = self._build(tlas_desc, spy.AccelerationStructureKind.top_level)
        return tlas, (box_buffer, blas, instances)

    def _build(self, desc, kind):
        spy, device = self._spy, self.rt.device
        sizes = device.get_acceleration_structure_sizes(desc)
        scratch = device.create_buffer(size=max(sizes.scratch_size, 16), usage=spy.BufferUsage.unordered_access)
        structure = device.create_acceleration_structure(kind=kind, size=sizes.acceleration_structure_size)
        desc.mode = spy.AccelerationStructureBuildMode.build
        encoder = device.create_command_encoder()
        encoder.build_acceleration_structure(desc=desc, dst=structure, src=None, scratch_buffer=scratch)
        device.submit_command_buffer(encoder.finish())
        device.wait_for_idle()
        return structure

    # --- per step -----------------------------------------------------------------------------------
    def bindings(self) -> dict:
        """What rt_step_forces reads: the colliders' force and torque per grain, and whether there are any."""
        return {"g_collider_force": self.force, "g_collider_torque": self.torque, "g_collider_count": self.count}

    def _vars(self, grains: dict, entry: dict, index: int) -> dict:
        """One collider's launch bindings: the grains', the collider's own, and the shared sums."""
        own = {name: value for name, value in entry.items() if not name.startswith("_")}
        return {**{name: grains[name] for name in ("g_pos", "g_vel", "g_omega", "g_active", "g_material",
                                                   "g_count", "g_rotation")},
                **own, **self._uniforms, "g_col_sum": self._sum, "g_collider_force": self.force,
                "g_collider_torque": self.torque, "g_col_old": self._old, "g_col_corrections": self._corrections,
                "g_col_first": int(index == 0), "g_col_last": int(index == self.count - 1)}

    def add_forces(self, grains: dict, time: float) -> None:
        """Every collider's force and torque on the grains at ``time`` [s], into ``force`` / ``torque``
        (``grains``: the backend's bindings)."""
        if not self.count:
            return
        self._advance(time)
        for index, entry in enumerate(self._colliders):
            self._forces.dispatch(thread_count=[self.particle_count, 1, 1], vars=self._vars(grains, entry, index))

    def remember(self, grains: dict) -> None:
        """The centres before the update, for the swept test."""
        if self.count:
            self._remember.dispatch(thread_count=[self.particle_count, 1, 1],
                                    vars=self._vars(grains, self._colliders[0], 0))

    def sweep(self, grains: dict, time: float) -> None:
        """Put back the grains whose centre crossed a collider during the update that ends at ``time`` [s]
        (each collider in turn, moved there first)."""
        if not self.count:
            return
        self._advance(time)
        self._corrections.copy_from_numpy(np.zeros(1, np.uint32))
        for index, entry in enumerate(self._colliders):
            self._sweep.dispatch(thread_count=[self.particle_count, 1, 1], vars=self._vars(grains, entry, index))
        self.rt.device.wait_for_idle()
        self.swept_corrections += int(self._corrections.to_numpy().view(np.uint32)[0])

    # --- history --------------------------------------------------------------------------------------
    def reset(self) -> None:
        """No contact springs (a new state was set)."""
        n = self.particle_count
        if self.count:
            self._set.reset_history()  # the moving colliders' motion state too, as the CPU backend forgets it
            for entry in self._colliders:
                entry["_time"] = None  # uploaded again at the next advance (displacement from there on)
        for entry in self._colliders:
            entry["g_col_springs"].copy_from_numpy(np.zeros(n * SLOTS * 6))
            entry["g_col_normals"].copy_from_numpy(np.zeros(n * SLOTS * 3))
            entry["g_col_count"].copy_from_numpy(np.zeros(n, np.uint32))

    def to_history(self) -> dict[str, np.ndarray]:
        """The springs in use, in the CPU backend's keys (``history_from_springs``); {} without colliders."""
        if not self.count:
            return {}
        n = self.particle_count
        springs = np.stack([e["g_col_springs"].to_numpy().view(np.float64)[: n * SLOTS * 6].reshape(n, SLOTS, 6)
                            for e in self._colliders])
        normals = np.stack([e["g_col_normals"].to_numpy().view(np.float64)[: n * SLOTS * 3].reshape(n, SLOTS, 3)
                            for e in self._colliders])
        counts = np.stack([e["g_col_count"].to_numpy().view(np.uint32)[:n] for e in self._colliders])
        return history_from_springs(springs, normals, counts.astype(np.int8))

    def from_history(self, colliders: dict[str, np.ndarray]) -> None:
        """Restore ``to_history``'s (or the CPU backend's) springs; none saved: none kept."""
        if not self.count:
            return
        if "collider_index" not in colliders:
            self.reset()
            return
        n = self.particle_count
        springs = np.zeros((self.count, n, SLOTS, 6))
        normals = np.zeros((self.count, n, SLOTS, 3))
        counts = np.zeros((self.count, n), np.int8)
        springs_from_history(colliders, springs, normals, counts)
        for index, entry in enumerate(self._colliders):
            entry["g_col_springs"].copy_from_numpy(springs[index].reshape(-1))
            entry["g_col_normals"].copy_from_numpy(normals[index].reshape(-1))
            entry["g_col_count"].copy_from_numpy(counts[index].astype(np.uint32))
