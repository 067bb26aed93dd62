"""Pack: preview the sphere packing of the selected meshes without baking."""

from __future__ import annotations

import math

import bpy

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


def pack_confirmation(context) -> str | None:
    """What Pack asks before packing the selection, or None to pack at once: the predicted grains are
    within the preference's budget, or a source cannot be read (``execute`` says why in one sentence)."""
    from ...engine.errors import MochiError
    from ..grain_budget import forecast_sources, grain_confirmation
    from ..preferences import confirm_grain_budget

    try:
        forecast = forecast_sources(context, packable(pack_candidates(context)))
    except MochiError:
        return None
    return grain_confirmation(forecast, confirm_grain_budget(context))


def pack_report(scene, counts, left_out: int = 0, sources=()) -> str:
    """Pack's closing sentence: the objects, their spheres (``counts``: (name, spheres)) and what baking
    them takes. The time is the count-based figure of ``addon.grain_budget`` for the packed ``sources``
    (``SourceSettings``): the measured estimate needs the whole scene and takes seconds (docs/estimate.md),
    a frozen UI after every Pack, so the Bake button measures it instead."""
    from ..grain_budget import scene_forecast, time_sentence

    forecast = scene_forecast(scene, counts, sources)
    names = ", ".join(f"'{name}'" for name, _ in counts)
    skipped = f" ({left_out} domain or collider object{'s' if left_out != 1 else ''} left out)" if left_out else ""
    return (f"Packed {names} into {forecast.particle_count:,} spheres{skipped}, shown in place of "
            f"{'them' if len(counts) > 1 else 'it'}; {time_sentence(forecast)}.")


class MOCHI_OT_pack(bpy.types.Operator):
    """Pack the selected particle sources with spheres as they are at the bake's first frame and show them as a point cloud in place of the mesh (no simulation; domains and colliders are left out)"""

    bl_idname = "mochi.pack"
    bl_label = "Pack"
    bl_options = {"REGISTER", "UNDO"}

    def invoke(self, context, event):
        if context.window is None or not pack_candidates(context):
            return self.execute(context)
        message = pack_confirmation(context)
        if message is None:
            return self.execute(context)
        return context.window_manager.invoke_confirm(self, event, title="Pack This Many Grains?",
                                                     confirm_text="Pack", message=message)

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
                packed.append((obj, source, pack_source(source, seed=scene.mochi.seed)))
        except MochiError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        for obj, _, result in packed:
            playback.show_packing(scene, obj, result.positions, result.radius)
        left = len(everything) - len(selected)
        self.report({"INFO"}, pack_report(scene, [(obj.name, len(result.radius)) for obj, _, result in packed], left,
                                          [source for _, source, _ in packed]))
        return {"FINISHED"}


CLASSES = (MOCHI_OT_pack,)
