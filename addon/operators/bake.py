"""Bake, Resume and Cancel: the engine runs in a worker thread, a timer-driven modal operator follows it."""

from __future__ import annotations

import bpy

from ..modal_timer import PollingModal

#: Seconds between two looks at the worker's progress.
TIMER_STEP = 0.25


def redraw_progress(context) -> None:
    """Redraw the areas that show bake progress (properties editor, status bar). Not the viewport: a new
    frame redraws it through the playback object's update, and redrawing its grains every tick under a
    software OpenGL took the CPU the bake and the window needed (docs/benchmarks.md, issue 44)."""
    screen = context.screen
    if screen is None:
        return
    for area in screen.areas:
        if area.type in {"PROPERTIES", "STATUSBAR"}:
            area.tag_redraw()


def bake_confirmation(context) -> tuple[str, str] | None:
    """What a new bake from the Bake button asks first, as (title, message), or None to start at once.

    It asks when the scene's sources predict more grains than the preference's budget (count, memory
    and time, naming the largest sources; nothing is packed), and when the cache folder is outside the
    .blend's folder: a .blend opened from elsewhere may name any folder, and baking there writes (and a
    later Delete Bake deletes) files outside the project. A scene that cannot bake is not asked about:
    the bake refuses it in one sentence.
    """
    from ...engine.errors import MochiError
    from ..grain_budget import forecast_sources, grain_confirmation
    from ..preferences import confirm_grain_budget
    from ..bake_owner import cache_folder, is_outside_blend_folder

    sources = [o for o in context.scene.objects if o.mochi.role == "SOURCE"]
    try:
        forecast = forecast_sources(context, sources)
    except MochiError:
        forecast = None
    grains = None if forecast is None else grain_confirmation(forecast, confirm_grain_budget(context))
    outside = None
    if is_outside_blend_folder(context.scene):
        outside = f"This file bakes into '{cache_folder(context.scene)}', outside the .blend's folder."
    if grains is None and outside is None:
        return None
    title = f"Bake {forecast.particle_count:,} Grains?" if grains is not None else "Bake Outside the Project?"
    message = " ".join(part for part in (grains, outside) if part) + (" Bake there?" if outside else "")
    return title, message


def backend_refusal(scene) -> str:
    """'' when the scene's backend can run here, else why not and the one thing to do (said before the bake
    starts, never as a pip command from inside it)."""
    from ..backend_probe import backend_availability, unavailable_sentence

    reason = backend_availability().missing.get(scene.mochi.backend)
    return "" if reason is None else " ".join(unavailable_sentence(scene.mochi.backend, reason))


class _BakeBase(PollingModal):
    resume = False
    modal_after_confirm = False  # a property of Bake; Resume never asks

    _monitor = None

    def _start(self, context, *, ask: bool = False):
        from ...engine.errors import MochiError
        from ..bake_monitor import start_bake
        from ..playback_owner import prepare_bake
        from ..preferences import confirm_seconds

        refusal = backend_refusal(context.scene)
        if refusal:
            self.report({"ERROR"}, refusal)
            return None
        prepare_bake(context.scene)
        try:
            monitor = start_bake(context, resume=self.resume, confirm_above=confirm_seconds(context) if ask else None)
        except MochiError as exc:
            self.report({"ERROR"}, str(exc))
            return None
        for note in monitor.notes:  # force fields the engine cannot bake, named before it starts
            self.report({"WARNING"}, note)
        return monitor

    def _end(self, context):
        outcome = self._monitor.finish()
        self.report({outcome.level}, outcome.message)
        redraw_progress(context)
        return {"FINISHED"} if outcome.level != "ERROR" else {"CANCELLED"}

    def execute(self, context):
        """Without a window (scripts, background mode): bake and wait, printing a line per frame. After the
        confirmation of a bake outside the project (a window is open), the bake runs in the background."""
        from ..bake_monitor import run_blocking

        if self.modal_after_confirm and context.window is not None:
            return self._start_modal(context)

        self._monitor = self._start(context)
        if self._monitor is None:
            return {"CANCELLED"}
        outcome = run_blocking(self._monitor, log=print)
        self.report({outcome.level}, outcome.message)
        return {"FINISHED"} if outcome.level != "ERROR" else {"CANCELLED"}

    def invoke(self, context, event):
        if context.window is None:
            return self.execute(context)
        question = None if self.resume else bake_confirmation(context)
        if question is not None:
            # The confirmed bake runs in the background as a clicked one does.
            self.modal_after_confirm = True
            title, message = question
            return context.window_manager.invoke_confirm(self, event, title=title, confirm_text="Bake",
                                                         message=message)
        return self._start_modal(context)

    def _start_modal(self, context):
        self._monitor = self._start(context, ask=True)  # a long bake waits for a go in the panel
        if self._monitor is None:
            return {"CANCELLED"}
        self._start_timer(context, TIMER_STEP)
        return {"RUNNING_MODAL"}

    def modal(self, context, event):
        if event.type == "ESC" and event.value == "PRESS":
            self._monitor.job.request_cancel()
            return {"RUNNING_MODAL"}
        if event.type != "TIMER":
            return {"PASS_THROUGH"}  # the rest of the UI stays live while the worker bakes
        done = self._monitor.poll()
        redraw_progress(context)  # the panel and the status bar draw the progress (ui/)
        if not done:
            return {"PASS_THROUGH"}
        self._stop_timer(context, clear_status=False)  # the bake sets no status text (ui/ draws its progress)
        return self._end(context)

    def cancel(self, context):
        """Blender ends the modal operator (file loaded, window closed): stop the worker too."""
        self._stop_timer(context, clear_status=False)
        if self._monitor is not None:
            self._monitor.job.request_cancel()
            self._monitor.job.join()
            self._monitor.finish()


class MOCHI_OT_bake(_BakeBase, bpy.types.Operator):
    """Simulate the scene's particle sources in the background and write the cache frame by frame"""

    bl_idname = "mochi.bake"
    bl_label = "Bake"
    bl_options = {"REGISTER", "UNDO"}  # one undo step for the playback object the bake adds

    modal_after_confirm: bpy.props.BoolProperty(
        name="Background After Confirmation", description="Set by the confirmation of a bake outside the "
        "project: the confirmed bake runs in the background as a clicked one does",
        default=False, options={"HIDDEN", "SKIP_SAVE"})


class MOCHI_OT_bake_resume(_BakeBase, bpy.types.Operator):
    """Continue the bake in the cache folder from its last complete frame up to the end frame"""

    bl_idname = "mochi.bake_resume"
    bl_label = "Resume"
    bl_options = {"REGISTER", "UNDO"}
    resume = True


class MOCHI_OT_bake_confirm(bpy.types.Operator):
    """Bake anyway: the estimate is longer than the limit set in the add-on's preferences"""

    bl_idname = "mochi.bake_confirm"
    bl_label = "Bake Anyway"
    bl_options = {"REGISTER"}

    @classmethod
    def poll(cls, _context):
        from ..bake_job import current_job

        job = current_job()
        return job is not None and bool(job.progress.awaiting_confirmation)

    def execute(self, _context):
        from ..bake_job import current_job

        current_job().confirm()
        return {"FINISHED"}


class MOCHI_OT_bake_cancel(bpy.types.Operator):
    """Stop the running bake after the frame being computed; written frames are kept"""

    bl_idname = "mochi.bake_cancel"
    bl_label = "Cancel Bake"
    bl_options = {"REGISTER"}

    @classmethod
    def poll(cls, _context):
        from ..bake_job import current_job

        return current_job() is not None

    def execute(self, _context):
        from ..bake_job import current_job

        job = current_job()
        job.request_cancel()
        self.report({"INFO"}, "Cancelling the bake after the current frame.")
        return {"FINISHED"}


CLASSES = (MOCHI_OT_bake, MOCHI_OT_bake_resume, MOCHI_OT_bake_confirm, MOCHI_OT_bake_cancel)
