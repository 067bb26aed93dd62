"""``mochi export-lammps``: a preset as a LAMMPS input deck (law, packed initial state, dumps per frame)."""

from __future__ import annotations

from pathlib import Path

from ..errors import escape_controls
from .checks import MAX_FRAMES, MAX_PARTICLES, integer_in


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "export-lammps", help="write a preset as a LAMMPS input deck, to run one huge scene on MPI",
        description="Pack PRESET.toml and write DIR/in.mochi (Mochi's contact law as LAMMPS' pair_style granular, "
                    "the walls, gravity, a dump of every output frame into DIR/dumps/), DIR/data.mochi (the packed "
                    "initial state) and the export's record. Run it with `mpirun -np N lmp -in in.mochi` in DIR, "
                    "then `mochi import-lammps DIR/dumps/*.lammpstrj --out CACHE`. What LAMMPS cannot run the "
                    "same way (cohesion, mesh colliders, force fields, Mochi's friction cap...) is refused.")
    p.add_argument("preset", help="preset .toml")
    p.add_argument("dir", help="deck folder (created; refused if it holds anything but an earlier export)")
    p.add_argument("--particles", type=int, help="scale the preset to about this many particles")
    p.add_argument("--frames", type=int, help="last frame to dump (frame 1 is the initial state); default: "
                                              "the preset's")
    p.add_argument("--overwrite", action="store_true", help="replace an earlier export in DIR")
    p.set_defaults(func=run)


def run(args) -> int:
    from ..lammps.deck import export_deck
    from ..lammps.law import resolve_law
    from ..preset import load_preset
    from ..scene import setup_from_preset

    integer_in(args.frames, "--frames", 1, MAX_FRAMES)
    integer_in(args.particles, "--particles", 1, MAX_PARTICLES)
    preset = load_preset(args.preset)
    frames = args.frames if args.frames is not None else preset.frames
    setup = setup_from_preset(preset, particles=args.particles)
    resolve_law(setup.model)  # refused before anything is written
    source = {"scene": preset.name, "preset": str(Path(args.preset).resolve()),
              "particles_requested": args.particles, "up_axis": preset.up_axis}
    done = export_deck(args.dir, setup.model, setup.state, frames=frames, source=source, overwrite=args.overwrite)
    for note in done.notes:
        print(f"note: {note}")
    folder = escape_controls(str(done.folder))
    print(f"Wrote a LAMMPS deck of '{escape_controls(preset.name)}' ({done.particle_count:,} grains, frames "
          f"1–{done.frames}, {done.steps:,} steps) to '{folder}'.\n"
          f"Run it:    cd {folder} && mpirun -np 4 lmp -in in.mochi\n"
          f"Import it: mochi import-lammps {folder}/dumps/*.lammpstrj --out CACHE")
    return 0
