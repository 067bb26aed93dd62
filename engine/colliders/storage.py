"""Colliders in a bake cache: DIR/colliders/colliders.json + DIR/colliders/colliders.npz.

The JSON lists each collider's name, surface (thickness, restitution, friction, rolling_friction,
cohesion; a file written before the last two existed loads with them 0) and motion parameters;
the npz holds its arrays: ``vertices_<i>``, ``triangles_<i>`` and, for keyframed motions,
``<array>_<i>`` (``times``, ``translations``, ``rotations`` or ``vertices`` per key as
``key_vertices_<i>``). Both are written atomically, so a resumed bake needs nothing but the cache.
"""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import numpy as np

from ..atomic import write_atomic
from ..errors import MochiError
from ..settings_schema import COLLIDER, settings_for, surface_values
from .collider import Collider
from .motion import motion_from_json

FOLDER = "colliders"
JSON_NAME = "colliders.json"
ARRAYS_NAME = "colliders.npz"
FORMAT_VERSION = 1
#: The keys every collider file has had since format 1; a surface setting added later (rolling_friction,
#: cohesion, anything new in engine.settings_schema) is missing from older files and reads as its default.
KEYS_OF_EVERY_FILE = ("name", "thickness", "restitution", "friction", "motion")


def _array_key(name: str, index: int) -> str:
    # The deforming motion's own 'vertices' would clash with the rest vertices.
    return f"key_{name}_{index}" if name == "vertices" else f"{name}_{index}"


def encode_colliders(colliders: tuple[Collider, ...]) -> dict[str, bytes]:
    """The files ``save_colliders`` writes, as {name inside colliders/: bytes} (a bake records their
    digests in its manifest before it writes them)."""
    entries = []
    arrays: dict[str, np.ndarray] = {}
    for index, c in enumerate(colliders):
        motion = {"kind": "static"} if c.motion is None else c.motion.to_json()
        entries.append({"name": c.name, **surface_values(c, COLLIDER), "motion": motion})
        arrays[f"vertices_{index}"] = c.vertices
        arrays[f"triangles_{index}"] = c.triangles
        if c.motion is not None:
            for name, value in c.motion.arrays().items():
                arrays[_array_key(name, index)] = value
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    document = {"format": "mochi-colliders", "format_version": FORMAT_VERSION, "colliders": entries}
    return {ARRAYS_NAME: buffer.getvalue(), JSON_NAME: json.dumps(document, indent=2).encode("utf-8")}


def save_colliders(colliders: tuple[Collider, ...], folder: str | os.PathLike) -> Path:
    """Write the ``colliders`` (a ``ColliderSet``'s ``colliders``) under ``folder``/colliders/; returns that folder.

    Raises:
        MochiError: the folder cannot be written.
    """
    target = Path(folder) / FOLDER
    try:
        target.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise MochiError(f"Cannot create '{target}': {exc.strerror or exc}.") from None
    for name, data in encode_colliders(colliders).items():
        write_atomic(target / name, lambda handle, data=data: handle.write(data))
    return target


def read_colliders(folder: str | os.PathLike) -> tuple[Collider, ...]:
    """Read the colliders ``save_colliders`` wrote under ``folder`` (``collider_set.load_colliders``
    makes them a ``ColliderSet``; this module does not import it, so neither depends on the other both ways).

    Raises:
        MochiError: missing or unreadable files, or a format this engine does not know.
    """
    target = Path(folder) / FOLDER
    try:
        document = json.loads((target / JSON_NAME).read_text(encoding="utf-8"))
        with np.load(target / ARRAYS_NAME) as data:
            arrays = {name: data[name] for name in data.files}
    except (OSError, ValueError) as exc:
        raise MochiError(f"The colliders of the cache '{folder}' cannot be read ({exc}).") from None
    if document.get("format") != "mochi-colliders" or document.get("format_version") != FORMAT_VERSION:
        raise MochiError(f"'{target / JSON_NAME}' is not a Mochi collider file of format version {FORMAT_VERSION}.")
    colliders = []
    for index, entry in enumerate(document["colliders"]):
        motion_arrays = {name: arrays[_array_key(name, index)]
                         for name in ("times", "translations", "rotations", "vertices")
                         if _array_key(name, index) in arrays}
        colliders.append(Collider(name=entry["name"], vertices=arrays[f"vertices_{index}"],
                                  triangles=arrays[f"triangles_{index}"],
                                  **{s.key: float(entry[s.key] if s.key in KEYS_OF_EVERY_FILE
                                                  else entry.get(s.key, s.default)) for s in settings_for(COLLIDER)},
                                  motion=motion_from_json(entry["motion"], motion_arrays)))
    return tuple(colliders)
