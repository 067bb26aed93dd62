"""``mochi export``: a bake cache as USD (usd-core) or Alembic (Blender's exporter, through bpy)."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

from ..errors import MochiError
from .checks import MAX_FRAMES, integer_in, number_in


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "export", help="export a cache to USD (points prim, one layer per frame) or Alembic",
        description="Export the complete frames of a Mochi cache. --usd OUT.usda|OUT.usdc writes a stage with "
                    "one UsdGeomPoints prim whose samples come from OUT_frames/frame.NNNN.usdc, one layer per "
                    "frame; running it again (while a bake goes on, say) writes only the new frames. --abc "
                    "OUT.abc uses Blender's Alembic exporter (needs bpy): grain centres and velocities only. "
                    "A file under a name the export writes is replaced only when Mochi can prove it wrote it "
                    "(its record .mochi-outputs.jsonl beside it), else refused before any work.")
    p.add_argument("cache", help="cache folder (with manifest.json)")
    p.add_argument("--usd", metavar="OUT", help="USD stage to write (.usda text or .usdc binary)")
    p.add_argument("--abc", metavar="OUT", help="Alembic file to write (.abc), through Blender's exporter")
    p.add_argument("--overwrite", action="store_true",
                   help="replace files under the names the export writes (the stage, OUT_frames/ layers, the .abc) "
                        "that Mochi cannot prove it wrote; a re-run replaces its own files without it")
    p.add_argument("--follow", action="store_true",
                   help="with --usd: keep exporting frames as a bake running elsewhere writes them, until --until "
                        "frames are in or none has landed for --idle seconds")
    p.add_argument("--until", type=int, metavar="N", help="with --follow: stop once the cache has N frames")
    p.add_argument("--idle", type=float, default=60.0, metavar="S",
                   help="with --follow: stop when no frame has landed for S seconds (default 60)")
    p.set_defaults(func=run)


def run(args) -> int:
    if not args.usd and not args.abc:
        raise MochiError("Say what to write: --usd OUT.usda (or .usdc) and/or --abc OUT.abc.")
    cache = Path(args.cache)
    if args.follow and not args.usd:
        raise MochiError("--follow goes with --usd.")
    # A NaN idle time compares false with everything: the follower would never stop.
    number_in(args.idle, "--idle", 0.0, 7 * 24 * 3600.0)
    integer_in(args.until, "--until", 1, MAX_FRAMES)
    if args.abc:  # checked before the USD export's work, and before Blender starts
        from ..output_files import plan_outputs

        if Path(args.abc).suffix.lower() != ".abc":
            raise MochiError(f"'{args.abc}' must end in .abc.")
        plan_outputs([args.abc], overwrite=args.overwrite)
    if args.usd and args.follow:
        from ..export.usd import follow_cache_to_usd

        result = follow_cache_to_usd(cache, args.usd, until=args.until, idle_s=args.idle, overwrite=args.overwrite,
                                     log=lambda line: print(line, file=sys.stderr, flush=True))
        print(f"Exported frames 1–{result.frames} of '{cache}' to '{result.stage_path}'.")
    elif args.usd:
        from ..export.usd import export_cache_to_usd

        from tqdm import tqdm

        with contextlib.ExitStack() as bars:
            bar = None

            def advance(frame: int, frames: int) -> None:
                nonlocal bar
                if bar is None:  # made at the first frame: a refusal before the work prints no bar
                    bar = bars.enter_context(tqdm(desc="USD", unit="frame", file=sys.stderr, dynamic_ncols=True))
                bar.total = frames
                bar.update(1)

            result = export_cache_to_usd(cache, args.usd, overwrite=args.overwrite, on_frame=advance)
        print(f"Exported frames 1–{result.frames} of '{cache}' to '{result.stage_path}' "
              f"({result.written} frame layers written, {result.frames - result.written} already current).")
    if args.abc:
        from ..cache import read_manifest
        from .blender_bridge import run_headless

        from ..export.usd import checked_frame

        manifest = read_manifest(cache) if cache.is_dir() else None
        if manifest is None:
            raise MochiError(f"'{cache}' is not a Mochi cache folder (no manifest.json).")
        # Blender's exporter reads the frames without checks: every one is proved intact first.
        for frame in range(1, manifest["frames_completed"] + 1):
            checked_frame(cache, manifest, frame)
        status = run_headless([str(cache.resolve()), str(Path(args.abc).absolute())]
                              + (["--overwrite"] if args.overwrite else []), script="export_alembic_cli.py")
        if status != 0:
            return status
    sys.stdout.flush()
    return 0
