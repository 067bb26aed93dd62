"""Filling one placed mesh with spheres of two radii.

1. Large spheres: HCP sites of radius r kept where the whole sphere is inside (|winding number| ≥ ½)
   and clear of the surface by a skin: distance to the surface ≥ r + skin, with the skin
   ``SKIN_SMALL_LAYERS`` small diameters thick (0 when there is one radius only).
2. Small spheres (radius ``small_ratio * r``): sites of a second, finer HCP lattice near the surface
   (centre closer than the skin plus ``GAP_BAND`` large spacings) kept where the small sphere is
   inside (distance ≥ r_s) and touches no large sphere. So the surface is resolved at the small radius
   and the bulk is packed with large spheres; with the defaults this reproduces the Mochi paper's
   bunny (82,337 spheres of r = 5 mm and 2.5 mm). Small sites never overlap one another (one
   lattice), large sites neither, so no pair overlaps beyond float32 rounding.
3. Shell mode keeps centres closer than ``skin + 2 r · layers`` to the surface: the small skin over
   ``layers`` large diameters. A mesh without volume (a plane) in shell mode becomes a sheet: large
   sites within ``r · layers`` of the surface on both sides, no small ones.

Distances come from ``engine.packing.queries`` (exact point–triangle distances, clamped), inside tests
from ``engine.packing.regions``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.spatial import cKDTree

from ..errors import MochiError
from .bvh import MeshBvh, build_bvh
from .coarse import coarse_distance
from .lattice import hcp_dims, hcp_lattice
from .orient import orient_consistently
from .progress import PackProgress, begin_stage, run_chunked
from .queries import surface_distances, winding_numbers
from .regions import classify_sites, mesh_has_boundary

# Small spheres are tried where the centre is within this many large-lattice spacings of the surface:
# deeper than that the large spheres are close packed and no sphere of ratio > 0.414 fits a hole.
GAP_BAND = 1.5
# Thickness of the surface skin left to the small spheres, in small diameters.
SKIN_SMALL_LAYERS = 2
# Relative slack of the 'fully inside' test, so a sphere tangent to a face is not lost to rounding.
INSIDE_SLACK = 1e-6
# Resolution of the volume estimate of meshes with a boundary (sites per bounding-box axis).
VOLUME_GRID = 40
# Open meshes: spheres whose centre winding number is below PROBE_BELOW also need their extreme
# points (the 6 axis and 8 diagonal directions) inside.
PROBE_BELOW = 0.9
_CORNERS = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], dtype=np.float64)
PROBE_DIRECTIONS = np.concatenate([np.eye(3), -np.eye(3), _CORNERS / math.sqrt(3.0)])
# Refuse lattices that would not fit in memory instead of swapping for minutes.
MAX_SITES = 30_000_000


@dataclass(frozen=True)
class Fill:
    """Spheres of one mesh (large first, then small).

    Attributes:
        positions: Centres [m], float64, shape (sphere_count, 3).
        radius: Radii [m], float64, shape (sphere_count,).
        is_small: True for the gap-filling spheres, shape (sphere_count,).
        mesh_volume: Volume enclosed by the mesh [m³] (0 for a sheet).
    """

    positions: np.ndarray
    radius: np.ndarray
    is_small: np.ndarray
    mesh_volume: float


@dataclass(frozen=True)
class MeshInfo:
    """What the fill needs to know about a placed mesh, computed once (``count`` mode packs it often)."""

    bvh: MeshBvh
    closed: bool
    lo: np.ndarray
    hi: np.ndarray
    volume: float
    name: str


def analyse_mesh(vertices: np.ndarray, triangles: np.ndarray, *, name: str = "The mesh",
                 progress: PackProgress | None = None) -> MeshInfo:
    """Build the hierarchy, test for a boundary and measure the enclosed volume.

    Faces flipped one by one are re-oriented first (``engine.packing.orient``). The volume is exact
    (divergence theorem, absolute value so flipped meshes count) for meshes without boundary; for open
    meshes it is estimated on a ``VOLUME_GRID``³ grid as the volume where |winding| ≥ ½. ``progress``
    records how far it is and stops it on a cancel (``engine.packing.progress``).
    """
    begin_stage(progress, "reading the mesh")
    closed = not mesh_has_boundary(triangles)
    if not closed:
        # A boundary may be a real hole or just faces flipped one by one; re-orienting fixes the latter.
        triangles = orient_consistently(vertices, triangles)
        closed = not mesh_has_boundary(triangles)
    bvh = build_bvh(vertices, triangles)
    lo = vertices.min(axis=0)
    hi = vertices.max(axis=0)
    extent = hi - lo
    if extent.min() <= 1e-9 * max(float(extent.max()), 1e-300):
        volume = 0.0
    elif closed:
        a, b, c = (vertices[triangles[:, n]] for n in range(3))
        volume = abs(float(np.einsum("ij,ij->", a, np.cross(b, c)))) / 6.0
    else:
        axes = [lo[n] + (np.arange(VOLUME_GRID) + 0.5) * extent[n] / VOLUME_GRID for n in range(3)]
        grid = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, 3)
        begin_stage(progress, "measuring the open mesh's volume")
        inside = np.abs(winding_numbers(bvh, grid, progress=progress)) >= 0.5
        volume = float(inside.mean() * np.prod(extent))
    if volume <= 1e-9 * float(np.prod(np.maximum(extent, 1e-300))):
        volume = 0.0
    return MeshInfo(bvh, closed, lo, hi, volume, name)


def fill_mesh(info: MeshInfo, radius: float, *, small_ratio: float = 0.5, shell_layers: int = 0, seed: int = 0,
              jitter: float = 0.0, allow_empty: bool = False, progress: PackProgress | None = None) -> Fill:
    """Pack spheres into an analysed mesh.

    Args:
        info: From ``analyse_mesh``.
        radius: Large-sphere radius r [m].
        small_ratio: Small radius over r, in (0, 1]; 1 gives one radius only.
        shell_layers: 0 for a solid fill, else the shell thickness in sphere diameters.
        seed: Jitter seed.
        jitter: Random displacement bound as a fraction of each radius, in [0, 0.5].
        allow_empty: Return an empty fill instead of raising when no sphere fits (count search).
        progress: Records how far the fill is and stops it on a cancel (``engine.packing.progress``).

    Raises:
        MochiError: a zero-volume mesh outside shell mode, a lattice too large for memory, or no sphere
            fitting at all.
    """
    if info.volume <= 0.0 and shell_layers <= 0:
        raise MochiError(f"{info.name} encloses no volume (it is flat or open like a plane); "
                         "use shell mode to coat its surface instead.")
    _check_site_count(info, radius, jitter, small_ratio)
    small_radius = radius * small_ratio
    if info.volume <= 0.0:
        large = _sheet_sites(info, radius, shell_layers, seed, jitter, progress)
        small = np.zeros((0, 3))
    else:
        skin = SKIN_SMALL_LAYERS * 2.0 * small_radius if small_ratio < 1.0 else 0.0
        thickness = skin + 2.0 * radius * shell_layers if shell_layers > 0 else math.inf
        large = _inside_sites(info, radius, jitter, seed, stream=0, clearance=radius + skin, band=thickness,
                              exact_band=True, progress=progress, what="large")
        small = np.zeros((0, 3))
        if small_ratio < 1.0:
            band = min(thickness, skin + GAP_BAND * 2.0 * radius * (1.0 + 2.0 * jitter))
            # Outside shell mode the band only bounds the work (sites deeper in touch large spheres).
            small = _inside_sites(info, small_radius, jitter, seed, stream=1, clearance=small_radius, band=band,
                                  exact_band=shell_layers > 0, progress=progress, what="small")
            begin_stage(progress, "keeping the small grains clear of the large")
            small = _clear_of(small, large, radius + small_radius, progress)
    if len(large) + len(small) == 0 and not allow_empty:
        size = np.round(info.hi - info.lo, 6).tolist()
        raise MochiError(f"{info.name}: the radius {radius:g} m is too large, no sphere fits inside it "
                         f"(bounding box {size} m).")
    return Fill(positions=np.concatenate([large, small]),
                radius=np.concatenate([np.full(len(large), radius), np.full(len(small), small_radius)]),
                is_small=np.concatenate([np.zeros(len(large), bool), np.ones(len(small), bool)]),
                mesh_volume=info.volume)


def _check_site_count(info: MeshInfo, radius: float, jitter: float, small_ratio: float) -> None:
    dims = hcp_dims(info.lo, info.hi, radius * min(small_ratio, 1.0), jitter=jitter)
    sites = int(np.prod(np.asarray(dims, dtype=np.float64)))
    if sites > MAX_SITES * (8 if small_ratio < 1.0 else 1):
        raise MochiError(f"{info.name}: the radius {radius:g} m is too small for its size "
                         f"({np.round(info.hi - info.lo, 6).tolist()} m); it would need over "
                         f"{MAX_SITES:,} lattice sites, so choose a larger radius or a smaller count.")


def _inside_sites(info: MeshInfo, radius: float, jitter: float, seed: int, *, stream: int, clearance: float,
                  band: float, exact_band: bool, progress: PackProgress | None = None,
                  what: str = "large") -> np.ndarray:
    """Lattice sites of spheres of ``radius`` inside the mesh with centre distance to the surface ≥
    ``clearance`` and < ``band`` (exactly when ``exact_band``, else give or take a coarse voxel).
    ``what`` names the spheres in ``progress``'s stages ('large', 'small')."""
    # Exact distances are needed up to the longest jittered neighbour distance (safe edges of
    # engine.packing.regions), the clearance and an exact band; beyond, 'at least cap' is enough.
    neighbour = 2.0 * radius * (1.0 + 2.0 * jitter) * 1.001
    finite_band = math.isfinite(band)
    exact_band = exact_band and finite_band
    cap = max(neighbour, clearance * 1.001, band if exact_band else 0.0)
    size = max(2.0 * cap, 0.5 * band) if finite_band else 2.0 * cap
    begin_stage(progress, f"{what} grains: mapping the surface")
    coarse = coarse_distance(info.bvh, info.lo, info.hi, size=size, cap=max(cap, band if finite_band else 0.0),
                             progress=progress)
    keep = (lambda p: coarse.lower_bound(p) < band) if finite_band else None
    begin_stage(progress, f"{what} grains: laying out the lattice")
    lattice = hcp_lattice(info.lo, info.hi, radius, jitter=jitter, seed=seed, stream=stream, keep=keep,
                          on_slab=progress.advance if progress is not None else None)
    begin_stage(progress, f"{what} grains: distances to the surface")
    distance = np.full(len(lattice.positions), cap)
    bound = np.empty(len(lattice.positions))

    def lower_bounds(begin: int, end: int) -> None:
        bound[begin:end] = coarse.lower_bound(lattice.positions[begin:end])

    run_chunked(len(bound), lower_bounds, progress)
    near = bound < cap
    begin_stage(progress, f"{what} grains: distances to the surface")
    distance[near] = surface_distances(info.bvh, lattice.positions[near], cap, progress=progress)
    clear = distance >= clearance * (1.0 - INSIDE_SLACK)
    if exact_band:
        clear &= distance < band
    positions = lattice.positions[clear]
    winding = np.abs(classify_sites(info.bvh, positions, lattice.flat_ids[clear], lattice.dims, distance[clear],
                                    closed=info.closed, progress=progress))
    inside = winding >= 0.5
    if not info.closed:
        begin_stage(progress, f"{what} grains: checking the open mesh's edges")
        inside &= _probes_inside(info, positions, winding, radius, progress)
    return positions[inside]


def _probes_inside(info: MeshInfo, positions: np.ndarray, winding: np.ndarray, radius: float,
                   progress: PackProgress | None = None) -> np.ndarray:
    """Whether the sphere's extreme points in ``PROBE_DIRECTIONS`` are inside too (open meshes).

    At a hole the inside ends where the winding number falls below ½, not at a triangle, so the
    distance test alone would let spheres poke out through it. Only sites not clearly inside
    (|w| < ``PROBE_BELOW``) are probed.
    """
    ok = np.ones(len(positions), bool)
    doubtful = np.flatnonzero((winding >= 0.5) & (winding < PROBE_BELOW))
    if len(doubtful) == 0:
        return ok
    probes = positions[doubtful, None, :] + radius * PROBE_DIRECTIONS[None, :, :]
    probe_winding = np.abs(winding_numbers(info.bvh, probes.reshape(-1, 3), progress=progress)).reshape(
        len(doubtful), -1)
    ok[doubtful] = (probe_winding >= 0.5).all(axis=1)
    return ok


def _sheet_sites(info: MeshInfo, radius: float, layers: int, seed: int, jitter: float,
                 progress: PackProgress | None = None) -> np.ndarray:
    """Large sites within ``radius * layers`` of a surface that encloses nothing."""
    half = radius * layers
    lo = info.lo - half
    hi = info.hi + half
    begin_stage(progress, "sheet: mapping the surface")
    coarse = coarse_distance(info.bvh, lo, hi, size=2.0 * half, cap=half, progress=progress)
    begin_stage(progress, "sheet: laying out the lattice")
    lattice = hcp_lattice(lo, hi, radius, jitter=jitter, seed=seed, stream=0,
                          keep=lambda p: coarse.lower_bound(p) < half,
                          on_slab=progress.advance if progress is not None else None)
    begin_stage(progress, "sheet: distances to the surface")
    distance = surface_distances(info.bvh, lattice.positions, half, progress=progress)
    return lattice.positions[distance < half]


def _clear_of(candidates: np.ndarray, others: np.ndarray, gap: float,
              progress: PackProgress | None = None) -> np.ndarray:
    """The candidates whose distance to every point of ``others`` is at least ``gap``.

    With ``progress``, the candidates go in chunks, each against a tree of only the ``others`` whose x
    lies within ``gap`` of the chunk's x range (lattice sites come in i-plane order, so a chunk spans a
    narrow slab): every point within ``gap`` of a candidate is in its chunk's tree, so each nearest
    distance below ``gap``, and the answer, is the one a tree of all of them gives.
    """
    if len(candidates) == 0 or len(others) == 0:
        return candidates
    if progress is None:
        distance, _ = cKDTree(others).query(candidates, k=1, distance_upper_bound=gap, workers=-1)
        return candidates[distance >= gap]
    x = others[:, 0]
    # Bounds that hold though x is only nearly sorted: no earlier point lies right of the running
    # maximum, no later one left of the running minimum from the end.
    highest_so_far = np.maximum.accumulate(x)
    lowest_from_here = np.minimum.accumulate(x[::-1])[::-1]
    clear = np.ones(len(candidates), bool)

    def run(begin: int, end: int) -> None:
        chunk = candidates[begin:end]
        first = int(np.searchsorted(highest_so_far, chunk[:, 0].min() - gap, side="left"))
        last = int(np.searchsorted(lowest_from_here, chunk[:, 0].max() + gap, side="right"))
        if last > first:
            distance, _ = cKDTree(others[first:last]).query(chunk, k=1, distance_upper_bound=gap, workers=-1)
            clear[begin:end] = distance >= gap

    run_chunked(len(candidates), run, progress)
    return candidates[clear]
