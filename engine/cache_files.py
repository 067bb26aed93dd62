"""Which files in a cache folder are Mochi's, and removing only those.

A file is Mochi's only when the bake's manifest (itself checked against its own digest first,
``engine.cache_integrity.check_manifest_digest``) proves it:

* ``manifest.json`` itself;
* a file the manifest's ``file_digests`` lists by its exact name (a frame, the contact history of the
  newest frame, a collider file) whose bytes have the SHA-256 recorded there;
* a file its ``pending`` entry lists by exact name and digest: one a bake was putting in place, or the
  contact history it was retiring, when it was killed (written, not yet recorded);
* a temporary '.NAME.tmp-TOKEN' of one of those names whose TOKEN is the manifest's
  ``temporary_token``: a bake announces in its manifest the token of every temporary it creates
  afterwards, so a temporary a killed bake left (half written, its bytes unknown) is named by the
  manifest on disk; a token is 128 random bits, a name no other program's file has.

The lock's owner record (``engine.cache_lock``) is neither Mochi's bake nor foreign: it is proven by its
contents and belongs to the lock. Everything else, however it is named, is *foreign*: a link, a folder,
a file the manifest does not list, a listed file whose bytes differ from its digest. Foreign entries are
never deleted, replaced or renamed: a bake, overwrite or resume of a folder holding one is refused,
naming it, before any work; a free removes what is proven and leaves the rest.

Removal is all or nothing: the files move into a folder this process creates inside the cache folder
('.mochi-removing-TOKEN'), and if one cannot (an immutable file, a folder that cannot be written) the
others move back and nothing is deleted, so an old bake is never left half-removed.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path

from .atomic import TOKEN_LENGTH, new_token
from .cache_lock import LOCK_NAME, OWNER_NAME, is_owner_record, is_owner_temporary
from .digest import file_digest_known
from .errors import MochiError

MANIFEST_NAME = "manifest.json"
HISTORY_FOLDER = ".resume"
COLLIDERS_FOLDER = "colliders"
COLLIDER_FILES = ("colliders.json", "colliders.npz")

_FRAME = re.compile(r"frame_(\d{4,9})\.ply")
_HISTORY = re.compile(r"frame_(\d{4,9})\.npz")
#: A temporary of ``engine.atomic.write_atomic``: '.NAME.tmp-TOKEN'.
_TEMPORARY = re.compile(rf"\.(.+)\.tmp-([0-9a-f]{{{TOKEN_LENGTH}}})")
#: The manifest's temporary token: ``TOKEN_LENGTH`` lower-case hex digits.
TOKEN_PATTERN = re.compile(rf"[0-9a-f]{{{TOKEN_LENGTH}}}")


def is_listed_name(name: str) -> bool:
    """Whether ``name`` (relative to the cache folder, '/'-separated) is a name a bake can list in its
    manifest's ``file_digests`` or ``pending``: 'frame_NNNN.ply', '.resume/frame_NNNN.npz' or
    'colliders/colliders.*'. Absolute paths, '..', empty parts and every other name are not."""
    if not isinstance(name, str) or not name or "\\" in name or "\0" in name:
        return False
    parts = name.split("/")
    if len(parts) == 1:
        return _FRAME.fullmatch(parts[0]) is not None
    if len(parts) == 2 and parts[0] == HISTORY_FOLDER:
        return _HISTORY.fullmatch(parts[1]) is not None
    return len(parts) == 2 and parts[0] == COLLIDERS_FOLDER and parts[1] in COLLIDER_FILES


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


def real_folder(folder: str | os.PathLike) -> Path:
    """The folder ``folder`` names, every symbolic link on the way resolved: a bake folder given through
    a link is used as the folder it names, wholly (its lock, its files, its removal).

    Raises:
        MochiError: a link to nothing, or a loop of links.
    """
    path = Path(folder)
    if not os.path.lexists(path):
        return Path(os.path.realpath(path))
    try:
        return Path(os.path.realpath(path, strict=True))
    except OSError:
        raise MochiError(f"'{path}' is a symbolic link to nothing (or a loop of links), so it names no cache "
                         "folder.") from None


@dataclass
class Survey:
    """What one look at a cache folder proved.

    Attributes:
        bake: The bake's files (the manifest, and every listed file whose bytes match), path → SHA-256.
        leftovers: What a killed bake left and the manifest proves: pending files, announced temporaries.
        foreign: Every other entry, as (name relative to the folder, why it is not Mochi's), by name.
    """

    bake: dict[Path, str] = field(default_factory=dict)
    leftovers: dict[Path, str] = field(default_factory=dict)
    foreign: list[tuple[str, str]] = field(default_factory=list)


def _temporary_target(relative: str, token: str | None) -> str | None:
    """The file a temporary 'DIR/.NAME.tmp-TOKEN' stands for ('DIR/NAME'), when TOKEN is ``token`` and
    NAME one a bake writes; else None."""
    folder, _, name = relative.rpartition("/")
    match = _TEMPORARY.fullmatch(name)
    if token is None or match is None or match.group(2) != token:
        return None
    target = f"{folder}/{match.group(1)}" if folder else match.group(1)
    return target if target == MANIFEST_NAME or is_listed_name(target) else None


def _classify(survey: Survey, folder: Path, relative: str, manifest: dict | None) -> None:
    path = folder / relative
    info = os.lstat(path)
    if stat.S_ISLNK(info.st_mode):
        survey.foreign.append((relative, "a symbolic link"))
        return
    if not stat.S_ISREG(info.st_mode):
        survey.foreign.append((relative, "a folder" if stat.S_ISDIR(info.st_mode) else "not a regular file"))
        return
    if (relative in (LOCK_NAME, OWNER_NAME) and (is_owner_record(path) or info.st_size == 0)) \
            or ("/" not in relative and is_owner_temporary(path)):
        return  # the lock's: an empty lock file (Windows, older engines), an owner record or its temporary
    if manifest is None:
        survey.foreign.append((relative, "not from a Mochi bake"))
        return
    if relative == MANIFEST_NAME:
        survey.bake[path] = file_digest_known(path, info)
        return
    listed = manifest.get("file_digests", {}).get(relative)
    pending = manifest.get("pending", {}).get(relative)
    if listed is not None or pending is not None:
        actual = file_digest_known(path, info)
        if actual == listed:
            survey.bake[path] = actual
        elif actual == pending:
            survey.leftovers[path] = actual
        else:
            survey.foreign.append((relative, "changed since the bake wrote it (its bytes are not the ones its "
                                             "manifest records)"))
        return
    if _temporary_target(relative, manifest.get("temporary_token")) is not None:
        survey.leftovers[path] = file_digest_known(path, info)
        return
    survey.foreign.append((relative, "not from a Mochi bake (its manifest does not list it)"))


def survey_folder(folder: str | os.PathLike, manifest: dict | None) -> Survey:
    """Sort every entry of ``folder`` (and of its ``.resume``/``colliders`` folders) into the bake's, a
    killed bake's leftovers, and foreign.

    Args:
        folder: The cache folder (resolved: ``real_folder``).
        manifest: Its manifest, already checked against its own digest; None when it has none (then
            nothing in it is Mochi's).

    Raises:
        MochiError: the folder cannot be read.
    """
    folder = Path(folder)
    survey = Survey()
    try:
        for entry in sorted(os.scandir(folder), key=lambda e: e.name):
            if entry.name in (HISTORY_FOLDER, COLLIDERS_FOLDER) and entry.is_dir(follow_symlinks=False):
                for inner in sorted(os.scandir(entry.path), key=lambda e: e.name):
                    _classify(survey, folder, f"{entry.name}/{inner.name}", manifest)
            else:
                _classify(survey, folder, entry.name, manifest)
    except OSError as exc:
        raise MochiError(f"Cannot read the cache folder '{folder}': {exc.strerror or exc}.") from None
    return survey


def check_no_foreign(folder: str | os.PathLike, manifest: dict | None, *, action: str = "bake") -> Survey:
    """Refuse a folder that holds anything Mochi cannot prove is this bake's; returns the survey.

    Raises:
        MochiError: naming one foreign entry and why it is not Mochi's.
    """
    survey = survey_folder(folder, manifest)
    if survey.foreign:
        name, why = survey.foreign[0]
        raise MochiError(f"The cache folder '{folder}' holds '{name}', which is {why}; Mochi will not {action} "
                         "into a folder with files it cannot prove it wrote (move that file away, or choose "
                         "an empty or new folder).")
    return survey


def remove_files(folder: Path, files: list[Path]) -> int:
    """Remove ``files`` (proven Mochi's, inside ``folder``), all or nothing; a ``.resume``/``colliders``
    folder emptied by it goes too, the folder itself and every other entry stay.

    Returns:
        The number of files removed.

    Raises:
        MochiError: a file that cannot be removed, naming it (nothing is removed then).
    """
    if not files:
        return 0
    # The manifest goes last: a removal interrupted half-way still has a manifest naming what is left.
    files = sorted(files, key=lambda p: (p.name == MANIFEST_NAME, str(p)))
    aside = folder / f".mochi-removing-{new_token()}"
    try:
        os.mkdir(aside, 0o700)  # created now: a name nobody else's file has
    except OSError as exc:
        raise MochiError(f"Cannot remove the bake in '{folder}': {exc.strerror or exc}; nothing was "
                         "removed.") from None
    moved: list[tuple[Path, Path]] = []
    try:
        for index, path in enumerate(files):
            os.rename(path, aside / str(index))
            moved.append((path, aside / str(index)))
    except OSError as exc:
        failed = path  # before the loop below reuses the name
        for original, put in reversed(moved):
            with contextlib.suppress(OSError):
                os.rename(put, original)
        with contextlib.suppress(OSError):
            aside.rmdir()
        raise MochiError(f"Cannot remove '{failed}' ({exc.strerror or exc}), so nothing of the bake in "
                         f"'{folder}' was removed.") from None
    for _, put in moved:
        put.unlink(missing_ok=True)
    aside.rmdir()
    for sub in sorted({p.parent for p in files} - {folder}):
        with contextlib.suppress(OSError):
            sub.rmdir()  # only when empty, and only a folder this removal took files from
    return len(moved)


def remove_owned_files(folder: str | os.PathLike, manifest: dict | None) -> int:
    """Remove everything of the bake in ``folder`` its manifest proves (``survey_folder``: its files and
    a killed bake's leftovers), all or nothing; foreign entries stay.

    Args:
        manifest: The folder's manifest, already checked against its own digest (None: nothing is
            Mochi's, nothing is removed).

    Returns:
        The number of files removed.

    Raises:
        MochiError: a file that cannot be removed (nothing is removed then), naming it.
    """
    folder = Path(folder)
    survey = survey_folder(folder, manifest)
    return remove_files(folder, [*survey.bake, *survey.leftovers])


def remove_leftovers(folder: str | os.PathLike, manifest: dict) -> int:
    """Remove what a killed bake left that its manifest proves (pending files, announced temporaries),
    before a resume writes those names again.

    Raises:
        MochiError: a leftover that cannot be removed.
    """
    folder = Path(folder)
    return remove_files(folder, list(survey_folder(folder, manifest).leftovers))


def remove_proven(path: Path, expected: str) -> None:
    """Delete ``path`` if it is a regular file whose SHA-256 is ``expected`` (a history file a bake
    retires); anything else there stays."""
    with contextlib.suppress(OSError):
        info = os.lstat(path)
        if stat.S_ISREG(info.st_mode) and file_digest_known(path, info) == expected:
            path.unlink()


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
