"""The device of the portable ray-traced path: a slangpy device with hardware-style ray tracing.

slangpy (PyPI) runs Slang kernels on Vulkan, D3D12, Metal and CUDA through slang-rhi. The `rt` path
needs acceleration structures plus ray queries or ray-tracing pipelines; this module opens such a
device, says in one sentence why it cannot, and tells a software rasteriser (Mesa's lavapipe, which
runs Vulkan ray tracing on the CPU: exact, and what CI runs, but no speed figure) from a GPU.

slangpy is imported only when a device is opened, so ``import engine`` works without it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import MochiError
from ..resources import data_dir

#: The slangpy the rt path is tested with: pyproject.toml's ``rt`` extra (a test keeps the two equal) and
#: what the add-on's preferences install.
SLANGPY_REQUIREMENT = "slangpy==0.43.1"
#: Download size of its wheel [MB] (it carries the Slang compiler), shown before installing it.
SLANGPY_DOWNLOAD_MB = 92
#: Device kinds ``--rt-device`` accepts, in the order ``open_rt_device(None)`` tries them.
RT_DEVICE_KINDS = ("vulkan", "d3d12", "metal", "cuda")
#: Adapter names of software Vulkan/D3D implementations (exact, but CPU speed).
SOFTWARE_ADAPTERS = ("llvmpipe", "lavapipe", "swiftshader", "warp")


@dataclass
class RtDevice:
    """An open slangpy device able to trace rays.

    Attributes:
        device: The ``slangpy.Device``.
        kind: One of ``RT_DEVICE_KINDS``.
        adapter: The adapter's name as the driver reports it.
        ray_query: Inline ray queries in compute kernels are supported.
        pipeline: Ray-tracing pipelines (intersection shaders) are supported.
    """

    device: object
    kind: str
    adapter: str
    ray_query: bool
    pipeline: bool

    @property
    def is_software(self) -> bool:
        """True for a CPU implementation such as lavapipe (never picked by ``auto``)."""
        name = self.adapter.lower()
        return any(word in name for word in SOFTWARE_ADAPTERS)

    def describe(self) -> str:
        entries = [name for name, ok in (("ray query", self.ray_query), ("pipeline", self.pipeline)) if ok]
        return f"{self.adapter} ({self.kind}; {', '.join(entries)})"

    def buffer(self, data: np.ndarray, *, write: bool = False):
        """A device buffer holding a copy of ``data``, readable by kernels (and writable, with ``write``)."""
        usage = _import_slangpy().BufferUsage
        flags = usage.shader_resource | usage.unordered_access if write else usage.shader_resource
        return self.device.create_buffer(usage=flags, data=np.ascontiguousarray(data))

    def compute_kernel(self, source: str, entry: str):
        """The compute kernel ``entry`` of kernels/``source``, compiled for this device."""
        return self.device.create_compute_kernel(self.device.load_program(source, [entry]))


def _import_slangpy():
    try:
        import slangpy
    except ImportError as exc:
        raise MochiError("The rt backend needs slangpy (pip install 'mochi-dem[rt]'), which is not "
                         f"installed ({exc}).") from None
    return slangpy


def open_rt_device(kind: str | None = None) -> RtDevice:
    """Open the first device of ``kind`` (or of any kind, best first) that can trace rays.

    Args:
        kind: 'vulkan', 'd3d12', 'metal', 'cuda', or None to try them in that order.

    Raises:
        MochiError: slangpy is missing, the kind is unknown, or no device of the kind has acceleration
            structures with ray queries or ray-tracing pipelines (one sentence naming what was tried).
    """
    if kind is not None and kind not in RT_DEVICE_KINDS:
        raise MochiError(f"Unknown ray-tracing device '{kind}': choose one of {', '.join(RT_DEVICE_KINDS)}.")
    spy = _import_slangpy()
    tried = []
    for candidate in ([kind] if kind else RT_DEVICE_KINDS):
        try:
            device = spy.create_device(type=getattr(spy.DeviceType, candidate),
                                       include_paths=[str(data_dir("kernels"))])
        except Exception as exc:  # slang-rhi raises RuntimeError/SlangpyError for an absent API
            tried.append(f"{candidate}: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}")
            continue
        features = spy.Feature
        has = device.has_feature
        ray_query = has(features.acceleration_structure) and has(features.ray_query)
        pipeline = has(features.acceleration_structure) and has(features.ray_tracing)
        if ray_query or pipeline:
            return RtDevice(device, candidate, device.info.adapter_name, ray_query, pipeline)
        tried.append(f"{candidate}: {device.info.adapter_name} has no ray tracing")
        device.close()
    raise MochiError("No device with ray tracing was found for the rt backend (" + "; ".join(tried) + ").")
