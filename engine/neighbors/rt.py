"""The paper's ray-traced search (engine.backends.rt_detect, slangpy) behind the neighbour-search interface."""

from __future__ import annotations

import numpy as np

from .base import NeighborSearch, sorted_pairs, touching

#: Reach added on the device [m per m of r_i + r_j], so that its float32 test never drops a pair that
#: the interface's float64 decision keeps; the extra candidates are then filtered on the host.
DEVICE_REACH_MARGIN = 1e-5


class NeighborSearchRt(NeighborSearch):
    """Point rays into 4r boxes on any device with ray tracing (lavapipe included: exact, not fast).

    The device decides in float32 in a local frame; the interface promises a float64 decision from the
    float32 centres, so the device searches a hair farther and ``touching`` decides exactly.

    Args:
        device: 'vulkan', 'd3d12', 'metal', 'cuda', or None for the first device with ray tracing.
    """

    name = "rt"

    def __init__(self, device: str | None = None):
        from ..backends.rt_detect import RayTracedPairs
        from ..backends.rt_device import open_rt_device

        self._pairs = RayTracedPairs(open_rt_device(device))

    def _search(self, centres, radius, active, skin):
        index = np.flatnonzero(active)
        if index.size < 2:
            return np.zeros((0, 2), np.int32)
        extra = DEVICE_REACH_MARGIN * 2.0 * float(radius[index].max())
        self._pairs.build(centres[index], radius[index], skin=skin + extra)
        i, j = self._pairs.pairs()
        found = touching(centres[index], radius[index], np.stack([i, j], axis=1), skin)
        return sorted_pairs(index[found[:, 0]], index[found[:, 1]])

    def describe(self) -> str:
        return f"rt ({self._pairs.rt.describe()})"
