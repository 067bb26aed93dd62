"""Checks that a cache folder is what its manifest says, before anything trusts it.

Everything the engine reads back from a cache passes through here: the manifest's values (types and
ranges), the digest of the physics it records, the frames it names (all present, all the same size)
and the contact history of ``.resume/``. A problem is one ``MochiError`` sentence that names the file
and what is wrong with it, never a traceback.
"""

from __future__ import annotations

import math
import os
import zipfile
from pathlib import Path

import numpy as np

from .digest import digest
from .errors import MochiError

#: Manifest keys the engine reads, with the check each value must pass and what it must be.
_INTEGER_KEYS = {"frames_completed": 0, "particle_count": 1, "steps_per_frame": 1, "frame_start": 0}
_POSITIVE_KEYS = ("fps", "dt")


def check_manifest_values(data: dict, path: str | os.PathLike) -> dict:
    """Check the values of a Mochi manifest; returns ``data``.

    Raises:
        MochiError: a missing key, a value of the wrong type or out of range, or physics that no
            longer match the digest stored beside them (an edited manifest).
    """
    for key, low in _INTEGER_KEYS.items():
        value = data.get(key)
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise MochiError(f"The cache manifest '{path}' has {key} = {value!r}; it must be an integer ≥ {low}.")
    for key in _POSITIVE_KEYS:
        value = data.get(key)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
            raise MochiError(f"The cache manifest '{path}' has {key} = {value!r}; it must be a positive number.")
    physics = data.get("physics")
    if not isinstance(physics, dict):
        raise MochiError(f"The cache manifest '{path}' has no readable physics.")
    expected = data.get("physics_digest")
    if expected is not None and expected != digest(physics):
        raise MochiError(f"The physics in the cache manifest '{path}' were edited after the bake (their digest "
                         "no longer matches); the cache cannot be resumed.")
    return data


def physics_from_manifest(data: dict, path: str | os.PathLike):
    """The ``Physics`` a checked manifest records.

    Raises:
        MochiError: the physics entry cannot be turned back into physics.
    """
    from .model import Physics

    try:
        return Physics.from_json(data["physics"])
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise MochiError(f"The physics in the cache manifest '{path}' cannot be read ({type(exc).__name__}: "
                         f"{exc}).") from None


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


def load_history_file(path: Path, particle_count: int) -> dict[str, np.ndarray]:
    """Read and check a ``.resume`` contact-history file.

    Raises:
        MochiError: unreadable, or arrays whose shapes, indices or values do not fit the bake.
    """
    try:
        with np.load(path, allow_pickle=False) as data:
            history = {name: np.asarray(data[name]) for name in data.files}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile, KeyError) as exc:
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
    from .digest import file_digest

    recorded = manifest.get("file_digests", {})
    if not isinstance(recorded, dict):
        raise MochiError(f"The cache manifest in '{folder}' has damaged file digests.")
    for name, expected in sorted(recorded.items()):
        path = Path(folder) / name
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
    """Refuse a manifest edited since the bake wrote it (manifests without a digest pass).

    Raises:
        MochiError: the digest does not match the entries.
    """
    expected = data.get(MANIFEST_DIGEST_KEY)
    if expected is not None and with_manifest_digest(data)[MANIFEST_DIGEST_KEY] != expected:
        raise MochiError(f"The cache manifest '{path}' was edited after the bake wrote it, so the bake cannot "
                         "continue exactly; bake again with overwrite.")
