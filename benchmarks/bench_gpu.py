"""The paper's freefall benchmark on the GPU backends, the CPU backend and the Taichi CUDA peer.

Scene (Mochi paper, freefall): spheres of radius 0.5–0.6 mm on random distinct sites of a cubic lattice
in a unit box (never overlapping), density 500 kg/m³, dt 1e-4 s, gravity −9.81 m/s² along y,
stiffness 5 N/m, restitution 0.5, no friction, closed box.

For each particle count: ms per step of every backend that starts here, with the build / detect /
update breakdown from CUDA events (CPU: perf_counter), after a warm-up that compiles the kernels; the
Taichi peer (benchmarks/taichi_dem.py, arch cuda) on the same initial state when Taichi is installed;
optionally the rebuild-interval sweep (the paper's Fig. 10). Prints a markdown table and writes JSON.

    python benchmarks/bench_gpu.py --particles 1000000 --steps 200 --out bench_gpu.json
    python benchmarks/bench_gpu.py --particles 1000000 2000000 5000000 --sweep 1 2 5 10 20 50 100
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.backends import make_backend  # noqa: E402
from engine.backends.gpu_runtime import GpuUnavailable  # noqa: E402
from engine.errors import MochiError  # noqa: E402
from engine.model import Domain, Gravity, Material, Physics, build_model  # noqa: E402
from engine.state import make_state  # noqa: E402


def freefall_scene(count: int, *, seed: int = 1, rebuild_interval: int = 10):
    """(model, state) of the paper's freefall with ``count`` particles."""
    rng = np.random.default_rng(seed)
    r_lo, r_hi = 0.0005, 0.0006
    spacing = 2.0 * r_hi * 1.001
    per_axis = int(math.floor((1.0 - 2.0 * r_hi) / spacing)) + 1
    sites = rng.choice(per_axis ** 3, size=count, replace=False)
    ijk = np.stack(np.unravel_index(np.sort(sites), (per_axis,) * 3), axis=1)
    radius = rng.uniform(r_lo, r_hi, count)
    slack = np.maximum(spacing / 2.0 - radius, 0.0)[:, None]
    positions = r_hi + ijk * spacing + rng.uniform(-0.9, 0.9, (count, 3)) * slack
    physics = Physics(materials=(Material(name="grain", density=500.0, restitution=0.5, friction=0.0),),
                      domain=Domain(lo=(0.0, 0.0, 0.0), hi=(1.0, 1.0, 1.0), wall_restitution=0.5, wall_friction=0.0),
                      gravity=Gravity(vector=(0.0, -9.81, 0.0)), stiffness=5.0, dt=1.0e-4,
                      rebuild_interval=rebuild_interval, speed_limit=100.0)
    return build_model(radius, physics), make_state(positions)


def time_backend(name: str, model, state, *, steps: int, warmup: int, repeats: int = 1) -> dict:
    """Time ``steps`` steps of backend ``name`` from ``state`` after ``warmup`` untimed steps; with
    ``repeats`` > 1 the run with the median time is kept."""
    runner = make_backend(name, model, log=lambda message: None)
    if warmup:
        runner.set_state(state)
        runner.step(warmup)
        runner.get_state()
    runs = []
    for _ in range(repeats):
        runner.set_state(state)
        began = time.perf_counter()
        timings = runner.step(steps)
        runs.append((time.perf_counter() - began, timings))  # step() waits for its last event
        final = runner.get_state()
    seconds, timings = sorted(runs, key=lambda run: run[0])[len(runs) // 2]
    return {
        "backend": name,
        "describe": runner.describe(),
        "particles": model.particle_count,
        "steps": steps,
        "ms_per_step": 1e3 * seconds / steps,
        "build_ms": 1e3 * timings.build_s / steps,
        "detect_ms": 1e3 * timings.detect_s / steps,
        "update_ms": 1e3 * timings.update_s / steps,
        "rebuilds": timings.rebuilds,
        "rebuild_interval": model.physics.rebuild_interval,
        "repeats": repeats,
        "ms_per_step_all": [1e3 * run[0] / steps for run in runs],
        "finite": bool(np.isfinite(final.positions).all()),
        "active": int(final.active.sum()),
        "contacts": int(len(runner.contact_pairs())),
    }


def time_taichi(model, state, *, steps: int) -> dict:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from taichi_dem import run_taichi_dem

    result = run_taichi_dem(state.positions, state.velocities, model.radius, model.mass, model.material_index,
                            model.physics, steps=steps, arch="cuda")
    return {"backend": "taichi-cuda", "describe": f"Taichi {result['taichi_version']} cuda (hashed grid)",
            "particles": model.particle_count, "steps": steps, "ms_per_step": result["ms_per_step"],
            "build_ms": None, "detect_ms": None, "update_ms": None, "rebuilds": None,
            "rebuild_interval": None, "finite": bool(np.isfinite(result["positions"]).all()),
            "active": int(result["active"].sum()), "contacts": None}


def profile_cuda(model, state, *, repeats: int = 20) -> dict:
    """Median time [ms] of each launch of one CUDA grid step, timed one stage at a time with events."""
    from engine.backends.gpu_runtime import BLOCK, blocks

    backend = make_backend("cuda", model, log=lambda message: None)
    cupy = backend.cp
    backend.set_state(state)
    backend.step(5)
    p, sorter = backend.particles, backend.sorter
    n = p.particle_count
    grid = blocks(n)

    def scatter():
        sorter._scatter(grid, (BLOCK,), (p.key, np.int32(n), sorter.start, sorter.rank, sorter.sorted))

    stages = {
        "keys": lambda: backend._keys(grid, (BLOCK,), (p.params, p.key)),
        "fill counts + count": lambda: (sorter.count.fill(0),
                                        sorter._count(grid, (BLOCK,), (p.key, np.int32(n), sorter.count, sorter.rank))),
        "scan (kernels)": sorter.scan,
        "scan (cupy.cumsum, not used)": lambda: cupy.cumsum(sorter.count, dtype=cupy.uint32),
        "scatter": scatter,
        "order buckets": lambda: sorter._order(blocks(sorter.bucket_count), (BLOCK,),
                                               (sorter.start, np.int32(sorter.bucket_count), sorter.sorted)),
        "gather sorted positions": lambda: backend._gather_sorted(grid, (BLOCK,), (p.params, sorter.sorted,
                                                                                   backend.pos_sorted)),
        "forces (27 cells)": lambda: backend._forces(grid, (BLOCK,), (p.params, sorter.start, sorter.sorted,
                                                                      backend.pos_sorted)),
        "integrate": p.integrate,
        "morton reorder (every rebuild_interval)": p.morton_reorder,
    }
    out = {}
    for name, launch in stages.items():
        times = []
        for _ in range(repeats):
            start, end = cupy.cuda.Event(), cupy.cuda.Event()
            start.record()
            launch()
            end.record()
            end.synchronize()
            times.append(cupy.cuda.get_elapsed_time(start, end))
        out[name] = float(np.median(times))
    backend.sorter.sort(p.key)  # leave a consistent grid behind
    return {"particles": n, "buckets": sorter.bucket_count - 1, "grid_bits": list(backend.grid_bits), "stages_ms": out}


def _cell(value) -> str:
    return "–" if value is None else (f"{value:.3f}" if isinstance(value, float) else str(value))


def markdown(rows: list[dict]) -> str:
    head = ["particles", "backend", "ms/step", "build", "detect", "update", "rebuild every", "contacts", "vs taichi"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    peer = {r["particles"]: r["ms_per_step"] for r in rows if r["backend"] == "taichi-cuda"}
    for r in rows:
        ratio = peer.get(r["particles"])
        speedup = f"{ratio / r['ms_per_step']:.1f}×" if ratio and r["backend"] != "taichi-cuda" else "–"
        lines.append("| " + " | ".join([f"{r['particles']:,}", r["backend"], _cell(r["ms_per_step"]),
                                         _cell(r["build_ms"]), _cell(r["detect_ms"]), _cell(r["update_ms"]),
                                         _cell(r["rebuild_interval"]), _cell(r["contacts"]), speedup]) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--particles", type=int, nargs="+", default=[1_000_000])
    parser.add_argument("--steps", type=int, default=200, help="timed steps per GPU backend")
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--backends", default="optix,cuda,cpu")
    parser.add_argument("--cpu-steps", type=int, default=3, help="timed CPU steps (slow at 1M)")
    parser.add_argument("--repeats", type=int, default=5, help="timed runs per GPU backend (median kept)")
    parser.add_argument("--cpu-max-particles", type=int, default=1_000_000)
    parser.add_argument("--no-taichi", action="store_true")
    parser.add_argument("--sweep", type=int, nargs="*", default=[], help="rebuild intervals to sweep at the first size")
    parser.add_argument("--profile", action="store_true", help="time each CUDA grid launch at every size")
    parser.add_argument("--tune", action="store_true",
                        help="CUDA grid at the first size: buckets per particle × force-kernel register cap")
    parser.add_argument("--out", default="bench_gpu.json")
    args = parser.parse_args(argv)
    rows: list[dict] = []
    failures: dict[str, str] = {}
    profiles: list[dict] = []
    for count in args.particles:
        model, state = freefall_scene(count)
        for name in args.backends.split(","):
            if name == "cpu" and count > args.cpu_max_particles:
                continue
            steps, warmup, repeats = (args.cpu_steps, 1, 1) if name == "cpu" else (args.steps, args.warmup, args.repeats)
            try:
                rows.append(time_backend(name, model, state, steps=steps, warmup=warmup, repeats=repeats))
                print(json.dumps(rows[-1]), flush=True)
            except (GpuUnavailable, MochiError) as exc:
                failures[f"{name}@{count}"] = str(exc)
                print(f"{name} at {count}: unavailable: {exc}", flush=True)
        if args.profile:
            try:
                profiles.append(profile_cuda(model, state))
                print(json.dumps(profiles[-1]), flush=True)
            except (GpuUnavailable, MochiError) as exc:
                failures[f"profile@{count}"] = str(exc)
        if not args.no_taichi:
            try:
                rows.append(time_taichi(model, state, steps=args.steps))
                print(json.dumps(rows[-1]), flush=True)
            except (ImportError, MochiError) as exc:
                failures[f"taichi@{count}"] = f"{type(exc).__name__}: {exc}"
                print(f"taichi at {count}: unavailable: {exc}", flush=True)
    tuning = []
    if args.tune:
        from engine.backends import cuda_grid

        model, state = freefall_scene(args.particles[0])
        defaults = (cuda_grid.BUCKETS_PER_PARTICLE, cuda_grid.FORCES_MIN_BLOCKS)
        for buckets in (1, 2, 4):
            for min_blocks in (1, 3):
                cuda_grid.BUCKETS_PER_PARTICLE, cuda_grid.FORCES_MIN_BLOCKS = buckets, min_blocks
                row = time_backend("cuda", model, state, steps=args.steps, warmup=args.warmup)
                row.update(buckets_per_particle=buckets, forces_min_blocks=min_blocks)
                tuning.append(row)
                print(json.dumps(row), flush=True)
        cuda_grid.BUCKETS_PER_PARTICLE, cuda_grid.FORCES_MIN_BLOCKS = defaults
    sweep = []
    if args.sweep:
        count = args.particles[0]
        for interval in args.sweep:
            model, state = freefall_scene(count, rebuild_interval=interval)
            for name in args.backends.split(","):
                if name == "cpu" or f"{name}@{count}" in failures:
                    continue
                sweep.append(time_backend(name, model, state, steps=max(args.steps, 2 * interval), warmup=args.warmup))
                print(json.dumps(sweep[-1]), flush=True)
    Path(args.out).write_text(json.dumps({"rows": rows, "sweep": sweep, "profiles": profiles,
                                          "tuning": tuning, "failures": failures}, indent=1))
    if tuning:
        print("\nCUDA grid tuning (ms/step: build / detect / update)")
        for row in tuning:
            print(f"- buckets/particle {row['buckets_per_particle']}, force blocks/SM {row['forces_min_blocks']}: "
                  f"{row['ms_per_step']:.3f} ({row['build_ms']:.3f} / {row['detect_ms']:.3f} / {row['update_ms']:.3f})")
    for profile in profiles:
        print(f"\nCUDA grid launches at {profile['particles']:,} particles ({profile['buckets']:,} buckets), median ms")
        for name, ms in profile["stages_ms"].items():
            print(f"- {name}: {ms:.4f}")
    print("\n" + markdown(rows))
    if sweep:
        print("\nRebuild-interval sweep\n\n" + markdown(sweep))
    for key, reason in failures.items():
        print(f"- {key}: {reason}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
