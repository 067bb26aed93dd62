"""``mochi bake``: bake a preset (or a .blend, through Blender's Python module) into a PLY cache."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from tqdm import tqdm

from ..backends import BACKEND_NAMES
from ..budget import DEFAULT_MAX_STEPS_PER_FRAME
from ..errors import MochiError, escape_controls
from .checks import MAX_FRAMES, MAX_PARTICLES, integer_in
from .options import add_rt_device_argument


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
    add_rt_device_argument(p)
    p.add_argument("--resume", action="store_true",
                   help="continue the cache in --out from its last frame; refused if the preset, the files it "
                        "names or the engine changed, or if a frame or the contact history is missing")
    p.add_argument("--overwrite", action="store_true", help="replace an existing cache in --out")
    p.add_argument("--no-estimate", action="store_true",
                   help="skip the short timing probe that estimates the bake time before a new bake")
    p.add_argument("--max-steps-per-frame", type=int, default=DEFAULT_MAX_STEPS_PER_FRAME, metavar="N",
                   help=f"refuse a bake needing more steps per frame (default {DEFAULT_MAX_STEPS_PER_FRAME:,}; "
                        "0 lifts the budget)")
    p.set_defaults(func=run)


def run(args) -> int:
    from ..backends import check_rt_device

    check_rt_device(args.backend, args.rt_device)  # before any work (a resume's backend is checked again)
    integer_in(args.frames, "--frames", 1, MAX_FRAMES)
    integer_in(args.particles, "--particles", 1, MAX_PARTICLES)
    if args.scene.endswith(".blend"):
        from .blender_bridge import run_headless

        for given, flag in ((args.particles is not None, "--particles"), (args.overwrite, "--overwrite"),
                            (args.max_steps_per_frame != DEFAULT_MAX_STEPS_PER_FRAME, "--max-steps-per-frame")):
            if given:
                raise MochiError(f"{flag} applies to presets only; set it in the .blend's Mochi panel instead.")

        extra = ["bake", args.scene] + (["--backend", args.backend] if args.backend else [])
        if args.rt_device:
            extra += ["--rt-device", args.rt_device]
        if args.out:
            extra += ["--out", args.out]
        if args.frames is not None:
            extra += ["--frames", str(args.frames)]
        if args.resume:
            extra.append("--resume")
        return run_headless(extra)
    if not args.out:
        raise MochiError("Give the cache folder with --out DIR.")
    from ..bake import BakeProgress, bake
    from ..cache import read_manifest
    from ..preset import load_preset, preset_inputs
    from ..scene import setup_from_preset

    out = Path(args.out)
    if args.resume and args.overwrite:
        raise MochiError("--resume and --overwrite exclude each other: resume continues the bake in --out, "
                         "overwrite replaces it.")
    if args.max_steps_per_frame < 0:
        raise MochiError(f"--max-steps-per-frame must be 0 (no budget) or positive, not {args.max_steps_per_frame}.")
    from ..bake import check_bake_folder

    # Before any packing or estimate: whether there is a bake to resume, or a folder to bake into.
    check_bake_folder(out, overwrite=args.overwrite, resume=args.resume)
    preset = load_preset(args.scene)
    frames = args.frames if args.frames is not None else preset.frames
    setup = None
    estimate = None  # measured before a new bake only
    backend = args.backend or "cpu"
    rt_device = args.rt_device
    if args.resume:
        manifest = read_manifest(out) if out.is_dir() else None
        particles = manifest.get("particles_requested") if manifest else None
        if args.particles is not None and manifest and args.particles != particles:
            raise MochiError(f"The bake in '{out}' was made with --particles {particles}; a resume cannot change it "
                             f"to {args.particles} (leave it out, or bake again with --overwrite).")
        if manifest and args.backend is None:
            backend = manifest.get("backend_requested", backend)
        if manifest and rt_device is None and backend in ("rt", "auto"):
            rt_device = manifest.get("rt_device_requested")  # the device the bake began on
        check_rt_device(backend, rt_device)
        # What the preset resolves to now: the resume is refused unless the bake's physics are these.
        setup = setup_from_preset(preset, particles=particles)
    else:
        check_rt_device(backend, rt_device)  # a preset bakes on cpu unless --backend says otherwise
        particles = args.particles
        setup = setup_from_preset(preset, particles=particles)
        for note in setup.notes:
            print(f"note: {note}", file=sys.stderr)
        if not args.no_estimate:
            from ..estimate import estimate_bake

            estimate = estimate_bake(setup, frames=frames, backend=backend, rt_device=rt_device,
                                     log=lambda message: print(message, file=sys.stderr))
            for line in estimate.lines():
                print(f"  {line}", file=sys.stderr)
    progress = BakeProgress(estimate=estimate)  # the estimate refines the remaining time as frames come
    bar = tqdm(total=frames, desc=escape_controls(preset.name), unit="frame", file=sys.stderr, dynamic_ncols=True)

    shown = [0.0]

    def on_frame(progress):
        # Also called every chunk of steps (on_step): the bar moves within long frames, at most 5×/s.
        now = time.perf_counter()
        if progress.steps_into_frame and now - shown[0] < 0.2:
            return
        shown[0] = now
        bar.n = round(progress.frames_exact, 2)
        bar.set_postfix_str(progress.backend_name.split(" ")[0], refresh=False)
        bar.refresh()

    began = time.perf_counter()
    try:
        progress = bake(setup, out, frames=frames, backend=backend, resume=args.resume,
                        overwrite=args.overwrite, progress=progress, on_frame=on_frame, on_step=on_frame,
                        info={"preset": str(Path(args.scene).resolve()), "particles_requested": particles,
                              "up_axis": preset.up_axis},
                        inputs=preset_inputs(preset, particles=particles),
                        max_steps_per_frame=args.max_steps_per_frame or None, rt_device=rt_device,
                        log=lambda message: print(message, file=sys.stderr))
    finally:
        bar.close()
    seconds = time.perf_counter() - began
    t = progress.timings
    rate = progress.particle_count * t.steps / t.total_s if t.total_s > 0 else 0.0
    print(f"Baked frames 1–{progress.frames_done} of '{escape_controls(preset.name)}' ({progress.particle_count:,} particles, "
          f"{progress.backend_name}) in {seconds:.1f} s, {t.steps} steps at {rate:.3g} particle-steps/s "
          f"-> {out}")
    return 0
