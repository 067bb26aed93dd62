"""``mochi preset export``: save a .blend's Mochi scene as a preset TOML (through Blender's module)."""

from __future__ import annotations


def register(subparsers) -> None:
    p = subparsers.add_parser("preset", help="save a .blend's Mochi scene as a preset",
                              description="mochi preset export SCENE.blend OUT.toml: the scene's settings, "
                                          "sources (as mesh emitters, meshes in OUT's meshes/ folder) and "
                                          "colliders, so that `mochi bake OUT.toml` bakes the same scene.")
    actions = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    export = actions.add_parser("export", help="write SCENE.blend's Mochi scene as OUT.toml")
    export.add_argument("blend", help="the .blend with Mochi settings")
    export.add_argument("out", help="the preset .toml to write")
    export.add_argument("--name", help="preset name (default: OUT's file name)")
    export.add_argument("--overwrite", action="store_true",
                        help="replace an OUT or meshes/ file that Mochi cannot prove it wrote (exporting again over "
                             "its own preset needs no --overwrite)")
    p.set_defaults(func=run)


def run(args) -> int:
    from pathlib import Path

    from ..errors import MochiError
    from ..output_files import plan_outputs
    from .blender_bridge import run_headless

    if not args.blend.endswith(".blend"):
        raise MochiError(f"'{args.blend}' is not a .blend file.")
    if Path(args.out).suffix.lower() != ".toml":
        raise MochiError(f"A preset is a .toml file, not '{args.out}'.")
    # OUT is checked before Blender starts; its meshes, named once Blender has read the scene, before any is written.
    plan_outputs([args.out], overwrite=args.overwrite, inputs=[args.blend])
    extra = ["preset-export", args.blend, str(Path(args.out).absolute())]
    if args.name:
        extra += ["--name", args.name]
    if args.overwrite:
        extra.append("--overwrite")
    return run_headless(extra)
