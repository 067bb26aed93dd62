"""Bake states as the bake panel shows them: idle → baked (summary) → out of date, Resume only for an
incomplete bake, and the Mochi frame range following the scene's unless set."""

from __future__ import annotations

import bpy
import pytest

from .conftest import mochi_module


def _state():
    module = mochi_module("addon.bake_state")
    module.invalidate()  # the bpy module has no event loop to count the scene's changes
    return module.bake_state(bpy.context)


def _bake(frames: int | None = None):
    monitor_module = mochi_module("addon.bake_monitor")
    monitor = monitor_module.start_bake(bpy.context, resume=False, frames=frames)
    return monitor_module.run_blocking(monitor, tick=0.05)


def test_idle_then_baked_with_a_summary(small_scene):
    state = _state()
    assert state.kind == "IDLE" and state.frames == 0
    _bake()
    state = _state()
    assert state.kind == "BAKED" and state.complete and not state.out_of_date
    assert state.frames == 4 and state.frames_total == 4
    manifest = mochi_module("engine.cache").read_manifest(state.folder)
    assert state.grains == manifest["particle_count"] > 0
    assert state.size_bytes > sum(p.stat().st_size for p in state.folder.glob("frame_*.ply")) > 0
    assert state.seconds is not None and 0 <= state.seconds < 600
    line = mochi_module("addon.bake_state").summary_line(state)
    assert line.startswith(f"4 frames, {state.grains:,} grains, ") and "B" in line
    assert state.reason == "Delete the bake to bake again."


def test_a_changed_setting_makes_the_bake_out_of_date_naming_it(small_scene):
    _bake()
    source = next(o for o in small_scene.objects if o.mochi.role == "SOURCE")
    source.mochi.friction = 0.9
    state = _state()
    assert state.out_of_date and "friction" in state.changed and "0.9" in state.changed
    source.mochi.friction = 0.5  # back as baked
    assert not _state().out_of_date
    small_scene.mochi.gravity = (0.0, 0.0, -5.0)
    assert "gravity" in _state().changed


def test_an_incomplete_bake_offers_resume_and_a_complete_one_does_not(small_scene):
    _bake(frames=2)  # 2 of the scene's 4 frames, as a cancelled bake leaves it
    state = _state()
    assert state.kind == "BAKED" and state.frames == 2 and state.frames_total == 4 and not state.complete
    assert bpy.ops.mochi.bake_resume() == {"FINISHED"}
    state = _state()
    assert state.frames == 4 and state.frames_total == 4 and state.complete
    small_scene.mochi.frame_end = 6  # a longer range: Resume extends the bake
    state = _state()
    assert not state.complete and state.frames_total == 6


def test_a_cancelled_bake_is_incomplete(small_scene):
    monitor_module = mochi_module("addon.bake_monitor")
    monitor = monitor_module.start_bake(bpy.context, resume=False)
    job = monitor.job
    from .conftest import wait_for

    wait_for(lambda: job.last_frame_written() >= 1)
    job.request_cancel()
    monitor_module.run_blocking(monitor, tick=0.05)
    state = _state()
    if state.frames < 4:  # a fast machine may finish before the cancel lands
        assert not state.complete and state.frames_total == 4


def test_delete_bake_returns_to_idle(small_scene):
    _bake()
    assert bpy.ops.mochi.free_bake() == {"FINISHED"}
    assert _state().kind == "IDLE"


def test_the_frame_range_follows_the_scene_unless_set(empty_scene):
    s = empty_scene.mochi
    assert s.use_scene_range
    empty_scene.frame_start, empty_scene.frame_end = 10, 120
    assert (s.frame_start, s.frame_end, s.frame_count()) == (10, 120, 111)
    s.frame_end = 40  # set here: the Mochi range is the user's from now on
    assert not s.use_scene_range
    assert (s.frame_start, s.frame_end) == (10, 40)
    empty_scene.frame_end = 200
    assert s.frame_end == 40
    s.use_scene_range = True
    assert s.frame_end == 200


def test_the_panel_draws_each_state(small_scene):
    """The panel's draw code runs for every state (a draw error would only print in Blender)."""
    panels = mochi_module("addon.ui.panels")
    state_module = mochi_module("addon.bake_state")

    class Layout:  # records what the panel asks for; UILayout cannot be made outside a draw
        def __init__(self, log):
            self.log, self.enabled, self.active = log, True, True

        def __getattr__(self, name):
            def call(*args, **kwargs):
                self.log.append((name, args, kwargs, self.enabled))
                return Layout(self.log) if name in {"row", "column", "box"} else None
            return call

    def drawn(state):
        log = []
        layout = Layout(log)
        panels.MOCHI_PT_bake.draw_state(layout, state)
        return log

    idle = drawn(_state())
    assert ("operator", ("mochi.bake",), {"icon": "PHYSICS"}, True) in idle
    assert not any(entry[0] == "operator" and entry[1] == ("mochi.bake_resume",) for entry in idle)
    _bake()
    baked = drawn(_state())
    labels = [entry[2].get("text", "") for entry in baked if entry[0] == "label"]
    assert any(text.startswith("Baked: 4 frames") for text in labels)
    assert "Delete the bake to bake again." in labels
    incomplete = state_module.BakeState("BAKED", frames=2, frames_total=4, grains=10)
    assert any(entry[1] == ("mochi.bake_resume",) for entry in drawn(incomplete) if entry[0] == "operator")
    outdated = state_module.BakeState("BAKED", frames=4, frames_total=4, changed="sources[0].friction 0.5 → 0.9")
    labels = [entry[2].get("text", "") for entry in drawn(outdated) if entry[0] == "label"]
    assert "Out of date: settings changed since the bake" in labels
    assert any("friction" in text for text in labels)


@pytest.mark.parametrize("size, text", [(512, "512 B"), (12_345_678, "12.3 MB")])
def test_sizes_read_as_people_write_them(mochi, size, text):
    assert mochi_module("addon.bake_state").human_size(size) == text
