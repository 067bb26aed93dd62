"""A Mochi state as a LAMMPS / LIGGGHTS data file (atom_style sphere, LIGGGHTS' granular): what
``mochi export-lammps`` and the peer benchmarks start the peer from.

Both codes read the same layout: ``id type diameter density x y z`` atoms and ``id vx vy vz wx wy wz``
velocities, SI units throughout (``units si``). Types are 1-based material indices, so a pair style's
per-type coefficients follow Mochi's material table.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np


def write_sphere_data(path: str | Path, positions: np.ndarray, radii: np.ndarray, densities: np.ndarray,
                      box_lo, box_hi, *, material_index: np.ndarray | None = None,
                      velocities: np.ndarray | None = None, angular_velocities: np.ndarray | None = None,
                      type_count: int | None = None) -> Path:
    """Write a data file with every particle of a state.

    Args:
        path: File to write.
        positions: Centres [m], shape (particle_count, 3).
        radii: Radii [m], shape (particle_count,).
        densities: Mass densities [kg/m³], shape (particle_count,) (LAMMPS stores density, not mass).
        box_lo, box_hi: Box corners [m], (3,) each; particles must lie inside.
        material_index: 0-based material of each particle (written as type + 1), default all 0.
        velocities: [m/s], shape (particle_count, 3), default 0.
        angular_velocities: [rad/s], shape (particle_count, 3), default 0.
        type_count: Atom types declared (default: highest material + 1), so every material of the
            table has a type even if no particle uses it.

    Returns:
        ``path`` as a Path.
    """
    path = Path(path)
    positions = np.asarray(positions, np.float64)
    n = positions.shape[0]
    radii = np.asarray(radii, np.float64)
    densities = np.broadcast_to(np.asarray(densities, np.float64), (n,))
    types = (np.zeros(n, np.int64) if material_index is None else np.asarray(material_index, np.int64)) + 1
    vel = np.zeros((n, 3)) if velocities is None else np.asarray(velocities, np.float64)
    omega = np.zeros((n, 3)) if angular_velocities is None else np.asarray(angular_velocities, np.float64)
    ids = np.arange(1, n + 1)
    count = int(types.max()) if type_count is None else int(type_count)
    lo, hi = np.asarray(box_lo, np.float64), np.asarray(box_hi, np.float64)
    with open(path, "w", encoding="ascii") as out:
        out.write(f"Mochi state, {n} spheres\n\n{n} atoms\n{count} atom types\n\n")
        for axis, name in enumerate("xyz"):
            out.write(f"{float(lo[axis])!r} {float(hi[axis])!r} {name}lo {name}hi\n")
        out.write("\nAtoms\n\n")
        # repr-precision floats: the peer starts from exactly Mochi's float32 values.
        np.savetxt(out, np.column_stack([ids, types, 2.0 * radii, densities, positions]),
                   fmt=["%d", "%d", "%.9g", "%.9g", "%.9g", "%.9g", "%.9g"])
        out.write("\nVelocities\n\n")
        np.savetxt(out, np.column_stack([ids, vel, omega]), fmt=["%d"] + ["%.9g"] * 6)
    return path
