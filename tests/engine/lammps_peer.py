"""Running an exported deck with Debian's LAMMPS (``lmp``, installed by benchmarks/peers/setup.sh, which
``scripts/setup.sh all`` runs), serially or on MPI ranks of this machine only, and the bed estimator of
docs/physics.md's LAMMPS validation."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

#: The small bed of the import tests: 1,200 grains dropped from a loose lattice into a closed 60 mm box settle
#: for 0.2 s (5,000 steps of 40 µs, 11 frames) with the physics of benchmarks/physics_peers.py (k = 2000 N/m,
#: e = 0.5, μ = 0.5, rotating, Verlet), LAMMPS' friction cap on both sides.
BED_PRESET = Path(__file__).resolve().parents[2] / "presets" / "settling_bed.toml"


def lmp_or_skip() -> str:
    """The ``lmp`` executable, or a skip saying how the project installs it."""
    found = shutil.which("lmp")
    if found is None:
        pytest.skip("LAMMPS (lmp) is not installed; `bash benchmarks/peers/setup.sh` installs Debian's lammps")
    return found


def run_deck(folder: Path, *, ranks: int = 1, timeout_s: float = 300) -> str:
    """Run ``folder``/in.mochi with LAMMPS on ``ranks`` MPI ranks of this machine; its screen output.

    Two or more ranks run under OpenMPI's ``mpirun`` on 127.0.0.1 only (shared-memory transport,
    oversubscribed, yielding when idle: CI has 2 shared cores; as root in a container it must be allowed).
    """
    exe = lmp_or_skip()
    command = [exe, "-in", "in.mochi", "-log", "none"]
    env = dict(os.environ, OMP_NUM_THREADS="1")
    if ranks > 1:
        mpirun = shutil.which("mpirun")
        if mpirun is None:
            pytest.skip("mpirun is not installed (Debian's lammps depends on openmpi-bin)")
        command = [mpirun, "--oversubscribe", "--host", f"127.0.0.1:{ranks}", "-np", str(ranks),
                   "--mca", "btl", "self,vader", "--mca", "mpi_yield_when_idle", "1", *command]
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                   OMPI_MCA_btl_base_warn_component_unused="0")
    done = subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True, timeout=timeout_s)
    log = done.stdout + done.stderr
    assert done.returncode == 0, "\n".join(log.splitlines()[-20:])
    assert f"with {ranks} MPI tasks" in log, log[-2000:]
    return log


def bed_metrics(columns: dict, side: float) -> dict:
    """docs/physics.md's bed estimator (benchmarks/physics_peers.py) on a y-up cache frame in a square box of
    ``side`` [m]: packing fraction and mean coordination of the grains whose centres lie 2 mean diameters
    from the side walls, the floor and the bed's top, and the bed height (99th percentile of the tops) [m]."""
    from scipy.spatial import cKDTree

    x = np.column_stack([columns["x"], columns["z"], columns["y"]]).astype(np.float64)
    r = np.asarray(columns["radius"], np.float64)
    height = float(np.percentile(x[:, 2] + r, 99))
    margin = 4.0 * float(r.mean())
    lo, hi = np.full(3, margin), np.array([side - margin, side - margin, height - margin])
    core = np.all((x >= lo) & (x <= hi), axis=1)
    fraction = float((4.0 / 3.0 * np.pi * r[core] ** 3).sum() / np.prod(hi - lo))
    pairs = cKDTree(x).query_pairs(2.0 * r.max(), output_type="ndarray")
    d = np.linalg.norm(x[pairs[:, 0]] - x[pairs[:, 1]], axis=1)
    touching = pairs[d <= r[pairs[:, 0]] + r[pairs[:, 1]]]
    contacts = np.bincount(touching.ravel(), minlength=len(x))
    return {"packing_fraction": fraction, "coordination": float(contacts[core].mean()), "bed_height": height,
            "core_grains": int(core.sum())}


#: The agreement docs/physics.md shows between Mochi and LAMMPS on settled beds (every case within these).
BED_AGREEMENT = {"packing_fraction": 0.01, "coordination": 0.07, "bed_height": 1.4e-3}


def assert_beds_agree(a: dict, b: dict) -> None:
    for key, tolerance in BED_AGREEMENT.items():
        assert abs(a[key] - b[key]) <= tolerance, (key, a, b)
