"""Blender scene → frozen settings: geometry through foreach_get, velocities from the animation."""

from __future__ import annotations

import numpy as np
import pytest

from .conftest import add_domain, add_source, bpy, mochi_module


def test_snapshot_reads_geometry_settings_and_animated_velocity(empty_scene, tmp_path):
    scene = empty_scene
    scene.render.fps, scene.render.fps_base = 24, 1.0
    cube = add_source("cube", location=(0.0, 0.0, 1.0), radius=0.1, size=0.5)
    cube.mochi.velocity_source = "ANIMATION"
    cube.mochi.density, cube.mochi.fill, cube.mochi.shell_layers = 800.0, "SHELL", 2
    for frame, x, angle in ((1, 0.0, 0.0), (2, 0.5, 0.1)):
        cube.location.x, cube.rotation_euler.z = x, angle
        cube.keyframe_insert("location", frame=frame)
        cube.keyframe_insert("rotation_euler", frame=frame)
    domain = add_domain()
    domain.mochi.open_sides = {"+z"}
    scene.mochi.frame_start, scene.mochi.frame_end = 1, 10
    scene.frame_set(5)
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "s.blend"))

    settings = mochi_module("addon.snapshot").scene_blender_to_settings(bpy.context)
    assert scene.frame_current == 5  # the snapshot put the frame back
    (source,) = settings.sources
    assert source.linear_velocity == pytest.approx((12.0, 0.0, 0.0), abs=1e-4)  # 0.5 m per frame at 24 fps
    assert source.angular_velocity == pytest.approx((0.0, 0.0, 2.4), abs=1e-4)  # 0.1 rad per frame
    assert source.vertices.shape == (8, 3) and source.triangles.shape == (12, 3)
    assert source.shell_layers == 2 and source.density == pytest.approx(800.0)
    np.testing.assert_allclose(source.matrix_world[:3, 3], (0.0, 0.0, 1.0), atol=1e-6)
    assert settings.domain.open_sides == ("+z",)
    assert settings.domain.lo == pytest.approx((-1.5, -1.5, 0.0)) and settings.domain.hi == pytest.approx((1.5, 1.5, 3.0))
    assert settings.simulation.frame_count == 10 and settings.simulation.gravity == pytest.approx((0, 0, -9.81))
    assert settings.simulation.cache_folder == tmp_path / "mochi_s_Scene"


@pytest.mark.parametrize("choice", ["SPRING", "DAMPER"])
def test_friction_model_reaches_the_engine(empty_scene, tmp_path, choice):
    """The Friction setting (static springs or history-free sliding, the one the GPU backends run)
    becomes the engine's friction_model."""
    add_source("cube", location=(0.0, 0.0, 1.0), radius=0.1, size=0.5)
    add_domain()
    empty_scene.mochi.frame_start, empty_scene.mochi.frame_end = 1, 3
    empty_scene.mochi.friction_model = choice
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "s.blend"))
    settings = mochi_module("addon.snapshot").scene_blender_to_settings(bpy.context)
    assert settings.simulation.friction_model == choice.lower()
    setup = mochi_module("addon.settings").setup_from_settings(settings)
    assert setup.model.physics.friction_model == choice.lower()


@pytest.mark.parametrize("rotating", [True, False])
def test_a_turning_source_bakes_grains_that_spin_with_it(empty_scene, tmp_path, rotating):
    """A source given an angular velocity turns as one body: its grains' velocities go round its origin
    and, where grains rotate, each spins at the object's ω; with Rotating Grains off they cannot spin,
    and a note says so (issue 30: never accepted and dropped)."""
    cube = add_source("cube", location=(0.0, 0.0, 1.0), radius=0.1, size=0.5)
    cube.mochi.angular_velocity = (0.0, 0.0, 3.0)
    add_domain()
    empty_scene.mochi.frame_start, empty_scene.mochi.frame_end = 1, 3
    empty_scene.mochi.rotation = rotating
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "s.blend"))
    settings = mochi_module("addon.snapshot").scene_blender_to_settings(bpy.context)
    setup = mochi_module("addon.settings").setup_from_settings(settings)
    spin = setup.state.angular_velocities
    np.testing.assert_allclose(spin, np.tile((0.0, 0.0, 3.0 if rotating else 0.0), (len(spin), 1)), atol=1e-6)
    lever = setup.state.positions.astype(np.float64) - (0.0, 0.0, 1.0)
    np.testing.assert_allclose(setup.state.velocities, np.cross((0.0, 0.0, 3.0), lever), atol=1e-5)
    assert any("do not spin" in note for note in setup.notes) != rotating
