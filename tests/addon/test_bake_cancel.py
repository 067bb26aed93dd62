"""Esc reaches a bake before its first step: the packing of its sources stops at its next chunk, and
the status bar shows what the packing does meanwhile (addon/bake_job.py, engine/packing/progress.py)."""

from __future__ import annotations

from .conftest import add_domain, add_source, bpy, mochi_module, wait_for


def test_esc_while_the_bake_packs_stops_the_packing_and_writes_nothing(empty_scene, tmp_path):
    # About three million grains: the packing runs for many chunks, so Esc arrives while it packs.
    add_source("monkey", location=(0.0, 0.0, 1.2), radius=0.004, size=1.0)
    add_domain()
    empty_scene.mochi.frame_start, empty_scene.mochi.frame_end = 1, 3
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "scene.blend"))
    monitor = mochi_module("addon.bake_monitor").start_bake(bpy.context, resume=False)
    job = monitor.job
    try:
        # (generous: the first packing in a fresh install compiles its kernels, minutes on a busy machine)
        wait_for(lambda: job.pack_progress is not None and job.pack_progress.chunks >= 3 or job.progress.finished,
                 timeout=900)
        assert not job.progress.finished, "the packing ended before it could be cancelled"
        line = mochi_module("addon.ui.status").progress_of(job)[1]
        assert line.startswith("Frame 0 of 3, packing the sources: ") and "%" in line  # what it does, how far
        pack = job.pack_progress
        at_request = pack.chunks
        job.request_cancel()
        assert job.join(120.0)
    finally:
        job.request_cancel()
        job.join(120.0)
    outcome = monitor.finish()
    assert job.progress.cancelled and job.progress.error is None and outcome.cancelled
    assert pack.cancel_requested and pack.chunks <= at_request + 1  # the chunk under way, then it stopped
    assert job.last_frame_written() == 0 and not list(monitor.job.folder.glob("frame_*.ply"))
