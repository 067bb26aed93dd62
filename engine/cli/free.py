"""``mochi free``: delete a bake's cache files, refused while a bake holds the folder."""

from __future__ import annotations


def register(subparsers) -> None:
    p = subparsers.add_parser("free", help="delete the bake in a cache folder (frames, manifest, history)",
                              description="Delete the frames, manifest, contact history and colliders of the "
                                          "Mochi bake in DIR: the files its manifest lists whose bytes match the "
                                          "digests it records. Every other entry stays. Refused while a bake or "
                                          "resume holds the folder's lock.")
    p.add_argument("cache", help="cache folder (with manifest.json)")
    p.set_defaults(func=run)


def run(args) -> int:
    from ..bake import free_bake

    from ..errors import escape_controls

    freed = free_bake(args.cache)
    kept = ""
    if freed.kept:
        named = ", ".join(f"'{escape_controls(name)}'" for name in freed.kept[:3])
        more = f" and {len(freed.kept) - 3} more" if len(freed.kept) > 3 else ""
        one = len(freed.kept) == 1
        kept = (f" {len(freed.kept)} {'entry' if one else 'entries'} Mochi cannot prove it wrote "
                f"{'stays' if one else 'stay'}: {named}{more}.")
    print(f"Freed the bake of {freed.frames} frames in '{escape_controls(args.cache)}'; the folder stays.{kept}")
    return 0
