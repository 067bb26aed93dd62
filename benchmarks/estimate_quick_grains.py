"""The bake-time estimate against the real bake for Quick Grains' cube and Suzanne (issue 44 point 2).

For each subject, cold (an empty numba cache: the kernels compile) and warm, a child Python with the
bpy module (no window) does what an artist does: the startup file, Quick Grains on the subject (for
Suzanne: the cube deleted, a monkey added), a saved file; then, as Pack and Bake do:

1. the count-based figure Pack's sentence and the panel show before a measurement
   (``engine.estimate.work_seconds`` through ``addon.grain_budget``), for the whole frame range;
2. ``engine.estimate.estimate_bake`` (the measurement after Pack, which Bake takes over), for the
   whole frame range and for the shortened one baked here; its warm-up step (the compile when cold);
3. the real bake of the first ``--frames`` frames (a full Suzanne bake takes hours), frame by frame,
   beside each frame's predicted time.

    PYTHONPATH=. .venv/bin/python benchmarks/estimate_quick_grains.py [--frames 4] [--subjects cube suzanne]
        [--kinds cold warm] [--json benchmarks/results/estimate_quick_grains.json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = r'''
import importlib.util, json, os, sys, tempfile, time
from importlib import import_module
from pathlib import Path
import bpy

ROOT, SUBJECT, FRAMES, WORK = sys.argv[1], sys.argv[2], int(sys.argv[3]), Path(sys.argv[4])
spec = importlib.util.spec_from_file_location("mochi", ROOT + "/__init__.py", submodule_search_locations=[ROOT])
package = importlib.util.module_from_spec(spec)
sys.modules["mochi"] = package
spec.loader.exec_module(package)
package.register()
snapshot = import_module("mochi.addon.snapshot")
settings_module = import_module("mochi.addon.settings")
grain_budget = import_module("mochi.addon.grain_budget")
estimate_module = import_module("mochi.engine.estimate")
bake_module = import_module("mochi.engine.bake")

bpy.ops.wm.read_homefile(use_factory_startup=True)
if SUBJECT == "suzanne":
    bpy.data.objects.remove(bpy.data.objects["Cube"])
    bpy.ops.mesh.primitive_monkey_add()
subject = [o for o in bpy.context.scene.objects if o.type == "MESH"][0]
bpy.context.view_layer.objects.active = subject
for obj in bpy.context.scene.objects:
    obj.select_set(obj == subject)
bpy.ops.mochi.quick_grains()
bpy.ops.wm.save_as_mainfile(filepath=str(WORK / "scene.blend"))
scene = bpy.context.scene
row = {"subject": SUBJECT, "frames_scene": scene.mochi.frame_count(), "frames_baked": FRAMES,
       "load_before": list(os.getloadavg())}
sources = [o for o in scene.objects if o.mochi.role == "SOURCE"]
forecast = grain_budget.forecast_sources(bpy.context, sources)
row["count_based_full_s"] = forecast.rough_seconds
row["count_based_sentence"] = grain_budget.time_sentence(forecast)
full = snapshot.scene_blender_to_settings(bpy.context)
began = time.perf_counter()
setup = settings_module.setup_from_settings(full)
row["pack_s"] = time.perf_counter() - began
began = time.perf_counter()
estimate = estimate_module.estimate_bake(setup, frames=full.simulation.frame_count, backend="cpu")
row["estimate_call_s"] = time.perf_counter() - began
row.update(grains=estimate.particle_count, steps_per_frame=estimate.steps_per_frame,
           estimate_full_s=estimate.bake_seconds, warmup_s=estimate.warmup_seconds,
           ms_per_step_start=estimate.seconds_per_step * 1e3,
           ms_per_step_piled=(estimate.packed_seconds_per_step or estimate.seconds_per_step) * 1e3,
           loose_fraction=estimate.loose_fraction, threads=estimate.threads,
           estimate_short_s=estimate.predicted_seconds(FRAMES - 1),
           predicted_frames_s=list(estimate.frame_seconds[:FRAMES - 1]))
frame_times, last = [], [time.perf_counter()]

def on_frame(progress):
    now = time.perf_counter()
    if progress.frames_done >= 2:
        frame_times.append(now - last[0])
    last[0] = now

began = time.perf_counter()
progress = bake_module.bake(setup, WORK / "cache", frames=FRAMES, backend="cpu", on_frame=on_frame)
row.update(actual_short_s=time.perf_counter() - began, actual_frames_s=frame_times,
           actual_ms_per_step=progress.stepping_seconds / max(progress.timings.steps, 1) * 1e3,
           load_after=list(os.getloadavg()))
row["ratio_estimate_to_actual"] = row["estimate_short_s"] / row["actual_short_s"]
print("ROW " + json.dumps(row), flush=True)
'''


def run(subject: str, kind: str, frames: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="mochi_estimate_qg_") as tmp:
        env = {**os.environ, "BLENDER_USER_RESOURCES": str(Path(tmp) / "user")}
        if kind == "cold":
            env["NUMBA_CACHE_DIR"] = str(Path(tmp) / "numba")  # nothing compiled yet
        done = subprocess.run([sys.executable, "-c", CHILD, str(ROOT), subject, str(frames), tmp],
                              capture_output=True, text=True, env=env, timeout=7200)
    line = next((row for row in done.stdout.splitlines() if row.startswith("ROW ")), None)
    if line is None:
        raise SystemExit(f"{subject} {kind} failed:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}")
    return {"kind": kind, **json.loads(line[4:])}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=4, help="frames baked for real (frame 1 is the start)")
    parser.add_argument("--subjects", nargs="+", default=["cube", "suzanne"])
    parser.add_argument("--kinds", nargs="+", default=["cold", "warm"])
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    rows = []
    for subject in args.subjects:
        for kind in args.kinds:
            row = run(subject, kind, args.frames)
            rows.append(row)
            print(f"{subject:>8} {kind}: {row['grains']:,} grains, {row['steps_per_frame']} steps/frame; "
                  f"count-based {row['count_based_full_s']:.0f} s, measured {row['estimate_full_s']:.0f} s for "
                  f"{row['frames_scene']} frames; frames 2-{args.frames}: estimate {row['estimate_short_s']:.1f} s, "
                  f"real {row['actual_short_s']:.1f} s (x{row['ratio_estimate_to_actual']:.2f}); warm-up "
                  f"{row['warmup_s']:.1f} s; load {row['load_before'][0]:.1f} -> {row['load_after'][0]:.1f}",
                  flush=True)
    if args.json:
        args.json.write_text(json.dumps({"benchmark": "estimate_quick_grains", "cpus": os.cpu_count(),
                                         "rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
