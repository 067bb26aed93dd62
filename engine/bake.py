"""The bake protocol shared by the CLI, the Blender button and headless Blender.

``bake`` runs in the calling thread (the add-on calls it from a worker thread) and reports through a
``BakeProgress``: a plain object the UI polls, and the only thing the two threads share. A cancel
request is honoured between chunks of steps; the frame in progress is then dropped, so the cache keeps
only complete frames and ``resume`` carries on from the last one, bit-identical to an uninterrupted bake.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from . import __version__
from .backends import make_backend
from .backends.base import StepTimings
from .cache import HISTORY_FOLDER, MANIFEST_NAME, CacheWriter, frame_path, load_resume, read_history, read_manifest
from .errors import BakeCancelled, MochiError
from .scene import SceneSetup

#: Steps between two looks at the cancel flag.
CANCEL_CHECK_STEPS = 64


@dataclass
class BakeProgress:
    """What a running bake tells its observers. Written by the bake thread, read by anyone.

    Attributes:
        frames_total: Last frame the bake will write.
        frames_done: Last complete frame on disk (0 before frame 1 is written).
        message: One line for a status bar.
        error: The failure's sentence, or None.
        finished: True once the bake has stopped, for whatever reason.
        cancelled: True when it stopped because of ``request_cancel``.
        last_frame_path: Path of the newest complete frame.
        backend_name: Backend actually used.
        particle_count: Particles in the bake.
        timings: Accumulated build/detect/update times.
    """

    frames_total: int = 0
    frames_done: int = 0
    message: str = ""
    error: str | None = None
    finished: bool = False
    cancelled: bool = False
    last_frame_path: str = ""
    backend_name: str = ""
    particle_count: int = 0
    timings: StepTimings = field(default_factory=StepTimings)
    _cancel: threading.Event = field(default_factory=threading.Event, repr=False)

    def request_cancel(self) -> None:
        """Ask the bake to stop after its current chunk of steps."""
        self._cancel.set()

    @property
    def cancel_requested(self) -> bool:
        return self._cancel.is_set()

    @property
    def fraction(self) -> float:
        return self.frames_done / self.frames_total if self.frames_total else 0.0


def _remove_stale_temporaries(folder: Path) -> None:
    """Delete half-written files a killed bake left behind (they never replaced a complete one)."""
    for path in [*folder.glob(".*.tmp-*"), *folder.glob(f"{HISTORY_FOLDER}/.*.tmp-*")]:
        path.unlink(missing_ok=True)


def _clear_cache(folder: Path) -> None:
    """Remove a previous bake's frames and manifest (only Mochi's own files)."""
    for path in folder.glob("frame_*.ply"):
        path.unlink()
    (folder / MANIFEST_NAME).unlink(missing_ok=True)
    for path in (folder / HISTORY_FOLDER).glob("*.npz"):
        path.unlink()


def writer_fields() -> tuple[str, ...]:
    """Manifest keys the cache writer owns (recomputed on every write)."""
    return ("format", "format_version", "engine_version", "fps", "dt", "steps_per_frame", "particle_count",
            "attributes", "frame_pattern", "frame_start", "frames_completed", "updated", "physics")


def _empty_history(model) -> dict:
    return {"pair_i": np.zeros(0, np.int32), "pair_j": np.zeros(0, np.int32),
            "pair_spring": np.zeros((0, 3)), "wall_spring": np.zeros((model.particle_count, 6, 3))}


def bake(setup: SceneSetup | None, out_dir, *, frames: int, backend: str = "cpu", resume: bool = False,
         overwrite: bool = False, progress: BakeProgress | None = None, info: dict | None = None,
         log: Callable[[str], None] | None = None, on_frame: Callable[[BakeProgress], None] | None = None) -> BakeProgress:
    """Bake frames 1..``frames`` of ``setup`` into the cache folder ``out_dir``.

    Args:
        setup: The scene; may be None with ``resume`` (everything then comes from the cache).
        out_dir: Cache folder.
        frames: Last frame to write (frame 1 is the initial state).
        backend: 'cpu', 'cuda', 'optix' or 'auto'.
        resume: Continue an existing cache from its last complete frame.
        overwrite: Replace an existing cache instead of refusing.
        progress: Progress object to update (one is made if None).
        info: Extra manifest entries (preset path, scene name...).
        log: Where one-line messages go (default: nowhere).
        on_frame: Called after every written frame (the CLI's progress bar).

    Returns:
        The progress object, finished.

    Raises:
        MochiError: bad input, an existing cache without resume/overwrite, a diverged simulation
            (frames already written stay). Also stored in ``progress.error``.
    """
    progress = progress or BakeProgress()
    log = log or (lambda message: None)
    try:
        _bake(setup, Path(out_dir), frames, backend, resume, overwrite, progress, dict(info or {}), log, on_frame)
    except BakeCancelled:
        progress.cancelled = True
        progress.message = f"Cancelled; frames 1–{progress.frames_done} are complete."
    except MochiError as exc:
        progress.error = str(exc)
        progress.message = str(exc)
        raise
    finally:
        progress.finished = True
    return progress


def _bake(setup, folder: Path, frames: int, backend_name: str, resume: bool, overwrite: bool,
          progress: BakeProgress, info: dict, log, on_frame) -> None:
    if frames < 1:
        raise MochiError(f"The number of frames must be at least 1, not {frames}.")
    existing = read_manifest(folder) if folder.is_dir() else None
    if folder.is_dir():
        _remove_stale_temporaries(folder)
    done = existing.get("frames_completed", 0) if existing else 0
    if resume and done >= 1:
        model, state, manifest = load_resume(folder)
        # Keep what the bake's author recorded (scene, preset, add-on entries); engine fields are rewritten.
        engine_keys = set(writer_fields()) | {"physics", "backend", "engine_version", "colliders"}
        info = {k: v for k, v in manifest.items() if k not in engine_keys} | info
        start = done
        log(f"Resuming '{folder}' after frame {done}.")
    else:
        if setup is None:
            raise MochiError(f"There is no bake to resume in '{folder}'.")
        if done >= 1 and not overwrite:
            raise MochiError(f"'{folder}' already holds a bake of {done} frames; resume it or choose "
                             "overwrite to replace it.")
        if existing is None and not overwrite and any(folder.glob("frame_*.ply")):
            raise MochiError(f"'{folder}' holds frame files that are not from a Mochi bake; choose another "
                             "folder or overwrite.")
        model, state, start = setup.model, setup.state, 0
        info.setdefault("scene", setup.name)
    info["backend_requested"] = backend_name
    runner = make_backend(backend_name, model, log=log)
    info["backend"] = runner.name
    info["engine_version"] = __version__
    info["colliders"] = model.colliders is not None
    writer = CacheWriter(folder, model, info)
    if start == 0:
        if folder.is_dir():
            _clear_cache(folder)
        if model.colliders is not None:
            model.colliders.save(folder)  # geometry and motion, so a resume needs only the cache
        writer.write_frame(1, state, _empty_history(model) if model.physics.friction_model == "spring" else None)
        start = 1
    progress.frames_total = frames
    progress.frames_done = start
    progress.backend_name = runner.describe()
    progress.particle_count = model.particle_count
    progress.last_frame_path = str(frame_path(folder, start))
    if on_frame:
        on_frame(progress)
    runner.set_state(state)
    history = read_history(folder, start) if resume else None
    if history is not None and hasattr(runner, "set_contact_history"):
        runner.set_contact_history(history)
    steps_per_frame = model.physics.steps_per_frame
    for frame in range(start + 1, frames + 1):
        began = time.perf_counter()
        if hasattr(runner, "begin_frame"):
            runner.begin_frame()
        remaining = steps_per_frame
        while remaining > 0:
            if progress.cancel_requested:
                raise BakeCancelled()
            chunk = min(remaining, CANCEL_CHECK_STEPS)
            progress.timings.add(runner.step(chunk))
            remaining -= chunk
        state = runner.get_state()
        history = runner.get_contact_history() if hasattr(runner, "get_contact_history") else None
        path = writer.write_frame(frame, state, history)
        progress.frames_done = frame
        progress.last_frame_path = str(path)
        progress.message = (f"Frame {frame}/{frames} ({model.particle_count:,} particles, "
                            f"{time.perf_counter() - began:.2f} s)")
        if on_frame:
            on_frame(progress)
    progress.message = f"Baked frames 1–{frames} into '{folder}'."
