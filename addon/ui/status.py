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
        return done / total, f"Frame {done} of {total}, {job.starting_line()}"  # packing, measuring, compiling
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


_rough: tuple | None = None  # (key, line or None): the rough time until the scene changes


def rough_time_line(context) -> str | None:
    """'Bake time ≈ 3 min (rough, from the grain count: Pack measures it)', or None when it cannot be told
    before packing (no domain, a source sized by count...)."""
    global _rough
    from .. import bake_state
    from ..grain_budget import forecast_sources, format_duration

    scene = context.scene
    key = (scene.name, bake_state._revision, scene.frame_current, scene.mochi.frame_count())
    if _rough is None or _rough[0] != key:
        line = None
        try:
            sources = [o for o in scene.objects if o.mochi.role == "SOURCE"]
            seconds = forecast_sources(context, sources).rough_seconds if sources else None
            if seconds is not None:
                line = f"Bake time ≈ {format_duration(seconds)} (rough, from the grain count: Pack measures it)"
        except Exception:  # noqa: BLE001 - a panel must draw; Pack and Bake say what is wrong
            line = None
        _rough = (key, line)
    return _rough[1]


def draw_time_before_bake(layout, context) -> None:
    """Before Bake is pressed: the bake time measured after Pack (addon.pre_bake_estimate) while the scene
    is as measured, else the rough count-based one."""
    from ...engine.estimate import format_duration
    from ..pre_bake_estimate import measurement_for

    measurement = measurement_for(context)
    col = layout.column(align=True)
    if measurement is not None and not measurement.finished:
        col.label(text="Measuring the bake time (a few steps of the packed scene)...", icon="TIME")
        return
    if measurement is not None and measurement.estimate is not None:
        e = measurement.estimate
        col.label(text=f"Bake time ≈ {format_duration(e.bake_seconds)} (measured after Pack)", icon="TIME")
        col.label(text=f"{e.particle_count:,} grains, {e.frames} frames × {e.steps_per_frame:,} steps, {e.backend}",
                  icon="BLANK1")
        return
    line = rough_time_line(context)
    if line is not None:
        col.label(text=line, icon="TIME")


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
