"""Blender scene → frozen settings (main thread only).

Geometry leaves Blender through ``foreach_get`` into numpy arrays; nothing here keeps a reference to
Blender data, so the result can be handed to the bake worker thread.
"""

from __future__ import annotations

import tempfile
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import bpy
import numpy as np

from ..engine.errors import MochiError
from ..engine.settings_schema import GRAIN, SOURCE, WALL, from_blender, model_settings
# The cache folder's rules live in bake_owner; bake_monitor reads them from here too.
from .bake_owner import cache_directory_setting, cache_folder, check_bake_owner  # noqa: F401
from .properties.schema import blender_values
from .settings import BakeSettings, DomainSettings, SimulationSettings, SourceSettings


def mesh_blender_to_arrays(obj: bpy.types.Object, depsgraph) -> tuple[np.ndarray, np.ndarray]:
    """Vertices [m] (object space, float32 (V, 3)) and triangles (int32 (T, 3)) of the evaluated mesh.

    Raises:
        MochiError: the object is not a mesh.
    """
    if obj.type != "MESH":
        raise MochiError(f"'{obj.name}' is not a mesh object ({obj.type.lower()}); Mochi packs mesh objects only.")
    evaluated = obj.evaluated_get(depsgraph)
    mesh = evaluated.to_mesh()
    try:
        mesh.calc_loop_triangles()
        vertices = np.empty(len(mesh.vertices) * 3, np.float32)
        mesh.vertices.foreach_get("co", vertices)
        triangles = np.empty(len(mesh.loop_triangles) * 3, np.int32)
        mesh.loop_triangles.foreach_get("vertices", triangles)
    finally:
        evaluated.to_mesh_clear()
    return vertices.reshape(-1, 3), triangles.reshape(-1, 3)


def matrix_to_numpy(matrix) -> np.ndarray:
    """A mathutils 4×4 matrix as float64 numpy, shape (4, 4)."""
    return np.array([list(row) for row in matrix], dtype=np.float64)


@contextmanager
def at_frame(scene: bpy.types.Scene, frame: int):
    """Evaluate the scene at ``frame`` for the duration of the block, then go back to the current frame."""
    current = scene.frame_current
    if frame == current:
        yield
        return
    try:
        scene.frame_set(frame)
        yield
    finally:
        scene.frame_set(current)


def velocity_from_animation(obj: bpy.types.Object, scene: bpy.types.Scene, frame: int, fps: float):
    """Linear [m/s] and angular [rad/s] velocity of ``obj`` from its motion between ``frame`` and the next."""
    with at_frame(scene, frame):
        m0 = obj.matrix_world.copy()
    with at_frame(scene, frame + 1):
        m1 = obj.matrix_world.copy()
    linear = (m1.translation - m0.translation) * fps
    delta = m1.to_quaternion() @ m0.to_quaternion().inverted()
    axis, angle = delta.to_axis_angle()
    if angle > np.pi:  # the short way round
        angle -= 2.0 * np.pi
    return tuple(linear), tuple(axis * (angle * fps)), tuple(m0.translation)


def source_blender_to_settings(obj: bpy.types.Object, context, *, frame_start: int, fps: float) -> SourceSettings:
    """Snapshot one particle source as it is at ``frame_start`` (mesh, packing and material settings,
    initial velocity)."""
    with at_frame(context.scene, frame_start):
        return _source_settings(obj, context, frame_start, fps)


def _source_settings(obj, context, frame_start: int, fps: float) -> SourceSettings:
    s = obj.mochi
    vertices, triangles = mesh_blender_to_arrays(obj, context.evaluated_depsgraph_get())
    if s.velocity_source == "ANIMATION":
        linear, angular, pivot = velocity_from_animation(obj, context.scene, frame_start, fps)
    else:
        linear, angular = tuple(s.linear_velocity), tuple(s.angular_velocity)
        pivot = tuple(obj.matrix_world.translation)
    return SourceSettings(
        name=obj.name, vertices=vertices, triangles=triangles, matrix_world=matrix_to_numpy(obj.matrix_world),
        radius=s.radius if s.size_mode == "RADIUS" else None,
        count=s.count if s.size_mode == "COUNT" else None,
        shell_layers=s.shell_layers if s.fill == "SHELL" else 0,
        linear_velocity=linear, angular_velocity=angular, pivot=pivot,
        **blender_values(s, GRAIN), **blender_values(s, SOURCE))


def domain_blender_to_settings(obj: bpy.types.Object) -> DomainSettings:
    """The domain box: the world-space bounding box of the object (rotation is not kept)."""
    corners = np.array([obj.matrix_world @ _vector(c) for c in obj.bound_box], dtype=np.float64)
    lo, hi = corners.min(axis=0), corners.max(axis=0)
    if np.any(hi - lo <= 0.0):
        raise MochiError(f"The domain object '{obj.name}' is flat; its bounding box must have a volume.")
    s = obj.mochi
    return DomainSettings(name=obj.name, lo=tuple(map(float, lo)), hi=tuple(map(float, hi)),
                          open_sides=tuple(sorted(s.open_sides)),
                          **blender_values(s, WALL))


def _vector(values):
    from mathutils import Vector

    return Vector(values)


def check_writable(folder: Path) -> None:
    """Raise MochiError unless files can be written in ``folder`` (or where it would be created).

    The check writes and deletes a temporary file in the nearest existing folder, because permission
    bits do not tell the whole story (read-only mounts, network shares, root on a read-only file
    system); nothing is left behind.
    """
    probe = folder
    while not probe.exists() and probe.parent != probe:
        probe = probe.parent
    if not probe.is_dir():
        raise MochiError(f"The cache folder '{folder}' is inside '{probe}', which is a file.")
    try:
        with tempfile.TemporaryFile(dir=probe):
            pass
    except OSError:
        raise MochiError(f"The cache folder '{folder}' is not writable.") from None


def backend_name(scene: bpy.types.Scene, override: str | None = None) -> str:
    return override or scene.mochi.backend


def scene_blender_to_settings(context, *, frame_count: int | None = None,
                              with_colliders: bool = True, with_cache_folder: bool = True) -> BakeSettings:
    """Snapshot everything a bake needs from the scene (``with_cache_folder=False``: all but where it
    writes, for what needs no folder, e.g. measuring the bake time of an unsaved file).

    Raises:
        MochiError: no particle source, no or several domains, a source or collider that is not a mesh,
            a collider without faces or whose topology changes over the frames, an unsaved relative cache
            folder, or an invalid frame range.
    """
    scene = context.scene
    s = scene.mochi
    fps = scene.render.fps / scene.render.fps_base
    frames = frame_count if frame_count is not None else s.frame_count()
    if frames < 1:
        raise MochiError(f"The bake frame range {s.frame_start}–{s.frame_end} is empty.")
    objects = sorted(scene.objects, key=lambda o: o.name)
    sources = [o for o in objects if o.mochi.role == "SOURCE"]
    domains = [o for o in objects if o.mochi.role == "DOMAIN"]
    if not sources:
        raise MochiError("No object in the scene is a Mochi particle source; set one in Physics > Mochi.")
    if not domains:
        raise MochiError("No object in the scene is the Mochi domain box; set one in Physics > Mochi.")
    if len(domains) > 1:
        raise MochiError(f"{len(domains)} objects are Mochi domain boxes ({', '.join(o.name for o in domains)});"
                         " keep one.")
    simulation = SimulationSettings(
        gravity=tuple(s.gravity),
        gravity_axis=tuple(s.gravity_axis) if s.use_rotating_gravity else None,
        gravity_rate=s.gravity_rate if s.use_rotating_gravity else 0.0,
        dt=s.dt if s.timestep_mode == "FIXED" else None,
        substeps=s.substeps if s.timestep_mode == "SUBSTEPS" else None,
        # Hertz–Mindlin takes its stiffness from the Young's moduli; the engine refuses a given one.
        stiffness=None if s.use_auto_stiffness or s.contact_law == "HERTZ" else s.stiffness,
        backend=s.backend, fps=fps, frame_start=s.frame_start, frame_count=frames,
        cache_folder=cache_folder(scene) if with_cache_folder else Path(), scene_name=scene.name,
        blend_file=bpy.data.filepath, scene_token=s.bake_token,
        **{m.key: from_blender(m, getattr(s, m.blender)) for m in model_settings(blender_only=True)})
    if s.use_rotating_gravity and not any(s.gravity_axis):
        raise MochiError("The rotating gravity axis is zero; give it a direction.")
    from .force_fields import scene_fields_blender_to_engine

    with at_frame(scene, s.frame_start):  # the bake starts from the scene as it is at its first frame
        translation = scene_fields_blender_to_engine(scene)
        domain = domain_blender_to_settings(domains[0])
        source_settings = tuple(source_blender_to_settings(o, context, frame_start=s.frame_start, fps=fps)
                                for o in sources)
    from .colliders import colliders_blender_to_settings

    # Without colliders (the out-of-date check of the bake panel): capturing them steps through frames.
    colliders = () if not with_colliders else colliders_blender_to_settings(context, [o for o in objects if o.mochi.role == "COLLIDER"],
                                              frame_start=s.frame_start, frame_count=frames, fps=fps)
    return BakeSettings(simulation=replace(simulation, fields=translation.fields), domain=domain,
                        sources=source_settings, colliders=colliders, notes=translation.notes)
