"""Whether Blender's window answers while Mochi works (issue 44 point 3), in a real window under Xvfb.

A heartbeat timer that Blender's event loop calls every 20 ms records the gaps between its calls: a
gap is how long the window could not answer (an operator in the main thread, a worker thread holding
Python's lock, a slow redraw). Phases, in one Blender started on a freshly installed extension:

1. ``launch``: the first 15 s after the window opens (the first start after an install: the preload
   thread's imports, addon/preload.py). Longest gap = the launch freeze.
2. ``idle``: 5 s with nothing running (the baseline: redraws under Mesa's software OpenGL).
3. ``pack``: Pack of a cube of about ``--pack-grains`` grains; after ``ESC_AFTER_S`` of packing, Esc is
   pressed for real (``xdotool key Escape``); recorded: the seconds from Esc to the end of the packing
   worker, and the status line shown while it packed.
4. ``bake``: Bake of a cube of about ``--bake-grains`` grains; once it steps, ``--bake-seconds`` of
   heartbeats (the stalls during a bake), then Esc; recorded: the seconds from Esc to the worker's end.

    PYTHONPATH=. .venv/bin/python benchmarks/ui_answers.py [--blender B] [--zip Z] \
        [--json benchmarks/results/ui_answers.json]

BLENDER and ZIP default as in ``benchmarks/first_frame.py`` (build the zip with scripts/build_extension.py).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.first_frame import default_blender, install_extension, newest_zip, window_command  # noqa: E402

IN_BLENDER = r'''
import json, subprocess, sys, threading, time, traceback
from importlib import import_module
from pathlib import Path
import bpy

OUT = Path(sys.argv[sys.argv.index("--") + 1])
PACK_GRAINS, BAKE_GRAINS, BAKE_SECONDS = (float(x) for x in sys.argv[sys.argv.index("--") + 2:][:3])
PACKAGE = next((name for name in sys.modules if name.endswith(".mochi") and name.startswith("bl_ext.")), None)
HEARTBEAT_S = 0.02
ESC_AFTER_S = 3.0
phase = {"name": "launch"}
beats = {}
last = [time.monotonic()]
report = {"error": None, "notes": []}
t0 = time.monotonic()


def heartbeat():
    now = time.monotonic()
    beats.setdefault(phase["name"], []).append(now - last[0])
    last[0] = now
    return HEARTBEAT_S


def override(kind="PROPERTIES"):
    window = bpy.context.window_manager.windows[0]
    area = next(a for a in window.screen.areas if a.type == kind)
    region = next(r for r in area.regions if r.type == "WINDOW")
    return {"window": window, "screen": window.screen, "area": area, "region": region}


def cube_source(grains):
    """The startup cube as Quick Grains makes it, its radius set for about ``grains`` grains (the
    packing fills ~0.74 of the 8 m³ with spheres)."""
    cube = bpy.data.objects["Cube"]
    bpy.ops.object.select_all(action="DESELECT")
    cube.select_set(True)
    bpy.context.view_layer.objects.active = cube
    if cube.mochi.role != "SOURCE":
        with bpy.context.temp_override(**override("VIEW_3D")):
            bpy.ops.mochi.quick_grains()
    # (0.74 of the 8 m³, and the small spheres of the skin: about 2.3 times the count of one radius)
    cube.mochi.radius = (2.3 * 0.74 * 8.0 / (4.18879 * grains)) ** (1.0 / 3.0)
    return cube


def steps():
    window = bpy.context.window_manager.windows[0]
    subprocess.run(["xdotool", "mousemove", "--sync", str(window.x + 200), str(window.height // 2)], check=True)
    bpy.ops.wm.save_as_mainfile(filepath=str(OUT / "answers.blend"))
    while time.monotonic() - t0 < 15.0:
        yield 0.1
    report["preload_alive_after_launch"] = any(t.name == "mochi-preload" for t in threading.enumerate())
    phase["name"] = "idle"
    yield 5.0
    save()
    if PACKAGE is None:  # Blender alone: the launch and idle baselines only
        return
    prefs = bpy.context.preferences.addons[PACKAGE].preferences
    prefs.confirm_grains, prefs.confirm_minutes = 0, 0.0  # no question before the big Pack and the bake

    cube = cube_source(PACK_GRAINS)
    pack = import_module(PACKAGE + ".addon.operators.pack")
    phase["name"] = "pack"
    with bpy.context.temp_override(**override()):
        report["notes"].append(f"pack: {sorted(bpy.ops.mochi.pack('INVOKE_DEFAULT'))}")
    job = pack._running
    began = time.monotonic()
    while job is not None and not job.finished and time.monotonic() - began < ESC_AFTER_S:
        yield 0.05
    report["pack_status_line"] = job.progress_line() if job is not None else None
    report["pack_progress_at_esc"] = {"stage": getattr(job.progress, "stage", None),
                                      "chunks": getattr(job.progress, "chunks", None)} if job is not None \
        and hasattr(job, "progress") else None
    report["pack_finished_before_esc"] = job is None or job.finished
    pressed = time.monotonic()
    subprocess.run(["xdotool", "key", "Escape"], check=True)
    while job is not None and not job.finished and time.monotonic() - pressed < 600:
        yield 0.01
    report["pack_esc_to_stop_s"] = round(time.monotonic() - pressed, 3)
    report["pack_cancelled"] = bool(job is not None and job.cancel_requested)
    phase["name"] = "after_pack"
    save()
    yield 1.0

    cube_source(BAKE_GRAINS)
    scene = bpy.context.scene
    scene.mochi.frame_end = scene.mochi.frame_start + 200
    bake_job = import_module(PACKAGE + ".addon.bake_job")
    phase["name"] = "bake_start"
    with bpy.context.temp_override(**override()):
        report["notes"].append(f"bake: {sorted(bpy.ops.mochi.bake('INVOKE_DEFAULT'))}")
    job = bake_job.current_job()
    while job is not None and job.progress.timings.steps == 0 and not job.progress.finished:
        if job.progress.awaiting_confirmation:
            job.confirm()
        yield 0.05
    if job is None or job.progress.finished:
        raise RuntimeError(f"the bake ended before stepping: {job and job.progress.error}")
    report["bake_grains"] = int(job.progress.particle_count)
    phase["name"] = "bake"
    began = time.monotonic()
    while time.monotonic() - began < BAKE_SECONDS and not job.progress.finished:
        yield 0.1
    report["bake_frames_during"] = job.last_frame_written()
    report["bake_threads"] = getattr(getattr(job.progress, "estimate", None), "threads", None)
    save()
    phase["name"] = "bake_esc"
    pressed = time.monotonic()
    subprocess.run(["xdotool", "key", "Escape"], check=True)
    while bake_job.current_job() is not None and time.monotonic() - pressed < 600:
        yield 0.01
    report["bake_esc_to_stop_s"] = round(time.monotonic() - pressed, 3)
    report["bake_cancelled"] = bool(job.progress.cancelled)
    phase["name"] = "end"
    yield 0.5


sequence = steps()


def save():
    """Write what was measured so far (a run cut short still reports its phases)."""
    report["phases"] = {}
    for name, gaps in beats.items():
        stalls = [g for g in gaps if g > 0.1]
        report["phases"][name] = {"max_gap_s": round(max(gaps), 3), "beats": len(gaps),
                                  "stalls_over_0_5_s": sum(g > 0.5 for g in gaps),
                                  "median_stall_s": round(sorted(stalls)[len(stalls) // 2], 3) if stalls else 0.0,
                                  "gaps": [round(g, 3) for g in gaps if g > 0.1]}
    (OUT / "answers.json").write_text(json.dumps(report, indent=1))


def finish():
    bpy.app.timers.unregister(heartbeat)
    save()
    bpy.ops.wm.quit_blender()


def tick():
    try:
        return next(sequence)
    except StopIteration:
        finish()
    except Exception:
        report["error"] = traceback.format_exc()
        finish()
    return None


bpy.app.timers.register(heartbeat, first_interval=HEARTBEAT_S, persistent=True)
bpy.app.timers.register(tick, first_interval=0.1)
'''


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blender")
    parser.add_argument("--zip")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--label", default="", help="a name for this run in the JSON (e.g. 'before', 'after')")
    parser.add_argument("--pack-grains", type=float, default=900_000)
    parser.add_argument("--bake-grains", type=float, default=30_000)
    parser.add_argument("--bake-seconds", type=float, default=30.0)
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds before Blender is stopped")
    parser.add_argument("--without-mochi", action="store_true", help="Blender alone: the launch and idle phases")
    args = parser.parse_args(argv)
    blender = args.blender or default_blender()
    zip_path = args.zip or newest_zip(blender)
    load_before = list(os.getloadavg())
    with tempfile.TemporaryDirectory(prefix="mochi_answers_") as tmp:
        user = Path(tmp) / "user"
        user.mkdir()
        if not args.without_mochi:
            install_extension(blender, zip_path, user)
        work = Path(tmp) / "run"
        work.mkdir()
        script = work / "ui_answers_in_blender.py"
        script.write_text(IN_BLENDER)
        env = {**os.environ, "BLENDER_USER_RESOURCES": str(user)}
        command = window_command(blender, env)
        try:
            subprocess.run([*command, "--python", str(script), "--", str(work), str(args.pack_grains),
                            str(args.bake_grains), str(args.bake_seconds)],
                           capture_output=True, text=True, timeout=args.timeout, env=env)
            outcome = "finished"
        except subprocess.TimeoutExpired:
            outcome = f"stopped after {args.timeout:.0f} s (the phases saved so far)"
        out = work / "answers.json"
        if not out.is_file():
            raise SystemExit(f"Blender did not report: {outcome}.")
        report = {"outcome": outcome, **json.loads(out.read_text())}
    result = {"benchmark": "ui_answers", "label": args.label,
              "blender": subprocess.run([blender, "--version"], capture_output=True, text=True).stdout.splitlines()[0],
              "zip": Path(zip_path).name, "machine": platform.machine(), "cpus": os.cpu_count(),
              "load_average_before": load_before, "load_average_after": list(os.getloadavg()), **report}
    for name, row in report.get("phases", {}).items():
        print(f"{name:>11}: longest gap {row['max_gap_s']:.3f} s, {row['stalls_over_0_5_s']} over 0.5 s, "
              f"median stall {row['median_stall_s']:.3f} s, {row['beats']} beats")
    for key in ("pack_status_line", "pack_finished_before_esc", "pack_esc_to_stop_s", "bake_grains",
                "bake_esc_to_stop_s", "bake_cancelled", "error"):
        print(f"{key}: {report.get(key)}")
    if args.json:
        existing = json.loads(args.json.read_text()) if args.json.is_file() else {"runs": []}
        existing["runs"].append(result)
        args.json.write_text(json.dumps(existing, indent=1) + "\n")
    if report.get("error"):
        print(report["error"], file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
