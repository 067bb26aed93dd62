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


def pack_candidates(context) -> list:
    """The selected objects, and the active one when it is a hidden source: a packed source is hidden
    (its preview stands in for it) and cannot be selected, so packing it again goes through the panel
    showing it."""
    objects = list(context.selected_objects)
    active = context.object
    if active is not None and active not in objects and active.mochi.role == "SOURCE" and active.hide_get():
        objects.append(active)
    return objects


def packable(objects) -> list:
    """The objects Pack packs: never a domain or a collider (grains packed inside them would start in a
    wall), nor Mochi's own previews and playback."""
    previews = {o.mochi.pack_preview for o in objects if o.mochi.pack_preview is not None}
    return [o for o in objects if o.mochi.role not in {"DOMAIN", "COLLIDER"} and o not in previews
            and not o.get("mochi_playback") and not o.name.startswith("Mochi Playback")]


class MOCHI_OT_pack(bpy.types.Operator):
    """Pack the selected particle sources with spheres as they are at the bake's first frame and show them as a point cloud in place of the mesh (no simulation; domains and colliders are left out)"""

    bl_idname = "mochi.pack"
    bl_label = "Pack"
    bl_options = {"REGISTER", "UNDO"}

    def invoke(self, context, event):
        from ...engine.errors import MochiError
        from ..snapshot import source_blender_to_settings

        if context.window is None or not pack_candidates(context):
            return self.execute(context)
        scene = context.scene
        fps = scene.render.fps / scene.render.fps_base
        try:
            count = sum(estimated_sphere_count(source_blender_to_settings(o, context, frame_start=scene.mochi.frame_start,
                                                                          fps=fps))
                        for o in packable(pack_candidates(context)))
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

        everything = pack_candidates(context)
        if not everything:
            self.report({"ERROR"}, "Select the mesh objects to pack first.")
            return {"CANCELLED"}
        selected = packable(everything)
        if not selected:
            self.report({"ERROR"}, "Pack packs particle sources, and the selection holds only domains, "
                        "colliders or Mochi's own objects; select a source (or use Quick Grains).")
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
        left = len(everything) - len(selected)
        skipped = f" ({left} domain or collider object{'s' if left != 1 else ''} left out)" if left else ""
        self.report({"INFO"}, f"Packed {names} into {total:,} spheres{skipped}; the preview replaces "
                    f"{'them' if len(packed) > 1 else 'it'} in the viewport.")
        return {"FINISHED"}


CLASSES = (MOCHI_OT_pack,)
