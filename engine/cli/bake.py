"""``mochi bake``: bake a preset (or a .blend, through Blender's Python module) into a PLY cache."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from tqdm import tqdm

from ..backends import BACKEND_NAMES
from ..errors import MochiError


def register(subparsers) -> None:
    p = subparsers.add_parser("bake", help="bake a preset or a .blend into a per-frame PLY cache",
                              description="Bake PRESET.toml (or SCENE.blend) into DIR/manifest.json and "
                                          "DIR/frame_0001.ply ... Frames are written atomically; --resume "
                                          "continues a killed bake bit-for-bit.")
    p.add_argument("scene", help="preset .toml, or a .blend saved with Mochi settings")
    p.add_argument("--out", help="cache folder (for a .blend: defaults to the scene's cache folder)")
    p.add_argument("--frames", type=int, help="last frame to bake (frame 1 is the initial state); "
                                              "default: the preset's")
    p.add_argument("--particles", type=int, help="scale the preset to about this many particles")
    p.add_argument("--backend", choices=BACKEND_NAMES, default=None,
                   help="simulation backend (default: cpu for a preset, the scene's choice for a .blend)")
    p.add_argument("--resume", action="store_true", help="continue the cache in --out from its last frame")
    p.add_argument("--overwrite", action="store_true", help="replace an existing cache in --out")
    p.set_defaults(func=run)


def run(args) -> int:
    if args.scene.endswith(".blend"):
        from .blender_bridge import run_headless

        extra = ["bake", args.scene] + (["--backend", args.backend] if args.backend else [])
        if args.out:
            extra += ["--out", args.out]
        if args.frames:
            extra += ["--frames", str(args.frames)]
        if args.resume:
            extra.append("--resume")
        return run_headless(extra)
    if not args.out:
        raise MochiError("Give the cache folder with --out DIR.")
    from ..bake import bake
    from ..cache import ensure_cache_folder, read_manifest
    from ..preset import load_preset
    from ..scene import setup_from_preset

    out = Path(args.out)
    preset = load_preset(args.scene)
    ensure_cache_folder(out)
    frames = args.frames if args.frames is not None else preset.frames
    setup = None
    manifest = read_manifest(out) if out.is_dir() else None
    if not (args.resume and manifest and manifest.get("frames_completed", 0) >= 1):
        setup = setup_from_preset(preset, particles=args.particles)
        for note in setup.notes:
            print(f"note: {note}", file=sys.stderr)
    elif manifest.get("preset") and Path(manifest["preset"]).resolve() != Path(args.scene).resolve():
        raise MochiError(f"The cache in '{out}' was baked from '{manifest['preset']}', not '{args.scene}'.")
    bar = tqdm(total=frames, desc=preset.name, unit="frame", file=sys.stderr, dynamic_ncols=True)

    def on_frame(progress):
        bar.n = progress.frames_done
        bar.set_postfix_str(progress.backend_name.split(" ")[0], refresh=False)
        bar.refresh()

    began = time.perf_counter()
    try:
        progress = bake(setup, out, frames=frames, backend=args.backend or "cpu", resume=args.resume,
                        overwrite=args.overwrite, on_frame=on_frame,
                        info={"preset": str(Path(args.scene).resolve()), "particles_requested": args.particles,
                              "up_axis": "Y"},
                        log=lambda message: print(message, file=sys.stderr))
    finally:
        bar.close()
    seconds = time.perf_counter() - began
    t = progress.timings
    rate = progress.particle_count * t.steps / t.total_s if t.total_s > 0 else 0.0
    print(f"Baked frames 1–{progress.frames_done} of '{preset.name}' ({progress.particle_count:,} particles, "
          f"{progress.backend_name}) in {seconds:.1f} s, {t.steps} steps at {rate:.3g} particle-steps/s "
          f"-> {out}")
    return 0
