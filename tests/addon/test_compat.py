"""addon/compat.py on the Blender line under test, and what a Blender without Import PLY is told."""

from __future__ import annotations

import pytest

from .conftest import bpy, mochi_module


def test_modifier_inputs_round_trip_on_this_line(empty_scene):
    """Blender 5.2 moved geometry-nodes modifier inputs from ID properties to RNA; both paths work."""
    compat, playback = mochi_module("addon.compat"), mochi_module("addon.playback")
    obj = bpy.data.objects.new("probe", bpy.data.meshes.new("probe"))
    empty_scene.collection.objects.link(obj)
    modifier = obj.modifiers.new("probe", "NODES")
    modifier.node_group = playback.build_playback_group()
    material = playback.grain_material()
    values = {playback.INPUT_FOLDER: "//cache", playback.INPUT_START: 7, playback.INPUT_LAST: 31,
              playback.INPUT_MATERIAL: material}
    for name, value in values.items():
        compat.modifier_input_set(modifier, name, value)
    assert {name: compat.modifier_input_get(modifier, name) for name in values} == values
    uses_rna = hasattr(getattr(modifier, "properties", None), "inputs")
    assert uses_rna == (bpy.app.version >= (5, 2, 0))  # the line's API is the one compat.py took


def test_blender_without_import_ply_bakes_and_says_why_there_is_no_playback(small_scene, monkeypatch):
    """A Blender without the Import PLY node (before 4.5: the manifest refuses it, a bpy module of an
    older line does not) keeps its frames and gets one sentence. The node's absence is simulated here:
    no supported line lacks it."""
    compat, monitor, errors = (mochi_module(n) for n in ("addon.compat", "addon.bake_monitor", "engine.errors"))
    monkeypatch.setattr(compat, "has_import_ply_node", lambda: False)
    small_scene.mochi.frame_end = 2
    outcome = monitor.run_blocking(monitor.start_bake(bpy.context, resume=False), log=lambda line: None)
    assert outcome.level == "WARNING" and outcome.frames_written == 2
    assert outcome.message.endswith("playing them back needs Blender 4.5 or newer.")
    assert small_scene.mochi.playback_object is None
    with pytest.raises(errors.MochiError, match="needs Blender 4.5 or newer"):
        mochi_module("addon.playback").build_playback_group()
