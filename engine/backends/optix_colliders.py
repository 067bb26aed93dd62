"""Mesh colliders through OptiX (kernels/optix_colliders.cu), for the OptiX backend.

Each collider's triangles are custom primitives of a GAS built with ``ALLOW_UPDATE``: boxes widened by
the largest reach of a grain (r_max + thickness/2) and by the collider's largest vertex displacement
over the step (``kernels/colliders.cu collider_triangle_aabbs``). The step hooks are those of
``gpu_colliders.DeviceColliders`` (the colliders move on the host exactly as for the CPU), with the
contact search and the swept test done by rays:

- ``add_forces``: one launch per collider, a point ray from every centre; the intersection program
  offers each triangle whose box holds the centre to the grain's candidate list, and the
  ray-generation program resolves the contacts into a double force sum per slot (with friction_model
  'spring' evolving the grain's tangential springs against that collider, as the CUDA kernel does;
  each grain's springs are its own thread's, so this stays deterministic); after the last
  collider one CUDA kernel adds the sums to the float32 forces, rounding once as the CUDA kernel does.
- ``sweep``: one launch per collider (in order, as the CPU), a ray along every centre's path.

Why custom primitives and not OptiX's built-in triangles with the hardware ray–triangle test: the
contact search needs every triangle within a distance of a point, which no ray–triangle test answers;
and the swept test takes each triangle in its own frame (the path's start moved by that triangle's
motion over the step) in double precision with the CPU's watertight slack at shared edges, which a
fixed float32 hardware test can neither shift per triangle nor match at those edges. The BVH traversal
still runs on the RT cores; the exact tests run in the intersection program.

The GAS of a moving collider is refit whenever its vertices are uploaded, and rebuilt when the host's
tree for it was rebuilt (its refit had grown too costly) or after a reset. Candidates and crossings are
kept by a total order, so the traversal order does not matter and the answers are those of the CUDA
kernels (checked with an emulated traversal in tests/engine/test_collider_device_math.py).
"""

from __future__ import annotations

import numpy as np

from .gpu_colliders import COLLIDER_OPTIONS, DeviceColliders, collider_defines
from .gpu_params import COLLIDER_PARAMS_DTYPE, DEM_PARAMS_DTYPE
from .gpu_toolchain import BLOCK, blocks
from .optix_pipeline import RAY_TMAX_FRACTION, OptixPipeline

#: Host mirror of ``struct OptixColliderParams`` (kernels/dem_params.h).
OPTIX_COLLIDER_PARAMS_DTYPE = np.dtype({
    "names": ["dem", "collider", "handle", "force_sum", "ray_tmax", "mode", "torque_sum"],
    "formats": [DEM_PARAMS_DTYPE, COLLIDER_PARAMS_DTYPE, "u8", "u8", "f4", "i4", "u8"],
}, align=True)
MODE_FORCES = 0
MODE_SWEEP = 1


class ColliderGas:
    """One collider's GAS (custom primitives, one per triangle) and its two launch-parameter blocks."""

    def __init__(self, optix, cupy, context, triangle_count: int):
        self.optix = optix
        self.cp = cupy
        self.context = context
        self.aabb = cupy.zeros((triangle_count, 6), cupy.float32)
        self.options = {
            op: optix.AccelBuildOptions(buildFlags=int(optix.BUILD_FLAG_ALLOW_UPDATE), operation=op)
            for op in (optix.BUILD_OPERATION_BUILD, optix.BUILD_OPERATION_UPDATE)}
        self.build_input = optix.BuildInputCustomPrimitiveArray(
            aabbBuffers=[self.aabb.data.ptr], numPrimitives=triangle_count,
            flags=[optix.GEOMETRY_FLAG_DISABLE_ANYHIT], numSbtRecords=1)
        sizes = context.accelComputeMemoryUsage([self.options[optix.BUILD_OPERATION_BUILD]], [self.build_input])
        self.gas = cupy.zeros(sizes.outputSizeInBytes, cupy.uint8)
        self.temp = cupy.zeros(max(sizes.tempSizeInBytes, sizes.tempUpdateSizeInBytes), cupy.uint8)
        self.handle = 0
        self.params = {mode: cupy.zeros(OPTIX_COLLIDER_PARAMS_DTYPE.itemsize, cupy.uint8)
                       for mode in (MODE_FORCES, MODE_SWEEP)}
        self.built_tree = None  # the host tree the GAS was last built after, and its build count then
        self.built_rebuilds = 0
        self.time = None  # collider time of the boxes

    def update(self, rebuild: bool) -> bool:
        """Build (``rebuild``) or refit the GAS from ``aabb``; True when the handle changed."""
        optix = self.optix
        op = optix.BUILD_OPERATION_BUILD if rebuild or self.handle == 0 else optix.BUILD_OPERATION_UPDATE
        handle = self.context.accelBuild(self.cp.cuda.get_current_stream().ptr, [self.options[op]],
                                         [self.build_input], self.temp.data.ptr, self.temp.nbytes,
                                         self.gas.data.ptr, self.gas.nbytes, [])
        changed = handle != self.handle
        self.handle = handle
        return changed


class OptixColliders(DeviceColliders):
    """``DeviceColliders`` whose contact search and swept test trace rays (module docstring).

    Args:
        colliders: The model's ``ColliderSet``.
        particles: The backend's ``gpu_runtime.DeviceParticles``.
        optix: The pyoptix module.
    """

    def __init__(self, colliders, particles, *, optix):
        super().__init__(colliders, particles)
        cupy = self.cp
        self.optix = optix
        model = particles.model
        self.rt = OptixPipeline(optix, cupy, source="optix_colliders.cu",
                                entries=("__raygen__collider", "__miss__collider", "__intersection__collider"),
                                payload_values=2,
                                compile_flags=(*(f"-D{d}" for d in collider_defines()), *COLLIDER_OPTIONS))
        self.force_sum = cupy.zeros((particles.particle_count, 3), cupy.float64)
        self.torque_sum = cupy.zeros((particles.particle_count if particles.rotation_on else 1, 3), cupy.float64)
        self.ray_tmax = RAY_TMAX_FRACTION * float(model.radius.min())
        radius_max = float(model.radius.max())
        self.reach_max = [radius_max + 0.5 * c.thickness for c in self.set.colliders]
        self.gases = [ColliderGas(optix, cupy, self.rt.context, c.triangles.shape[0]) for c in self.set.colliders]
        self._aabbs = self.module.get_function("collider_triangle_aabbs")
        self._add_sums = self.module.get_function("collider_add_force_sums")

    def reset(self) -> None:
        super().reset()
        for gas in getattr(self, "gases", ()):
            gas.time = None
            gas.built_tree = None

    def _refresh(self, runtimes) -> None:
        """Bring every collider's boxes and GAS to its uploaded vertices (refit, or build after a host
        tree rebuild or a reset), and its launch parameters to the GAS handle."""
        for index, (mesh, runtime, gas) in enumerate(zip(self.meshes, runtimes, self.gases)):
            if gas.time == mesh.uploaded_time:
                continue
            inflate = max(self.reach_max[index], mesh.displacement_max)
            count = gas.aabb.shape[0]
            self._aabbs(blocks(count), (BLOCK,), (self.params_each[index], np.int32(count), np.float64(inflate),
                                                  gas.aabb))
            tree = runtime.tree
            changed = gas.update(rebuild=gas.built_tree is not tree or gas.built_rebuilds != tree.rebuilds)
            gas.built_tree, gas.built_rebuilds = tree, tree.rebuilds
            gas.time = mesh.uploaded_time
            if changed:
                self._upload_params(index)

    def _upload_params(self, index: int) -> None:
        gas = self.gases[index]
        for mode, buffer in gas.params.items():
            host = np.zeros(1, OPTIX_COLLIDER_PARAMS_DTYPE)
            record = host[0]
            record["dem"] = self.particles.host_params[0]
            record["collider"] = self.meshes[index].host_params[0]
            record["handle"] = gas.handle
            record["force_sum"] = self.force_sum.data.ptr
            record["torque_sum"] = self.torque_sum.data.ptr
            record["ray_tmax"] = self.ray_tmax
            record["mode"] = mode
            buffer.set(host.view(np.uint8))

    def _launch(self, index: int, mode: int) -> None:
        stream = self.cp.cuda.get_current_stream().ptr
        self.optix.launch(self.rt.pipeline, stream, self.gases[index].params[mode].data.ptr,
                          OPTIX_COLLIDER_PARAMS_DTYPE.itemsize, self.rt.sbt, self.particles.particle_count, 1, 1)

    def add_forces(self, step: int) -> None:
        """Add every collider's contact forces at t = step·dt to the slots' forces (queued on the
        current stream)."""
        self._refresh(self._advance(step))
        for index in range(len(self.meshes)):
            self._launch(index, MODE_FORCES)
        p = self.particles
        self._add_sums(blocks(p.particle_count), (BLOCK,), (p.params, self.force_sum, self.torque_sum))

    def sweep(self, step: int) -> None:
        """Swept test against every collider at t = step·dt, the end of the step, collider by collider."""
        self._refresh(self._advance(step))
        for index in range(len(self.meshes)):
            self._launch(index, MODE_SWEEP)
