"""The material and surface settings, defined once: default, unit, bounds, words.

Every number that says what a grain, a wall or a collider surface is made of (density, restitution,
friction, rolling resistance, stickiness, the Hertz moduli, a collider's thickness) is one ``Setting``
in ``SURFACE_SETTINGS``. Everything else is derived from that tuple:

* the engine's dataclasses (``engine.model.Material`` and ``Domain``, ``engine.colliders.Collider``,
  ``engine.preset.Preset``, ``engine.preset_colliders.ColliderSpec``) get one field per setting of their
  surface from ``surface_fields``;
* presets, looks and collider tables are read by ``read_surface`` (msgspec converts and checks the
  bounds; a failure becomes the one sentence every preset error is), and written by ``surface_table``;
* the Blender properties (``addon.properties.object``), the scene snapshot, the panels and the preset
  export loop over ``settings_for``.

Adding a material parameter is one ``Setting`` here plus the physics that reads it. Names: a setting's
``key`` is the engine attribute and the TOML key of grains and collider tables; walls prefix it with
``wall_`` (``Domain.wall_friction``, ``[domain] wall_friction``), and the Blender collider properties
with ``collider_`` (``Object.mochi.collider_friction``), the only two spellings that differ.

No bpy here, and no import of the rest of the engine (the model imports this module).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Annotated, Any

import msgspec

#: The three kinds of surface a setting can describe.
GRAIN, WALL, COLLIDER = "grain", "wall", "collider"
SURFACES = (GRAIN, WALL, COLLIDER)
#: How each surface's engine attributes and TOML keys are spelled: prefix + key.
ENGINE_PREFIX = {GRAIN: "", WALL: "wall_", COLLIDER: ""}
#: How each surface's Blender properties (``Object.mochi``) are spelled: prefix + key.
BLENDER_PREFIX = {GRAIN: "", WALL: "wall_", COLLIDER: "collider_"}
#: Largest magnitude of any number read (engine.preset.NUMBER_LIMIT says why).
NUMBER_LIMIT = 1.0e15


@dataclass(frozen=True)
class Setting:
    """One user-facing number of a material or surface.

    Attributes:
        key: Engine attribute and TOML key on grains and colliders ('friction').
        label: The artist's word for it in Blender ('Rolling', 'Stickiness').
        default: Value when a preset, look or Blender object does not set it, in ``unit``.
        unit: SI unit ('Pa', 'kg/m³', 'm'); '' for a dimensionless number.
        tooltip: What it does (on a grain, where grains carry it), in sentences, its unit named (Blender
            shows this).
        surface_tooltip: The same for a wall or a collider, '{surface}' standing for 'the walls' or
            'this surface'; '' to use ``tooltip``.
        low: Smallest value allowed; ``low_open`` excludes it.
        low_open: True when ``low`` itself is refused (restitution 0, density 0).
        high: Largest value allowed, or None (then ``NUMBER_LIMIT``).
        soft: Blender slider range (soft_min, soft_max).
        ui_min: Blender's hard minimum where ``low`` is open (a property has no open bound).
        surfaces: The surfaces that carry it (a wall has no density; a collider's moduli are the walls').
        hertz_only: Read only by the Hertz–Mindlin law (the panels grey it out under the linear one).
        blender: Extra keyword arguments of the Blender property (subtype, unit, precision).
    """

    key: str
    label: str
    default: float
    unit: str
    tooltip: str
    surface_tooltip: str = ""
    low: float = 0.0
    low_open: bool = False
    high: float | None = None
    soft: tuple[float, float] = (0.0, 1.0)
    ui_min: float | None = None
    surfaces: tuple[str, ...] = SURFACES
    hertz_only: bool = False
    blender: dict = dataclasses.field(default_factory=dict)

    def bounds_text(self) -> str:
        """The allowed range in words: 'in (0, 1]', '≥ 0', '> 0 and ≤ 100000'."""
        low = f"{'>' if self.low_open else '≥'} {self.low:g}"
        if self.high is None:
            return low
        if self.low == 0.0 and self.high == 1.0:
            return f"in {'(' if self.low_open else '['}0, 1]"
        return f"{low} and ≤ {self.high:g}"

    def allows(self, value: Any) -> bool:
        """True for a finite number (not a bool) within the bounds."""
        if not is_number(value):
            return False
        above = value > self.low if self.low_open else value >= self.low
        return above and value <= (NUMBER_LIMIT if self.high is None else self.high)


def is_number(value: Any) -> bool:
    """True for an int or float (not a bool) that is finite as a float."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:  # an int beyond float's range
        return False


def _short(value: Any) -> str:
    """``repr(value)`` cut to 60 characters (a hostile value can be megabytes long)."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


#: Every material and surface setting, in the order panels and tables show them.
SURFACE_SETTINGS: tuple[Setting, ...] = (
    Setting("thickness", "Thickness", 0.0, "m",
            "Thickness of the collider's surface; grains keep their surface half of it away from each face, on "
            "both sides (0 for a closed mesh or a thin sheet)",
            soft=(0.0, 0.1), surfaces=(COLLIDER,),
            blender={"subtype": "DISTANCE", "unit": "LENGTH", "precision": 4}),
    Setting("density", "Density", 2500.0, "kg/m³",
            "Density of the grains, in kilograms per cubic metre (kg/m³)",
            low_open=True, high=1.0e5, soft=(1.0, 20000.0), ui_min=1.0e-3, surfaces=(GRAIN,)),
    Setting("restitution", "Restitution", 0.5, "",
            "Share of the normal speed kept after a collision (1 is elastic)",
            "Share of the normal speed a grain keeps after hitting {surface} (averaged with the grain's own "
            "restitution)",
            low_open=True, high=1.0, soft=(0.01, 1.0), ui_min=0.001, blender={"subtype": "FACTOR"}),
    Setting("friction", "Friction", 0.5, "",
            "Coulomb friction coefficient between grains (0 is frictionless)",
            "Coulomb friction coefficient of {surface} (averaged with the grain's own friction; 0 is "
            "frictionless)",
            soft=(0.0, 2.0)),
    Setting("rolling_friction", "Rolling", 0.0, "",
            "Rolling resistance (dimensionless): the torque that stops grains rolling is capped at this "
            "coefficient times the contact force times the grain radius. 0 rolls freely (glass beads), "
            "0.1–0.3 like sand or gravel, higher like beans; the pile angle grows with it",
            "Rolling resistance of {surface} (dimensionless, averaged with the grain's own Rolling; a grain "
            "rests on a slope of angle θ while tan θ stays below it). Acts on Rotating Grains only"),
    Setting("cohesion", "Stickiness", 0.0, "Pa",
            "Cohesion in pascals (Pa = J/m³): touching grains pull together with this value times their "
            "contact area, like damp sand, snow or sugar. With the linear contact spring it only holds grains "
            "together above stiffness / (2π × radius); below that it softens contacts",
            "Cohesion of {surface} in pascals (Pa); a grain sticks to it with the smaller of the two "
            "Stickiness values (it binds above about stiffness/(2π·radius); below that it only softens the "
            "contact)",
            soft=(0.0, 1.0e6)),
    Setting("youngs_modulus", "Young's Modulus", 5.0e6, "Pa",
            "Stiffness of the grains' material in pascals (Pa), for the Hertz–Mindlin contact law (unused by "
            "the linear one). DEM softens real solids (quartz: 7e10 Pa) to about 1e6–1e8 Pa: a softer material "
            "lets grains overlap more and bakes with fewer steps",
            "Young's modulus of {surface} and of every collider in pascals (Pa), for the Hertz–Mindlin contact "
            "law (unused by the linear one)",
            low_open=True, high=1.0e13, soft=(1.0e4, 1.0e11), ui_min=1.0, surfaces=(GRAIN, WALL),
            hertz_only=True),
    Setting("poisson_ratio", "Poisson's Ratio", 0.3, "",
            "Poisson's ratio of the grains' material (dimensionless, 0 to 0.5), for the Hertz–Mindlin contact "
            "law: how much it bulges sideways when squeezed (glass and sand about 0.25, rubber near 0.5)",
            "Poisson's ratio of {surface} and of every collider (dimensionless, 0 to 0.5), for the "
            "Hertz–Mindlin contact law",
            high=0.4999, soft=(0.0, 0.4999), surfaces=(GRAIN, WALL), hertz_only=True),
)

#: What '{surface}' reads as in a wall's and a collider's tooltip.
_SURFACE_WORDS = {WALL: "the walls", COLLIDER: "this surface"}


def settings_for(surface: str) -> tuple[Setting, ...]:
    """The settings a surface ('grain', 'wall' or 'collider') carries, in panel order."""
    return tuple(s for s in SURFACE_SETTINGS if surface in s.surfaces)


def attribute(setting: Setting, surface: str) -> str:
    """The engine attribute and TOML key of ``setting`` on ``surface`` ('wall_friction')."""
    return ENGINE_PREFIX[surface] + setting.key


def blender_name(setting: Setting, surface: str) -> str:
    """The Blender property of ``setting`` on ``surface`` ('collider_friction')."""
    return BLENDER_PREFIX[surface] + setting.key


def label(setting: Setting, surface: str) -> str:
    """The Blender label: 'Wall Friction' on a domain, the plain label elsewhere."""
    return f"Wall {setting.label}" if surface == WALL else setting.label


def tooltip(setting: Setting, surface: str) -> str:
    """The tooltip of ``setting`` on ``surface``."""
    if surface == GRAIN or not setting.surface_tooltip:
        return setting.tooltip
    return setting.surface_tooltip.replace("{surface}", _SURFACE_WORDS[surface])


def surface_fields(surface: str) -> list[tuple[str, type, Any]]:
    """``dataclasses.make_dataclass`` fields for a surface's settings: (name, float, field(default=...)),
    each field's metadata holding its ``Setting`` under 'setting'."""
    return [(attribute(s, surface), float, dataclasses.field(default=s.default, metadata={"setting": s}))
            for s in settings_for(surface)]


def settings_dataclass(name: str, base: type, surface: str, *, eq: bool = True) -> type:
    """A frozen dataclass ``name`` with the fields and methods of the dataclass ``base``, then one float
    field per setting of ``surface`` (defaults from the schema), in ``base``'s module.

    The docstring is ``base``'s with a line per setting (its tooltip, unit and default), so ``help()``
    and the API docs list the generated fields as if they were written out.
    """
    lines = [f"        {attribute(s, surface)}: {tooltip(s, surface) or s.label}"
             + (f" [{s.unit}]" if s.unit and f"({s.unit}" not in tooltip(s, surface) else "")
             + f" (default {s.default:g})." for s in settings_for(surface)]
    heading = f"\n\n    Settings ({surface}, from engine.settings_schema):\n"
    doc = (base.__doc__ or "").rstrip() + heading + "\n".join(lines)
    cls = dataclasses.make_dataclass(name, surface_fields(surface), bases=(base,), frozen=True, eq=eq,
                                     namespace={"__doc__": doc + "\n"})
    cls.__module__, cls.__qualname__ = base.__module__, name  # pickled and named as if written there
    return cls


def surface_values(source: Any, surface: str, *, prefix: str | None = None) -> dict[str, float]:
    """``{engine attribute: value}`` of a surface's settings, read from the attributes of ``source``
    spelled ``prefix + key`` (default: the engine's spelling), e.g. a Blender object's ``collider_*``."""
    prefix = ENGINE_PREFIX[surface] if prefix is None else prefix
    return {attribute(s, surface): float(getattr(source, prefix + s.key)) for s in settings_for(surface)}


def surface_table(source: Any, surface: str) -> dict[str, float]:
    """The TOML entries of a surface's settings on ``source`` (an engine object or settings dataclass):
    every setting written out, so a saved preset says what it was baked with."""
    return surface_values(source, surface)


def _constrained(setting: Setting):
    bounds = {"gt" if setting.low_open else "ge": setting.low,
              "le": NUMBER_LIMIT if setting.high is None else setting.high}
    return Annotated[float, msgspec.Meta(**bounds)]


_TYPES: dict[str, type] = {}


def _struct(surface: str) -> type:
    """The msgspec Struct that checks one surface's settings (made once per surface)."""
    if surface not in _TYPES:
        _TYPES[surface] = msgspec.defstruct(
            f"{surface.title()}Settings",
            [(attribute(s, surface), _constrained(s), s.default) for s in settings_for(surface)])
    return _TYPES[surface]


def read_surface(table: dict, surface: str, fail) -> dict[str, float]:
    """The settings of ``surface`` found in a TOML ``table`` (defaults for those left out), checked.

    Args:
        table: The parsed table; keys that are not settings of ``surface`` are ignored (the caller
            checks unknown keys and reads the others).
        surface: 'grain', 'wall' or 'collider'.
        fail: ``fail(key, message)`` raises the caller's one sentence ('<file>: <where> <key> <message>.').

    Returns:
        ``{engine attribute: float}`` for every setting of the surface.
    """
    names = {attribute(s, surface): s for s in settings_for(surface)}
    given = {k: v for k, v in table.items() if k in names}
    try:
        converted = msgspec.convert(given, _struct(surface), strict=True)
    except msgspec.ValidationError as exc:
        # msgspec names the field ("... - at `$.friction`"); the sentence is ours, in the words every
        # other preset error uses, with the value the author wrote.
        key = next((k for k in given if f"`$.{k}`" in str(exc)), None)
        if key is None:  # not expected: msgspec names every field it refuses
            raise
        value, setting = given[key], names[key]
        if not is_number(value):
            fail(key, f"must be a number, not {_short(value)}")
        high = NUMBER_LIMIT if setting.high is None else setting.high
        if value > high:
            fail(key, f"must be ≤ {high:g}, not {_short(value)}")
        fail(key, f"must be {'>' if setting.low_open else '≥'} {setting.low:g}, not {_short(value)}")
    return {k: float(getattr(converted, k)) for k in names}


def settings_markdown() -> str:
    """docs/settings.md: a table per surface of every setting's key, Blender label, unit, default and
    bounds, with its tooltip (``scripts/settings_doc.py`` writes it; a test keeps it current)."""
    where = {GRAIN: ("Grain material", "a preset's `[[materials]]`, a look's `[material]`, a source object"),
             WALL: ("Walls", "a preset's `[domain]`, the domain object"),
             COLLIDER: ("Collider surface", "a preset's `[[colliders]]`, a collider object "
                                            "(Blender properties `collider_<key>`)")}
    lines = ["# Material and surface settings", "",
             "Generated from `engine/settings_schema.py` by `python scripts/settings_doc.py`; do not edit.",
             "A preset, a look or a Blender object that leaves a setting out gets its default.", ""]
    for surface in SURFACES:
        title, read_from = where[surface]
        lines += [f"## {title}", "", f"Read from {read_from}.", "",
                  "| key | Blender | unit | default | allowed | what it does |",
                  "| --- | --- | --- | --- | --- | --- |"]
        for s in settings_for(surface):
            lines.append(f"| `{attribute(s, surface)}` | {label(s, surface)} | {s.unit or '–'} | {s.default:g} | "
                         f"{s.bounds_text()} | {tooltip(s, surface)} |")
        lines.append("")
    return "\n".join(lines)
