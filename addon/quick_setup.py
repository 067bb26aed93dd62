"""Scene setup a first result needs: a domain box fitted around the sources, how domains show, a look
applied to sources, and the bundled bunny as a Blender mesh.

Used by Quick Grains, Add › Mochi Bunny and the Looks menu (``addon.operators.quick``). Geometry is
read with ``foreach_get``; nothing here runs an operator, so it works from any context.
"""

from __future__ import annotations

from pathlib import Path

import bpy
import numpy as np

from ..engine.settings_schema import GRAIN, SOURCE, surface_values
from .properties.schema import set_surface

#: The domain is this many times the sources' footprint wide, so the grains have room to spread.
DOMAIN_SPREAD = 3.0
#: Room above the sources, as a share of their height (a falling pile never reaches the lid).
DOMAIN_HEADROOM = 0.5
#: The floor sits this share of the sources' size below their lowest point: they fall a little first.
FLOOR_GAP = 0.1
#: Quick Grains keeps the estimated grain count under this: a first bake that takes minutes on a laptop,
#: not hours (a larger radius than the look's is chosen, and the report says so).
QUICK_GRAIN_BUDGET = 60_000
#: Height of the bundled bunny when added [m]: an object an artist holds in a hand.
BUNNY_HEIGHT = 0.30
DOMAIN_NAME = "Mochi Domain"
GROUND_NAME = "Mochi Ground"


def show_domain(obj: bpy.types.Object) -> None:
    """Draw a domain as a wire box and keep it out of renders, so it never hides or shadows the grains."""
    if obj.display_type not in {"WIRE", "BOUNDS"}:
        obj.display_type = "WIRE"
    obj.hide_render = True


def show_all_domains(scene: bpy.types.Scene) -> None:
    """Apply ``show_domain`` to every domain of the scene (files made before domains were drawn so)."""
    for obj in scene.objects:
        if obj.mochi.role == "DOMAIN":
            show_domain(obj)


def world_bounds(objects) -> tuple[np.ndarray, np.ndarray]:
    """Lower and upper corner [m] of the world-space bounding boxes of ``objects`` together."""
    corners = []
    for obj in objects:
        matrix = np.array([list(row) for row in obj.matrix_world], dtype=np.float64)
        local = np.array([list(c) for c in obj.bound_box], dtype=np.float64)
        corners.append(local @ matrix[:3, :3].T + matrix[:3, 3])
    points = np.concatenate(corners)
    return points.min(axis=0), points.max(axis=0)


def fitted_domain_box(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A domain box around the bounds ``lo``–``hi`` of the sources [m]: ``DOMAIN_SPREAD`` times their
    footprint wide (square, centred on them), the floor a little below them, room above."""
    size = hi - lo
    scale = max(float(size.max()), 1e-3)
    footprint = max(float(size[0]), float(size[1]), 1e-3)
    half = 0.5 * DOMAIN_SPREAD * footprint
    centre = 0.5 * (lo + hi)
    floor = lo[2] - FLOOR_GAP * scale
    top = hi[2] + DOMAIN_HEADROOM * max(float(size[2]), 1e-3)
    return (np.array([centre[0] - half, centre[1] - half, floor]),
            np.array([centre[0] + half, centre[1] + half, top]))


def _unit_cube_mesh(name: str) -> bpy.types.Mesh:
    mesh = bpy.data.meshes.new(name)
    corners = [(x, y, z) for x in (-0.5, 0.5) for y in (-0.5, 0.5) for z in (-0.5, 0.5)]
    faces = [(0, 1, 3, 2), (4, 6, 7, 5), (0, 4, 5, 1), (2, 3, 7, 6), (0, 2, 6, 4), (1, 5, 7, 3)]
    mesh.from_pydata(corners, [], faces)
    mesh.update()
    return mesh


def fit_domain(scene: bpy.types.Scene, lo: np.ndarray, hi: np.ndarray) -> tuple[bpy.types.Object, bool]:
    """Make the scene's domain the box ``lo``–``hi`` [m] (its existing domain, else a new cube), with a
    floor (the bottom wall is never open). Returns (domain, created)."""
    domain = next((o for o in scene.objects if o.mochi.role == "DOMAIN"), None)
    created = domain is None
    if created:
        domain = bpy.data.objects.new(DOMAIN_NAME, _unit_cube_mesh(DOMAIN_NAME))
        scene.collection.objects.link(domain)
        domain.mochi.role = "DOMAIN"
        corners = np.array([[-0.5] * 3, [0.5] * 3])
    else:
        corners = np.array([list(c) for c in domain.bound_box], dtype=np.float64)
    # Scale and place the object so that its own bounding box becomes lo–hi (rotation dropped: the
    # engine's box is axis-aligned).
    local_lo, local_hi = corners.min(axis=0), corners.max(axis=0)
    extent = np.maximum(local_hi - local_lo, 1e-9)
    scale = (hi - lo) / extent
    domain.rotation_mode = "XYZ"
    domain.rotation_euler = (0.0, 0.0, 0.0)
    domain.scale = tuple(scale)
    domain.location = tuple(lo - local_lo * scale)
    domain.mochi.open_sides = set(domain.mochi.open_sides) - {"-z"}
    show_domain(domain)
    return domain, created


def ensure_ground(scene: bpy.types.Scene, lo: np.ndarray, hi: np.ndarray) -> bpy.types.Object:
    """A plane at the domain's floor that renders (the floor itself is the domain's bottom wall, which
    never renders): the grains have a ground to cast shadows on. Not part of the simulation."""
    ground = scene.objects.get(GROUND_NAME)
    if ground is None:
        mesh = bpy.data.meshes.new(GROUND_NAME)
        mesh.from_pydata([(-0.5, -0.5, 0.0), (0.5, -0.5, 0.0), (0.5, 0.5, 0.0), (-0.5, 0.5, 0.0)], [],
                         [(0, 1, 2, 3)])
        mesh.update()
        ground = bpy.data.objects.new(GROUND_NAME, mesh)
        scene.collection.objects.link(ground)
    ground.location = (0.5 * (lo[0] + hi[0]), 0.5 * (lo[1] + hi[1]), lo[2])
    ground.scale = (hi[0] - lo[0], hi[1] - lo[1], 1.0)
    ground.hide_select = True  # a click in the viewport picks the grains' objects, not the ground
    return ground


def quick_source_candidates(objects) -> tuple[list, list[str]]:
    """The objects Quick Grains turns into sources, and sentences about those it leaves out (not a mesh,
    a domain or collider, an object Mochi made)."""
    chosen, skipped = [], []
    made_by_mochi = {o.mochi.pack_preview for o in objects if o.mochi.pack_preview is not None}
    for obj in objects:
        if obj.type != "MESH" or obj in made_by_mochi or obj.name.startswith(("Mochi Playback", GROUND_NAME)):
            continue
        if obj.mochi.role in {"DOMAIN", "COLLIDER"}:
            skipped.append(f"'{obj.name}' stays a {obj.mochi.role.lower()}")
            continue
        chosen.append(obj)
    return chosen, skipped


def apply_look(obj: bpy.types.Object, look, *, radius: float | None = None) -> None:
    """Give the source ``obj`` the look's radius (or ``radius`` [m]), small ratio, material and body."""
    s = obj.mochi
    m = look.material
    s.size_mode = "RADIUS"
    s.radius = float(radius if radius is not None else look.radius)
    set_surface(s, GRAIN, surface_values(m, GRAIN))
    set_surface(s, SOURCE, surface_values(look, SOURCE))


def radius_within_budget(context, sources, radius: float, small_ratio: float,
                         budget: int = QUICK_GRAIN_BUDGET) -> tuple[float, int]:
    """The look's ``radius`` [m], raised if needed so that packing ``sources`` gives about ``budget``
    grains at most; and the estimated count at that radius."""
    from dataclasses import replace

    from .operators.pack import estimated_sphere_count
    from .snapshot import source_blender_to_settings

    scene = context.scene
    fps = scene.render.fps / scene.render.fps_base
    snapshots = [source_blender_to_settings(o, context, frame_start=scene.mochi.frame_start, fps=fps)
                 for o in sources]

    def count(r: float) -> int:
        return sum(estimated_sphere_count(replace(s, radius=r, count=None, small_ratio=small_ratio))
                   for s in snapshots)

    estimate = count(radius)
    for _ in range(4):  # the count goes as 1/r³; a few rounds settle the skin term too
        if estimate <= budget:
            break
        radius *= (estimate / budget) ** (1.0 / 3.0) * 1.02
        estimate = count(radius)
    return radius, estimate


def read_plain_obj(path) -> tuple[np.ndarray, np.ndarray]:
    """(vertices float64 (V, 3), triangles int32 (T, 3), 0-based) of an OBJ of 'v x y z' and 'f a b c'
    lines only, as the bundled bunny is.

    Not the engine's reader (trimesh, engine.packing.mesh): importing trimesh and numba for the first time
    froze the window for ~2 s when Add › Mochi Bunny was the first thing an artist did; these ~4,000
    lines take a few milliseconds. Any other OBJ goes through the engine's reader.
    """
    vertices, faces = [], []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if line.startswith("v "):
            vertices.append(line.split()[1:4])
        elif line.startswith("f "):
            faces.append([word.split("/")[0] for word in line.split()[1:]])
    if any(len(face) != 3 for face in faces) or not faces:
        from ..engine.packing.mesh import load_mesh_file

        arrays = load_mesh_file(path)
        return np.asarray(arrays.vertices, np.float64), np.asarray(arrays.triangles, np.int32)
    return np.array(vertices, np.float64), np.array(faces, np.int32) - 1


def bunny_mesh(name: str = "Mochi Bunny") -> bpy.types.Mesh:
    """The bundled Stanford bunny (presets/bunny.obj, +Y up) as a Z-up Blender mesh ``BUNNY_HEIGHT``
    tall, its origin at the middle of its base."""
    from ..engine.resources import data_dir

    vertices, triangles = read_plain_obj(data_dir("presets") / "bunny.obj")
    v = vertices
    v = np.stack([v[:, 0], -v[:, 2], v[:, 1]], axis=1)  # +Y up → +Z up (x, y, z) → (x, −z, y)
    lo, hi = v.min(axis=0), v.max(axis=0)
    v = (v - [0.5 * (lo[0] + hi[0]), 0.5 * (lo[1] + hi[1]), lo[2]]) * (BUNNY_HEIGHT / (hi[2] - lo[2]))
    mesh = bpy.data.meshes.new(name)
    mesh.vertices.add(len(v))
    mesh.vertices.foreach_set("co", v.astype(np.float32).ravel())
    mesh.loops.add(triangles.size)
    mesh.loops.foreach_set("vertex_index", triangles.ravel())
    mesh.polygons.add(len(triangles))
    # Blender 4+ derives each face's loop count from the next face's start.
    mesh.polygons.foreach_set("loop_start", np.arange(0, triangles.size, 3, dtype=np.int32))
    mesh.update(calc_edges=True)
    mesh.validate()
    return mesh
