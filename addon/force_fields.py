"""The scene's fields as engine fields (main thread): the panel's own fields (Scene.mochi.fields) and
Blender's force-field objects (Physics > Force Field) of the kinds the engine has.

Blender's Force, Wind, Vortex and Turbulence fields translate with their strength, shape (point or
plane), Z direction, falloff power, min/max distance and flow, the object's origin as centre and its Z
axis as axis, as Blender evaluates them (``effect.cc``, formulas in ``engine.fields``); strengths keep
their value, as accelerations of a 1 kg Blender particle (``engine.fields``, Units). What the engine
cannot do is named in one sentence per bake (``FieldTranslation.notes``), never dropped silently:
other field types (Magnetic, Harmonic, Charge, Lennard-Jones, Texture, Curve Guide, Boid, Drag, Fluid
Flow), Line/Surface/Points shapes, Tube and Cone falloffs, noise, absorption and 1/r² gravitation. A
field's settings and its object's transform are read once, at the bake's first frame.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import bpy
import numpy as np

from ..engine.errors import MochiError
from ..engine.fields import ForceField

#: Blender field type → engine kind.
SUPPORTED_TYPES = {"FORCE": "force", "WIND": "wind", "VORTEX": "vortex", "TURBULENCE": "turbulence"}
Z_DIRECTIONS = {"BOTH": "both", "POSITIVE": "positive", "NEGATIVE": "negative"}


@dataclass(frozen=True)
class FieldTranslation:
    """The engine fields of a scene and what could not be translated.

    Attributes:
        fields: Engine fields, the panel's first, then the force-field objects' by object name.
        notes: One sentence per kind of problem, naming the objects (empty when all translated).
    """

    fields: tuple[ForceField, ...]
    notes: tuple[str, ...]


def panel_field_to_engine(item) -> ForceField:
    """One item of Scene.mochi.fields as an engine field.

    Raises:
        MochiError: a zero axis, or a sampled field without a file.
    """
    kind = item.kind.lower()
    if kind in ("rotating", "vortex") and not any(item.axis):
        raise MochiError(f"The {kind} field '{item.name}' has a zero axis; give it a direction.")
    if kind == "sampled":
        path = bpy.path.abspath(item.filepath) if item.filepath else ""
        if not path:
            raise MochiError(f"The sampled field '{item.name}' has no .npy file; choose one in the Fields panel.")
        return ForceField(kind=kind, path=path, lo=tuple(item.lo), hi=tuple(item.hi), strength=item.strength)
    return ForceField(kind=kind, vector=tuple(item.vector), axis=tuple(item.axis), rate=item.rate,
                      center=tuple(item.center), strength=item.strength, core_radius=item.core_radius)


def field_object_to_engine(obj: bpy.types.Object) -> tuple[ForceField, list[str]]:
    """A Blender force-field object of a supported type as an engine field, and the names of the
    settings the engine does not have (for the notes)."""
    field = obj.field
    matrix = np.array(obj.matrix_world, dtype=np.float64)
    centre = tuple(float(v) for v in matrix[:3, 3])
    axis = matrix[:3, 2]
    norm = float(np.linalg.norm(axis))
    axis = tuple(float(v) for v in (axis / norm if norm > 0.0 else (0.0, 0.0, 1.0)))
    unsupported = []
    if field.shape not in ("POINT", "PLANE"):
        unsupported.append(f"{field.shape.title()} shape")
    if field.falloff_type != "SPHERE":
        unsupported.append(f"{field.falloff_type.title()} falloff")
    if field.noise > 0.0:
        unsupported.append("noise")
    if getattr(field, "use_gravity_falloff", False) and field.type == "FORCE":
        unsupported.append("gravitation")
    if field.use_absorption:
        unsupported.append("absorption")
    kind = SUPPORTED_TYPES[field.type]
    plane = field.shape == "PLANE"
    common = dict(center=centre, axis=axis, strength=float(field.strength), falloff_power=float(field.falloff_power),
                  min_distance=float(field.distance_min) if field.use_min_distance else 0.0,
                  max_distance=float(field.distance_max) if field.use_max_distance else 0.0,
                  shape="plane" if plane else "point", z_direction=Z_DIRECTIONS[field.z_direction],
                  flow=float(field.flow))
    if kind == "vortex":
        return ForceField(kind=kind, profile="blender_plane" if plane else "blender_point", **common), unsupported
    if kind == "turbulence":
        if field.use_global_coords:
            common["center"] = (0.0, 0.0, 0.0)
        return ForceField(kind=kind, size=float(field.size) if field.size > 0.0 else 1.0, seed=int(field.seed),
                          **common), unsupported
    return ForceField(kind=kind, **common), unsupported


def _animated(obj: bpy.types.Object) -> bool:
    data = obj.animation_data
    return data is not None and (data.action is not None or len(data.drivers) > 0)


def scene_fields_blender_to_engine(scene: bpy.types.Scene) -> FieldTranslation:
    """Every field of the scene as it is now (call it at the bake's first frame).

    Raises:
        MochiError: a panel field that is incomplete.
    """
    fields = [panel_field_to_engine(item) for item in scene.mochi.fields]
    skipped, partial, animated, off = [], [], [], []
    for obj in sorted(scene.objects, key=lambda o: o.name):
        field = obj.field
        if field is None or field.type == "NONE":
            continue
        if field.type not in SUPPORTED_TYPES:
            skipped.append(f"'{obj.name}' ({field.type.replace('_', ' ').title()})")
            continue
        if not field.apply_to_location:
            off.append(f"'{obj.name}'")
            continue
        engine_field, unsupported = field_object_to_engine(obj)
        fields.append(engine_field)
        if unsupported:
            partial.append(f"'{obj.name}' ({', '.join(unsupported)})")
        if _animated(obj):
            animated.append(f"'{obj.name}'")
    notes = []
    if skipped:
        notes.append(f"Mochi has no counterpart of the force field{'s' * (len(skipped) > 1)} {', '.join(skipped)}; "
                     f"the bake ignores {'them' if len(skipped) > 1 else 'it'} (Force, Wind, Vortex and Turbulence fields are baked).")
    if partial:
        notes.append(f"Mochi bakes {', '.join(partial)} without these settings (it has point and plane shapes, "
                     "sphere falloff, no noise, absorption or gravitation).")
    if off:
        notes.append(f"The force field{'s' * (len(off) > 1)} {', '.join(off)} {'do' if len(off) > 1 else 'does'} not "
                     "affect location, so the bake ignores "f"{'them' if len(off) > 1 else 'it'}.")
    if animated:
        notes.append(f"The force field{'s' * (len(animated) > 1)} {', '.join(animated)} {'are' if len(animated) > 1 else 'is'} "
                     "animated; Mochi bakes the settings and placement of the first frame.")
    return FieldTranslation(fields=tuple(fields), notes=tuple(notes))


#: Custom property marking the force-field objects a preset made, replaced when another preset is applied.
PRESET_FIELD_TAG = "mochi_preset_field"
#: engine kind → Blender field type, for the kinds that become force-field objects.
BLENDER_TYPES = {"force": "FORCE", "wind": "WIND", "turbulence": "TURBULENCE", "vortex": "VORTEX"}


def is_panel_field(field: ForceField) -> bool:
    """Whether a field belongs in the panel's list (the engine's own kinds) rather than as a force-field
    object (Blender's kinds, and the vortices with Blender's profiles)."""
    return field.kind in ("uniform", "rotating", "sampled") or (field.kind == "vortex" and field.profile == "rankine")


def fields_engine_to_blender(fields, scene: bpy.types.Scene, *, to_blender, name: str) -> list[str]:
    """Put a preset's fields into the scene: the engine's kinds in Scene.mochi.fields (replacing the
    list), Blender's kinds as force-field empties (replacing those an earlier preset made).

    Args:
        fields: Engine fields (``engine.fields.ForceField``) in the preset's frame.
        to_blender: Turns a vector of the preset's frame into Blender's (the Y-up → Z-up turn, or identity).
        name: The preset's name, for the new objects' names.

    Returns:
        Sentences about what could not be applied (a sampled field of a Y-up preset).
    """
    from mathutils import Vector

    notes = []
    s = scene.mochi
    s.fields.clear()
    for obj in [o for o in scene.objects if o.get(PRESET_FIELD_TAG)]:
        bpy.data.objects.remove(obj, do_unlink=True)
    turned = to_blender((1.0, 2.0, 3.0)) != (1.0, 2.0, 3.0)
    for number, f in enumerate(fields, start=1):
        if is_panel_field(f):
            if f.kind == "sampled" and turned:
                notes.append(f"The sampled field '{Path(f.path).name}' is in the preset's Y-up frame, which Mochi cannot "
                             "turn to Blender's Z-up; it was not applied.")
                continue
            item = s.fields.add()
            item.name = f"{f.kind.title()} {number}"
            item.kind = f.kind.upper()
            item.vector, item.axis, item.center = to_blender(f.vector), to_blender(f.axis), to_blender(f.center)
            item.rate, item.strength, item.core_radius = f.rate, f.strength, f.core_radius
            if f.kind == "sampled":
                item.filepath, item.lo, item.hi = f.path, f.lo, f.hi
            continue
        # An empty's field settings exist only once Blender makes a force field of it (no data API).
        with bpy.context.temp_override(scene=scene):
            bpy.ops.object.effector_add(type=BLENDER_TYPES[f.kind], location=to_blender(f.center))
        obj = bpy.context.object
        obj.name = f"{name} {f.kind.title()}"
        obj[PRESET_FIELD_TAG] = True
        obj.rotation_euler = Vector((0.0, 0.0, 1.0)).rotation_difference(Vector(to_blender(f.axis))).to_euler()
        field = obj.field
        field.shape = "PLANE" if f.shape == "plane" or f.profile == "blender_plane" else "POINT"
        field.strength, field.falloff_power, field.flow = f.strength, f.falloff_power, f.flow
        field.use_min_distance, field.distance_min = f.min_distance > 0.0, f.min_distance
        field.use_max_distance, field.distance_max = f.max_distance > 0.0, f.max_distance
        field.z_direction = f.z_direction.upper()
        if f.kind == "turbulence":
            field.size = f.size
            field.seed = min(max(int(f.seed), 1), 128)  # Blender's seed range
    return notes
