"""Looks: what grains are made of, as an artist picks it (Sand, Gravel, Beads, Candy, Wet sand, Glued bunny).

A look is a grain radius, the small grains' radius of a two-radius packing, and a material (density,
restitution, friction, rolling resistance, stickiness); one TOML file each in ``presets/looks/``, its
stem the key. The Blender add-on's Looks menu and Quick Grains read them through ``list_looks`` and
``look``; ``docs/looks.md`` shows what each does (a measured pile per look,
``benchmarks/looks_repose.py``). No bpy here.

A look file::

    label = "Sand"
    description = "One line, the tooltip."
    order = 1                  # place in the menu (smallest first)
    radius = 0.005             # grain radius [m]
    small_ratio = 0.5          # small grains' radius / radius (1 = one size)
    body = "loose"             # optional: "loose" | "glued" | "rigid" (engine.model.Body)
    glue_strength = 1.0e5      # optional, read by glued bodies only [Pa]

The top-level keys but label, description, order and radius are engine.settings_schema's source
settings (small_ratio, body, glue_strength, glue_stiffness): their defaults and bounds are the presets'.

    [material]                 # engine.model.Material; keys as in a preset's [[materials]] (but name)
    density = 2500
    restitution = 0.3
    friction = 0.6
    rolling_friction = 0.3
    cohesion = 0.0
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

from .errors import MochiError
from .model import Material
from .preset import MATERIAL_KEYS, _Checker
from .settings_schema import GRAIN, SOURCE, choices_for, settings_dataclass, settings_for
from .resources import data_dir

#: The look new scenes get (Quick Grains, the demo).
DEFAULT_LOOK = "sand"

_TOP_KEYS = {"label", "description", "order", "radius", "material", *(s.key for s in settings_for(SOURCE)),
             *(m.toml_key for m in choices_for(SOURCE))}


@dataclass(frozen=True)
class _Look:
    """One look, as read from ``presets/looks/<key>.toml``.

    Attributes:
        key: File stem ("sand"), what settings store.
        label: Name shown in menus ("Sand").
        description: One line, used as a tooltip.
        radius: Grain radius [m] (the large grains of a two-radius packing).
        material: Density [kg/m³], restitution, friction μ, rolling resistance μ_r and stickiness
            (SJKR cohesion, Pa); its name is the key.

    How its source is packed and held together (small_ratio, body, glue_strength, glue_stiffness) are
    engine.settings_schema's source settings, as on a preset's emitter.
    """

    key: str
    label: str
    description: str
    radius: float
    material: Material


Look = settings_dataclass("Look", _Look, SOURCE)


def looks_dir() -> Path:
    """The folder of the look files (inside the installed package, else beside it)."""
    return data_dir("presets") / "looks"


def _read(path: Path) -> tuple[int, Look]:
    """One look file, validated: (its menu order, the look). MochiError names the file and key."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise MochiError(f"{path}: not valid TOML ({exc}).") from None
    c = _Checker(str(path))
    c.table(data, "the file", _TOP_KEYS)
    for required in ("label", "description", "radius", "material"):
        if required not in data:
            c.fail("the file", f"needs '{required}'")
    m = c.table(data["material"], "[material]", MATERIAL_KEYS - {"name"})
    material = Material(name=path.stem, **c.surface(m, "[material]", GRAIN))
    order = c.number(data, "the key", "order", 1000, integer=True)
    return order, Look(key=path.stem, label=c.string(data, "the key", "label", ""),
                       description=c.string(data, "the key", "description", ""),
                       radius=c.number(data, "the key", "radius", None, low=0, low_open=True),
                       material=material, **c.surface(data, "the key", SOURCE))


def list_looks() -> list[Look]:
    """Every look, in menu order (``order``, then key; sand first)."""
    found = [_read(path) for path in looks_dir().glob("*.toml")]
    return [entry for _, entry in sorted(found, key=lambda pair: (pair[0], pair[1].key))]


def look(key: str) -> Look:
    """The look ``key`` ("sand", "gravel", ...).

    Raises:
        MochiError: no look has that key (the sentence lists the known ones).
    """
    path = looks_dir() / f"{key}.toml"
    if not key or "/" in key or "\\" in key or not path.is_file():
        known = ", ".join(entry.key for entry in list_looks())
        raise MochiError(f"There is no look '{key}' (known looks: {known}).")
    return _read(path)[1]
