"""Bake in the worker thread, play back through geometry nodes, cancel, resume, and refused bakes."""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np
import pytest

from .conftest import bpy, mochi_module, scene_state, wait_for


def cache_dir(scene) -> Path:
    return mochi_module("addon.snapshot").cache_folder(scene)


def evaluated_points(obj, frame: int):
    """The playback object's point cloud at scene frame ``frame``: positions, radius, velocity."""
    bpy.context.scene.frame_set(frame)
    geometry = obj.evaluated_get(bpy.context.evaluated_depsgraph_get()).evaluated_geometry()
    cloud = geometry.pointcloud
    n = len(cloud.points)
    out = {}
    for name, width in (("position", 3), ("radius", 1), ("velocity", 3)):
        values = np.empty(n * width, np.float32)
        cloud.attributes[name].data.foreach_get("vector" if width == 3 else "value", values)
        out[name] = values.reshape(n, width) if width == 3 else values
    return out


def bake_and_wait(resume: bool = False):
    """Start a bake as the button does and follow it as its timer does, until the worker stops."""
    monitor_module = mochi_module("addon.bake_monitor")
    monitor = monitor_module.start_bake(bpy.context, resume=resume)
    assert monitor.job.running or monitor.job.progress.finished
    return monitor_module.run_blocking(monitor, tick=0.05)


def frames_on_disk(folder: Path) -> list[int]:
    return sorted(int(p.stem.split("_")[1]) for p in folder.glob("frame_*.ply"))


def test_bake_plays_back_through_geometry_nodes(small_scene):
    outcome = bake_and_wait()
    # The test scene's stiffness lets grains overlap more than 10% when they land: said, not silent.
    assert outcome.level == "WARNING" and "Grains hitting at" in outcome.message and not outcome.cancelled
    folder = cache_dir(small_scene)
    assert frames_on_disk(folder) == [1, 2, 3, 4]
    read_frame = mochi_module("engine.cache").read_frame
    playback = small_scene.mochi.playback_object
    assert playback is not None
    for scene_frame, cache_frame in ((1, 1), (4, 4), (7, 4)):  # later frames hold the last one
        points = evaluated_points(playback, scene_frame)
        expected = read_frame(folder, cache_frame)
        order = np.argsort(points["position"][:, 0] * 1e6 + points["position"][:, 1])
        ref = np.argsort(expected["x"] * 1e6 + expected["y"])
        assert len(points["radius"]) == len(expected["radius"]) > 50
        np.testing.assert_allclose(points["radius"][order], expected["radius"][ref], rtol=1e-6)
        np.testing.assert_allclose(points["velocity"][order],
                                   np.stack([expected[k] for k in ("vx", "vy", "vz")], 1)[ref], rtol=1e-5, atol=1e-6)
    # The grains fall: at the last frame they move down, at the first they rest.
    assert np.all(evaluated_points(playback, 1)["velocity"] == 0.0)
    assert evaluated_points(playback, 4)["velocity"][:, 2].mean() < -0.1


def test_cancel_keeps_complete_frames_and_resume_finishes(small_scene):
    s = small_scene.mochi
    s.frame_end = 400  # far more than can finish before the cancel request lands
    monitor_module = mochi_module("addon.bake_monitor")
    monitor = monitor_module.start_bake(bpy.context, resume=False)
    wait_for(lambda: monitor.job.last_frame_written() >= 2 or monitor.job.progress.finished)
    monitor.job.request_cancel()
    outcome = monitor_module.run_blocking(monitor, tick=0.05)
    assert outcome.level == "WARNING" and "cancelled" in outcome.message
    folder = cache_dir(small_scene)
    done = frames_on_disk(folder)
    manifest = mochi_module("engine.cache").read_manifest(folder)
    assert done == list(range(1, manifest["frames_completed"] + 1)) and 2 <= len(done) < 400
    assert not list(folder.glob(".*.tmp-*"))
    # The playback shows the complete frames (scene frames past them hold the last one).
    last = evaluated_points(small_scene.mochi.playback_object, 400)
    assert len(last["radius"]) == manifest["particle_count"]

    end = len(done) + 2
    s.frame_end = end
    resuming = monitor_module.start_bake(bpy.context, resume=True)
    # From its start, before the worker has read the cache, the resume reports the frames on disk (a
    # redraw in between showed the bake back at frame 0).
    assert (resuming.job.last_frame_written(), resuming.job.progress.frames_done) == (len(done), len(done))
    assert monitor_module.run_blocking(resuming, tick=0.05).level == "INFO"
    assert frames_on_disk(folder) == list(range(1, end + 1))
    resumed = mochi_module("engine.cache").read_frame(folder, end)

    # Bit-identical to a bake that was never interrupted.
    s.cache_directory = "//straight"
    assert bpy.ops.mochi.bake() == {"FINISHED"}
    straight = mochi_module("engine.cache").read_frame(cache_dir(small_scene), end)
    for key in ("x", "y", "z", "vx", "vy", "vz"):
        np.testing.assert_array_equal(resumed[key], straight[key])


def _refused_bake(match: str, operator=None):
    before = scene_state()
    with pytest.raises(RuntimeError, match=match):
        (operator or bpy.ops.mochi.bake)()
    assert scene_state() == before


def test_bake_refuses_while_another_bake_runs(small_scene):
    small_scene.mochi.frame_end = 30
    monitor_module = mochi_module("addon.bake_monitor")
    monitor = monitor_module.start_bake(bpy.context, resume=False)
    try:
        _refused_bake("already running")
        _refused_bake("already running", bpy.ops.mochi.bake_resume)
        _refused_bake("bake is running", bpy.ops.mochi.free_bake)
    finally:
        monitor.job.request_cancel()
        monitor_module.run_blocking(monitor, tick=0.05)


@pytest.fixture
def read_only_folder(tmp_path):
    """A folder nobody may write in; root ignores permission bits, so then a path on procfs."""
    if os.geteuid() == 0:
        yield "/proc/mochi_cache_test"
        return
    folder = tmp_path / "locked"
    folder.mkdir()
    folder.chmod(0o555)
    yield str(folder)
    folder.chmod(0o755)


def test_bake_refuses_a_read_only_cache_folder(small_scene, read_only_folder):
    small_scene.mochi.cache_directory = read_only_folder
    _refused_bake("is not writable")
    assert not Path(read_only_folder, "manifest.json").exists()


def test_bake_refuses_incomplete_scenes(empty_scene, tmp_path):
    from .conftest import add_domain, add_source

    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "empty.blend"))
    _refused_bake("No object in the scene is a Mochi particle source")
    add_source("cube", location=(0, 0, 1), radius=0.1)
    _refused_bake("No object in the scene is the Mochi domain box")
    add_domain()
    bpy.ops.mesh.primitive_plane_add(size=1.0, location=(0, 0, 2))
    bpy.context.object.mochi.role = "SOURCE"  # zero volume: packing fails in the worker
    outcome = bake_and_wait()
    assert outcome.level == "ERROR" and "Plane" in outcome.message
    assert not (tmp_path / "mochi_empty_Scene" / "manifest.json").exists()


def test_bake_refuses_an_unsaved_file_with_a_relative_cache(empty_scene):
    from .conftest import add_domain, add_source

    add_source("cube", location=(0, 0, 1), radius=0.1)
    add_domain()
    _refused_bake("(?i)save the (.blend )?file first")


def test_bake_refuses_to_overwrite_and_free_asks_then_deletes(small_scene):
    small_scene.mochi.frame_end = 2
    assert bpy.ops.mochi.bake() == {"FINISHED"}
    _refused_bake("already holds a bake")
    _refused_bake("already has 2 of 2 frames", bpy.ops.mochi.bake_resume)
    folder = cache_dir(small_scene)
    old_count = len(evaluated_points(small_scene.mochi.playback_object, 2)["radius"])
    assert bpy.ops.mochi.free_bake() == {"FINISHED"}  # EXEC: scripts skip the confirmation
    assert frames_on_disk(folder) == [] and not (folder / "manifest.json").exists()
    assert small_scene.mochi.playback_object is None
    # Baking again into the same files shows the new grains, not a stale import of the old ones
    # (Blender compares file dates to the second, so the new files must be at least a second newer).
    time.sleep(1.1)
    for obj in small_scene.objects:
        if obj.mochi.role == "SOURCE":
            obj.mochi.radius *= 1.5
    assert bpy.ops.mochi.bake("INVOKE_DEFAULT") == {"FINISHED"}  # no window: runs as execute()
    manifest = mochi_module("engine.cache").read_manifest(folder)
    assert manifest["particle_count"] != old_count
    for frame in (1, 2):
        points = evaluated_points(small_scene.mochi.playback_object, frame)
        on_disk = mochi_module("engine.cache").read_frame(folder, frame)
        np.testing.assert_array_equal(np.sort(points["radius"]), np.sort(on_disk["radius"]))


def test_playback_group_for_blender_4_5_matches(small_scene):
    """Blender 4.5 has no Format String node; its Join Strings variant must read the same files."""
    small_scene.mochi.frame_end = 3
    assert bpy.ops.mochi.bake() == {"FINISHED"}
    playback = mochi_module("addon.playback")
    obj = small_scene.mochi.playback_object
    expected = [evaluated_points(obj, f)["position"] for f in (1, 3, 5)]
    compat = mochi_module("addon.compat")
    modifier = obj.modifiers[playback.MODIFIER_NAME]
    inputs = {name: compat.modifier_input_get(modifier, name)
              for name in (playback.INPUT_FOLDER, playback.INPUT_START, playback.INPUT_LAST, playback.INPUT_MATERIAL)}
    modifier.node_group = playback.build_playback_group(use_format_string=False)
    for name, value in inputs.items():
        compat.modifier_input_set(modifier, name, value)
    for frame, reference in zip((1, 3, 5), expected):
        np.testing.assert_array_equal(evaluated_points(obj, frame)["position"], reference)


def test_resume_refuses_a_changed_scene_and_a_locked_folder(small_scene):
    """Resume continues the same bake or refuses, naming the change; a folder another process bakes
    into refuses Resume and Free Bake alike (engine.cache_lock)."""
    small_scene.mochi.frame_end = 2
    assert bpy.ops.mochi.bake() == {"FINISHED"}
    folder = cache_dir(small_scene)
    files = {p.name: p.read_bytes() for p in folder.glob("frame_*.ply")}
    small_scene.mochi.frame_end = 4
    cube = next(o for o in small_scene.objects if o.mochi.role == "SOURCE" and o.name.startswith("Cube"))
    original = cube.mochi.friction
    cube.mochi.friction = 0.9
    outcome = bake_and_wait(resume=True)
    assert outcome.level == "ERROR" and "The scene changed" in outcome.message and "friction" in outcome.message
    assert {p.name: p.read_bytes() for p in folder.glob("frame_*.ply")} == files
    cube.mochi.friction = original
    with mochi_module("engine.cache_lock").CacheLock(folder):
        _refused_bake("in use by process", bpy.ops.mochi.free_bake)
        outcome = bake_and_wait(resume=True)
        assert outcome.level == "ERROR" and "in use by process" in outcome.message
    assert frames_on_disk(folder) == [1, 2]
    assert bpy.ops.mochi.bake_resume() == {"FINISHED"}
    assert frames_on_disk(folder) == [1, 2, 3, 4]


def test_progress_moves_within_frames_and_counts_down(small_scene):
    """The panel and the status bar show the steps inside a frame and the time left (ui/status.py)."""
    small_scene.mochi.frame_end = 4
    small_scene.mochi.substeps = 400  # several chunks of steps per frame
    status = mochi_module("addon.ui.status")
    monitor_module = mochi_module("addon.bake_monitor")
    monitor = monitor_module.start_bake(bpy.context, resume=False)
    seen = []
    while not monitor.poll():
        seen.append(status.progress_of(monitor.job))
        time.sleep(0.005)
    monitor.finish()
    fractions = [f for f, _ in seen]
    assert fractions == sorted(fractions) and all(0.0 <= f <= 1.0 for f in fractions)
    assert any(round(f * 4, 6) % 1 != 0 for f in fractions)  # between two frames, not only on them
    assert any(text.endswith(" left") for _, text in seen)


def test_bake_errors_come_in_the_order_a_user_fixes_them(empty_scene):
    """An unsaved scene with a relative cache folder and no source: the missing source is named first."""
    _refused_bake("No object in the scene is a Mochi particle source")


def test_a_long_bake_shows_its_estimate_and_waits_for_a_go(small_scene):
    """Above the preference's limit (here 0 s) a bake started from the button measures its cost, shows
    the figures and waits: Bake Anyway goes on, Cancel stops it with nothing written."""
    monitor_module, status = mochi_module("addon.bake_monitor"), mochi_module("addon.ui.status")
    folder = cache_dir(small_scene)
    monitor = monitor_module.start_bake(bpy.context, resume=False, confirm_above=0.0)
    wait_for(lambda: monitor.job.progress.awaiting_confirmation or monitor.job.progress.finished)
    progress = monitor.job.progress
    assert progress.awaiting_confirmation and progress.estimate.particle_count > 50
    assert progress.estimate.steps_per_frame == 20 and progress.estimate.bake_seconds > 0
    assert status.progress_of(monitor.job)[1].startswith("Estimated ")
    assert not (folder / "manifest.json").exists()  # nothing is baked before the go
    assert bpy.ops.mochi.bake_confirm() == {"FINISHED"}
    outcome = monitor_module.run_blocking(monitor, tick=0.05)
    assert not outcome.cancelled and frames_on_disk(folder) == [1, 2, 3, 4]

    assert bpy.ops.mochi.free_bake() == {"FINISHED"}
    monitor = monitor_module.start_bake(bpy.context, resume=False, confirm_above=0.0)
    wait_for(lambda: monitor.job.progress.awaiting_confirmation or monitor.job.progress.finished)
    assert bpy.ops.mochi.bake_cancel() == {"FINISHED"}
    outcome = monitor_module.run_blocking(monitor, tick=0.05)
    assert outcome.cancelled and frames_on_disk(folder) == []


def test_resume_refuses_a_re_signed_manifest_whose_physics_are_not_the_scenes(small_scene):
    """Blender's Resume packs the scene again and compares the physics it resolves to with the
    manifest's, so a manifest edited and signed again (its digests recomputed: it has no key) cannot
    change the physics behind the scene's back, even with values in range and an unchanged scene."""
    import json

    small_scene.mochi.frame_end = 2
    assert bpy.ops.mochi.bake() == {"FINISHED"}
    folder = cache_dir(small_scene)
    files = {p.name: p.read_bytes() for p in folder.glob("frame_*.ply")}
    integrity = mochi_module("engine.cache_integrity")
    digest = mochi_module("engine.digest").digest
    manifest_path = folder / "manifest.json"
    data = json.loads(manifest_path.read_text())
    data.pop(integrity.MANIFEST_DIGEST_KEY)
    data["physics"]["materials"][0]["friction"] = 0.123  # in range: only the comparison can refuse it
    data["physics_digest"] = digest(data["physics"])
    manifest_path.write_text(json.dumps(integrity.with_manifest_digest(data)))
    small_scene.mochi.frame_end = 4
    outcome = bake_and_wait(resume=True)
    assert outcome.level == "ERROR" and "physics" in outcome.message and "friction" in outcome.message
    assert {p.name: p.read_bytes() for p in folder.glob("frame_*.ply")} == files
