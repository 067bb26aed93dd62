"""The bake cache: DIR/manifest.json plus one binary PLY per frame, DIR/frame_0001.ply, ...

Frame 1 is the initial state; frame f is the state after (f − 1) × steps_per_frame steps. Every frame
holds the vertex properties of ``FRAME_PROPERTIES`` (float32 x y z radius vx vy vz, int32 id and
object_id, uint8 material and active, float32 angular velocity wx wy wz [rad/s] and orientation
quaternion qw qx qy qz, uint8 bonds: intact glue bonds per particle), in particle order. Format
version 1 (before rotation) lacks the last eight; it still loads, with ω = 0, q = identity, bonds 0. Frames and the manifest are written
atomically (temporary file, then rename), and the manifest is updated only after its frame is on
disk, so ``frames_completed`` always names frames that are complete. The manifest also stores the
resolved physics, so a bake resumes from the cache alone (see ``load_resume``).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from . import __version__
from .atomic import write_atomic
from .cache_files import check_regular_file, remove_owned_files
from .cache_integrity import (check_file_digests, check_frames_present, check_manifest_values, load_history_file,
                              physics_from_manifest, with_manifest_digest)
from .digest import digest, file_digest
from .errors import MochiError
from .model import Model, build_model
from .ply import read_points, write_points
from .state import State, make_state

FORMAT_NAME = "mochi-cache"
FORMAT_VERSION = 2
#: Versions ``read_manifest`` accepts (1: no rotation columns).
READABLE_VERSIONS = (1, 2)
MANIFEST_NAME = "manifest.json"
#: A manifest holds a digest per frame (~90 bytes): 64 MiB is far above any real bake's.
MANIFEST_MAX_BYTES = 64 * 2**20
FRAME_PATTERN = "frame_{frame:04d}.ply"
#: Tangential-spring history of the newest frames, needed for a bit-exact resume (not for playback).
HISTORY_FOLDER = ".resume"
FRAME_PROPERTIES_V1 = ("x", "y", "z", "radius", "vx", "vy", "vz", "id", "object_id", "material", "active")
ROTATION_PROPERTIES = ("wx", "wy", "wz", "qw", "qx", "qy", "qz", "bonds")
FRAME_PROPERTIES = FRAME_PROPERTIES_V1 + ROTATION_PROPERTIES


def frame_path(folder: str | os.PathLike, frame: int) -> Path:
    """Path of frame ``frame`` (1-based) in a cache folder."""
    return Path(folder) / FRAME_PATTERN.format(frame=frame)


def frame_columns(model: Model, state: State) -> dict[str, np.ndarray]:
    """The PLY columns of one frame."""
    p, v, w, q = state.positions, state.velocities, state.angular_velocities, state.orientations
    return {"x": p[:, 0], "y": p[:, 1], "z": p[:, 2], "radius": model.radius,
            "vx": v[:, 0], "vy": v[:, 1], "vz": v[:, 2], "id": model.particle_id,
            "object_id": model.object_id, "material": model.material_index.astype(np.uint8),
            "active": state.active, "wx": w[:, 0], "wy": w[:, 1], "wz": w[:, 2],
            "qw": q[:, 0], "qx": q[:, 1], "qy": q[:, 2], "qz": q[:, 3], "bonds": state.bonds}


def write_json_atomic(path: Path, data: dict) -> None:
    write_atomic(path, lambda handle: handle.write(json.dumps(data, indent=2).encode("utf-8")))


def read_manifest(folder: str | os.PathLike) -> dict | None:
    """The manifest of a cache folder, or None when there is none.

    Raises:
        MochiError: a manifest that is not Mochi's, of an unknown format version, or whose values are
            damaged (see ``engine.cache_integrity.check_manifest_values``).
    """
    path = Path(folder) / MANIFEST_NAME
    if not os.path.lexists(path):
        return None
    check_regular_file(path, "The cache manifest")
    if path.stat().st_size > MANIFEST_MAX_BYTES:
        raise MochiError(f"The cache manifest '{path}' is {path.stat().st_size:,} bytes, far more than a Mochi "
                         "manifest, so it is not read.")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except RecursionError:
        raise MochiError(f"The cache manifest '{path}' is nested too deeply to be a Mochi manifest.") from None
    except (OSError, ValueError) as exc:
        raise MochiError(f"The cache manifest '{path}' cannot be read ({exc}).") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT_NAME or data.get("format_version") not in READABLE_VERSIONS:
        raise MochiError(f"'{path}' is not a Mochi cache manifest of format version "
                         f"{' or '.join(map(str, READABLE_VERSIONS))}.")
    return check_manifest_values(data, path)


def ensure_cache_folder(folder: str | os.PathLike) -> Path:
    """Create ``folder`` if needed and check that it is writable.

    Raises:
        MochiError: it cannot be created or written.
    """
    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise MochiError(f"Cannot create the cache folder '{folder}': {exc.strerror or exc}.") from None
    if not os.access(folder, os.W_OK):
        raise MochiError(f"The cache folder '{folder}' is not writable.")
    return folder


@dataclass
class CacheWriter:
    """Writes frames and keeps the manifest current.

    The manifest's ``file_digests`` hold the SHA-256 of every file of the bake (each frame, the last
    frame's contact history, the colliders), so a resume can tell a damaged, edited or missing file from
    the one the bake wrote (``engine.cache_integrity.check_file_digests``).

    Attributes:
        folder: Cache folder (created if missing).
        model: The model being baked.
        info: Extra manifest entries (preset, scene name, backend...).
        file_digests: Path relative to the folder → SHA-256 of the frames and colliders written so far;
            a resumed bake passes on those of its manifest.
    """

    folder: Path
    model: Model
    info: dict
    file_digests: dict[str, str] = field(default_factory=dict)

    def __post_init__(self):
        self.folder = Path(self.folder)
        ensure_cache_folder(self.folder)
        self._latest: dict[str, str] = {}  # digest of the newest frame's contact history

    def record_files(self, *paths: Path) -> None:
        """Add files that stay for the whole bake (the colliders) to the digests a resume checks."""
        for path in paths:
            self.file_digests[path.relative_to(self.folder).as_posix()] = file_digest(path)

    def manifest(self, frames_completed: int, *, resume_history: bool) -> dict:
        physics = self.model.physics
        physics_json = physics.to_json()
        return {
            "format": FORMAT_NAME,
            "format_version": FORMAT_VERSION,
            "engine_version": __version__,
            "fps": physics.fps,
            "dt": physics.dt,
            "steps_per_frame": physics.steps_per_frame,
            "particle_count": self.model.particle_count,
            "attributes": list(FRAME_PROPERTIES),
            "frame_pattern": FRAME_PATTERN,
            "frame_start": 1,
            "frames_completed": frames_completed,
            "updated": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "physics": physics_json,
            "physics_digest": digest(physics_json),
            # Whether .resume/ holds the contact history of the last frame: a resume then needs it.
            "resume_history": resume_history,
            "file_digests": {**self.file_digests, **self._latest},
            **self.info,
        }

    def write_start(self) -> None:
        """Write the manifest of 0 frames before the first frame, so that every file of the bake is, from
        the first, one a manifest accounts for (``engine.cache_files``)."""
        write_json_atomic(self.folder / MANIFEST_NAME, with_manifest_digest(self.manifest(0, resume_history=False)))

    def write_frame(self, frame: int, state: State, history: dict[str, np.ndarray] | None = None) -> Path:
        """Write frame ``frame`` (1-based) and its contact history, then record it in the manifest."""
        path = frame_path(self.folder, frame)
        write_points(path, frame_columns(self.model, state))
        self.file_digests[path.name] = file_digest(path)
        latest = {}
        if history is not None:
            folder = self.folder / HISTORY_FOLDER
            folder.mkdir(exist_ok=True)
            # Zipped in memory first: numpy's zip writer, cut short by a full disk, would otherwise
            # try to finish its file from a finaliser after the handle is closed.
            buffer = io.BytesIO()
            np.savez(buffer, **history)
            write_atomic(history_path(self.folder, frame), lambda handle: handle.write(buffer.getbuffer()))
            latest[f"{HISTORY_FOLDER}/{history_path(self.folder, frame).name}"] = hashlib.sha256(buffer.getbuffer()).hexdigest()
        self._latest = latest
        manifest = with_manifest_digest(self.manifest(frame, resume_history=history is not None))
        write_json_atomic(self.folder / MANIFEST_NAME, manifest)
        # Keep the history of the last two frames only: one is always complete.
        history_path(self.folder, frame - 2).unlink(missing_ok=True)
        return path


def history_path(folder: str | os.PathLike, frame: int) -> Path:
    """Contact-history file of a frame (tangential springs), beside the frames in a hidden folder."""
    return Path(folder) / HISTORY_FOLDER / f"frame_{frame:04d}.npz"


def read_history(folder: str | os.PathLike, frame: int, particle_count: int | None = None) -> dict[str, np.ndarray] | None:
    """The contact history saved with ``frame``, or None if there is none.

    Args:
        particle_count: Particles of the bake (default: the manifest's count).

    Raises:
        MochiError: the file is damaged or does not fit a bake of ``particle_count`` particles.
    """
    path = history_path(folder, frame)
    if not os.path.lexists(path):
        return None
    check_regular_file(path, "The contact history")
    if particle_count is None:
        manifest = read_manifest(folder)
        if manifest is None:
            raise MochiError(f"There is no Mochi bake in '{folder}' (no manifest.json).")
        particle_count = manifest["particle_count"]
    return load_history_file(path, particle_count)


def read_frame(folder: str | os.PathLike, frame: int) -> dict[str, np.ndarray]:
    """Columns of one cached frame (all ``FRAME_PROPERTIES``; a version-1 frame gets ω = 0 and q = identity)."""
    check_regular_file(frame_path(folder, frame), f"Frame {frame}")
    columns = read_points(frame_path(folder, frame), required=FRAME_PROPERTIES_V1)
    if not all(name in columns for name in ROTATION_PROPERTIES):
        count = len(columns["x"])
        for name in ROTATION_PROPERTIES:
            columns[name] = (np.zeros(count, np.uint8) if name == "bonds"
                             else np.full(count, 1.0 if name == "qw" else 0.0, np.float32))
    return columns


def load_resume(folder: str | os.PathLike) -> tuple[Model, State, dict]:
    """Model, state at the last complete frame, and manifest of an existing cache.

    Raises:
        MochiError: no cache in ``folder``, a missing or damaged frame, or frames that do not fit the
            manifest.
    """
    manifest = read_manifest(folder)
    if manifest is None or manifest["frames_completed"] < 1:
        raise MochiError(f"There is no bake to resume in '{folder}'.")
    physics = physics_from_manifest(manifest, Path(folder) / MANIFEST_NAME)
    check_frames_present(folder, manifest["frames_completed"], frame_path)
    check_file_digests(folder, manifest)
    first = read_frame(folder, 1)
    colliders = None
    if manifest.get("colliders"):
        from .colliders import load_colliders  # only scenes with colliders need it

        try:
            colliders = load_colliders(folder)
        except MochiError:
            raise
        except (KeyError, TypeError, ValueError, IndexError, AttributeError, OSError, zipfile.BadZipFile) as exc:
            # A colliders.json missing a key or holding values of the wrong kind: damaged, not a bug.
            raise MochiError(f"The colliders of the bake in '{folder}' are damaged ({type(exc).__name__}: "
                             f"{str(exc)[:80]}), so the bake cannot continue; bake again with overwrite.") from None
    # Glue bonds are made from the initial positions, as the bake made them.
    model = build_model(first["radius"], physics, material_index=first["material"].astype(np.int32),
                        object_id=first["object_id"], particle_id=first["id"], colliders=colliders,
                        positions=np.stack([first["x"], first["y"], first["z"]], axis=1))
    last_frame = int(manifest["frames_completed"])
    last = first if last_frame == 1 else read_frame(folder, last_frame)
    for frame, columns in ((1, first), (last_frame, last)):
        if len(columns["x"]) != manifest["particle_count"]:
            raise MochiError(f"Frame {frame} in '{folder}' has {len(columns['x'])} particles, but the manifest "
                             f"lists {manifest['particle_count']}.")
        if not all(np.isfinite(columns[k]).all() for k in ("x", "y", "z", "vx", "vy", "vz", "radius")
                   + ROTATION_PROPERTIES):
            raise MochiError(f"Frame {frame} in '{folder}' holds non-finite positions, velocities or radii "
                             "(damaged), so the bake cannot continue.")
    state = make_state(np.stack([last["x"], last["y"], last["z"]], axis=1),
                       np.stack([last["vx"], last["vy"], last["vz"]], axis=1), last["active"],
                       step=(last_frame - 1) * physics.steps_per_frame,
                       angular_velocities=np.stack([last["wx"], last["wy"], last["wz"]], axis=1),
                       orientations=np.stack([last["qw"], last["qx"], last["qy"], last["qz"]], axis=1))
    return model, state, manifest


def remove_cache_files(folder: str | os.PathLike) -> int:
    """Delete the files the manifest of ``folder`` lists (frames, manifest, contact history, colliders),
    all or nothing; anything else in the folder stays (``engine.cache_files.remove_owned_files``).

    Returns:
        The number of files removed (0 when the folder holds no manifest).
    """
    manifest = read_manifest(folder)
    return remove_owned_files(folder, manifest) if manifest is not None else 0
