"""OptiX backend: Mochi's collision detection with GPU ray tracing (kernels/optix_dem.cu).

Each particle has a proxy, an AABB of edge 4·r (twice its radius), in a custom-primitive GAS built
with ``ALLOW_UPDATE``. Each step, on the GPU and without a host synchronisation:

1. build: the proxies follow the particles (``dem_proxy_aabbs``) and the GAS is refit; every
   ``physics.rebuild_interval`` steps the slots are first reordered along a Morton curve (coherent
   rays) and the GAS is rebuilt from scratch;
2. detect: a point ray from every centre (tmin 0, a tiny tmax) walks the BVH; the intersection
   program tests |c_i − c_j| ≤ r_i + r_j and collects the partners the ray owns (from the smaller
   sphere, the smaller slot on ties), each once even when OptiX runs it twice for one primitive; the
   ray-generation program resolves them in slot order and adds the partners' shares with atomics.
   It never reports an intersection, so any-hit and closest-hit never run;
3. update: walls, fields and semi-implicit Euler (kernels/dem_common.cu ``dem_integrate``), or velocity
   Verlet's second half-kick after its first half and drift (engine.backends.gpu_backend).

Refitting keeps the proxies exact, so the contacts are exact every step; rebuilding only restores
the BVH's quality. Float atomics make the summation order, and so the last bits of a trajectory,
vary from run to run (unlike the CPU and CUDA grid backends).
"""

from __future__ import annotations

import numpy as np

from .gpu_backend import BackendGpu
from .gpu_params import OPTIX_DEM_PARAMS_DTYPE
from .gpu_runtime import DeviceParticles, PhaseTimer
from .gpu_toolchain import BLOCK, blocks, device_summary, import_cupy, import_optix, raw_module
from .optix_colliders import OptixColliders
from .optix_pipeline import RAY_TMAX_FRACTION, OptixPipeline
from ..model import Model


class BackendOptix(BackendGpu):
    """The paper's ray-traced DEM through OptiX (pyoptix-contrib) and CuPy. See the module docstring."""

    name = "optix"
    #: Float atomics sum the partners' forces in the order the rays finish: reruns and resumed bakes
    #: agree to float32 rounding, not bit for bit.
    deterministic = False

    def __init__(self, model: Model):
        super().__init__(model)
        self.cp = import_cupy()
        self.optix = import_optix()
        cp, optix = self.cp, self.optix
        n = model.particle_count
        self.particles = DeviceParticles(model)
        self.colliders = OptixColliders.for_model(self.particles, optix=optix)
        # The program holds only the contact law this model needs (OPTIX_DEM_LAW in kernels/optix_dem.cu).
        self.rt = OptixPipeline(optix, cp, compile_flags=(f"-DOPTIX_DEM_LAW={1 if self.particles.rotating_law else 0}",))
        self.aabb = cp.zeros((n, 6), cp.float32)
        self.accel_options = {
            op: optix.AccelBuildOptions(buildFlags=int(optix.BUILD_FLAG_ALLOW_UPDATE), operation=op)
            for op in (optix.BUILD_OPERATION_BUILD, optix.BUILD_OPERATION_UPDATE)}
        self.build_input = optix.BuildInputCustomPrimitiveArray(
            aabbBuffers=[self.aabb.data.ptr], numPrimitives=n, flags=[optix.GEOMETRY_FLAG_DISABLE_ANYHIT],
            numSbtRecords=1)
        sizes = self.rt.context.accelComputeMemoryUsage([self.accel_options[optix.BUILD_OPERATION_BUILD]],
                                                        [self.build_input])
        self.gas = cp.zeros(sizes.outputSizeInBytes, cp.uint8)
        self.temp = cp.zeros(max(sizes.tempSizeInBytes, sizes.tempUpdateSizeInBytes), cp.uint8)
        self.handle = 0
        self.host_params = np.zeros(1, OPTIX_DEM_PARAMS_DTYPE)
        self.params = cp.zeros(OPTIX_DEM_PARAMS_DTYPE.itemsize, cp.uint8)
        self.pair_capacity = max(16, 8 * n)
        self.pairs = cp.zeros((self.pair_capacity, 2), cp.int32)
        self.pair_count = cp.zeros(1, cp.uint32)
        common = raw_module("dem_common.cu")
        self._aabbs = common.get_function("dem_proxy_aabbs")
        self._set_u64 = common.get_function("set_u64")
        self.timer = PhaseTimer(cp)
        self._upload_params(mode=0)

    def describe_device(self) -> str:
        name, (major, minor) = device_summary(self.cp)
        version = ".".join(str(v) for v in self.optix.version())
        return f"optix (OptiX {version}, {name}, sm_{major}{minor}, CuPy {self.cp.__version__})"

    def _upload_params(self, *, mode: int) -> None:
        """Write the launch parameters (synchronous; only at set_state and for contact listing)."""
        p = self.host_params[0]
        p["dem"] = self.particles.host_params[0]
        p["handle"] = self.handle
        p["pairs"] = self.pairs.data.ptr
        p["pair_count"] = self.pair_count.data.ptr
        p["pair_capacity"] = self.pair_capacity
        p["mode"] = mode
        p["ray_tmax"] = RAY_TMAX_FRACTION * float(self.model.radius.min())
        self.params.set(self.host_params.view(np.uint8))

    def begin_frame(self) -> None:
        """Round local positions to the cache frame's (engine.local_origin); refitting keeps the contacts
        exact, so the GAS needs nothing."""
        self.particles.round_to_world()

    def _update_gas(self, rebuild: bool) -> None:
        """Move the proxies to the particles and refit (or rebuild) the GAS; asynchronous."""
        optix = self.optix
        p = self.particles
        if rebuild:
            p.morton_reorder()
        self._aabbs(blocks(p.particle_count), (BLOCK,), (p.params, self.aabb))
        op = optix.BUILD_OPERATION_BUILD if rebuild or self.handle == 0 else optix.BUILD_OPERATION_UPDATE
        handle = self.rt.context.accelBuild(
            self.cp.cuda.get_current_stream().ptr, [self.accel_options[op]], [self.build_input],
            self.temp.data.ptr, self.temp.nbytes, self.gas.data.ptr, self.gas.nbytes, [])
        if handle != self.handle:
            self.handle = handle
            offset = OPTIX_DEM_PARAMS_DTYPE.fields["handle"][1]
            self._set_u64((1,), (1,), (self.params[offset:], np.uint64(handle)))

    def _launch(self) -> None:
        self.optix.launch(self.rt.pipeline, self.cp.cuda.get_current_stream().ptr, self.params.data.ptr,
                          OPTIX_DEM_PARAMS_DTYPE.itemsize, self.rt.sbt, self.particles.particle_count, 1, 1)

    def _build(self, rebuild: bool) -> None:
        self._update_gas(rebuild)

    def _detect(self) -> None:
        self.particles.force.fill(0)  # the intersection program accumulates into it
        if self.particles.rotation_on:
            self.particles.torque.fill(0)
        self._launch()

    def contact_pairs(self) -> np.ndarray:
        cp = self.cp
        self._update_gas(self.needs_rebuild)
        self.needs_rebuild = False
        while True:
            self.pair_count.fill(0)
            self._upload_params(mode=1)
            self._launch()
            total = int(self.pair_count.get()[0])
            if total <= self.pair_capacity:
                pairs = self.particles.slots_to_model_pairs(self.pairs[:total])
                self._upload_params(mode=0)
                return pairs
            self.pair_capacity = int(total * 1.25) + 16
            self.pairs = cp.zeros((self.pair_capacity, 2), cp.int32)
