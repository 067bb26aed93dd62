"""Free Bake, Open Cache Folder, and Load Cache (a bake made elsewhere, e.g. `mochi bake`, played back here)."""

from __future__ import annotations

import bpy


def delete_bake_question(scene) -> str:
    """The Delete Bake confirmation: which folder, how many frames.

    Raises:
        MochiError: no usable cache folder, or a damaged manifest.
    """
    from ...engine.cache import read_manifest
    from ..bake_owner import cache_folder

    folder = cache_folder(scene)
    manifest = read_manifest(folder) if folder.is_dir() else None
    frames = int(manifest.get("frames_completed", 0)) if manifest else 0
    return f"Delete the {frames} baked frame{'s' if frames != 1 else ''} in '{folder}' from disk?"


class MOCHI_OT_free_bake(bpy.types.Operator):
    """Delete the bake in the cache folder (frames, manifest, contact history, colliders) and the playback object"""

    bl_idname = "mochi.free_bake"
    bl_label = "Delete Bake"
    bl_options = {"REGISTER", "UNDO"}

    def invoke(self, context, event):
        from ...engine.errors import MochiError

        try:
            question = delete_bake_question(context.scene)
        except MochiError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        return context.window_manager.invoke_confirm(self, event, title="Delete Mochi Bake",
                                                     confirm_text="Delete", message=question)

    def execute(self, context):
        from ...engine.bake import free_bake
        from ...engine.cache import read_manifest
        from ...engine.errors import MochiError
        from .. import playback
        from ..bake_job import current_job
        from ..bake_owner import cache_folder, check_bake_owner
        from ..playback_owner import owned_playback_object, show_sources_without_bake

        if current_job() is not None:
            self.report({"ERROR"}, "A Mochi bake is running; cancel it before deleting the bake.")
            return {"CANCELLED"}
        scene = context.scene
        try:
            folder = cache_folder(scene)
            if folder.is_dir():  # never another file's or scene's bake, whose grains it still plays back
                check_bake_owner(folder, read_manifest(folder), scene)
            free_bake(folder)  # refused while another process bakes into the folder
        except MochiError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        playback.remove_object(owned_playback_object(scene))  # never the original's, shared by a Linked Copy
        scene.mochi.playback_object = None
        show_sources_without_bake(scene)  # the sources render again
        self.report({"INFO"}, f"Freed the bake in '{folder}'.")
        return {"FINISHED"}


class MOCHI_OT_open_cache_folder(bpy.types.Operator):
    """Open the cache folder in the system's file browser"""

    bl_idname = "mochi.open_cache_folder"
    bl_label = "Open Cache Folder"
    bl_options = {"REGISTER"}

    def execute(self, context):
        from ...engine.errors import MochiError
        from ..bake_owner import cache_folder

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


class MOCHI_OT_load_cache(bpy.types.Operator):
    """Play back a Mochi cache baked elsewhere (the command line, another .blend, a farm) in this scene"""

    bl_idname = "mochi.load_cache"
    bl_label = "Load Cache"
    bl_options = {"REGISTER", "UNDO"}

    directory: bpy.props.StringProperty(name="Cache Folder", description="Folder holding manifest.json and "
                                        "the frame_NNNN.ply files", subtype="DIR_PATH")

    def invoke(self, context, event):
        context.window_manager.fileselect_add(self)
        return {"RUNNING_MODAL"}

    def execute(self, context):
        from pathlib import Path

        from ...engine.cache import read_manifest
        from ...engine.errors import MochiError
        from .. import playback
        from ..bake_job import current_job
        from ..playback_owner import LOADED_TAG
        from ..settings import UP_AXIS_KEY

        if current_job() is not None:
            self.report({"ERROR"}, "A Mochi bake is running; wait for it or cancel it before loading a cache.")
            return {"CANCELLED"}
        folder = Path(bpy.path.abspath(self.directory)) if self.directory else None
        try:
            if folder is None or not folder.is_dir():
                raise MochiError(f"'{self.directory}' is not a folder; choose a Mochi cache folder.")
            manifest = read_manifest(folder)
            if manifest is None or manifest["frames_completed"] < 1:
                raise MochiError(f"'{folder}' holds no Mochi bake (no manifest.json with a complete frame).")
        except MochiError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        scene = context.scene
        # Relative to the .blend when it is saved, as Blender keeps its own paths.
        stored = bpy.path.relpath(str(folder)) if bpy.data.filepath else str(folder)
        scene.mochi.cache_directory = stored
        start = int(manifest.get("frame_start_scene", scene.mochi.frame_start))
        obj = playback.ensure_playback_object(scene, stored, start_frame=start,
                                              last_frame=manifest["frames_completed"],
                                              up_axis=str(manifest.get(UP_AXIS_KEY, "Y")))
        obj[LOADED_TAG] = playback.folder_for_node(stored)  # played as chosen, even another file's bake
        self.report({"INFO"}, f"Loaded {manifest['frames_completed']} frames of {manifest['particle_count']:,} "
                              f"particles from '{folder}'.")
        return {"FINISHED"}


CLASSES = (MOCHI_OT_free_bake, MOCHI_OT_open_cache_folder, MOCHI_OT_load_cache)
