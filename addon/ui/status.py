"""Bake progress in the status bar (drawn while a bake runs, whatever the open editors)."""

from __future__ import annotations


def draw_status(self, _context):
    from ..bake_job import current_job

    job = current_job()
    if job is None:
        return
    total = max(1, int(job.progress.frames_total or 1))
    done = job.last_frame_written()
    self.layout.progress(factor=done / total, type="BAR", text=f"Mochi bake {done}/{total}")


def register():
    import bpy

    bpy.types.STATUSBAR_HT_header.append(draw_status)


def unregister():
    import bpy

    bpy.types.STATUSBAR_HT_header.remove(draw_status)
