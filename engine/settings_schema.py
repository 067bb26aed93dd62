"""The material, surface, source, time, field and model settings, defined once: default, unit, bounds, words.

Every number that says what a grain, a wall or a collider surface is made of (density, restitution,
friction, rolling resistance, stickiness, the Hertz moduli, a collider's thickness) is one ``Setting``
in ``SURFACE_SETTINGS``; how a particle source is packed and held together (the small-radius ratio, its
body, the glue's strength and stiffness) is one in ``SOURCE_SETTINGS`` (its body a choice in
``SOURCE_CHOICES``); how a scene steps through time (dt, substeps, stiffness, each chosen by the engine
unless given) in ``TIME_SETTINGS``; a force field's numbers in ``FIELD_SETTINGS`` (its shape, side and
vortex profile in ``FIELD_CHOICES``); the scene-wide model (contact law, friction, rotation, ...) is
``MODEL_SETTINGS``.
Everything else is derived from those tuples:

* the engine's dataclasses (``engine.model.Material`` and ``Domain``, ``engine.colliders.Collider``,
  ``engine.preset.Preset`` and ``EmitterSpec``, ``engine.preset_colliders.ColliderSpec``,
  ``engine.looks.Look``, ``engine.fields.ForceField``) and the add-on's settings get one field per
  setting of their kind from ``settings_dataclass``;
* presets, looks and collider tables are read by ``read_surface`` (msgspec converts and checks the
  bounds; a failure becomes the one sentence every preset error is), and written from ``surface_values``;
* the Blender properties (``addon.properties.schema``), the scene snapshot, the panels and the preset
  export loop over ``settings_for``;
* docs/settings.md is ``engine.settings_doc``'s table of them.

Adding a material parameter is one ``Setting`` here plus the physics that reads it. Names: a setting's
``key`` is the engine attribute and the TOML key of grains and collider tables; walls prefix it with
``wall_`` (``Domain.wall_friction``, ``[domain] wall_friction``), and the Blender collider properties
with ``collider_`` (``Object.mochi.collider_friction``), the only two spellings that differ.

No bpy here, and no import of the rest of the engine but ``engine.settings_types`` and (for the sentence
of ``check_physics``) ``engine.errors`` (the model imports this module).
"""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any, Literal

import msgspec

# The kinds, limits and types live in engine.settings_types; they are names of this module too, where
# every reader of the schema looks for them.
from .settings_types import (AUTO, BLENDER_PREFIX, COLLIDER, COORDINATE_LIMIT, ENGINE_PREFIX, FIELD,  # noqa: F401
                             FPS_RANGE, GRAIN, INTEGER_LIMIT, KINDS, NUMBER_LIMIT, OBJECT_KINDS, RADIUS_RANGE, SOURCE, SURFACES,
                             TIME, WALL, Choice, ModelSetting, Setting, is_number, short_repr)


#: Every material and surface setting, in the order panels and tables show them.
SURFACE_SETTINGS: tuple[Setting, ...] = (
    Setting("thickness", "Thickness", 0.0, "m",
            "Thickness of the collider's surface; grains keep their surface half of it away from each face, on "
            "both sides (0 for a closed mesh or a thin sheet)",
            high=1.0e3, soft=(0.0, 0.1), surfaces=(COLLIDER,),
            blender={"subtype": "DISTANCE", "unit": "LENGTH", "precision": 4}),
    Setting("density", "Density", 2500.0, "kg/m³",
            "Density of the grains, in kilograms per cubic metre (kg/m³)",
            low=1.0, high=1.0e5, soft=(1.0, 20000.0), surfaces=(GRAIN,)),
    Setting("restitution", "Restitution", 0.5, "",
            "Share of the normal speed kept after a collision (1 is elastic)",
            "Share of the normal speed a grain keeps after hitting {surface} (averaged with the grain's own "
            "restitution)",
            low=1.0e-3, high=1.0, soft=(0.01, 1.0), blender={"subtype": "FACTOR"}),
    Setting("friction", "Friction", 0.5, "",
            "Coulomb friction coefficient between grains (0 is frictionless)",
            "Coulomb friction coefficient of {surface} (averaged with the grain's own friction; 0 is "
            "frictionless)",
            high=100.0, soft=(0.0, 2.0)),
    Setting("rolling_friction", "Rolling", 0.0, "",
            "Rolling resistance (dimensionless): the torque that stops grains rolling is capped at this "
            "coefficient times the contact force times the grain radius. 0 rolls freely (glass beads), "
            "0.1–0.3 like sand or gravel, higher like beans; the pile angle grows with it",
            "Rolling resistance of {surface} (dimensionless, averaged with the grain's own Rolling; a grain "
            "rests on a slope of angle θ while tan θ stays below it). Acts on Rotating Grains only",
            high=100.0),
    Setting("cohesion", "Stickiness", 0.0, "Pa",
            "Cohesion in pascals (Pa = J/m³): touching grains pull together with this value times their "
            "contact area, like damp sand, snow or sugar. With the linear contact spring it only holds grains "
            "together above stiffness / (2π × radius); below that it softens contacts",
            "Cohesion of {surface} in pascals (Pa); a grain sticks to {surface} with the smaller of the two "
            "Stickiness values (it binds above about stiffness/(2π·radius); below that it only softens the "
            "contact)",
            high=1.0e10, soft=(0.0, 1.0e6)),
    Setting("youngs_modulus", "Young's Modulus", 5.0e6, "Pa",
            "Stiffness of the grains' material in pascals (Pa), for the Hertz–Mindlin contact law (unused by "
            "the linear one). DEM softens real solids (quartz: 7e10 Pa) to about 1e6–1e8 Pa: a softer material "
            "lets grains overlap more and bakes with fewer steps",
            "Young's modulus of {surface} and of every collider in pascals (Pa), for the Hertz–Mindlin contact "
            "law (unused by the linear one)",
            low=1.0e3, high=1.0e13, soft=(1.0e4, 1.0e11), surfaces=(GRAIN, WALL),
            hertz_only=True),
    Setting("poisson_ratio", "Poisson's Ratio", 0.3, "",
            "Poisson's ratio of the grains' material (dimensionless, 0 to 0.5), for the Hertz–Mindlin contact "
            "law: how much it bulges sideways when squeezed (glass and sand about 0.25, rubber near 0.5)",
            "Poisson's ratio of {surface} and of every collider (dimensionless, 0 to 0.5), for the "
            "Hertz–Mindlin contact law",
            high=0.4999, soft=(0.0, 0.4999), surfaces=(GRAIN, WALL), hertz_only=True),
)

#: How a particle source is packed and held together, in the order the source panel shows them.
SOURCE_SETTINGS: tuple[Setting, ...] = (
    Setting("small_ratio", "Small Ratio", 0.5, "",
            "Radius of the smallest spheres as a fraction of the largest (1 packs one size; less fills the gaps "
            "with smaller spheres)",
            low=0.05, high=1.0, soft=(0.1, 1.0), surfaces=(SOURCE,), blender={"subtype": "FACTOR"}),
    Setting("glue_strength", "Glue", 1.0e5, "Pa",
            "Strength of the bonds of a glued object, in pascals (Pa): a bond breaks when its tension or shear "
            "stress exceeds it. About 1e4 Pa cracks a hand-sized object dropped from knee height; 1e6 Pa holds",
            low=1.0e-3, high=1.0e10, soft=(1.0e2, 1.0e7), surfaces=(SOURCE,)),
    Setting("glue_stiffness", "Glue Stiffness", 0.0, "N/m³",
            "Normal stiffness of a glued object's bonds per unit bond area, in newtons per cubic metre (N/m³); "
            "0 makes each bond as stiff as a contact between its two grains",
            high=1.0e15, soft=(0.0, 1.0e12), surfaces=(SOURCE,), in_blender=False),
)

#: How a scene steps through time, each chosen by the engine unless given (``engine.timestep``). A preset
#: gives dt or substeps, not both; Blender's Time Step and Automatic Stiffness switches pick which is given.
TIME_SETTINGS: tuple[Setting, ...] = (
    Setting("dt", "Time Step", 1.0e-4, "s",
            "Simulation time step in seconds (s); a step longer than the stiffness allows is refused before the "
            "bake",
            low=1.0e-9, high=1.0, soft=(1.0e-6, 1.0e-2), surfaces=(TIME,), automatic=True,
            blender={"subtype": "TIME_ABSOLUTE", "unit": "TIME_ABSOLUTE", "precision": 6, "step": 0.001}),
    Setting("substeps", "Substeps", 400, "",
            "Simulation steps per frame (the time step is the frame's duration divided by it)",
            low=1, soft=(10, 10000), surfaces=(TIME,), integer=True, automatic=True),
    Setting("stiffness", "Stiffness", 1.0e3, "N/m",
            "Spring constant of the linear contact law, in newtons per metre (N/m); Hertz–Mindlin takes its "
            "stiffness from the Young's moduli instead",
            low=1.0e-3, high=1.0e13, soft=(1.0, 1.0e7), surfaces=(TIME,), automatic=True),
)

#: The numbers of a force field (engine.fields says how each kind uses them). Blender's panel fields carry
#: the rate, strength and core radius; a Blender force-field object's falloff, flow, size and seed are
#: Blender's own properties, translated by addon.force_fields.
FIELD_SETTINGS: tuple[Setting, ...] = (
    Setting("rate", "Rate", 0.0, "rad/s",
            "Angular rate of a rotating field, per second (rad/s)",
            low=-1.0e4, high=1.0e4, soft=(-6.2831853, 6.2831853), surfaces=(FIELD,), blender_default=0.7853982,
            blender={"subtype": "ANGLE", "unit": "ROTATION"}),
    Setting("strength", "Strength", 1.0, "m/s²",
            "How strong the field is: a vortex's largest swirling acceleration, reached at the core radius "
            "(m/s²); a force, wind or turbulence field's acceleration (m/s²); a factor on a sampled field's "
            "accelerations",
            low=-1.0e6, high=1.0e6, soft=(-100.0, 100.0), surfaces=(FIELD,)),
    Setting("core_radius", "Core Radius", 0.1, "m",
            "Radius of a vortex's solid-body core, in metres (m); the swirl falls off as 1/distance outside it",
            low=1.0e-6, high=1.0e6, soft=(0.001, 10.0), surfaces=(FIELD,),
            blender={"subtype": "DISTANCE", "unit": "LENGTH"}),
    Setting("falloff_power", "Falloff Power", 0.0, "",
            "Blender's falloff Power: the strength falls as (1 + distance − min_distance)^−power",
            high=100.0, surfaces=(FIELD,), in_blender=False),
    Setting("min_distance", "Min Distance", 0.0, "m",
            "Full strength closer than this distance in metres (m); 0: none", high=COORDINATE_LIMIT,
            surfaces=(FIELD,), in_blender=False),
    Setting("max_distance", "Max Distance", 0.0, "m",
            "No effect farther than this distance in metres (m); 0: no limit", high=COORDINATE_LIMIT,
            surfaces=(FIELD,), in_blender=False),
    Setting("flow", "Flow", 0.0, "1/s",
            "Blender's Flow, per second (1/s): the field also damps velocity, so a wind carries grains at "
            "strength/flow metres per second instead of accelerating them without end",
            high=1.0e6, surfaces=(FIELD,), in_blender=False),
    Setting("size", "Size", 1.0, "m",
            "Feature size of a turbulence field's noise, in metres (m)",
            low=1.0e-6, high=COORDINATE_LIMIT, surfaces=(FIELD,), in_blender=False),
    # Turbulence seeds are stored in a float32 table entry, exact below 2^24.
    Setting("seed", "Seed", 0, "", "Seed of a turbulence field's noise",
            high=float(2**24 - 1), surfaces=(FIELD,), integer=True, in_blender=False),
)

#: What '{surface}' reads as in a wall's and a collider's tooltip.
_SURFACE_WORDS = {WALL: "the walls", COLLIDER: "this surface"}


def settings_for(surface: str, *, blender_only: bool = False) -> tuple[Setting, ...]:
    """The settings a kind ('grain', 'wall', 'collider', 'source', 'time' or 'field') carries, in panel
    order (those with a Blender property, with ``blender_only``)."""
    return tuple(s for s in _all_settings() if surface in s.surfaces and (s.in_blender or not blender_only))


def _all_settings() -> tuple[Setting, ...]:
    return (*SURFACE_SETTINGS, *SOURCE_SETTINGS, *TIME_SETTINGS, *FIELD_SETTINGS)


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


def setting(key: str) -> Setting:
    """The number setting whose key is ``key`` ('small_ratio'), of any kind."""
    return next(s for s in _all_settings() if s.key == key)


def choices_for(surface: str, *, blender_only: bool = False) -> tuple[ModelSetting, ...]:
    """The choice settings a kind carries (a source's body, a field's shape; none on a surface), those with
    a Blender property with ``blender_only``."""
    chosen = {SOURCE: SOURCE_CHOICES, FIELD: FIELD_CHOICES}.get(surface, ())
    return tuple(m for m in chosen if m.blender is not None or not blender_only)


def choice(key: str) -> ModelSetting:
    """The choice setting of a source or a field whose key is ``key`` ('body', 'shape')."""
    return next(m for m in (*SOURCE_CHOICES, *FIELD_CHOICES) if m.key == key)


def surface_fields(surface: str, *, blender_only: bool = False) -> list[tuple[str, type, Any]]:
    """``dataclasses.make_dataclass`` fields for a kind's settings (those with a Blender property, with
    ``blender_only``): (name, type, field(default=...)), each field's metadata holding its setting under
    'setting'."""
    numbers = [(attribute(s, surface), s.type,
                dataclasses.field(default=None if s.automatic else s.default, metadata={"setting": s}))
               for s in settings_for(surface, blender_only=blender_only)]
    return numbers + [_choice_field(m) for m in choices_for(surface, blender_only=blender_only)]


def _choice_field(m: ModelSetting) -> tuple[str, type, Any]:
    """The ``make_dataclass`` field of a choice, switch or count: (key, type, field(default=...))."""
    return m.key, m.type, dataclasses.field(default=m.default, metadata={"setting": m})


def _choice_line(m: ModelSetting) -> str:
    """A choice's line in a generated dataclass's docstring."""
    return f"        {m.key}: {m.tooltip} (default {m.default!r})."


def settings_dataclass(name: str, base: type, surface: str | tuple[str, ...] | None = None, *,
                       model: str | None = None, eq: bool = True, blender_only: bool = False) -> type:
    """A frozen dataclass ``name`` with the fields and methods of the dataclass ``base``, then one field
    per setting of ``surface`` (a kind, several, or None: none; only those Blender has a property for, with
    ``blender_only``) and per model setting (``model`` 'all', or 'blender' for those Blender has a property
    for; None: none), defaults from the schema, in ``base``'s module.

    The docstring is ``base``'s with a line per generated field (its tooltip, unit and default), so
    ``help()`` and the API docs list them as if they were written out.
    """
    fields, lines = [], []
    for kind in (surface,) if isinstance(surface, str) else surface or ():
        fields += surface_fields(kind, blender_only=blender_only)
        lines += [f"        {attribute(s, kind)}: {tooltip(s, kind) or s.label}"
                  + (f" [{s.unit}]" if s.unit and f"({s.unit}" not in tooltip(s, kind) else "")
                  + (" (None: the engine chooses)." if s.automatic else f" (default {s.default:g}).")
                  for s in settings_for(kind, blender_only=blender_only)]
        lines += [_choice_line(m) for m in choices_for(kind, blender_only=blender_only)]
    if model is not None:
        chosen = model_settings(blender_only=model == "blender")
        fields += [_choice_field(m) for m in chosen]
        lines += [_choice_line(m) for m in chosen]
    heading = "\n\n    Settings (from engine.settings_schema):\n"
    doc = (base.__doc__ or "").rstrip() + heading + "\n".join(lines)
    cls = dataclasses.make_dataclass(name, fields, bases=(base,), frozen=True, eq=eq,
                                     namespace={"__doc__": doc + "\n"})
    cls.__module__, cls.__qualname__ = base.__module__, name  # pickled and named as if written there
    return cls


def surface_values(source: Any, surface: str, *, blender_only: bool = False) -> dict[str, Any]:
    """``{engine attribute: value}`` of a kind's settings on ``source`` (an engine object or settings:
    every attribute spelled as the engine spells it; only those Blender carries, with ``blender_only``, for
    the add-on's settings); numbers as float (int for a whole number, None where the engine chooses),
    choices as their keys."""
    values: dict[str, Any] = {attribute(s, surface): as_value(s, getattr(source, attribute(s, surface)))
                              for s in settings_for(surface, blender_only=blender_only)}
    return values | {m.key: getattr(source, m.key) for m in choices_for(surface, blender_only=blender_only)}


def as_value(setting: Setting, value: Any) -> Any:
    """``value`` as the engine holds ``setting``: a float, an int where ``integer``, None kept where the
    engine chooses."""
    if value is None and setting.automatic:
        return None
    return int(value) if setting.integer else float(value)


def read_surface(table: dict, surface: str, fail) -> dict[str, Any]:
    """The settings of ``surface`` found in a TOML ``table`` (defaults for those left out), checked.

    Args:
        table: The parsed table; keys that are not settings of ``surface`` are ignored (the caller
            checks unknown keys and reads the others).
        surface: 'grain', 'wall', 'collider', 'source', 'time' or 'field'.
        fail: ``fail(key, message)`` raises the caller's one sentence ('<file>: <where> <key> <message>.').

    Returns:
        ``{engine attribute: value}`` for every setting of the kind (float or int; None for an automatic
        one left out or 'auto'; a choice's key).
    """
    values: dict[str, Any] = {}
    for choice in choices_for(surface):
        values[choice.key] = (_read_model_value(choice, table[choice.toml_key],
                                                lambda message, key=choice.key: fail(key, message))
                              if choice.toml_key in table else choice.default)
    for setting in settings_for(surface):
        key = attribute(setting, surface)
        value = table.get(key, AUTO if setting.automatic else setting.default)
        if setting.automatic and value == AUTO:
            values[key] = None
            continue
        try:
            values[key] = as_value(setting, msgspec.convert(value, setting.checked_type(), strict=True))
        except msgspec.ValidationError:
            fail(key, _refusal(setting, value))
    return values


def _refusal(setting: Setting, value: Any) -> str:
    """Why ``setting`` refuses ``value``: 'must be ≥ 1000, not 1e-300' (the words of every preset error, with
    the value as it was given). msgspec checks type and bounds; the sentence is ours."""
    if not is_number(value) or (setting.integer and not isinstance(value, int)):
        kind = "an integer" if setting.integer else "a number"
        return f"must be {kind}{f' or {AUTO!r}' if setting.automatic else ''}, not {short_repr(value)}"
    if value > setting.highest:
        return f"must be ≤ {setting.number_text(setting.highest)}, not {short_repr(value)}"
    low = f"{'>' if setting.low_open else '≥'} {setting.number_text(setting.lowest)}"
    return f"must be {low}, not {short_repr(value)}"


def check_values(source: Any, surface: str, fail) -> None:
    """Check the resolved settings of ``surface`` held by ``source`` (an engine object: a Material, Domain,
    ForceField, Body...; a setting it has no attribute for is not its to check) against the schema's
    ranges; ``fail(key, message)`` raises the caller's sentence. An automatic setting left to the engine
    (None) passes."""
    for setting in settings_for(surface):
        key = attribute(setting, surface)
        if not hasattr(source, key):
            continue
        value = _plain(getattr(source, key))
        if not (setting.automatic and value is None) and not setting.allows(value):
            fail(key, _refusal(setting, value))
    for m in choices_for(surface):
        if hasattr(source, m.key):
            _read_model_value(m, _plain(getattr(source, m.key)), lambda message, key=m.key: fail(key, message))


def _plain(value: Any) -> Any:
    """A NumPy scalar as the Python number it holds (an engine object may hold one); anything else as it is."""
    # type(), not isinstance: numpy.float64 is a float that msgspec's strict conversion still refuses.
    return value.item() if type(value) not in (bool, int, float, str) and hasattr(value, "item") else value


def check_physics(physics: Any, where: str) -> None:
    """Refuse resolved physics (an ``engine.model.Physics``: a new scene's, or one read back from a cache
    manifest) holding a value outside the schema's ranges: every material, wall, field and glue setting,
    the resolved dt and stiffness, the model's choices, switches and counts, and the domain's corners
    (within ±``COORDINATE_LIMIT``).

    Args:
        physics: The physics to check (read through its attributes only).
        where: What holds it, for the sentence ("The physics in the cache manifest 'c/manifest.json'").

    Raises:
        MochiError: '<where>: materials[0] youngs_modulus must be ≥ 1000, not 1e-300.'
    """
    from .errors import MochiError

    def failing(prefix: str):
        def fail(key: str, message: str):
            raise MochiError(f"{where}: {prefix}{key} {message}.")
        return fail

    for index, material in enumerate(physics.materials):
        check_values(material, GRAIN, failing(f"materials[{index}] "))
    check_values(physics.domain, WALL, failing("domain "))
    for index, force_field in enumerate(physics.fields):
        check_values(force_field, FIELD, failing(f"fields[{index}] "))
    for index, body in enumerate(physics.bodies):
        check_values(body, SOURCE, failing(f"bodies[{index}] "))
    check_values(physics, TIME, failing(""))
    for m in MODEL_SETTINGS:
        _read_model_value(m, _plain(getattr(physics, m.key)), lambda message, key=m.key: failing("")(key, message))
    corners = [_plain(x) for x in (*physics.domain.lo, *physics.domain.hi)]
    if not all(is_number(x) and abs(x) <= COORDINATE_LIMIT for x in corners):
        failing("domain ")("lo/hi", f"must have components within ±{COORDINATE_LIMIT:g} m, not "
                                    f"{short_repr(physics.domain.lo)}–{short_repr(physics.domain.hi)}")


# --- the model's settings: contact law, friction, rotation, integrator, rebuild interval, seed ----------


MODEL_SETTINGS: tuple[ModelSetting, ...] = (
    ModelSetting("contact_normal", "contact", "normal", "contact_law", "Contact Law", "hooke",
                 "How touching grains push each other apart",
                 (Choice("hooke", "Linear (Hooke)", "A linear spring and dashpot: the push grows in step with the "
                         "overlap; its stiffness is Automatic Stiffness or the Stiffness given here. Runs on every "
                         "backend"),
                  Choice("hertz", "Hertz–Mindlin", "The engineering default: the stiffness of each contact comes "
                         "from the Young's modulus and Poisson's ratio of each material (and of the walls) and grows "
                         "with the overlap, as between real elastic spheres. CPU backend only"))),
    ModelSetting("friction_model", "contact", "friction_model", "friction_model", "Friction", "spring",
                 "How grains resist sliding on each other, on walls and on colliders",
                 (Choice("spring", "Static", "A tangential spring per contact: grains rest on slopes and piles keep "
                         "their angle of repose. Runs on every backend (a resumed OptiX bake agrees to float32 "
                         "rounding)"),
                  Choice("damper", "Sliding", "History-free: sliding is resisted but never stopped, so piles slowly "
                         "spread. Runs on every backend, the GPU ones included"))),
    ModelSetting("rotation", "contact", "rotation", "rotation", "Rotating Grains", True,
                 "Grains spin from friction at their contacts (and roll). Off is the Mochi paper's non-rotating "
                 "model, which acts as infinite rolling resistance"),
    ModelSetting("integrator", "contact", "integrator", "integrator", "Integrator", "verlet",
                 "How positions and velocities advance each step",
                 (Choice("verlet", "Velocity Verlet", "Second order, as LAMMPS' fix nve/sphere: better energy "
                         "accuracy"),
                  Choice("euler", "Euler", "Semi-implicit Euler, the Mochi paper's integrator (with Rotating Grains "
                         "off it reproduces the paper's results)"))),
    ModelSetting("friction_cap", "contact", "friction_cap", None, "Friction Cap", "clipped",
                 "How friction and rolling resistance are capped: Mochi's, or a peer's convention for comparisons "
                 "with it. With the Hertz contact law use Spring: the others depend on dt there",
                 # In the order of their codes in the law tables (engine.contact_law.FRICTION_CAPS).
                 (Choice("clipped", "Clipped", "Mochi's: spring and damping together capped at μ max(f_n, 0)"),
                  Choice("absolute", "Absolute", "LAMMPS': spring and damping together capped at μ |f_n|"),
                  Choice("spring", "Spring", "LIGGGHTS': the spring alone capped at μ |f_n|, the tangential "
                         "damping acting only while the contact sticks"))),
    ModelSetting("rebuild_interval", "time", "rebuild_interval", "rebuild_interval", "Rebuild Interval", 10,
                 "Steps between two full rebuilds of the collision structure (refit or reuse in between)",
                 low=1, soft=(1, 100)),
    ModelSetting("seed", "scene", "seed", "seed", "Seed",
                 0, "Seed of every random choice while packing (same seed, same grains)", low=0, soft=(0, 1000)),
)


#: A source's choices: how its grains hold together (engine.bonds.Body's kind).
SOURCE_CHOICES: tuple[ModelSetting, ...] = (
    ModelSetting("body", "emitters", "body", "body", "Body", "loose",
                 "How the grains packed from this object hold together",
                 (Choice("loose", "Loose", "Every grain moves on its own"),
                  Choice("glued", "Glued", "Touching grains are glued by bonds that break under stress (Glue) and stay "
                         "broken: the object cracks or holds on impact"),
                  Choice("rigid", "Rigid", "All grains move as one rigid body that never deforms"))),
)


#: A force field's choices (engine.fields). None has a Mochi property in Blender: a panel field is Mochi's
#: own vortex, and a Blender force-field object's shape and Z direction are Blender's.
FIELD_CHOICES: tuple[ModelSetting, ...] = (
    ModelSetting("shape", "fields", "shape", None, "Shape", "point",
                 "What the falloff distance is measured from",
                 (Choice("point", "Point", "The distance from the field's centre"),
                  Choice("plane", "Plane", "The distance from the plane through the centre, normal to the axis (a "
                         "vortex: from its axis)"))),
    ModelSetting("z_direction", "fields", "z_direction", None, "Z Direction", "both",
                 "The side of the field's plane it acts on",
                 (Choice("both", "Both", "Both sides"), Choice("positive", "Positive", "The side the axis points to"),
                  Choice("negative", "Negative", "The other side"))),
    ModelSetting("profile", "fields", "profile", None, "Vortex Profile", "rankine",
                 "How a vortex swirls",
                 (Choice("rankine", "Rankine", "Mochi's: solid-body inside the core radius, falling off as 1/distance "
                         "outside"),
                  Choice("blender_point", "Blender Point", "Blender's point-shaped vortex: the swirl grows with the "
                         "distance from the centre"),
                  Choice("blender_plane", "Blender Plane", "Blender's plane-shaped vortex, its default: grains are "
                         "spun up to the angular rate Strength about the axis, on circles"))),
)


def model_settings(*, blender_only: bool = False) -> tuple[ModelSetting, ...]:
    """The model settings (those Blender has a property for, with ``blender_only``)."""
    return tuple(m for m in MODEL_SETTINGS if m.blender is not None or not blender_only)


def model_setting(key: str) -> ModelSetting:
    """The model setting whose engine attribute is ``key``."""
    return next(m for m in MODEL_SETTINGS if m.key == key)


def model_keys(table: str) -> set[str]:
    """The TOML keys the model settings put in ``table`` ('contact', 'time', 'scene')."""
    return {m.toml_key for m in MODEL_SETTINGS if m.table == table}


def model_values(source: Any, *, blender_only: bool = False) -> dict[str, Any]:
    """``{engine attribute: value}`` of the model settings on ``source`` (a Preset, Physics, settings)."""
    return {m.key: getattr(source, m.key) for m in model_settings(blender_only=blender_only)}


def model_tables(source: Any, *, blender_only: bool = False) -> dict[str, dict[str, Any]]:
    """The model settings of ``source`` as preset tables: ``{table: {toml key: value}}``."""
    tables: dict[str, dict[str, Any]] = {}
    for m in model_settings(blender_only=blender_only):
        tables.setdefault(m.table, {})[m.toml_key] = getattr(source, m.key)
    return tables


def to_blender(setting: ModelSetting, value: Any) -> Any:
    """A model setting's engine value as its Blender property holds it (a choice in capitals)."""
    return value.upper() if setting.choices else value


def from_blender(setting: ModelSetting, value: Any) -> Any:
    """A Blender property's value as the engine's (a choice in lower case)."""
    return value.lower() if setting.choices else setting.type(value)


def _model_type(setting: ModelSetting):
    if setting.choices:
        return Literal[setting.choice_keys()]
    if setting.type is bool:
        return bool
    return Annotated[int, msgspec.Meta(ge=setting.low, le=INTEGER_LIMIT)]


def read_model(tables: dict[str, dict], fail) -> dict[str, Any]:
    """The model settings found in a preset's tables (defaults for those left out), checked.

    Args:
        tables: ``{table name: parsed table}``; keys that are not model settings are ignored.
        fail: ``fail(where, message)`` raises the one sentence ('<file>: <where> <message>.'), ``where``
            being '[table] key'.

    Returns:
        ``{engine attribute: value}`` for every model setting.
    """
    values = {}
    for m in MODEL_SETTINGS:
        table = tables.get(m.table, {})
        where = f"[{m.table}] {m.toml_key}"
        values[m.key] = (_read_model_value(m, table[m.toml_key], lambda message, where=where: fail(where, message))
                         if m.toml_key in table else m.default)
    return values


def _read_model_value(m: ModelSetting, value: Any, fail) -> Any:
    """``value`` converted to ``m``'s type and checked; ``fail(message)`` raises the caller's sentence."""
    try:
        return msgspec.convert(value, _model_type(m), strict=True)
    except msgspec.ValidationError:
        if m.choices:
            fail(f"must be one of {', '.join(m.choice_keys())}, not {short_repr(value)}")
        if m.type is bool:
            fail(f"must be true or false, not {short_repr(value)}")
        if isinstance(value, int) and not isinstance(value, bool) and value < m.low:
            fail(f"must be ≥ {m.low}, not {short_repr(value)}")
        if isinstance(value, int) and not isinstance(value, bool):
            fail(f"must be ≤ {INTEGER_LIMIT}, not {short_repr(value)}")
        fail(f"must be an integer, not {short_repr(value)}")
