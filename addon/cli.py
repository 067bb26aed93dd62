"""Command line of the add-on, shared by ``blender -b scene.blend -c mochi …`` and ``addon/headless.py``.

``bake`` does what the Bake button does (same snapshot, worker thread and playback object), printing
one line per frame, then saves the .blend so that it keeps its playback object. ``render-preview``
renders one cached frame with Cycles into a PNG. ``preset-export`` saves the scene as a preset.
Failures print one sentence and return 2.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import bpy

from ..engine.backends import BACKEND_NAMES, check_rt_device
from ..engine.cache_files import check_blend_cache_folder
from ..engine.cli.options import add_rt_device_argument
from ..engine.errors import MochiError


def build_parser(prog: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=prog, description="Mochi in Blender: bake a scene or render a cached frame.")
    commands = parser.add_subparsers(dest="command", required=True)
    bake = commands.add_parser("bake", help="Bake the open .blend's Mochi simulation, as the Bake button does.")
    bake.add_argument("--frames", type=int, default=None, help="Cache frames to bake (default: the scene's range).")
    bake.add_argument("--resume", action="store_true", help="Continue the existing cache instead of starting over.")
    bake.add_argument("--out", default=None,
                      help="Cache folder (default: the scene's); it is stored in the scene as its cache folder.")
    bake.add_argument("--backend", choices=BACKEND_NAMES, default=None,
                      help="Backend (default: the scene's setting).")
    add_rt_device_argument(bake)
    export = commands.add_parser("preset-export", help="Save the open .blend's Mochi scene as a preset TOML "
                                 "(meshes beside it, in meshes/).")
    export.add_argument("out", help="The preset .toml to write.")
    export.add_argument("--name", default=None, help="Preset name (default: the file name).")
    export.add_argument("--overwrite", action="store_true", help="Replace an existing preset file.")
    preview = commands.add_parser("render-preview", help="Render one cached frame with Cycles into a PNG.")
    preview.add_argument("cache", help="Cache folder (with manifest.json).")
    preview.add_argument("--frame", type=int, default=1, help="Cache frame to render (1 = initial state).")
    preview.add_argument("--out", required=True, help="PNG file to write.")
    preview.add_argument("--samples", type=int, default=16, help="Cycles samples per pixel.")
    preview.add_argument("--resolution", type=int, nargs=2, default=(640, 480), metavar=("W", "H"),
                         help="Image size in pixels.")
    preview.add_argument("--overwrite", action="store_true",
                         help="Replace an existing PNG that Mochi cannot prove it wrote.")
    return parser


def bake_open_file(*, frames: int | None, resume: bool, backend: str | None, out: str | None = None,
                   save: bool = True, rt_device: str | None = None) -> int:
    """Bake the scene of the open .blend; 0 on success, 1 when cancelled (Ctrl+C)."""
    from .bake_monitor import run_blocking, start_bake
    from .playback_owner import prepare_bake
    from .snapshot import backend_name

    check_rt_device(backend_name(bpy.context.scene, backend), rt_device)

    if out is None:
        # Headless, nobody can confirm a cache folder that the .blend itself points outside its folder
        # (the UI asks): such a folder must be named with --out (blender -b and `mochi bake` alike).
        check_blend_cache_folder(bpy.data.filepath, bpy.context.scene.mochi.cache_directory)
    else:
        # Kept relative to the .blend when given relative, as Blender's own paths are ('//...'), so the
        # scene still finds its cache when the project folder moves or a farm mounts it elsewhere.
        folder = Path(out)
        bpy.context.scene.mochi.cache_directory = (str(folder) if folder.is_absolute()
                                                   else bpy.path.relpath(str(folder.resolve())))

    prepare_bake(bpy.context.scene)
    monitor = start_bake(bpy.context, resume=resume, frames=frames, backend=backend, rt_device=rt_device)
    outcome = run_blocking(monitor, log=lambda line: print(line, flush=True))
    if save and bpy.data.filepath and outcome.frames_written > 0:
        bpy.ops.wm.save_mainfile()
    if outcome.level == "ERROR":
        raise MochiError(outcome.message)
    print(f"mochi: {outcome.message}", flush=True)
    return 1 if outcome.cancelled else 0


def render_preview(cache: str, *, frame: int, out: str, samples: int, resolution: tuple[int, int],
                   overwrite: bool = False) -> int:
    """Render cache frame ``frame`` of ``cache`` into the PNG ``out`` in a fresh empty scene."""
    from .preview_render import render_cache_frame

    path = render_cache_frame(Path(cache), frame=frame, out=Path(out), samples=samples, resolution=resolution,
                              overwrite=overwrite)
    print(f"mochi: wrote {path}", flush=True)
    return 0


def export_preset(out: str, *, name: str | None, overwrite: bool) -> int:
    """Save the open scene as the preset ``out`` (see ``addon.preset_export``)."""
    from .operators.presets import save_scene_preset

    path = Path(out)  # engine.preset_writer refuses files Mochi cannot prove it wrote, unless overwrite
    written = save_scene_preset(bpy.context, path, name=name or path.stem, overwrite=overwrite)
    print(f"mochi: wrote the preset {written}", flush=True)
    return 0


def run(argv: list[str], *, prog: str = "mochi") -> int:
    """Parse and run; MochiError becomes one line on stderr and exit status 2."""
    try:
        args = build_parser(prog).parse_args(argv)  # a bad --rt-device is a MochiError (engine.cli.options)
        if args.command in ("bake", "preset-export") and not bpy.data.filepath:
            raise MochiError("No .blend file is open; give it before the command, e.g. "
                             f"blender -b scene.blend -c mochi {args.command}.")
        if args.command == "bake":
            return bake_open_file(frames=args.frames, resume=args.resume, backend=args.backend, out=args.out,
                                  rt_device=args.rt_device)
        if args.command == "preset-export":
            return export_preset(args.out, name=args.name, overwrite=args.overwrite)
        return render_preview(args.cache, frame=args.frame, out=args.out, samples=args.samples,
                              resolution=tuple(args.resolution), overwrite=args.overwrite)
    except MochiError as exc:
        print(f"mochi: error: {exc}", file=sys.stderr, flush=True)
        return 2


def cli_command(argv: list[str]) -> int:
    """Handler registered with bpy.utils.register_cli_command('mochi', …)."""
    return run(list(argv), prog="blender -b scene.blend -c mochi")
