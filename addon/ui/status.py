"""Bake progress in the status bar (drawn while a bake runs, whatever the open editors)."""

from __future__ import annotations


def progress_of(job) -> tuple[float, str]:
    """(fraction done, one line) of a running bake, moving within frames: 'Frame 3 of 48, 2 min 10 s left'."""
    from ...engine.estimate import format_duration

    p = job.progress
    total = max(1, int(p.frames_total or 1))
    done = job.last_frame_written()
    if p.awaiting_confirmation:
        return 0.0, f"Estimated {format_duration(p.estimate.bake_seconds)}: waiting for Bake Anyway or Cancel"
    if p.timings.steps == 0:  # packing, then the first steps (the first bake after an install compiles)
        return done / total, f"Frame {done} of {total}, starting (the first bake after an install compiles ~45 s)"
    remaining = p.remaining_seconds
    left = f", {format_duration(remaining)} left" if remaining is not None else ""
    return min(p.frames_exact / total, 1.0), f"Frame {done} of {total}{left}"


def draw_estimate(layout, job) -> None:
    """The figures measured before the bake (engine.estimate), one per line, with the confirm buttons
    while the bake waits for them."""
    estimate = job.progress.estimate
    if estimate is None:
        return
    col = layout.column(align=True)
    for line in estimate.lines():
        col.label(text=line)
    if job.progress.awaiting_confirmation:
        row = layout.row(align=True)
        row.operator("mochi.bake_confirm", icon="CHECKMARK")
        row.operator("mochi.bake_cancel", text="Cancel", icon="CANCEL")


def draw_status(self, _context):
    from ..bake_job import current_job

    job = current_job()
    if job is None:
        return
    factor, text = progress_of(job)
    self.layout.progress(factor=factor, type="BAR", text=f"Mochi: {text}")


def register():
    import bpy

    bpy.types.STATUSBAR_HT_header.append(draw_status)


def unregister():
    import bpy

    bpy.types.STATUSBAR_HT_header.remove(draw_status)
