"""``mochi import-lammps``: the dumps of an exported LAMMPS run as a Mochi cache."""

from __future__ import annotations

import sys

from ..errors import escape_controls


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "import-lammps", help="turn the dumps of an exported LAMMPS run into a Mochi cache",
        description="Read the LAMMPS dumps of a deck written by `mochi export-lammps` and write them as a Mochi "
                    "cache (manifest.json and frame_0001.ply ..., as `mochi bake` writes), which the add-on plays "
                    "back and renders like any bake. The manifest records the export the frames came from. An "
                    "existing cache is replaced only with --overwrite; --resume adds the frames a previous import "
                    "of the same export lacks.")
    p.add_argument("dumps", nargs="+", metavar="DUMP", help="LAMMPS dump files (DIR/dumps/*.lammpstrj)")
    p.add_argument("--out", required=True, help="cache folder")
    p.add_argument("--export", metavar="DIR", help="the deck folder (default: found beside the dumps)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing cache in --out")
    p.add_argument("--resume", action="store_true",
                   help="continue an import of the same export in --out with the frames it lacks")
    p.set_defaults(func=run)


def run(args) -> int:
    from ..lammps.importer import import_dumps

    def on_frame(frame: int, last: int) -> None:
        print(f"\rframe {frame}/{last}", end="\n" if frame == last else "", file=sys.stderr, flush=True)

    # Progress only on a terminal: a refusal after some frames is then still one line in a log.
    first, last = import_dumps(args.dumps, args.out, export=args.export, overwrite=args.overwrite,
                               resume=args.resume, on_frame=on_frame if sys.stderr.isatty() else None)
    out = escape_controls(args.out)
    if first > last:
        print(f"'{out}' already holds frames 1–{last}; nothing new to import.")
    else:
        print(f"Imported frames {first}–{last} from LAMMPS into '{out}'.")
    return 0
