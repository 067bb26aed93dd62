"""The CPU backend's cell-list search (engine.backends.cpu_neighbors) behind the neighbour-search interface."""

from __future__ import annotations

import numpy as np

from .base import NeighborSearch, sorted_pairs


class NeighborSearchCpu(NeighborSearch):
    """Uniform cell grid, multi-threaded (numba): the very list the CPU backend steps with, without its
    renumbering of the grains (pairs come out by particle index)."""

    name = "cpu"

    def _search(self, centres, radius, active, skin):
        from ..backends.cpu_neighbors import NeighborListCpu

        cells = NeighborListCpu(centres.shape[0])
        cells.bin(centres, radius, active.astype(np.uint8), skin)
        cells.build(centres, radius, in_cell_order=False)
        i, j = cells.pairs()
        live = active[i] & active[j]  # the kernels skip inactive grains by their flag, not by the list
        return sorted_pairs(i[live], j[live])

    def describe(self) -> str:
        import numba

        return f"cpu cell list (numba {numba.__version__}, {numba.get_num_threads()} threads)"
