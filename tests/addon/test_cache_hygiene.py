"""Caches in Blender: load one baked elsewhere; a render whose cache frame is missing stops, naming it."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import bpy
import numpy as np
import pytest

from .conftest import mochi_module, needs_bpy_module

#: Both bake with the engine's command line in a child Python (a preset bake, as a user makes one).
pytestmark = needs_bpy_module

REPO = Path(__file__).resolve().parents[2]


def _cli_bake(out: Path, frames: int = 3) -> None:
    result = subprocess.run([sys.executable, "-m", "engine.cli.main", "bake", str(REPO / "presets" / "sand_pile.toml"),
                             "--particles", "300", "--frames", str(frames), "--out", str(out), "--no-estimate"],
                            capture_output=True, text=True, cwd=REPO)
    assert result.returncode == 0, result.stderr


def _points(obj, frame: int) -> np.ndarray:
    bpy.context.scene.frame_set(frame)
    geometry = obj.evaluated_get(bpy.context.evaluated_depsgraph_get()).evaluated_geometry()
    cloud = geometry.pointcloud  # valid while ``geometry`` is held
    values = np.empty(len(cloud.points) * 3, np.float32)
    cloud.attributes["position"].data.foreach_get("vector", values)
    return values.reshape(-1, 3)


def test_load_cache_plays_back_frames_baked_on_the_command_line(empty_scene, tmp_path):
    cache = tmp_path / "cli_cache"
    _cli_bake(cache)
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "scene.blend"))
    assert bpy.ops.mochi.load_cache(directory=str(cache)) == {"FINISHED"}
    scene = bpy.context.scene
    assert scene.mochi.cache_directory.startswith("//")  # relative to the saved .blend
    frame = mochi_module("engine.cache").read_frame(cache, 3)
    obj = scene.mochi.playback_object
    points = _points(obj, 3)  # in the object's space
    # A preset bake is Y up; the playback object is turned +90° about X to Blender's Z up.
    assert tuple(round(a, 6) for a in obj.rotation_euler) == (round(np.pi / 2, 6), 0.0, 0.0)
    expected = np.stack([frame["x"], frame["y"], frame["z"]], axis=1)
    order, ref = np.lexsort(points.T), np.lexsort(expected.T)
    np.testing.assert_allclose(points[order], expected[ref], atol=1e-6)
    with pytest.raises(RuntimeError, match="holds no Mochi bake"):
        bpy.ops.mochi.load_cache(directory=str(tmp_path))


def test_missing_cache_frame_is_named_and_stops_a_background_render(empty_scene, tmp_path):
    cache = tmp_path / "cache"
    _cli_bake(cache, frames=4)
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "scene.blend"))
    assert bpy.ops.mochi.load_cache(directory=str(cache)) == {"FINISHED"}
    scene = bpy.context.scene
    cam = bpy.data.objects.new("cam", bpy.data.cameras.new("cam"))
    scene.collection.objects.link(cam)
    scene.camera = cam
    scene.render.resolution_x, scene.render.resolution_y = 32, 24
    scene.render.engine = "BLENDER_WORKBENCH"
    bpy.ops.wm.save_mainfile()
    check = mochi_module("addon.render_check").missing_cache_frame
    scene.frame_set(3)
    assert check(scene) is None
    (cache / "frame_0003.ply").unlink()
    message = check(scene)
    assert message and "cache frame 3" in message and "frame_0003.ply" in message
    scene.frame_set(4)
    assert check(scene) is None
    # `blender -b scene.blend -f 3` through the bpy module, the add-on registered: exit 1, one sentence.
    script = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(REPO / "addon")!r})
        import headless
        sys.path.pop(0)  # addon/'s own folders (ui, operators) must not shadow other modules
        package = headless.load_package()
        package.register()
        import bpy
        bpy.ops.wm.open_mainfile(filepath={str(tmp_path / "scene.blend")!r}, load_ui=False)
        bpy.context.scene.frame_set(3)
        bpy.context.scene.render.filepath = {str(tmp_path / "render")!r}
        bpy.ops.render.render(write_still=True)
        print("RENDERED")
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path)
    assert result.returncode == 1, result.stdout[-2000:] + result.stderr[-2000:]
    assert "needs cache frame 3" in result.stderr and "RENDERED" not in result.stdout
    assert "Traceback" not in result.stderr
