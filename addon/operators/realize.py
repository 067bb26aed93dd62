"""Convert to Mesh: the baked grains of the current frame as a real mesh object (addon/realize.py)."""

from __future__ import annotations

import bpy


class MOCHI_OT_realize_frame(bpy.types.Operator):
    """Make the grains of the current frame a real mesh object, independent of the bake: a sphere per grain, or the instanced objects, in the grain material (the playback stays as it is)"""

    bl_idname = "mochi.realize_frame"
    bl_label = "Convert Frame to Mesh"
    bl_options = {"REGISTER", "UNDO"}

    subdivisions: bpy.props.IntProperty(
        name="Sphere Subdivisions", description="Subdivisions of the icosphere made for each grain drawn as a "
        "sphere (1: 12 vertices a grain, 2: 42, 3: 162); instanced objects keep their own mesh",
        default=1, min=1, max=6, soft_max=4)
    hide_playback: bpy.props.BoolProperty(
        name="Hide Playback", description="Hide the playback object in the viewport and in renders, so that "
        "the grains are not drawn and rendered twice (the mesh stands where they are); the next Bake or Load "
        "Cache shows it again, as does its eye in the Outliner", default=True)

    def execute(self, context):
        from ...engine.errors import MochiError
        from ..bake_job import current_job
        from ..realize import realize_frame

        if current_job() is not None:
            self.report({"ERROR"}, "A Mochi bake is running; wait for it or cancel it before converting a frame.")
            return {"CANCELLED"}
        try:
            made = realize_frame(context, subdivisions=self.subdivisions, hide_playback=self.hide_playback)
        except MochiError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        self.report({"INFO"}, f"Made '{made.obj.name}' from cache frame {made.cache_frame}: {made.grain_count} "
                    f"grains, {made.vertex_count} vertices"
                    + ("; the playback is hidden until the next bake." if self.hide_playback else "."))
        return {"FINISHED"}


CLASSES = (MOCHI_OT_realize_frame,)
