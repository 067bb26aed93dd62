"""The bake's time, measured before Bake is pressed.

After Pack has shown its previews, a worker thread packs the whole scene as Bake will and times a few of
its steps (``engine.estimate.estimate_bake``: the figures Bake itself measures first, and refines while
it runs). The Bake panel shows them while the scene is as it was measured (the same fingerprint the
out-of-date check compares, and the same frame count); otherwise it shows the rough count-based time of
``addon.grain_budget``, saying that Pack measures it. Bake takes a finished measurement of the same scene
over (``measured_estimate``: Pack's sentence, the panel and Bake then show one estimate, which the running
bake refines), and stops one still running (they would share the CPU; Bake then measures itself). No bpy in the worker: it gets the snapshot
(``addon.snapshot.scene_blender_to_settings``) taken in the main thread.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

import bpy

from .settings import BakeSettings


@dataclass(eq=False)
class Measurement:
    """One measurement of a scene's bake time, in a worker thread.

    Attributes:
        inputs: The measured scene's fingerprint parts that the panel compares (``bake_state``'s).
        frames: Frames of the bake range when measured.
        estimate: The ``engine.estimate.BakeEstimate``, once measured.
        error: Why it could not be measured (one sentence), or None.
        finished: The worker has stopped; cancel_requested: its result is not wanted any more.
        below_window: Measure below the priority of Blender's window (``addon.worker_priority``).
    """

    inputs: dict
    frames: int
    estimate: object = None
    error: str | None = None
    finished: bool = False
    cancel_requested: bool = False
    below_window: bool = False
    thread: threading.Thread | None = field(default=None, repr=False)

    def run(self, settings: BakeSettings) -> None:
        from ..engine.errors import MochiError
        from ..engine.estimate import estimate_bake
        from .settings import setup_from_settings
        from .worker_priority import lower_worker_priority

        if self.below_window:  # the window first, as for a bake (addon/worker_priority.py)
            lower_worker_priority()
        try:
            setup = setup_from_settings(settings)
            if not self.cancel_requested:
                self.estimate = estimate_bake(setup, frames=settings.simulation.frame_count,
                                              backend=settings.simulation.backend)
        except MochiError as exc:
            self.error = str(exc)
        except Exception as exc:  # a bug: the panel falls back to the rough time and says why
            self.error = f"The bake time could not be measured ({type(exc).__name__}: {exc})."
        finally:
            self.finished = True


_current: Measurement | None = None


def compared_inputs(settings: BakeSettings) -> dict:
    """The parts of ``settings``' fingerprint that decide the bake's time, as the panel compares them."""
    from ..engine.digest import canonical
    from .bake_state import COMPARED_INPUTS

    now = canonical(settings.fingerprint())
    return {key: now[key] for key in COMPARED_INPUTS}


def start_measurement(context) -> Measurement | None:
    """Measure the scene's bake time in a worker thread (main thread; after Pack). None when the scene
    cannot bake as it is (no domain...: Bake will say why) or a bake is running."""
    from ..engine.errors import MochiError
    from .bake_job import current_job
    from .snapshot import scene_blender_to_settings

    global _current
    stop_measurement()
    if current_job() is not None:
        return None
    try:
        settings = scene_blender_to_settings(context, with_cache_folder=False)
    except MochiError:
        return None
    measurement = Measurement(inputs=compared_inputs(settings), frames=settings.simulation.frame_count,
                              below_window=not bpy.app.background)
    measurement.thread = threading.Thread(target=measurement.run, args=(settings,), name="mochi-estimate",
                                          daemon=True)
    _current = measurement
    measurement.thread.start()
    if not bpy.app.background:  # no window to redraw otherwise (and bpy 4.5 hangs at exit on a timer left)
        bpy.app.timers.register(_redraw_when_done(measurement), first_interval=0.5)
    return measurement


def measured_estimate(settings: BakeSettings):
    """The finished measurement of exactly this scene and frame count (``engine.estimate.BakeEstimate``),
    or None: Bake takes it over instead of measuring again, so that it shows the figure the panel showed."""
    measurement = _current
    if measurement is None or not measurement.finished or measurement.estimate is None:
        return None
    if measurement.frames != settings.simulation.frame_count or compared_inputs(settings) != measurement.inputs:
        return None
    return measurement.estimate


def stop_measurement() -> None:
    """Forget the measurement (Bake starts, the add-on is disabled); a running one finishes unseen."""
    global _current
    if _current is not None:
        _current.cancel_requested = True
    _current = None


_shown: tuple | None = None  # (key, Measurement or None): the panel's answer until the scene changes


def measurement_for(context) -> Measurement | None:
    """The measurement of the scene as it is now (running or done), or None: none made, or the scene
    changed since (its compared settings or its frame count)."""
    global _shown
    from ..engine.errors import MochiError
    from . import bake_state
    from .snapshot import scene_blender_to_settings

    measurement = _current
    if measurement is None:
        return None
    scene = context.scene
    key = (id(measurement), scene.name, bake_state._revision, scene.frame_current, scene.mochi.frame_count())
    if _shown is None or _shown[0] != key:
        try:
            now = scene_blender_to_settings(context, frame_count=1, with_colliders=False, with_cache_folder=False)
            same = compared_inputs(now) == measurement.inputs and scene.mochi.frame_count() == measurement.frames
        except MochiError:
            same = False
        _shown = (key, measurement if same else None)
    return _shown[1]


def _redraw_when_done(measurement: Measurement):
    """A main-thread timer: redraw the Properties editors once ``measurement`` is done (the worker itself
    must not touch bpy)."""
    def poll():
        if not measurement.finished:
            return 0.5
        if bpy.context.window_manager is not None:
            for window in bpy.context.window_manager.windows:
                for area in window.screen.areas:
                    if area.type == "PROPERTIES":
                        area.tag_redraw()
        return None

    return poll
