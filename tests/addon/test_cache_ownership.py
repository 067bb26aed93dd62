"""A bake belongs to one file and one scene: Save As, Save Copy, a Full or Linked Copy of a scene each get a
folder of their own and never play, resume or delete the original's; reopening plays what is on disk; a
project moved as a whole keeps its bake; a bake folder that is gone shows 'Not baked'."""

from __future__ import annotations

import shutil
from pathlib import Path

import bpy
import numpy as np
import pytest

from .conftest import mochi_module


def _bake():
    assert bpy.ops.mochi.bake() == {"FINISHED"}


def _frames(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.glob("frame_*.ply"))


def _played_folder(scene) -> str | None:
    """The folder the scene's playback object reads (its modifier's Cache Folder), or None without one."""
    obj = scene.mochi.playback_object
    if obj is None:
        return None
    modifier = obj.modifiers[mochi_module("addon.playback").MODIFIER_NAME]
    return mochi_module("addon.compat").modifier_input_get(modifier, "Cache Folder")


def _state(scene):
    return mochi_module("addon.bake_state").bake_state(bpy.context).kind if scene == bpy.context.scene else None


def _first_positions(folder: Path) -> np.ndarray:
    data = mochi_module("engine.ply").read_points(folder / "frame_0004.ply")
    return np.stack([data["x"], data["y"], data["z"]], axis=1)


def _played_positions(scene, frame: int = 4) -> np.ndarray:
    scene.frame_set(frame)
    obj = scene.mochi.playback_object
    geometry = obj.evaluated_get(bpy.context.evaluated_depsgraph_get()).evaluated_geometry()
    cloud = geometry.pointcloud
    values = np.empty(len(cloud.points) * 3, np.float32)
    cloud.attributes["position"].data.foreach_get("vector", values)
    return values.reshape(-1, 3)


def test_save_as_plays_its_own_bake_never_the_originals(small_scene, tmp_path):
    _bake()
    original = tmp_path / "mochi_scene_Scene"
    frames = _frames(original)
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "copy.blend"))
    scene = bpy.context.scene
    assert _played_folder(scene) == "//mochi_copy_Scene"  # not the original's, before any bake
    assert _state(scene) == "IDLE"
    scene.mochi.gravity = (-9.81, 0.0, 0.0)  # the copy falls sideways
    _bake()
    assert _played_folder(scene) == "//mochi_copy_Scene"
    played = _played_positions(scene)
    copy_frame = _first_positions(tmp_path / "mochi_copy_Scene")
    original_frame = _first_positions(original)
    assert np.allclose(np.sort(played[:, 0]), np.sort(copy_frame[:, 0]), atol=1e-5)
    assert not np.allclose(np.sort(copy_frame[:, 0]), np.sort(original_frame[:, 0]), atol=1e-3)
    assert _frames(original) == frames
    # Delete Bake in the copy deletes the copy's bake only.
    assert bpy.ops.mochi.free_bake() == {"FINISHED"}
    assert _frames(original) == frames and not _frames(tmp_path / "mochi_copy_Scene")


def test_save_copy_writes_a_file_that_plays_its_own_folder(small_scene, tmp_path):
    _bake()
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "snapshot.blend"), copy=True)
    assert _played_folder(small_scene) == "//mochi_scene_Scene"  # the open file still plays its own
    # The written file itself (as a farm without the add-on reads it) plays the copy's own folder.
    with bpy.data.libraries.load(str(tmp_path / "snapshot.blend")) as (_source, written):
        written.objects = [small_scene.mochi.playback_object.name]
    (appended,) = written.objects
    modifier = appended.modifiers[mochi_module("addon.playback").MODIFIER_NAME]
    assert mochi_module("addon.compat").modifier_input_get(modifier, "Cache Folder") == "//mochi_snapshot_Scene"
    bpy.data.objects.remove(appended)
    bpy.ops.wm.open_mainfile(filepath=str(tmp_path / "snapshot.blend"))
    scene = bpy.context.scene
    assert _played_folder(scene) == "//mochi_snapshot_Scene"
    assert _state(scene) == "IDLE"
    assert not scene.objects["Suzanne"].hide_render  # its sources show: nothing baked stands for them
    with pytest.raises(RuntimeError, match="no bake"):
        bpy.ops.mochi.bake_resume()
    assert _frames(tmp_path / "mochi_scene_Scene")


def test_a_full_copy_of_the_scene_bakes_and_deletes_apart(small_scene, tmp_path):
    _bake()
    original = tmp_path / "mochi_scene_Scene"
    frames = _frames(original)
    bpy.ops.scene.new(type="FULL_COPY")
    copy = bpy.context.scene
    assert copy.name == "Scene.001" and copy.mochi.cache_directory == ""
    assert mochi_module("addon.bake_owner").cache_folder(copy) == tmp_path / "mochi_scene_Scene.001"
    assert _state(copy) == "IDLE"
    with pytest.raises(RuntimeError, match="no bake"):
        bpy.ops.mochi.bake_resume()
    with pytest.raises(RuntimeError, match="no Mochi bake"):  # nothing of its own to delete
        bpy.ops.mochi.free_bake()
    assert _frames(original) == frames and small_scene.mochi.playback_object is not None
    _bake()
    assert copy.mochi.bake_token != small_scene.mochi.bake_token
    assert _played_folder(copy) == "//mochi_scene_Scene.001"
    assert _played_folder(small_scene) == "//mochi_scene_Scene"
    assert bpy.ops.mochi.free_bake() == {"FINISHED"}
    assert _frames(original) == frames and not _frames(tmp_path / "mochi_scene_Scene.001")


def test_a_linked_copy_never_deletes_or_repoints_the_originals_playback(small_scene, tmp_path):
    _bake()
    playback = small_scene.mochi.playback_object
    bpy.ops.scene.new(type="LINK_COPY")
    copy = bpy.context.scene
    assert _state(copy) == "IDLE"
    with pytest.raises(RuntimeError, match="no Mochi bake"):  # nothing of its own to delete
        bpy.ops.mochi.free_bake()
    assert small_scene.mochi.playback_object == playback and playback.name in bpy.data.objects
    assert _played_folder(small_scene) == "//mochi_scene_Scene"
    _bake()
    own = copy.mochi.playback_object
    assert own is not None and own != playback
    assert _played_folder(copy) == "//mochi_scene_Scene.001"
    assert _played_folder(small_scene) == "//mochi_scene_Scene"  # the original still plays its own
    assert own.name not in small_scene.objects  # the copy's grains do not show in the original


def test_a_chosen_folder_holding_another_scenes_bake_is_never_played_or_deleted(small_scene, tmp_path):
    small_scene.mochi.cache_directory = "//shared"
    _bake()
    frames = _frames(tmp_path / "shared")
    bpy.ops.scene.new(type="FULL_COPY")
    copy = bpy.context.scene
    mochi_module("addon.playback_owner").follow_all()  # as the update after the copy does
    assert _played_folder(copy) == ""  # the copied playback object plays nothing
    assert _state(copy) == "FOREIGN"
    for operator in (bpy.ops.mochi.bake, bpy.ops.mochi.free_bake, bpy.ops.mochi.bake_resume):
        with pytest.raises(RuntimeError, match="holds the bake of the scene 'Scene'"):
            operator()
    assert _frames(tmp_path / "shared") == frames
    bpy.context.window.scene = small_scene
    assert _played_folder(small_scene) == "//shared" and _state(small_scene) == "BAKED"


def test_a_renamed_scene_keeps_its_chosen_folders_bake(small_scene, tmp_path):
    small_scene.mochi.cache_directory = "//mine"
    _bake()
    small_scene.name = "Shot 010"
    assert _state(small_scene) == "BAKED"


def test_a_file_saved_before_its_bake_reopens_playing_it(small_scene, tmp_path):
    _bake()  # the file on disk was saved before: no playback object in it
    bpy.ops.wm.open_mainfile(filepath=str(tmp_path / "scene.blend"))
    scene = bpy.context.scene
    assert _state(scene) == "BAKED"
    assert _played_folder(scene) == "//mochi_scene_Scene"
    assert len(_played_positions(scene)) > 0


def test_a_moved_project_keeps_its_bake_and_a_missing_folder_is_not_baked(small_scene, tmp_path):
    _bake()
    bpy.ops.wm.save_mainfile()
    moved = tmp_path / "moved"
    moved.mkdir()
    shutil.move(tmp_path / "scene.blend", moved / "scene.blend")
    shutil.move(tmp_path / "mochi_scene_Scene", moved / "mochi_scene_Scene")
    bpy.ops.wm.open_mainfile(filepath=str(moved / "scene.blend"))
    assert _state(bpy.context.scene) == "BAKED"
    assert len(_played_positions(bpy.context.scene)) > 0
    shutil.move(moved / "mochi_scene_Scene", tmp_path / "elsewhere")  # the bake folder is gone
    bpy.ops.wm.open_mainfile(filepath=str(moved / "scene.blend"))
    scene = bpy.context.scene
    assert _state(scene) == "IDLE"
    assert not scene.objects["Suzanne"].hide_render  # the sources show again: nothing stands for them


def test_a_bake_in_the_previous_per_file_folder_is_kept(small_scene, tmp_path):
    small_scene.mochi.cache_directory = "//mochi_scene"  # where the previous version baked
    _bake()
    small_scene.mochi.cache_directory = ""  # as a file of the previous version reads
    bpy.ops.wm.save_mainfile()
    bpy.ops.wm.open_mainfile(filepath=str(tmp_path / "scene.blend"))
    assert bpy.context.scene.mochi.cache_directory == "//mochi_scene"
    assert _state(bpy.context.scene) == "BAKED"
    # Saved under another name, the kept folder is the original's: the copy goes back to its own default.
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "copy.blend"))
    scene = bpy.context.scene
    assert scene.mochi.cache_directory == "" and _played_folder(scene) == "//mochi_copy_Scene"
    assert _state(scene) == "IDLE" and _frames(tmp_path / "mochi_scene")


def test_scene_names_that_no_folder_can_hold_stay_apart(empty_scene, tmp_path):
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "f.blend"))
    owner = mochi_module("addon.bake_owner")
    empty_scene.name = "Shot 1/2"
    first = owner.default_cache_directory(empty_scene)
    empty_scene.name = "Shot 1:2"
    second = owner.default_cache_directory(empty_scene)
    assert first != second and "/" not in first[2:] and ":" not in second
    empty_scene.name = "Scene.001"
    assert owner.default_cache_directory(empty_scene) == "//mochi_f_Scene.001"
