"""Checks that a cache folder is what its manifest says, before anything trusts it.

Everything the engine reads back from a cache passes through here: the manifest's values (types and
ranges), the digest of the physics it records, the frames it names (all present, all the same size)
and the contact history of ``.resume/``. A problem is one ``MochiError`` sentence that names the file
and what is wrong with it, never a traceback.
"""

from __future__ import annotations

import math
import os
import re
import zipfile
from pathlib import Path

import numpy as np

from .atomic import TOKEN_LENGTH
from .cache_files import TOKEN_PATTERN, check_regular_file, is_listed_name
from .digest import changes, digest, file_digest
from .errors import MochiError

#: Manifest keys the engine reads, with the range each integer must lie in (inclusive). Frames: Blender's
#: last frame is 1,048,574; particles: ids and indices are int32; steps: far over any budget.
_INTEGER_KEYS = {"frames_completed": (0, 1_048_574), "particle_count": (1, 2**31 - 1),
                 "steps_per_frame": (1, 2**40), "frame_start": (0, 1_048_574)}
#: Positive numbers and their upper bounds: frames per second, time step [s].
_POSITIVE_KEYS = {"fps": 10_000.0, "dt": 10.0}
#: Entries the add-on or the CLI store, checked when present: key → (type, range or length limit).
_OPTIONAL_INTEGERS = {"frame_start_scene": (-1_048_574, 1_048_574)}
_OPTIONAL_STRINGS = {"blend_file": 4096, "scene": 1024, "preset": 4096, "blender_scene": 1024, "backend": 64,
                     "backend_requested": 64, "rt_device_requested": 16, "engine_version": 64, "up_axis": 1}
_HEX_DIGEST = re.compile(r"[0-9a-f]{64}")


def check_manifest_values(data: dict, path: str | os.PathLike) -> dict:
    """Check the values of a Mochi manifest; returns ``data``.

    Raises:
        MochiError: a missing key, a value of the wrong type or out of range, or physics that no
            longer match the digest stored beside them (an edited manifest).
    """
    for key, (low, high) in _INTEGER_KEYS.items():
        value = data.get(key)
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise MochiError(f"The cache manifest '{path}' has {key} = {_short(value)}; it must be an integer from "
                             f"{low:,} to {high:,}.")
    for key, high in _POSITIVE_KEYS.items():
        value = data.get(key)
        if (isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value)
                or not 0 < value <= high):
            raise MochiError(f"The cache manifest '{path}' has {key} = {_short(value)}; it must be a positive number "
                             f"up to {high:g}.")
    for key, (low, high) in _OPTIONAL_INTEGERS.items():
        value = data.get(key, 0)
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise MochiError(f"The cache manifest '{path}' has {key} = {_short(value)}; it must be an integer from "
                             f"{low:,} to {high:,}.")
    for key, limit in _OPTIONAL_STRINGS.items():
        value = data.get(key, "")
        if value is not None and (not isinstance(value, str) or len(value) > limit or "\0" in value):
            raise MochiError(f"The cache manifest '{path}' has {key} = {_short(value)}; it must be text of at most "
                             f"{limit} characters.")
    if not isinstance(data.get("resume_history", False), bool):
        raise MochiError(f"The cache manifest '{path}' has resume_history = {_short(data['resume_history'])}; it "
                         "must be true or false.")
    for key, what in (("file_digests", "file digests"), ("pending", "pending files")):
        digests = data.get(key, {})
        if not isinstance(digests, dict):
            raise MochiError(f"The cache manifest '{path}' has damaged {what}.")
        for name, value in digests.items():
            # Names are confined before anything opens them: a plain name of the bake's own patterns, inside
            # the folder ('../x', '/etc/shadow', 'notes.txt' are refused here, never read).
            if not is_listed_name(name):
                raise MochiError(f"The cache manifest '{path}' names the file {_short(name)}, which is not a file of "
                                 "a Mochi bake (only frame_NNNN.ply, .resume/frame_NNNN.npz and colliders/ files "
                                 "are).")
            if not isinstance(value, str) or not _HEX_DIGEST.fullmatch(value):
                raise MochiError(f"The cache manifest '{path}' has a damaged digest for '{name}'.")
    token = data.get("temporary_token")
    if token is not None and (not isinstance(token, str) or not TOKEN_PATTERN.fullmatch(token)):
        raise MochiError(f"The cache manifest '{path}' has temporary_token = {_short(token)}; it must be "
                         f"{TOKEN_LENGTH} lower-case hexadecimal digits.")
    physics = data.get("physics")
    if not isinstance(physics, dict):
        raise MochiError(f"The cache manifest '{path}' has no readable physics.")
    expected = data.get("physics_digest")
    if expected is not None and expected != digest(physics):
        raise MochiError(f"The physics in the cache manifest '{path}' were edited after the bake (their digest "
                         "no longer matches); the cache cannot be resumed.")
    return data


def _short(value) -> str:
    """``repr(value)`` cut to 80 characters, for a sentence about an absurd manifest value."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def physics_from_manifest(data: dict, path: str | os.PathLike):
    """The ``Physics`` a checked manifest records, every value within the ranges a preset's must lie in
    (``engine.settings_schema.check_physics``: a re-signed manifest cannot ask for what no preset can).

    Raises:
        MochiError: the physics entry cannot be turned back into physics, or a value is out of range
            (naming the setting).
    """
    from .model import Physics
    from .settings_schema import check_physics

    try:
        physics = Physics.from_json(data["physics"])
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise MochiError(f"The physics in the cache manifest '{path}' cannot be read ({type(exc).__name__}: "
                         f"{exc}).") from None
    check_physics(physics, f"The physics in the cache manifest '{path}'")
    return physics


def check_same_physics(data: dict, physics, path: str | os.PathLike) -> None:
    """Refuse a manifest whose physics are not ``physics``, what the scene resolves to now (a re-signed
    manifest could otherwise change the bake behind its preset's back).

    Raises:
        MochiError: naming the settings that differ.
    """
    now = physics.to_json()
    if digest(data["physics"]) != digest(now):
        raise MochiError(f"The physics in the cache manifest '{path}' are not what the scene resolves to now "
                         f"({changes(data['physics'], now)}), so the bake cannot continue exactly; bake again "
                         "with overwrite.")


def check_frames_present(folder: str | os.PathLike, frames_completed: int, frame_path) -> None:
    """Every frame 1..``frames_completed`` exists and has the size of frame 1 (frames of one bake
    have identical headers and row sizes, so a truncated or foreign frame shows in its size).

    Raises:
        MochiError: naming the first missing or damaged frame.
    """
    first_size = None
    for frame in range(1, frames_completed + 1):
        path = frame_path(folder, frame)
        try:
            size = path.stat().st_size
        except OSError:
            raise MochiError(f"Frame {frame} of the {frames_completed} the manifest lists is missing from "
                             f"'{folder}', so the bake cannot continue exactly; bake again with overwrite.") from None
        first_size = size if first_size is None else first_size
        if size != first_size:
            raise MochiError(f"Frame {frame} in '{folder}' is {size} bytes where frame 1 is {first_size} "
                             "(damaged or from another bake), so the bake cannot continue exactly; bake again "
                             "with overwrite.")


#: Contact-history bytes allowed per particle (pairs of ~12 neighbours and 6 wall springs, float64):
#: a file claiming more is damaged, and is refused before anything that large is allocated.
HISTORY_BYTES_PER_PARTICLE = 4096


def _check_history_sizes(path: Path, particle_count: int) -> None:
    """Refuse a history file whose arrays claim more memory than a bake of ``particle_count`` needs,
    reading only the zip directory and the .npy headers (a header can claim 20 GB in 100 bytes).

    Raises:
        MochiError: an unreadable archive or an array over the bound.
    """
    limit = (1 << 20) + HISTORY_BYTES_PER_PARTICLE * particle_count
    try:
        with zipfile.ZipFile(path) as archive:
            total = 0
            for member in archive.infolist():
                with archive.open(member) as handle:
                    version = np.lib.format.read_magic(handle)
                    shape, _, dtype = (np.lib.format.read_array_header_1_0(handle) if version == (1, 0)
                                       else np.lib.format.read_array_header_2_0(handle))
                claimed = math.prod(shape) * dtype.itemsize
                total += max(claimed, member.file_size)
                if total > limit or claimed > member.file_size:
                    raise MochiError(f"The contact history '{path}' is damaged ('{member.filename}' claims "
                                     f"{claimed:,} bytes, more than the file or a bake of {particle_count:,} "
                                     "particles holds), so the bake cannot continue exactly; bake again with "
                                     "overwrite.")
    except MochiError:
        raise
    except (OSError, ValueError, EOFError, zipfile.BadZipFile, KeyError, TypeError, OverflowError) as exc:
        raise MochiError(f"The contact history '{path}' cannot be read ({type(exc).__name__}), so the bake "
                         "cannot continue exactly; bake again with overwrite.") from None


def load_history_file(path: Path, particle_count: int) -> dict[str, np.ndarray]:
    """Read and check a ``.resume`` contact-history file.

    Raises:
        MochiError: unreadable, or arrays whose shapes, indices or values do not fit the bake.
    """
    _check_history_sizes(path, particle_count)
    try:
        with np.load(path, allow_pickle=False) as data:
            history = {name: np.asarray(data[name]) for name in data.files}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile, KeyError, MemoryError) as exc:
        raise MochiError(f"The contact history '{path}' cannot be read ({type(exc).__name__}), so the bake "
                         "cannot continue exactly; bake again with overwrite.") from None

    def bad(what: str) -> MochiError:
        return MochiError(f"The contact history '{path}' is damaged ({what}), so the bake cannot continue "
                          "exactly; bake again with overwrite.")

    if "wall_spring" in history or "pair_i" in history:
        for name in ("pair_i", "pair_j", "pair_spring", "wall_spring"):
            if name not in history:
                raise bad(f"no '{name}'")
        i, j, spring = history["pair_i"], history["pair_j"], history["pair_spring"]
        if i.ndim != 1 or j.shape != i.shape or spring.shape != (i.shape[0], 3):
            raise bad("pair arrays of different lengths")
        if i.size and (min(i.min(), j.min()) < 0 or max(i.max(), j.max()) >= particle_count):
            raise bad("a pair names a particle that does not exist")
        if history["wall_spring"].shape != (particle_count, 6, 3):
            raise bad(f"wall springs for {history['wall_spring'].shape[0] if history['wall_spring'].ndim else 0} "
                      f"particles, not {particle_count}")
    for name, values in history.items():
        if values.dtype.kind == "f" and not np.isfinite(values).all():
            raise bad(f"non-finite values in '{name}'")
        if values.dtype.kind not in "fiub":
            raise bad(f"'{name}' is not numeric")
    return history


def check_file_digests(folder: str | os.PathLike, manifest: dict) -> None:
    """Every file the manifest fingerprints (``file_digests``: frame 1, the last frame, its contact
    history, the colliders) is there and unchanged since the bake wrote it.

    Raises:
        MochiError: naming the first file that is missing or whose contents changed.
    """
    recorded = manifest.get("file_digests", {})
    if not isinstance(recorded, dict):
        raise MochiError(f"The cache manifest in '{folder}' has damaged file digests.")
    # The names were confined to the bake's own patterns by check_manifest_values (read_manifest).
    for name, expected in sorted(recorded.items()):
        path = Path(folder) / name
        if os.path.lexists(path):
            check_regular_file(path)
        try:
            actual = file_digest(path)
        except OSError:
            raise MochiError(f"'{path}', which the bake needs to continue, is missing; bake again with "
                             "overwrite.") from None
        if actual != expected:
            raise MochiError(f"'{path}' changed since the bake wrote it (damaged or edited), so the bake cannot "
                             "continue exactly; bake again with overwrite.")


#: Manifest key holding the digest of all its other entries.
MANIFEST_DIGEST_KEY = "manifest_digest"


def with_manifest_digest(data: dict) -> dict:
    """``data`` plus the digest of all its entries, so that any later edit shows."""
    return {**data, MANIFEST_DIGEST_KEY: digest({k: v for k, v in data.items() if k != MANIFEST_DIGEST_KEY})}


def check_manifest_digest(data: dict, path: str | os.PathLike) -> None:
    """Refuse a manifest edited since the bake wrote it, or one without its own digest (written by hand
    or by an engine before the digest existed): nothing it lists is trusted then, so nothing in its
    folder is deleted, replaced or resumed.

    Raises:
        MochiError: the digest is missing or does not match the entries.
    """
    expected = data.get(MANIFEST_DIGEST_KEY)
    if expected is None:
        raise MochiError(f"The cache manifest '{path}' has no digest of its own (written by hand, or by an older "
                         "engine), so Mochi cannot trust the files it lists and changes nothing in that folder.")
    if with_manifest_digest(data)[MANIFEST_DIGEST_KEY] != expected:
        raise MochiError(f"The cache manifest '{path}' was edited after the bake wrote it, so Mochi cannot trust "
                         "the files it lists and changes nothing in that folder.")


def check_frame_digest(folder: str | os.PathLike, manifest: dict, frame: int, name: str) -> None:
    """Frame ``frame`` (file ``name``) is a regular file whose SHA-256 is the one the manifest records.

    Readers (the exports) call this before they read a frame, so a truncated, edited or NaN-filled frame
    is refused instead of exported.

    Raises:
        MochiError: no digest recorded, a missing or special file, or other contents.
    """
    path = Path(folder) / name
    expected = manifest.get("file_digests", {}).get(name)
    if expected is None:
        raise MochiError(f"The cache manifest in '{folder}' records no digest for frame {frame}, so the frame "
                         "cannot be checked; bake again.")
    check_regular_file(path, f"Frame {frame}")
    try:
        actual = file_digest(path)
    except OSError as exc:
        raise MochiError(f"Cannot read frame {frame} '{path}': {exc.strerror or exc}.") from None
    if actual != expected:
        raise MochiError(f"Frame {frame} '{path}' changed since the bake wrote it (damaged or edited), so it is not "
                         "exported.")
