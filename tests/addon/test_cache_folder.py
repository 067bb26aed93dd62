"""One bake per .blend and scene: the default cache folder is //mochi_<file name>_<scene name>, a folder
holding another file's bake is refused (naming it), Delete Bake names what it deletes, and a folder outside
the project asks."""

from __future__ import annotations

import shutil
from pathlib import Path

import bpy
import pytest

from .conftest import mochi_module


def _bake(scene):
    assert bpy.ops.mochi.bake() == {"FINISHED"}


def test_the_default_cache_folder_is_per_file(small_scene, tmp_path):
    assert small_scene.mochi.cache_directory == ""
    owner = mochi_module("addon.bake_owner")
    assert owner.cache_folder(small_scene) == tmp_path / "mochi_scene_Scene"
    _bake(small_scene)
    manifest = mochi_module("engine.cache").read_manifest(tmp_path / "mochi_scene_Scene")
    assert Path(manifest["blend_file"]) == tmp_path / "scene.blend"
    # A second file in the same folder gets its own folder and bakes beside the first.
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "other.blend"))
    bpy.context.scene.mochi.playback_object = None
    assert owner.cache_folder(bpy.context.scene) == tmp_path / "mochi_other_Scene"
    _bake(bpy.context.scene)
    assert (tmp_path / "mochi_scene_Scene" / "manifest.json").is_file()
    assert (tmp_path / "mochi_other_Scene" / "manifest.json").is_file()


def test_an_unsaved_file_is_asked_to_save(empty_scene):
    with pytest.raises(mochi_module("engine.errors").MochiError, match="Save the .blend file first"):
        mochi_module("addon.bake_owner").cache_folder(empty_scene)


def test_another_files_bake_is_refused_and_never_freed(small_scene, tmp_path):
    _bake(small_scene)
    frames = sorted((tmp_path / "mochi_scene_Scene").glob("frame_*.ply"))
    assert frames
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "copy.blend"))
    scene = bpy.context.scene
    scene.mochi.cache_directory = "//mochi_scene_Scene"  # points at scene.blend's bake
    with pytest.raises(RuntimeError, match=r"holds the bake of '.*scene\.blend'"):
        bpy.ops.mochi.bake()
    with pytest.raises(RuntimeError, match=r"holds the bake of '.*scene\.blend'"):
        bpy.ops.mochi.free_bake()
    with pytest.raises(RuntimeError, match=r"holds the bake of '.*scene\.blend'"):
        bpy.ops.mochi.bake_resume()
    assert sorted((tmp_path / "mochi_scene_Scene").glob("frame_*.ply")) == frames  # untouched


def test_the_owning_file_frees_its_own_bake(small_scene, tmp_path):
    _bake(small_scene)
    assert bpy.ops.mochi.free_bake() == {"FINISHED"}
    assert not list((tmp_path / "mochi_scene_Scene").glob("frame_*.ply"))


def test_a_folder_outside_the_project_is_flagged(small_scene, tmp_path):
    owner = mochi_module("addon.bake_owner")
    assert not owner.is_outside_blend_folder(small_scene)  # the per-file default
    small_scene.mochi.cache_directory = str(tmp_path / "inside")
    assert not owner.is_outside_blend_folder(small_scene)
    small_scene.mochi.cache_directory = "//../elsewhere"  # relative: travels with the project
    assert not owner.is_outside_blend_folder(small_scene)
    outside = tmp_path.parent / f"{tmp_path.name}_outside"
    small_scene.mochi.cache_directory = str(outside)
    assert owner.is_outside_blend_folder(small_scene)
    shutil.rmtree(outside, ignore_errors=True)


def test_delete_bake_asks_naming_the_folder_and_frames(small_scene, tmp_path):
    question = mochi_module("addon.operators.cache").delete_bake_question
    assert question(small_scene) == f"Delete the 0 baked frames in '{tmp_path / 'mochi_scene_Scene'}' from disk?"
    _bake(small_scene)
    assert question(small_scene) == f"Delete the 4 baked frames in '{tmp_path / 'mochi_scene_Scene'}' from disk?"


def test_a_file_baked_into_the_old_shared_folder_keeps_its_bake(small_scene, tmp_path):
    small_scene.mochi.cache_directory = "//mochi_cache"
    _bake(small_scene)
    small_scene.mochi.cache_directory = ""  # as a file saved before the per-file default reads now
    bpy.ops.wm.save_mainfile()
    bpy.ops.wm.open_mainfile(filepath=str(tmp_path / "scene.blend"))
    assert bpy.context.scene.mochi.cache_directory == "//mochi_cache"
    assert mochi_module("addon.bake_owner").cache_folder(bpy.context.scene) == tmp_path / "mochi_cache"
