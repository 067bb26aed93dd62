"""The bake time shown before Bake is pressed (addon/pre_bake_estimate.py, addon/ui/status.py): measured
after Pack on the whole scene as Bake packs it, kept while the scene is as measured, and the rough
count-based time otherwise."""

from __future__ import annotations

from .conftest import add_domain, add_source, bpy, mochi_module, select_only


def _scene():
    source = add_source("cube", location=(0.0, 0.0, 1.0), radius=0.08, size=0.8)
    add_domain()
    scene = bpy.context.scene
    scene.mochi.frame_start, scene.mochi.frame_end = 1, 6
    return source, scene


def test_measured_after_pack_until_the_scene_changes(empty_scene):
    estimate = mochi_module("addon.pre_bake_estimate")
    source, scene = _scene()
    select_only(source)
    measurement = estimate.start_measurement(bpy.context)
    assert measurement is not None
    measurement.thread.join(600)
    assert measurement.finished and measurement.error is None, measurement.error
    e = measurement.estimate
    assert e.particle_count > 100 and e.frames == 5 and e.bake_seconds > 0  # frames stepped after frame 1
    # The same count as Bake packs: the scene's own packing.
    settings = mochi_module("addon.snapshot").scene_blender_to_settings(bpy.context, with_cache_folder=False)
    packed = mochi_module("addon.settings").setup_from_settings(settings).model.particle_count
    assert e.particle_count == packed
    assert estimate.measurement_for(bpy.context) is measurement
    mochi_module("addon.bake_state")._scene_changed()  # what Blender's depsgraph handler does on an edit
    source.mochi.friction = 0.9
    assert estimate.measurement_for(bpy.context) is None  # changed since: not shown
    source.mochi.friction = settings.sources[0].friction
    mochi_module("addon.bake_state")._scene_changed()
    assert estimate.measurement_for(bpy.context) is measurement
    scene.mochi.frame_end = 12
    assert estimate.measurement_for(bpy.context) is None  # another frame range
    estimate.stop_measurement()
    assert estimate.measurement_for(bpy.context) is None


def test_the_rough_time_before_any_pack(empty_scene):
    _scene()
    line = mochi_module("addon.ui.status").rough_time_line(bpy.context)
    assert line is not None and line.startswith("Bake time ≈ ") and "Pack measures it" in line


def test_bake_shows_the_estimate_the_panel_showed(empty_scene, tmp_path):
    """One estimate: the panel's measurement after Pack is the one Bake shows (and refines), and the
    count-based figures that come before the next measurement use its cost per grain-step."""
    estimate = mochi_module("addon.pre_bake_estimate")
    source, scene = _scene()
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "scene.blend"))
    select_only(source)
    measurement = estimate.start_measurement(bpy.context)
    measurement.thread.join(600)
    assert measurement.finished and measurement.error is None, measurement.error
    e = measurement.estimate
    engine_estimate = mochi_module("engine.estimate")
    assert engine_estimate.grain_step_seconds()[1]  # measured in this session
    assert engine_estimate.work_seconds(e.particle_count, e.steps_per_frame * e.frames) == \
        __import__("pytest").approx(e.bake_seconds)
    monitor = mochi_module("addon.bake_monitor").start_bake(bpy.context, resume=False)
    outcome = mochi_module("addon.bake_monitor").run_blocking(monitor, tick=0.05)
    assert outcome.level != "ERROR", outcome.message
    assert monitor.job.progress.estimate is e  # taken over, not measured again

    scene.mochi.frame_end = 4  # another frame range: not the measured work, so Bake measures it
    bpy.ops.mochi.free_bake()
    monitor = mochi_module("addon.bake_monitor").start_bake(bpy.context, resume=False)
    mochi_module("addon.bake_monitor").run_blocking(monitor, tick=0.05)
    assert monitor.job.progress.estimate is not e and monitor.job.progress.estimate.frames == 3
