"""Which files in a cache folder are Mochi's, and removing only those.

Mochi deletes or overwrites only files it can prove it wrote: the manifest, the frames and contact
history its manifest lists, and its colliders, each with a name from a fixed pattern, each a regular
file inside the folder (a symbolic link is never followed, never removed). Anything else in the folder
is *foreign*: a bake into a folder holding a foreign entry is refused, naming it, before any work; a
free or an overwrite removes the listed files and leaves the folder and everything else in it.

Removal is all or nothing: every listed file is first renamed to a temporary name beside itself; if
one rename fails (an immutable file, a folder that cannot be written), the others are renamed back and
nothing is deleted, so an old bake is never left half-removed.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
from pathlib import Path

from .errors import MochiError

MANIFEST_NAME = "manifest.json"
HISTORY_FOLDER = ".resume"
COLLIDERS_FOLDER = "colliders"
COLLIDER_FILES = ("colliders.json", "colliders.npz")
#: Lock files of engines before the folder itself was locked, and the holder's description.
LOCK_FILES = (".mochi.lock", ".mochi.lock.owner")

_FRAME = re.compile(r"frame_(\d{4,9})\.ply")
_HISTORY = re.compile(r"frame_(\d{4,9})\.npz")
#: A temporary of ``engine.atomic.write_atomic`` (or of a removal): '.NAME.tmp-PID'.
_TEMPORARY = re.compile(r"\.(.+)\.tmp-(?:del-)?\d{1,10}")


def frame_number(name: str) -> int | None:
    """The frame of a file name 'frame_0007.ply' (7), or None for any other name."""
    match = _FRAME.fullmatch(name)
    return int(match.group(1)) if match else None


def is_listed_name(name: str) -> bool:
    """Whether ``name`` (relative to the cache folder, '/'-separated) is a name a bake can list in its
    manifest's ``file_digests``: 'frame_NNNN.ply', '.resume/frame_NNNN.npz' or 'colliders/colliders.*'.
    Absolute paths, '..', empty parts and every other name are not."""
    if not isinstance(name, str) or not name or "\\" in name or "\0" in name:
        return False
    parts = name.split("/")
    if len(parts) == 1:
        return _FRAME.fullmatch(parts[0]) is not None
    if len(parts) == 2 and parts[0] == HISTORY_FOLDER:
        return _HISTORY.fullmatch(parts[1]) is not None
    return len(parts) == 2 and parts[0] == COLLIDERS_FOLDER and parts[1] in COLLIDER_FILES


def _is_temporary_of(name: str, allowed) -> bool:
    match = _TEMPORARY.fullmatch(name)
    return match is not None and allowed(match.group(1))


def check_regular_file(path: str | os.PathLike, what: str = "") -> os.stat_result:
    """Refuse anything but a regular file at ``path`` (not followed if it is a link) before it is
    opened: a FIFO would block the reader for ever, /dev/zero would never end, a link could point
    anywhere.

    Raises:
        MochiError: missing, a link, or not a regular file (naming it).
    """
    path = Path(path)
    try:
        info = os.lstat(path)
    except OSError:
        raise MochiError(f"{what or 'The file'} '{path}' is missing.") from None
    if stat.S_ISLNK(info.st_mode):
        raise MochiError(f"'{path}' is a symbolic link; a Mochi cache holds only its own regular files, so it "
                         "is not followed.")
    if not stat.S_ISREG(info.st_mode):
        raise MochiError(f"'{path}' is not a regular file (a device, pipe or folder), so it is not read.")
    return info


def _frames_of(manifest: dict | None) -> int:
    return int(manifest.get("frames_completed", 0)) if manifest else 0


def _owned_top(name: str, frames: int, has_manifest: bool) -> bool:
    """A top-level entry name a bake of ``frames`` recorded frames (and the one being written) owns."""
    number = frame_number(name)
    if number is not None:
        return has_manifest and 1 <= number <= frames + 1
    return (name == MANIFEST_NAME and has_manifest) or name in LOCK_FILES


def foreign_entry(folder: str | os.PathLike, manifest: dict | None) -> str | None:
    """The first entry of ``folder`` that is not the bake's own (sorted by name), or None.

    Own: the manifest, frames 1..frames_completed + 1 (the last one written before it was recorded),
    ``.resume/frame_NNNN.npz``, ``colliders/colliders.json|npz``, the lock files and the temporaries of
    any of them, every one a regular file or (``.resume``, ``colliders``) a real folder. Without a
    manifest only the lock files and temporaries are own.

    Returns:
        The foreign entry's path relative to ``folder`` ('notes.txt', 'colliders/plan.txt'), or None.
    """
    folder = Path(folder)
    frames = _frames_of(manifest)
    has_manifest = manifest is not None

    def top(name: str) -> bool:
        return _owned_top(name, frames, has_manifest)

    sub_rules = {HISTORY_FOLDER: lambda n: has_manifest and _HISTORY.fullmatch(n) is not None,
                 COLLIDERS_FOLDER: lambda n: has_manifest and n in COLLIDER_FILES}
    for entry in sorted(os.scandir(folder), key=lambda e: e.name):
        name = entry.name
        if name in sub_rules and entry.is_dir(follow_symlinks=False):
            rule = sub_rules[name]
            for inner in sorted(os.scandir(entry.path), key=lambda e: e.name):
                own = rule(inner.name) or _is_temporary_of(inner.name, rule)
                if not own or not inner.is_file(follow_symlinks=False):
                    return f"{name}/{inner.name}"
            continue
        if not (top(name) or _is_temporary_of(name, lambda n: top(n) or n == MANIFEST_NAME)):
            return name
        if not entry.is_file(follow_symlinks=False):
            return name
    return None


def check_no_foreign(folder: str | os.PathLike, manifest: dict | None, *, action: str = "bake") -> None:
    """Refuse a folder that holds anything that is not the bake's own.

    Raises:
        MochiError: naming one foreign entry.
    """
    folder = Path(folder)
    try:
        foreign = foreign_entry(folder, manifest)
    except OSError as exc:
        raise MochiError(f"Cannot read the cache folder '{folder}': {exc.strerror or exc}.") from None
    if foreign is not None:
        raise MochiError(f"The cache folder '{folder}' holds '{foreign}', which is not from a Mochi bake; Mochi "
                         f"will not {action} into a folder with other files (choose an empty or new folder, or "
                         "move that file away).")


def owned_files(folder: str | os.PathLike, manifest: dict | None) -> list[Path]:
    """The files of ``folder`` the bake owns and a free or overwrite removes, that exist now.

    The manifest, its frames (1..frames_completed + 1), the names its ``file_digests`` list, every
    ``.resume/frame_NNNN.npz``, the colliders and the stale temporaries of all of them. Links and
    anything else are never listed.
    """
    folder = Path(folder)
    names = set()
    frames = _frames_of(manifest)
    if manifest is not None:
        names.add(MANIFEST_NAME)
        names.update(f"frame_{f:04d}.ply" for f in range(1, frames + 2))
        digests = manifest.get("file_digests")
        if isinstance(digests, dict):
            names.update(n for n in digests if is_listed_name(n))
        names.update(f"{COLLIDERS_FOLDER}/{n}" for n in COLLIDER_FILES)
        with contextlib.suppress(OSError):
            names.update(f"{HISTORY_FOLDER}/{e.name}" for e in os.scandir(folder / HISTORY_FOLDER)
                         if _HISTORY.fullmatch(e.name))
    with contextlib.suppress(OSError):
        names.update(e.name for e in os.scandir(folder)
                     if _is_temporary_of(e.name, lambda n: _owned_top(n, frames, manifest is not None)
                                         or n == MANIFEST_NAME))
    for sub in (HISTORY_FOLDER, COLLIDERS_FOLDER):
        with contextlib.suppress(OSError):
            names.update(f"{sub}/{e.name}" for e in os.scandir(folder / sub) if _TEMPORARY.fullmatch(e.name))
    found = []
    for name in sorted(names):
        path = folder / name
        with contextlib.suppress(OSError):
            if stat.S_ISREG(os.lstat(path).st_mode) and not os.path.islink(path.parent):
                found.append(path)
    # The manifest goes last: a removal interrupted half-way still has a manifest naming what is left.
    found.sort(key=lambda p: p.name == MANIFEST_NAME)
    return found


def remove_owned_files(folder: str | os.PathLike, manifest: dict | None) -> int:
    """Remove the bake's own files (``owned_files``), all or nothing; empty ``.resume``/``colliders``
    folders go too, the folder itself and every other entry stay.

    Returns:
        The number of files removed.

    Raises:
        MochiError: a file that cannot be removed (nothing is removed then), naming it.
    """
    folder = Path(folder)
    targets = owned_files(folder, manifest)
    for sub in (HISTORY_FOLDER, COLLIDERS_FOLDER):
        if (folder / sub).is_symlink():
            raise MochiError(f"'{folder / sub}' is a symbolic link; Mochi does not follow it, so it cannot "
                             "remove the bake there.")
    moved: list[tuple[Path, Path]] = []
    try:
        for path in targets:
            aside = path.with_name(f".{path.name}.tmp-del-{os.getpid()}")
            os.rename(path, aside)
            moved.append((path, aside))
    except OSError as exc:
        for path, aside in reversed(moved):
            with contextlib.suppress(OSError):
                os.rename(aside, path)
        raise MochiError(f"Cannot remove '{path}' ({exc.strerror or exc}), so nothing of the bake in "
                         f"'{folder}' was removed.") from None
    for _, aside in moved:
        with contextlib.suppress(FileNotFoundError):
            aside.unlink()
    for sub in (HISTORY_FOLDER, COLLIDERS_FOLDER):
        with contextlib.suppress(OSError):
            (folder / sub).rmdir()  # only when empty: anything else in it stays
    return len(moved)


def check_blend_cache_folder(blend_file: str | os.PathLike, cache_directory: str) -> None:
    """Refuse, headless, a .blend whose cache folder is an absolute path outside the .blend's folder.

    A .blend chooses its cache folder, so a file from elsewhere could name any folder on this machine
    (a Bake there replaces the bake it holds). In the UI the artist confirms such a folder; headless
    nobody can, so ``--out`` must name it. Blender-relative folders ('//mochi_scene') pass.

    Args:
        blend_file: Path of the open .blend.
        cache_directory: The scene's cache folder setting as stored ('//…' relative, or absolute).

    Raises:
        MochiError: naming the folder and the way out (--out).
    """
    if not cache_directory or cache_directory.startswith("//") or not os.path.isabs(cache_directory):
        return
    home = Path(os.path.abspath(blend_file)).parent
    folder = Path(os.path.abspath(cache_directory))
    if folder != home and home not in folder.parents:
        raise MochiError(f"The scene's cache folder '{folder}' is outside the folder of '{Path(blend_file).name}' "
                         f"('{home}'); headless, give the cache folder with --out so that no .blend can choose "
                         "where Mochi writes and deletes.")
