"""Export USD and Export Alembic: the scene's Mochi cache for other pipelines (File > Export too)."""

from __future__ import annotations

import bpy
from bpy_extras.io_utils import ExportHelper


class MOCHI_OT_export_usd(bpy.types.Operator, ExportHelper):
    """Export the scene's Mochi cache as a USD stage with one points prim (positions, widths,
    velocities, ids, object ids); the frames go to one layer each in a folder beside the stage"""

    bl_idname = "mochi.export_usd"
    bl_label = "Export Mochi USD"
    bl_options = {"REGISTER"}

    filename_ext = ".usda"
    filter_glob: bpy.props.StringProperty(default="*.usda;*.usdc;*.usd", options={"HIDDEN"})
    file_format: bpy.props.EnumProperty(
        name="Format", default="USDA",
        items=(("USDA", "Text (.usda)", "A readable stage; the frame layers are binary either way"),
               ("USDC", "Binary (.usdc)", "A binary (crate) stage")),
        description="File format of the stage; the per-frame layers are always binary (.usdc)")
    overwrite: bpy.props.BoolProperty(
        name="Overwrite", default=False,
        description="Replace files under the names the export writes (the stage, its _frames layers) that Mochi "
                    "cannot prove it wrote; an export's own earlier files are replaced without it")

    def check(self, context):
        self.filename_ext = ".usdc" if self.file_format == "USDC" else ".usda"
        return super().check(context)

    def execute(self, context):
        from pathlib import Path

        from ...engine.errors import MochiError
        from ...engine.export.usd import export_cache_to_usd
        from ..bake_job import current_job
        from ..bake_owner import cache_folder

        from .. import compat

        if current_job() is not None:
            self.report({"ERROR"}, "A Mochi bake is running; export once it has finished (or cancel it).")
            return {"CANCELLED"}
        if not compat.has_usd():
            self.report({"ERROR"}, "This Blender was built without USD (some Linux distributions' builds are); "
                        "export from a shell with `mochi export CACHE --usd OUT.usda`, or use a Blender from "
                        "blender.org.")
            return {"CANCELLED"}
        try:
            stage = Path(bpy.path.abspath(self.filepath))
            if stage.suffix.lower() not in (".usda", ".usdc", ".usd"):
                stage = stage.with_suffix(".usdc" if self.file_format == "USDC" else ".usda")
            window_manager = context.window_manager
            window_manager.progress_begin(0, 1)
            try:
                result = export_cache_to_usd(cache_folder(context.scene), stage, overwrite=self.overwrite,
                                             overwrite_hint="tick Overwrite",
                                             on_frame=lambda frame, frames: window_manager.progress_update(frame / frames))
            finally:
                window_manager.progress_end()
        except MochiError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        self.report({"INFO"}, f"Exported frames 1–{result.frames} to '{result.stage_path}' "
                              f"({result.written} frame layers written, the others were current).")
        return {"FINISHED"}


class MOCHI_OT_export_alembic(bpy.types.Operator, ExportHelper):
    """Export the playback object to Alembic with Blender's exporter: grain centres and velocities per
    frame (Alembic from Blender carries no radii or ids; use USD for those)"""

    bl_idname = "mochi.export_alembic"
    bl_label = "Export Mochi Alembic"
    bl_options = {"REGISTER"}

    filename_ext = ".abc"
    filter_glob: bpy.props.StringProperty(default="*.abc", options={"HIDDEN"})
    overwrite: bpy.props.BoolProperty(
        name="Overwrite", default=False,
        description="Replace an existing .abc that Mochi cannot prove it wrote; its own earlier export is "
                    "replaced without it")

    def execute(self, context):
        from ...engine.errors import MochiError
        from ..bake_job import current_job
        from ..export_alembic import export_playback_alembic

        if current_job() is not None:
            self.report({"ERROR"}, "A Mochi bake is running; export once it has finished (or cancel it).")
            return {"CANCELLED"}
        scene = context.scene
        try:
            path = export_playback_alembic(context, scene.mochi.playback_object, self.filepath,
                                           frame_start=scene.frame_start, frame_end=scene.frame_end,
                                           overwrite=self.overwrite)
        except MochiError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        self.report({"INFO"}, f"Exported frames {scene.frame_start}–{scene.frame_end} to '{path}'.")
        return {"FINISHED"}


def draw_export_menu(self, _context):
    """File > Export entries."""
    self.layout.operator(MOCHI_OT_export_usd.bl_idname, text="Mochi Cache (.usda/.usdc)")
    self.layout.operator(MOCHI_OT_export_alembic.bl_idname, text="Mochi Cache (.abc)")


def register_menu():
    bpy.types.TOPBAR_MT_file_export.append(draw_export_menu)


def unregister_menu():
    bpy.types.TOPBAR_MT_file_export.remove(draw_export_menu)


CLASSES = (MOCHI_OT_export_usd, MOCHI_OT_export_alembic)
