"""The paper's benchmarks on the GPU backends, side by side with the Taichi CUDA peer on the same state.

Every scene is built from its preset with ``engine.scene.setup_from_preset(load_preset(path),
particles=N)``, so the timed physics is exactly the preset's (dt, 'auto' stiffness, walls, rotating
gravity). A scene is named on the command line as ``NAME[@N1,N2,...]`` (``@native`` for the preset's
own count); ``--state NAME=FILE.npz`` replaces its particles by arrays packed elsewhere (positions,
radius, velocities; used for the bunnies, whose packer needs trimesh, absent on the GPU machine;
``--write-states out`` writes them), the physics still coming from the preset.

For each scene and size: ms per step of each backend with the build / detect / update breakdown from
CUDA events (the median of ``--repeats`` timed runs of ``--steps`` steps, each from the same state
after an untimed warm-up; the time covers the steps up to the last kernel's completion, not the
download of the state, which is timed apart as ``download_ms``), then the Taichi hashed-grid peer
(benchmarks/taichi_dem.py on Taichi's CUDA arch) timed the same way from the same state. With all
friction zero the peer runs its 'damper' tangential law, which then gives exactly the same forces as
'spring' without the per-contact history (its fastest path); ``--taichi-spring-too`` also times the
preset's own 'spring' at the first scene. With ``--late`` both are timed a second time from the
state at the end of the preset's frames (advanced on the cuda backend), where the grains have landed
and touch. Optionally the rebuild-interval sweep (the paper's Fig. 10) on the first scene, and a
per-launch profile of the CUDA grid step
and (``--tune``) a small grid of the CUDA grid's tuning constants.

``--backends`` names engine backends (cuda, optix, cpu) and ``rt:KIND``, the portable ray-traced backend
on one slangpy device kind (``rt:vulkan``, ``rt:cuda``, ``rt:d3d12``, ``rt:metal``): the paper's method on
the driver's own ray tracing, beside the CUDA grid, OptiX and the peer on the same state.

Results go to ``--out`` (JSON, rewritten after every row, so a run cut short keeps what it measured);
a markdown table is printed at the end. Plots: benchmarks/plot_gpu.py.

    python benchmarks/bench_gpu.py --presets freefall@1000000,2000000,5000000 rotating_gravity \\
        changing_radii_small changing_radii_large bunnies_14@native --state bunnies_14=b14.npz \\
        --steps 150 --repeats 3 --late --sweep 1 2 5 10 20 50 100 --out bench_gpu.json
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from engine.backends import make_backend  # noqa: E402
from engine.backends.gpu_toolchain import GpuUnavailable  # noqa: E402
from engine.errors import MochiError  # noqa: E402
from engine.preset import load_preset  # noqa: E402
from engine.scene import SceneSetup, setup_from_preset  # noqa: E402
from engine.state import State  # noqa: E402

PRESET_DIR = ROOT / "presets"


def start_backend(name: str, model):
    """Backend ``name`` for ``model``: an engine backend, or ``rt:KIND`` (the rt backend on that slangpy
    device kind); a device that cannot start is one sentence (``MochiError``/``GpuUnavailable``)."""
    name, _, kind = name.partition(":")
    return make_backend(name, model, log=lambda message: None, rt_device=kind or None)


# --- scenes -------------------------------------------------------------------------------------


def parse_scene(text: str, default_counts: list[int]) -> tuple[str, list[int | None]]:
    """``NAME[@N1,N2|@native]`` → (preset name, particle counts; None means the preset's own)."""
    name, _, counts = text.partition("@")
    if not counts:
        return name, list(default_counts)
    return name, [None if c == "native" else int(c) for c in counts.split(",")]


def build_scene(name: str, count: int | None, state_file: str | None) -> SceneSetup:
    """The scene of preset ``name`` (presets/NAME.toml or a path) with ``count`` particles."""
    path = Path(name) if name.endswith(".toml") else PRESET_DIR / f"{name}.toml"
    preset = load_preset(path)
    if state_file:
        data = np.load(state_file)
        return setup_from_preset(preset, replace_particles=(data["positions"], data["radius"], data["velocities"]))
    return setup_from_preset(preset, particles=count)


def with_rebuild_interval(setup: SceneSetup, interval: int) -> SceneSetup:
    """The same scene and state with another rebuild interval."""
    physics = dataclasses.replace(setup.model.physics, rebuild_interval=int(interval))
    return dataclasses.replace(setup, model=dataclasses.replace(setup.model, physics=physics))


def scene_info(setup: SceneSetup) -> dict:
    physics = setup.model.physics
    return {"scene": setup.name, "particles": setup.model.particle_count, "dt": physics.dt,
            "stiffness": physics.stiffness, "rebuild_interval": physics.rebuild_interval,
            "radius_min": float(setup.model.radius.min()), "radius_max": float(setup.model.radius.max()),
            "friction_model": physics.friction_model}


# --- timing -------------------------------------------------------------------------------------


def time_backend(name: str, setup: SceneSetup, state: State, *, steps: int, warmup: int,
                 repeats: int = 1, contacts: bool = True) -> tuple[dict, State]:
    """Time ``steps`` steps of backend ``name`` from ``state`` after ``warmup`` untimed steps.

    Returns the row of the median run (by wall time) and the final state of the last run.
    """
    model = setup.model
    runner = start_backend(name, model)
    if warmup:
        runner.set_state(state)
        runner.step(warmup)
        runner.get_state()
    runs = []
    for _ in range(repeats):
        runner.set_state(state)
        began = time.perf_counter()
        timings = runner.step(steps)  # returns after its last event completed
        seconds = time.perf_counter() - began
        began = time.perf_counter()
        final = runner.get_state()  # also raises SimulationDiverged
        runs.append((seconds, timings, time.perf_counter() - began))
    seconds, timings, download = sorted(runs, key=lambda run: run[0])[len(runs) // 2]
    n = model.particle_count
    row = {
        **scene_info(setup),
        "backend": name,
        "describe": runner.describe(),
        "start_step": int(state.step),
        "steps": steps,
        "warmup": warmup,
        "repeats": repeats,
        "ms_per_step": 1e3 * seconds / steps,
        "ms_per_step_all": [1e3 * run[0] / steps for run in runs],
        "particle_steps_per_s": n * steps / seconds,
        "build_ms": 1e3 * timings.build_s / steps,
        "detect_ms": 1e3 * timings.detect_s / steps,
        "update_ms": 1e3 * timings.update_s / steps,
        "rebuilds": timings.rebuilds,
        "download_ms": 1e3 * download,
        "finite": bool(np.isfinite(final.positions).all()),
        "active": int(final.active.sum()),
        "contacts": int(len(runner.contact_pairs())) if contacts else None,
    }
    return row, final


def advance(name: str, setup: SceneSetup, steps: int, *, chunk: int = 500) -> State:
    """The initial state advanced by ``steps`` steps on backend ``name``."""
    runner = start_backend(name, setup.model)
    runner.set_state(setup.state)
    done = 0
    while done < steps:
        runner.step(min(chunk, steps - done))
        done += min(chunk, steps - done)
    return runner.get_state()


def taichi_friction_model(physics, requested: str) -> str:
    """The tangential law the peer runs: 'damper' when every friction is zero (the same forces as
    'spring' then, without the history bookkeeping), else the preset's."""
    if requested != "auto":
        return requested
    frictionless = all(m.friction == 0.0 for m in physics.materials) and physics.domain.wall_friction == 0.0
    return "damper" if frictionless else physics.friction_model


def time_taichi(setup: SceneSetup, states: list[State], *, steps: int, warmup: int, repeats: int,
                arch: str = "cuda", friction_model: str = "auto") -> list[dict]:
    """Time the Taichi peer from each of ``states`` (one compiled instance for all of them).

    Each state: ``warmup`` untimed steps, then ``repeats`` runs of ``steps`` steps from the state, timed
    from a ``ti.sync()`` to the ``ti.sync()`` after the last step (as the backends are); the download
    of the final state is timed apart. The median run is kept.
    """
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import taichi as ti
    from taichi_dem import TaichiDem, _check_physics, accelerations, init

    model = setup.model
    physics = dataclasses.replace(model.physics,
                                  friction_model=taichi_friction_model(model.physics, friction_model))
    _check_physics(physics)
    init(arch)
    began = time.perf_counter()
    dem = TaichiDem(model.radius, model.mass, model.material_index, physics)
    rows = []
    for state in states:
        warm = accelerations(physics, int(state.step), warmup)
        timed = accelerations(physics, int(state.step), steps)
        dem.set_state(state.positions, state.velocities, state.active)
        for accel in warm:
            dem.step(accel)
        ti.sync()
        setup_seconds = time.perf_counter() - began
        runs = []
        for _ in range(repeats):
            dem.set_state(state.positions, state.velocities, state.active)
            ti.sync()
            t0 = time.perf_counter()
            for accel in timed:
                dem.step(accel)
            ti.sync()
            t1 = time.perf_counter()
            final = dem.get_state()
            runs.append((t1 - t0, time.perf_counter() - t1))
        seconds, download = sorted(runs)[len(runs) // 2]
        positions, _, active = final
        rows.append({
            **scene_info(setup),
            "backend": f"taichi-{arch}",
            "describe": f"Taichi {'.'.join(str(v) for v in ti.__version__)} {arch} (hashed grid), "
                        f"friction_model {physics.friction_model}",
            "taichi_friction_model": physics.friction_model,
            "start_step": int(state.step),
            "steps": steps,
            "warmup": warmup,
            "repeats": repeats,
            "ms_per_step": 1e3 * seconds / steps,
            "ms_per_step_all": [1e3 * run[0] / steps for run in runs],
            "particle_steps_per_s": model.particle_count * steps / seconds,
            "build_ms": None, "detect_ms": None, "update_ms": None, "rebuilds": None,
            "download_ms": 1e3 * download,
            "compile_and_warmup_s": setup_seconds,
            "finite": bool(np.isfinite(positions).all()),
            "active": int(active.sum()),
            "contacts": None,
            "history_overflow": bool(dem.history_overflowed()) if dem.spring else None,
            "_positions": positions,
        })
        began = time.perf_counter()
    return rows


def profile_cuda(setup: SceneSetup, *, repeats: int = 20) -> dict:
    """Median time [ms] of each launch of one CUDA grid step, timed one stage at a time with events."""
    from engine.backends.gpu_toolchain import BLOCK, blocks

    backend = make_backend("cuda", setup.model, log=lambda message: None)
    cupy = backend.cp
    backend.set_state(setup.state)
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
    return {"scene": setup.name, "particles": n, "buckets": sorter.bucket_count - 1,
            "grid_bits": list(backend.grid_bits), "stages_ms": out}


def device_info() -> dict:
    info = {"python": sys.version.split()[0], "host": platform.node()}
    try:
        info["nvidia_smi"] = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,driver_version,memory.total,clocks.max.sm", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=20).stdout.strip()
    except (OSError, subprocess.SubprocessError) as exc:
        info["nvidia_smi"] = f"unavailable: {exc}"
    try:
        import cupy

        info["cupy"] = cupy.__version__
        info["cuda_driver_api"] = cupy.cuda.runtime.driverGetVersion()
    except Exception as exc:  # no CuPy or no GPU: recorded, not fatal
        info["cupy"] = f"unavailable: {exc}"
    try:
        import taichi as ti

        info["taichi"] = ".".join(str(v) for v in ti.__version__)
    except ImportError:
        info["taichi"] = None
    return info


# --- output -------------------------------------------------------------------------------------


def _f(value, digits: int = 3) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def markdown(rows: list[dict]) -> str:
    """One line per (scene, particles, start state): every backend, the peer and the ratio."""
    head = ["scene", "particles", "from step", "backend", "ms/step", "build / detect / update ms",
            "particle-steps/s", "taichi ms/step", "taichi / backend", "contacts"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    peers = {(r["scene"], r["particles"], r["start_step"]): r for r in rows
             if r["backend"].startswith("taichi") and r.get("taichi_friction_model") != "spring"}
    for r in rows:
        if r["backend"].startswith("taichi"):
            continue
        peer = peers.get((r["scene"], r["particles"], r["start_step"]))
        lines.append("| " + " | ".join([
            r["scene"], f"{r['particles']:,}", str(r["start_step"]), r["backend"], _f(r["ms_per_step"]),
            f"{_f(r['build_ms'])} / {_f(r['detect_ms'])} / {_f(r['update_ms'])}",
            f"{r['particle_steps_per_s']:.3g}", _f(peer["ms_per_step"]) if peer else "–",
            f"{peer['ms_per_step'] / r['ms_per_step']:.1f}×" if peer else "–",
            "–" if r["contacts"] is None else f"{r['contacts']:,}"]) + " |")
    return "\n".join(lines)


def sweep_markdown(rows: list[dict]) -> str:
    lines = ["| rebuild interval | ms/step | build ms | detect ms | update ms | rebuilds |", "|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['rebuild_interval']} | {_f(r['ms_per_step'])} | {_f(r['build_ms'])} | "
                     f"{_f(r['detect_ms'])} | {_f(r['update_ms'])} | {r['rebuilds']} |")
    return "\n".join(lines)


class Results:
    """The JSON document, rewritten after every addition."""

    def __init__(self, path: str, argv: list[str]):
        self.path = Path(path)
        self.doc = {"command": "python benchmarks/bench_gpu.py " + " ".join(argv), "device": device_info(),
                    "rows": [], "sweep": [], "profiles": [], "tuning": [],
                    "failures": {}}
        self.save()

    def add(self, key: str, item) -> None:
        self.doc[key].append({k: v for k, v in item.items() if not k.startswith("_")})
        print(json.dumps(self.doc[key][-1]), flush=True)
        self.save()

    def fail(self, key: str, exc: BaseException) -> None:
        self.doc["failures"][key] = f"{type(exc).__name__}: {exc}"
        print(f"FAILED {key}: {type(exc).__name__}: {exc}", flush=True)
        self.save()

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text(json.dumps(self.doc, indent=1))


# --- driver -------------------------------------------------------------------------------------


def bench_scene(results: Results, setup: SceneSetup, args, *, spring_too: bool) -> None:
    """Every backend and the peer on one scene, from the initial state and (``--late``) a later one."""
    n = setup.model.particle_count
    states = [setup.state]
    if args.late and n <= args.late_max_particles:
        physics = setup.model.physics
        late_steps = setup.frames * physics.steps_per_frame
        try:
            began = time.perf_counter()
            states.append(advance(args.late_backend, setup, late_steps))
            print(f"advanced {setup.name} ({n:,}) by {late_steps} steps on {args.late_backend} in "
                  f"{time.perf_counter() - began:.1f} s", flush=True)
        except (GpuUnavailable, MochiError) as exc:
            results.fail(f"advance {setup.name}@{n}", exc)
    finals: dict[int, State] = {}
    for name in args.backends.split(","):
        if name == "cpu" and n > args.cpu_max_particles:
            continue
        for state in states if name != "cpu" else states[:1]:
            steps, warmup, repeats = ((args.cpu_steps, 1, 1) if name == "cpu"
                                      else (args.steps, args.warmup, args.repeats if n <= 2_000_000 else args.repeats_large))
            try:
                row, final = time_backend(name, setup, state, steps=steps, warmup=warmup, repeats=repeats)
                results.add("rows", row)
                if name == "cuda":
                    finals[int(state.step)] = final
            except (GpuUnavailable, MochiError) as exc:
                results.fail(f"{name} {setup.name}@{n} from step {state.step}", exc)
    if args.no_taichi:
        return
    models = ["auto"] + (["spring"] if spring_too else [])
    for friction_model in models:
        repeats = args.repeats if n <= 2_000_000 else args.repeats_large
        try:
            rows = time_taichi(setup, states, steps=args.steps, warmup=args.warmup, repeats=repeats,
                               arch=args.taichi_arch, friction_model=friction_model)
        except (ImportError, MochiError) as exc:
            results.fail(f"taichi ({friction_model}) {setup.name}@{n}", exc)
            continue
        for row in rows:
            ours = finals.get(row["start_step"])
            if ours is not None:  # same start state, same step count: how far apart did they end?
                gap = np.abs(ours.positions.astype(np.float64) - row["_positions"])
                row["max_position_difference_vs_cuda_m"] = float(gap.max())
                row["mean_position_difference_vs_cuda_m"] = float(gap.mean())
            results.add("rows", row)


def sweep(results: Results, setup: SceneSetup, args) -> None:
    """The paper's Fig. 10: the cuda backend at each rebuild interval of ``--sweep``, same scene and state."""
    for interval in args.sweep:
        try:
            row, _ = time_backend("cuda", with_rebuild_interval(setup, interval), setup.state,
                                  steps=max(args.sweep_steps, 2 * interval), warmup=args.warmup,
                                  repeats=args.repeats, contacts=False)
            results.add("sweep", row)
        except (GpuUnavailable, MochiError) as exc:
            results.fail(f"sweep {interval}", exc)


def tune(results: Results, setup: SceneSetup, args) -> None:
    """The cuda backend at buckets per particle × force-kernel register cap (module constants)."""
    from engine.backends import cuda_grid

    defaults = (cuda_grid.BUCKETS_PER_PARTICLE, cuda_grid.FORCES_MIN_BLOCKS)
    try:
        for buckets in (1, 2, 4):
            for min_blocks in (1, 3):
                cuda_grid.BUCKETS_PER_PARTICLE, cuda_grid.FORCES_MIN_BLOCKS = buckets, min_blocks
                try:
                    row, _ = time_backend("cuda", setup, setup.state, steps=args.steps, warmup=args.warmup,
                                          repeats=args.repeats, contacts=False)
                except (GpuUnavailable, MochiError) as exc:
                    results.fail(f"tune {buckets}/{min_blocks}", exc)
                    continue
                row.update(buckets_per_particle=buckets, forces_min_blocks=min_blocks)
                results.add("tuning", row)
    finally:
        cuda_grid.BUCKETS_PER_PARTICLE, cuda_grid.FORCES_MIN_BLOCKS = defaults


def write_states(args) -> int:
    """Pack each scene here (mesh emitters need trimesh) and save its particles for ``--state``."""
    folder = Path(args.write_states)
    folder.mkdir(parents=True, exist_ok=True)
    for text in args.presets:
        name, counts = parse_scene(text, args.particles)
        for count in counts:
            setup = build_scene(name, count, None)
            path = folder / f"{Path(name).stem}_{count or 'native'}.npz"
            np.savez_compressed(path, positions=setup.state.positions, radius=setup.model.radius,
                                velocities=setup.state.velocities)
            print(f"{path}: {setup.model.particle_count:,} particles")
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--presets", nargs="+", default=["freefall"],
                        help="scenes as NAME[@N1,N2,...] or NAME@native (presets/NAME.toml)")
    parser.add_argument("--particles", type=int, nargs="+", default=[1_000_000],
                        help="particle counts of a scene named without @")
    parser.add_argument("--state", action="append", default=[],
                        help="NAME=FILE.npz: particles (positions, radius, velocities) replacing the preset's")
    parser.add_argument("--steps", type=int, default=150, help="timed steps per run")
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=3, help="timed runs (median kept) up to 2M particles")
    parser.add_argument("--repeats-large", type=int, default=1, help="timed runs above 2M particles")
    parser.add_argument("--backends", default="cuda", help="comma-separated: cuda, optix, cpu, rt:vulkan, rt:cuda, ...")
    parser.add_argument("--cpu-steps", type=int, default=3, help="timed CPU steps (slow at 1M)")
    parser.add_argument("--cpu-max-particles", type=int, default=1_000_000)
    parser.add_argument("--no-taichi", action="store_true")
    parser.add_argument("--taichi-arch", default="cuda", choices=["cuda", "cpu"])
    parser.add_argument("--taichi-spring-too", action="store_true",
                        help="also time the peer with the preset's 'spring' law at the first scene")
    parser.add_argument("--late", action="store_true",
                        help="also time from the state at the end of the preset's frames")
    parser.add_argument("--late-max-particles", type=int, default=5_000_000)
    parser.add_argument("--late-backend", default="cuda")
    parser.add_argument("--sweep", type=int, nargs="*", default=[],
                        help="rebuild intervals to sweep on the first scene and size (cuda)")
    parser.add_argument("--sweep-steps", type=int, default=200)
    parser.add_argument("--profile", action="store_true", help="time each CUDA grid launch on the first scene")
    parser.add_argument("--tune", action="store_true",
                        help="cuda on the first scene: buckets per particle × force-kernel register cap")
    parser.add_argument("--write-states", metavar="FOLDER",
                        help="only build each scene and write its particles to FOLDER/NAME_COUNT.npz (for --state)")
    parser.add_argument("--out", default="bench_gpu.json")
    args = parser.parse_args(argv)
    if args.write_states:
        return write_states(args)
    states = dict(item.split("=", 1) for item in args.state)
    results = Results(args.out, argv)
    first = True
    for index, text in enumerate(args.presets):
        name, counts = parse_scene(text, args.particles)
        for count in counts:
            began = time.perf_counter()
            try:
                setup = build_scene(name, count, states.get(name))
            except MochiError as exc:
                results.fail(f"scene {name}@{count}", exc)
                continue
            print(f"scene {setup.name}: {setup.model.particle_count:,} particles, dt {setup.model.physics.dt:g} s, "
                  f"stiffness {setup.model.physics.stiffness:.4g} N/m, built in {time.perf_counter() - began:.1f} s",
                  flush=True)
            bench_scene(results, setup, args, spring_too=args.taichi_spring_too and first)
            if first:  # the sweep and the profile on the first scene, before the larger ones
                first = False
                sweep(results, setup, args)
                if args.tune:
                    tune(results, setup, args)
                if args.profile:
                    try:
                        results.add("profiles", profile_cuda(setup))
                    except Exception as exc:  # a profile that breaks on internals must not stop the run
                        results.fail(f"profile {setup.name}", exc)
            del setup
    doc = results.doc
    print("\n" + json.dumps(doc["device"]))
    for profile in doc["profiles"]:
        print(f"\nCUDA grid launches, {profile['scene']} {profile['particles']:,} particles, median ms")
        for name, ms in profile["stages_ms"].items():
            print(f"- {name}: {ms:.4f}")
    for row in doc["tuning"]:
        print(f"- tune: buckets/particle {row['buckets_per_particle']}, force blocks/SM {row['forces_min_blocks']}: "
              f"{row['ms_per_step']:.3f} ms ({_f(row['build_ms'])} / {_f(row['detect_ms'])} / {_f(row['update_ms'])})")
    print("\n" + markdown(doc["rows"]))
    if doc["sweep"]:
        print("\nRebuild-interval sweep\n\n" + sweep_markdown(doc["sweep"]))
    for key, reason in doc["failures"].items():
        print(f"- {key}: {reason}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
