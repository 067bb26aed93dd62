"""The extension as a package: validated, built, installed, enabled and disabled cleanly; presets."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from .conftest import PACKAGE, REPO, bpy, mochi_module, run_extension_tool


def test_manifest_validates():
    result = run_extension_tool("validate", str(REPO))
    assert result.returncode == 0, result.stdout + result.stderr


def test_zip_holds_the_add_on_and_nothing_else(extension_zip):
    result = run_extension_tool("validate", str(extension_zip))
    assert result.returncode == 0, result.stdout + result.stderr
    names = zipfile.ZipFile(extension_zip).namelist()
    tops = {n.split("/")[0] for n in names}
    assert {"__init__.py", "blender_manifest.toml", "addon", "engine", "presets"} <= tops
    assert not tops & {"tests", "benchmarks", "docs", ".venv", ".git", "scripts", "pyproject.toml"}
    assert not [n for n in names if "__pycache__" in n or n.endswith((".pyc", ".nbi", ".nbc"))]


def _registration_footprint() -> dict:
    """What the add-on adds to Blender while enabled."""
    header = bpy.types.STATUSBAR_HT_header
    draw_funcs = header._dyn_ui_initialize() if hasattr(header, "_dyn_ui_initialize") else []
    return {
        "classes": sorted(n for n in dir(bpy.types) if n.startswith("MOCHI_") or n.startswith("Mochi")),
        "scene_prop": hasattr(bpy.types.Scene, "mochi"),
        "object_prop": hasattr(bpy.types.Object, "mochi"),
        "load_pre": sorted(f.__qualname__ for f in bpy.app.handlers.load_pre),
        "status_draw": sorted(getattr(f, "__module__", "") for f in draw_funcs
                              if "mochi" in getattr(f, "__module__", "")),
        "operators": sorted(n for n in dir(bpy.ops.mochi)),
    }


def test_enable_disable_enable_leaves_nothing_behind(mochi):
    enabled = _registration_footprint()
    assert "MOCHI_OT_bake" in enabled["classes"] and enabled["scene_prop"] and enabled["object_prop"]
    assert enabled["status_draw"] and "_stop_bake_before_load" in enabled["load_pre"]
    assert {"bake", "bake_resume", "bake_cancel", "pack", "free_bake", "open_cache_folder",
            "preset_apply"} <= set(enabled["operators"])
    cli = mochi_module("addon")
    assert cli._cli_handle is not None

    bpy.ops.preferences.addon_disable(module=PACKAGE)
    disabled = _registration_footprint()
    assert disabled["classes"] == [] and not disabled["scene_prop"] and not disabled["object_prop"]
    assert disabled["status_draw"] == [] and "_stop_bake_before_load" not in disabled["load_pre"]
    assert mochi_module("addon")._cli_handle is None

    bpy.ops.preferences.addon_enable(module=PACKAGE)
    assert _registration_footprint() == enabled  # nothing doubled


def _presets() -> list[Path]:
    return sorted((REPO / "presets").glob("*.toml"))


@pytest.mark.parametrize("path", _presets(), ids=lambda p: p.stem)
def test_every_preset_applies_through_the_menu_operator(empty_scene, path):
    from .conftest import add_domain

    domain = add_domain()
    preset = mochi_module("engine.preset").load_preset(path)
    fps = (empty_scene.render.fps, empty_scene.render.fps_base)
    result = bpy.ops.mochi.preset_apply(filepath=str(path))
    assert result == {"FINISHED"}
    s = empty_scene.mochi
    # The scene's frame rate stays; the preset's duration is kept in the scene's frames.
    assert (empty_scene.render.fps, empty_scene.render.fps_base) == fps
    assert s.frame_count() == max(1, round(preset.frames * fps[0] / fps[1] / preset.fps))
    # Engine presets are Y up; Blender is Z up: the engine's −Y gravity becomes Blender's −Z.
    gx, gy, gz = preset.gravity
    assert tuple(s.gravity) == pytest.approx((gx, -gz, gy))
    assert domain.mochi.wall_friction == pytest.approx(preset.wall_friction)
    assert s.timestep_mode == ("FIXED" if preset.dt else "SUBSTEPS" if preset.substeps else "AUTO")
    assert s.friction_model == preset.friction_model.upper()
    assert s.contact_law == preset.contact_normal.upper()


@pytest.mark.parametrize("cap", ["clipped", "spring"])
def test_a_hertz_preset_applies_its_law_and_moduli(empty_scene, tmp_path, cap):
    """A preset's Hertz–Mindlin law, its first material's moduli (to the active source) and the walls' (to
    the domain) are applied; a peer's friction cap, which the panel does not hold, is said in a warning,
    never dropped silently."""
    from .conftest import add_domain, add_source

    source = add_source("cube", location=(0.0, 0.0, 1.0), radius=0.1, size=0.5)
    domain = add_domain()
    empty_scene.mochi.use_auto_stiffness = False
    path = tmp_path / "hertz.toml"
    path.write_text(f'[contact]\nnormal = "hertz"\nfriction_cap = "{cap}"\n'
                    '[domain]\nwall_youngs_modulus = 3.0e8\nwall_poisson_ratio = 0.2\n'
                    '[[materials]]\nname = "glass"\nyoungs_modulus = 6.0e7\npoisson_ratio = 0.25\n'
                    '[[emitters]]\ntype = "box"\ncount = 5\nlo = [0.1, 0.1, 0.1]\nhi = [0.5, 0.5, 0.5]\n'
                    'radius = [0.01, 0.01]\n', encoding="utf-8")
    preset = mochi_module("engine.preset").load_preset(path)
    notes = mochi_module("addon.operators.presets").apply_preset(preset, empty_scene, source)
    s = empty_scene.mochi
    assert s.contact_law == "HERTZ" and s.use_auto_stiffness
    assert (source.mochi.youngs_modulus, source.mochi.poisson_ratio) == pytest.approx((6.0e7, 0.25))
    assert (domain.mochi.wall_youngs_modulus, domain.mochi.wall_poisson_ratio) == pytest.approx((3.0e8, 0.2))
    assert not any("normal" in note for note in notes)
    cap_notes = [note for note in notes if "friction_cap" in note]
    assert len(cap_notes) == (cap != "clipped")
    assert all("friction_cap = 'spring'" in note and "mochi bake" in note for note in cap_notes)


def test_the_preset_menu_lists_the_bundled_presets(mochi):
    folders = mochi_module("addon.operators.presets").preset_folders()
    listed = sorted(p for folder in folders for p in Path(folder).glob("*.toml"))
    assert [p.name for p in listed] == [p.name for p in _presets()]
    assert _presets(), "presets/ is empty"


def test_a_broken_preset_is_reported_and_changes_nothing(empty_scene, tmp_path):
    from .conftest import scene_state

    bad = tmp_path / "bad.toml"
    bad.write_text("[time]\ndt = -1\n", encoding="utf-8")
    before = scene_state()
    with pytest.raises(RuntimeError, match="bad.toml"):
        bpy.ops.mochi.preset_apply(filepath=str(bad))
    assert scene_state() == before
