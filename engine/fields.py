"""Acceleration fields beyond gravity: uniform, rotating, vortex and sampled 3D vector fields.

Fields are accelerations [m/s²] (not forces) so that grains of every size respond alike, as wind or
vortex forces in DCC tools do. Uniform and rotating fields do not depend on position: the solver adds
them to gravity once per step (``uniform_acceleration``). Vortex and sampled fields depend on position
and are evaluated per particle by the backend from a packed table (``pack_fields``), whose layout is
the contract between this module, the numba kernels and the CUDA kernels:

``table`` float32 (field_count, 16), one row per field:
    row[0]     kind code: 2 vortex, 3 sampled
    vortex:    row[1:4] centre [m], row[4:7] unit axis, row[7] strength [m/s²], row[8] core radius [m]
    sampled:   row[1] offset of its samples in ``grid`` (float32 element index), row[2:5] node counts
               (nx, ny, nz), row[5:8] lower corner [m], row[8:11] upper corner [m], row[11] strength
``grid`` float32 (total,): sampled fields' vectors, C order (nx, ny, nz, 3), concatenated.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .errors import MochiError

FIELD_KINDS = ("uniform", "rotating", "vortex", "sampled")
KIND_VORTEX = 2
KIND_SAMPLED = 3
TABLE_WIDTH = 16


@dataclass(frozen=True, eq=False)
class ForceField:
    """One acceleration field.

    Attributes:
        kind: One of ``FIELD_KINDS``.
        vector: uniform/rotating: acceleration at t = 0 [m/s²].
        axis: rotating: rotation axis; vortex: swirl axis (right-handed).
        rate: rotating: angular rate [rad/s].
        center: vortex: a point on the axis [m].
        strength: vortex: peak tangential acceleration [m/s²] (reached at ``core_radius``);
            sampled: scale factor applied to the samples.
        core_radius: vortex: radius of the solid-body core [m]; the swirl falls off as 1/ρ outside.
        path: sampled: .npy file with samples [m/s²], shape (nx, ny, nz, 3), nodes spanning lo..hi.
        lo, hi: sampled: corners of the sampled box [m]; outside it the field is zero.
    """

    kind: str
    vector: tuple[float, float, float] = (0.0, 0.0, 0.0)
    axis: tuple[float, float, float] = (0.0, 1.0, 0.0)
    rate: float = 0.0
    center: tuple[float, float, float] = (0.0, 0.0, 0.0)
    strength: float = 1.0
    core_radius: float = 0.1
    path: str = ""
    lo: tuple[float, float, float] = (0.0, 0.0, 0.0)
    hi: tuple[float, float, float] = (1.0, 1.0, 1.0)

    def to_json(self) -> dict:
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.__dict__.items()}

    @staticmethod
    def from_json(data: dict) -> "ForceField":
        return ForceField(**{k: (tuple(v) if isinstance(v, list) else v) for k, v in data.items()})

    def load_grid(self) -> np.ndarray:
        """Samples of a sampled field, float32 (nx, ny, nz, 3) [m/s²].

        Raises:
            MochiError: missing or malformed file.
        """
        path = Path(self.path)
        if not path.is_file():
            raise MochiError(f"The sampled force field file '{path}' does not exist.")
        try:
            grid = np.load(path, allow_pickle=False)
        except (OSError, ValueError) as exc:
            raise MochiError(f"The sampled force field file '{path}' is not a readable .npy file ({exc}).") from None
        if grid.ndim != 4 or grid.shape[3] != 3 or min(grid.shape[:3]) < 2:
            raise MochiError(f"The sampled force field '{path}' has shape {grid.shape}; it must be "
                             "(nx, ny, nz, 3) with at least 2 nodes per axis.")
        if not np.all(np.isfinite(grid)):
            raise MochiError(f"The sampled force field '{path}' contains NaN or infinite values.")
        return np.ascontiguousarray(grid, dtype=np.float32)


def rotate(vector, axis, angle: float) -> np.ndarray:
    """Rotate ``vector`` about ``axis`` by ``angle`` [rad] (Rodrigues), float64 shape (3,)."""
    v = np.asarray(vector, dtype=np.float64)
    k = np.asarray(axis, dtype=np.float64)
    k = k / np.linalg.norm(k)
    c, s = math.cos(angle), math.sin(angle)
    return v * c + np.cross(k, v) * s + k * np.dot(k, v) * (1.0 - c)


def uniform_acceleration(fields: tuple[ForceField, ...], time: float) -> np.ndarray:
    """Sum of the position-independent fields at ``time`` [s], float64 (3,) [m/s²]."""
    total = np.zeros(3)
    for f in fields:
        if f.kind == "uniform":
            total += np.asarray(f.vector, dtype=np.float64)
        elif f.kind == "rotating":
            total += rotate(f.vector, f.axis, f.rate * time)
    return total


def pack_fields(fields: tuple[ForceField, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Pack the position-dependent fields for the kernels (layout in the module docstring).

    Returns:
        (table float32 (field_count, 16), grid float32 (total,)); both have at least one element so
        that kernels always receive valid arrays.
    """
    rows, grids, offset = [], [], 0
    for f in fields:
        row = np.zeros(TABLE_WIDTH, dtype=np.float64)
        if f.kind == "vortex":
            axis = np.asarray(f.axis, dtype=np.float64)
            row[0] = KIND_VORTEX
            row[1:4] = f.center
            row[4:7] = axis / np.linalg.norm(axis)
            row[7] = f.strength
            row[8] = f.core_radius
        elif f.kind == "sampled":
            grid = f.load_grid()
            row[0] = KIND_SAMPLED
            row[1] = offset
            row[2:5] = grid.shape[:3]
            row[5:8] = f.lo
            row[8:11] = f.hi
            row[11] = f.strength
            grids.append(grid.ravel())
            offset += grid.size
        else:
            continue
        rows.append(row)
    table = np.array(rows, dtype=np.float32).reshape(-1, TABLE_WIDTH)
    grid = np.concatenate(grids) if grids else np.zeros(1, np.float32)
    return table, grid.astype(np.float32)


def field_max_acceleration(fields: tuple[ForceField, ...]) -> float:
    """An upper bound of |a| over all fields [m/s²], used to estimate impact speeds."""
    total = 0.0
    for f in fields:
        if f.kind in ("uniform", "rotating"):
            total += float(np.linalg.norm(f.vector))
        elif f.kind == "vortex":
            total += abs(f.strength)
        elif f.kind == "sampled":
            grid = f.load_grid()
            total += abs(f.strength) * float(np.sqrt((grid.astype(np.float64) ** 2).sum(axis=3)).max())
    return total
