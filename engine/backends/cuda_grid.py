"""CUDA backend: a uniform grid rebuilt every step (kernels/grid.cu), the paper's baseline.

Each step, on the GPU and without a host synchronisation:

1. build: every slot gets the bucket of its cell (edge 2·r_max, so touching spheres sit in neighbouring
   cells whatever the radius ratio; cells folded onto a periodic block of about one bucket per
   particle, a spatial hash that keeps neighbouring cells in neighbouring buckets), a deterministic
   bucket sort groups the slots by bucket, and their positions are copied in that order;
2. detect: each particle gathers its own contact force from the 27 cells around it, read as 9 runs
   of consecutive buckets (no atomics, a fixed summation order, so the same input gives the same
   bits);
3. update: walls, fields and semi-implicit Euler (kernels/dem_common.cu ``dem_integrate``), or velocity
   Verlet's second half-kick after its first half and drift (engine.backends.gpu_backend).

Every ``physics.rebuild_interval`` steps the slots are reordered along a Morton curve so that a
particle's neighbours sit close in memory (counted as a rebuild). The contacts found are exact every
step; the interval only affects speed. NaN and runaway speeds are recorded on the device and raised
by ``get_state``.
"""

from __future__ import annotations

import numpy as np

from .gpu_backend import BackendGpu
from .gpu_colliders import DeviceColliders
from .gpu_runtime import BucketSorter, DeviceParticles, PhaseTimer
from .gpu_toolchain import BLOCK, blocks, device_summary, import_cupy, raw_module
from ..model import Model

#: Buckets per particle at least (rounded up to a power of two, so up to 2× more).
BUCKETS_PER_PARTICLE = 2
#: Resident 256-thread blocks per SM the force kernel is compiled for (its register cap).
FORCES_MIN_BLOCKS = 1


def grid_layout(model: Model) -> tuple[float, tuple[int, int, int]]:
    """Cell edge [m] (2·r_max) and bits per axis (x, y, z) of the folded grid of ``model``: about
    ``BUCKETS_PER_PARTICLE`` buckets per particle, at least 2^12."""
    n = model.particle_count
    total_bits = max(12, int(np.ceil(np.log2(max(BUCKETS_PER_PARTICLE * n, 2)))))
    return 2.0 * float(model.radius.max()), tuple(total_bits // 3 + (1 if axis < total_bits % 3 else 0)
                                                  for axis in range(3))


class BackendCudaGrid(BackendGpu):
    """Hashed-grid DEM on an NVIDIA GPU through CuPy. See the module docstring."""

    name = "cuda"
    #: The next rebuild starts from model order (begin_frame; set_state uploads in model order).
    canonical_reorder = False

    def __init__(self, model: Model):
        super().__init__(model)
        self.cp = import_cupy()
        n = model.particle_count
        self.particles = DeviceParticles(model)
        self.colliders = DeviceColliders.for_model(self.particles)
        cell, self.grid_bits = grid_layout(model)
        self.particles.set_grid(cell, self.grid_bits)
        self.sorter = BucketSorter(n, (1 << sum(self.grid_bits)) + 1)  # the last bucket holds the inactive slots
        self.pos_sorted = self.cp.zeros((max(n, 1), 4), self.cp.float32)
        module = raw_module("grid.cu", defines=(f"GRID_FORCES_MIN_BLOCKS={FORCES_MIN_BLOCKS}",))
        self._keys = module.get_function("grid_keys")
        self._gather_sorted = module.get_function("grid_gather_sorted")
        self._forces = module.get_function("grid_forces_rotating" if self.particles.rotating_law else "grid_forces")
        self._pairs = module.get_function("grid_pairs")
        self.pair_capacity = max(16, 8 * n)
        self.timer = PhaseTimer(self.cp)

    def describe_device(self) -> str:
        name, (major, minor) = device_summary(self.cp)
        return f"cuda (grid, {name}, sm_{major}{minor}, CuPy {self.cp.__version__})"

    def begin_frame(self) -> None:
        """At a frame boundary: the next step reorders the slots from model order, as a bake resumed
        from this frame does after ``set_state``, so that resuming is bit-exact (the grid sums each
        particle's forces in slot order within a bucket)."""
        self.canonical_reorder = True
        self.needs_rebuild = True
        self.particles.round_to_world()

    def _bucket(self) -> None:
        """Hash every slot into its cell's bucket and sort the slots by bucket."""
        p = self.particles
        self._keys(blocks(p.particle_count), (BLOCK,), (p.params, p.key))
        self.sorter.sort(p.key)
        self._gather_sorted(blocks(p.particle_count), (BLOCK,), (p.params, self.sorter.sorted, self.pos_sorted))

    def _build(self, rebuild: bool) -> None:
        """Reorder the slots along the Morton curve when ``rebuild``; bucket them into the grid."""
        if rebuild:
            if self.canonical_reorder:
                self.particles.restore_model_order()
                self.canonical_reorder = False
            self.particles.morton_reorder()
        self._bucket()

    def _detect(self) -> None:
        p = self.particles
        self._forces(blocks(p.particle_count), (BLOCK,), (p.params, self.sorter.start, self.sorter.sorted, self.pos_sorted))

    def contact_pairs(self) -> np.ndarray:
        cp = self.cp
        p = self.particles
        self._bucket()
        while True:
            pairs = cp.zeros((self.pair_capacity, 2), cp.int32)
            found = cp.zeros(1, cp.uint32)
            self._pairs(blocks(p.particle_count), (BLOCK,),
                        (p.params, self.sorter.start, self.sorter.sorted, self.pos_sorted, pairs, found, np.uint32(self.pair_capacity)))
            total = int(found.get()[0])
            if total <= self.pair_capacity:
                return p.slots_to_model_pairs(pairs[:total])
            self.pair_capacity = int(total * 1.25) + 16
