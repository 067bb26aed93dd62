"""The bake cache: DIR/manifest.json plus one binary PLY per frame, DIR/frame_0001.ply, ...

Frame 1 is the initial state; frame f is the state after (f − 1) × steps_per_frame steps. Every frame
holds the vertex properties of ``FRAME_PROPERTIES`` (float32 x y z radius vx vy vz, int32 id and
object_id, uint8 material and active, float32 angular velocity wx wy wz [rad/s] and orientation
quaternion qw qx qy qz, uint8 bonds: intact glue bonds per particle), in particle order. Format
version 1 (before rotation) lacks the last eight; it still loads, with ω = 0, q = identity, bonds 0. Frames and the manifest are written
atomically (temporary file, then rename), and the manifest records a frame as complete only after it
is on disk, so ``frames_completed`` always names frames that are complete; before a file is written
the manifest names it (``CacheWriter``), so every file of a bake is one its manifest proves
(``engine.cache_files``). The manifest also stores the resolved physics, so a bake resumes from the
cache alone (see ``load_resume``).
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
from .atomic import new_token, write_atomic
from .cache_files import check_regular_file, remove_proven
from .cache_integrity import (check_file_digests, check_frames_present, check_manifest_values, load_history_file,
                              physics_from_manifest, with_manifest_digest)
from .digest import digest
from .errors import MochiError
from .model import Model, build_model
from .ply import encode_points, read_points
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


def write_json_atomic(path: Path, data: dict, *, token: str | None = None) -> None:
    """Write ``data`` as indented JSON, atomically (``engine.atomic.write_atomic``, its temporary named by
    ``token``)."""
    write_atomic(path, lambda handle: handle.write(json.dumps(data, indent=2).encode("utf-8")), token=token)


def _refuse_repeated_keys(pairs: list) -> dict:
    """``json.loads``' object hook: a key given twice ('frame_0002.ply' listed twice, two digests) makes
    the manifest ambiguous, so it is refused rather than read as its last spelling."""
    seen = set()
    for key, _ in pairs:
        if key in seen:
            raise ValueError(f"the key {key!r} is given twice")
        seen.add(key)
    return dict(pairs)


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
        data = json.loads(path.read_text(encoding="utf-8"), object_pairs_hook=_refuse_repeated_keys)
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
    """Writes frames and keeps the manifest current, so that every file it writes is, at every instant,
    one the manifest on disk proves (``engine.cache_files``).

    Each frame is written in three steps: (1) the manifest records the new files' names and SHA-256 as
    ``pending``; (2) each file is written to the temporary '.NAME.tmp-TOKEN' (TOKEN announced by that
    manifest) and renamed into place, never over an existing file; (3) the manifest records the frame
    as complete in ``file_digests``, and the contact history it replaces as pending until it is deleted.
    A bake killed anywhere leaves only files the manifest on disk names: complete files by their digest,
    half-written temporaries by their announced name. The manifest's own temporary carries the token the
    manifest it replaces announced.

    Attributes:
        folder: Cache folder (created if missing).
        model: The model being baked.
        info: Extra manifest entries (preset, scene name, backend...).
        file_digests: Path relative to the folder → SHA-256 of every file of the bake (each frame, the
            newest frame's contact history, the colliders); a resumed bake passes on those of its manifest.
        announced: The temporary token of the manifest on disk (a resumed bake's), or None.
        resume_history: Whether the newest recorded frame has a contact history (a resumed bake's).
    """

    folder: Path
    model: Model
    info: dict
    file_digests: dict[str, str] = field(default_factory=dict)
    announced: str | None = None
    resume_history: bool = False

    def __post_init__(self):
        self.folder = Path(self.folder)
        ensure_cache_folder(self.folder)
        self.token = new_token()  # every temporary this writer creates carries it
        self._pending: dict[str, str] = {}
        self._extra: dict[str, bytes] = {}  # files written with the next frame (the colliders)

    def add_files(self, files: dict[str, bytes]) -> None:
        """Files that stay for the whole bake (the colliders: name relative to the folder → bytes), written
        and recorded with the next frame."""
        self._extra.update(files)

    def manifest(self, frames_completed: int) -> dict:
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
            "resume_history": self.resume_history,
            "file_digests": dict(self.file_digests),
            # Files being put in place or retired, and the token of every temporary made from now on.
            "pending": dict(self._pending),
            "temporary_token": self.token,
            **self.info,
        }

    def _write_manifest(self, frames_completed: int) -> None:
        write_json_atomic(self.folder / MANIFEST_NAME, with_manifest_digest(self.manifest(frames_completed)),
                          token=self.announced or self.token)
        self.announced = self.token

    def write_frame(self, frame: int, state: State, history: dict[str, np.ndarray] | None = None) -> Path:
        """Write frame ``frame`` (1-based) and its contact history, then record it in the manifest.

        Raises:
            MochiError: the folder cannot be written, or a name it writes was taken meanwhile.
        """
        path = frame_path(self.folder, frame)
        files = {path.name: encode_points(frame_columns(self.model, state)), **self._extra}
        if history is not None:
            buffer = io.BytesIO()
            np.savez(buffer, **history)
            files[f"{HISTORY_FOLDER}/{history_path(self.folder, frame).name}"] = buffer.getvalue()
        digests = {name: hashlib.sha256(data).hexdigest() for name, data in files.items()}
        self._pending = digests
        self._write_manifest(frame - 1)
        for name, data in files.items():
            target = self.folder / name
            target.parent.mkdir(exist_ok=True)  # .resume/, colliders/
            write_atomic(target, lambda handle, data=data: handle.write(data), token=self.token, replace=False)
        self._extra = {}
        # The previous frame's contact history is no longer needed: pending (proven) until it is deleted.
        retiring = {name: sha for name, sha in self.file_digests.items()
                    if name.startswith(f"{HISTORY_FOLDER}/") and name not in digests}
        for name in retiring:
            del self.file_digests[name]
        self.file_digests.update(digests)
        self._pending = retiring
        self.resume_history = history is not None
        self._write_manifest(frame)
        for name, sha in retiring.items():
            remove_proven(self.folder / name, sha)
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
