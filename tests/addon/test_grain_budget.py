"""Checks before work: Pack and Bake ask before more grains than the budget, naming the objects with
the count, memory and time; Pack's report gives the count and a bake time; a benchmark preset of huge
step counts asks before it is applied; scripts (EXEC_DEFAULT) are never asked."""

from __future__ import annotations

import re

import pytest

from .conftest import PACKAGE, add_domain, add_source, bpy, mochi_module, select_only


@pytest.fixture
def preferences(mochi):
    """Mochi's add-on preferences, put back as they were after the test."""
    prefs = bpy.context.preferences.addons[PACKAGE].preferences
    before = (prefs.confirm_grains, prefs.confirm_minutes)
    yield prefs
    prefs.confirm_grains, prefs.confirm_minutes = before


def _count_in(message: str) -> int:
    return int(re.search(r"About ([\d,]+) grains", message).group(1).replace(",", ""))


def test_pack_asks_above_the_budget_with_count_memory_and_time(empty_scene, preferences):
    pack = mochi_module("addon.operators.pack")
    budget = mochi_module("engine.budget")
    cube = add_source("cube", location=(0.0, 0.0, 1.0), radius=0.02, size=1.0)
    monkey = add_source("monkey", location=(3.0, 0.0, 1.0), radius=0.2, size=1.0)
    select_only(cube, monkey)
    forecast = mochi_module("addon.grain_budget").forecast_sources(bpy.context, [cube, monkey])
    assert forecast.particle_count > 20_000  # a 1 m cube of 2 cm grains

    preferences.confirm_grains = forecast.particle_count  # at the budget: no question
    assert pack.pack_confirmation(bpy.context) is None
    preferences.confirm_grains = 0  # never ask
    assert pack.pack_confirmation(bpy.context) is None

    preferences.confirm_grains = 10_000
    message = pack.pack_confirmation(bpy.context)
    assert message is not None
    assert _count_in(message) == forecast.particle_count
    assert message.index("'Cube'") < message.index("'Suzanne'")  # named, the largest first
    assert "over the budget of 10,000" in message
    # The memory of the engine's state and springs for that count.
    assert forecast.memory_bytes == budget.grain_bytes(forecast.particle_count)
    memory = mochi_module("addon.grain_budget").format_bytes(budget.grain_bytes(forecast.particle_count))
    assert f"about {memory} of memory" in message
    assert "measured when you press Bake" in message  # 'auto' without a domain: no rough figure

    scene = bpy.context.scene
    scene.mochi.timestep_mode, scene.mochi.substeps = "SUBSTEPS", 200
    scene.mochi.frame_start, scene.mochi.frame_end = 1, 101
    message = pack.pack_confirmation(bpy.context)
    seconds = mochi_module("engine.estimate").work_seconds(forecast.particle_count, 100 * 200)  # frame 1: not stepped
    assert mochi_module("addon.grain_budget").forecast_sources(bpy.context, [cube, monkey]).rough_seconds == seconds
    duration = mochi_module("addon.grain_budget").format_duration(seconds)
    assert f"a bake of 100 frames at 200 steps each takes roughly {duration} on a CPU" in message


def test_pack_from_a_script_is_never_asked_and_reports_count_and_time(empty_scene, preferences, capfd):
    pack = mochi_module("addon.operators.pack")
    cube = add_source("cube", location=(0.0, 0.0, 1.0), radius=0.1, size=1.0)
    select_only(cube)
    preferences.confirm_grains = 10
    assert pack.pack_confirmation(bpy.context) is not None  # the Pack button would ask
    scene = bpy.context.scene
    scene.mochi.timestep_mode, scene.mochi.substeps = "SUBSTEPS", 20_000
    scene.mochi.frame_start, scene.mochi.frame_end = 1, 25
    assert bpy.ops.mochi.pack() == {"FINISHED"}  # EXEC_DEFAULT: packed without a question
    count = len(cube.mochi.pack_preview.data.vertices)
    report = pack.pack_report(scene, [("Cube", count)])
    assert report.startswith(f"Packed 'Cube' into {count:,} spheres")
    duration = mochi_module("addon.grain_budget").format_duration(
        mochi_module("engine.estimate").work_seconds(count, 24 * 20_000))
    assert f"a bake of 24 frames at 20,000 steps each takes roughly {duration}" in report
    assert f"Info: {report}" in capfd.readouterr().out  # what the operator reported (background mode prints it)


def test_bake_asks_above_the_budget_naming_the_sources(small_scene, preferences):
    bake = mochi_module("addon.operators.bake")
    forecast = mochi_module("addon.grain_budget").forecast_sources(
        bpy.context, [o for o in bpy.context.scene.objects if o.mochi.role == "SOURCE"])
    preferences.confirm_grains = forecast.particle_count
    assert bake.bake_confirmation(bpy.context) is None
    preferences.confirm_grains = forecast.particle_count - 1
    title, message = bake.bake_confirmation(bpy.context)
    assert title == f"Bake {forecast.particle_count:,} Grains?"
    assert _count_in(message) == forecast.particle_count
    assert "'Suzanne'" in message and "'Cube'" in message
    assert "a bake of 3 frames at 20 steps each" in message  # small_scene: frames 1–4, 20 substeps
    assert "outside the .blend's folder" not in message


def test_bake_counts_every_source_of_the_scene_not_the_selection(small_scene, preferences):
    bake = mochi_module("addon.operators.bake")
    select_only(add_domain(size=4.0))
    preferences.confirm_grains = 1
    _title, message = bake.bake_confirmation(bpy.context)
    assert "'Suzanne'" in message and "'Cube'" in message


def _preset(name: str):
    from pathlib import Path

    return mochi_module("engine.preset").load_preset(Path(mochi_module("engine.resources").data_dir("presets"))
                                                     / f"{name}.toml")


def test_a_benchmark_preset_of_huge_step_counts_asks_first(empty_scene, preferences):
    presets = mochi_module("addon.operators.presets")
    scene = bpy.context.scene
    scene.render.fps, scene.render.fps_base = 24, 1.0
    preferences.confirm_minutes = 30.0
    large = _preset("changing_radii_large")  # dt 5e-8 s: 833,333 steps a frame at 24 fps, 100,000 grains
    message = presets.preset_confirmation(bpy.context, large)
    assert message is not None
    assert "2 frames at 833,333 steps each (1,666,666 steps)" in message
    assert "100,000 grains of the preset's own emitters" in message
    assert "refuses more than 100,000 steps per frame" in message
    assert presets.preset_confirmation(bpy.context, _preset("sand_pile")) is None  # 'auto' time step
    preferences.confirm_minutes = 0.0  # never ask
    assert presets.preset_confirmation(bpy.context, large) is None

    # With a source in the scene its grains count, not the preset's.
    preferences.confirm_minutes = 30.0
    add_source("cube", location=(0.0, 0.0, 1.0), radius=0.1, size=1.0)
    assert presets.preset_confirmation(bpy.context, large) is None  # a few hundred grains: ~minutes
    preferences.confirm_minutes = 0.5
    assert "grains of the scene's sources" in presets.preset_confirmation(bpy.context, large)

    # A script applies it without a question.
    assert bpy.ops.mochi.preset_apply(filepath=large.source) == {"FINISHED"}
    assert scene.mochi.timestep_mode == "FIXED" and scene.mochi.dt == pytest.approx(5e-8)


def test_bake_asks_once_about_both_grains_and_a_folder_outside_the_project(small_scene, preferences,
                                                                         tmp_path_factory):
    bake = mochi_module("addon.operators.bake")
    small_scene.mochi.cache_directory = str(tmp_path_factory.mktemp("elsewhere"))
    preferences.confirm_grains = 0
    title, message = bake.bake_confirmation(bpy.context)
    assert title == "Bake Outside the Project?"
    assert "outside the .blend's folder" in message and message.endswith("Bake there?")
    assert "grains" not in message
    preferences.confirm_grains = 1
    title, message = bake.bake_confirmation(bpy.context)
    assert title.endswith("Grains?") and "over the budget of 1" in message
    assert "outside the .blend's folder" in message and message.endswith("Bake there?")


@pytest.mark.parametrize("case", ["small_scene", "high_bouncy_suzanne", "hertz"])
def test_auto_steps_before_packing_are_near_the_engines_choice_after(small_scene, case, capfd):
    """The 'auto' steps per frame the dialogs assume, from the grain sizes and the fall to the floor,
    against those the engine chooses for the packed grains (with Hertz–Mindlin, from the moduli)."""
    scene = small_scene
    if case == "hertz":
        scene.mochi.contact_law = "HERTZ"
        for obj in scene.objects:
            if obj.mochi.role == "SOURCE" and obj.name.startswith("Cube"):
                obj.mochi.youngs_modulus = 4.0e7  # the stiffer source sets the step
    if case == "high_bouncy_suzanne":
        for obj in list(scene.objects):
            if obj.mochi.role == "SOURCE":
                bpy.data.objects.remove(obj)
        monkey = add_source("monkey", location=(0.0, 0.0, 2.5), radius=0.05, size=1.0)
        monkey.mochi.restitution = 0.9
    scene.mochi.timestep_mode, scene.mochi.use_auto_stiffness = "AUTO", True
    sources = [o for o in scene.objects if o.mochi.role == "SOURCE"]
    forecast = mochi_module("addon.grain_budget").forecast_sources(bpy.context, sources)
    assert forecast.steps_automatic
    settings = mochi_module("addon.snapshot").scene_blender_to_settings(bpy.context)
    chosen = mochi_module("addon.settings").setup_from_settings(settings).model.physics.steps_per_frame
    assert 0.8 * chosen <= forecast.steps_per_frame <= 1.3 * chosen
    estimate = mochi_module("engine.estimate")
    assert forecast.rough_seconds == estimate.work_seconds(forecast.particle_count,
                                                          forecast.steps_per_frame * forecast.frames)
    sentence = f"a bake of 3 frames at about {forecast.steps_per_frame:,} steps each takes"
    assert sentence in mochi_module("addon.grain_budget").time_sentence(forecast)
    select_only(*sources)
    capfd.readouterr()
    assert bpy.ops.mochi.pack() == {"FINISHED"}
    assert sentence in capfd.readouterr().out  # Pack's report, for the same sources
