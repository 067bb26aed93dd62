"""docs/settings.md: the settings page preset authors read, generated from engine.settings_schema.

``python scripts/settings_doc.py`` writes it; a test keeps it equal to ``settings_markdown()``.
"""

from __future__ import annotations

from .settings_schema import (COLLIDER, COORDINATE_LIMIT, FIELD, FPS_RANGE, GRAIN, KINDS, MODEL_SETTINGS, RADIUS_RANGE,
                              SOURCE, TIME, WALL, ModelSetting, attribute, choices_for, label, settings_for, tooltip)


def settings_markdown() -> str:
    """docs/settings.md: a table per surface of every setting's key, Blender label, unit, default and
    bounds, with its tooltip, and one of the model settings (``scripts/settings_doc.py`` writes it; a test
    keeps it current)."""
    where = {GRAIN: ("Grain material", "a preset's `[[materials]]`, a look's `[material]`, a source object"),
             WALL: ("Walls", "a preset's `[domain]`, the domain object"),
             COLLIDER: ("Collider surface", "a preset's `[[colliders]]`, a collider object "
                                            "(Blender properties `collider_<key>`)"),
             SOURCE: ("Particle source", "a preset's `[[emitters]]`, a look's top level, a source object"),
             TIME: ("Time stepping", "a preset's `[time]` (each left out or `auto`: the engine chooses; dt or "
                                     "substeps, not both), the scene's Mochi settings (the Time Step and Automatic "
                                     "Stiffness switches); the default shown is Blender's for a value set by hand"),
             FIELD: ("Force fields", "a preset's `[[fields]]` (besides `type`, `vector`, `axis`, `center`, `path`, "
                                     "`lo`, `hi`), a field of the Mochi Fields panel (Rate, Strength, Core Radius; "
                                     "a Blender force-field object's others are Blender's own)")}
    lines = ["# Material, surface and model settings", "",
             "Generated from `engine/settings_schema.py` by `python scripts/settings_doc.py`; do not edit.",
             "A preset, a look or a Blender object that leaves a setting out gets its default.",
             "Every number has a finite range (*allowed*), checked before any work: a preset, a look, a wedge's "
             "`--vary`, a scene from Blender and the physics a resumed bake recorded are refused with one sentence "
             "naming the setting (`engine.settings_schema.check_physics`).",
             f"Positions (grains, a PLY's points, the domain's corners) and every vector component are within "
             f"±{COORDINATE_LIMIT:g} m, grain radii from {RADIUS_RANGE[0]:g} to {RADIUS_RANGE[1]:g} m "
             f"(engine/settings_types.py says why: positions are float32), a preset's `[scene] fps` from "
             f"{FPS_RANGE[0]:g} to {FPS_RANGE[1]:g}.", ""]
    for surface in KINDS:
        title, read_from = where[surface]
        lines += [f"## {title}", "", f"Read from {read_from}.", "",
                  "| key | Blender | unit | default | allowed | what it does |",
                  "| --- | --- | --- | --- | --- | --- |"]
        for s in settings_for(surface):
            lines.append(f"| `{attribute(s, surface)}` | {label(s, surface) if s.in_blender else '–'} | "
                         f"{s.unit or '–'} | {f'`auto` ({s.default:g})' if s.automatic else f'{s.default:g}'} | "
                         f"{s.bounds_text()}{', whole' if s.integer else ''} | {tooltip(s, surface)} |")
        for m in choices_for(surface):
            lines.append(f"| `{m.key}` | {m.label if m.blender else '–'} | – | `{m.default}` | {_choices_text(m)} | "
                         f"{m.tooltip} |")
        lines.append("")
    lines += ["## The model", "",
              "Read from a preset's `[contact]`, `[time]` and `[scene]` tables and the scene's Mochi settings.", "",
              "| preset key | Blender | default | allowed | what it does |", "| --- | --- | --- | --- | --- |"]
    for m in MODEL_SETTINGS:
        allowed = (_choices_text(m) if m.choices else "true, false" if m.type is bool else f"integer ≥ {m.low}")
        default = str(m.default).lower() if m.type is bool else f"`{m.default}`" if m.choices else m.default
        lines.append(f"| `[{m.table}] {m.toml_key}` | {m.label if m.blender else '–'} | {default} | {allowed} | "
                     f"{m.tooltip} |")
    lines.append("")
    return "\n".join(lines)


def _choices_text(m: ModelSetting) -> str:
    return ", ".join(f"`{c.key}` ({c.label}: {c.tooltip})" for c in m.choices)
