"""Which folder a scene bakes into, and whose bake a folder holds: a bake belongs to one .blend and one scene.

The default folder names both, beside the .blend: ``//mochi_<file name>_<scene name>``, so a file saved
under another name (Save As, Save Copy) and a copied scene (Full Copy, Linked Copy) each get a folder of
their own, as Blender's own ``//blendcache_<file name>`` does. A folder the artist chose stays their
choice, but whose bake it holds is checked before anything plays, resumes or deletes it: the manifest
records the .blend (``blend_file``), the scene's name (``blender_scene``), a random token the scene keeps
(``blender_scene_token``) and the folder as seen from the .blend (``cache_folder_from_blend``).

A copied scene copies the token with the other settings, so the token is made unique again as soon as a
copy shows up (``claim_tokens``): the scene that keeps it is the one that held it first in this session,
or, in a file opened with the copy already made, the one whose name the token was given under. A project
moved as a whole (the .blend and its folder together) keeps its bake: the manifest's file has the same
name and sees the folder at the same place. Nothing here reads more than a manifest.
"""

from __future__ import annotations

import hashlib
import os
import uuid
from pathlib import Path

import bpy

from ..engine.errors import MochiError
from .settings import RELATIVE_FOLDER_KEY, TOKEN_KEY, folder_from_blend

#: The default cache folder's prefix, as Blender's own //blendcache_<name>.
DEFAULT_CACHE_PREFIX = "mochi_"
#: Default folders of earlier versions: one folder for every .blend, then one per .blend.
LEGACY_CACHE_DIRECTORY = "//mochi_cache"

#: token → session_uid of the scene that held it first in this session (a copy shows up with the same token).
_token_holders: dict[str, int] = {}


#: Characters no folder name may hold on some system (Windows' reserved ones, the separators).
_FORBIDDEN_IN_NAMES = set('<>:"/\\|?*')


def folder_name_part(name: str) -> str:
    """``name`` as part of a folder name: kept when every system can hold it, else cleaned and told apart by a
    short hash of the name ('Shot 1/2' → 'Shot 1_2_3f9a1c'), so two scene names never clean to one folder."""
    clean = "".join("_" if c in _FORBIDDEN_IN_NAMES or ord(c) < 32 else c for c in name).rstrip(". ")
    if clean == name:
        return name
    return f"{clean}_{hashlib.sha1(name.encode()).hexdigest()[:6]}"


def default_cache_directory(scene: bpy.types.Scene | None = None, *, blend_file: str | None = None) -> str:
    """``//mochi_<blend file stem>_<scene name>``, or '' when the file is unsaved (it has no name to put a
    bake beside). ``blend_file``: the file being saved (default: the open one)."""
    blend_file = bpy.data.filepath if blend_file is None else blend_file
    if not blend_file:
        return ""
    scene = scene if scene is not None else bpy.context.scene
    return f"//{DEFAULT_CACHE_PREFIX}{Path(blend_file).stem}_{folder_name_part(scene.name)}"


def cache_directory_setting(scene: bpy.types.Scene) -> str:
    """The cache folder as the scene means it: its own setting, or the file's and scene's default when empty."""
    return scene.mochi.cache_directory.strip() or default_cache_directory(scene)


def cache_folder(scene: bpy.types.Scene) -> Path:
    """Absolute cache folder of a scene.

    Raises:
        MochiError: the folder is relative to an unsaved .blend (or is the default of one).
    """
    raw = cache_directory_setting(scene)
    if not raw:
        raise MochiError("Save the .blend file first: its bake goes beside it in 'mochi_<file name>_<scene name>' "
                         "(or choose a cache folder in the Mochi bake panel).")
    if raw.startswith("//") and not bpy.data.filepath:
        raise MochiError("The cache folder is relative to the .blend file; save the file first or "
                         "choose an absolute folder.")
    return Path(os.path.normpath(bpy.path.abspath(raw)))


def same_file(a: str, b: str) -> bool:
    """Whether two paths name the same file (as far as the names tell; the files may be gone)."""
    return os.path.normcase(os.path.realpath(a)) == os.path.normcase(os.path.realpath(b))


def _is_this_file(manifest: dict, folder: Path) -> bool:
    """Whether the manifest's .blend is the open one, or the open one moved with its folder (same file name,
    the folder at the same place beside it)."""
    owner = str(manifest.get("blend_file") or "")
    if not owner:
        return True  # a bake from the command line names no file: the scene that points at it plays it
    here = bpy.data.filepath
    if not here:
        return False
    if same_file(owner, here):
        return True
    if os.path.basename(owner) != os.path.basename(here):
        return False
    recorded = manifest.get(RELATIVE_FOLDER_KEY)
    if isinstance(recorded, str) and recorded:
        return recorded == folder_from_blend(folder, here)
    home = Path(os.path.realpath(os.path.dirname(here)))  # older bakes: a folder inside the project
    return home in Path(os.path.realpath(folder)).parents


def _is_this_scene(manifest: dict, scene: bpy.types.Scene) -> bool:
    """Whether the manifest's scene is ``scene``: the scene holding its token alone (even renamed); with no
    scene holding it (an older bake, a token lost to Undo) or two (a copy not yet told apart), the one with
    its name."""
    token, name = manifest.get(TOKEN_KEY), manifest.get("blender_scene")
    holders = [s for s in bpy.data.scenes if s.mochi.bake_token == token] if isinstance(token, str) and token else []
    if holders == [scene]:
        return True
    if holders and scene not in holders:
        return False  # another scene of this file holds the token: the bake is that scene's
    return not isinstance(name, str) or not name or name == scene.name


def bake_owner_problem(folder: Path, manifest: dict | None, scene: bpy.types.Scene) -> str:
    """'' when ``folder`` holds no bake or a bake of this file and scene; else the sentence that says whose it is."""
    if not manifest:
        return ""
    if not _is_this_file(manifest, folder):
        return (f"The cache folder '{folder}' holds the bake of '{manifest.get('blend_file')}'; choose another "
                "cache folder for this file (an empty field gives it its own).")
    if not _is_this_scene(manifest, scene):
        return (f"The cache folder '{folder}' holds the bake of the scene '{manifest.get('blender_scene')}'; "
                f"choose another cache folder for '{scene.name}' (an empty field gives it its own).")
    return ""


def check_bake_owner(folder: Path, manifest: dict | None, scene: bpy.types.Scene | None = None) -> None:
    """Refuse a cache folder that holds the bake of another .blend file or scene, naming it: baking, resuming
    or freeing it would overwrite or delete that file's grains.

    Raises:
        MochiError: the manifest names another .blend file or scene.
    """
    problem = bake_owner_problem(folder, manifest, scene if scene is not None else bpy.context.scene)
    if problem:
        raise MochiError(problem)


def read_own_manifest(scene: bpy.types.Scene) -> tuple[Path | None, dict | None, bool]:
    """(folder, manifest, foreign) of the scene's bake: the manifest is None when the folder is missing, holds
    no bake, holds another file's or scene's (then ``foreign`` is True) or cannot be read (damaged: not
    foreign, the bake panel says what is wrong with it)."""
    from ..engine.cache import read_manifest

    try:
        folder = cache_folder(scene)
        manifest = read_manifest(folder) if folder.is_dir() else None
    except MochiError:
        return None, None, False
    if manifest is not None and bake_owner_problem(folder, manifest, scene):
        return folder, None, True
    return folder, manifest, False


def keep_legacy_cache(scene: bpy.types.Scene) -> bool:
    """A scene baked into an earlier version's default folder (//mochi_cache, then //mochi_<file name>) whose
    manifest names this file and scene keeps it: its empty setting becomes that folder. True when it did."""
    from ..engine.cache import read_manifest

    if scene.mochi.cache_directory.strip() or not bpy.data.filepath:
        return False
    if (Path(bpy.path.abspath(default_cache_directory(scene))) / "manifest.json").exists():
        return False
    for raw in (f"//{DEFAULT_CACHE_PREFIX}{Path(bpy.data.filepath).stem}", LEGACY_CACHE_DIRECTORY):
        folder = Path(bpy.path.abspath(raw))
        try:
            manifest = read_manifest(folder) if folder.is_dir() else None
        except MochiError:
            continue
        if manifest and manifest.get("blend_file") and not bake_owner_problem(folder, manifest, scene):
            scene.mochi.cache_directory = scene.mochi.kept_cache_directory = raw
            return True
    return False


def is_kept_default(scene: bpy.types.Scene) -> bool:
    """Whether the scene's cache folder setting is an earlier version's default that ``keep_legacy_cache``
    wrote (not a folder the artist chose)."""
    kept = scene.mochi.kept_cache_directory
    return bool(kept) and scene.mochi.cache_directory == kept


def is_outside_blend_folder(scene: bpy.types.Scene) -> bool:
    """Whether the scene bakes into an absolute folder outside the .blend's own folder (a file opened from
    elsewhere could then write or delete files anywhere): Bake asks first."""
    raw = cache_directory_setting(scene)
    if not raw or raw.startswith("//") or not bpy.data.filepath:
        return False
    try:
        folder = cache_folder(scene)
    except MochiError:
        return False
    home = Path(os.path.realpath(os.path.dirname(bpy.data.filepath)))
    target = Path(os.path.realpath(folder))
    return target != home and home not in target.parents


def claim_tokens() -> list[bpy.types.Scene]:
    """Give every scene a token of its own; returns the scenes whose token changed (the copies).

    Among scenes sharing a token, the one that held it first in this session keeps it, else the one the token
    was given under (its name), else the first by name; the others get new tokens.
    """
    changed = []
    by_token: dict[str, list[bpy.types.Scene]] = {}
    for scene in bpy.data.scenes:
        if not scene.mochi.bake_token:
            _new_token(scene)
            continue
        by_token.setdefault(scene.mochi.bake_token, []).append(scene)
    for token, scenes in by_token.items():
        keeper = _keeper(token, scenes)
        _token_holders[token] = keeper.session_uid
        for scene in scenes:
            if scene != keeper:
                _new_token(scene)
                changed.append(scene)
    return changed


def _keeper(token: str, scenes: list[bpy.types.Scene]) -> bpy.types.Scene:
    holder = _token_holders.get(token)
    for rule in (lambda s: s.session_uid == holder, lambda s: s.name == s.mochi.bake_token_scene):
        found = [s for s in scenes if rule(s)]
        if len(found) == 1:
            return found[0]
    return min(scenes, key=lambda s: s.name)


def _new_token(scene: bpy.types.Scene) -> None:
    scene.mochi.bake_token = uuid.uuid4().hex
    scene.mochi.bake_token_scene = scene.name
    _token_holders[scene.mochi.bake_token] = scene.session_uid


def forget_session() -> None:
    """A file was loaded: the session's holders belong to the old one."""
    _token_holders.clear()
