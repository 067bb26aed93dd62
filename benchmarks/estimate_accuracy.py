"""How close the bake-time estimate comes to the real bake (issue 26: within ±30 % on three scenes).

For each scene: ``engine.estimate.estimate_bake`` as ``mochi bake`` and Blender's Bake button run it
before a bake, then the bake itself (CPU backend, this process, the same machine and load), with the
estimate refined while it runs (``BakeEstimate.remaining_seconds``: elapsed + remaining at 10 %, 25 %
and 50 % of the steps). Recorded: the estimate before the bake, the estimate the old single probe of
the initial state gave (its ms per step × every step), the refined figures and the real wall time of
the bake, and the machine's load average before and after.

Scenes: ``sand_pile`` (a loose cloud poured into a box: the step cost grows ~4× as it piles), ``bowl``
(``bowl_pour``: a cloud poured into a bowl collider), ``demo`` (``scripts/demo_scene.py``: a packed bunny
dropped onto a heap, packed from the start), ``candy`` (``candy_vortex``: loose candy stirred by a
vortex, never a pile).

Run: ``PYTHONPATH=. python benchmarks/estimate_accuracy.py [--scenes sand_pile demo]`` → JSON in
benchmarks/results/estimate_accuracy.json and a Markdown table on stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

SCENES = {"sand_pile": (REPO / "presets" / "sand_pile.toml", 48), "bowl": (REPO / "presets" / "bowl_pour.toml", 48),
          "demo": (None, 30), "candy": (REPO / "presets" / "candy_vortex.toml", 48)}
#: Progress (share of the steps) at which the running estimate is read.
CHECKPOINTS = (0.1, 0.25, 0.5)


def _preset(name: str, folder: Path) -> tuple[Path, int]:
    path, frames = SCENES[name]
    if path is None:  # the demo's scene, written fresh
        subprocess.run([sys.executable, str(REPO / "scripts" / "demo_scene.py"), "--out", str(folder / "demo")],
                       check=True, stdout=subprocess.DEVNULL)
        path = folder / "demo" / "demo.toml"
    return path, frames


def measure(name: str, folder: Path) -> dict:
    """Estimate, then bake, scene ``name``; the figures of one table row."""
    from engine.bake import bake
    from engine.estimate import estimate_bake
    from engine.preset import load_preset
    from engine.scene import setup_from_preset

    path, frames = _preset(name, folder)
    load_before = os.getloadavg()[0]
    setup = setup_from_preset(load_preset(path))
    began = time.perf_counter()
    estimate = estimate_bake(setup, frames=frames, backend="cpu")
    probe_seconds = time.perf_counter() - began
    refined = {}

    def on_step(progress):
        share = (progress.frames_exact - 1) / max(frames - 1, 1)
        for checkpoint in CHECKPOINTS:
            if checkpoint not in refined and share >= checkpoint:
                elapsed = time.perf_counter() - started
                refined[checkpoint] = elapsed + estimate.remaining_seconds(progress.frames_exact - 1,
                                                                           progress.stepping_seconds)

    started = time.perf_counter()
    bake(setup, folder / name, frames=frames, overwrite=True, on_step=on_step)
    real = time.perf_counter() - started
    first_probe = estimate.seconds_per_step * estimate.steps_per_frame * estimate.frames
    return {"scene": name, "preset": str(path.relative_to(REPO)) if path.is_relative_to(REPO) else path.name,
            "particles": setup.model.particle_count, "frames": frames,
            "steps": estimate.steps_per_frame * estimate.frames,
            "loose_fraction": round(estimate.loose_fraction, 3),
            "ms_per_step_start": round(estimate.seconds_per_step * 1e3, 3),
            "ms_per_step_packed": round(estimate.packed_seconds_per_step * 1e3, 3),
            "estimate_s": round(estimate.bake_seconds, 1), "first_probe_only_s": round(first_probe, 1),
            "refined_s": {f"{int(k * 100)}%": round(v, 1) for k, v in sorted(refined.items())},
            "real_s": round(real, 1), "ratio": round(estimate.bake_seconds / real, 2),
            "probe_s": round(probe_seconds, 1), "load_before": round(load_before, 2),
            "load_after": round(os.getloadavg()[0], 2)}


def markdown(rows: list[dict]) -> str:
    lines = ["| scene | grains | loose at start | estimate (old: first probe only) | refined at 10 / 25 / 50 % "
             "| real bake | estimate / real | load (1 min) |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        refined = " / ".join(f"{v:.0f} s" for v in r["refined_s"].values())
        lines.append(f"| {r['scene']} | {r['particles']:,} | {r['loose_fraction']:.0%} | {r['estimate_s']:.0f} s "
                     f"({r['first_probe_only_s']:.0f} s) | {refined} | {r['real_s']:.0f} s | {r['ratio']:.2f} "
                     f"| {r['load_before']:.1f} → {r['load_after']:.1f} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenes", nargs="*", default=list(SCENES))
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "estimate_accuracy.json")
    args = parser.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for name in args.scenes:
            rows.append(measure(name, Path(folder)))
            print(json.dumps(rows[-1]), flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(rows, indent=2) + "\n")
    print(markdown(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
