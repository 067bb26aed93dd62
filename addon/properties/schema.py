"""Blender properties made from engine.settings_schema, and the values between them and the engine.

One function per kind of schema entry makes its property (``surface_property`` for a number of a grain,
wall, collider or source; ``model_property`` for a choice, switch or count), so a property's label,
tooltip, default, bounds and slider range are the schema's. ``blender_values`` reads a property group as
engine values, ``set_surface`` writes engine values into one: the one place Blender's spellings
(``collider_`` prefix, enum identifiers in capitals) meet the engine's.
"""

from __future__ import annotations

from typing import Any

from bpy.props import BoolProperty, EnumProperty, FloatProperty, IntProperty

from ...engine.settings_schema import (ModelSetting, Setting, as_value, attribute, blender_name, choices_for,
                                       from_blender, label, settings_for, to_blender, tooltip)


def surface_property(setting: Setting, surface: str):
    """The Blender property of one material, surface, source or time number (an integer property for a
    whole number): its label, tooltip, default, bounds and slider range from the schema. An automatic
    setting's property holds the value used when it is set by hand (a switch beside it says whether)."""
    default = setting.default if setting.blender_default is None else setting.blender_default
    options = dict(name=label(setting, surface), description=tooltip(setting, surface), default=default,
                   soft_min=setting.soft[0], soft_max=setting.soft[1], **setting.blender)
    if setting.low is not None:
        options["min"] = setting.ui_min if setting.low_open else setting.low
    if setting.high is not None:
        options["max"] = setting.high
    return IntProperty(**options) if setting.integer else FloatProperty(**options)


def model_property(setting: ModelSetting):
    """The Blender property of a choice, switch or count (a model setting, a source's body): an enum
    (identifiers the keys in capitals), a switch or a count, with the schema's label, tooltip, default and
    bounds."""
    words = dict(name=setting.label, description=setting.tooltip)
    if setting.choices:
        return EnumProperty(**words, items=tuple((c.key.upper(), c.label, c.tooltip) for c in setting.choices),
                            default=setting.default.upper())
    if setting.type is bool:
        return BoolProperty(**words, default=setting.default)
    return IntProperty(**words, default=setting.default, min=setting.low, soft_min=setting.soft[0],
                       soft_max=setting.soft[1])


def add_properties(cls, kinds: tuple[str, ...]) -> None:
    """Give ``cls`` a property per setting of ``kinds`` that Blender carries: on ``Object.mochi``'s group
    the source's material and packing, the walls, the collider surface (``OBJECT_KINDS``); on
    ``Scene.mochi``'s the time settings; on a panel field's the field's."""
    for kind in kinds:
        for setting in settings_for(kind, blender_only=True):
            cls.__annotations__[blender_name(setting, kind)] = surface_property(setting, kind)
        for choice in choices_for(kind, blender_only=True):
            cls.__annotations__[choice.blender] = model_property(choice)


def blender_values(settings, kind: str) -> dict[str, Any]:
    """``{engine attribute: value}`` of a kind's settings on ``settings`` (an ``Object.mochi``): the
    numbers Blender carries as floats, choices as the engine's keys ('glued', not 'GLUED')."""
    values: dict[str, Any] = {attribute(s, kind): as_value(s, getattr(settings, blender_name(s, kind)))
                              for s in settings_for(kind, blender_only=True)}
    return values | {m.key: from_blender(m, getattr(settings, m.blender))
                     for m in choices_for(kind, blender_only=True)}


def set_surface(settings, kind: str, values: dict[str, Any]) -> None:
    """Set the ``kind`` properties of ``settings`` (an ``Object.mochi``) from ``{engine attribute: value}``
    (``engine.settings_schema.surface_values`` of a look, a preset, a material); keys it lacks are left."""
    for setting in settings_for(kind, blender_only=True):
        key = attribute(setting, kind)
        if values.get(key) is not None:  # None: the engine chooses; the property keeps its hand-set value
            setattr(settings, blender_name(setting, kind), as_value(setting, values[key]))
    for choice in choices_for(kind, blender_only=True):
        if choice.key in values:
            setattr(settings, choice.blender, to_blender(choice, values[choice.key]))
