"""What a preset or a look changed, in the words of the panel: nothing changes silently.

``settings_snapshot`` reads the values a preset or a look may set (the scene's Mochi settings, its frame
range and frame rate, the Mochi settings of some objects) under the labels the panel shows them with;
``changes_in_words`` compares two snapshots: "End 72 → 48, Use Scene Range on → off, 'Cube' Friction
0.5 → 0.4", every change named. The operators that apply them say it in their report (the Info editor
keeps the whole sentence), and Undo restores it all (they are undoable operators).
"""

from __future__ import annotations

import bpy

def _value(value):
    if isinstance(value, (set, frozenset)):
        return tuple(sorted(value))
    if hasattr(value, "__len__") and not isinstance(value, str):
        return tuple(value)
    return value


def _group_values(group, prefix: str) -> dict[str, object]:
    """Label → value of the plain properties of a property group (no pointers, collections, hidden ones)."""
    values = {}
    for prop in group.bl_rna.properties:
        if prop.identifier in {"rna_type", "name"} or prop.type in {"POINTER", "COLLECTION"}:
            continue
        if prop.is_hidden or prop.is_readonly:
            continue
        label = f"{prefix}{prop.name}"
        if label in values:  # two settings under one label (a grain's and a collider's Friction)
            label = f"{label} ({prop.identifier.replace('_', ' ')})"
        values[label] = _value(getattr(group, prop.identifier))
    return values


def settings_snapshot(scene: bpy.types.Scene, objects=()) -> dict[str, object]:
    """The scene's range, frame rate and Mochi settings, and the Mochi settings of ``objects``, by label."""
    values = {"Scene Start": scene.frame_start, "Scene End": scene.frame_end,
              "Frame Rate": round(scene.render.fps / scene.render.fps_base, 6)}
    values.update(_group_values(scene.mochi, ""))
    for obj in objects:
        values.update(_group_values(obj.mochi, f"'{obj.name}' "))
    return values


def _words(value) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, float):
        value += 0.0  # −0 reads 0
        return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.4g}"  # 140,000 N/m, never 1.4e+05
    if isinstance(value, tuple):
        return "(" + ", ".join(_words(v) for v in value) + ")" if value else "none"
    return str(value).replace("_", " ").lower() if isinstance(value, str) and value.isupper() else str(value)


def _digits(value: float) -> str:
    return f"{value + 0.0:.6g}"  # + 0.0: −0 (a turned vector's zero) is 0


def changes_in_words(before: dict[str, object], after: dict[str, object]) -> list[str]:
    """'Label old → new' for every value that differs (floats compared to 6 significant digits)."""
    found = []
    for label, old in before.items():
        new = after.get(label, old)
        if isinstance(old, float) and isinstance(new, float):
            same = _digits(old) == _digits(new)
        elif isinstance(old, tuple) and isinstance(new, tuple) and all(isinstance(v, float) for v in old + new):
            same = [_digits(v) for v in old] == [_digits(v) for v in new]
        else:
            same = old == new
        if not same:
            found.append(f"{label} {_words(old)} → {_words(new)}")
    return found


def summary(found: list[str]) -> str:
    """The changes as one clause, every one of them named: 'changed End 72 → 48, …', or 'changed nothing'."""
    return "changed " + ", ".join(found) if found else "changed nothing"
