"""The ``[[colliders]]`` tables of a preset, and the colliders they describe.

Schema (every key optional except ``type`` and ``path``)::

    [[colliders]]
    type = "mesh"                  # the only type so far: a triangle mesh file read by trimesh
    path = "meshes/bowl.obj"       # relative to the preset
    name = "bowl"                  # for messages (default: the file name)
    thickness = 0.002              # shell thickness [m]; grains keep r + thickness/2 from the surface
    restitution = 0.5              # of the surface, averaged with the grain material's
    friction = 0.5                 # Coulomb μ of the surface, averaged likewise
    rolling_friction = 0.0         # rolling resistance μ_r of the surface, averaged likewise
    cohesion = 0.0                 # SJKR cohesion c of the surface [Pa]; a contact uses the smaller c
    scale = 1.0                    # number or [sx, sy, sz], applied to the file's vertices first
    rotation = [0, 0, 0]           # Euler XYZ [degrees] (Blender's 'XYZ'), about the mesh origin
    position = [0, 0, 0]           # where the mesh origin goes [m]
    angular_velocity = [0, 0, 0]   # constant spin [rad/s] about ``pivot`` ...
    pivot = [x, y, z]              # ... a world point at t = 0 (default: position)
    velocity = [0, 0, 0]           # linear velocity of the pivot [m/s]
    keyframes = [{ time = 0.0, position = [..], rotation = [..] }, ...]   # instead of the four above

A collider with neither motion keys nor keyframes is static. World vertices at time t are
pose(t) · (scale ⊙ file vertices), the order Blender applies an object's transform in.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .settings_schema import COLLIDER, settings_dataclass, settings_for, surface_values

COLLIDER_KEYS = {"type", "name", "path", *(s.key for s in settings_for(COLLIDER)), "scale", "rotation", "position",
                 "angular_velocity", "pivot", "velocity", "keyframes"}
KEYFRAME_KEYS = {"time", "position", "rotation"}
MOTION_KEYS = ("rotation", "position", "angular_velocity", "pivot", "velocity")


@dataclass(frozen=True)
class _ColliderSpec:
    """One validated ``[[colliders]]`` table (see the module docstring for the meaning of each key)."""

    kind: str
    path: str
    name: str
    scale: tuple[float, float, float] = (1.0, 1.0, 1.0)
    rotation: tuple[float, float, float] = (0.0, 0.0, 0.0)
    position: tuple[float, float, float] = (0.0, 0.0, 0.0)
    angular_velocity: tuple[float, float, float] = (0.0, 0.0, 0.0)
    pivot: tuple[float, float, float] | None = None
    velocity: tuple[float, float, float] = (0.0, 0.0, 0.0)
    keyframes: tuple[tuple[float, tuple[float, float, float], tuple[float, float, float]], ...] = ()


#: The surface fields (thickness, friction, ...) are engine.settings_schema's collider settings.
ColliderSpec = settings_dataclass("ColliderSpec", _ColliderSpec, COLLIDER)


def parse_colliders(checker, raw: Any, folder: Path) -> tuple[ColliderSpec, ...]:
    """Validate the ``colliders`` array of a preset; ``checker`` is the preset's ``_Checker``."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        checker.fail("[[colliders]]", "must be an array of tables")
    return tuple(_parse_one(checker, entry, f"[[colliders]] #{index + 1}", folder) for index, entry in enumerate(raw))


def _parse_one(c, raw: Any, where: str, folder: Path) -> ColliderSpec:
    e = c.table(raw, where, COLLIDER_KEYS)
    kind = c.string(e, where, "type", None, choices=("mesh",))
    if kind is None:
        c.fail(where, "needs a type (mesh)")
    path = c.string(e, where, "path", "")
    if not path:
        c.fail(where, "of type mesh needs a path")
    if "scale" in e and not isinstance(e["scale"], list):
        s = c.number(e, where, "scale", 1.0, low=0, low_open=True)
        scale = (s, s, s)
    else:
        scale = c.vector(e, where, "scale", (1.0, 1.0, 1.0))
        if min(scale) <= 0:
            c.fail(f"{where} scale", f"must be positive, not {list(scale)!r}")
    keyframes = ()
    if "keyframes" in e:
        clash = [key for key in MOTION_KEYS if key in e]
        if clash:
            c.fail(where, f"sets both keyframes and {clash[0]}; give the motion one way")
        raw_keys = e["keyframes"]
        if not isinstance(raw_keys, list) or not raw_keys:
            c.fail(f"{where} keyframes", "must be a non-empty array of tables {time, position, rotation}")
        keys = []
        for index, key in enumerate(raw_keys):
            at = f"{where} keyframes #{index + 1}"
            k = c.table(key, at, KEYFRAME_KEYS)
            if "time" not in k:
                c.fail(at, "needs a time")
            keys.append((c.number(k, at, "time", 0.0), c.vector(k, at, "position", (0.0, 0.0, 0.0)),
                         c.vector(k, at, "rotation", (0.0, 0.0, 0.0))))
        times = [k[0] for k in keys]
        if any(b <= a for a, b in zip(times, times[1:])):
            c.fail(f"{where} keyframes", f"must have strictly increasing times, not {times!r}")
        keyframes = tuple(keys)
    return ColliderSpec(
        kind=kind, path=str((folder / path).resolve()), name=c.string(e, where, "name", Path(path).name),
        **c.surface(e, where, COLLIDER),
        scale=scale,
        rotation=c.vector(e, where, "rotation", (0.0, 0.0, 0.0)),
        position=c.vector(e, where, "position", (0.0, 0.0, 0.0)),
        angular_velocity=c.vector(e, where, "angular_velocity", (0.0, 0.0, 0.0)),
        pivot=c.vector(e, where, "pivot", None),
        velocity=c.vector(e, where, "velocity", (0.0, 0.0, 0.0)),
        keyframes=keyframes)


def collider_from_spec(spec: ColliderSpec):
    """The ``engine.colliders.Collider`` a spec describes (reads its mesh file).

    Raises:
        MochiError: a missing or unreadable mesh, no faces, NaN coordinates.
    """
    from .colliders import Collider, RigidMotionAnalytic, RigidMotionKeyframes, euler_rotation, load_collider_mesh

    vertices, triangles = load_collider_mesh(spec.path)
    body = vertices * np.asarray(spec.scale, np.float64)
    surface = dict(name=spec.name, triangles=triangles, **surface_values(spec, COLLIDER))
    if spec.keyframes:
        motion = RigidMotionKeyframes(times=[k[0] for k in spec.keyframes],
                                      translations=[k[1] for k in spec.keyframes],
                                      rotations=[euler_rotation(k[2]) for k in spec.keyframes])
        return Collider(vertices=body, motion=motion, **surface)
    rotation = euler_rotation(spec.rotation)
    if any(spec.angular_velocity) or any(spec.velocity):
        motion = RigidMotionAnalytic(rotation0=rotation, translation0=spec.position,
                                     pivot=spec.position if spec.pivot is None else spec.pivot,
                                     angular_velocity=spec.angular_velocity, velocity=spec.velocity)
        return Collider(vertices=body, motion=motion, **surface)
    return Collider(vertices=body @ rotation.T + np.asarray(spec.position, np.float64), **surface)


def colliders_from_specs(specs: tuple[ColliderSpec, ...]):
    """A ``ColliderSet`` of the specs, or None when there are none."""
    if not specs:
        return None
    from .colliders import ColliderSet

    return ColliderSet(tuple(collider_from_spec(s) for s in specs))
