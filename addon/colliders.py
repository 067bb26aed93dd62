"""Blender collider objects → frozen ``ColliderSettings`` (main thread only).

A collider's surface is captured over the whole bake before the worker starts, so the worker never
touches Blender data:

* An object whose mesh cannot change shape (no modifiers, no shape keys, no armature) has its mesh
  read once and its world matrix read per frame. When the matrix's scale and shear stay constant it
  becomes a rigid collider (body vertices with that scale baked in, a rotation and translation per
  frame); when they change, its world vertices per frame are computed from the matrices (deforming);
  when the matrix never changes, it is static.
* Any other object is evaluated per frame (modifiers, shape keys and armatures applied) and its world
  vertices are read through ``foreach_get`` (deforming; static when no frame differs). Its topology
  must stay the same: the engine interpolates vertices between frames.

Key times are (frame − frame_start) / fps [s], the engine's time (step × dt) at each cache frame.
"""

from __future__ import annotations

import bpy
import numpy as np

from ..engine.errors import MochiError
from ..engine.settings_schema import COLLIDER
from .properties.schema import blender_values
from .settings import ColliderSettings
from .snapshot import matrix_to_numpy, mesh_blender_to_arrays

#: Largest deviation of R·Rᵀ from the identity [1] still read as a rigid motion: Blender matrices are
#: float32, so a constant scale leaves ~1e-7 of noise; a changing scale leaves far more.
RIGID_TOLERANCE = 1.0e-4


def collider_deforms(obj: bpy.types.Object) -> bool:
    """Whether the object's evaluated mesh may differ from its mesh data (so it is captured per frame)."""
    return bool(obj.modifiers) or obj.data.shape_keys is not None or obj.find_armature() is not None


def _evaluated_world_mesh(obj, depsgraph, matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """World vertices [m] float32 (V, 3) and triangles int32 (T, 3) of the evaluated mesh."""
    local, triangles = mesh_blender_to_arrays(obj, depsgraph)
    world = local.astype(np.float64) @ matrix[:3, :3].T + matrix[:3, 3]
    return world.astype(np.float32), triangles


def _rotations_with_constant_shape(linear: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """Split 3×3 maps A_k = R_k · P into rotations R_k and one constant P (scale, shear), or None.

    Args:
        linear: The linear part of the world matrix per key, float64 (key_count, 3, 3).

    Returns:
        (rotations float64 (key_count, 3, 3), P float64 (3, 3)), or None when no constant P fits
        (the scale or shear changes, or the matrix is singular).
    """
    u, s, vt = np.linalg.svd(linear[0])
    if s[-1] <= 1.0e-9 * max(s[0], 1.0e-30):
        return None
    if np.linalg.det(u @ vt) < 0:  # mirrored: keep a proper rotation, put the reflection into P
        u[:, -1] *= -1.0
        s = s.copy()
        s[-1] *= -1.0
    shape = vt.T @ np.diag(s) @ vt
    rotations = linear @ np.linalg.inv(shape)
    error = np.abs(rotations @ rotations.transpose(0, 2, 1) - np.eye(3)).max()
    if error > RIGID_TOLERANCE or np.any(np.linalg.det(rotations) <= 0):
        return None
    # Project onto the nearest rotations so float32 noise does not fail the engine's exact check.
    u, _, vt = np.linalg.svd(rotations)
    return u @ vt, shape


def _rigid_or_static(surface: dict, local: np.ndarray, triangles: np.ndarray, matrices: np.ndarray,
                     times: np.ndarray) -> ColliderSettings:
    """Settings of a collider whose mesh is fixed and whose world matrix is ``matrices`` (K, 4, 4)."""
    linear, translations = matrices[:, :3, :3], matrices[:, :3, 3]
    if len(times) == 1 or np.all(matrices == matrices[0]):
        world = local @ linear[0].T + translations[0]
        return ColliderSettings(vertices=world, triangles=triangles, **surface)
    split = _rotations_with_constant_shape(linear)
    if split is None:  # the scale changes: the world vertices per frame follow from the matrices
        keys = np.einsum("kij,vj->kvi", linear, local) + translations[:, None, :]
        return _deforming_or_static(surface, keys.astype(np.float32), triangles, times)
    rotations, shape = split
    return ColliderSettings(vertices=local @ shape.T, triangles=triangles, times=times,
                            translations=np.ascontiguousarray(translations), rotations=rotations, **surface)


def _deforming_or_static(surface: dict, keys: np.ndarray, triangles: np.ndarray,
                         times: np.ndarray) -> ColliderSettings:
    vertices = keys[0].astype(np.float64)
    if len(times) == 1 or np.all(keys == keys[0]):
        return ColliderSettings(vertices=vertices, triangles=triangles, **surface)
    return ColliderSettings(vertices=vertices, triangles=triangles, times=times, key_vertices=keys, **surface)


def colliders_blender_to_settings(context, objects, *, frame_start: int, frame_count: int,
                                  fps: float) -> tuple[ColliderSettings, ...]:
    """Capture the colliders over the bake's frames, then put the scene back at its current frame.

    Args:
        objects: Mesh objects with the collider role, in a fixed order.
        frame_start: Scene frame of cache frame 1.
        frame_count: Number of cache frames.
        fps: Frames per second of the scene [1/s].

    Raises:
        MochiError: a collider is not a mesh, has no faces or NaN coordinates, or its topology changes
            between frames (naming the object and the frames).
    """
    for obj in objects:
        if obj.type != "MESH":
            raise MochiError(f"'{obj.name}' has the collider role but is not a mesh ({obj.type.lower()} object); "
                             "Mochi colliders are mesh objects.")
    if not objects:
        return ()
    from ..engine.colliders import check_collider_mesh  # scipy: not needed to draw the panel

    scene = context.scene
    times = np.arange(frame_count, dtype=np.float64) / fps
    deforming = {obj.name for obj in objects if collider_deforms(obj)}
    matrices = {obj.name: np.empty((frame_count, 4, 4)) for obj in objects}
    meshes: dict[str, tuple[np.ndarray, np.ndarray]] = {}  # fixed meshes: object-space vertices, triangles
    keys: dict[str, np.ndarray] = {}  # evaluated meshes: world vertices per frame
    current = scene.frame_current
    try:
        for k in range(frame_count):
            frame = frame_start + k
            scene.frame_set(frame)
            depsgraph = context.evaluated_depsgraph_get()
            for obj in objects:
                matrix = matrices[obj.name][k] = matrix_to_numpy(obj.matrix_world)
                if obj.name not in deforming:
                    if k == 0:
                        vertices, triangles = mesh_blender_to_arrays(obj, depsgraph)
                        check_collider_mesh(vertices, triangles, obj.name)
                        meshes[obj.name] = (vertices.astype(np.float64), triangles)
                    continue
                world, triangles = _evaluated_world_mesh(obj, depsgraph, matrix)
                if k == 0:
                    check_collider_mesh(world, triangles, obj.name)
                    meshes[obj.name] = (None, triangles)
                    keys[obj.name] = np.empty((frame_count, *world.shape), np.float32)
                elif keys[obj.name].shape[1] != world.shape[0] or not np.array_equal(meshes[obj.name][1], triangles):
                    raise MochiError(
                        f"The collider '{obj.name}' changes its topology between frames {frame_start} and {frame} "
                        f"({keys[obj.name].shape[1]} vertices and {len(meshes[obj.name][1])} triangles, then "
                        f"{world.shape[0]} and {len(triangles)}); Mochi needs the same vertices and faces at every "
                        "frame, so apply the modifier that changes them or stop animating it.")
                keys[obj.name][k] = world
    finally:
        scene.frame_set(current)
    result = []
    for obj in objects:
        s = obj.mochi
        surface = dict(name=obj.name, **blender_values(s, COLLIDER))
        local, triangles = meshes[obj.name]
        if obj.name in deforming:
            result.append(_deforming_or_static(surface, keys[obj.name], triangles, times))
        else:
            result.append(_rigid_or_static(surface, local, triangles, matrices[obj.name], times))
    return tuple(result)
