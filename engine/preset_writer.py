"""Writing presets: a TOML document and the mesh files its emitters and colliders name.

The inverse of ``engine.preset``'s reader for what a scene can be saved as. Meshes are written as
binary PLY with float64 vertices (read back by ``engine.packing.mesh.read_trimesh``), so a mesh read back is bit-identical to the one written and a saved
scene packs exactly the same spheres. Every file is written atomically; the TOML last, so a preset on
disk never names a mesh that is not there. An existing preset or mesh file is replaced only when Mochi
can prove it wrote it (``engine.output_files``: saving a scene again over its own preset works), else
refused before anything is written, unless ``overwrite``.
"""

from __future__ import annotations

import os
import re
import tomllib
from pathlib import Path

import numpy as np

from .errors import MochiError
from .output_files import OVERWRITE_HINT, OutputPlan, plan_outputs
from .preset import parse_preset

#: Folder beside the TOML that holds its meshes.
MESH_FOLDER = "meshes"
#: ForceField attributes that each kind of field reads (the rest are left out of its [[fields]] table).
FIELD_KEYS_BY_KIND = {
    "uniform": ("vector",),
    "rotating": ("vector", "axis", "rate"),
    "vortex": ("center", "axis", "strength", "core_radius", "profile", "falloff_power", "min_distance",
               "max_distance", "shape", "z_direction", "flow"),
    "sampled": ("path", "lo", "hi", "strength"),
    "force": ("center", "axis", "strength", "falloff_power", "min_distance", "max_distance", "shape",
              "z_direction", "flow"),
    "wind": ("center", "axis", "strength", "falloff_power", "min_distance", "max_distance", "shape",
             "z_direction", "flow"),
    "turbulence": ("center", "axis", "strength", "size", "seed", "falloff_power", "min_distance",
                   "max_distance", "shape", "z_direction", "flow"),
}


def field_to_table(field) -> dict:
    """One ``engine.fields.ForceField`` as a preset's [[fields]] table: its type and the settings its kind
    reads that differ from the defaults (a sampled field's path stays as given, absolute when it is)."""
    from .fields import ForceField

    default = ForceField(kind=field.kind)
    table = {"type": field.kind}
    for key in FIELD_KEYS_BY_KIND[field.kind]:
        value = getattr(field, key)
        if key == "path" or value != getattr(default, key):
            table[key] = [float(v) for v in value] if isinstance(value, tuple) else value
    if field.kind in ("rotating", "vortex", "force", "wind", "turbulence") and "axis" not in table:
        table["axis"] = [float(v) for v in default.axis]
    return table


def mesh_file_name(name: str) -> str:
    """A file name for an object's mesh: letters, digits, '-', '_' and '.' kept, the rest '_'."""
    return (re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._") or "mesh") + ".ply"


def write_mesh_ply(path: str | os.PathLike, vertices: np.ndarray, triangles: np.ndarray, plan: OutputPlan) -> None:
    """A triangle mesh as binary PLY, float64 vertices [m] (V, 3) and int32 faces (T, 3), through ``plan``.

    Written with plyfile rather than trimesh's exporter, which rounds vertices to float32.
    """
    from plyfile import PlyData, PlyElement

    vertices = np.asarray(vertices, np.float64)
    table = np.empty(len(vertices), dtype=[("x", "<f8"), ("y", "<f8"), ("z", "<f8")])
    table["x"], table["y"], table["z"] = vertices[:, 0], vertices[:, 1], vertices[:, 2]
    faces = np.empty(len(triangles), dtype=[("vertex_indices", "i4", (3,))])
    faces["vertex_indices"] = np.asarray(triangles, np.int32)
    data = PlyData([PlyElement.describe(table, "vertex"), PlyElement.describe(faces, "face")], byte_order="<")
    plan.write(path, lambda handle: data.write(handle))


def write_preset(path: str | os.PathLike, document: dict, meshes: dict[str, tuple[np.ndarray, np.ndarray]], *,
                 overwrite: bool = False, overwrite_hint: str = OVERWRITE_HINT) -> Path:
    """Write ``document`` as the preset ``path`` and each mesh beside it under ``meshes/``.

    Args:
        path: The .toml to write.
        document: The preset's tables, as ``engine.preset.parse_preset`` reads them; mesh paths relative
            to the preset (``meshes/NAME.ply``).
        meshes: Relative path (as named in the document) → (vertices [m] (V, 3), triangles (T, 3)).
        overwrite: Replace a preset file or mesh file that Mochi cannot prove it wrote (else refused,
            before anything is written: a meshes/Cube.ply beside OUT may be someone else's).
        overwrite_hint: How a refusal says to allow that ('add --overwrite' on the command line).

    Returns:
        The preset's absolute path.

    Raises:
        MochiError: a path that is not a .toml, a folder that cannot be written, a file Mochi cannot
            prove it wrote without ``overwrite``, or a document that would not read back as a valid preset (all
            checked before anything is written).
    """
    import tomli_w

    path = Path(path).absolute()
    if path.suffix.lower() != ".toml":
        raise MochiError(f"A preset is a .toml file, not '{path.name}'.")
    text = tomli_w.dumps(document)
    parse_preset(tomllib.loads(text), str(path))  # refuse before writing what would not load
    for relative in meshes:
        if Path(relative).parent.as_posix() != MESH_FOLDER or not Path(relative).name:
            raise ValueError(f"mesh path {relative!r} is not in {MESH_FOLDER}/")  # the writer's own names
    plan = plan_outputs([path, *(path.parent / relative for relative in meshes)], overwrite=overwrite,
                        hint=overwrite_hint)
    for relative, (vertices, triangles) in meshes.items():
        write_mesh_ply(path.parent / relative, vertices, triangles, plan)
    return plan.write(path, lambda handle: handle.write(text.encode("utf-8")))
