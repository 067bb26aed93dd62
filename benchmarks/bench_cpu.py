"""CPU benchmark: `mochi bench` against the Taichi DEM peer on the same state and physics.

For each preset: build the scene once, time our CPU backend (engine.benchmark.run_benchmark, the code
behind `mochi bench`) and the Taichi hashed-grid peer (benchmarks/taichi_dem.py, arch cpu) from the
same initial state, and print one markdown row per preset with the ratio. Also measures the peak
memory of a 1M-particle freefall step in a child process.

    .venv/bin/python benchmarks/bench_cpu.py [--particles 100000] [--steps 200] [--json OUT.json]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import platform
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

PRESETS = ("freefall", "rotating_gravity", "changing_radii_small", "changing_radii_large")


def bench_preset(name: str, particles: int, steps: int) -> dict:
    import numba

    from engine.benchmark import run_benchmark
    from engine.preset import load_preset
    from engine.scene import setup_from_preset
    from bench_gpu import taichi_friction_model
    from taichi_dem import init, run_taichi_dem

    setup = setup_from_preset(load_preset(ROOT / "presets" / f"{name}.toml"), particles=particles)
    ours = run_benchmark(setup, backend="cpu", steps=steps, warmup=3)
    init("cpu")
    m = setup.model
    # Frictionless scenes: both sides skip the tangential springs (identical forces, F_t = 0).
    physics = dataclasses.replace(m.physics, friction_model=taichi_friction_model(m.physics, "auto"))
    peer = run_taichi_dem(setup.state.positions, setup.state.velocities, m.radius, m.mass, m.material_index,
                          physics, steps=steps, arch="cpu", warmup_steps=3)
    return {"preset": name, "ours": ours, "peer": {k: v for k, v in peer.items()
                                                      if not hasattr(v, "shape")},
            "ratio": peer["ms_per_step"] / ours["ms_per_step"], "numba_threads": numba.get_num_threads()}


def peak_memory_1m(steps: int = 5) -> float:
    """Peak resident memory [MB] of a child process stepping the 1M-particle freefall."""
    code = ("import resource; from engine.preset import load_preset; from engine.scene import setup_from_preset;"
            "from engine.backends.cpu import BackendCpu;"
            f"s = setup_from_preset(load_preset('{ROOT / 'presets' / 'freefall.toml'}'), particles=1_000_000);"
            f"b = BackendCpu(s.model); b.set_state(s.state); b.step({steps}); del s;"
            "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--particles", type=int, default=100_000)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--presets", nargs="*", default=list(PRESETS))
    parser.add_argument("--json", help="write all results here")
    parser.add_argument("--skip-memory", action="store_true")
    args = parser.parse_args()
    rows = [bench_preset(name, args.particles, args.steps) for name in args.presets]
    print(f"\nCPU: {platform.processor() or platform.machine()}, {rows[0]['numba_threads']} threads; "
          f"{args.particles:,} particles, {args.steps} steps from the preset's initial state\n")
    print("| preset | mochi cpu ms/step | build / detect / update ms | particle-steps/s | taichi cpu ms/step | mochi speed-up |")
    print("| --- | --- | --- | --- | --- | --- |")
    for row in rows:
        o, p = row["ours"], row["peer"]
        print(f"| {row['preset']} | {o['ms_per_step']:.2f} | {o['build_ms_per_step']:.2f} / {o['detect_ms_per_step']:.2f} / "
              f"{o['update_ms_per_step']:.2f} | {o['particle_steps_per_s']:.3g} | {p['ms_per_step']:.2f} | "
              f"{row['ratio']:.2f}× |")
    result = {"rows": rows, "python": sys.version}
    if not args.skip_memory:
        result["peak_rss_mb_1m"] = peak_memory_1m()
        print(f"\nPeak resident memory, 1M-particle freefall, 5 steps: {result['peak_rss_mb_1m']:.0f} MB")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1, default=str))


if __name__ == "__main__":
    main()
