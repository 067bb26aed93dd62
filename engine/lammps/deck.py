"""A LAMMPS input deck of a Mochi scene: ``mochi export-lammps PRESET DIR``.

DIR receives ``data.mochi`` (the packed initial state, ``engine.lammps.data_file``), ``in.mochi`` (the law
of ``engine.lammps.law``, the walls, gravity, the integrator, and a dump of every output frame into
``dumps/frame.STEP.lammpstrj``), and the export's own record: ``mochi_export.json`` (physics, frames, the
particles' Mochi identities by file, SHA-256 of every file written) and ``mochi_export.npz`` (radius,
material, object and particle id of LAMMPS atom i + 1 at row i). ``mochi import-lammps`` reads both back.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .. import __version__
from ..atomic import write_atomic
from ..digest import digest
from ..errors import MochiError
from ..model import Model
from ..state import State
from .data_file import write_sphere_data
from .law import LawLammps, resolve_law

EXPORT_FORMAT = "mochi-lammps-export"
EXPORT_VERSION = 1
EXPORT_RECORD = "mochi_export.json"
EXPORT_ARRAYS = "mochi_export.npz"
INPUT_NAME = "in.mochi"
DATA_NAME = "data.mochi"
DUMP_FOLDER = "dumps"
DUMP_PATTERN = "frame.*.lammpstrj"
#: Per-atom columns of every dumped frame (atom_style sphere names), what the import needs.
DUMP_COLUMNS = ("id", "type", "radius", "x", "y", "z", "vx", "vy", "vz", "omegax", "omegay", "omegaz")
#: Files an export writes (its record last); an overwrite replaces only these, and only unchanged.
EXPORT_FILES = (DATA_NAME, INPUT_NAME, EXPORT_ARRAYS, EXPORT_RECORD)


def gravity_line(gravity) -> str:
    """``fix … gravity`` (LAMMPS and LIGGGHTS share it: magnitude, then a direction), or '' for none."""
    g = np.asarray(gravity, np.float64)
    magnitude = float(np.linalg.norm(g))
    if magnitude == 0.0:
        return ""
    d = g / magnitude
    return f"fix grav all gravity {float(magnitude)!r} vector {float(d[0])!r} {float(d[1])!r} {float(d[2])!r}\n"


def _bound(plane: float | None) -> str:
    """A wall plane of ``wall/gran``: its coordinate [m], or NULL for no wall on that side."""
    return "NULL" if plane is None else repr(float(plane))


def setup_lines(law: LawLammps, *, data_name: str, skin: float) -> str:
    """The deck up to the run: atoms, the law between grains and on the six walls, the integrator,
    gravity and the time step (the benchmarks add their own observation and run)."""
    types = len(law.wall_coeffs)
    pairs = "".join(f"pair_coeff {i} {j} {coeffs}\n" for (i, j), coeffs in sorted(law.pair_coeffs.items()))
    groups = "" if types == 1 else "".join(f"group type{t} type {t}\n" for t in range(1, types + 1))
    walls = ""
    for t, coeffs in enumerate(law.wall_coeffs, start=1):
        group, suffix = ("all", "") if types == 1 else (f"type{t}", f"_type{t}")
        walls += "".join(f"fix wall_{axis}{suffix} {group} wall/gran granular {coeffs} {axis}plane "
                         f"{_bound(law.lo[i])} {_bound(law.hi[i])}\n" for i, axis in enumerate("xyz"))
    return f"""units si
atom_style sphere
atom_modify map array
boundary f f f
newton off
comm_modify vel yes
read_data {data_name}
neighbor {float(skin)!r} bin
neigh_modify delay 0 every 1 check yes
pair_style granular
{pairs}{groups}{walls}fix integrate all {'nve/sphere' if law.rotation else 'nve'}
{gravity_line(law.gravity)}timestep {float(law.dt)!r}
"""


def frames_lines(*, steps_per_frame: int, frames: int, lost: bool = False) -> str:
    """Dump every output frame (frame 1 is step 0) and run to the last one; ``lost``: grains may leave
    through an open side (otherwise a lost grain is an error)."""
    return f"""dump frames all custom {steps_per_frame} {DUMP_FOLDER}/{DUMP_PATTERN} {' '.join(DUMP_COLUMNS)}
dump_modify frames sort id format float %.9g
thermo_style custom step atoms ke
thermo_modify norm no lost {'ignore' if lost else 'error'}
thermo {steps_per_frame}
run {(frames - 1) * steps_per_frame}
"""


@dataclass(frozen=True)
class DeckExport:
    """What ``export_deck`` wrote.

    Attributes:
        folder: The deck's folder.
        particle_count: Atoms in the data file.
        frames: Frames the run dumps (frame 1 is the initial state).
        steps: Steps LAMMPS runs.
        notes: What LAMMPS runs differently (``LawLammps.notes``).
    """

    folder: Path
    particle_count: int
    frames: int
    steps: int
    notes: tuple[str, ...]


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def read_export_record(folder: str | os.PathLike) -> dict | None:
    """The record of an export in ``folder``, or None when there is none.

    Raises:
        MochiError: a record that is not Mochi's or cannot be read.
    """
    path = Path(folder) / EXPORT_RECORD
    if not path.exists():
        return None
    if not path.is_file() or path.stat().st_size > 2**20:
        raise MochiError(f"'{path}' is not the record of a Mochi LAMMPS export.")
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as exc:
        raise MochiError(f"The export record '{path}' cannot be read ({str(exc)[:80]}).") from None
    if not isinstance(record, dict) or record.get("format") != EXPORT_FORMAT \
            or record.get("format_version") != EXPORT_VERSION:
        raise MochiError(f"'{path}' is not the record of a Mochi LAMMPS export of format version {EXPORT_VERSION}.")
    return record


def _check_export_folder(folder: Path, overwrite: bool) -> None:
    """Refuse a folder holding anything but an unchanged earlier export (and that without ``overwrite``)."""
    if not folder.exists():
        return
    if not folder.is_dir():
        raise MochiError(f"'{folder}' is a file, not a folder.")
    record = read_export_record(folder)
    proven = record.get("files", {}) if record else {}
    for entry in sorted(os.listdir(folder)):
        path = folder / entry
        if entry == DUMP_FOLDER and path.is_dir() and not os.listdir(path):
            continue
        if entry == EXPORT_RECORD and record is not None:
            continue
        if entry not in proven or not path.is_file() or _sha256(path) != proven[entry]:
            raise MochiError(f"'{folder}' holds '{entry}', which is not a file of a Mochi export (or was changed "
                             "since); export into an empty folder.")
    if record is not None and not overwrite:
        raise MochiError(f"'{folder}' already holds a LAMMPS export; choose --overwrite to replace it.")


def export_deck(folder: str | os.PathLike, model: Model, state: State, *, frames: int, source: dict,
                overwrite: bool = False) -> DeckExport:
    """Write the deck of ``model`` from ``state`` into ``folder``.

    Args:
        folder: Deck folder (created; refused when it holds anything but an earlier export).
        model: The scene's model (its law must map onto LAMMPS: ``engine.lammps.law.resolve_law``).
        state: The packed initial state (frame 1).
        frames: Last frame to dump (frame 1 is the initial state).
        source: Where the scene came from (preset path, --particles...), kept in the record and passed on
            to the imported cache's manifest.
        overwrite: Replace an earlier, unchanged export in ``folder``.

    Raises:
        MochiError: the law cannot be mapped (before anything is written), or the folder is refused.
    """
    law = resolve_law(model)
    folder = Path(folder)
    _check_export_folder(folder, overwrite)
    physics = model.physics
    folder.mkdir(parents=True, exist_ok=True)
    (folder / DUMP_FOLDER).mkdir(exist_ok=True)
    for name in EXPORT_FILES:  # proven above: the earlier export's own, unchanged files
        (folder / name).unlink(missing_ok=True)
    density = np.array([m.density for m in physics.materials], np.float64)[model.material_index]
    box_lo, box_hi = law.box()
    write_sphere_data(folder / DATA_NAME, state.positions, model.radius, density, box_lo, box_hi,
                      material_index=model.material_index, velocities=state.velocities,
                      angular_velocities=state.angular_velocities, type_count=len(physics.materials))
    skin = 0.3 * float(np.max(model.radius))
    # A scene name is the user's: on one comment line, so nothing in it reaches LAMMPS as a command.
    name = "".join(c if c.isprintable() else " " for c in str(source.get("scene", "Mochi scene")))
    header = (f"# {name}: {model.particle_count} grains, frames 1-{frames} "
              f"(written by mochi export-lammps {__version__}; engine/lammps/deck.py)\n")
    notes = "".join(f"# {note}\n" for note in law.notes)
    script = header + notes + setup_lines(law, data_name=DATA_NAME, skin=skin) + frames_lines(
        steps_per_frame=physics.steps_per_frame, frames=frames, lost=law.open_sides)
    write_atomic(folder / INPUT_NAME, lambda handle: handle.write(script.encode("ascii", "backslashreplace")))
    arrays = {"radius": model.radius, "material_index": model.material_index, "object_id": model.object_id,
              "particle_id": model.particle_id, "orientations": state.orientations}

    def save_arrays(handle):
        np.savez(handle, **arrays)

    write_atomic(folder / EXPORT_ARRAYS, save_arrays)
    files = {name: _sha256(folder / name) for name in (DATA_NAME, INPUT_NAME, EXPORT_ARRAYS)}
    record = {"format": EXPORT_FORMAT, "format_version": EXPORT_VERSION, "engine_version": __version__,
              "particle_count": model.particle_count, "frames": frames, "steps_per_frame": physics.steps_per_frame,
              "dt": physics.dt, "fps": physics.fps, "physics": physics.to_json(), "dump_folder": DUMP_FOLDER,
              "dump_pattern": DUMP_PATTERN, "dump_columns": list(DUMP_COLUMNS), "open_sides": law.open_sides,
              "source": source,
              "notes": list(law.notes), "files": files}
    record["export_digest"] = digest(record)
    write_atomic(folder / EXPORT_RECORD, lambda handle: handle.write(json.dumps(record, indent=2).encode("utf-8")))
    return DeckExport(folder=folder, particle_count=model.particle_count, frames=frames,
                      steps=(frames - 1) * physics.steps_per_frame, notes=law.notes)
