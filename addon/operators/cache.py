"""Free Bake and Open Cache Folder."""

from __future__ import annotations

import bpy


class MOCHI_OT_free_bake(bpy.types.Operator):
    """Delete the bake in the cache folder (frames, manifest, contact history, colliders) and the playback object"""

    bl_idname = "mochi.free_bake"
    bl_label = "Free Bake"
    bl_options = {"REGISTER", "UNDO"}

    def invoke(self, context, event):
        return context.window_manager.invoke_confirm(self, event, title="Free Mochi Bake",
                                                     message="Delete every frame of the bake from disk?",
                                                     confirm_text="Delete")

    def execute(self, context):
        from ...engine.bake import free_bake
        from ...engine.errors import MochiError
        from .. import playback
        from ..bake_job import current_job
        from ..snapshot import cache_folder

        if current_job() is not None:
            self.report({"ERROR"}, "A Mochi bake is running; cancel it before freeing the cache.")
            return {"CANCELLED"}
        try:
            folder = cache_folder(context.scene)
            free_bake(folder)  # refused while another process bakes into the folder
        except MochiError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        playback.remove_object(context.scene.mochi.playback_object)
        self.report({"INFO"}, f"Freed the bake in '{folder}'.")
        return {"FINISHED"}


class MOCHI_OT_open_cache_folder(bpy.types.Operator):
    """Open the cache folder in the system's file browser"""

    bl_idname = "mochi.open_cache_folder"
    bl_label = "Open Cache Folder"
    bl_options = {"REGISTER"}

    def execute(self, context):
        from ...engine.errors import MochiError
        from ..snapshot import cache_folder

        try:
            folder = cache_folder(context.scene)
        except MochiError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        if not folder.is_dir():
            self.report({"ERROR"}, f"The cache folder '{folder}' does not exist yet; bake first.")
            return {"CANCELLED"}
        bpy.ops.wm.path_open(filepath=str(folder))
        return {"FINISHED"}


CLASSES = (MOCHI_OT_free_bake, MOCHI_OT_open_cache_folder)
