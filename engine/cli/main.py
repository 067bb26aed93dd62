"""Entry point of the ``mochi`` console script.

Every subcommand module exposes ``register(subparsers)`` (adds its parser and sets ``func``) and
``run(args) -> int``. A ``MochiError`` becomes one sentence on stderr and exit status 2; anything else
is a bug and keeps its traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from .. import __version__
from ..errors import MochiError

SUBCOMMANDS = ("bake", "contacts", "bench", "pack", "render_preview", "free", "export", "wedge", "preset")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mochi", description="Sphere-packed grains simulated with DEM (Mochi collision detection).")
    parser.add_argument("--version", action="version", version=f"mochi {__version__}")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in SUBCOMMANDS:
        try:
            module = importlib.import_module(f".{name}", __package__)
        except ModuleNotFoundError as exc:
            if exc.name and exc.name.endswith(f"cli.{name}"):
                continue  # subcommand not part of this build
            raise
        module.register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except MochiError as exc:
        print(f"mochi: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("mochi: interrupted; complete frames are kept (use --resume to continue).", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
