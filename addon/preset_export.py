"""A Blender scene's snapshot saved as a preset: the TOML document and the meshes it names (no bpy).

``settings_to_preset`` turns the ``BakeSettings`` a bake would use into what ``engine.preset_writer``
writes, so that ``mochi bake PRESET.toml`` bakes the same scene: the same resolved physics and the same
packed spheres, bit for bit. The preset keeps Blender's coordinates (``[scene] up = "z"``); each
source becomes a mesh emitter whose mesh file holds its world-space vertices exactly as the packer
places them, with the seed, material, object id, velocities and pivot the Blender bake gives it.
Static colliders are saved as meshes, rigidly moving ones with one keyframe per captured frame; a
deforming collider cannot be expressed in a preset and is refused.
"""

from __future__ import annotations

import numpy as np

from ..engine.settings_schema import AUTO, COLLIDER, GRAIN, SOURCE, WALL, model_tables, surface_values
from .settings import BakeSettings


def _vector(values) -> list[float]:
    return [float(v) for v in values]


def _emitter(index: int, source, seed: int, mesh_path: str) -> dict:
    emitter = {"type": "mesh", "path": mesh_path, "material": source.name, "object_id": index,
               "shell": int(source.shell_layers), "seed": seed,
               "velocity": _vector(source.linear_velocity), "angular_velocity": _vector(source.angular_velocity),
               "pivot": _vector(source.pivot), **surface_values(source, SOURCE, blender_only=True)}
    if source.radius is not None:
        emitter["radius"] = float(source.radius)
    else:
        emitter["count"] = int(source.count)
    return emitter


def _collider(collider, mesh_path: str) -> dict:
    from scipy.spatial.transform import Rotation

    from ..engine.errors import MochiError

    entry = {"type": "mesh", "path": mesh_path, "name": collider.name, **surface_values(collider, COLLIDER)}
    if collider.kind == "deforming":
        raise MochiError(f"The collider '{collider.name}' deforms over the frames, which a preset cannot hold; "
                         "make it static or rigid (no modifiers or shape keys that move it) to save a preset.")
    if collider.kind == "rigid":
        angles = Rotation.from_matrix(collider.rotations).as_euler("xyz", degrees=True)
        entry["keyframes"] = [{"time": float(t), "position": _vector(p), "rotation": _vector(a)}
                              for t, p, a in zip(collider.times, collider.translations, angles)]
    return entry


def settings_to_preset(settings: BakeSettings, *, name: str, description: str = "") -> tuple[dict, dict]:
    """The preset document and its meshes for a scene snapshot.

    Args:
        settings: What a bake of the scene would use (``addon.snapshot.scene_blender_to_settings``).
        name: The preset's name.
        description: One line for the preset menu's tooltip.

    Returns:
        (document, meshes): the TOML tables for ``engine.preset_writer.write_preset``, and relative
        mesh path → (vertices [m] float64 (V, 3), triangles int (T, 3)).

    Raises:
        MochiError: a collider that deforms.
    """
    from ..engine.packing.mesh import place_vertices
    from ..engine.preset_writer import MESH_FOLDER, field_to_table, mesh_file_name

    sim, dom = settings.simulation, settings.domain
    meshes: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def mesh_path(object_name: str) -> str:
        path = f"{MESH_FOLDER}/{mesh_file_name(object_name)}"
        stem, number = path[:-4], 2
        while path in meshes:  # two objects whose names map to one file name
            path, number = f"{stem}_{number}.ply", number + 1
        return path

    emitters, materials = [], []
    for index, source in enumerate(settings.sources):
        path = mesh_path(source.name)
        # The packer's own placement, so the file holds the exact vertices a Blender bake packs.
        meshes[path] = (place_vertices(source.vertices, transform=source.matrix_world, name=source.name),
                        np.asarray(source.triangles))
        emitters.append(_emitter(index, source, sim.seed + index, path))
        materials.append({"name": source.name, **surface_values(source, GRAIN)})
    colliders = []
    for collider in settings.colliders:
        path = mesh_path(collider.name)
        meshes[path] = (np.asarray(collider.vertices, np.float64), np.asarray(collider.triangles))
        colliders.append(_collider(collider, path))

    model = model_tables(sim, blender_only=True)  # [contact], and the model's keys of [time] and [scene]
    time = {"dt": AUTO if sim.dt is None else float(sim.dt), "stiffness": AUTO if sim.stiffness is None
            else float(sim.stiffness), **model["time"]}
    if sim.dt is None and sim.substeps is not None:
        time.pop("dt")
        time["substeps"] = int(sim.substeps)
    gravity = {"vector": _vector(sim.gravity)}
    if sim.gravity_axis is not None:
        gravity.update(rotation_axis=_vector(sim.gravity_axis), rotation_rate=float(sim.gravity_rate))
    document = {
        "scene": {"name": name, "description": description, "fps": float(sim.fps), "frames": int(sim.frame_count),
                  **model["scene"], "up": "z"},
        "time": time,
        "contact": model["contact"],
        "domain": {"lo": _vector(dom.lo), "hi": _vector(dom.hi), "open": list(dom.open_sides),
                   **surface_values(dom, WALL)},
        "gravity": gravity,
        "materials": materials,
        "emitters": emitters,
    }
    if sim.fields:  # the panel's fields and the scene's force-field objects, as the bake takes them
        document["fields"] = [field_to_table(f) for f in sim.fields]
    if colliders:
        document["colliders"] = colliders
    return document, meshes
