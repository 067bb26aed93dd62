"""Mochi's Blender commands from a plain Python that has the bpy module (no Blender executable).

The engine's command line runs, in a subprocess so that the engine never imports bpy:

    python <repo>/addon/headless.py bake SCENE.blend [--frames N] [--resume] [--backend B] [--rt-device KIND]
    python <repo>/addon/headless.py render-preview CACHE_DIR --frame F --out PNG [--samples S] [--resolution W H]
    python <repo>/addon/headless.py preset-export SCENE.blend OUT.toml [--name NAME] [--overwrite]

This loads the repository root as the package ``mochi`` (as Blender loads the extension), registers
the add-on in the bpy module, opens the .blend and runs what ``blender -b SCENE.blend -c mochi …``
runs (addon/cli.py). Errors print one sentence on stderr and exit with status 2. A bake without
``--out`` whose cache folder (chosen by the .blend) is absolute and outside the .blend's folder is
refused: the .blend may come from anyone.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def load_package(name: str = "mochi"):
    """Import the repository root as a package (its addon/ and engine/ import each other relatively)."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, ROOT / "__init__.py",
                                                  submodule_search_locations=[str(ROOT)])
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def main(argv: list[str]) -> int:
    # Running this file puts addon/ first on sys.path; its folders (ui, operators...) must not shadow
    # top-level modules.
    here = str(Path(__file__).resolve().parent)
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(here)]
    try:
        import bpy
    except ImportError:
        print("mochi: error: Blender's Python module 'bpy' is not installed; pip install bpy==5.0.1.",
              file=sys.stderr)
        return 2
    package = load_package()
    cli = importlib.import_module("mochi.addon.cli")
    args = list(argv)
    if args and args[0] in ("bake", "preset-export"):
        if len(args) < 2 or args[1].startswith("-"):
            cli.build_parser("mochi").parse_args([args[0], "--help"])
        blend = Path(args.pop(1))
        if not blend.is_file():
            print(f"mochi: error: The scene '{blend}' does not exist.", file=sys.stderr)
            return 2
        try:
            bpy.ops.wm.open_mainfile(filepath=str(blend.resolve()), load_ui=False)
        except RuntimeError as exc:
            print(f"mochi: error: Blender cannot open '{blend}' ({str(exc).strip()}).", file=sys.stderr)
            return 2
    package.register()
    try:
        return cli.run(args, prog="mochi")
    finally:
        package.unregister()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
