"""``mochi pack``: fill a mesh file with spheres and write them as a point PLY."""

from __future__ import annotations

import time

import numpy as np

from ..errors import MochiError
from ..settings_schema import setting
from .options import add_overwrite_argument


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "pack", help="fill a mesh (OBJ/PLY/STL...) with spheres and write x y z radius id to a PLY",
        description="Pack MESH with spheres of radius R on a hexagonal close packed lattice, small spheres "
                    "(R times --small-ratio) filling the skin next to the surface, and write the centres, "
                    "radii and ids to --out. Prints the count per radius and the packing fraction.")
    p.add_argument("mesh", help="mesh file read with trimesh (OBJ, PLY, STL, GLB, OFF...)")
    size = p.add_mutually_exclusive_group(required=True)
    size.add_argument("--radius", type=float, help="large sphere radius [m] (after --fit)")
    size.add_argument("--count", type=int, help="target particle count; the radius is chosen to hit it")
    small_ratio = setting("small_ratio")
    p.add_argument("--small-ratio", type=float, default=small_ratio.default,
                   help=f"small radius over large radius, {small_ratio.bounds_text()}; 1 packs one radius "
                        f"(default {small_ratio.default:g})")
    p.add_argument("--shell", type=int, default=0, metavar="LAYERS",
                   help="hollow shell: the small skin over LAYERS large diameters (default 0: solid)")
    p.add_argument("--seed", type=int, default=0, help="jitter seed (default 0)")
    p.add_argument("--jitter", type=float, default=0.0,
                   help="random displacement as a fraction of each radius, in [0, 0.5] (default 0)")
    p.add_argument("--fit", type=float, help="scale the mesh so its largest bounding-box edge is F metres")
    p.add_argument("--out", required=True, help="output .ply (vertex properties x y z radius id)")
    add_overwrite_argument(p, "an existing --out that Mochi cannot prove it wrote (a file of the same name that "
                              "this command wrote before is replaced without it; MESH never is)")
    p.set_defaults(func=run)


def run(args) -> int:
    from ..output_files import plan_outputs
    from ..packing import pack_mesh_file
    from ..ply import write_points

    from .checks import MAX_PARTICLES, integer_in, number_in

    if not args.out.lower().endswith(".ply"):
        raise MochiError(f"The output '{args.out}' must be a .ply file.")
    number_in(args.radius, "--radius", 1e-9, 1e6)
    number_in(args.fit, "--fit", 1e-9, 1e6)
    integer_in(args.count, "--count", 1, MAX_PARTICLES)
    integer_in(args.shell, "--shell", 0, 10_000)
    integer_in(args.seed, "--seed", 0, 2**32 - 1)
    number_in(args.small_ratio, "--small-ratio", 1e-6, 1.0)
    number_in(args.jitter, "--jitter", 0.0, 0.5)
    plan = plan_outputs([args.out], overwrite=args.overwrite, inputs=[args.mesh])  # before any packing
    began = time.perf_counter()
    result = pack_mesh_file(args.mesh, radius=args.radius, count=args.count, small_ratio=args.small_ratio,
                            shell_layers=args.shell, seed=args.seed, jitter=args.jitter, fit=args.fit)
    seconds = time.perf_counter() - began
    positions = result.positions
    plan.write_file(args.out, lambda path: write_points(path, {
        "x": positions[:, 0], "y": positions[:, 1], "z": positions[:, 2],
        "radius": result.radius,
        "id": np.arange(result.particle_count, dtype=np.int32),
    }))
    target = ""
    if args.count is not None:
        miss = (result.particle_count - args.count) / args.count
        target = f" (target {args.count:,}, {miss:+.1%}, radius {result.large_radius:.6g} m)"
    print(f"Packed {result.summary()}{target} in {seconds:.2f} s; wrote {args.out}")
    return 0
