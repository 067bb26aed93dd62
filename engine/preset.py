"""Preset scenes: TOML files validated into frozen dataclasses.

A preset stores only what differs from the defaults below. Every problem is reported as one sentence
naming the file and the key, e.g. "presets/x.toml: [time] dt must be a positive number or 'auto', not
-1." The schema (tables, keys, types, defaults) is the ``SCHEMA`` dictionary; docs/presets.md in the
README describes it for authors.
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import MochiError
from .fields import FIELD_KINDS
from .model import SIDES
from .preset_colliders import ColliderSpec, parse_colliders
from .settings_schema import (AUTO, COORDINATE_LIMIT, FIELD, FPS_RANGE, GRAIN, INTEGER_LIMIT, NUMBER_LIMIT,
                              RADIUS_RANGE, SOURCE, TIME, WALL, attribute, choices_for, model_keys, read_model,
                              read_surface, settings_dataclass, settings_for)
from .settings_schema import short_repr as _short



@dataclass(frozen=True)
class _EmitterSpec:
    """Where particles come from (see README, 'Presets').

    kind 'box': ``count`` spheres with radii uniform in ``radius`` on random distinct sites of a lattice
    in the box lo..hi (never overlapping), deterministic for the scene seed.
    kind 'mesh': the mesh file at ``path`` packed with spheres (engine.packing), once per ``copies``
    offset, each copy its own object id.
    kind 'file': particles from a PLY with x y z radius (optional vx vy vz, and wx wy wz spins [rad/s]).
    ``seed`` packs a mesh with its own seed (default: the scene's); ``pivot`` is the point a mesh's
    ``angular_velocity`` turns about (default: the centre of its packed spheres): the object turns as a
    rigid body, each grain spinning with it. A box's (or a PLY's without spin columns) grains each spin
    at ``angular_velocity`` about their own centre. A spin needs rotating grains (refused otherwise; a
    mesh object still turns, its grains not spinning, with a note).
    ``body`` says how its grains hold together: 'loose', 'glued' (bonds of ``glue_strength`` [Pa] and
    ``glue_stiffness`` [N/m³], 0: as stiff as a contact) or 'rigid' (engine.model.Body); these and
    ``small_ratio`` are engine.settings_schema's source settings.
    """

    kind: str
    count: int | None = None
    lo: tuple[float, float, float] = (0.0, 0.0, 0.0)
    hi: tuple[float, float, float] = (1.0, 1.0, 1.0)
    radius: tuple[float, float] | None = None
    material: str | None = None
    velocity: tuple[float, float, float] = (0.0, 0.0, 0.0)
    angular_velocity: tuple[float, float, float] = (0.0, 0.0, 0.0)
    object_id: int = 0
    path: str = ""
    shell: int = 0
    fit: float | None = None
    center: tuple[float, float, float] | None = None
    rotation: tuple[float, float, float] = (0.0, 0.0, 0.0)
    copies: tuple[tuple[float, float, float], ...] = ((0.0, 0.0, 0.0),)
    seed: int | None = None
    pivot: tuple[float, float, float] | None = None


#: small_ratio, body, glue_strength and glue_stiffness are engine.settings_schema's source settings.
EmitterSpec = settings_dataclass("EmitterSpec", _EmitterSpec, SOURCE)


@dataclass(frozen=True)
class _Preset:
    """A validated preset. Numbers are SI: m, s, kg, rad."""

    source: str
    name: str = "Untitled"
    description: str = ""
    fps: float = 25.0
    frames: int = 10
    domain_lo: tuple[float, float, float] = (0.0, 0.0, 0.0)
    domain_hi: tuple[float, float, float] = (1.0, 1.0, 1.0)
    open_sides: tuple[str, ...] = ()
    gravity: tuple[float, float, float] = (0.0, -9.81, 0.0)
    gravity_axis: tuple[float, float, float] | None = None
    gravity_rate: float = 0.0
    materials: tuple[dict, ...] = ()
    fields: tuple[dict, ...] = ()
    emitters: tuple[EmitterSpec, ...] = field(default_factory=tuple)
    colliders: tuple[ColliderSpec, ...] = ()  # [[colliders]], see engine.preset_colliders
    #: The axis that points up in the preset's coordinates: 'Y' (the engine's presets) or 'Z' (presets
    #: saved from Blender, whose coordinates they keep). Recorded as the cache's up axis.
    up_axis: str = "Y"


    @property
    def folder(self) -> Path:
        return Path(self.source).parent


#: The wall fields (wall_friction, ...) are engine.settings_schema's wall settings, as on ``Domain``, dt,
#: substeps and stiffness its time settings (None: the engine chooses), and the model's (contact_normal,
#: friction_model, rotation, integrator, friction_cap, rebuild_interval, seed) its model settings.
Preset = settings_dataclass("Preset", _Preset, (WALL, TIME), model="all")


# --- validation helpers -------------------------------------------------------------------------


#: Largest coordinate, offset, velocity or acceleration component [m, m/s, m/s²]: the schema's
#: ``COORDINATE_LIMIT`` (far beyond any scene, far below float32's 3.4e38, whose neighbourhood turns grid
#: sizes negative).
VECTOR_LIMIT = COORDINATE_LIMIT
#: Mesh copies of one emitter: each is packed and simulated; more is a mistake, not a scene.
MAX_COPIES = 1000


class _Checker:
    def __init__(self, source: str):
        self.source = source

    def fail(self, where: str, message: str):
        """Raise the sentence '<source>: <where> <message>.'"""
        raise MochiError(f"{self.source}: {where} {message}.")

    def table(self, data: Any, where: str, allowed: set[str]) -> dict:
        if not isinstance(data, dict):
            self.fail(where, "must be a table")
        unknown = sorted(set(data) - allowed)
        if unknown:
            self.fail(where, f"has unknown key '{unknown[0]}' (allowed: {', '.join(sorted(allowed))})")
        return data

    def number(self, data: dict, where: str, key: str, default, *, low=None, high=None, low_open=False,
               integer=False):
        if key not in data:
            return default
        value = data[key]
        kind = "an integer" if integer else "a number"
        ok = isinstance(value, int) if integer else isinstance(value, (int, float))
        if isinstance(value, bool) or not ok or (not integer and not math.isfinite(value)):
            self.fail(f"{where} {key}", f"must be {kind}, not {value!r}")
        limit = INTEGER_LIMIT if integer else NUMBER_LIMIT
        high = limit if high is None else min(high, limit)
        if low is None or low < -limit:
            low_bound = -limit
            if value < low_bound:
                self.fail(f"{where} {key}", f"must be ≥ {low_bound:g}, not {value!r}")
        if low is not None and (value < low or (low_open and value == low)):
            self.fail(f"{where} {key}", f"must be {'>' if low_open else '≥'} {low}, not {value!r}")
        if high is not None and value > high:
            self.fail(f"{where} {key}", f"must be ≤ {high}, not {value!r}")
        return int(value) if integer else float(value)

    def surface(self, data: dict, where: str, surface: str) -> dict[str, Any]:
        """The settings of a kind ('grain', 'wall', 'collider', 'source', 'time') in ``data``
        (engine.settings_schema), checked."""
        return read_surface(data, surface, lambda key, message: self.fail(f"{where} {key}", message))

    def vector(self, data: dict, where: str, key: str, default, length=3):
        if key not in data:
            return default
        value = data[key]
        if (not isinstance(value, list) or len(value) != length
                or not all(isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) for x in value)):
            self.fail(f"{where} {key}", f"must be a list of {length} numbers, not {_short(value)}")
        if any(abs(x) > VECTOR_LIMIT for x in value):
            self.fail(f"{where} {key}", f"must have components within ±{VECTOR_LIMIT:g}, not {_short(value)}")
        return tuple(float(x) for x in value)

    def boolean(self, data: dict, where: str, key: str, default: bool) -> bool:
        if key not in data:
            return default
        value = data[key]
        if not isinstance(value, bool):
            self.fail(f"{where} {key}", f"must be true or false, not {value!r}")
        return value

    def string(self, data: dict, where: str, key: str, default, choices=None):
        if key not in data:
            return default
        value = data[key]
        if not isinstance(value, str):
            self.fail(f"{where} {key}", f"must be a string, not {value!r}")
        if choices is not None and value not in choices:
            self.fail(f"{where} {key}", f"must be one of {', '.join(choices)}, not {value!r}")
        return value


TOP_KEYS = {"scene", "time", "contact", "domain", "gravity", "materials", "fields", "emitters", "colliders"}
MATERIAL_KEYS = {"name", *(attribute(s, GRAIN) for s in settings_for(GRAIN))}
DOMAIN_KEYS = {"lo", "hi", "open", *(attribute(s, WALL) for s in settings_for(WALL))}
FIELD_KEYS = {"type", "vector", "axis", "center", "path", "lo", "hi", *(s.key for s in settings_for(FIELD)),
              *(m.toml_key for m in choices_for(FIELD))}
EMITTER_KEYS = {"type", "count", "lo", "hi", "radius", "material", "velocity", "angular_velocity",
                "object_id", "path", "shell", "fit", "center", "rotation", "copies", "seed", "pivot",
                *(s.key for s in settings_for(SOURCE)), *(m.toml_key for m in choices_for(SOURCE))}


def parse_preset(data: dict, source: str) -> Preset:
    """Validate a parsed TOML document; ``source`` names it in errors."""
    c = _Checker(source)
    c.table(data, "the file", TOP_KEYS)
    scene = c.table(data.get("scene", {}), "[scene]", {"name", "description", "fps", "frames", "up",
                                                       *model_keys("scene")})
    time = c.table(data.get("time", {}), "[time]", {*(s.key for s in settings_for(TIME)), *model_keys("time")})
    contact = c.table(data.get("contact", {}), "[contact]", model_keys("contact"))
    domain = c.table(data.get("domain", {}), "[domain]", DOMAIN_KEYS)
    model = read_model({"scene": scene, "time": time, "contact": contact}, c.fail)
    if model["contact_normal"] == "hertz" and time.get("stiffness", AUTO) != AUTO:
        c.fail("[time] stiffness", "has no meaning with [contact] normal = \"hertz\" (the stiffness comes from "
               "the materials' youngs_modulus); leave it out")
    gravity = c.table(data.get("gravity", {}), "[gravity]", {"vector", "rotation_axis", "rotation_rate"})

    lo = c.vector(domain, "[domain]", "lo", (0.0, 0.0, 0.0))
    hi = c.vector(domain, "[domain]", "hi", (1.0, 1.0, 1.0))
    if any(h <= l for l, h in zip(lo, hi)):
        c.fail("[domain]", f"hi {list(hi)} must be greater than lo {list(lo)} on every axis")
    open_sides = domain.get("open", [])
    if not isinstance(open_sides, list) or any(s not in SIDES for s in open_sides):
        c.fail("[domain] open", f"must be a list of sides among {', '.join(SIDES)}, not {open_sides!r}")
    if "dt" in time and "substeps" in time:
        c.fail("[time]", "sets both dt and substeps; give one of them")

    raw_materials = data.get("materials", [{}])
    if not isinstance(raw_materials, list) or not raw_materials:
        c.fail("[[materials]]", "must list at least one material (leave the key out for the default one)")
    materials = []
    for index, raw in enumerate(raw_materials):
        where = f"[[materials]] #{index + 1}"
        m = c.table(raw, where, MATERIAL_KEYS)
        materials.append({"name": c.string(m, where, "name", f"material{index}"),
                          **c.surface(m, where, GRAIN)})
    names = [m["name"] for m in materials]
    if len(set(names)) != len(names):
        c.fail("[[materials]]", "has two materials with the same name")

    fields = []
    raw_fields = data.get("fields", [])
    if not isinstance(raw_fields, list):
        c.fail("[[fields]]", "must be a list of tables")
    for index, raw in enumerate(raw_fields):
        where = f"[[fields]] #{index + 1}"
        f = c.table(raw, where, FIELD_KEYS)
        kind = c.string(f, where, "type", None, choices=FIELD_KINDS)
        if kind is None:
            c.fail(where, "needs a type")
        entry = {"kind": kind,
                 "vector": c.vector(f, where, "vector", (0.0, 0.0, 0.0)),
                 "axis": c.vector(f, where, "axis", (0.0, 1.0, 0.0)),
                 "center": c.vector(f, where, "center", (0.0, 0.0, 0.0)),
                 "lo": c.vector(f, where, "lo", (0.0, 0.0, 0.0)),
                 "hi": c.vector(f, where, "hi", (1.0, 1.0, 1.0)),
                 "path": "",
                 **c.surface(f, where, FIELD)}
        if kind == "sampled":
            path = c.string(f, where, "path", None)
            if path is None:
                c.fail(where, "of type sampled needs a path to a .npy file")
            entry["path"] = str((Path(source).parent / path).resolve())
        if kind in ("rotating", "vortex", "force", "wind", "turbulence") and not any(entry["axis"]):
            c.fail(f"{where} axis", "must not be zero")
        fields.append(entry)

    emitters = []
    raw_emitters = data.get("emitters", [])
    if not isinstance(raw_emitters, list):
        c.fail("[[emitters]]", "must be a list of tables")
    for index, raw in enumerate(raw_emitters):
        emitters.append(_parse_emitter(c, raw, f"[[emitters]] #{index + 1}", names, Path(source).parent))
    if not emitters:
        c.fail("the file", "has no [[emitters]], so the scene would have no particles")

    axis = c.vector(gravity, "[gravity]", "rotation_axis", None)
    if axis is not None and not any(axis):
        c.fail("[gravity] rotation_axis", "must not be zero")
    return Preset(
        source=source,
        name=c.string(scene, "[scene]", "name", Path(source).stem),
        description=c.string(scene, "[scene]", "description", ""),
        fps=c.number(scene, "[scene]", "fps", 25.0, low=FPS_RANGE[0], high=FPS_RANGE[1]),
        frames=c.number(scene, "[scene]", "frames", 10, low=1, high=1_048_574, integer=True),
        up_axis=c.string(scene, "[scene]", "up", "y", choices=("y", "z")).upper(),
        **c.surface(time, "[time]", TIME),
        **model,
        domain_lo=lo, domain_hi=hi, open_sides=tuple(open_sides),
        **c.surface(domain, "[domain]", WALL),
        gravity=c.vector(gravity, "[gravity]", "vector", (0.0, -9.81, 0.0)),
        gravity_axis=axis,
        gravity_rate=c.number(gravity, "[gravity]", "rotation_rate", 0.0),
        materials=tuple(materials), fields=tuple(fields), emitters=tuple(emitters),
        colliders=parse_colliders(c, data.get("colliders"), Path(source).parent))


def _parse_emitter(c: _Checker, raw: Any, where: str, material_names: list[str], folder: Path) -> EmitterSpec:
    e = c.table(raw, where, EMITTER_KEYS)
    kind = c.string(e, where, "type", None, choices=("box", "mesh", "file"))
    if kind is None:
        c.fail(where, "needs a type (box, mesh or file)")
    material = c.string(e, where, "material", material_names[0], choices=material_names)
    radius = None
    if "radius" in e:
        value = e["radius"]
        if isinstance(value, list):
            radius = c.vector(e, where, "radius", None, length=2)
        else:
            r = c.number(e, where, "radius", None, low=0, low_open=True)
            radius = (r, r)
        if radius[0] <= 0 or radius[1] < radius[0]:
            c.fail(f"{where} radius", f"must be a positive number or [min, max] with 0 < min ≤ max, not {value!r}")
        if radius[0] < RADIUS_RANGE[0] or radius[1] > RADIUS_RANGE[1]:
            c.fail(f"{where} radius", f"must be from {RADIUS_RANGE[0]:g} to {RADIUS_RANGE[1]:g} m, not {_short(value)}")
    count = c.number(e, where, "count", None, low=1, integer=True)
    path = c.string(e, where, "path", "")
    if kind == "box":
        if count is None or radius is None:
            c.fail(where, "of type box needs count and radius")
    elif kind == "mesh":
        if not path:
            c.fail(where, "of type mesh needs a path")
        if (count is None) == (radius is None):
            c.fail(where, "of type mesh needs exactly one of radius and count")
    elif not path:
        c.fail(where, "of type file needs a path to a PLY")
    copies = e.get("copies", [[0.0, 0.0, 0.0]])
    if not isinstance(copies, list) or not copies:
        c.fail(f"{where} copies", "must be a non-empty list of [x, y, z] offsets")
    if len(copies) > MAX_COPIES:
        c.fail(f"{where} copies", f"lists {len(copies):,} copies; at most {MAX_COPIES:,} are allowed")
    copy_offsets = tuple(c.vector({"copies": v}, where, "copies", None) for v in copies)
    if len(set(copy_offsets)) != len(copy_offsets):
        twice = next(o for o in copy_offsets if copy_offsets.count(o) > 1)
        c.fail(f"{where} copies", f"lists the offset {list(twice)} twice (two copies in one place overlap "
                                  "completely)")
    lo = c.vector(e, where, "lo", (0.0, 0.0, 0.0))
    hi = c.vector(e, where, "hi", (1.0, 1.0, 1.0))
    if kind == "box" and any(h <= l for l, h in zip(lo, hi)):
        c.fail(where, f"hi {list(hi)} must be greater than lo {list(lo)} on every axis")
    return EmitterSpec(
        kind=kind, count=count, lo=lo, hi=hi, radius=radius, material=material,
        velocity=c.vector(e, where, "velocity", (0.0, 0.0, 0.0)),
        angular_velocity=c.vector(e, where, "angular_velocity", (0.0, 0.0, 0.0)),
        # Each copy takes the next id: the last one must still be an int32.
        object_id=c.number(e, where, "object_id", 0, low=0, high=INTEGER_LIMIT - len(copy_offsets) + 1, integer=True),
        path=str((folder / path).resolve()) if path else "",
        shell=c.number(e, where, "shell", 0, low=0, integer=True),
        fit=c.number(e, where, "fit", None, low=RADIUS_RANGE[0], high=COORDINATE_LIMIT),
        center=c.vector(e, where, "center", None),
        rotation=c.vector(e, where, "rotation", (0.0, 0.0, 0.0)),
        copies=copy_offsets,
        seed=c.number(e, where, "seed", None, low=0, integer=True),
        pivot=c.vector(e, where, "pivot", None),
        **c.surface(e, where, SOURCE))


#: Largest preset file read [bytes] (the largest shipped preset is a few kB).
PRESET_MAX_BYTES = 16 * 2**20


def read_preset_document(path: str | Path) -> dict:
    """A preset file's TOML document, not validated yet (``parse_preset`` does that; a wedge edits
    the document first).

    Raises:
        MochiError: missing file or malformed TOML (one sentence).
    """
    path = Path(path)
    if not path.is_file():
        raise MochiError(f"The preset '{path}' does not exist.")
    if path.stat().st_size > PRESET_MAX_BYTES:
        raise MochiError(f"The preset '{path}' is {path.stat().st_size:,} bytes; a preset is a short text file "
                         f"(at most {PRESET_MAX_BYTES // 2**20} MiB).")
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise MochiError(f"{path}: not valid TOML ({exc}).") from None
    except RecursionError:
        raise MochiError(f"{path}: its tables or lists are nested too deeply to be a preset.") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise MochiError(f"Cannot read the preset '{path}' ({exc}).") from None


def load_preset(path: str | Path) -> Preset:
    """Read and validate a preset file.

    Raises:
        MochiError: missing file, malformed TOML, or any schema violation (one sentence).
    """
    return parse_preset(read_preset_document(path), str(path))


def preset_inputs(preset: Preset, *, particles: int | None) -> dict:
    """What a bake of ``preset`` is made from, for the cache's fingerprint (``engine.digest``): every
    setting, the contents of every file it names, and the requested particle count. The preset's own
    path is left out, so a moved or renamed copy of the same preset resumes the same bake."""
    from .digest import files_by_contents

    settings = files_by_contents(preset)
    for key in ("source", "frames", "description"):  # where it lives and how long to bake: not the scene
        settings.pop(key, None)
    return {"preset": settings, "particles_requested": particles}
