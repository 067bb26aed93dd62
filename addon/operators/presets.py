"""Apply a preset (presets/*.toml, engine.preset schema) to the scene's Mochi settings; save the scene
as a preset (addon.preset_export) into the user's preset folder, and remove user presets.

Presets are written in the engine's frame, Y up; Blender is Z up, so vectors and box sides are turned
by +90° about X on the way in (engine (x, y, z) → Blender (x, −z, y)). A preset's emitters and domain
box are scene content and stay as they are; its settings (time, gravity, contact law, walls, first material,
frame count in the scene's frame rate, which it never changes, seed) and its fields (the engine's in the Fields
panel, Blender's kinds as force-field objects) are applied. A peer's friction cap, which the panel does not
hold, is named in a warning.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import bpy
from bpy.props import StringProperty

from ...engine.settings_schema import GRAIN, SOURCE, WALL, model_settings, surface_values
from ...engine.settings_schema import to_blender as blender_value
from ..properties.schema import set_surface

#: Engine side name → Blender side name under the Y-up → Z-up turn.
SIDE_ENGINE_TO_BLENDER = {"-x": "-x", "+x": "+x", "-y": "-z", "+y": "+z", "-z": "+y", "+z": "-y"}


def vector_engine_to_blender(v):
    x, y, z = v
    return (x, -z, y)


#: The user's presets, beside Blender's own presets of other tools (scripts/presets/mochi).
USER_PRESET_PATH = "presets/mochi"


def user_preset_folder(*, create: bool = False) -> Path | None:
    """The user's Mochi preset folder (created when ``create``), or None when it does not exist."""
    folder = bpy.utils.user_resource("SCRIPTS", path=USER_PRESET_PATH, create=create)
    return Path(folder) if folder and Path(folder).is_dir() else None


def preset_folders() -> list[str]:
    """The bundled presets/ folder, the user's preset folder and its subfolders (a saved preset lives
    in a folder of its own, with its meshes)."""
    bundled = Path(__file__).resolve().parents[2] / "presets"
    folders = [str(bundled)] if bundled.is_dir() else []
    user = user_preset_folder()
    if user is not None:
        folders += [str(user)] + [str(p) for p in sorted(user.iterdir()) if p.is_dir()]
    return folders


def user_presets() -> list[Path]:
    """The .toml presets of the user (in the folder or a subfolder of it), by name."""
    folder = user_preset_folder()
    return sorted([*folder.glob("*.toml"), *folder.glob("*/*.toml")], key=lambda p: p.stem) if folder else []


def save_scene_preset(context, path: Path, *, name: str, description: str = "", overwrite: bool = False) -> Path:
    """Snapshot the scene as a bake would and write it as the preset ``path`` with its meshes
    (``overwrite``: replace files that exist already, else refused; see ``write_preset``).

    Raises:
        MochiError: an incomplete scene (as Bake says it), a deforming collider, an unwritable folder.
    """
    from ...engine.preset_writer import write_preset
    from ..preset_export import settings_to_preset
    from ..snapshot import scene_blender_to_settings

    settings = scene_blender_to_settings(context)
    document, meshes = settings_to_preset(settings, name=name, description=description)
    return write_preset(path, document, meshes, overwrite=overwrite)


def preset_frames_in_scene(preset, scene_fps: float) -> int:
    """The preset's duration in frames of the scene's frame rate ``scene_fps`` [1/s], which a preset
    never changes."""
    return max(1, round(preset.frames * scene_fps / preset.fps))


def preset_substeps_in_scene(preset, scene_fps: float) -> int | None:
    """Steps per scene frame that keep the preset's time step at ``scene_fps`` [1/s] (None: no substeps)."""
    return None if preset.substeps is None else max(1, round(preset.substeps * preset.fps / scene_fps))


def preset_confirmation(context, preset) -> str | None:
    """What applying ``preset`` asks first, or None to apply it at once.

    A benchmark preset fixes the time step (``changing_radii_large``: 800,000 steps per frame). It asks
    when the steps it sets, times the grains they will move, take a rough bake time
    (``engine.budget.rough_bake_seconds``) over the preference "Ask Before Bakes Longer Than". The grains
    are the scene's sources as predicted from their volumes (nothing is packed), or the preset's own box
    emitters when the scene has no source yet. An 'auto' time step is the scene's own choice: no question.
    """
    from ...engine.budget import DEFAULT_MAX_STEPS_PER_FRAME
    from ...engine.errors import MochiError
    from ...engine.timestep import fixed_steps_per_frame
    from ..grain_budget import forecast_sources, format_duration, scene_forecast
    from ..preferences import confirm_seconds

    scene = context.scene
    scene_fps = scene.render.fps / scene.render.fps_base
    steps = fixed_steps_per_frame(fps=scene_fps, dt=preset.dt, substeps=preset_substeps_in_scene(preset, scene_fps))
    limit = confirm_seconds(context)
    if steps is None or limit is None:
        return None
    sources = [o for o in scene.objects if o.mochi.role == "SOURCE"]
    try:
        counts = forecast_sources(context, sources).counts if sources else ()
    except MochiError:
        counts = ()
    whose = "the scene's sources"
    if not counts:
        counts = tuple((e.material or "emitter", e.count) for e in preset.emitters if e.kind == "box" and e.count)
        whose = "the preset's own emitters"
    frames = preset_frames_in_scene(preset, scene_fps)
    forecast = replace(scene_forecast(scene, counts), steps_per_frame=steps, frames=frames - 1,
                       steps_automatic=False)
    seconds = forecast.rough_seconds
    if not forecast.particle_count or seconds <= limit:
        return None
    refused = (f" The Bake button refuses more than {DEFAULT_MAX_STEPS_PER_FRAME:,} steps per frame (the command "
               "line's mochi bake --max-steps-per-frame runs it).") if steps > DEFAULT_MAX_STEPS_PER_FRAME else ""
    return (f"'{preset.name}' steps {forecast.frames:,} frames at {steps:,} steps each "
            f"({forecast.frames * steps:,} steps) for the {forecast.particle_count:,} grains of {whose}: roughly "
            f"{format_duration(seconds)} on a CPU, longer than the {format_duration(limit)} of the preference "
            f"'Ask Before Bakes Longer Than'.{refused} Apply it?")


def apply_preset(preset, scene: bpy.types.Scene, active: bpy.types.Object | None) -> list[str]:
    """Copy a validated ``engine.preset.Preset`` into the scene (and domain/active source) settings, its
    fields included (``addon.force_fields.fields_engine_to_blender``).

    Returns:
        Sentences about what could not be applied.
    """
    from ...engine.fields import ForceField
    from ..force_fields import fields_engine_to_blender

    # A preset saved from Blender is Z up already; the shipped ones are Y up.
    to_blender = (lambda v: tuple(v)) if preset.up_axis == "Z" else vector_engine_to_blender
    sides = {s: s for s in SIDE_ENGINE_TO_BLENDER} if preset.up_axis == "Z" else SIDE_ENGINE_TO_BLENDER
    s = scene.mochi
    # The scene's frame rate is the artist's (a preset never changes it): the preset's duration is kept
    # in the scene's frames instead.
    scene_fps = scene.render.fps / scene.render.fps_base
    s.frame_end = s.frame_start + preset_frames_in_scene(preset, scene_fps) - 1
    for setting in model_settings(blender_only=True):  # contact law, friction, rotation, integrator...
        setattr(s, setting.blender, blender_value(setting, getattr(preset, setting.key)))
    if preset.dt is not None:
        s.timestep_mode, s.dt = "FIXED", preset.dt
    elif preset.substeps is not None:
        s.timestep_mode, s.substeps = "SUBSTEPS", preset_substeps_in_scene(preset, scene_fps)
    else:
        s.timestep_mode = "AUTO"
    s.use_auto_stiffness = preset.stiffness is None
    if preset.stiffness is not None:
        s.stiffness = preset.stiffness
    s.gravity = to_blender(preset.gravity)
    s.use_rotating_gravity = preset.gravity_axis is not None and preset.gravity_rate != 0.0
    if s.use_rotating_gravity:
        s.gravity_axis = to_blender(preset.gravity_axis)
        s.gravity_rate = preset.gravity_rate
    for obj in scene.objects:
        if obj.mochi.role == "DOMAIN":
            obj.mochi.open_sides = {sides[side] for side in preset.open_sides}
            set_surface(obj.mochi, WALL, surface_values(preset, WALL))
    if preset.materials and active is not None and active.mochi.role == "SOURCE":
        material = preset.materials[0]
        set_surface(active.mochi, GRAIN, {key: value for key, value in material.items() if key != "name"})
        if preset.emitters:
            source = surface_values(preset.emitters[0], SOURCE)
            if preset.emitters[0].kind != "mesh":  # a box or a PLY packs no mesh: its small ratio means nothing
                source.pop("small_ratio")
            set_surface(active.mochi, SOURCE, source)
    notes = []
    if preset.friction_cap != "clipped":
        # A peer's cap is for comparisons with that peer, not in the panel: say so rather than drop it silently.
        notes.append(f"The preset's friction cap (friction_cap = '{preset.friction_cap}', for comparisons with "
                     "another DEM code) is not in Blender's Mochi panel: this scene keeps Mochi's own cap; bake the "
                     "preset itself with 'mochi bake' to use it.")
    return notes + fields_engine_to_blender(tuple(ForceField(**f) for f in preset.fields), scene,
                                            to_blender=to_blender, name=preset.name)


def apply_preset_saying(preset, scene: bpy.types.Scene, active: bpy.types.Object | None) -> tuple[list[str], str]:
    """``apply_preset``, and one sentence naming every setting it changed (the range, the stiffness, the
    domain's walls, the active source's material...): a preset never changes anything silently.

    Returns:
        (sentences about what could not be applied, the sentence of what changed).
    """
    from ..bake_state import invalidate
    from ..change_report import changes_in_words, settings_snapshot, summary

    touched = [o for o in scene.objects if o.mochi.role == "DOMAIN" or o == active]
    before = settings_snapshot(scene, touched)
    notes = apply_preset(preset, scene, active)
    changed = changes_in_words(before, settings_snapshot(scene, touched))
    invalidate()  # the bake panel compares the scene with the bake again, at once
    return notes, f"Applied the preset '{preset.name}': {summary(changed)}."


class MOCHI_OT_preset_apply(bpy.types.Operator):
    """Apply a Mochi preset's settings (time, gravity, walls, material) to this scene"""

    bl_idname = "mochi.preset_apply"
    bl_label = "Apply Mochi Preset"
    bl_options = {"REGISTER", "UNDO"}

    filepath: StringProperty(name="Preset", description="Path of the preset's .toml file",
                             subtype="FILE_PATH", options={"SKIP_SAVE"})

    def invoke(self, context, event):
        from ...engine.errors import MochiError
        from ...engine.preset import load_preset

        if context.window is None:
            return self.execute(context)
        try:
            message = preset_confirmation(context, load_preset(self.filepath))
        except MochiError:
            message = None  # execute says what is wrong with the file
        if message is None:
            return self.execute(context)
        return context.window_manager.invoke_confirm(self, event, title="Apply a Long Benchmark?",
                                                     confirm_text="Apply", message=message)

    def execute(self, context):
        from ...engine.errors import MochiError
        from ...engine.preset import load_preset

        try:
            preset = load_preset(self.filepath)
        except MochiError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        notes, said = apply_preset_saying(preset, context.scene, context.object)
        for note in notes:
            self.report({"WARNING"}, note)
        self.report({"INFO"}, said)
        return {"FINISHED"}


class MOCHI_OT_preset_save(bpy.types.Operator):
    """Save this scene's Mochi settings, sources (as meshes) and colliders as a preset in your preset folder"""

    bl_idname = "mochi.preset_save"
    bl_label = "Save Mochi Preset"
    bl_options = {"REGISTER"}

    name: StringProperty(name="Name", description="Name of the preset, shown in the preset menu",
                         default="My Scene")
    description: StringProperty(name="Description", description="One line about the preset (optional)",
                                default="")

    def invoke(self, context, event):
        return context.window_manager.invoke_props_dialog(self)

    def execute(self, context):
        from ...engine.errors import MochiError
        from ...engine.preset_writer import mesh_file_name

        name = self.name.strip()
        if not name:
            self.report({"ERROR"}, "Give the preset a name.")
            return {"CANCELLED"}
        folder = user_preset_folder(create=True)
        if folder is None:
            self.report({"ERROR"}, "Blender has no user scripts folder to keep presets in.")
            return {"CANCELLED"}
        # Each preset in a folder of its own, so its meshes/ never mix with another preset's.
        stem = Path(mesh_file_name(name)).stem  # the name as a safe file name
        path = folder / stem / f"{stem}.toml"
        try:
            # The user preset folder is Mochi's own: saving a name again updates that preset.
            save_scene_preset(context, path, name=name, description=self.description, overwrite=True)
        except MochiError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        self.report({"INFO"}, f"Saved the preset '{name}' to '{path}'.")
        return {"FINISHED"}


class MOCHI_OT_preset_remove(bpy.types.Operator):
    """Delete one of your own presets (the presets shipped with Mochi cannot be removed)"""

    bl_idname = "mochi.preset_remove"
    bl_label = "Remove Mochi Preset"
    bl_options = {"REGISTER"}

    filepath: StringProperty(name="Preset", description="Path of the user preset's .toml file",
                             subtype="FILE_PATH", options={"SKIP_SAVE"})

    def invoke(self, context, event):
        return context.window_manager.invoke_confirm(self, event, title="Remove Mochi Preset",
                                                     message=f"Delete the preset '{Path(self.filepath).stem}'?",
                                                     confirm_text="Delete")

    def execute(self, context):
        import shutil

        folder = user_preset_folder()
        path = Path(self.filepath)
        if folder is None or path.suffix != ".toml" or not path.is_file() \
                or folder.resolve() not in path.resolve().parents:
            self.report({"ERROR"}, f"'{path}' is not one of your presets; only those in '{folder}' can be removed.")
            return {"CANCELLED"}
        try:
            if path.parent.resolve() != folder.resolve() and path.parent.name == path.stem:
                shutil.rmtree(path.parent)  # the preset's own folder, with its meshes
            else:
                path.unlink()
        except OSError as exc:
            self.report({"ERROR"}, f"Cannot delete '{path}': {exc.strerror or exc}.")
            return {"CANCELLED"}
        self.report({"INFO"}, f"Removed the preset '{path.stem}'.")
        return {"FINISHED"}


CLASSES = (MOCHI_OT_preset_apply, MOCHI_OT_preset_save, MOCHI_OT_preset_remove)
