"""The bake worker thread and the one bake that may run at a time (no bpy in this module).

The main thread builds a ``BakeJob`` from a ``BakeSettings`` snapshot (or from nothing but the cache
folder when resuming) and starts it; the worker packs the sources, assembles the engine scene and runs
``engine.bake.bake``. The two threads share only the engine's ``BakeProgress``, a plain object the
main thread polls from a timer (see ``addon.bake_monitor``).

Esc reaches every phase of the worker within a fraction of a second: the packing through its
``engine.packing.PackProgress`` (between chunks of ~0.1 s), the measurement of the bake's cost through
``estimate_bake``'s ``should_stop`` (between chunks of 4 steps), the stepping through ``BakeProgress``.
"""

from __future__ import annotations

import re
import sys
import threading
import traceback
from dataclasses import dataclass, field
from pathlib import Path

from .settings import BakeSettings

_FRAME_NUMBER = re.compile(r"frame_(\d+)\.ply$")

#: The running bake, if any. A Blender session runs one bake at a time: two bakes would fight over
#: the CPU cores (or the GPU) and the status bar can show only one.
_current: "BakeJob | None" = None
_lock = threading.Lock()


@dataclass(eq=False)
class BakeJob:
    """One bake, run by a worker thread.

    Attributes:
        folder: Absolute cache folder.
        frames: Total number of cache frames wanted (frame 1 is the initial state).
        backend: Engine backend name.
        settings: Scene snapshot of a new bake, or None to resume the cache in ``folder``.
        resume_settings: A resume's scene snapshot as it is now: packed again, so that the engine
            refuses a manifest whose physics are not what the scene resolves to (a re-signed manifest
            could otherwise change the bake behind the scene's back); None resumes on the manifest's
            physics after their range check alone.
        info: Extra manifest entries.
        inputs: The scene's fingerprint (``BakeSettings.fingerprint``): stored with a new bake, checked
            by a resume against the stored one.
        confirm_above: A new bake first measures its cost (``engine.estimate``, shown as
            ``progress.estimate``); above this many seconds it waits for ``confirm`` (or a cancel).
            None: it never waits (scripts, the command line).
        progress: The engine's progress object, shared with the main thread.
        rt_device: Device kind for rt or auto, or None: the first with ray tracing.
        pack_progress: The packing of the sources (``engine.packing.PackProgress``) while it runs,
            else None.
        phase: What the worker does before its first step: 'packing', 'measuring', 'stepping'.
        measured: The estimate measured after Pack for this very scene (``addon.pre_bake_estimate``),
            taken over instead of measuring again, or None.
        below_window: Run below the priority of Blender's window (``addon.worker_priority``): a bake
            started from a window; not in a background Blender (a farm, a script), where nothing waits
            for the CPU and a lower priority would only yield it to other programs.
    """

    folder: Path
    frames: int
    backend: str
    settings: BakeSettings | None
    resume_settings: BakeSettings | None = None
    info: dict = field(default_factory=dict)
    inputs: dict | None = None
    confirm_above: float | None = None
    progress: object = None
    rt_device: str | None = None
    pack_progress: object = None
    phase: str = "packing"
    measured: object = None
    below_window: bool = False
    _go: threading.Event = field(default_factory=threading.Event, repr=False)
    thread: threading.Thread | None = field(default=None, repr=False)

    @property
    def resume(self) -> bool:
        return self.settings is None

    @property
    def running(self) -> bool:
        return self.thread is not None and self.thread.is_alive()

    def last_frame_written(self) -> int:
        """Number of the newest complete frame on disk, or 0."""
        path = getattr(self.progress, "last_frame_path", None)
        match = _FRAME_NUMBER.search(str(path)) if path else None
        return int(match.group(1)) if match else 0

    def request_cancel(self) -> None:
        """Stop the worker at its next chunk, whatever it does (any thread)."""
        self.progress.request_cancel()
        if self.pack_progress is not None:
            self.pack_progress.request_cancel()

    def _pack(self, settings: BakeSettings):
        """Pack the scene's sources into an engine scene (``engine.scene.SceneSetup``), cancellable, with
        progress; raises ``PackCancelled`` on Esc."""
        from ..engine.packing.progress import PackCancelled, PackProgress
        from .preload import wait_for_preload
        from .settings import setup_from_settings

        self.progress.message = "Packing the particle sources"
        if not wait_for_preload(lambda: self.progress.cancel_requested):  # the first start's kernels
            raise PackCancelled()
        self.pack_progress = PackProgress()
        if self.progress.cancel_requested:  # Esc before the packing began
            self.pack_progress.request_cancel()
        setup = setup_from_settings(settings, progress=self.pack_progress)
        self.pack_progress = None
        return setup

    def starting_line(self) -> str:
        """What the worker does before its first step, for the status bar: the packing's stage, the
        measurement, the first steps."""
        pack = self.pack_progress
        if self.phase == "packing" and pack is not None and (pack.stage or pack.chunks):
            return f"packing the sources: {pack.line()}"
        if self.phase == "measuring":
            return "timing a few steps (the first bake after an install also compiles, ~45 s)"
        return "starting (the first bake after an install compiles ~45 s)"

    def confirm(self) -> None:
        """Let a bake that waits for a confirmation go on."""
        self._go.set()

    def _estimate_and_wait(self, setup) -> bool:
        """Measure the bake's cost; when it is above ``confirm_above``, wait for ``confirm``.

        Returns:
            False when the bake was cancelled while it waited.
        """
        from ..engine.estimate import estimate_bake

        self.phase = "measuring"
        self.progress.message = "Timing a few steps (the first bake after an install also compiles, ~45 s)"
        estimate = self.measured
        if estimate is None or getattr(estimate, "frames", None) != self.frames - 1:
            estimate = estimate_bake(setup, frames=self.frames, backend=self.backend, rt_device=self.rt_device,
                                     should_stop=lambda: self.progress.cancel_requested)
        self.progress.estimate = estimate
        if self.confirm_above is None or estimate.bake_seconds <= self.confirm_above:
            return True
        self.progress.awaiting_confirmation = True
        try:
            while not self._go.wait(0.1):
                if self.progress.cancel_requested:
                    self.progress.cancelled = True
                    self.progress.message = "Cancelled before baking."
                    return False
        finally:
            self.progress.awaiting_confirmation = False
        return True

    def join(self, timeout: float | None = None) -> bool:
        """Wait for the worker; True once it has stopped."""
        if self.thread is not None:
            self.thread.join(timeout)
        return not self.running

    def _run(self) -> None:
        from ..engine.bake import bake
        from ..engine.errors import BakeCancelled, MochiError
        from ..engine.packing.progress import PackCancelled
        from .worker_priority import lower_worker_priority

        if self.below_window:  # the window first: its redraws must not queue behind the bake's threads
            lower_worker_priority()
        try:
            if self.resume:
                setup = None
                if self.resume_settings is not None:  # the physics the scene resolves to now
                    setup = self._pack(self.resume_settings)
                self.phase = "stepping"
                bake(setup, self.folder, frames=self.frames, backend=self.backend, resume=True,
                     progress=self.progress, info=self.info, inputs=self.inputs, rt_device=self.rt_device)
            else:
                setup = self._pack(self.settings)
                if not self._estimate_and_wait(setup):
                    return
                self.phase = "stepping"
                bake(setup, self.folder, frames=self.frames, backend=self.backend,
                     progress=self.progress, info=self.info, inputs=self.inputs, rt_device=self.rt_device)
        except (PackCancelled, BakeCancelled):  # Esc before the first step: nothing was written
            self.progress.cancelled = True
            self.progress.message = "Cancelled before baking."
        except MochiError as exc:
            self.progress.error = str(exc)
        except Exception as exc:  # a bug: keep the traceback on the console, tell the user one line
            traceback.print_exc(file=sys.stderr)
            self.progress.error = f"The bake failed with an internal error ({type(exc).__name__}: {exc})."
        finally:
            self.progress.finished = True


def current_job() -> BakeJob | None:
    """The bake that is running or whose end the main thread has not collected yet."""
    return _current


def start_job(folder: Path, *, frames: int, backend: str, settings: BakeSettings | None,
              resume_settings: BakeSettings | None = None, info: dict | None = None, inputs: dict | None = None, confirm_above: float | None = None,
              frames_on_disk: int = 0, rt_device: str | None = None, estimate=None,
              below_window: bool = False) -> BakeJob:
    """Start a bake in a worker thread.

    Args:
        resume_settings: A resume's scene as it is now (``BakeJob.resume_settings``).
        frames_on_disk: Complete frames the cache already holds (a resume): the progress starts there,
            so that nothing drawn before the worker has read the cache shows the bake back at frame 0.
        rt_device: Device kind for rt or auto, or None.
        estimate: The measurement of this scene made after Pack (``engine.estimate.BakeEstimate``), taken
            over instead of measuring again; None measures.
        below_window: Run the worker below the window's priority (``BakeJob.below_window``).

    Raises:
        MochiError: a bake is already running.
    """
    global _current
    from ..engine.bake import BakeProgress
    from ..engine.cache import frame_path
    from ..engine.errors import MochiError

    with _lock:
        if _current is not None:
            raise MochiError("A Mochi bake is already running; cancel it or wait for it to finish.")
        job = BakeJob(folder=Path(folder), frames=frames, backend=backend, settings=settings,
                      resume_settings=resume_settings, info=dict(info or {}), inputs=inputs, confirm_above=confirm_above, progress=BakeProgress(),
                      rt_device=rt_device, measured=estimate, below_window=below_window)
        job.progress.frames_total = frames
        if frames_on_disk > 0:
            job.progress.frames_done = frames_on_disk
            job.progress.last_frame_path = str(frame_path(folder, frames_on_disk))
        job.thread = threading.Thread(target=job._run, name="mochi-bake", daemon=True)
        _current = job
    job.thread.start()
    return job


def release_job(job: BakeJob) -> None:
    """Forget a finished job so that another bake may start."""
    global _current
    with _lock:
        if _current is job:
            _current = None


def stop_all(timeout: float = 30.0) -> None:
    """Cancel the running bake and wait for its worker (add-on disabled, file loaded, Blender quit)."""
    job = _current
    if job is None:
        return
    job.request_cancel()
    job.join(timeout)
    release_job(job)
