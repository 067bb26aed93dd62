"""Collider benchmark: a bowl full of grains, with and without its mesh collider, on every backend here.

The bowl_pour preset's bowl (presets/meshes/bowl.obj, placed as in the preset) is filled with a
jittered lattice of grains up to its rim inside a layer of grains resting on the bowl (the share
touching it is printed; ``--settle-steps`` lets it settle on the CPU first). Every backend available
here (cpu; cuda and optix on a GPU) is timed from that state with the collider and without it (the
same grains then fall through where the bowl was). The colliders' own time (forces, swept test,
moving the mesh) is measured inside the step and is a part of detect (forces) and update (swept test);
the run without the bowl shows the grains alone, with fewer contacts as they fall apart.
The Taichi DEM peer (benchmarks/taichi_dem.py) runs the grains-only scene from the same state: it has
no mesh colliders, so the peer ratio is of the grain part only.

Friction model 'damper' (every backend runs it).

    .venv/bin/python benchmarks/bench_colliders.py [--particles 50000] [--steps 100] [--settle-steps 2000]
        [--json OUT.json]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import platform
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))


def bowl_full_of_grains(particles: int, settle_steps: int):
    """(with_collider, without_collider) SceneSetups sharing one initial state of ~``particles`` grains,
    settled for ``settle_steps`` steps on the CPU so the outer layer rests on the bowl."""
    from engine.preset import load_preset
    from engine.scene import setup_from_arrays, setup_from_preset

    preset_setup = setup_from_preset(load_preset(ROOT / "presets" / "bowl_pour.toml"), particles=1000)
    colliders = preset_setup.model.colliders
    bowl = colliders.colliders[0]
    vertices = bowl.vertices_at(0.0)[0]
    centre = np.array([vertices[:, 0].mean(), vertices[:, 1].max(), vertices[:, 2].mean()])  # rim centre
    bowl_radius = float(np.linalg.norm(vertices - centre, axis=1).max())
    inner = bowl_radius - 0.5 * bowl.thickness
    # Lattice spacing for the requested count in the hemisphere; radii 0.4–0.5 spacing (no overlaps).
    spacing = (2.0 / 3.0 * np.pi * inner ** 3 / particles) ** (1.0 / 3.0)
    rng = np.random.default_rng(0)
    axis = np.arange(-inner, inner + spacing, spacing)
    grid = np.stack(np.meshgrid(axis, axis, axis, indexing="ij"), -1).reshape(-1, 3)
    radius = rng.uniform(0.4, 0.5, len(grid)) * spacing
    grid = grid + rng.uniform(-0.05, 0.05, grid.shape) * spacing
    # A layer resting on the bowl (2% of a radius deep): Fibonacci points on the lower hemisphere of
    # radius inner − r_shell, about 1.05 spacings apart; the lattice stays clear of it.
    r_shell = 0.45 * spacing
    shell_radius = inner - 0.98 * r_shell
    full = int(4.0 * np.pi * shell_radius ** 2 / (1.05 * spacing) ** 2)
    k = np.arange(full) + 0.5
    polar = np.arccos(1.0 - 2.0 * k / full)
    azimuth = np.pi * (1.0 + 5.0 ** 0.5) * k
    shell = shell_radius * np.stack([np.sin(polar) * np.cos(azimuth), np.cos(polar),
                                     np.sin(polar) * np.sin(azimuth)], 1)
    shell = shell[shell[:, 1] < -r_shell]
    keep = (grid[:, 1] < -radius) & (np.linalg.norm(grid, axis=1) + radius < shell_radius - r_shell)
    grid = np.concatenate([grid[keep], shell])
    radius = np.concatenate([radius[keep], np.full(len(shell), r_shell)])
    positions = (centre + grid).astype(np.float32)
    physics = preset_setup.model.physics
    kwargs = dict(positions=positions, radius=radius.astype(np.float32), materials=physics.materials,
                  domain=physics.domain, gravity=physics.gravity, stiffness=physics.stiffness, fps=24.0,
                  friction_model="damper", name="bowl full of grains",
                  rotation=False, integrator="euler")  # the paper's model, which the Taichi peer runs
    with_collider = setup_from_arrays(**kwargs, colliders=colliders)
    if settle_steps:
        from engine.backends import make_backend

        settle = make_backend("cpu", with_collider.model)
        settle.set_state(with_collider.state)
        settle.step(settle_steps)
        state = settle.get_state()
        state.step = 0
        kwargs.update(positions=state.positions, velocities=state.velocities)
        with_collider = setup_from_arrays(**kwargs, colliders=colliders.fresh_copy(),
                                          dt=with_collider.model.physics.dt)
    # The same dt in both, so the steps are the same work.
    without = setup_from_arrays(**kwargs, dt=with_collider.model.physics.dt)
    return with_collider, without


def touching_count(setup) -> int:
    """Grains the collider pushes in the initial state (CPU reference)."""
    m, s = setup.model, setup.state
    force = np.zeros((m.particle_count, 3))
    m.colliders.fresh_copy().add_forces(0.0, s.positions, s.velocities, m.radius, m.mass, m.material_index,
                                        s.active, force, m.physics)
    return int(np.count_nonzero(force.any(axis=1)))


def main() -> None:
    from engine.backends.select import available_backends, unavailable_backends
    from engine.benchmark import run_benchmark

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--particles", type=int, default=50_000)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--settle-steps", type=int, default=0, help="CPU steps that settle the grains first")
    parser.add_argument("--backends", default="", help="comma-separated (default: every available one)")
    parser.add_argument("--no-taichi", action="store_true")
    parser.add_argument("--json", help="write all results here")
    args = parser.parse_args()
    with_collider, without = bowl_full_of_grains(args.particles, args.settle_steps)
    # rt (static mesh colliders: engine.backends.rt_colliders) is not a default here: name it in --backends
    # (where only lavapipe has ray tracing it runs on the CPU, exact but slow).
    backends = args.backends.split(",") if args.backends else [b for b in available_backends() if b != "rt"]
    for name in [b for b in backends if b in unavailable_backends()]:
        print(f"skipping {name}: {unavailable_backends()[name]}")
        backends.remove(name)
    rows = []
    for backend in backends:
        a = run_benchmark(with_collider, backend=backend, steps=args.steps, warmup=3)
        b = run_benchmark(without, backend=backend, steps=args.steps, warmup=3)
        rows.append({"backend": backend, "with": a, "without": b})
    peer = None
    if not args.no_taichi:
        from taichi_dem import init, run_taichi_dem

        arch = "cuda" if any(b in ("cuda", "optix") for b in backends) else "cpu"
        init(arch)
        m = without.model
        peer = run_taichi_dem(without.state.positions, without.state.velocities, m.radius, m.mass, m.material_index,
                              dataclasses.replace(m.physics), steps=args.steps, arch=arch, warmup_steps=3)
        peer = {k: v for k, v in peer.items() if not hasattr(v, "shape")}
    n = with_collider.model.particle_count
    touching = touching_count(with_collider)
    triangles = with_collider.model.colliders.colliders[0].triangles.shape[0]
    print(f"\n{platform.processor() or platform.machine()}; {n:,} grains in a bowl of {triangles:,} triangles, "
          f"{args.steps} steps, dt = {with_collider.model.physics.dt:.3g} s; {touching:,} grains "
          f"({100.0 * touching / n:.0f}%) touch the bowl at the start\n")
    print("| backend | with bowl ms/step | build / detect / update ms | of which colliders ms |"
          " without bowl ms/step | particle-steps/s (with) |")
    print("| --- | --- | --- | --- | --- | --- |")
    for row in rows:
        a, b = row["with"], row["without"]
        print(f"| {a['backend']} | {a['ms_per_step']:.2f} | {a['build_ms_per_step']:.2f} / "
              f"{a['detect_ms_per_step']:.2f} / {a['update_ms_per_step']:.2f} | {a['colliders_ms_per_step']:.2f} | "
              f"{b['ms_per_step']:.2f} | {a['particle_steps_per_s']:.3g} |")
    if peer is not None:
        ours = next((row["without"] for row in rows if row["backend"] in ("cuda", "cpu")), rows[0]["without"])
        print(f"\nTaichi peer ({peer.get('arch')}), grains only: {peer['ms_per_step']:.2f} ms/step; "
              f"{ours['backend']} without the bowl is {peer['ms_per_step'] / ours['ms_per_step']:.2f}× faster.")
    if args.json:
        Path(args.json).write_text(json.dumps({"rows": rows, "peer": peer, "particles": n, "triangles": triangles,
                                               "touching": touching},
                                              indent=1, default=str))


if __name__ == "__main__":
    main()
