"""Acceleration fields beyond gravity: uniform, rotating, vortex, sampled, and Blender's Force, Wind and
Turbulence fields.

Units. Fields are accelerations [m/s²] (not forces) so that grains of every size respond alike. This is
how Blender's force fields move particles of mass 1 kg: Blender computes a force from the field's
*strength* and divides it by the particle's mass (``particle_system.cc``, ``basic_force_cb``), and its
particles weigh 1 kg unless set otherwise. So a Blender field of strength S moves a grain exactly as it
moves a default Blender particle: a = S × falloff [m/s²], whatever the grain's mass; a heavier grain
is not pushed less (as in a wind that carries sand and pebbles alike, not a fixed push).

Uniform and rotating fields do not depend on position: the solver adds them to gravity once per step
(``uniform_acceleration``). The others depend on position (and some on velocity) and are evaluated per
particle by the backend from a packed table (``pack_fields``), whose layout is the contract between this
module, the numba kernels (``engine.backends.cpu_fields``) and the GPU kernels, CUDA and the rt backend's
Slang alike (``kernels/field_law.h``, ``dem_field_acceleration``):

``table`` float32 (field_count, 16), one row per field:
    row[0]      kind code: 2 vortex, 3 sampled, 4 force, 5 wind, 6 turbulence
    vortex, force, wind, turbulence:
        row[1:4]   centre [m] (the field object's origin)
        row[4:7]   unit axis (the field object's Z axis)
        row[7]     strength [m/s²] (vortex 'blender_point'/'blender_plane': [1/s] or [1/s²], see below)
        row[8]     vortex: core radius [m]; turbulence: noise size [m]
        row[9]     falloff power (Blender's *Power*)
        row[10]    min distance [m]: full strength closer than this (0: none)
        row[11]    max distance [m]: no effect farther than this (0: no limit)
        row[12]    shape: 0 point (distance from the centre), 1 plane (distance from the plane through
                   the centre normal to the axis; a vortex: distance from the axis)
        row[13]    Z direction: 0 both sides, 1 only where (x − centre)·axis ≥ 0, −1 only where ≤ 0
        row[14]    flow [1/s]: the velocity damping Blender calls *Flow*, a −= flow × falloff × v
        row[15]    vortex: profile code (0 rankine, 1 blender_point, 2 blender_plane); turbulence: seed
    sampled:
        row[1] offset of its samples in ``grid`` (float32 element index), row[2:5] node counts
        (nx, ny, nz), row[5:8] lower corner [m], row[8:11] upper corner [m], row[11] strength
``grid`` float32 (total,): sampled fields' vectors, C order (nx, ny, nz, 3), concatenated.

Falloff (``falloff``) is Blender's spherical falloff (``effect.cc``, ``falloff_func``): 1 closer than the
min distance, 0 beyond the max distance, else (1 + d − d_min)^(−power); with power 0 (Blender's default)
the field is uniform in strength. Blender's Tube and Cone falloffs, its noise, absorption, 1/r² gravity
option and texture fields have no engine counterpart; ``addon/force_fields.py`` names them when it
meets them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .errors import MochiError
from .settings_schema import FIELD, choice, setting, settings_dataclass

FIELD_KINDS = ("uniform", "rotating", "vortex", "sampled", "force", "wind", "turbulence")
KIND_VORTEX = 2
KIND_SAMPLED = 3
KIND_FORCE = 4
KIND_WIND = 5
KIND_TURBULENCE = 6
#: Kinds evaluated per particle from a row of the table that holds a centre (shifted to local origins).
CENTRED_KINDS = {"vortex": KIND_VORTEX, "force": KIND_FORCE, "wind": KIND_WIND, "turbulence": KIND_TURBULENCE}
SHAPES = choice("shape").choice_keys()
#: A field's side of its plane, as the kernels' code for it (the keys are the schema's).
Z_DIRECTIONS = dict(zip(choice("z_direction").choice_keys(), (0, 1, -1), strict=True))
VORTEX_PROFILES = choice("profile").choice_keys()
#: Turbulence seeds are stored in a float32 table entry, exact below 2^24 (the schema's bound).
SEED_LIMIT = int(setting("seed").highest) + 1
TABLE_WIDTH = 16


@dataclass(frozen=True, eq=False)
class _ForceField:
    """One acceleration field (units and Blender's formulas in the module docstring).

    Attributes:
        kind: One of ``FIELD_KINDS``.
        vector: uniform/rotating: acceleration at t = 0 [m/s²].
        axis: rotating: rotation axis; vortex: swirl axis (right-handed); force, wind, turbulence: the
            field object's Z axis (wind blows along it; a plane-shaped field is normal to it).
        rate: rotating: angular rate [rad/s].
        center: vortex: a point on the axis; force, wind, turbulence: the field's origin [m].
        strength: vortex 'rankine': peak tangential acceleration [m/s²] (reached at ``core_radius``);
            vortex 'blender_point': tangential acceleration per metre from the centre [1/s²];
            vortex 'blender_plane': angular rate the grains are driven to [rad/s];
            force: acceleration away from the centre (negative: towards it) [m/s²];
            wind: acceleration along ``axis`` [m/s²]; turbulence: largest acceleration [m/s²];
            sampled: scale factor applied to the samples.
        core_radius: vortex 'rankine': radius of the solid-body core [m]; the swirl falls off as 1/ρ outside.
        path: sampled: .npy file with samples [m/s²], shape (nx, ny, nz, 3), nodes spanning lo..hi.
        lo, hi: sampled: corners of the sampled box [m]; outside it the field is zero.
        falloff_power: Blender's falloff *Power*: strength × (1 + d − min_distance)^(−power).
        min_distance: Full strength closer than this [m] (0: none).
        max_distance: No effect farther than this [m] (0: no limit).
        shape: 'point' (d is the distance from ``center``) or 'plane' (d from the plane normal to
            ``axis`` through ``center``; a vortex: from its axis).
        z_direction: 'both', 'positive' or 'negative': the side of that plane the field acts on.
        flow: Blender's *Flow* [1/s]: the field also damps velocity, a −= flow × falloff × v (a wind of
            flow f carries grains at strength / f [m/s] instead of accelerating them without end).
        profile: vortex: 'rankine' (Mochi's core + 1/ρ swirl), 'blender_point' (Blender's point-shaped
            vortex: a = strength × |x − centre| × falloff, tangential) or 'blender_plane' (Blender's
            plane-shaped vortex, its default: a = ω × (ω × r) + ω × r − v with ω = strength × falloff
            × axis, which spins grains up to the angular rate ω in about a second and keeps them on circles).
        size: turbulence: noise feature size [m] (Blender's *Size*; ≤ 0 means 1).
        seed: turbulence: noise seed, 0 ≤ seed < 2^24.

    The numbers and choices (rate, strength, core_radius, falloff_power, min/max_distance, flow, size,
    seed, shape, z_direction, profile) are engine.settings_schema's field settings: their defaults and
    bounds are there, their meaning for each kind here.
    """

    kind: str
    vector: tuple[float, float, float] = (0.0, 0.0, 0.0)
    axis: tuple[float, float, float] = (0.0, 1.0, 0.0)
    center: tuple[float, float, float] = (0.0, 0.0, 0.0)
    path: str = ""
    lo: tuple[float, float, float] = (0.0, 0.0, 0.0)
    hi: tuple[float, float, float] = (1.0, 1.0, 1.0)

    def to_json(self) -> dict:
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.__dict__.items()}

    @staticmethod
    def from_json(data: dict) -> ForceField:
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


ForceField = settings_dataclass("ForceField", _ForceField, FIELD, eq=False)


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
        if f.kind in CENTRED_KINDS:
            axis = np.asarray(f.axis, dtype=np.float64)
            row[0] = CENTRED_KINDS[f.kind]
            row[1:4] = f.center
            row[4:7] = axis / np.linalg.norm(axis)
            row[7] = f.strength
            row[8] = f.core_radius if f.kind == "vortex" else (f.size if f.size > 0.0 else 1.0)
            row[9] = f.falloff_power
            row[10] = f.min_distance
            row[11] = f.max_distance
            row[12] = SHAPES.index(f.shape)
            row[13] = Z_DIRECTIONS[f.z_direction]
            row[14] = f.flow
            row[15] = VORTEX_PROFILES.index(f.profile) if f.kind == "vortex" else int(f.seed) % SEED_LIMIT
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


def field_max_acceleration(fields: tuple[ForceField, ...], *, extent: float = 1.0, speed: float = 0.0) -> float:
    """An upper bound of |a| over all fields [m/s²], used to estimate impact speeds.

    Args:
        fields: The fields.
        extent: Largest distance from a field's centre a grain can be at [m] (the domain's diagonal):
            Blender's vortices grow with the distance.
        speed: A speed grains can have [m/s], for the velocity-dependent terms.
    """
    total = 0.0
    for f in fields:
        s = abs(f.strength)
        if f.kind in ("uniform", "rotating"):
            total += float(np.linalg.norm(f.vector))
        elif f.kind == "vortex" and f.profile == "blender_point":
            total += s * extent
        elif f.kind == "vortex" and f.profile == "blender_plane":
            total += s * s * extent + s * extent + speed
        elif f.kind in CENTRED_KINDS:
            total += s  # the falloff never exceeds 1; flow only slows grains down
        elif f.kind == "sampled":
            grid = f.load_grid()
            total += s * float(np.sqrt((grid.astype(np.float64) ** 2).sum(axis=3)).max())
    return total
