"""The paper's contact detection through portable ray tracing (slangpy; kernels/rt_contact_pairs.slang).

Every sphere becomes a procedural box of side 4r (padded by ``BOX_PAD``) in a bottom-level
acceleration structure under one instance; a zero-length ray from every centre visits the boxes
that contain it, and the kernel records each touching pair once, by its owner (the smaller sphere,
then the smaller index). The result is the list of touching pairs, sorted, in the caller's indices:
the same bits whatever the device's schedule.

Spheres are stored in Morton order: Mesa's lavapipe builds its tree by splitting the primitive list
at the index midpoint without sorting (random order made one 100k query take 219 s instead of ~1 s),
and GPU drivers that sort for themselves lose nothing. Coordinates are taken relative to a local
origin (a whole number of metres near the centre of the spheres) before they become float32, as on
every backend, so a scene far from the world origin keeps its precision.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from ..errors import MochiError
from .rt_device import RtDevice, open_rt_device

KERNEL_SOURCE = "rt_contact_pairs.slang"
#: Relative padding of a box's half width 2r: float32 rounding never shrinks a box below 2r.
BOX_PAD = 1e-4
#: Pair slots allocated per sphere (grown, and the query re-run, when a query finds more).
PAIRS_PER_SPHERE = 8
#: Entry shapes of the same pair test (kernels/rt_contact_pairs.slang).
ENTRIES = ("ray_query", "pipeline")


def morton_order(positions: np.ndarray) -> np.ndarray:
    """Permutation sorting points along a 30-bit Morton curve over their bounding box.

    Args:
        positions: Centres [m], shape (n, 3).

    Returns:
        Indices, shape (n,), int64.
    """
    lo = positions.min(axis=0)
    extent = max(float((positions.max(axis=0) - lo).max()), 1e-30)
    cells = np.clip(((positions - lo) / extent * 1023).astype(np.int64), 0, 1023)

    def spread(x):  # interleave two zero bits between the bits of a 10-bit integer
        x = (x | (x << 16)) & 0x030000FF
        x = (x | (x << 8)) & 0x0300F00F
        x = (x | (x << 4)) & 0x030C30C3
        return (x | (x << 2)) & 0x09249249

    code = spread(cells[:, 0]) | (spread(cells[:, 1]) << 1) | (spread(cells[:, 2]) << 2)
    return np.argsort(code, kind="stable")


@dataclass
class DetectTimings:
    """Wall time of the last operations [s] (device work included: each waits for the device)."""

    build_s: float = 0.0
    refit_s: float = 0.0
    detect_s: float = 0.0
    queries: int = 0


@dataclass
class RayTracedPairs:
    """Touching pairs of a set of spheres, found by ray tracing; rebuilt or refitted as they move.

    Use ``build(positions, radius)`` for a new set (or after large motion), ``refit(positions)`` for
    the same spheres moved a little (the tree keeps its topology: exact, but slower to trace as
    boxes drift), then ``pairs()``.

    Attributes:
        rt: The device (``open_rt_device``).
        entry: 'ray_query' or 'pipeline'; None picks ray queries where the device has them.
    """

    rt: RtDevice
    entry: str | None = None
    timings: DetectTimings = field(default_factory=DetectTimings)

    def __post_init__(self):
        if self.entry is None:
            self.entry = "ray_query" if self.rt.ray_query else "pipeline"
        if self.entry not in ENTRIES:
            raise MochiError(f"Unknown ray-tracing entry '{self.entry}': choose one of {', '.join(ENTRIES)}.")
        if not (self.rt.ray_query if self.entry == "ray_query" else self.rt.pipeline):
            raise MochiError(f"The device {self.rt.describe()} has no {self.entry.replace('_', ' ')}.")
        self._spy = __import__("slangpy")
        self._count = 0
        self._capacity = 0
        self._skin = 0.0
        self._compile()

    # --- set-up -------------------------------------------------------------------------------
    def _compile(self) -> None:
        device = self.rt.device
        if self.entry == "ray_query":
            self._kernel = self.rt.compute_kernel(KERNEL_SOURCE, "pairs_ray_query")
            return
        spy = self._spy
        program = device.load_program(KERNEL_SOURCE, ["pairs_raygen", "pairs_miss", "pairs_intersection"])
        self._pipeline = device.create_ray_tracing_pipeline(
            program=program, max_recursion=1, max_ray_payload_size=4, max_attribute_size=8,
            hit_groups=[spy.HitGroupDesc(hit_group_name="spheres", intersection_entry_point="pairs_intersection")])
        self._shader_table = device.create_shader_table(
            program=program, ray_gen_entry_points=["pairs_raygen"], miss_entry_points=["pairs_miss"],
            hit_group_names=["spheres"])

    def _spheres_local(self, positions: np.ndarray) -> np.ndarray:
        """float32 (x, y, z, r) rows in tree order, relative to the local origin."""
        local = np.asarray(positions, dtype=np.float64)[self._order] - self._origin
        return np.ascontiguousarray(np.concatenate([local, self._radius[:, None]], axis=1), dtype=np.float32)

    def _boxes(self, spheres: np.ndarray) -> np.ndarray:
        """Boxes of half width 2r + skin (padded) as (min xyz, max xyz) float32 rows, shape (n, 6)."""
        half = ((2.0 * spheres[:, 3].astype(np.float64) + self._skin) * (1.0 + BOX_PAD))[:, None]
        centre = spheres[:, :3].astype(np.float64)
        return np.ascontiguousarray(np.concatenate([centre - half, centre + half], axis=1), dtype=np.float32)

    def build(self, positions: np.ndarray, radius: np.ndarray, *, skin: float = 0.0) -> None:
        """Build the trees for a new set of spheres.

        Args:
            positions: Centres [m], shape (n, 3), finite.
            radius: Radii [m], shape (n,), positive.
            skin: Distance added to every reach r_i + r_j [m] (0: touching pairs only).

        Raises:
            MochiError: shapes that disagree, or non-finite values.
        """
        positions = np.asarray(positions, dtype=np.float64)
        radius = np.asarray(radius, dtype=np.float64)
        if positions.ndim != 2 or positions.shape[1] != 3 or radius.shape != (len(positions),):
            raise MochiError(f"Positions of shape {positions.shape} and radii of shape {radius.shape} do not "
                             "describe the same spheres.")
        if not (np.isfinite(positions).all() and np.isfinite(radius).all() and (radius > 0).all()):
            raise MochiError("Every sphere needs a finite centre and a positive, finite radius.")
        if not (np.isfinite(skin) and skin >= 0):
            raise MochiError(f"The search skin must be a finite distance of at least 0 m, not {skin!r}.")
        self._skin = float(skin)
        start = time.perf_counter()
        spy, device = self._spy, self.rt.device
        usage = spy.BufferUsage
        self._count = len(positions)
        self._order = morton_order(positions) if self._count else np.zeros(0, np.int64)
        centre = (positions.min(axis=0) + positions.max(axis=0)) / 2 if self._count else np.zeros(3)
        self._origin = np.floor(centre)  # whole metres: a scene on a fine grid stays exact in float32
        self._radius = radius[self._order].astype(np.float32)
        if self._count == 0:
            return
        spheres = self._spheres_local(positions)
        self._sphere_buffer = self.rt.buffer(spheres)
        self._box_buffer = device.create_buffer(
            usage=usage.shader_resource | usage.acceleration_structure_build_input, data=self._boxes(spheres))
        self._counter = self.rt.buffer(np.zeros(1, np.uint32), write=True)
        self._allocate_pairs(PAIRS_PER_SPHERE * self._count + 1024)
        flags = spy.AccelerationStructureBuildFlags
        geometry = spy.AccelerationStructureBuildInputProceduralPrimitives({
            "aabb_buffers": [self._box_buffer], "aabb_stride": 24, "primitive_count": self._count,
            "flags": spy.AccelerationStructureGeometryFlags.no_duplicate_any_hit_invocation})
        self._blas_desc = spy.AccelerationStructureBuildDesc(
            {"inputs": [geometry], "flags": flags.allow_update | flags.prefer_fast_trace})
        self._blas, self._blas_scratch = self._make_structure(self._blas_desc,
                                                              spy.AccelerationStructureKind.bottom_level)
        self._build_structures(self._blas_desc, self._blas, self._blas_scratch, update=False)
        instances = device.create_acceleration_structure_instance_list(1)
        instances.write(0, {"transform": spy.float3x4.identity(), "instance_id": 0, "instance_mask": 0xFF,
                            "instance_contribution_to_hit_group_index": 0,
                            "flags": spy.AccelerationStructureInstanceFlags.none,
                            "acceleration_structure": self._blas.handle})
        self._instances = instances  # keeps the instance buffer alive as long as the TLAS
        self._tlas_desc = spy.AccelerationStructureBuildDesc(
            {"inputs": [instances.build_input_instances()], "flags": flags.allow_update})
        self._tlas, self._tlas_scratch = self._make_structure(self._tlas_desc, spy.AccelerationStructureKind.top_level)
        self._build_structures(self._tlas_desc, self._tlas, self._tlas_scratch, update=False)
        self.timings.build_s = time.perf_counter() - start

    def _make_structure(self, desc, kind):
        device = self.rt.device
        sizes = device.get_acceleration_structure_sizes(desc)
        scratch = device.create_buffer(size=max(sizes.scratch_size, sizes.update_scratch_size),
                                       usage=self._spy.BufferUsage.unordered_access)
        return device.create_acceleration_structure(kind=kind, size=sizes.acceleration_structure_size), scratch

    def _build_structures(self, desc, structure, scratch, *, update: bool) -> None:
        spy, device = self._spy, self.rt.device
        desc.mode = spy.AccelerationStructureBuildMode.update if update else spy.AccelerationStructureBuildMode.build
        encoder = device.create_command_encoder()
        encoder.build_acceleration_structure(desc=desc, dst=structure, src=structure if update else None,
                                             scratch_buffer=scratch)
        device.submit_command_buffer(encoder.finish())
        device.wait_for_idle()

    def _allocate_pairs(self, capacity: int) -> None:
        self._capacity = int(capacity)
        self._pair_buffer = self.rt.device.create_buffer(
            size=8 * self._capacity,
            usage=self._spy.BufferUsage.unordered_access | self._spy.BufferUsage.shader_resource)

    # --- motion and queries ---------------------------------------------------------------------
    def refit(self, positions: np.ndarray) -> None:
        """Move the spheres of the last ``build`` (same order, same radii) and refit the trees."""
        if self._count == 0:
            return
        positions = np.asarray(positions, dtype=np.float64)
        if positions.shape != (self._count, 3) or not np.isfinite(positions).all():
            raise MochiError(f"A refit needs {self._count} finite centres, the spheres of the last build.")
        start = time.perf_counter()
        spheres = self._spheres_local(positions)
        self._sphere_buffer.copy_from_numpy(spheres)
        self._box_buffer.copy_from_numpy(self._boxes(spheres))
        self._build_structures(self._blas_desc, self._blas, self._blas_scratch, update=True)
        self._build_structures(self._tlas_desc, self._tlas, self._tlas_scratch, update=True)
        self.timings.refit_s = time.perf_counter() - start

    def _trace(self) -> int:
        """Run the pair kernel once; returns the number of touching pairs found (may exceed capacity)."""
        spy, device = self._spy, self.rt.device
        self._counter.copy_from_numpy(np.zeros(1, np.uint32))
        bindings = {"g_spheres": self._sphere_buffer, "g_pairs": self._pair_buffer, "g_counter": self._counter,
                    "g_tlas": self._tlas, "g_count": self._count, "g_capacity": self._capacity,
                    "g_skin": self._skin}
        if self.entry == "ray_query":
            self._kernel.dispatch(thread_count=[self._count, 1, 1], vars=bindings)
        else:
            encoder = device.create_command_encoder()
            with encoder.begin_ray_tracing_pass() as ray_pass:
                cursor = spy.ShaderCursor(ray_pass.bind_pipeline(self._pipeline, self._shader_table))
                for name, value in bindings.items():
                    setattr(cursor, name, value)
                ray_pass.dispatch_rays(0, [self._count, 1, 1])
            device.submit_command_buffer(encoder.finish())
        device.wait_for_idle()
        return int(self._counter.to_numpy().view(np.uint32)[0])

    def pairs(self) -> tuple[np.ndarray, np.ndarray]:
        """Pairs with |c_i − c_j| ≤ r_i + r_j + skin (float32, local frame) of the current spheres.

        Returns:
            (i, j): int64 arrays of the same length, in the indices given to ``build``, i < j, sorted
            by i then j. A pair buffer found too small is grown and the query run again (the overflow
            is never silent).
        """
        if self._count == 0:
            empty = np.zeros(0, np.int64)
            return empty, empty.copy()
        start = time.perf_counter()
        found = self._trace()
        if found > self._capacity:
            self._allocate_pairs(found + found // 4 + 1024)
            found = self._trace()
            if found > self._capacity:  # the same state cannot find more pairs the second time
                raise MochiError(f"The ray-traced search found {found} pairs after growing its buffer to "
                                 f"{self._capacity}; the device returned inconsistent results.")
        raw = self._pair_buffer.to_numpy().view(np.uint32)[: 2 * found].reshape(found, 2).astype(np.int64)
        self.timings.detect_s = time.perf_counter() - start
        self.timings.queries += 1
        a, b = self._order[raw[:, 0]], self._order[raw[:, 1]]
        i, j = np.minimum(a, b), np.maximum(a, b)
        order = np.lexsort((j, i))
        return i[order], j[order]


def rt_contact_pairs(positions: np.ndarray, radius: np.ndarray, *, entry: str | None = None,
                     device: str | RtDevice | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The touching pairs of a set of spheres, found by the paper's ray-traced detection.

    Args:
        positions: Centres [m], shape (n, 3).
        radius: Radii [m], shape (n,).
        entry: 'ray_query', 'pipeline', or None for the device's preferred shape.
        device: An open ``RtDevice``, a kind ('vulkan', 'd3d12', 'metal', 'cuda'), or None for the
            first device with ray tracing.

    Returns:
        (i, j) int64 arrays, i < j, sorted (see ``RayTracedPairs.pairs``).
    """
    rt = device if isinstance(device, RtDevice) else open_rt_device(device)
    search = RayTracedPairs(rt, entry)
    search.build(positions, radius)
    return search.pairs()
