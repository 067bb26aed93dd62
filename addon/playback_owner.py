"""The playback follows the bake its file and scene own (``addon.bake_owner``), whatever was copied.

A playback object plays one scene's bake and is stamped with that scene's token. After *Save As* or *Save
Copy* its folder is pointed at the new file's own folder before the file is written; after a scene copy
the copy's scene stops playing the original's bake (a Full Copy's own playback object is pointed at the
copy's folder; a Linked Copy shares the original's object, which stays the original's, and a bake of the
copy makes an object of its own). A file opened with its bake on disk plays it; a file whose bake folder
is missing, empty or another's plays nothing, and shows again the sources Mochi hid for that bake.

Runs from Blender's file handlers and, cheaply, after depsgraph updates: a scene is looked at again only
when what decides its folder changed (file, scene name, token, setting, playback object).
"""

from __future__ import annotations

import bpy

from . import bake_owner, compat, playback, visibility

#: Custom property of a playback object: the token of the scene whose bake it plays.
OWNER_TAG = "mochi_scene_token"
#: Custom property of a playback object: the folder chosen for it on purpose (Load Cache, a render or an
#: export of a given cache), played as chosen even when it holds another file's bake (read only: Bake,
#: Resume and Delete Bake still refuse that one).
LOADED_TAG = "mochi_loaded_folder"

#: scene session_uid → what its folder and playback were last followed for (depsgraph updates are many).
_followed: dict[int, tuple] = {}


def owned_playback_object(scene: bpy.types.Scene) -> bpy.types.Object | None:
    """The scene's playback object, or None when it has none or it plays another scene's bake (a Linked
    Copy shares the original's objects)."""
    obj = scene.mochi.playback_object
    if obj is None:
        return None
    stamp = obj.get(OWNER_TAG)
    if stamp and stamp != scene.mochi.bake_token and any(
            other.mochi.playback_object == obj and other.mochi.bake_token == stamp
            for other in bpy.data.scenes if other != scene):
        return None
    return obj


def stamp(obj: bpy.types.Object, scene: bpy.types.Scene) -> None:
    """Mark ``obj`` as playing ``scene``'s bake."""
    if obj.get(OWNER_TAG) != scene.mochi.bake_token:
        obj[OWNER_TAG] = scene.mochi.bake_token


def mark_chosen_folder(scene: bpy.types.Scene, obj: bpy.types.Object, folder: str) -> None:
    """``folder`` (as written into the node) is what ``obj`` plays: tagged as chosen on purpose when it is not
    the scene's own folder, so that the playback keeps it rather than going back to the scene's."""
    if folder != playback.folder_for_node(bake_owner.cache_directory_setting(scene)):
        obj[LOADED_TAG] = folder
    elif LOADED_TAG in obj:
        del obj[LOADED_TAG]


def _modifier(obj):
    modifier = obj.modifiers.get(playback.MODIFIER_NAME) if obj is not None else None
    return modifier if modifier is not None and modifier.node_group is not None else None


def _folder_of(obj) -> str | None:
    modifier = _modifier(obj)
    return None if modifier is None else compat.modifier_input_get(modifier, playback.INPUT_FOLDER)


def _plays_chosen_folder(obj) -> bool:
    return bool(obj.get(LOADED_TAG)) and obj.get(LOADED_TAG) == _folder_of(obj)


def _set_folder(obj, folder: str) -> None:
    modifier = _modifier(obj)
    if modifier is not None and compat.modifier_input_get(modifier, playback.INPUT_FOLDER) != folder:
        compat.modifier_input_set(modifier, playback.INPUT_FOLDER, folder)
        obj.update_tag()


def follow_bake(scene: bpy.types.Scene) -> None:
    """Point the scene's playback at the bake it owns (reads its manifest): its own playback object, its own
    folder, the frames on disk; no playback of another's bake; Mochi's hidden sources shown again when
    there is nothing baked to show instead."""
    obj = scene.mochi.playback_object
    if obj is not None and owned_playback_object(scene) is None:
        scene.mochi.playback_object = obj = None  # the original scene's, shared by a Linked Copy
    if obj is not None and _plays_chosen_folder(obj):
        _followed[scene.session_uid] = _key(scene)
        return  # a cache chosen on purpose (Load Cache, a render of a cache): played as chosen
    _folder, manifest, held_by_another = bake_owner.read_own_manifest(scene)
    if held_by_another and bake_owner.is_kept_default(scene):
        # A default an earlier version kept (//mochi_cache, //mochi_<file name>), now another file's or
        # scene's: this file or scene gets its own default folder instead.
        scene.mochi.cache_directory = ""
        _folder, manifest, held_by_another = bake_owner.read_own_manifest(scene)
    if obj is not None:
        stamp(obj, scene)
        _set_folder(obj, "" if held_by_another else playback.folder_for_node(bake_owner.cache_directory_setting(scene)))
    if manifest is None or int(manifest.get("frames_completed", 0)) < 1:
        show_sources_without_bake(scene)
    elif playback.playback_supported():
        playback.ensure_playback_object(
            scene, bake_owner.cache_directory_setting(scene), last_frame=int(manifest["frames_completed"]),
            start_frame=int(manifest.get("frame_start_scene", scene.mochi.frame_start)),
            up_axis=str(manifest.get("up_axis", "Z")))
    _followed[scene.session_uid] = _key(scene)


def show_sources_without_bake(scene: bpy.types.Scene) -> None:
    """Show again the sources Mochi hid for a bake, except those another scene's playback still stands for."""
    others = [s for s in bpy.data.scenes if s != scene and s.mochi.playback_object is not None]
    shared = {o.name for s in others for o in s.objects}
    visibility.show_hidden_sources(scene, keep=shared)


def _key(scene: bpy.types.Scene) -> tuple:
    obj = scene.mochi.playback_object
    return (bpy.data.filepath, scene.name, scene.mochi.bake_token, scene.mochi.cache_directory,
            obj.name if obj is not None else "", _folder_of(obj))


def follow_all(*, only_changed: bool = False) -> None:
    """Tokens told apart, then every scene's playback follows its own bake (``only_changed``: the scenes
    whose file, name, token, setting or playback changed since they were last followed)."""
    from .bake_job import current_job

    if current_job() is not None:
        return  # the running bake's scene is followed by its monitor; the rest waits for its end
    bake_owner.claim_tokens()
    for scene in bpy.data.scenes:
        if not only_changed or _followed.get(scene.session_uid) != _key(scene):
            follow_bake(scene)


def prepare_bake(scene: bpy.types.Scene) -> None:
    """Before a bake starts: the scene has a token of its own (written into the manifest) and a playback of
    its own, pointed at its own folder (so the bake never shows in, or through, another scene's)."""
    bake_owner.claim_tokens()
    follow_bake(scene)


def point_at_file(blend_file: str) -> None:
    """Before the file is written as ``blend_file`` (Save As, Save Copy): every playback of a default folder
    reads the folder of that file, so the written file never plays the bake of the one it was saved from."""
    if not blend_file:
        return
    for scene in bpy.data.scenes:
        obj = owned_playback_object(scene)
        if obj is not None and not _plays_chosen_folder(obj) and not scene.mochi.cache_directory.strip():
            _set_folder(obj, bake_owner.default_cache_directory(scene, blend_file=blend_file))


@bpy.app.handlers.persistent
def _after_load(*_args):
    bake_owner.forget_session()
    _followed.clear()
    for scene in bpy.data.scenes:
        bake_owner.keep_legacy_cache(scene)
    follow_all()


@bpy.app.handlers.persistent
def _before_save(filepath="", *_args):
    point_at_file(filepath if isinstance(filepath, str) else "")


@bpy.app.handlers.persistent
def _after_save(*_args):
    follow_all()


@bpy.app.handlers.persistent
def _after_update(*_args):
    try:
        follow_all(only_changed=True)
    except (AttributeError, RuntimeError):  # data not writable in this update (a render): the next one follows
        return


_HANDLERS = ((bpy.app.handlers.load_post, _after_load), (bpy.app.handlers.save_pre, _before_save),
             (bpy.app.handlers.save_post, _after_save), (bpy.app.handlers.depsgraph_update_post, _after_update))


def register():
    for handlers, function in _HANDLERS:
        if function not in handlers:
            handlers.append(function)


def unregister():
    _followed.clear()
    for handlers, function in _HANDLERS:
        if function in handlers:
            handlers.remove(function)
