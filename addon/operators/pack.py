"""Pack: preview the sphere packing of the selected meshes without baking."""

from __future__ import annotations

import math

import bpy

#: Above this many spheres Pack asks first: packing takes minutes and a bake of so many is heavy.
PACK_CONFIRM_COUNT = 3_000_000
#: Solid fraction of the packing (HCP), and the depth of the small spheres' skin in large radii, for
#: the estimate of the sphere count (a 1 m cube at r = 0.05 m: 5,860 estimated, 6,152 packed).
HCP_FRACTION = 0.74
SKIN_RADII = 1.5


def estimated_sphere_count(source) -> int:
    """About how many spheres packing ``source`` (an ``addon.settings.SourceSettings``) gives: its count,
    or an HCP lattice of the large spheres inside and of the small ones in a skin of 1.5 radii under the
    surface (where the packer puts them), from the mesh's volume and area."""
    import numpy as np

    from ...engine.packing.mesh import place_vertices

    if source.count is not None:
        return int(source.count)
    corners = place_vertices(source.vertices, transform=source.matrix_world)[np.asarray(source.triangles)]
    volume = abs(float(np.einsum("ij,ij->i", corners[:, 0], np.cross(corners[:, 1], corners[:, 2])).sum())) / 6.0
    area = 0.5 * float(np.linalg.norm(np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0]),
                                      axis=1).sum())
    r = float(source.radius)
    small = r * float(source.small_ratio)
    skin = min(volume, SKIN_RADII * r * area) if small < r else 0.0
    sphere = 4.0 / 3.0 * math.pi
    return int(HCP_FRACTION * ((volume - skin) / (sphere * r ** 3) + skin / (sphere * small ** 3)))


class MOCHI_OT_pack(bpy.types.Operator):
    """Pack the selected mesh objects with spheres as they are at the bake's first frame and show them as a point cloud (no simulation)"""

    bl_idname = "mochi.pack"
    bl_label = "Pack"
    bl_options = {"REGISTER", "UNDO"}

    def invoke(self, context, event):
        from ...engine.errors import MochiError
        from ..snapshot import source_blender_to_settings

        if context.window is None or not context.selected_objects:
            return self.execute(context)
        scene = context.scene
        fps = scene.render.fps / scene.render.fps_base
        try:
            count = sum(estimated_sphere_count(source_blender_to_settings(o, context, frame_start=scene.mochi.frame_start,
                                                                          fps=fps))
                        for o in context.selected_objects if o.mochi.role != "COLLIDER")
        except MochiError:
            return self.execute(context)  # execute reports the problem in one sentence
        if count <= PACK_CONFIRM_COUNT:
            return self.execute(context)
        return context.window_manager.invoke_confirm(
            self, event, title="Pack Millions of Spheres?", confirm_text="Pack",
            message=f"About {count:,} spheres: packing takes minutes and baking them needs a lot of memory "
                    "and time. A larger radius gives fewer.")

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
