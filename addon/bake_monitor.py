"""Main-thread side of a bake: start it from the scene, follow its progress, end it.

The modal operator (timer ticks), ``execute()`` and the headless command line all go through
``BakeMonitor``, so a bake behaves the same from a button, a script and a shell.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import bpy

from ..engine.errors import MochiError
from . import bake_job, playback
from .settings import MANIFEST_INFO_KEYS
from .snapshot import (backend_name, cache_directory_setting, cache_folder, check_bake_owner, check_writable,
                       scene_blender_to_settings)


@dataclass
class BakeOutcome:
    """How a bake ended: a report level ('INFO', 'WARNING', 'ERROR') and one sentence."""

    level: str
    message: str
    frames_written: int
    cancelled: bool = False


class BakeMonitor:
    """Follows one bake job from Blender's main thread; never touched by the worker."""

    def __init__(self, scene: bpy.types.Scene, job: bake_job.BakeJob, *, start_frame: int,
                 frames_before: int = 0):
        self.scene_name = scene.name
        self.job = job
        self.start_frame = start_frame
        self.frames_before = frames_before  # complete frames when a resumed bake started
        self.frames_seen = 0
        self.notes: tuple[str, ...] = ()  # what the scene snapshot could not take over (addon.force_fields)

    @property
    def scene(self) -> bpy.types.Scene | None:
        return bpy.data.scenes.get(self.scene_name)

    def poll(self) -> bool:
        """Show new frames in the scene; True once the worker has stopped."""
        finished = bool(self.job.progress.finished) and not self.job.running
        frame = self.job.last_frame_written()
        scene = self.scene
        if frame > self.frames_seen and scene is not None and playback.playback_supported():
            obj = scene.mochi.playback_object
            if obj is None or obj.name not in scene.objects:
                playback.ensure_playback_object(scene, cache_directory_setting(scene),
                                                start_frame=self.start_frame, last_frame=frame)
            else:
                playback.set_last_frame(obj, frame)
            self.frames_seen = frame
        return finished

    def status_text(self, frame: int | None = None) -> str:
        """One line for the status bar and the console, about ``frame`` (default: the newest)."""
        p = self.job.progress
        frame = self.job.last_frame_written() if frame is None else frame
        return f"Mochi: frame {frame} of {p.frames_total} written"

    def finish(self) -> BakeOutcome:
        """Collect the end of the bake (call once ``poll`` returned True) and free the slot."""
        self.poll()
        bake_job.release_job(self.job)
        p = self.job.progress
        frames = self.job.last_frame_written()
        if p.error:
            return BakeOutcome("ERROR", p.error, frames)
        if p.cancelled:
            said = ("Bake cancelled before its first frame: nothing baked yet." if frames < 1 else
                    f"Bake cancelled after {frames} frame{'s' if frames != 1 else ''}; Resume goes on from there.")
            return BakeOutcome("WARNING", said, frames, cancelled=True)
        if not playback.playback_supported():
            return BakeOutcome("WARNING", f"Baked {frames} frames to '{self.job.folder}'; playing them back "
                               "needs Blender 4.5 or newer.", frames)
        if p.notes:  # the physics' own warnings (an overlap above 10%...): shown, never silent
            return BakeOutcome("WARNING", f"Baked {frames} frames to '{self.job.folder}'. Note: {' '.join(p.notes)}",
                               frames)
        return BakeOutcome("INFO", f"Baked {frames} frames to '{self.job.folder}'.", frames)


def bake_timing_info(manifest: dict | None, total: int) -> dict:
    """Manifest entries for the bake panel's summary: the frames asked for, and when the bake started
    (for a resume, moved later by the pause, so that the manifest's last update minus it is the time
    spent baking)."""
    from .bake_state import manifest_seconds

    started = time.time()
    if manifest is not None:
        started -= manifest_seconds(manifest) or 0.0
    return {"frames_total": int(total), "bake_started": started}


def start_bake(context, *, resume: bool, frames: int | None = None, backend: str | None = None,
               confirm_above: float | None = None, rt_device: str | None = None) -> BakeMonitor:
    """Snapshot the scene, check it, and start the worker; changes nothing on failure.

    Args:
        resume: Continue the cache in the scene's cache folder instead of starting over.
        frames: Total cache frames, default the scene's frame range.
        backend: Backend name overriding the scene setting.
        rt_device: Device kind for rt or auto ('vulkan', 'd3d12', 'metal', 'cuda'), or None: the first
            with ray tracing (a resume: the one its bake began on).
        confirm_above: Seconds above which a new bake's measured estimate waits for a confirmation
            (the Bake button's preference), or None.

    Raises:
        MochiError: a bake is running, the scene is incomplete, the cache folder is unusable, or
            there is already a bake (when not resuming) or none (when resuming).
    """
    from ..engine.cache import read_manifest

    if bake_job.current_job() is not None:
        raise MochiError("A Mochi bake is already running; cancel it or wait for it to finish.")
    from .pre_bake_estimate import measured_estimate, stop_measurement

    scene = context.scene
    total = frames if frames is not None else scene.mochi.frame_count()
    measured = None
    try:
        if not resume:
            # The scene's own problems first (no source, no domain...), then the folder's: in the order a
            # user fixes them, rather than "save the file first" for a scene that could not bake anyway.
            settings = scene_blender_to_settings(context, frame_count=total)
            measured = measured_estimate(settings)  # the panel's figure, for exactly this scene
    finally:
        stop_measurement()  # one still running would share the CPU with the bake, which measures itself
    folder = cache_folder(scene)
    check_writable(folder)
    manifest = read_manifest(folder) if folder.is_dir() else None
    check_bake_owner(folder, manifest)
    completed = int(manifest.get("frames_completed", 0)) if manifest else 0
    if resume:
        if completed < 1:
            raise MochiError(f"There is no bake to resume in '{folder}'.")
        if completed >= total:
            raise MochiError(f"The bake in '{folder}' already has {completed} of {total} frames; "
                             "raise the end frame to bake more.")
        settings = None
        info = {key: manifest[key] for key in MANIFEST_INFO_KEYS if key in manifest}
        rt_device = rt_device or manifest.get("rt_device_requested")
        # The scene as it is now, so the engine can refuse a resume of a scene that changed since, and
        # of a manifest whose physics are not what this scene resolves to.
        resume_settings = scene_blender_to_settings(context, frame_count=total)
        inputs = resume_settings.fingerprint()
    else:
        resume_settings = None
        if completed > 0:
            raise MochiError(f"'{folder}' already holds a bake of {completed} frames; free it or resume it.")
        info = settings.manifest_info()
        inputs = settings.fingerprint()
    info.update(bake_timing_info(manifest if resume else None, total))
    job = bake_job.start_job(folder, frames=total, backend=backend_name(scene, backend), settings=settings,
                             resume_settings=resume_settings, info=info, inputs=inputs, confirm_above=confirm_above,
                             frames_on_disk=completed if resume else 0, rt_device=rt_device, estimate=measured,
                             below_window=not bpy.app.background)
    start = scene.mochi.frame_start
    if resume and manifest.get("frame_start_scene") is not None:
        start = int(manifest["frame_start_scene"])
    monitor = BakeMonitor(scene, job, start_frame=start, frames_before=completed if resume else 0)
    monitor.notes = settings.notes if settings is not None else ()
    return monitor


def run_blocking(monitor: BakeMonitor, *, tick: float = 0.1, log=None) -> BakeOutcome:
    """Follow a bake until it ends, from the main thread without an event loop (scripts, headless).

    Args:
        log: Called with one line per frame written, or None for silence.
    """
    last_logged = monitor.frames_before
    try:
        while True:
            done = monitor.poll()
            frame = monitor.job.last_frame_written()
            if log is not None:
                for written in range(last_logged + 1, frame + 1):  # one line per frame, even fast ones
                    log(monitor.status_text(written))
                last_logged = max(last_logged, frame)
            if done:
                break
            time.sleep(tick)
    except KeyboardInterrupt:
        monitor.job.request_cancel()
        monitor.job.join()
    return monitor.finish()
