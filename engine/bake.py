"""The bake protocol shared by the CLI, the Blender button and headless Blender.

``bake`` runs in the calling thread (the add-on calls it from a worker thread) and reports through a
``BakeProgress``: a plain object the UI polls, and the only thing the two threads share. A cancel
request is honoured between chunks of steps; the frame in progress is then dropped, so the cache keeps
only complete frames and ``resume`` carries on from the last one, bit-identical to an uninterrupted bake.
"""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from . import __version__, _source_digest
from .backends import make_backend
from .backends.base import StepTimings
from .budget import DEFAULT_MAX_STEPS_PER_FRAME, check_memory, check_steps_per_frame
from .cache import (HISTORY_FOLDER, MANIFEST_NAME, CacheWriter, ensure_cache_folder, frame_path, load_resume, read_history,
                    read_manifest)
from .cache_files import (check_no_foreign, real_folder, remove_files, remove_leftovers, remove_owned_files,
                          survey_folder)
from .cache_integrity import MANIFEST_DIGEST_KEY, check_manifest_digest, check_same_physics, physics_from_manifest
from .cache_lock import CacheLock
from .cancel import CancelFlag
from .colliders.storage import FOLDER as COLLIDERS_FOLDER
from .colliders.storage import encode_colliders
from .contact_history import ContactHistory
from .contact_law import largest_youngs_modulus
from .digest import canonical, changes, digest, files_read_once
from .errors import BakeCancelled, MochiError
from .scene import SceneSetup

#: Steps between two looks at the cancel flag, at the most.
CANCEL_CHECK_STEPS = 64
#: Seconds of stepping between two looks at the cancel flag, at the most (as far as the last chunk's
#: time per step tells): a slow step (a 70,000-grain bake on two busy cores takes ~0.2 s a step) would
#: otherwise keep Esc waiting 64 steps, over ten seconds.
CANCEL_CHECK_SECONDS = 0.1


@dataclass
class BakeProgress(CancelFlag):
    """What a running bake tells its observers. Written by the bake thread, read by anyone; its cancel
    flag (``request_cancel``) is looked at between chunks of steps.

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
        notes: Remarks on the scene's physics (``SceneSetup.notes``: an overlap above 10%...).
        steps_per_frame: Steps between two frames.
        steps_into_frame: Steps done towards the frame after ``frames_done``.
        stepping_seconds: Wall-clock time spent stepping so far [s], for the remaining-time estimate.
        estimate: The ``engine.estimate.BakeEstimate`` measured before the bake, when one was.
        awaiting_confirmation: The bake waits for a person to confirm it (its estimate is long).
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
    notes: tuple[str, ...] = ()
    steps_per_frame: int = 0
    steps_into_frame: int = 0
    stepping_seconds: float = 0.0
    estimate: object = None
    awaiting_confirmation: bool = False

    @property
    def frames_exact(self) -> float:
        """Frames done, counting the steps into the next one (the progress bar moves every chunk)."""
        within = self.steps_into_frame / self.steps_per_frame if self.steps_per_frame else 0.0
        return self.frames_done + within

    @property
    def fraction(self) -> float:
        return self.frames_exact / self.frames_total if self.frames_total else 0.0

    @property
    def remaining_seconds(self) -> float | None:
        """Estimated time to the last frame [s], or None before any step.

        With the estimate measured before a new bake (``estimate``, for these frames), the frames to
        come keep their predicted cost profile (a pour gets dearer as it piles) scaled by how the frames
        done compared with their prediction (``BakeEstimate.remaining_seconds``); without one, the mean
        cost of the steps so far times the steps left.
        """
        steps = self.timings.steps
        if steps == 0 or not self.steps_per_frame:
            return None
        # ``BakeEstimate.frames`` counts the frames stepped after frame 1 (the initial state).
        if self.estimate is not None and getattr(self.estimate, "frames", None) == self.frames_total - 1 \
                and self.frames_done >= 1:
            return self.estimate.remaining_seconds(self.frames_exact - 1, self.stepping_seconds)
        left = (self.frames_total - self.frames_done) * self.steps_per_frame - self.steps_into_frame
        return max(left, 0) * self.stepping_seconds / steps


def writer_fields() -> tuple[str, ...]:
    """Manifest keys the cache writer owns (recomputed on every write)."""
    return ("format", "format_version", "engine_version", "fps", "dt", "steps_per_frame", "particle_count",
            "attributes", "frame_pattern", "frame_start", "frames_completed", "updated", "physics",
            "physics_digest", "resume_history", "file_digests", "pending", "temporary_token", MANIFEST_DIGEST_KEY)


def _empty_history(model) -> dict:
    return {"pair_i": np.zeros(0, np.int32), "pair_j": np.zeros(0, np.int32),
            "pair_spring": np.zeros((0, 3)), "wall_spring": np.zeros((model.particle_count, 6, 3))}


def bake(setup: SceneSetup | None, out_dir, *, frames: int, backend: str = "cpu", resume: bool = False,
         overwrite: bool = False, progress: BakeProgress | None = None, info: dict | None = None,
         inputs: dict | None = None, max_steps_per_frame: int | None = DEFAULT_MAX_STEPS_PER_FRAME,
         log: Callable[[str], None] | None = None, on_frame: Callable[[BakeProgress], None] | None = None,
         on_step: Callable[[BakeProgress], None] | None = None, rt_device: str | None = None) -> BakeProgress:
    """Bake frames 1..``frames`` of ``setup`` into the cache folder ``out_dir``.

    The folder is locked for the whole bake (``engine.cache_lock``). A resume continues exactly or is
    refused: the manifest records digests of the engine, the resolved physics and the inputs, and the
    frames and contact history are checked before anything is stepped. Only files the folder's manifest
    proves are replaced or removed (``engine.cache_files``); a folder holding anything else is refused.

    Args:
        setup: The scene. With ``resume`` it may be None (everything then comes from the cache); given,
            the physics it resolves to must be the bake's (a re-signed manifest cannot change them).
        out_dir: Cache folder (a symbolic link is followed: the folder it names is used); created if
            missing, and removed again if the bake fails before frame 1.
        frames: Last frame to write (frame 1 is the initial state).
        backend: 'cpu', 'cuda', 'optix', 'rt' or 'auto'.
        resume: Continue an existing cache from its last complete frame.
        overwrite: Replace an existing cache instead of refusing.
        progress: Progress object to update (one is made if None).
        info: Extra manifest entries (preset path, scene name...).
        inputs: What the scene was made from (a preset and its options, a Blender snapshot), as values
            ``engine.digest.canonical`` accepts. Stored with a new bake; a resume given inputs that
            differ from the stored ones is refused, naming the settings that changed.
        max_steps_per_frame: Refuse a new bake needing more steps per frame (None: no budget).
        log: Where one-line messages go (default: nowhere).
        on_frame: Called after every written frame (the CLI's progress bar).
        on_step: Called after every chunk of ``CANCEL_CHECK_STEPS`` steps, so a progress bar moves
            within long frames.
        rt_device: Device kind for rt or auto ('vulkan', 'd3d12', 'metal', 'cuda'; None: the first with
            ray tracing), recorded in the manifest as ``rt_device_requested``.

    Returns:
        The progress object, finished.

    Raises:
        MochiError: bad input, a locked folder, an existing cache without resume/overwrite, a resume
            that would not continue the same bake, a diverged simulation (frames already written
            stay). Also stored in ``progress.error``.
    """
    progress = progress or BakeProgress()
    log = log or (lambda message: None)
    info = dict(info or {})
    if rt_device is not None:
        info["rt_device_requested"] = rt_device  # read by _make_runner, and kept for a resume
    try:
        with files_read_once():
            _bake(setup, real_folder(out_dir), frames, backend, resume, overwrite, progress, info, inputs,
                  max_steps_per_frame, log, on_frame, on_step)
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


#: The most frames one bake may have (Blender's last frame is 1,048,574).
MAX_FRAMES = 1_048_574


def check_bake_folder(folder, *, overwrite: bool = False, resume: bool = False) -> dict | None:
    """The manifest of an existing cache folder (None: no folder or no manifest), after refusing a
    folder that is not a folder, a manifest that fails its own digest, a folder that holds anything
    Mochi cannot prove is the bake's (``engine.cache_files``), a bake this request would replace without
    ``overwrite``, and (``resume``) a folder with no bake to resume or physics out of range. Looks only:
    no lock, no file is created, so callers run it before any packing or estimate, and ``bake`` runs it
    again under the lock.

    Raises:
        MochiError: naming the foreign entry, the existing bake, or a damaged manifest.
    """
    with files_read_once():
        folder = real_folder(folder)
        if resume:
            _check_resumable(folder)
        return _check_folder(folder, overwrite, resume)


def _check_resumable(folder: Path) -> None:
    """Refuse a resume of a folder with no bake in it (looked at before the lock, which needs the folder)."""
    if not folder.is_dir():
        raise MochiError(f"There is no bake to resume in '{folder}': the folder does not exist.")
    if not os.path.lexists(folder / MANIFEST_NAME):  # anything else there: read_manifest says what it is
        what = "frame files but no manifest.json" if any(folder.glob("frame_*.ply")) else "no manifest.json"
        raise MochiError(f"There is no bake to resume in '{folder}': it holds {what}.")


def _check_folder(folder: Path, overwrite: bool, resume: bool) -> dict | None:
    if not folder.exists():
        return None
    if not folder.is_dir():
        raise MochiError(f"The cache folder '{folder}' is a file, not a folder.")
    existing = read_manifest(folder)
    if existing is not None:
        # Before anything it lists is trusted (a removal, a resume): an edit is named as such, first.
        check_manifest_digest(existing, folder / MANIFEST_NAME)
        if resume:
            physics_from_manifest(existing, folder / MANIFEST_NAME)  # in range, as a preset's must be
    check_no_foreign(folder, existing, action="resume" if resume else "bake")
    done = existing["frames_completed"] if existing else 0
    if not resume and done >= 1 and not overwrite:
        raise MochiError(f"'{folder}' already holds a bake of {done} frames; resume it or choose "
                         "overwrite to replace it.")
    return existing


def _check_request(setup, folder: Path, frames: int, resume: bool, overwrite: bool,
                   max_steps_per_frame: int | None) -> None:
    """Refusals that need nothing but the arguments and a look at the folder (before any folder, lock
    or file is created)."""
    if isinstance(frames, bool) or not isinstance(frames, int) or not 1 <= frames <= MAX_FRAMES:
        raise MochiError(f"The number of frames must be an integer from 1 to {MAX_FRAMES:,}, not {frames!r}.")
    if resume and overwrite:
        raise MochiError("Resume and overwrite exclude each other: resume continues the bake in the folder, "
                         "overwrite replaces it.")
    if resume:
        _check_resumable(folder)  # before the lock, which would leave a folder
        _check_folder(folder, overwrite, resume)
        return
    if setup is None:
        raise MochiError(f"There is no scene to bake into '{folder}'.")
    _check_folder(folder, overwrite, resume)
    physics = setup.model.physics
    check_steps_per_frame(physics.steps_per_frame, physics.dt, physics.stiffness, limit=max_steps_per_frame,
                          hertz_youngs=largest_youngs_modulus(physics))
    check_memory(setup.model.particle_count)


def _remove_failed_start(folder: Path, lock: CacheLock) -> None:
    """Remove a folder this bake created when it failed before writing frame 1 (only Mochi's files).

    The bake's files go while the lock is held; the folder goes after, and only if nothing else
    arrived meanwhile (rmdir of a folder that is not empty fails).
    """
    try:
        manifest = read_manifest(folder)
        if manifest is not None:
            check_manifest_digest(manifest, folder / MANIFEST_NAME)
            remove_owned_files(folder, manifest)  # what this bake's manifest proves, nothing else
    except MochiError:
        pass  # the bake's own error is the one to report; what could not go stays
    lock.release()
    try:
        folder.rmdir()
    except OSError:
        pass  # something else was put there meanwhile: leave it


def _bake(setup, folder: Path, frames: int, backend_name: str, resume: bool, overwrite: bool,
          progress: BakeProgress, info: dict, inputs: dict | None, max_steps_per_frame: int | None, log,
          on_frame, on_step) -> None:
    _check_request(setup, folder, frames, resume, overwrite, max_steps_per_frame)
    created = not folder.exists()
    ensure_cache_folder(folder)
    lock = CacheLock(folder, action="resume" if resume else "bake")
    # Refused: another process owns the folder and everything in it, even if this one created it first.
    try:
        lock.acquire()
    except BaseException:
        if created:
            with contextlib.suppress(OSError):
                folder.rmdir()  # a refused command leaves nothing behind
        raise
    written = False
    try:
        # Looked at again under the lock: the folder may have changed since _check_request.
        existing = _check_folder(folder, overwrite, resume)
        if resume:
            if existing is not None:
                remove_leftovers(folder, existing)  # what a killed bake left, proven by its manifest
            run = _prepare_resume(setup, folder, frames, backend_name, inputs, info, log, max_steps_per_frame)
        else:
            run = _prepare_new(setup, folder, existing, backend_name, inputs, info, log, progress)
        written = True
        _run_frames(run, folder, frames, progress, on_frame, on_step)
    except BaseException:
        if created and not written:
            _remove_failed_start(folder, lock)
        raise
    finally:
        lock.release()


@dataclass
class _Run:
    """A bake ready to step: its backend, writer, state, contact history and first frame on disk."""

    model: object
    runner: object
    writer: CacheWriter
    state: object
    history: dict | None
    start: int


def _prepare_new(setup: SceneSetup, folder: Path, existing: dict | None, backend_name: str, inputs: dict | None,
                 info: dict, log, progress: BakeProgress) -> _Run:
    model = setup.model
    info.setdefault("scene", setup.name)
    progress.notes = tuple(setup.notes)
    runner = _make_runner(model, backend_name, info, log)
    _record_inputs(info, inputs)
    writer = CacheWriter(folder, model, info)
    if existing is not None:
        remove_owned_files(folder, existing)  # all or nothing: the old bake stays whole if it cannot go
    if model.colliders is not None:  # geometry and motion, so a resume needs only the cache
        writer.add_files({f"{COLLIDERS_FOLDER}/{name}": data
                          for name, data in encode_colliders(model.colliders.colliders).items()})
    writer.write_frame(1, setup.state, _empty_history(model) if model.physics.friction_model == "spring" else None)
    return _Run(model, runner, writer, setup.state, None, 1)


def _prepare_resume(setup: SceneSetup | None, folder: Path, frames: int, backend_name: str, inputs: dict | None,
                    info: dict, log, max_steps_per_frame: int | None) -> _Run:
    existing = read_manifest(folder)
    if existing is None:  # removed since _check_request looked
        raise MochiError(f"There is no bake to resume in '{folder}': it holds no manifest.json.")
    check_manifest_digest(existing, folder / MANIFEST_NAME)
    recorded = physics_from_manifest(existing, folder / MANIFEST_NAME)  # every value in range before any is used
    done = existing["frames_completed"]
    if done < 1:
        raise MochiError(f"There is no bake to resume in '{folder}': its manifest lists no complete frame.")
    # The budgets of a new bake hold for a resume: a manifest (edited or not) cannot ask for more.
    stiffness = existing["physics"].get("stiffness") if isinstance(existing["physics"], dict) else None
    check_steps_per_frame(existing["steps_per_frame"], existing["dt"],
                          stiffness if isinstance(stiffness, (int, float)) else float("nan"), limit=max_steps_per_frame,
                          hertz_youngs=largest_youngs_modulus(recorded))
    check_memory(existing["particle_count"])
    if existing.get("engine_digest") not in (None, _source_digest()):
        raise MochiError(f"The bake in '{folder}' was made by another version of the engine, so it cannot "
                         "continue exactly; bake it again with overwrite.")
    if inputs is not None and existing.get("inputs_digest") is not None \
            and existing["inputs_digest"] != digest(inputs):
        raise MochiError(f"The scene changed since the bake in '{folder}' was made "
                         f"({changes(existing.get('inputs'), inputs)}); undo the change to resume, or bake "
                         "again with overwrite.")
    if setup is not None:
        check_same_physics(existing, setup.model.physics, folder / MANIFEST_NAME)
    model, state, manifest = load_resume(folder)
    history = read_history(folder, done, model.particle_count)
    if history is None and manifest.get("resume_history"):
        raise MochiError(f"The contact history of frame {done} is missing from '{folder / HISTORY_FOLDER}', so "
                         "the bake cannot continue exactly; bake again with overwrite.")
    # Keep what the bake's author recorded (scene, preset, add-on entries); engine fields are rewritten.
    engine_keys = set(writer_fields()) | {"backend", "engine_version", "colliders", "engine_digest"}
    info = {k: v for k, v in manifest.items() if k not in engine_keys} | info
    runner = _make_runner(model, backend_name, info, log)
    if manifest.get("backend") not in (None, runner.name):
        raise MochiError(f"The bake in '{folder}' was made with the {manifest['backend']} backend; resume it "
                         f"with that backend (not {runner.name}) so it continues exactly.")
    if frames <= done:
        log(f"'{folder}' already holds frames 1–{done}; nothing to bake.")
    else:
        log(f"Resuming '{folder}' after frame {done}.")
        if not getattr(runner, "deterministic", True):
            log(f"The {runner.name} backend is not deterministic: the resumed frames agree with an "
                "uninterrupted bake to float32 rounding, not bit for bit.")
    # The frames, colliders and contact history carry their digests over; the temporaries the manifest
    # on disk announced name the writer's first manifest write.
    writer = CacheWriter(folder, model, info, file_digests=dict(manifest.get("file_digests", {})),
                         announced=manifest.get("temporary_token"), resume_history=bool(manifest.get("resume_history")))
    return _Run(model, runner, writer, state, history, done)


def _make_runner(model, backend_name: str, info: dict, log):
    info["backend_requested"] = backend_name
    runner = make_backend(backend_name, model, log=log, rt_device=info.get("rt_device_requested"))
    info["backend"] = runner.name
    info["engine_version"] = __version__
    info["engine_digest"] = _source_digest()
    info["colliders"] = model.colliders is not None
    return runner


def _record_inputs(info: dict, inputs: dict | None) -> None:
    if inputs is not None:
        info["inputs"] = canonical(inputs)
        info["inputs_digest"] = digest(inputs)


def _run_frames(run: _Run, folder: Path, frames: int, progress: BakeProgress, on_frame, on_step) -> None:
    model, runner = run.model, run.runner
    progress.frames_total = frames
    progress.frames_done = run.start
    progress.backend_name = runner.describe()
    progress.particle_count = model.particle_count
    progress.last_frame_path = str(frame_path(folder, run.start))
    progress.steps_per_frame = model.physics.steps_per_frame
    if on_frame:
        on_frame(progress)
    runner.set_state(run.state)
    if run.history is not None:
        runner.set_contact_history(ContactHistory.from_arrays(run.history))
    steps_per_frame = model.physics.steps_per_frame
    chunk_steps = 1  # the first step's time sizes the chunks
    for frame in range(run.start + 1, frames + 1):
        began = time.perf_counter()
        runner.begin_frame()
        remaining = steps_per_frame
        while remaining > 0:
            if progress.cancel_requested:
                raise BakeCancelled()
            chunk = min(remaining, chunk_steps)
            chunk_began = time.perf_counter()
            progress.timings.add(runner.step(chunk))
            chunk_seconds = time.perf_counter() - chunk_began
            progress.stepping_seconds += chunk_seconds
            chunk_steps = cancel_check_steps(chunk_seconds / chunk)
            remaining -= chunk
            progress.steps_into_frame = steps_per_frame - remaining
            if on_step:
                on_step(progress)
        state = runner.get_state()
        history = runner.get_contact_history()
        path = run.writer.write_frame(frame, state, history)
        progress.frames_done = frame
        progress.steps_into_frame = 0
        progress.last_frame_path = str(path)
        progress.message = (f"Frame {frame}/{frames} ({model.particle_count:,} particles, "
                            f"{time.perf_counter() - began:.2f} s)")
        if on_frame:
            on_frame(progress)
    progress.message = f"Baked frames 1–{max(frames, run.start)} into '{folder}'."


def cancel_check_steps(seconds_per_step: float) -> int:
    """Steps to run before the next look at the cancel flag: about ``CANCEL_CHECK_SECONDS`` of work at
    ``seconds_per_step`` [s], at least 1 and at most ``CANCEL_CHECK_STEPS``. The chunking never changes
    the bits: a backend's ``step(n)`` is n single steps."""
    if not seconds_per_step > 0:
        return CANCEL_CHECK_STEPS
    return max(1, min(CANCEL_CHECK_STEPS, int(CANCEL_CHECK_SECONDS / seconds_per_step)))


@dataclass(frozen=True)
class FreedBake:
    """What ``free_bake`` did.

    Attributes:
        frames: Frames the deleted bake held.
        kept: Entries of the folder that stay because Mochi cannot prove it wrote them (relative names).
    """

    frames: int
    kept: tuple[str, ...]


def free_bake(out_dir) -> FreedBake:
    """Delete the bake in ``out_dir`` under its lock: every file its manifest proves (the manifest, the
    frames, contact history and colliders whose bytes match their digests, a killed bake's leftovers;
    ``engine.cache_files``). The folder and every other entry stay. A symbolic link is followed: the
    folder it names is freed.

    Returns:
        The frames freed and the entries kept.

    Raises:
        MochiError: no Mochi bake there, a manifest that fails its own digest, the folder is locked by a
            running bake, or a file cannot be deleted (then nothing is).
    """
    with files_read_once():
        folder = real_folder(out_dir)
        if not folder.is_dir():
            raise MochiError(f"There is no Mochi bake in '{folder}': the folder does not exist.")
        _trusted_manifest(folder)  # looked at before the lock, so a refusal changes nothing
        with CacheLock(folder, action="free the bake"):
            manifest = _trusted_manifest(folder)
            survey = survey_folder(folder, manifest)
            remove_files(folder, [*survey.bake, *survey.leftovers])
    return FreedBake(manifest["frames_completed"], tuple(name for name, _ in survey.foreign))


def _trusted_manifest(folder: Path) -> dict:
    """The manifest of ``folder``, checked against its own digest.

    Raises:
        MochiError: none, or one that fails its digest or its value checks.
    """
    manifest = read_manifest(folder)
    if manifest is None:
        raise MochiError(f"There is no Mochi bake in '{folder}' (no manifest.json); nothing was deleted.")
    check_manifest_digest(manifest, folder / MANIFEST_NAME)
    return manifest
