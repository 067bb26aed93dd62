"""No silent changes, plain words: presets and looks say what they changed, the bake panel follows a look
at once, a preview follows its source, an unavailable backend says why and the one thing to do, the
slangpy install installs only what Blender lacks, and the device probes keep the console quiet."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import bpy
import pytest

from .conftest import REPO, add_source, mochi_module, select_only


def test_the_sand_pile_preset_names_every_setting_it_changes(small_scene):
    s = small_scene.mochi
    s.use_scene_range = True
    small_scene.frame_start, small_scene.frame_end = 1, 72
    suzanne = small_scene.objects["Suzanne"]
    presets = mochi_module("addon.operators.presets")
    preset = mochi_module("engine.preset").load_preset(REPO / "presets" / "sand_pile.toml")
    _notes, said = presets.apply_preset_saying(preset, small_scene, suzanne)
    assert said.startswith("Applied the preset 'Sand pile': changed ")
    assert "Use Scene Range on → off" in said and "End 72 → 48" in said
    assert "Stiffness 60,000 → 140,000" in said and "'Suzanne' Friction 0.5 → 0.4" in said
    assert not s.use_scene_range and s.frame_end == 48  # what it said is what it did


def test_a_look_names_what_it_changed_and_the_bake_is_out_of_date_at_once(small_scene):
    assert bpy.ops.mochi.bake() == {"FINISHED"}
    state = mochi_module("addon.bake_state")
    assert state.bake_state(bpy.context).kind == "BAKED" and not state.bake_state(bpy.context).changed
    suzanne = small_scene.objects["Suzanne"]
    said = mochi_module("addon.operators.quick").give_look(small_scene, [suzanne],
                                                          mochi_module("engine.looks").look("gravel"))
    assert said.startswith("Gave 'Suzanne' the Gravel look: changed ") and "'Suzanne' Radius" in said
    # The same frame, no redraw in between: the panel's state follows the look.
    assert state.bake_state(bpy.context).changed


def test_a_preview_follows_its_source(empty_scene):
    cube = add_source("cube", location=(0.0, 0.0, 1.0), radius=0.1, size=1.0)
    select_only(cube)
    assert bpy.ops.mochi.pack() == {"FINISHED"}
    preview = cube.mochi.pack_preview
    before = preview.matrix_world.translation.copy()
    cube.location.x += 2.0
    bpy.context.view_layer.update()
    assert (preview.matrix_world.translation - before).x == pytest.approx(2.0, abs=1e-6)


def test_an_unavailable_backend_is_refused_with_why_and_what_to_do(small_scene, tmp_path):
    probes = mochi_module("addon.backend_probe").backend_availability()
    if "cuda" not in probes.missing:
        pytest.skip("CuPy runs here")
    small_scene.mochi.backend = "cuda"
    with pytest.raises(RuntimeError) as refused:
        bpy.ops.mochi.bake()
    message = str(refused.value)
    assert "pip install" not in message
    assert "Preferences › Add-ons › Mochi" in message or "Choose Automatic or CPU" in message
    assert not (tmp_path / "mochi_scene_Scene").exists()  # refused before anything was written


def test_the_slangpy_install_never_installs_numpy(mochi):
    preferences = mochi_module("addon.preferences")
    command = preferences.slangpy_install_command("/tmp/target")
    assert "--no-deps" in command and not any(word.lower().startswith("numpy") for word in command)


def test_a_missing_pip_says_the_one_thing_to_do(mochi):
    """Run in a Python without site-packages (-S), where pip cannot be imported, as in a Blender without it."""
    path = Path(mochi_module("addon.package_install").__file__)
    code = ("import importlib.util, sys; spec = importlib.util.spec_from_file_location('install', sys.argv[1]); "
            "m = importlib.util.module_from_spec(spec); sys.modules['install'] = m; spec.loader.exec_module(m); "
            "print(m.missing_pip_sentence('slangpy 0.43.1'))")
    result = subprocess.run([sys.executable, "-S", "-c", code, str(path)], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == (f"Blender's Python has no pip to install slangpy 0.43.1 with: run "
                                     f"\"{sys.executable}\" -m ensurepip once in a terminal, then click the "
                                     "install button again.")
    import importlib.util

    has_pip = importlib.util.find_spec("pip") is not None  # Debian's Blender runs a system Python without it
    assert (mochi_module("addon.package_install").missing_pip_sentence("slangpy") is None) == has_pip


def test_native_output_of_a_probe_stays_off_the_console(mochi, capfd):
    quiet = mochi_module("addon.backend_probe").quiet_native_output
    with quiet() as sink:
        os.write(1, b"[ERROR] (rhi) layer: Failed to initialize CUDA driver API.\n")
        os.write(2, b"rhiCudaDriverApiInit(): could not find symbol\n")
    out, err = capfd.readouterr()
    assert "ERROR" not in out + err and "rhiCuda" not in out + err
    os.write(1, b"after\n")
    assert capfd.readouterr().out == "after\n"  # the console is back
    assert sink is not None
