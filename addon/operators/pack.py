"""Pack: preview the sphere packing of the selected meshes without baking."""

from __future__ import annotations

import bpy


class MOCHI_OT_pack(bpy.types.Operator):
    """Pack the selected mesh objects with spheres as they are at the bake's first frame and show them as a point cloud (no simulation)"""

    bl_idname = "mochi.pack"
    bl_label = "Pack"
    bl_options = {"REGISTER", "UNDO"}

    def execute(self, context):
        from ...engine.errors import MochiError
        from .. import playback
        from ..settings import pack_source
        from ..snapshot import source_blender_to_settings

        selected = list(context.selected_objects)
        if not selected:
            self.report({"ERROR"}, "Select the mesh objects to pack first.")
            return {"CANCELLED"}
        for obj in selected:
            if obj.mochi.role == "COLLIDER":  # grains packed inside a collider would start inside it
                self.report({"ERROR"}, f"'{obj.name}' is a collider, so it cannot also be packed as a particle "
                            "source; set its role to Particle Source or deselect it.")
                return {"CANCELLED"}
        scene = context.scene
        fps = scene.render.fps / scene.render.fps_base
        try:
            # Pack everything before touching the scene, so that a failure changes nothing.
            packed = []
            for obj in selected:
                source = source_blender_to_settings(obj, context, frame_start=scene.mochi.frame_start, fps=fps)
                packed.append((obj, pack_source(source, seed=scene.mochi.seed)))
        except MochiError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        total = 0
        for obj, result in packed:
            playback.show_packing(scene, obj, result.positions, result.radius)
            total += len(result.radius)
        names = ", ".join(f"'{obj.name}'" for obj, _ in packed)
        self.report({"INFO"}, f"Packed {names} into {total} spheres.")
        return {"FINISHED"}


CLASSES = (MOCHI_OT_pack,)
