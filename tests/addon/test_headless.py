"""Headless: `mochi bake scene.blend` through addon/headless.py, the `-c mochi` command handler, and
renders of a baked .blend in a Blender without the add-on."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from .conftest import bpy, INSIDE_BLENDER, mochi_module, needs_bpy_module, REPO

HEADLESS = REPO / "addon" / "headless.py"


def run_python(*args: str, timeout: float = 300, env: dict | None = None) -> subprocess.CompletedProcess:
    """Run this Python (which has the bpy module) in a fresh process."""
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})}, cwd=REPO)


def run_blender_script(script: str, *, user_folder: Path) -> subprocess.CompletedProcess:
    """Run ``script`` in a fresh Blender (the bpy module, or this Blender executable) without our add-on."""
    env = {"BLENDER_USER_RESOURCES": str(user_folder)}
    if INSIDE_BLENDER:
        return subprocess.run([bpy.app.binary_path, "-b", "--factory-startup", "--python-exit-code", "1",
                               "--python-expr", script], capture_output=True, text=True, timeout=300,
                              env={**os.environ, **env})
    return run_python("-c", script, env=env)


@pytest.fixture
def saved_scene(small_scene, tmp_path) -> Path:
    small_scene.mochi.frame_end = 3
    path = tmp_path / "scene.blend"
    bpy.ops.wm.save_mainfile(filepath=str(path))
    return path


@needs_bpy_module
def test_headless_bake_of_a_saved_blend(saved_scene, tmp_path):
    result = run_python(str(HEADLESS), "bake", str(saved_scene), "--backend", "cpu")
    assert result.returncode == 0, result.stderr[-2000:]
    lines = [l for l in result.stdout.splitlines() if l.startswith("Mochi: frame")]
    assert [l.split()[2] for l in lines] == ["1", "2", "3"]  # a line per frame
    folder = tmp_path / "mochi_scene_Scene"
    assert sorted(p.name for p in folder.glob("frame_*.ply")) == ["frame_0001.ply", "frame_0002.ply",
                                                                  "frame_0003.ply"]
    manifest = mochi_module("engine.cache").read_manifest(folder)
    assert manifest["up_axis"] == "Z" and manifest["frames_completed"] == 3
    bpy.ops.wm.open_mainfile(filepath=str(saved_scene), load_ui=False)  # saved with its playback object
    assert bpy.context.scene.mochi.playback_object is not None


def test_a_baked_blend_renders_without_the_add_on(saved_scene, tmp_path, tmp_path_factory):
    """The node group and paths live in the .blend: a Blender that never had Mochi renders it with Cycles."""
    assert mochi_module("addon.cli").cli_command(["bake"]) == 0  # saves the .blend
    image = tmp_path / "render.png"
    script = textwrap.dedent(f"""
        import bpy
        assert not [m for m in bpy.context.preferences.addons.keys() if "mochi" in m]
        bpy.ops.wm.open_mainfile(filepath={str(saved_scene)!r}, load_ui=False)
        scene = bpy.context.scene
        scene.frame_set(3)
        playback = next(o for o in scene.objects if o.name.startswith("Mochi Playback"))
        geometry = playback.evaluated_get(bpy.context.evaluated_depsgraph_get()).evaluated_geometry()
        print("POINTS", len(geometry.pointcloud.points))
        cam = bpy.data.objects.new("cam", bpy.data.cameras.new("cam"))
        scene.collection.objects.link(cam)
        cam.location = (0.0, -6.0, 1.5); cam.rotation_euler = (1.45, 0.0, 0.0)
        scene.camera = cam
        light = bpy.data.objects.new("sun", bpy.data.lights.new("sun", "SUN"))
        scene.collection.objects.link(light)
        scene.render.engine = "CYCLES"; scene.cycles.samples = 4; scene.cycles.use_denoising = False
        scene.render.resolution_x, scene.render.resolution_y = 96, 64
        scene.render.filepath = {str(image)!r}
        bpy.ops.render.render(write_still=True)
    """)
    render = run_blender_script(script, user_folder=tmp_path_factory.mktemp("no-addon-user"))
    assert render.returncode == 0, render.stderr[-2000:]
    count = mochi_module("engine.cache").read_manifest(tmp_path / "mochi_scene_Scene")["particle_count"]
    assert f"POINTS {count}" in render.stdout
    assert _png_pixels(image).std() > 0.01  # grains in front of the background, not an empty frame


def _png_pixels(path: Path) -> np.ndarray:
    image = bpy.data.images.load(str(path))
    try:
        pixels = np.empty(image.size[0] * image.size[1] * image.channels, np.float32)
        image.pixels.foreach_get(pixels)
    finally:
        bpy.data.images.remove(image)
    return pixels


@needs_bpy_module
def test_headless_bake_failure_is_one_sentence(empty_scene, tmp_path):
    path = tmp_path / "nothing.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(path))
    result = run_python(str(HEADLESS), "bake", str(path))
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1] == (
        "mochi: error: No object in the scene is a Mochi particle source; set one in Physics > Mochi.")
    assert "Traceback" not in result.stderr
    missing = run_python(str(HEADLESS), "bake", str(tmp_path / "missing.blend"))
    assert missing.returncode == 2 and "does not exist" in missing.stderr and "Traceback" not in missing.stderr


def test_cli_command_handler_bakes_the_open_file(saved_scene, tmp_path, capsys):
    """What `blender -b scene.blend -c mochi bake --frames 2` runs once Blender has loaded the file."""
    handler = mochi_module("addon.cli").cli_command
    assert handler(["bake", "--frames", "2"]) == 0
    assert "Mochi: frame 2 of 2 written" in capsys.readouterr().out
    assert len(list((tmp_path / "mochi_scene_Scene").glob("frame_*.ply"))) == 2
    assert handler(["bake", "--resume", "--frames", "3"]) == 0
    out = capsys.readouterr().out
    assert "frame 3 of 3 written" in out and "frame 2 of" not in out
    assert len(list((tmp_path / "mochi_scene_Scene").glob("frame_*.ply"))) == 3
    assert handler(["bake"]) == 2
    assert "already holds a bake" in capsys.readouterr().err


@needs_bpy_module
def test_render_preview_of_a_cache(saved_scene, tmp_path):
    assert mochi_module("addon.cli").cli_command(["bake", "--frames", "2"]) == 0
    image = tmp_path / "preview.png"
    result = run_python(str(HEADLESS), "render-preview", str(tmp_path / "mochi_scene_Scene"), "--frame", "2",
                        "--out", str(image), "--samples", "4", "--resolution", "96", "64")
    assert result.returncode == 0, result.stderr[-2000:]
    assert _png_pixels(image).std() > 0.01
    bad = run_python(str(HEADLESS), "render-preview", str(tmp_path / "mochi_scene_Scene"), "--frame", "9",
                     "--out", str(image))
    assert bad.returncode == 2 and "Frame 9 is not in the cache" in bad.stderr and "Traceback" not in bad.stderr
