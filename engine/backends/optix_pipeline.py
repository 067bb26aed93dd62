"""The OptiX pipeline of a program in kernels/ (context, module, program groups, pipeline, SBT), shared by
the grains' contact detection (optix_rt, kernels/optix_dem.cu) and the colliders (optix_colliders,
kernels/optix_colliders.cu). Every program there has one ray-generation, one miss and one intersection
program, custom primitives and a single GAS.
"""

from __future__ import annotations

import numpy as np

from .gpu_toolchain import GpuUnavailable, compile_ptx, cuda_include_dirs, device_summary, kernel_source

#: Length of the point rays relative to the smallest radius (any positive length works: the proxy
#: test happens at the ray origin).
RAY_TMAX_FRACTION = 1e-6


def optix_include_dir(optix) -> str:
    """The OptiX headers shipped in the pyoptix-contrib wheel (optix/include)."""
    from pathlib import Path

    path = Path(optix.__file__).resolve().parent / "include"
    if not (path / "optix.h").is_file():
        raise GpuUnavailable(f"The optix package at {path.parent} ships no OptiX headers (optix/include/optix.h).")
    return str(path)


class OptixPipeline:
    """Context, module, program groups, pipeline and SBT of an OptiX program in kernels/ (one line per
    stage): by default the grains' kernels/optix_dem.cu.

    Args:
        optix, cupy: The modules.
        source: The program's file in kernels/.
        entries: Its ray-generation, miss and intersection programs.
        payload_values: 32-bit payload values its rays carry.
        compile_flags: Extra NVRTC flags (-D definitions, --fmad=false).
    """

    def __init__(self, optix, cupy, *, source: str = "optix_dem.cu",
                 entries: tuple[str, str, str] = ("__raygen__dem", "__miss__dem", "__intersection__dem"),
                 payload_values: int = 2, compile_flags: tuple[str, ...] = ()):
        self.entries = entries
        self.optix = optix
        self.cp = cupy
        self.log: list[str] = []
        _, (major, minor) = device_summary(cupy)
        self.context = optix.deviceContextCreate(0, optix.DeviceContextOptions(
            logCallbackFunction=lambda level, tag, message: self.log.append(f"[{level}][{tag}] {message}"),
            logCallbackLevel=3))
        self.compile_options = optix.PipelineCompileOptions(
            usesMotionBlur=False,
            traversableGraphFlags=int(optix.TRAVERSABLE_GRAPH_FLAG_ALLOW_SINGLE_GAS),
            numPayloadValues=payload_values,
            numAttributeValues=2,
            exceptionFlags=int(optix.EXCEPTION_FLAG_NONE),
            pipelineLaunchParamsVariableName="params",
            usesPrimitiveTypeFlags=int(optix.PRIMITIVE_TYPE_FLAGS_CUSTOM))
        ptx = compile_ptx(kernel_source(source),
                          ["-std=c++17", f"-arch=compute_{major}{minor}", "-lineinfo",
                           f"-I{optix_include_dir(optix)}", *(f"-I{d}" for d in cuda_include_dirs()), *compile_flags],
                          name=source)
        self.module = self._module(ptx)
        self.groups = self._program_groups()
        self.pipeline = self._pipeline()
        self.sbt, self._sbt_buffers = self._sbt()

    def _module(self, ptx: bytes):
        optix = self.optix
        options = optix.ModuleCompileOptions(maxRegisterCount=optix.COMPILE_DEFAULT_MAX_REGISTER_COUNT,
                                             optLevel=optix.COMPILE_OPTIMIZATION_DEFAULT,
                                             debugLevel=optix.COMPILE_DEBUG_LEVEL_DEFAULT)
        module, log = self.context.moduleCreate(options, self.compile_options, ptx)
        if log:
            self.log.append(log)
        return module

    def _program_groups(self):
        optix = self.optix
        raygen = optix.ProgramGroupDesc()
        raygen.raygenModule = self.module
        raygen.raygenEntryFunctionName = self.entries[0]
        miss = optix.ProgramGroupDesc()
        miss.missModule = self.module
        miss.missEntryFunctionName = self.entries[1]
        hit = optix.ProgramGroupDesc()
        hit.hitgroupModuleIS = self.module
        hit.hitgroupEntryFunctionNameIS = self.entries[2]
        groups = []
        for desc in (raygen, miss, hit):
            created, log = self.context.programGroupCreate([desc])
            groups.append(created[0])
        return groups

    def _pipeline(self):
        optix = self.optix
        link = optix.PipelineLinkOptions()
        link.maxTraceDepth = 1
        pipeline = self.context.pipelineCreate(self.compile_options, link, self.groups, "")
        sizes = optix.StackSizes()
        for group in self.groups:
            optix.util.accumulateStackSizes(group, sizes, pipeline)
        from_traversal, from_state, continuation = optix.util.computeStackSizes(sizes, 1, 0, 0)
        pipeline.setStackSize(from_traversal, from_state, continuation, 1)
        return pipeline

    def _sbt(self):
        optix, cp = self.optix, self.cp
        record = np.dtype({"names": ["header"], "formats": [f"{optix.SBT_RECORD_HEADER_SIZE}B"],
                           "itemsize": max(optix.SBT_RECORD_HEADER_SIZE, optix.SBT_RECORD_ALIGNMENT)}, align=True)
        buffers = []
        for group in self.groups:
            host = np.zeros(1, record)
            optix.sbtRecordPackHeader(group, host)
            buffers.append(cp.asarray(host.view(np.uint8)))
        sbt = optix.ShaderBindingTable(
            raygenRecord=buffers[0].data.ptr,
            missRecordBase=buffers[1].data.ptr, missRecordStrideInBytes=record.itemsize, missRecordCount=1,
            hitgroupRecordBase=buffers[2].data.ptr, hitgroupRecordStrideInBytes=record.itemsize,
            hitgroupRecordCount=1)
        return sbt, buffers
