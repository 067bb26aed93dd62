"""``mochi render-preview``: render one cached frame with Cycles through Blender's Python module."""

from __future__ import annotations

from .options import add_overwrite_argument


#: Largest image side [pixels] (Blender's own limit is 65,536; 16K is the largest any preview needs) and
#: samples per pixel: a 200000 × 200000 image would need 600 GB of memory.
MAX_RESOLUTION = 16_384
MAX_SAMPLES = 65_536


def register(subparsers) -> None:
    p = subparsers.add_parser("render-preview", help="render one cached frame to PNG with Cycles (needs bpy)",
                              description="Render frame F of a Mochi cache with Cycles, headless, to a PNG.")
    p.add_argument("cache", help="cache folder (with manifest.json)")
    p.add_argument("--frame", type=int, required=True, help="frame number to render")
    p.add_argument("--out", required=True, help="output PNG")
    p.add_argument("--samples", type=int, default=16, help="Cycles samples (default 16)")
    p.add_argument("--resolution", type=int, nargs=2, default=(640, 480), metavar=("W", "H"))
    add_overwrite_argument(p, "an existing PNG that Mochi cannot prove it wrote (a preview this command wrote "
                              "before is replaced without it)")
    p.set_defaults(func=run)


def run(args) -> int:
    from ..atomic import check_output_file
    from ..cache import frame_path, read_manifest
    from ..errors import MochiError
    from ..output_files import plan_outputs
    from .blender_bridge import run_headless

    from .checks import MAX_FRAMES, integer_in

    # Everything that can be checked without Blender is checked before it starts (a render takes seconds).
    integer_in(args.frame, "--frame", 1, MAX_FRAMES)
    integer_in(args.samples, "--samples", 1, MAX_SAMPLES)
    for size in args.resolution:
        integer_in(size, "--resolution", 1, MAX_RESOLUTION)
    check_output_file(args.out, suffix=".png")
    plan_outputs([args.out], overwrite=args.overwrite)  # Blender checks it again before it writes
    manifest = read_manifest(args.cache)
    if manifest is None:
        raise MochiError(f"'{args.cache}' is not a Mochi cache folder (no manifest.json).")
    if not 1 <= args.frame <= manifest["frames_completed"] or not frame_path(args.cache, args.frame).is_file():
        raise MochiError(f"Frame {args.frame} is not in the cache '{args.cache}', which has frames "
                         f"1–{manifest['frames_completed']}.")

    return run_headless(["render-preview", args.cache, "--frame", str(args.frame), "--out", args.out,
                         "--samples", str(args.samples), "--resolution", *map(str, args.resolution)]
                        + (["--overwrite"] if args.overwrite else []))
