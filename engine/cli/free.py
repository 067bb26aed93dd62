"""``mochi free``: delete a bake's cache files, refused while a bake holds the folder."""

from __future__ import annotations


def register(subparsers) -> None:
    p = subparsers.add_parser("free", help="delete the bake in a cache folder (frames, manifest, history)",
                              description="Delete the frames, manifest, contact history and colliders of the "
                                          "Mochi bake in DIR; other files stay. Refused while a bake or resume "
                                          "holds the folder's lock.")
    p.add_argument("cache", help="cache folder (with manifest.json)")
    p.set_defaults(func=run)


def run(args) -> int:
    from ..bake import free_bake

    from ..errors import escape_controls

    frames = free_bake(args.cache)
    print(f"Freed the bake of {frames} frames in '{escape_controls(args.cache)}'; the folder and any other files in "
          "it stay.")
    return 0
