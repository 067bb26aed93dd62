"""``mochi wedge``: bake every combination of varied preset settings, then a contact sheet."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

from ..backends import BACKEND_NAMES
from ..errors import MochiError
from .options import add_rt_device_argument


def register(subparsers) -> None:
    from ..wedge import SETTINGS

    p = subparsers.add_parser(
        "wedge", help="bake a preset once per combination of varied settings, with a contact sheet",
        description="Bake PRESET once per combination of the --vary values into DIR/NAME-VALUE_..., several at a "
                    "time, record them in DIR/wedge.json and draw the last frames into DIR/contact_sheet.png. "
                    "Settings a wedge can vary: " + "; ".join(f"{k} ({s.help})" for k, s in SETTINGS.items()) + ".")
    p.add_argument("preset", help="preset .toml")
    p.add_argument("--vary", action="append", default=[], metavar="NAME=VALUES", required=True,
                   help="a setting and its values: friction=0.3,0.5,0.7 or seed=1..4 (integers, inclusive); repeat "
                        "for more settings (all combinations are baked)")
    p.add_argument("--out", required=True, metavar="DIR", help="wedge folder (one cache folder per combination inside)")
    p.add_argument("--frames", type=int, help="last frame to bake (default: the preset's)")
    p.add_argument("--particles", type=int, help="scale the preset to about this many particles")
    p.add_argument("--backend", choices=BACKEND_NAMES, default="cpu", help="simulation backend (default cpu)")
    add_rt_device_argument(p)
    p.add_argument("--jobs", type=int, help="CPU bakes at once (default: one per core, the cores shared out)")
    p.add_argument("--gpus", type=int, help="GPUs to use with --backend cuda/optix, one bake per GPU (default 1)")
    p.add_argument("--resume", action="store_true", help="continue the variants' bakes from their last frames")
    p.add_argument("--overwrite", action="store_true", help="bake variants again whose folders hold bakes")
    p.add_argument("--only", type=int, metavar="K", help="bake only combination K (1-based, as in wedge.json); no "
                                                          "contact sheet (what each Flamenco task runs)")
    p.add_argument("--sheet-only", action="store_true", help="bake nothing; draw the contact sheet of what is baked")
    p.add_argument("--no-sheet", action="store_true", help="do not draw the contact sheet")
    p.add_argument("--flamenco", metavar="JOB.json",
                   help="bake nothing; write this wedge as a Flamenco job (job type mochi-wedge) to submit")
    p.add_argument("--flamenco-mochi", default="mochi", metavar="EXE",
                   help="the mochi command on the Flamenco workers (default: mochi)")
    p.add_argument("--flamenco-worker-tag", default="", metavar="TAG_ID",
                   help="Flamenco worker tag ID for the job (e.g. the GPU workers'); default: any worker")
    p.set_defaults(func=run)


def _wedge_arguments(args) -> list[str]:
    """The arguments that define this wedge (preset, values, folder, bake options), for the farm's tasks."""
    argv = [str(Path(args.preset).resolve())]
    for vary in args.vary:
        argv += ["--vary", vary]
    argv += ["--out", str(Path(args.out).resolve()), "--backend", args.backend]
    if args.rt_device is not None:
        argv += ["--rt-device", args.rt_device]
    if args.frames is not None:
        argv += ["--frames", str(args.frames)]
    if args.particles is not None:
        argv += ["--particles", str(args.particles)]
    return argv


def _wedge_outputs(args, out: Path):
    """The plan of the files this run writes in the wedge folder (``engine.output_files``): wedge.json
    unless --only or --sheet-only, the contact sheet unless --only or --no-sheet."""
    from ..output_files import plan_outputs
    from ..wedge import WEDGE_MANIFEST
    from ..wedge_sheet import CONTACT_SHEET_NAME

    names = [] if args.only is not None else (
        ([] if args.sheet_only else [WEDGE_MANIFEST]) + ([] if args.no_sheet else [CONTACT_SHEET_NAME]))
    return plan_outputs([out / name for name in names], overwrite=args.overwrite)


def run(args) -> int:
    from ..preset import read_preset_document
    from ..wedge import WedgeBakeOptions, WedgeRecord, bake_wedge, check_folders, expand, parse_vary, variant_preset

    from ..backends import check_rt_device
    from .checks import MAX_FRAMES, MAX_PARTICLES, integer_in

    check_rt_device(args.backend, args.rt_device)
    # --frames 0 must not mean 'the preset's frames' (0 is falsy): refused, as by mochi bake.
    integer_in(args.frames, "--frames", 1, MAX_FRAMES)
    integer_in(args.particles, "--particles", 1, MAX_PARTICLES)
    integer_in(args.jobs, "--jobs", 1, 4096)
    integer_in(args.gpus, "--gpus", 1, 1024)
    axes = [parse_vary(text) for text in args.vary]
    out = Path(args.out)
    variants = expand(axes, out)
    document = read_preset_document(args.preset)
    presets = [variant_preset(document, args.preset, variant.values) for variant in variants]  # all checked first
    if args.only is not None:
        if not 1 <= args.only <= len(variants):
            raise MochiError(f"--only {args.only}: this wedge has combinations 1–{len(variants)}.")
        variants = [variants[args.only - 1]]
    if args.flamenco:
        from ..flamenco import write_wedge_job
        from ..output_files import plan_outputs

        job_plan = plan_outputs([args.flamenco], overwrite=args.overwrite)
        path = write_wedge_job(job_plan, args.flamenco, name=f"{presets[0].name} wedge",
                               variant_count=len(presets), wedge_arguments=shlex.join(_wedge_arguments(args)),
                               mochi=args.flamenco_mochi, backend=args.backend, worker_tag=args.flamenco_worker_tag)
        print(f"Wrote the Flamenco job of {len(presets)} bakes and a contact sheet to '{path}'.")
        return 0
    record = WedgeRecord(str(Path(args.preset).resolve()), axes, expand(axes, out))
    outputs = _wedge_outputs(args, out)  # a user's wedge.json or contact sheet: refused before any bake
    if not args.sheet_only:
        check_folders(variants, resume=args.resume, overwrite=args.overwrite)
        options = WedgeBakeOptions(frames=args.frames, particles=args.particles, backend=args.backend,
                                   resume=args.resume, overwrite=args.overwrite, rt_device=args.rt_device)

        def report(variant, result):
            state = f"failed: {result.error}" if result.error else f"frames 1–{result.frames_done}"
            print(f"[{variant.index}/{len(record.variants)}] {variant.label}: {state} ({result.seconds:.1f} s)",
                  file=sys.stderr, flush=True)

        results = bake_wedge(str(args.preset), variants, options, jobs=args.jobs, gpus=args.gpus, on_result=report)
        record.results.update({result.index: result for result in results})
        if args.only is None:
            record.write(out, outputs)
    failed = [result for result in record.results.values() if result.error]
    if args.only is None and not args.no_sheet:
        from ..wedge_sheet import CONTACT_SHEET_NAME, render_contact_sheet

        sheet = render_contact_sheet(record.variants, out / CONTACT_SHEET_NAME, outputs,
                                     title=f"{presets[0].name}: " + ", ".join(a.name for a in axes))
        print(f"Contact sheet: {sheet}")
    if failed:
        raise MochiError(f"{len(failed)} of {len(record.results)} bakes failed; the first: {failed[0].error}")
    if record.results:
        print(f"Baked {len(record.results)} variants of '{presets[0].name}' into '{out}'.")
    return 0
