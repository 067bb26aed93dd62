"""Pack: preview the sphere packing of the selected meshes without baking."""

from __future__ import annotations

import math

import bpy

from ..modal_timer import PollingModal

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
    """The objects Pack packs: particle sources only. Never a domain or a collider (grains packed inside
    them would start in a wall), nor a plain mesh (Bake would not simulate it: a preview of grains that
    never fall would mislead), nor Mochi's own previews and playback."""
    previews = {o.mochi.pack_preview for o in objects if o.mochi.pack_preview is not None}
    return [o for o in objects if o.mochi.role == "SOURCE" and o not in previews
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
    skipped = (f" ({left_out} object{'s' if left_out != 1 else ''} that {'are' if left_out != 1 else 'is'} not a "
               "particle source left out)") if left_out else ""
    return (f"Packed {names} into {forecast.particle_count:,} spheres{skipped}, shown in place of "
            f"{'them' if len(counts) > 1 else 'it'}; {time_sentence(forecast)}.")


#: Seconds between two looks at a background Pack.
TIMER_STEP = 0.1
#: The Pack running in the background, if any (one at a time: two would share the two cores).
_running = None


class MOCHI_OT_pack(PollingModal, bpy.types.Operator):
    """Pack the selected particle sources with spheres as they are at the bake's first frame and show them as a point cloud in place of the mesh (no simulation; objects that are not sources are left out)"""

    bl_idname = "mochi.pack"
    bl_label = "Pack"
    bl_options = {"REGISTER", "UNDO"}

    in_background: bpy.props.BoolProperty(
        name="In the Background", description="Pack in a worker thread while the window keeps drawing (set "
        "when Pack is clicked; scripts pack at once)", default=False, options={"SKIP_SAVE", "HIDDEN"})

    _job = None
    _left_out = 0

    def invoke(self, context, event):
        if context.window is None or not pack_candidates(context):
            return self.execute(context)
        self.in_background = True
        message = pack_confirmation(context)
        if message is None:
            return self.execute(context)
        return context.window_manager.invoke_confirm(self, event, title="Pack This Many Grains?",
                                                     confirm_text="Pack", message=message)

    def _capture(self, context):
        """(sources by object name, objects left out), or None after reporting why nothing is packed."""
        from ...engine.errors import MochiError
        from ..snapshot import source_blender_to_settings

        everything = pack_candidates(context)
        if not everything:
            self.report({"ERROR"}, "Select the mesh objects to pack first.")
            return None
        selected = packable(everything)
        if not selected:
            self.report({"ERROR"}, "Pack packs particle sources, and the selection holds only domains, "
                        "colliders, plain meshes or Mochi's own objects; make a mesh a source (Mochi panel, "
                        "Role: Source) or use Quick Grains.")
            return None
        scene = context.scene
        fps = scene.render.fps / scene.render.fps_base
        try:
            sources = {obj.name: source_blender_to_settings(obj, context, frame_start=scene.mochi.frame_start,
                                                             fps=fps) for obj in selected}
        except MochiError as exc:
            self.report({"ERROR"}, str(exc))
            return None
        return sources, len(everything) - len(selected)

    def execute(self, context):
        from ...engine.errors import MochiError
        from ..settings import pack_source

        captured = self._capture(context)
        if captured is None:
            return {"CANCELLED"}
        sources, self._left_out = captured
        if self.in_background and context.window is not None:
            return self._start_background(context, sources)
        seed = context.scene.mochi.seed
        try:
            # Pack everything before touching the scene, so that a failure changes nothing.
            results = {name: pack_source(source, seed=seed) for name, source in sources.items()}
        except MochiError as exc:
            self.report({"ERROR"}, str(exc))
            return {"CANCELLED"}
        return self._show(context, sources, results)

    def _show(self, context, sources, results):
        """Put the packed previews in the scene (main thread only) and report."""
        from .. import playback

        scene = context.scene
        shown = []
        for name, result in results.items():
            obj = bpy.data.objects.get(name)
            if obj is None:  # deleted while it was being packed
                continue
            playback.show_packing(scene, obj, result.positions, result.radius)
            shown.append(name)
        if not shown:
            self.report({"WARNING"}, "The packed objects were deleted meanwhile; nothing to show.")
            return {"CANCELLED"}
        self.report({"INFO"}, pack_report(scene, [(name, len(results[name].radius)) for name in shown],
                                          self._left_out, [sources[name] for name in shown]))
        return {"FINISHED"}

    def _start_background(self, context, sources):
        global _running
        from ..pack_job import PackJob

        if _running is not None and not _running.finished:
            self.report({"ERROR"}, "A Pack is already running; wait for it or press Esc to cancel it.")
            return {"CANCELLED"}
        self._job = _running = PackJob(sources=sources, seed=context.scene.mochi.seed).start()
        self._start_timer(context, TIMER_STEP)
        return {"RUNNING_MODAL"}

    def modal(self, context, event):
        job = self._job
        if event.type == "ESC" and event.value == "PRESS":
            job.request_cancel()
            return {"RUNNING_MODAL"}
        if event.type != "TIMER":
            return {"PASS_THROUGH"}  # the window stays live while the worker packs
        if not job.finished:
            if context.workspace is not None and job.current:
                context.workspace.status_text_set(job.progress_line())
            return {"PASS_THROUGH"}
        self._stop_timer(context)
        if job.error is not None:
            self.report({"ERROR"}, job.error)
            return {"CANCELLED"}
        if job.cancel_requested:
            self.report({"WARNING"}, "Pack cancelled; nothing was changed.")
            return {"CANCELLED"}
        result = self._show(context, job.sources, job.results)
        if result == {"FINISHED"}:
            from ..pre_bake_estimate import start_measurement

            start_measurement(context)  # the bake time, measured before Bake is pressed
        return result

    def cancel(self, context):
        """Blender ends the modal operator (a file loaded, the window closed): stop the worker too."""
        self._stop_timer(context)
        if self._job is not None:
            self._job.request_cancel()
            self._job.join()


CLASSES = (MOCHI_OT_pack,)
