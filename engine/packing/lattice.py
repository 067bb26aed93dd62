"""Hexagonal close packed (HCP) lattices of equal spheres, with optional deterministic jitter.

Sites are indexed by integers (i, j, k) in a box of shape ``dims`` and numbered flat as
``(i * dims[1] + j) * dims[2] + k``. With spacing a (the centre distance of touching neighbours):

    x = (i + ((j + k) mod 2) / 2) a,   y = (√3 / 2) (j + (k mod 2) / 3) a,   z = (√6 / 3) k a

so layers stack along z in the ABAB order, and the sites (i+1, j, k), (i, j+1, k) and (i, j, k+1)
are always nearest neighbours of (i, j, k) at distance exactly a (``engine.packing.regions`` relies on
it). The density is π / (3√2) ≈ 0.7405 when the spheres touch.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

# Sites are generated in slabs of whole i-planes of about this many sites, so a fine lattice over a
# large box is filtered without ever being held in memory at once.
CHUNK_SITES = 1 << 21


@dataclass(frozen=True)
class Lattice:
    """The kept sites of one HCP lattice over a box.

    Attributes:
        positions: Site centres [m], float64, shape (site_count, 3), in increasing flat-index order.
        flat_ids: Flat index of each kept site, int64, shape (site_count,).
        dims: Index extent (ni, nj, nk) of the whole lattice.
        spacing: Centre distance of neighbouring sites before jitter [m].
        cell_volume: Volume per site [m³] (a³ / √2).
    """

    positions: np.ndarray
    flat_ids: np.ndarray
    dims: tuple[int, int, int]
    spacing: float
    cell_volume: float


def hcp_dims(lo, hi, radius: float, *, jitter: float = 0.0) -> tuple[int, int, int]:
    """Index extent of the lattice ``hcp_lattice`` builds for these arguments."""
    lo = np.asarray(lo, dtype=np.float64)
    hi = np.asarray(hi, dtype=np.float64)
    step = _steps(radius, jitter)
    extent = np.maximum(hi - lo - 2.0 * radius, 0.0)
    # One extra site per axis covers the half-spacing row and layer offsets.
    return tuple(int(n) + 2 for n in np.floor(extent / step))


def hcp_lattice(lo, hi, radius: float, *, jitter: float = 0.0, seed: int = 0, stream: int = 0,
                keep: Callable[[np.ndarray], np.ndarray] | None = None,
                on_slab: Callable[[float], None] | None = None) -> Lattice:
    """HCP sites for spheres of ``radius`` covering the box lo..hi, the first sites tangent to lo.

    Jitter moves every site by a random vector of length at most ``jitter * radius``; the spacing grows
    to ``2 radius (1 + jitter)`` so jittered spheres still never overlap.

    Args:
        lo, hi: Box corners [m], shape (3,).
        radius: Sphere radius [m].
        jitter: Displacement bound as a fraction of the radius (0 for a perfect lattice).
        seed: Seed of the jitter; the same seed gives the same bits.
        stream: Separates the random streams of several lattices built with one seed.
        keep: Optional filter, positions (m, 3) → bool (m,), applied slab by slab to bound memory.
        on_slab: Called after each slab with the share of the lattice done, 0..1 (a progress bar; it
            may raise to stop). The slabs are fixed by the lattice, not by time: the jitter's random
            stream is drawn slab by slab.
    """
    lo = np.asarray(lo, dtype=np.float64)
    a = 2.0 * radius * (1.0 + jitter)
    step = _steps(radius, jitter)
    origin = lo + radius
    dims = hcp_dims(lo, hi, radius, jitter=jitter)
    plane = dims[1] * dims[2]
    planes_per_chunk = max(1, CHUNK_SITES // plane)
    j, k = np.meshgrid(np.arange(dims[1]), np.arange(dims[2]), indexing="ij")
    j = j.ravel()
    k = k.ravel()
    plane_xyz = np.empty((plane, 3))
    plane_xyz[:, 0] = 0.5 * ((j + k) & 1) * a
    plane_xyz[:, 1] = (j + (k & 1) / 3.0) * step[1]
    plane_xyz[:, 2] = k * step[2]
    plane_xyz += origin
    kept_positions = []
    kept_ids = []
    for chunk, i0 in enumerate(range(0, dims[0], planes_per_chunk)):
        i1 = min(dims[0], i0 + planes_per_chunk)
        positions = np.concatenate([plane_xyz + np.array([i * a, 0.0, 0.0]) for i in range(i0, i1)])
        if jitter > 0.0:
            rng = np.random.default_rng([seed, stream, chunk])
            direction = rng.standard_normal(positions.shape)
            direction /= np.maximum(np.linalg.norm(direction, axis=1, keepdims=True), 1e-300)
            length = jitter * radius * rng.random(positions.shape[0]) ** (1.0 / 3.0)
            positions += direction * length[:, None]
        ids = np.arange(i0 * plane, i1 * plane, dtype=np.int64)
        if keep is not None:
            mask = keep(positions)
            positions = positions[mask]
            ids = ids[mask]
        kept_positions.append(positions)
        kept_ids.append(ids)
        if on_slab is not None:
            on_slab(i1 / dims[0])
    return Lattice(np.concatenate(kept_positions), np.concatenate(kept_ids), dims, a, a ** 3 / math.sqrt(2.0))


def _steps(radius: float, jitter: float) -> np.ndarray:
    a = 2.0 * radius * (1.0 + jitter)
    return np.array([a, a * math.sqrt(3.0) / 2.0, a * math.sqrt(6.0) / 3.0])
