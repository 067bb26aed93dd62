"""The ray-tracing device through Blender: `mochi bake scene.blend --backend rt --rt-device vulkan` passes
the device on to the add-on's bake (addon/headless.py, as `blender -b scene.blend -c mochi bake` runs it),
and a bad device is refused in one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from .conftest import REPO, bpy, mochi_module, needs_bpy_module


def _rt_device_here():
    """Skip unless this Python opens a Vulkan device with ray tracing (slangpy and, in CI, lavapipe)."""
    probe = mochi_module("engine.backends.select").probe_rt("vulkan")
    if not probe.available:
        pytest.skip(probe.text)


@needs_bpy_module
def test_a_blend_bakes_on_rt_with_a_forced_device(small_scene, tmp_path):
    _rt_device_here()
    small_scene.mochi.frame_end = 2
    bpy.ops.wm.save_mainfile()
    out = tmp_path / "cache"
    result = subprocess.run([sys.executable, "-m", "engine.cli.main", "bake", str(tmp_path / "scene.blend"), "--out",
                             str(out), "--backend", "rt", "--rt-device", "vulkan"], capture_output=True, text=True,
                            timeout=600, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert result.returncode == 0, result.stderr[-2000:]
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["backend"] == "rt" and manifest["rt_device_requested"] == "vulkan"
    assert manifest["frames_completed"] == 2


def test_the_command_handler_refuses_a_bad_device_in_one_line(small_scene, capsys):
    cli = mochi_module("addon.cli")
    assert cli.cli_command(["bake", "--rt-device", "bogus"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == ("mochi: error: Unknown ray-tracing device 'bogus' for --rt-device; choose one of vulkan, d3d12, "
                   "metal, cuda.")
    assert cli.cli_command(["bake", "--backend", "cpu", "--rt-device", "vulkan"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "applies to the rt and auto backends only, not to cpu." in err
