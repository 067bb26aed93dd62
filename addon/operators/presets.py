"""Apply a preset (presets/*.toml, engine.preset schema) to the scene's Mochi settings.

Presets are written in the engine's frame, Y up; Blender is Z up, so vectors and box sides are turned
by +90° about X on the way in (engine (x, y, z) → Blender (x, −z, y)). A preset's emitters and domain
box are scene content and stay as they are; its settings (time, gravity, walls, first material, frame
count, seed, frame rate) are applied.
"""

from __future__ import annotations

from pathlib import Path

import bpy
from bpy.props import StringProperty

#: Engine side name → Blender side name under the Y-up → Z-up turn.
SIDE_ENGINE_TO_BLENDER = {"-x": "-x", "+x": "+x", "-y": "-z", "+y": "+z", "-z": "+y", "+z": "-y"}


def vector_engine_to_blender(v):
    x, y, z = v
    return (x, -z, y)


def preset_folders() -> list[str]:
    """The bundled presets/ folder and the user's preset folder (scripts/presets/mochi)."""
    bundled = Path(__file__).resolve().parents[2] / "presets"
    folders = [str(bundled)] if bundled.is_dir() else []
    user = bpy.utils.user_resource("SCRIPTS", path="presets/mochi", create=False)
    if user and Path(user).is_dir():
        folders.append(user)
    return folders


def apply_preset(preset, scene: bpy.types.Scene, active: bpy.types.Object | None) -> None:
    """Copy a validated ``engine.preset.Preset`` into the scene (and domain/active source) settings."""
    s = scene.mochi
    s.frame_end = s.frame_start + preset.frames - 1
    s.seed = preset.seed
    scene.render.fps = max(1, round(preset.fps))
    scene.render.fps_base = scene.render.fps / preset.fps
    if preset.dt is not None:
        s.timestep_mode, s.dt = "FIXED", preset.dt
    elif preset.substeps is not None:
        s.timestep_mode, s.substeps = "SUBSTEPS", preset.substeps
    else:
        s.timestep_mode = "AUTO"
    s.use_auto_stiffness = preset.stiffness is None
    if preset.stiffness is not None:
        s.stiffness = preset.stiffness
    s.rebuild_interval = preset.rebuild_interval
    s.friction_model = preset.friction_model.upper()
    s.gravity = vector_engine_to_blender(preset.gravity)
    s.use_rotating_gravity = preset.gravity_axis is not None and preset.gravity_rate != 0.0
    if s.use_rotating_gravity:
        s.gravity_axis = vector_engine_to_blender(preset.gravity_axis)
        s.gravity_rate = preset.gravity_rate
    for obj in scene.objects:
        if obj.mochi.role == "DOMAIN":
            obj.mochi.open_sides = {SIDE_ENGINE_TO_BLENDER[side] for side in preset.open_sides}
            obj.mochi.wall_restitution = preset.wall_restitution
            obj.mochi.wall_friction = preset.wall_friction
    if preset.materials and active is not None and active.mochi.role == "SOURCE":
        material = preset.materials[0]
        active.mochi.density = material["density"]
        active.mochi.restitution = material["restitution"]
        active.mochi.friction = material["friction"]


class MOCHI_OT_preset_apply(bpy.types.Operator):
    """Apply a Mochi preset's settings (time, gravity, walls, material) to this scene"""

    bl_idname = "mochi.preset_apply"
    bl_label = "Apply Mochi Preset"
    bl_options = {"REGISTER", "UNDO"}

    filepath: StringProperty(name="Preset", description="Path of the preset's .toml file",
                             subtype="FILE_PATH", options={"SKIP_SAVE"})

    def execute(self, context):
        from ...engine.errors import MochiError
        from ...engine.preset import load_preset

        try:
            preset = load_preset(self.filepath)
        except MochiError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        apply_preset(preset, context.scene, context.object)
        self.report({"INFO"}, f"Applied the preset '{preset.name}'.")
        return {"FINISHED"}


CLASSES = (MOCHI_OT_preset_apply,)
