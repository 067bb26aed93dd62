"""A coarse voxel grid of distances to the surface, giving cheap lower bounds for any point.

Every voxel stores the (clamped) distance from its centre to the surface; a point in the voxel is at
least that minus half the voxel diagonal away. The packing uses the bound to skip exact queries for
sites deep inside or far outside, and to drop sites far from a band before they are ever stored.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numba import njit, prange

from .bvh import KERNEL_OPTIONS, MeshBvh
from .progress import PackProgress
from .queries import surface_distances


@dataclass(frozen=True)
class CoarseDistance:
    """Voxel distances over a padded box.

    Attributes:
        lo: Corner of voxel (0, 0, 0) [m], shape (3,).
        size: Voxel side [m].
        dims: Voxel counts per axis, int64 shape (3,).
        centre_distance: Distance of each voxel centre to the surface, clamped at the cap [m], float64
            shape dims.
    """

    lo: np.ndarray
    size: float
    dims: np.ndarray
    centre_distance: np.ndarray

    def lower_bound(self, positions: np.ndarray) -> np.ndarray:
        """A lower bound on each point's distance to the surface [m], float64 shape (point_count,).

        Points outside the grid get their nearest voxel's bound minus their distance to it, i.e.
        still a valid bound (possibly 0).
        """
        positions = np.ascontiguousarray(positions, dtype=np.float64).reshape(-1, 3)
        return _lower_bound_kernel(positions, self.lo, self.size, self.dims, self.centre_distance)


@njit(parallel=True, **KERNEL_OPTIONS)
def _lower_bound_kernel(positions, lo, size, dims, centre_distance):
    out = np.empty(positions.shape[0])
    for i in prange(positions.shape[0]):
        offset2 = 0.0
        cell = np.empty(3, np.int64)
        for a in range(3):
            c = int(math.floor((positions[i, a] - lo[a]) / size))
            c = min(max(c, 0), dims[a] - 1)
            cell[a] = c
            offset2 += (positions[i, a] - (lo[a] + (c + 0.5) * size)) ** 2
        out[i] = max(centre_distance[cell[0], cell[1], cell[2]] - math.sqrt(offset2), 0.0)
    return out


def coarse_distance(bvh: MeshBvh, lo, hi, *, size: float, cap: float,
                    progress: PackProgress | None = None) -> CoarseDistance:
    """Voxel distances over lo..hi padded by one voxel.

    Args:
        bvh: The mesh and its hierarchy.
        lo, hi: Box to cover [m], shape (3,).
        size: Voxel side [m].
        cap: Largest bound of interest [m]; centre distances are clamped at cap + half a diagonal.
        progress: Runs the voxels in chunks, recording progress and honouring a cancel between them.
    """
    lo = np.asarray(lo, dtype=np.float64) - size
    dims = np.maximum(np.ceil((np.asarray(hi, dtype=np.float64) + size - lo) / size).astype(np.int64), 1)
    axes = [lo[n] + (np.arange(dims[n]) + 0.5) * size for n in range(3)]
    centres = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, 3)
    reach = cap + 0.5 * math.sqrt(3.0) * size
    distance = surface_distances(bvh, centres, reach, progress=progress).reshape(tuple(dims))
    return CoarseDistance(lo, float(size), dims, distance)
