"""``mochi bench``: time a backend on a preset's scene (or on a given PLY state)."""

from __future__ import annotations

import json

from ..backends import BACKEND_NAMES
from .options import add_rt_device_argument


def register(subparsers) -> None:
    p = subparsers.add_parser("bench", help="time the simulation of a preset",
                              description="Run STEPS steps of a preset and print ms per step, particle-steps "
                                          "per second, the build/detect/update breakdown and the physics used.")
    p.add_argument("preset", help="preset .toml")
    p.add_argument("--particles", type=int, help="scale the preset to about this many particles")
    p.add_argument("--steps", type=int, default=100, help="timed steps (default 100)")
    p.add_argument("--warmup", type=int, default=3, help="untimed steps first, state restored (default 3)")
    p.add_argument("--state", help="PLY (x y z radius, optional vx vy vz) replacing the preset's particles")
    p.add_argument("--backend", default="cpu", choices=BACKEND_NAMES)
    add_rt_device_argument(p)
    p.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    p.set_defaults(func=run)


def run(args) -> int:
    from ..backends import check_rt_device
    from ..benchmark import run_benchmark
    from ..errors import MochiError
    from ..ply import read_particles
    from ..preset import load_preset
    from ..scene import setup_from_preset

    from .checks import MAX_PARTICLES, integer_in

    check_rt_device(args.backend, args.rt_device)
    if args.steps < 1:
        raise MochiError(f"--steps must be at least 1, not {args.steps}.")
    integer_in(args.steps, "--steps", 1, 10_000_000)
    integer_in(args.warmup, "--warmup", 0, 10_000_000)
    integer_in(args.particles, "--particles", 1, MAX_PARTICLES)
    preset = load_preset(args.preset)
    replace = read_particles(args.state) if args.state else None
    setup = setup_from_preset(preset, particles=args.particles, replace_particles=replace)
    result = run_benchmark(setup, backend=args.backend, steps=args.steps, warmup=args.warmup, rt_device=args.rt_device)
    if args.json:
        print(json.dumps(result))
        return 0
    p = result["physics"]
    print(f"{result['scene']}: {result['particles']:,} particles, {result['steps']} steps on {result['backend']}")
    print(f"  {result['seconds']:.3f} s, {result['ms_per_step']:.3f} ms/step, "
          f"{result['particle_steps_per_s']:.3g} particle-steps/s")
    print(f"  build {result['build_ms_per_step']:.3f} / detect {result['detect_ms_per_step']:.3f} / update "
          f"{result['update_ms_per_step']:.3f} ms per step, {result['rebuilds']} rebuilds")
    if result["colliders_ms_per_step"] > 0.0:
        print(f"  of which mesh colliders {result['colliders_ms_per_step']:.3f} ms per step")
    print(f"  dt {p['dt']:.3g} s, stiffness {p['stiffness']:.3g} N/m, restitution {p['restitution']}, friction "
          f"{p['friction']}, density {p['density']} kg/m³, gravity {p['gravity']} m/s², box {p['box_lo']}–"
          f"{p['box_hi']} m, radii {p['radius_min']:.3g}–{p['radius_max']:.3g} m")
    return 0
