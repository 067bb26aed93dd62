"""Save Flamenco Job Types: copy the extension's Flamenco 3 job types to a Manager's scripts folder."""

from __future__ import annotations

from pathlib import Path

import bpy

#: The job-type scripts shipped with the extension (addon/flamenco/*.js).
JOB_TYPES_FOLDER = Path(__file__).resolve().parent.parent / "flamenco"


class MOCHI_OT_save_flamenco_job_types(bpy.types.Operator):
    """Copy Mochi's Flamenco job types (Mochi Bake and Render, Mochi Wedge) into a folder: choose the
    'scripts' folder beside flamenco-manager, then restart the Manager"""

    bl_idname = "mochi.save_flamenco_job_types"
    bl_label = "Save Flamenco Job Types"
    bl_options = {"REGISTER"}

    directory: bpy.props.StringProperty(
        name="Folder", subtype="DIR_PATH",
        description="Folder to copy the job types into: the 'scripts' folder beside the flamenco-manager executable")
    overwrite: bpy.props.BoolProperty(
        name="Overwrite", default=False,
        description="Replace job-type files of the same names that Mochi cannot prove it saved (its own earlier "
                    "copies are replaced without it)")

    def invoke(self, context, _event):
        context.window_manager.fileselect_add(self)
        return {"RUNNING_MODAL"}

    def execute(self, context):
        folder = Path(bpy.path.abspath(self.directory)) if self.directory else None
        if folder is None or not folder.is_dir():
            self.report({"ERROR"}, f"Choose an existing folder ('{self.directory}' is not one).")
            return {"CANCELLED"}
        from ...engine.errors import MochiError
        from ...engine.output_files import plan_outputs

        scripts = sorted(JOB_TYPES_FOLDER.glob("*.js"))
        try:
            # A file of the same name that Mochi did not save (a job type of the user's) is not replaced.
            plan = plan_outputs([folder / script.name for script in scripts], overwrite=self.overwrite,
                                hint="tick Overwrite")
            for script in scripts:
                data = script.read_bytes()
                plan.write(folder / script.name, lambda handle: handle.write(data))
        except (MochiError, OSError) as exc:
            self.report({"ERROR"}, str(exc) if isinstance(exc, MochiError)
                        else f"Cannot write into '{folder}': {exc.strerror or exc}.")
            return {"CANCELLED"}
        names = ", ".join(script.name for script in scripts)
        self.report({"INFO"}, f"Saved {names} into '{folder}'; restart the Flamenco Manager to load them.")
        return {"FINISHED"}


def draw_render_menu(self, _context):
    """Render menu entry (next to Render Image / Animation, where farm submission belongs)."""
    self.layout.separator()
    self.layout.operator(MOCHI_OT_save_flamenco_job_types.bl_idname, text="Save Mochi Flamenco Job Types…")


def register_menu():
    bpy.types.TOPBAR_MT_render.append(draw_render_menu)


def unregister_menu():
    bpy.types.TOPBAR_MT_render.remove(draw_render_menu)


CLASSES = (MOCHI_OT_save_flamenco_job_types,)
