"""A scene saved as a preset (Blender's menu or `mochi preset export`) bakes the same scene from the CLI."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import bpy
import numpy as np
import pytest

from .conftest import mochi_module, needs_bpy_module

REPO = Path(__file__).resolve().parents[2]


def _add_rising_collider():
    bpy.ops.mesh.primitive_plane_add(size=1.5, location=(0.0, 0.0, 0.3))
    plane = bpy.context.object
    plane.name = "Lift"
    plane.mochi.role = "COLLIDER"
    for frame, z in ((1, 0.3), (4, 0.5)):
        plane.location = (0.0, 0.0, z)
        plane.keyframe_insert("location", frame=frame)
    plane.rotation_euler = (0.0, 0.2, 0.1)
    return plane


def _assert_same_scene(blender_setup, preset_setup):
    assert preset_setup.model.physics.to_json() == blender_setup.model.physics.to_json()
    for name in ("radius", "mass", "material_index", "object_id"):
        assert np.array_equal(getattr(preset_setup.model, name), getattr(blender_setup.model, name)), name
    for name in ("positions", "velocities"):
        assert np.array_equal(getattr(preset_setup.state, name), getattr(blender_setup.state, name)), name
    ours, theirs = blender_setup.model, preset_setup.model
    assert (ours.bonds is None) == (theirs.bonds is None)
    if ours.bonds is not None:
        assert np.array_equal(ours.bonds.pairs, theirs.bonds.pairs)
    assert (ours.clumps is None) == (theirs.clumps is None)


def test_saved_preset_resolves_the_same_physics_and_packs_the_same_spheres(small_scene, tmp_path):
    for obj in small_scene.objects:
        if obj.mochi.role == "SOURCE" and obj.name.startswith("Cube"):
            obj.mochi.linear_velocity = (0.5, 0.0, -1.0)
            obj.mochi.angular_velocity = (0.0, 0.0, 3.0)
            # Rolling, Stickiness and Glue travel through the preset too.
            obj.mochi.rolling_friction, obj.mochi.cohesion = 0.2, 5.0e4
            obj.mochi.body, obj.mochi.glue_strength = "GLUED", 3.0e4
        elif obj.mochi.role == "SOURCE":
            obj.mochi.body = "RIGID"
        elif obj.mochi.role == "DOMAIN":
            obj.mochi.wall_rolling_friction, obj.mochi.wall_cohesion = 0.1, 2.0e4
    small_scene.mochi.integrator = "EULER"
    lift = _add_rising_collider()
    lift.mochi.collider_rolling_friction, lift.mochi.collider_cohesion = 0.15, 3.0e4
    snapshot, settings_module = mochi_module("addon.snapshot"), mochi_module("addon.settings")
    presets = mochi_module("addon.operators.presets")
    settings = snapshot.scene_blender_to_settings(bpy.context)
    blender_setup = settings_module.setup_from_settings(settings)
    physics = blender_setup.model.physics
    assert physics.integrator == "euler" and physics.rotation
    assert sorted(b.kind for b in physics.bodies) == ["glued", "rigid"]
    assert blender_setup.model.bonds.count > 0 and blender_setup.model.clumps.count == 1
    assert physics.materials[1].rolling_friction == pytest.approx(0.2) or \
        physics.materials[0].rolling_friction == pytest.approx(0.2)

    path = presets.save_scene_preset(bpy.context, tmp_path / "round" / "round.toml", name="Round trip")
    preset = mochi_module("engine.preset").load_preset(path)
    assert preset.up_axis == "Z" and (path.parent / "meshes").is_dir()
    preset_setup = mochi_module("engine.scene").setup_from_preset(preset)
    _assert_same_scene(blender_setup, preset_setup)
    # The rigid collider moves the same way: its world vertices agree at every captured frame.
    ours, theirs = blender_setup.model.colliders.colliders[0], preset_setup.model.colliders.colliders[0]
    for t in (0.0, 1.0 / 24, 3.0 / 24):
        np.testing.assert_allclose(theirs.vertices_at(t)[0], ours.vertices_at(t)[0], atol=1e-9)
    # and its Rolling and Stickiness
    assert (theirs.rolling_friction, theirs.cohesion) == (ours.rolling_friction, ours.cohesion)
    assert ours.rolling_friction == pytest.approx(0.15) and ours.cohesion == pytest.approx(3.0e4)


def test_a_hertz_scene_saved_as_a_preset_keeps_its_law_and_moduli(small_scene, tmp_path):
    """Contact Law, each source's Young's modulus and Poisson's ratio and the walls' go into the preset
    ([contact] normal, [[materials]], [domain]) and come back: the same resolved physics."""
    small_scene.mochi.contact_law, small_scene.mochi.timestep_mode = "HERTZ", "AUTO"
    moduli = {}
    for number, obj in enumerate(o for o in small_scene.objects if o.mochi.role == "SOURCE"):
        obj.mochi.youngs_modulus, obj.mochi.poisson_ratio = 2.0e7 * (number + 1), 0.2 + 0.1 * number
        moduli[obj.name] = (obj.mochi.youngs_modulus, obj.mochi.poisson_ratio)
    domain = next(o for o in small_scene.objects if o.mochi.role == "DOMAIN")
    domain.mochi.wall_youngs_modulus, domain.mochi.wall_poisson_ratio = 1.0e8, 0.35
    snapshot, settings_module = mochi_module("addon.snapshot"), mochi_module("addon.settings")
    blender_setup = settings_module.setup_from_settings(snapshot.scene_blender_to_settings(bpy.context))
    assert blender_setup.model.physics.contact_normal == "hertz"

    path = mochi_module("addon.operators.presets").save_scene_preset(bpy.context, tmp_path / "hertz" / "hertz.toml",
                                                                     name="Hertz round trip")
    preset = mochi_module("engine.preset").load_preset(path)
    assert preset.contact_normal == "hertz" and preset.stiffness is None
    assert {m["name"]: (m["youngs_modulus"], m["poisson_ratio"]) for m in preset.materials} == moduli
    assert (preset.wall_youngs_modulus, preset.wall_poisson_ratio) == (domain.mochi.wall_youngs_modulus,
                                                                       domain.mochi.wall_poisson_ratio)
    _assert_same_scene(blender_setup, mochi_module("engine.scene").setup_from_preset(preset))


def test_preset_menu_saves_and_removes_a_user_preset(small_scene, tmp_path, monkeypatch):
    presets = mochi_module("addon.operators.presets")
    def user_resource(kind, path="", create=False):  # Blender's, with the user folder under tmp_path
        folder = tmp_path / "user" / kind / path
        if create:
            folder.mkdir(parents=True, exist_ok=True)
        return str(folder) if folder.is_dir() else ""

    monkeypatch.setattr(bpy.utils, "user_resource", user_resource)
    assert bpy.ops.mochi.preset_save(name="Two Sources") == {"FINISHED"}
    saved = presets.user_presets()
    assert [p.stem for p in saved] == ["Two_Sources"]
    assert str(saved[0].parent) in presets.preset_folders()  # listed in the menu beside the shipped ones
    assert bpy.ops.mochi.preset_remove(filepath=str(saved[0])) == {"FINISHED"}
    assert presets.user_presets() == [] and not saved[0].parent.exists()
    with pytest.raises(RuntimeError, match="is not one of your presets"):
        bpy.ops.mochi.preset_remove(filepath=str(REPO / "presets" / "sand_pile.toml"))
    assert (REPO / "presets" / "sand_pile.toml").is_file()


@needs_bpy_module
def test_cli_exports_a_blend_and_bakes_it(small_scene, tmp_path):
    """`mochi preset export scene.blend OUT.toml`, then `mochi bake OUT.toml`: same physics and spheres."""
    blend = Path(bpy.data.filepath)
    out = tmp_path / "cli" / "scene.toml"
    result = subprocess.run([sys.executable, "-m", "engine.cli.main", "preset", "export", str(blend), str(out)],
                            capture_output=True, text=True, cwd=REPO)
    assert result.returncode == 0, result.stdout + result.stderr
    snapshot, settings_module = mochi_module("addon.snapshot"), mochi_module("addon.settings")
    blender_setup = settings_module.setup_from_settings(snapshot.scene_blender_to_settings(bpy.context))
    preset_setup = mochi_module("engine.scene").setup_from_preset(mochi_module("engine.preset").load_preset(out))
    _assert_same_scene(blender_setup, preset_setup)
    again = subprocess.run([sys.executable, "-m", "engine.cli.main", "preset", "export", str(blend), str(out)],
                           capture_output=True, text=True, cwd=REPO)
    assert again.returncode == 0, again.stderr  # its own preset and meshes: replaced without --overwrite
    out.write_text(out.read_text() + "# my note\n")  # now the user's edit
    edited = subprocess.run([sys.executable, "-m", "engine.cli.main", "preset", "export", str(blend), str(out)],
                            capture_output=True, text=True, cwd=REPO)
    assert edited.returncode == 2 and "Traceback" not in edited.stderr, edited.stderr
    assert "exists and Mochi cannot prove it wrote it" in edited.stderr and out.read_text().endswith("# my note\n")
    baked = subprocess.run([sys.executable, "-m", "engine.cli.main", "bake", str(out), "--frames", "2",
                            "--out", str(tmp_path / "cache"), "--no-estimate"], capture_output=True, text=True,
                           cwd=REPO)
    assert baked.returncode == 0, baked.stderr
    manifest = mochi_module("engine.cache").read_manifest(tmp_path / "cache")
    assert manifest["up_axis"] == "Z" and manifest["particle_count"] == blender_setup.model.particle_count
