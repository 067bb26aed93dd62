"""Run LAMMPS or LIGGGHTS on an input script and read back its timing and thermo lines."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

#: Executable names of the Debian packages ``lammps`` and ``liggghts``.
EXECUTABLES = {"lammps": ("lmp", "lmp_serial", "lmp_mpi"), "liggghts": ("liggghts", "lmp_auto")}


class PeerMissing(RuntimeError):
    """The peer's executable is not installed (benchmarks/peers/setup.sh installs both)."""


def find_peer(name: str) -> str:
    """Path of the executable of peer ``name`` ('lammps' or 'liggghts')."""
    for candidate in EXECUTABLES[name]:
        found = shutil.which(candidate)
        if found:
            return found
    raise PeerMissing(f"{name} is not installed; run `bash benchmarks/peers/setup.sh` "
                      f"(Debian packages lammps and liggghts).")


@dataclass
class PeerRun:
    """What one peer run printed.

    Attributes:
        log: The whole screen output.
        wall_s: Wall-clock time of the process [s].
        loop_s: The peer's own timing of each ``run`` command [s] ("Loop time of …"), in order.
        thermo: Thermo tables of each ``run``: list of (column names, rows as float lists).
    """

    log: str
    wall_s: float
    loop_s: list[float]
    thermo: list[tuple[list[str], list[list[float]]]]


def run_peer(name: str, script: str, folder: str | Path, *, threads: int = 1, timeout_s: float = 3600) -> PeerRun:
    """Run ``script`` (input text) with peer ``name`` in ``folder`` on one process.

    ``threads`` sets OMP_NUM_THREADS (both Debian builds are serial or OpenMP, never MPI here).

    Raises:
        PeerMissing: the executable is absent.
        RuntimeError: the peer exits non-zero (the message ends with its last lines).
    """
    exe = find_peer(name)
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "in.mochi").write_text(script, encoding="ascii")
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    start = time.perf_counter()
    done = subprocess.run([exe, "-in", "in.mochi", "-log", "log.mochi"], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=timeout_s)
    wall = time.perf_counter() - start
    log = done.stdout + done.stderr
    if done.returncode != 0:
        raise RuntimeError(f"{name} failed with exit status {done.returncode}: " + "\n".join(log.splitlines()[-15:]))
    return PeerRun(log=log, wall_s=wall, loop_s=[float(x) for x in re.findall(r"Loop time of ([0-9.eE+-]+)", log)],
                   thermo=parse_thermo(log))


def parse_thermo(log: str) -> list[tuple[list[str], list[list[float]]]]:
    """Thermo tables of a LAMMPS/LIGGGHTS log: a header line starting with 'Step', numeric rows, 'Loop time'."""
    tables = []
    lines = log.splitlines()
    i = 0
    while i < len(lines):
        words = lines[i].split()
        if words and words[0] == "Step":
            rows = []
            i += 1
            while i < len(lines) and not lines[i].startswith("Loop time"):
                parts = lines[i].split()
                try:
                    rows.append([float(p) for p in parts])
                except ValueError:
                    pass  # warnings interleaved with thermo output
                i += 1
            tables.append((words, [r for r in rows if len(r) == len(words)]))
        i += 1
    return tables
