"""How long Mochi keeps Blender's window from responding, operator by operator, as an artist's first hour
meets them: a real Blender window (Xvfb), a fresh install (so the first Pack and Bake compile), and a
heartbeat timer that Blender's event loop calls every 20 ms: while an operator runs in the main thread,
or a worker thread holds Python's lock, or a redraw takes long, the heartbeat is late. The longest gap
between two heartbeats in each phase is that phase's freeze (issue 26 point 4: none over 0.5 s).

Phases: idle (the baseline: redraws under Mesa's software OpenGL), Add › Mochi Bunny, Quick Grains on it,
Pack (its modal operator until the preview shows), the bake-time measurement Pack starts (until the
panel shows it), Bake (its modal operator until two frames are on
disk), Cancel, Resume (until two more frames), stepping the timeline over baked frames, Convert Frame to
Mesh, Delete Bake, Apply Look (gravel), Apply Preset (sand pile).

    PYTHONPATH=. .venv/bin/python benchmarks/ui_freeze.py [--blender BLENDER] [--zip ZIP]
        [--json benchmarks/results/ui_freeze.json]

BLENDER and ZIP default as in ``benchmarks/first_frame.py`` (build the zip with scripts/build_extension.py).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.first_frame import default_blender, install_extension, newest_zip, window_command  # noqa: E402

IN_BLENDER = r'''
import json, sys, time, traceback
from importlib import import_module
from pathlib import Path
import bpy

OUT = Path(sys.argv[sys.argv.index("--") + 1])
PRESET = sys.argv[sys.argv.index("--") + 2]
PACKAGE = next(name for name in sys.modules if name.endswith(".mochi") and name.startswith("bl_ext."))
HEARTBEAT_S = 0.02
phase = {"name": "starting"}
beats = {}        # phase -> list of gaps [s]
calls = {}        # phase -> seconds the operator call itself took in the main thread
last = [time.monotonic()]
report = {"error": None, "notes": []}


def heartbeat():
    now = time.monotonic()
    beats.setdefault(phase["name"], []).append(now - last[0])
    last[0] = now
    return HEARTBEAT_S


def override(kind):
    window = bpy.context.window_manager.windows[0]
    area = next(a for a in window.screen.areas if a.type == kind)
    region = next(r for r in area.regions if r.type == "WINDOW")
    return {"window": window, "screen": window.screen, "area": area, "region": region}


def call(name, operator, *args, kind="VIEW_3D", **kwargs):
    """Run an operator as its button does, timing the call itself."""
    phase["name"] = name
    began = time.monotonic()
    with bpy.context.temp_override(**override(kind)):
        result = operator(*args, **kwargs)
    calls[name] = round(time.monotonic() - began, 3)
    report["notes"].append(f"{name}: {sorted(result)}")


def job():
    return import_module(PACKAGE + ".addon.bake_job").current_job()


def frames_on_disk(folder):
    return len(list(Path(folder).glob("frame_*.ply")))


def steps():
    scene = bpy.context.scene
    for obj in list(scene.objects):
        if obj.type == "MESH":
            bpy.data.objects.remove(obj)
    bpy.ops.wm.save_as_mainfile(filepath=str(OUT / "freeze.blend"))
    phase["name"] = "idle"
    yield 2.0
    call("add_bunny", bpy.ops.mochi.add_bunny, "INVOKE_DEFAULT")
    bunny = bpy.context.object
    yield 0.5
    call("quick_grains", bpy.ops.mochi.quick_grains, "INVOKE_DEFAULT")
    yield 0.5
    bpy.context.view_layer.objects.active = bunny
    bunny.select_set(True)
    call("pack", bpy.ops.mochi.pack, "INVOKE_DEFAULT", kind="PROPERTIES")
    while bunny.mochi.pack_preview is None:
        yield 0.05
    report["packed"] = len(bunny.mochi.pack_preview.data.vertices)
    # Pack then measures the bake time in a worker (addon/pre_bake_estimate.py): wait for the panel's figure.
    phase["name"] = "measure_after_pack"
    measuring = import_module(PACKAGE + ".addon.pre_bake_estimate")
    began = time.monotonic()
    while measuring._current is not None and not measuring._current.finished and time.monotonic() - began < 300:
        yield 0.05
    measured = measuring._current
    report["measured_after_pack_s"] = (round(measured.estimate.bake_seconds, 2)
                                       if measured is not None and measured.estimate is not None else None)
    phase["name"] = "after_pack"
    yield 0.5
    scene.mochi.frame_end = scene.mochi.frame_start + 5
    folder = import_module(PACKAGE + ".addon.snapshot").cache_folder(scene)
    call("bake", bpy.ops.mochi.bake, "INVOKE_DEFAULT", kind="PROPERTIES")
    while frames_on_disk(folder) < 2:
        j = job()
        if j is not None and j.progress.awaiting_confirmation:
            j.confirm()
        if j is not None and j.progress.error:
            raise RuntimeError(j.progress.error)
        yield 0.05
    call("bake_cancel", bpy.ops.mochi.bake_cancel, kind="PROPERTIES")
    while job() is not None:
        yield 0.05
    phase["name"] = "after_cancel"
    yield 0.5
    call("bake_resume", bpy.ops.mochi.bake_resume, "INVOKE_DEFAULT", kind="PROPERTIES")
    while job() is not None:
        j = job()
        if j.progress.awaiting_confirmation:
            j.confirm()
        yield 0.05
    report["frames_baked"] = frames_on_disk(folder)
    phase["name"] = "after_bake"
    yield 0.5
    for frame in range(scene.mochi.frame_start, scene.mochi.frame_start + 4):
        phase["name"] = "timeline"
        began = time.monotonic()
        scene.frame_set(frame)
        calls[f"timeline_frame_{frame}"] = round(time.monotonic() - began, 3)
        yield 0.2
    call("realize_frame", bpy.ops.mochi.realize_frame, "EXEC_DEFAULT")
    yield 0.5
    call("free_bake", bpy.ops.mochi.free_bake, "EXEC_DEFAULT", kind="PROPERTIES")
    yield 0.5
    bpy.ops.object.select_all(action="DESELECT")  # Delete Bake shows the source again: select it
    bunny.select_set(True)
    bpy.context.view_layer.objects.active = bunny
    report["notes"].append(f"before look: active {bpy.context.view_layer.objects.active.name} role {bunny.mochi.role} "
                           f"hidden {bunny.hide_get()} selected {bunny.select_get()}")
    call("look_apply", bpy.ops.mochi.look_apply, "EXEC_DEFAULT", look="gravel")
    yield 0.5
    call("preset_apply", bpy.ops.mochi.preset_apply, "EXEC_DEFAULT", filepath=PRESET, kind="PROPERTIES")
    yield 0.5
    phase["name"] = "end"
    yield 0.1


sequence = steps()


def finish():
    bpy.app.timers.unregister(heartbeat)
    report["phases"] = {name: {"max_gap_s": round(max(gaps), 3), "beats": len(gaps),
                               "p95_gap_s": round(sorted(gaps)[int(0.95 * (len(gaps) - 1))], 3),
                               "call_s": calls.get(name)}
                        for name, gaps in beats.items() if gaps and name != "starting"}
    report["calls"] = calls
    (OUT / "freeze.json").write_text(json.dumps(report, indent=1))
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
bpy.app.timers.register(tick, first_interval=2.0)
'''


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blender")
    parser.add_argument("--zip")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    blender = args.blender or default_blender()
    zip_path = args.zip or newest_zip(blender)
    with tempfile.TemporaryDirectory(prefix="mochi_freeze_") as tmp:
        user = Path(tmp) / "user"
        user.mkdir()
        install_extension(blender, zip_path, user)
        work = Path(tmp) / "run"
        work.mkdir()
        script = work / "ui_freeze_in_blender.py"
        script.write_text(IN_BLENDER)
        env = {**os.environ, "BLENDER_USER_RESOURCES": str(user)}
        command = window_command(blender, env)
        preset = ROOT / "presets" / "sand_pile.toml"
        done = subprocess.run([*command, "--python", str(script), "--", str(work), str(preset)],
                              capture_output=True, text=True, timeout=1200, env=env)
        out = work / "freeze.json"
        if not out.is_file():
            raise SystemExit(f"Blender did not report (exit {done.returncode}):\n{done.stdout[-3000:]}\n"
                             f"{done.stderr[-3000:]}")
        report = json.loads(out.read_text())
    if report.get("error"):
        raise SystemExit("the run failed:\n" + report["error"] + "\n".join(report["notes"]))
    result = {"benchmark": "ui_freeze", "blender": subprocess.run([blender, "--version"], capture_output=True,
                                                                  text=True).stdout.splitlines()[0],
              "zip": Path(zip_path).name, "machine": platform.machine(), "cpus": os.cpu_count(),
              "load_average": list(os.getloadavg()), **report}
    for name, row in report["phases"].items():
        print(f"{name:>14}: longest gap {row['max_gap_s']:.3f} s, p95 {row['p95_gap_s']:.3f} s, "
              f"{row['beats']} beats, call {row['call_s']}")
    for name, seconds in report["calls"].items():
        if name.startswith("timeline"):
            print(f"{name:>14}: call {seconds} s")
    print(f"packed {report.get('packed')} grains, {report.get('frames_baked')} frames on disk, bake time "
          f"measured after Pack {report.get('measured_after_pack_s')} s")
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
