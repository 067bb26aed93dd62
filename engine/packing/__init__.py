"""Sphere packing: turn a triangle mesh into a set of spheres of two radii (issue 3).

Public API (what the scene builder and the CLI call):

    pack_mesh_file(path, *, radius | count, ...)   a mesh file read through trimesh
    pack_mesh(vertices, triangles, *, transform, radius | count, ...)
    rigid_velocities(positions, linear, angular, pivot), rigid_spins(count, angular)
    PackResult

How it works (one module per step): ``mesh`` loads, checks and places the mesh; ``bvh`` builds a
hierarchy over its triangles; ``queries`` answers distance-to-surface and generalized winding number
queries; ``lattice`` lays out HCP sites; ``regions`` decides which sites are inside with few winding
evaluations; ``fill`` keeps the large and small spheres; ``colors`` and ``motion`` add per-particle
colour and rigid velocities. The object id of the particles is the caller's to set. ``progress``
(``PackProgress``) runs the long loops in chunks of ~0.1 s, records the stage and share done, and stops
the packing with ``PackCancelled`` at the next chunk after a cancel (Blender's Esc).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

import numpy as np

from ..errors import MochiError
from ..settings_schema import setting
from .colors import colors_from_vertices
from .fill import SKIN_SMALL_LAYERS, MeshInfo, analyse_mesh, fill_mesh
from .mesh import check_mesh, load_mesh_file, place_vertices
from .motion import rigid_spins, rigid_velocities
from .progress import PackCancelled, PackProgress, begin_stage

#: The small-radius ratio's default and bounds (engine.settings_schema).
SMALL_RATIO = setting("small_ratio")

__all__ = ["PackCancelled", "PackProgress", "PackResult", "pack_mesh", "pack_mesh_file", "rigid_spins",
           "rigid_velocities"]

# The count search stops within this relative distance of the target, or after COUNT_ITERATIONS packs.
COUNT_TOLERANCE = 0.005
COUNT_ITERATIONS = 8


@dataclass(frozen=True)
class PackResult:
    """Spheres filling one mesh, large spheres first.

    Attributes:
        positions: Sphere centres in world space [m], float32, shape (particle_count, 3).
        radius: Sphere radii [m], float32, shape (particle_count,).
        is_small: True for the gap-filling small spheres, bool, shape (particle_count,).
        counts: Sphere count per radius, {radius [m]: count}, large radius first; the keys are the
            float32 radii of ``radius`` as Python floats, so ``counts[float(result.radius[0])]`` works.
        packing_fraction: Sphere volume over mesh volume (NaN for a sheet, which encloses nothing).
        mesh_volume: Volume enclosed by the placed mesh [m³].
        colors: RGBA in 0..1 from the mesh's vertex colours, float32, shape (particle_count, 4), or None.
        large_radius: The large radius r actually used [m] (the one chosen in count mode).
    """

    positions: np.ndarray
    radius: np.ndarray
    is_small: np.ndarray
    counts: dict[float, int]
    packing_fraction: float
    mesh_volume: float
    colors: np.ndarray | None
    large_radius: float = 0.0

    @property
    def particle_count(self) -> int:
        return int(self.positions.shape[0])

    def summary(self) -> str:
        """One line: counts per radius and packing fraction."""
        parts = ", ".join(f"{n:,} of radius {r:g} m" for r, n in self.counts.items())
        fraction = "n/a (sheet)" if math.isnan(self.packing_fraction) else f"{self.packing_fraction:.3f}"
        return f"{self.particle_count:,} spheres ({parts}), packing fraction {fraction}"


def pack_mesh_file(path: str | os.PathLike, *, radius: float | None = None, count: int | None = None,
                   small_ratio: float = SMALL_RATIO.default, shell_layers: int = 0, seed: int = 0, jitter: float = 0.0,
                   fit: float | None = None, center: tuple[float, float, float] | None = None,
                   rotation_deg: tuple[float, float, float] = (0.0, 0.0, 0.0),
                   progress: PackProgress | None = None) -> PackResult:
    """Pack the mesh in an OBJ/PLY/STL/... file (read with trimesh).

    Placement: rotate by Euler XYZ ``rotation_deg`` about the bounding-box centre, then scale uniformly
    so the largest bounding-box edge is ``fit`` [m], then move the bounding-box centre to ``center``
    [m]. Other arguments as ``pack_mesh``; vertex colours in the file give ``PackResult.colors``.

    Raises:
        MochiError: missing or unreadable file, and every error of ``pack_mesh``.
    """
    mesh = load_mesh_file(path)
    return pack_mesh(mesh.vertices, mesh.triangles, radius=radius, count=count, small_ratio=small_ratio,
                     shell_layers=shell_layers, seed=seed, jitter=jitter, fit=fit, center=center,
                     rotation_deg=rotation_deg, vertex_colors=mesh.vertex_colors, name=mesh.name, progress=progress)


def pack_mesh(vertices, triangles, *, transform=None, radius: float | None = None, count: int | None = None,
              small_ratio: float = SMALL_RATIO.default, shell_layers: int = 0, seed: int = 0, jitter: float = 0.0,
              fit: float | None = None, center: tuple[float, float, float] | None = None,
              rotation_deg: tuple[float, float, float] = (0.0, 0.0, 0.0), vertex_colors=None,
              name: str = "The mesh", progress: PackProgress | None = None) -> PackResult:
    """Fill a triangle mesh with spheres of radius r and ``small_ratio * r``.

    The inside is where the generalized winding number has magnitude ≥ ½, so open, non-manifold,
    self-intersecting and flipped meshes fill sensibly (faces flipped one by one are re-oriented).
    Large spheres sit on an HCP lattice, each fully inside and clear of a skin two small diameters
    thick (distance from centre to surface ≥ r + 2 · 2 r_s); small spheres on a finer HCP lattice fill
    that skin and the gaps next to the surface (distance ≥ r_s), as in the Mochi paper's bunny. No two
    spheres overlap (beyond float32 rounding, far below 1% of the smaller radius).

    Args:
        vertices: Vertex positions, shape (vertex_count, 3), in the frame of ``transform``.
        triangles: Vertex indices, shape (triangle_count, 3).
        transform: Optional 4×4 world matrix applied first (column vectors, translation last column).
        radius: Large radius r [m]. Give exactly one of radius and count.
        count: Target particle count; r is searched to hit it (usually within 0.5%, always the closest
            count found in ``COUNT_ITERATIONS`` packs).
        small_ratio: Small radius over r, in (0, 1]; 1 packs one radius only.
        shell_layers: 0 fills the volume; N > 0 keeps a hollow shell: the small skin over about N
            large diameters (a mesh without volume, like a plane, is then coated on both sides with
            large spheres within N · r of it).
        seed: Seed of the jitter; equal seeds give bitwise equal results.
        jitter: Random displacement of each sphere, as a fraction of its radius, in [0, 0.5]. The
            lattice is spread by (1 + jitter) so jittered spheres still never overlap.
        fit: Largest bounding-box edge after placement [m] (see ``pack_mesh_file``).
        center: Bounding-box centre after placement [m].
        rotation_deg: Euler XYZ rotation about the bounding-box centre [degrees].
        vertex_colors: Optional RGB(A) per vertex in 0..1, shape (vertex_count, 3 or 4): each particle
            takes the colour of the nearest vertex.
        name: Subject of error sentences, e.g. "The object 'Bunny'".
        progress: Told what the packing does and how far it is, and asked between chunks of about
            0.1 s whether to stop (``engine.packing.progress``); None packs in one go.

    Raises:
        MochiError: no faces, NaN vertices, bad options, a mesh with no volume outside shell mode, a
            radius too large for any sphere to fit (or too small to fit in memory).
        PackCancelled: ``progress`` was asked to stop.
    """
    _check_options(radius, count, small_ratio, shell_layers, seed, jitter, name)
    mesh = check_mesh(vertices, triangles, vertex_colors=vertex_colors, name=name)
    placed = place_vertices(mesh.vertices, transform=transform, rotation_deg=rotation_deg, fit=fit, center=center,
                            name=name)
    info = analyse_mesh(placed, mesh.triangles, name=name, progress=progress)
    options = dict(small_ratio=small_ratio, shell_layers=shell_layers, seed=seed, jitter=jitter, progress=progress)
    if count is not None:
        radius, fill = _radius_for_count(info, int(count), options)
    else:
        fill = fill_mesh(info, float(radius), **options)
    positions = fill.positions.astype(np.float32)
    radii = fill.radius.astype(np.float32)
    counts = {float(np.float32(radius)): int((~fill.is_small).sum())}
    if small_ratio < 1.0:
        counts[float(np.float32(radius * small_ratio))] = int(fill.is_small.sum())
    sphere_volume = float(np.sum(4.0 / 3.0 * math.pi * fill.radius ** 3))
    fraction = sphere_volume / fill.mesh_volume if fill.mesh_volume > 0 else math.nan
    colors = None
    if mesh.vertex_colors is not None:
        begin_stage(progress, "colouring the grains")
        colors = colors_from_vertices(fill.positions, placed, mesh.vertex_colors, progress=progress)
    return PackResult(positions, radii, fill.is_small.copy(), counts, fraction, fill.mesh_volume, colors,
                      float(radius))


def _check_options(radius, count, small_ratio, shell_layers, seed, jitter, name) -> None:
    if (radius is None) == (count is None):
        raise MochiError(f"{name}: give exactly one of radius and count for the packing.")
    if radius is not None and not (isinstance(radius, (int, float)) and math.isfinite(radius) and radius > 0):
        raise MochiError(f"{name}: the packing radius must be a positive number of metres, not {radius!r}.")
    if count is not None and (isinstance(count, bool) or int(count) != count or count < 1):
        raise MochiError(f"{name}: the particle count must be a whole number ≥ 1, not {count!r}.")
    if not SMALL_RATIO.allows(small_ratio):
        raise MochiError(f"{name}: the small-radius ratio must be {SMALL_RATIO.bounds_text()}, not {small_ratio!r}.")
    if isinstance(shell_layers, bool) or int(shell_layers) != shell_layers or shell_layers < 0:
        raise MochiError(f"{name}: the shell layer count must be a whole number ≥ 0, not {shell_layers!r}.")
    if isinstance(seed, bool) or int(seed) != seed or seed < 0:
        raise MochiError(f"{name}: the seed must be a whole number ≥ 0, not {seed!r}.")
    if not (0.0 <= jitter <= 0.5):
        raise MochiError(f"{name}: jitter must be in [0, 0.5] (a fraction of the radius), not {jitter!r}.")


def _radius_for_count(info: MeshInfo, target: int, options: dict):
    """Search the large radius whose packing has the particle count closest to ``target``.

    Count ∝ r⁻³ for a solid fill (r⁻² for a shell); each step corrects r by the exponent measured
    between the last two packs, so it converges in a few packs.
    """
    radius = _first_guess(info, target, options)
    exponent = 3.0 if info.volume > 0 and options["shell_layers"] == 0 else 2.0
    best = None
    history = []
    progress = options["progress"]
    if progress is not None:
        progress.attempts_most = COUNT_ITERATIONS
    for attempt in range(COUNT_ITERATIONS):
        if progress is not None:
            progress.attempt = attempt + 1
        fill = fill_mesh(info, radius, allow_empty=True, **options)
        n = len(fill.radius)
        if best is None or abs(n - target) < abs(len(best[1].radius) - target):
            best = (radius, fill)
        if abs(n - target) <= COUNT_TOLERANCE * target:
            break
        if n == 0:
            radius *= 0.5
            continue
        history.append((radius, n))
        if len(history) >= 2:
            (r0, n0), (r1, n1) = history[-2:]
            if n0 != n1 and r0 != r1:
                exponent = min(max(-math.log(n1 / n0) / math.log(r1 / r0), 1.0), 4.0)
        radius *= (n / target) ** (1.0 / exponent)
    if len(best[1].radius) == 0:
        raise MochiError(f"{info.name}: no radius packs {target} spheres into it; it may be too thin.")
    return best


def _first_guess(info: MeshInfo, target: int, options: dict) -> float:
    """Radius at which a simple model of the fill predicts ``target`` spheres.

    The model: small spheres fill a skin of area × (skin + r) next to the surface, large ones the rest
    (or the shell), each at the HCP density; a sheet is area × 2 r · layers of large spheres. Solved by
    bisection in log r, which the model makes monotonic.
    """
    area = _surface_area(info)
    ratio = options["small_ratio"]
    layers = options["shell_layers"]
    density = math.pi / (3.0 * math.sqrt(2.0))

    def predicted(r: float) -> float:
        ball = 4.0 / 3.0 * math.pi * r ** 3
        if info.volume <= 0:
            return density * area * 2.0 * r * max(layers, 1) / ball
        skin = (SKIN_SMALL_LAYERS * 2.0 * ratio * r if ratio < 1.0 else 0.0) + r
        skin_volume = min(area * skin, info.volume)
        core = info.volume - skin_volume
        if layers > 0:
            core = min(core, area * 2.0 * r * layers)
        small = density * skin_volume / (ball * ratio ** 3) if ratio < 1.0 else density * skin_volume / ball
        return small + density * core / ball

    lo, hi = 1e-9, float((info.hi - info.lo).max())
    for _ in range(100):
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if predicted(mid) > target else (lo, mid)
    return math.sqrt(lo * hi)


def _surface_area(info: MeshInfo) -> float:
    v = info.bvh.vertices
    t = info.bvh.triangles
    return float(0.5 * np.linalg.norm(np.cross(v[t[:, 1]] - v[t[:, 0]], v[t[:, 2]] - v[t[:, 0]]), axis=1).sum())
