"""Reading LAMMPS ``dump custom`` files, checked line by line: every flaw is one sentence.

A dump holds one or more snapshots::

    ITEM: TIMESTEP / step / ITEM: NUMBER OF ATOMS / n / ITEM: BOX BOUNDS … / 3 lines /
    ITEM: ATOMS col col … / n rows

``index_dumps`` reads only the structure (step, atom count, columns, where the rows start), so a scene of
millions of grains is read one frame at a time (``read_snapshot``); it refuses a file that is not a dump,
a snapshot cut short, columns missing, an atom count other than the export's, a step seen twice.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import MochiError


@dataclass(frozen=True)
class Snapshot:
    """Where one dumped step lies.

    Attributes:
        path: The dump file.
        step: LAMMPS' timestep.
        atom_count: Rows of the snapshot.
        columns: Column names of the ATOMS line.
        offset: Byte offset of the first row.
        line: 1-based line number of the first row (for messages).
    """

    path: Path
    step: int
    atom_count: int
    columns: tuple[str, ...]
    offset: int
    line: int


def _integer(text: bytes, path: Path, line: int, what: str) -> int:
    try:
        return int(text.strip())
    except ValueError:
        raise MochiError(f"The dump '{path}' has {text.strip()[:40]!r} where its {what} should be "
                         f"(line {line}); it is damaged.") from None


def _index_file(path: Path, atom_count: int, required: tuple[str, ...], lost: bool) -> list[Snapshot]:
    if not path.is_file():
        raise MochiError(f"The dump '{path}' does not exist or is not a file.")
    snapshots = []
    with open(path, "rb") as handle:
        number = 0

        def next_line(expect: str, step: int | None) -> bytes:
            nonlocal number
            text = handle.readline()
            number += 1
            if not text:
                where = "" if step is None else f" in step {step}"
                raise MochiError(f"The dump '{path}' ends where {expect} should be (line {number}{where}): it is "
                                 "truncated.")
            return text

        while True:
            first = handle.readline()
            number += 1
            if not first:
                break
            if first.strip() != b"ITEM: TIMESTEP":
                raise MochiError(f"'{path}' is not a LAMMPS custom dump: line {number} reads "
                                 f"{first.strip()[:40]!r}, not 'ITEM: TIMESTEP'.")
            step = _integer(next_line("the timestep", None), path, number, "timestep")
            if next_line("'ITEM: NUMBER OF ATOMS'", step).strip() != b"ITEM: NUMBER OF ATOMS":
                raise MochiError(f"The dump '{path}' lacks 'ITEM: NUMBER OF ATOMS' at line {number}; it is damaged.")
            count = _integer(next_line("the atom count", step), path, number, "atom count")
            if count > atom_count or (count < atom_count and not lost):
                raise MochiError(f"The dump '{path}' holds {count:,} atoms at step {step}, but the export has "
                                 f"{atom_count:,} grains (atoms were lost, or the dump is not of this export).")
            if not next_line("'ITEM: BOX BOUNDS'", step).startswith(b"ITEM: BOX BOUNDS"):
                raise MochiError(f"The dump '{path}' lacks 'ITEM: BOX BOUNDS' at line {number}; it is damaged.")
            for _ in range(3):
                next_line("the box bounds", step)
            header = next_line("'ITEM: ATOMS'", step).decode("ascii", "replace").split()
            if header[:2] != ["ITEM:", "ATOMS"]:
                raise MochiError(f"The dump '{path}' lacks 'ITEM: ATOMS' at line {number}; it is damaged.")
            columns = tuple(header[2:])
            missing = [c for c in required if c not in columns]
            if missing:
                raise MochiError(f"The dump '{path}' lacks the columns {', '.join(missing)} (step {step}); dump "
                                 f"{' '.join(required)} as the exported in.mochi does.")
            offset, line = handle.tell(), number + 1
            for row in range(count):
                text = handle.readline()
                number += 1
                if not text or not text.endswith(b"\n") or len(text.split()) != len(columns):
                    raise MochiError(f"The dump '{path}' ends after {row:,} of {count:,} atoms of step {step} "
                                     f"(line {number}): it is truncated or damaged.")
            snapshots.append(Snapshot(path, step, count, columns, offset, line))
    if not snapshots:
        raise MochiError(f"The dump '{path}' is empty.")
    return snapshots


def index_dumps(paths: list[str | os.PathLike], *, atom_count: int, required: tuple[str, ...],
                lost: bool = False) -> list[Snapshot]:
    """The snapshots of every dump, in step order.

    Args:
        lost: Snapshots may hold fewer atoms than ``atom_count`` (grains that left through an open side).

    Raises:
        MochiError: a file that is not a complete dump of ``atom_count`` atoms with the ``required`` columns,
            or one step dumped twice.
    """
    seen: dict[int, Path] = {}
    snapshots = []
    for given in paths:
        for snapshot in _index_file(Path(given), atom_count, required, lost):
            if snapshot.step in seen:
                raise MochiError(f"Step {snapshot.step} is dumped twice ('{seen[snapshot.step]}' and "
                                 f"'{snapshot.path}'); give each dump once.")
            seen[snapshot.step] = snapshot.path
            snapshots.append(snapshot)
    return sorted(snapshots, key=lambda s: s.step)


def read_snapshot(snapshot: Snapshot, columns: tuple[str, ...], *, atom_total: int) -> dict[str, np.ndarray]:
    """The ``columns`` of one snapshot as float64 arrays of shape (atom_count,), rows sorted by atom id.

    Raises:
        MochiError: a value that is not a finite number, or atom ids that are not distinct ids of 1..atom_total.
    """
    with open(snapshot.path, "rb") as handle:
        handle.seek(snapshot.offset)
        lines = [handle.readline() for _ in range(snapshot.atom_count)]
    try:
        table = np.array([line.split() for line in lines], dtype=np.float64)
    except ValueError:
        raise MochiError(f"The dump '{snapshot.path}' holds a value that is not a number in step {snapshot.step} "
                         f"(lines {snapshot.line}–{snapshot.line + snapshot.atom_count - 1}).") from None
    if not np.isfinite(table).all():
        row = int(np.flatnonzero(~np.isfinite(table).all(axis=1))[0])
        raise MochiError(f"The dump '{snapshot.path}' holds a NaN or infinite value at line {snapshot.line + row} "
                         f"(step {snapshot.step}): LAMMPS' run diverged or the file is damaged.")
    ids = table[:, snapshot.columns.index("id")]
    order = np.argsort(ids, kind="stable")
    ids = ids[order]
    if len(ids) and (ids[0] < 1 or ids[-1] > atom_total or np.any(np.diff(ids) <= 0) or np.any(ids % 1)):
        raise MochiError(f"The atom ids of step {snapshot.step} in '{snapshot.path}' are not distinct ids of 1–"
                         f"{atom_total:,}; the dump is not of a Mochi export.")
    return {name: table[order, snapshot.columns.index(name)] for name in columns}
