"""The shapes of Mochi's settings: kinds, spellings, limits, and the two types every setting is one of.

``Setting`` is a number (float or int) of a material, surface, source or the time stepping;
``ModelSetting`` a choice, switch or count. ``engine.settings_schema`` holds the tables of them and
derives the dataclasses, readers and docs from those; this module is what both it and its readers share.
No bpy, and no import of the rest of the engine.
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
#: A particle source's packing and body: not a surface, but spelled and derived the same way (a preset's
#: ``[[emitters]]``, a look's top level, ``EmitterSpec``, the add-on's ``SourceSettings``, ``Object.mochi``).
SOURCE = "source"
#: The time stepping of a scene: a preset's ``[time]``, ``Preset``, the add-on's ``SimulationSettings``,
#: ``Scene.mochi``.
TIME = "time"
#: A force field: a preset's ``[[fields]]``, ``engine.fields.ForceField``, an item of ``Scene.mochi.fields``.
FIELD = "field"
#: The kinds an object carries (``Object.mochi``), and every kind a ``Setting`` names in its ``surfaces``.
OBJECT_KINDS = (*SURFACES, SOURCE)
KINDS = (*OBJECT_KINDS, TIME, FIELD)
#: How each kind's engine attributes and TOML keys are spelled: prefix + key.
ENGINE_PREFIX = {GRAIN: "", WALL: "wall_", COLLIDER: "", SOURCE: "", TIME: "", FIELD: ""}
#: How each kind's Blender properties (``Object.mochi``, ``Scene.mochi``, its fields) are spelled: prefix + key.
BLENDER_PREFIX = {GRAIN: "", WALL: "wall_", COLLIDER: "collider_", SOURCE: "", TIME: "", FIELD: ""}
#: What a preset writes for a setting the engine chooses (``Setting.automatic``).
AUTO = "auto"
#: Largest magnitude of any number in a preset: a value that parses (1e308) but would overflow the
#: physics (mass, stiffness × overlap) in float32 or float64 is refused here, not met as a ZeroDivisionError.
NUMBER_LIMIT = 1.0e15
#: Integers are int32 in the engine (object ids, counts).
INTEGER_LIMIT = 2**31 - 1
#: Largest coordinate magnitude [m] of a grain, a domain corner, an emitter, a field's centre or a point read
#: from a PLY, and of every other vector component (velocity [m/s], acceleration [m/s²]). Positions are float32:
#: at 10⁶ m neighbouring floats are 6 cm apart and the difference, square and product of any two coordinates
#: (a grid's extent, its cell count) stay finite; near float32's 3.4e38 ``hi − lo`` overflows to inf and a
#: cell grid's size turns negative. No scene is a thousand kilometres wide.
COORDINATE_LIMIT = 1.0e6
#: Smallest and largest grain radius [m]: far beyond a micron powder and a ten-metre boulder either way, and
#: where a grain's float32 mass (ρ·r³, ρ within its range) stays a normal number.
RADIUS_RANGE = (1.0e-8, 1.0e3)
#: Frames per second of a bake [1/s]: one frame a hundred seconds to ten thousand a second (a frame is a
#: file on disk; the step budget refuses what the steps of one would cost).
FPS_RANGE = (0.01, 1.0e4)


@dataclass(frozen=True)
class Setting:
    """One user-facing number of a material, a surface or a source.

    Attributes:
        key: Engine attribute and TOML key on grains and colliders ('friction').
        label: The artist's word for it in Blender ('Rolling', 'Stickiness').
        default: Value when a preset, look or Blender object does not set it, in ``unit``.
        unit: SI unit ('Pa', 'kg/m³', 'm'); '' for a dimensionless number.
        tooltip: What it does (on a grain, where grains carry it), in sentences, its unit named (Blender
            shows this).
        surface_tooltip: The same for a wall or a collider, '{surface}' standing for 'the walls' or
            'this surface'; '' to use ``tooltip``.
        low: Smallest value allowed; ``low_open`` excludes it; None: any (down to −``NUMBER_LIMIT``).
        low_open: True when ``low`` itself is refused (restitution 0, density 0).
        high: Largest value allowed, or None (then ``NUMBER_LIMIT``).
        soft: Blender slider range (soft_min, soft_max).
        ui_min: Blender's hard minimum where ``low`` is open (a property has no open bound).
        surfaces: The kinds that carry it (a wall has no density; a collider's moduli are the walls').
        hertz_only: Read only by the Hertz–Mindlin law (the panels grey it out under the linear one).
        blender: Extra keyword arguments of the Blender property (subtype, unit, precision).
        in_blender: False where Blender has no property for it (a bake from Blender uses the default).
        integer: A whole number (an int in presets, an integer property in Blender).
        automatic: The engine chooses it unless it is given: a preset leaves it out or writes 'auto' and
            the engine attribute is None; ``default`` is then what Blender shows for a value set by hand.
        blender_default: What a new Blender property holds where it is not ``default`` (a new rotating
            field turns, so that it shows what it does); None: ``default``.
    """

    key: str
    label: str
    default: float
    unit: str
    tooltip: str
    surface_tooltip: str = ""
    low: float | None = 0.0
    low_open: bool = False
    high: float | None = None
    soft: tuple[float, float] = (0.0, 1.0)
    ui_min: float | None = None
    surfaces: tuple[str, ...] = SURFACES
    hertz_only: bool = False
    blender: dict = dataclasses.field(default_factory=dict)
    in_blender: bool = True
    integer: bool = False
    automatic: bool = False
    blender_default: float | None = None

    @property
    def type(self) -> type:
        """The engine attribute's type: float or int, or None where the engine chooses."""
        number = int if self.integer else float
        return number | None if self.automatic else number

    @property
    def lowest(self) -> float:
        """The smallest value allowed (``low``, else minus the number limit)."""
        return -NUMBER_LIMIT if self.low is None else self.low

    @property
    def highest(self) -> float:
        """The largest value allowed (``high``, else the number limit of its type)."""
        return self.high if self.high is not None else INTEGER_LIMIT if self.integer else NUMBER_LIMIT

    def number_text(self, value: float) -> str:
        """A bound as the messages write it: '1e+06', '0.5'; a whole number's every digit ('16777215')."""
        return str(int(value)) if self.integer else f"{value:g}"

    def bounds_text(self) -> str:
        """The allowed range in words: 'in (0, 1]', '≥ 0', '> 0 and ≤ 100000', 'any'."""
        if self.low is None:
            return "any" if self.high is None else f"≤ {self.number_text(self.high)}"
        low = f"{'>' if self.low_open else '≥'} {self.number_text(self.low)}"
        if self.high is None:
            return low
        if self.low == 0.0 and self.high == 1.0:
            return f"in {'(' if self.low_open else '['}0, 1]"
        return f"{low} and ≤ {self.number_text(self.high)}"

    def checked_type(self):
        """The msgspec type that accepts exactly the values this setting allows (strict: no bool, no
        string; an int where ``integer``; finite and within the bounds)."""
        number = int if self.integer else float
        bounds = {"gt" if self.low_open else "ge": number(self.lowest), "le": number(self.highest)}
        return Annotated[number, msgspec.Meta(**bounds)]

    def allows(self, value: Any) -> bool:
        """True for a finite number (not a bool; an int where ``integer``) within the bounds."""
        try:
            msgspec.convert(value, self.checked_type(), strict=True)
        except msgspec.ValidationError:
            return False
        return True


def is_number(value: Any) -> bool:
    """True for an int or float (not a bool) that is finite as a float."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:  # an int beyond float's range
        return False


def short_repr(value: Any) -> str:
    """``repr(value)`` cut to 60 characters (a hostile value can be megabytes long)."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


@dataclass(frozen=True)
class Choice:
    """One value of a choice setting: its engine/TOML key ('spring'), Blender label and tooltip."""

    key: str
    label: str
    tooltip: str


@dataclass(frozen=True)
class ModelSetting:
    """A setting that is a choice, a switch or a count: the scene-wide settings of the simulation model
    (``MODEL_SETTINGS``), and a source's body (``SOURCE_CHOICES``, one per emitter, table 'emitters').

    Attributes:
        key: Attribute of ``engine.model.Physics``, ``engine.preset.Preset`` and the add-on's
            ``SimulationSettings`` ('contact_normal'); a source's: of ``EmitterSpec``, ``Look`` and
            ``SourceSettings``.
        table: The preset table that holds it ('contact').
        toml_key: Its key there ('normal').
        blender: The ``Scene.mochi`` property ('contact_law'), or None where Blender has none (then the
            add-on's settings do not carry it either: a Blender bake uses the default).
        label: Blender's label.
        default: bool, int or str (a choice's key).
        tooltip: What it does (Blender's tooltip).
        choices: The values of a choice (Blender's enum items: identifier the key in capitals).
        low: Smallest value of a count.
        soft: Blender slider range of a count.
    """

    key: str
    table: str
    toml_key: str
    blender: str | None
    label: str
    default: bool | int | str
    tooltip: str
    choices: tuple[Choice, ...] = ()
    low: int | None = None
    soft: tuple[int, int] | None = None

    @property
    def type(self) -> type:
        return type(self.default)

    def choice_keys(self) -> tuple[str, ...]:
        return tuple(c.key for c in self.choices)
