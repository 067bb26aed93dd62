"""LAMMPS dumps of an export → a Mochi cache: ``mochi import-lammps DUMPS... --out CACHE``.

The frames are written by the cache's own writer (``engine.cache.CacheWriter``), so an imported cache is
a bake like any other for playback, rendering, ``mochi export`` and ``mochi free``: same PLY columns, same
manifest, same ownership proofs. The folder rules are a bake's (``engine.bake.check_bake_folder``): a
folder holding anything Mochi cannot prove it wrote is refused; an existing cache is replaced only with
``overwrite``, and continued with ``resume`` only when it is an import of the same export (LAMMPS still
running: import the frames dumped so far, then the rest).

What comes from where: positions, velocities and angular velocities are LAMMPS' (float64 rounded to the
cache's float32); radius, material, object and particle id are the export's; a grain LAMMPS lost through an
open side is inactive from the first frame it is missing from, at rest where it was last dumped. Sphere atoms carry no orientation, so it is integrated here from the dumped ω
at frame resolution, q_{f+1} = exp(½ T (ω_f + ω_{f+1})/2) ⊗ q_f with T the frame interval: what an
instanced mesh shows, not physics (the manifest says so).
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from ..digest import digest
from ..errors import MochiError
from ..model import Physics, build_model
from ..state import make_state
from .deck import DUMP_COLUMNS, EXPORT_ARRAYS, read_export_record
from .dump import Snapshot, index_dumps, read_snapshot

#: The manifest's ``source`` of an imported cache.
SOURCE = "lammps"
ORIENTATION_NOTE = "integrated from LAMMPS' dumped angular velocities at frame resolution"


def find_export(dumps: list[str | os.PathLike], export: str | os.PathLike | None) -> Path:
    """The export folder of ``dumps``: ``export`` if given, else the first dump's folder or its parent
    (the deck dumps into DIR/dumps/).

    Raises:
        MochiError: no export record there.
    """
    if export is not None:
        candidates = [Path(export)]
    else:
        first = Path(dumps[0]).absolute().parent
        candidates = [first, first.parent]
    for folder in candidates:
        if read_export_record(folder) is not None:
            return folder
    raise MochiError(f"No Mochi LAMMPS export (mochi_export.json) in '{candidates[0]}'"
                     f"{'' if export is not None else ' or its parent'}; give the deck folder with --export DIR.")


def _load_export(folder: Path) -> tuple[dict, dict[str, np.ndarray]]:
    """The export's record and arrays, refused unless both are exactly what ``export_deck`` wrote."""
    record = read_export_record(folder)
    path = folder / EXPORT_ARRAYS
    unsigned = {k: v for k, v in record.items() if k != "export_digest"}
    if record.get("export_digest") != digest(unsigned) or not path.is_file() \
            or hashlib.sha256(path.read_bytes()).hexdigest() != record.get("files", {}).get(EXPORT_ARRAYS):
        raise MochiError(f"The export in '{folder}' was changed since mochi export-lammps wrote it (its record or "
                         f"{EXPORT_ARRAYS} no longer match their digests); export again.")
    try:
        with np.load(path, allow_pickle=False) as data:
            arrays = {name: np.asarray(data[name]) for name in ("radius", "material_index", "object_id",
                                                                 "particle_id", "orientations")}
    except (OSError, KeyError, ValueError) as exc:
        raise MochiError(f"The export's arrays '{path}' cannot be read ({str(exc)[:80]}); export again.") from None
    n = record.get("particle_count")
    if any(len(a) != n for a in arrays.values()):
        raise MochiError(f"The export's arrays '{path}' do not hold {n} grains; export again.")
    return record, arrays


@dataclass(frozen=True)
class DumpFrames:
    """The frames the dumps hold, checked against the export.

    Attributes:
        snapshots: Snapshot of frame f at index f − 1 (frame 1 = step 0), contiguous.
        steps_per_frame: Steps between two frames.
    """

    snapshots: list[Snapshot]
    steps_per_frame: int


def frames_of(dumps: list[str | os.PathLike], record: dict) -> DumpFrames:
    """Index ``dumps`` and check they are frames 1..F of the export, with none missing.

    Raises:
        MochiError: a damaged dump (``engine.lammps.dump``), a step that is not a frame of the export, or a
            frame missing between two others.
    """
    every, last = int(record["steps_per_frame"]), int(record["frames"])
    snapshots = index_dumps(dumps, atom_count=int(record["particle_count"]), required=DUMP_COLUMNS,
                            lost=bool(record.get("open_sides")))
    for snapshot in snapshots:
        if snapshot.step % every or not 0 <= snapshot.step <= (last - 1) * every:
            raise MochiError(f"Step {snapshot.step} in '{snapshot.path}' is not a frame of the export (one every "
                             f"{every} steps, 0–{(last - 1) * every}).")
    for frame, snapshot in enumerate(snapshots, start=1):
        if snapshot.step != (frame - 1) * every:
            raise MochiError(f"The dumps lack frame {frame} (step {(frame - 1) * every}); the next one given is step "
                             f"{snapshot.step}. Give every dump from step 0 on.")
    return DumpFrames(snapshots, every)


def _turn(orientations: np.ndarray, omega: np.ndarray, seconds: float) -> np.ndarray:
    """Orientations (w, x, y, z) (n, 4) turned by the world-frame angular velocity ``omega`` [rad/s] (n, 3)
    held for ``seconds``."""
    angle = np.linalg.norm(omega, axis=1) * seconds
    axis = np.divide(omega, np.linalg.norm(omega, axis=1, keepdims=True), out=np.zeros_like(omega),
                     where=angle[:, None] > 0)
    r = np.column_stack([np.cos(0.5 * angle), np.sin(0.5 * angle)[:, None] * axis])
    q = orientations
    product = np.column_stack([
        r[:, 0] * q[:, 0] - np.einsum("ij,ij->i", r[:, 1:], q[:, 1:]),
        r[:, 0:1] * q[:, 1:] + q[:, 0:1] * r[:, 1:] + np.cross(r[:, 1:], q[:, 1:])])
    return product / np.linalg.norm(product, axis=1, keepdims=True)


def import_dumps(dumps: list[str | os.PathLike], out_dir: str | os.PathLike, *, export: str | os.PathLike | None = None,
                 overwrite: bool = False, resume: bool = False,
                 on_frame: Callable[[int, int], None] | None = None) -> tuple[int, int]:
    """Write the frames of ``dumps`` into the cache ``out_dir``.

    Args:
        dumps: LAMMPS dump files of an export (any order; each may hold several steps).
        out_dir: Cache folder.
        export: The export's folder (default: found beside the dumps, ``find_export``).
        overwrite: Replace an existing cache.
        resume: Continue an import of the same export, writing only the frames it lacks.
        on_frame: Called with (frame, last frame) after each frame written.

    Returns:
        (first frame written, last frame in the cache); first > last when there was nothing new.

    Raises:
        MochiError: bad dumps, an export that does not match them, or a folder the rules refuse.
    """
    from ..bake import check_bake_folder  # the cache rules: bake's, not a copy
    from ..cache import MANIFEST_NAME, CacheWriter, read_manifest
    from ..cache_files import remove_leftovers, remove_owned_files
    from ..cache_integrity import check_manifest_digest
    from ..cache_lock import CacheLock

    if not dumps:
        raise MochiError("Give at least one LAMMPS dump to import.")
    if resume and overwrite:
        raise MochiError("--resume and --overwrite exclude each other: resume continues the import in --out, "
                         "overwrite replaces it.")
    for given in dumps:
        if not Path(given).is_file():
            raise MochiError(f"The dump '{given}' does not exist or is not a file.")
    folder = find_export(dumps, export)
    record, arrays = _load_export(folder)
    frames = frames_of(dumps, record)
    physics = Physics.from_json(record["physics"])
    model = build_model(arrays["radius"], physics, material_index=arrays["material_index"],
                        object_id=arrays["object_id"], particle_id=arrays["particle_id"])
    out = Path(out_dir)
    check_bake_folder(out, overwrite=overwrite, resume=resume)
    created = not out.exists()
    out.mkdir(parents=True, exist_ok=True)
    info = {"source": SOURCE, "backend": SOURCE, "scene": record["source"].get("scene", ""),
            "lammps_export": str(folder.absolute()), "lammps_export_digest": record["export_digest"],
            "orientation": ORIENTATION_NOTE, **{k: v for k, v in record["source"].items() if k != "scene"}}
    try:
        with CacheLock(out, action="import"):
            existing = check_bake_folder(out, overwrite=overwrite, resume=resume)  # again, under the lock
            if resume and existing is not None:
                check_manifest_digest(existing, out / MANIFEST_NAME)
                if existing.get("lammps_export_digest") != record["export_digest"]:
                    raise MochiError(f"The cache in '{out}' is not an import of the export in '{folder}', so the "
                                     "import cannot continue it; choose --overwrite to replace it.")
                remove_leftovers(out, existing)  # what a killed import left, proven by its manifest
                writer = CacheWriter(out, model, info, file_digests=dict(existing.get("file_digests", {})),
                                     announced=existing.get("temporary_token"))
                done = int(existing["frames_completed"])
            else:
                if existing is not None:
                    remove_owned_files(out, existing)  # all or nothing, as a bake's overwrite
                writer = CacheWriter(out, model, info)
                done = 0
            first, last = done + 1, len(frames.snapshots)
            try:
                _write_frames(writer, model, frames, record, arrays["orientations"], first, last, on_frame)
            except BaseException:
                if created and not writer.file_digests:  # failed before frame 1: leave no folder behind
                    remove_owned_files(out, read_manifest(out) or {"frames_completed": 0})
                raise
    finally:
        if created and out.is_dir() and not any(out.iterdir()):
            out.rmdir()  # a refused or failed first import leaves nothing behind
    return first, max(last, done)


def _write_frames(writer, model, frames: DumpFrames, record: dict, orientations: np.ndarray, first: int, last: int,
                  on_frame) -> None:
    """Frames ``first``..``last``; the orientation integration starts at frame 1 (the export's), so a
    resumed import turns its grains exactly as one that ran through. A grain missing from a frame left
    through an open side: inactive from then on, at rest where it was last dumped (as Mochi keeps it)."""
    if first > last:
        return  # nothing new: the cache already holds every dumped frame
    interval = frames.steps_per_frame * float(record["dt"])
    n = model.particle_count
    q = np.asarray(orientations, np.float64)
    x, v, w = np.zeros((n, 3)), np.zeros((n, 3)), np.zeros((n, 3))
    active = np.ones(n, bool)
    rotating = bool(record["physics"].get("rotation", True))
    for frame in range(1, last + 1):
        snapshot = frames.snapshots[frame - 1]
        try:
            columns = read_snapshot(snapshot, DUMP_COLUMNS, atom_total=n)
        except MochiError as exc:
            if frame <= first:
                raise
            raise MochiError(f"{exc} Frames 1–{frame - 1} are imported; give that step again and import with "
                             "--resume.") from None
        rows = columns["id"].astype(np.int64) - 1
        if (frame == 1 and len(rows) != n) \
                or not np.allclose(columns["radius"], model.radius[rows], rtol=1e-6, atol=0.0) \
                or not np.array_equal(columns["type"].astype(np.int64) - 1, model.material_index[rows]):
            raise MochiError(f"The grains of step {snapshot.step} in '{snapshot.path}' are not the export's (radii, "
                             "types or count); the dump belongs to another export.")
        present = np.zeros(n, bool)
        present[rows] = True
        active &= present  # LAMMPS never brings a lost grain back
        omega = np.zeros((n, 3))
        omega[rows] = np.column_stack([columns["omegax"], columns["omegay"], columns["omegaz"]])
        if frame > 1 and rotating:
            q = _turn(q, 0.5 * (w + omega), interval)
        w = np.where(active[:, None], omega, 0.0)
        x[rows] = np.column_stack([columns["x"], columns["y"], columns["z"]])
        v[rows] = np.column_stack([columns["vx"], columns["vy"], columns["vz"]])
        v[~active] = 0.0
        if frame < first:
            continue
        state = make_state(x, v, active.astype(np.uint8), step=(frame - 1) * frames.steps_per_frame,
                           angular_velocities=w, orientations=q.astype(np.float32))
        writer.write_frame(frame, state, None)
        if on_frame:
            on_frame(frame, last)
