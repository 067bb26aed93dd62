"""What every backend derives from a model's ``Physics`` before its first step, written once.

The law's per-material tables (engine.contact_law), the local origin the kernels compute around
(engine.local_origin) and the box and force fields moved into it (engine.fields). The CPU backend keeps
these arrays as they are (float64 where the table is float64); the GPU backends upload them as float32.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..contact_law import cohesion_tables, law_tables, pair_tables, rolling_tables, wall_tables
from ..fields import pack_fields
from ..local_origin import local_origin, shift_field_table
from ..model import Physics


@dataclass(frozen=True, eq=False)
class PreparedPhysics:
    """A model's derived constants (M: material count).

    Attributes:
        origin: Local origin the positions are stored around [m], float64 (3,).
        lo, hi: The box's corners in local coordinates [m], float64 (3,).
        wall_mask: Which sides are walls (−x, +x, −y, +y, −z, +z), (6,).
        beta, mu: Normal damping ratio and friction coefficient per material pair, (M, M).
        wall_beta, wall_mu: The same against the walls, (M,).
        roll, wall_roll: Rolling coefficients μ_r, (M, M) and (M,), float32; zero without rotation
            (rolling resistance acts through ω only).
        cohesion, wall_cohesion: SJKR cohesion c [Pa], (M, M) and (M,), float64.
        law_table, wall_law_table: E*, G* [Pa] of Hertz–Mindlin and the friction cap per material pair
            (M, M, 3) and against the walls (M, 3), float64 (engine.contact_law.law_tables); no rows with the
            linear law and Mochi's cap.
        field_table: Position-dependent fields (engine.fields layout) in local coordinates, float32
            (field_count, 16); field_grid: their samples, float32 (at least one element).
    """

    origin: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    wall_mask: np.ndarray
    beta: np.ndarray
    mu: np.ndarray
    wall_beta: np.ndarray
    wall_mu: np.ndarray
    roll: np.ndarray
    wall_roll: np.ndarray
    cohesion: np.ndarray
    wall_cohesion: np.ndarray
    law_table: np.ndarray
    wall_law_table: np.ndarray
    field_table: np.ndarray
    field_grid: np.ndarray

    @property
    def rolling(self) -> bool:
        """Whether any rolling resistance acts (pairs or walls)."""
        return bool(self.roll.any()) or bool(self.wall_roll.any())

    @property
    def cohesive(self) -> bool:
        """Whether any cohesion acts (pairs or walls)."""
        return bool(self.cohesion.any()) or bool(self.wall_cohesion.any())

    @property
    def tabled(self) -> bool:
        """Whether contacts read the law tables (Hertz–Mindlin or a peer's friction cap): the full law."""
        return self.law_table.shape[0] > 0


def prepare_physics(physics: Physics) -> PreparedPhysics:
    """The derived constants of a model's ``physics`` (see ``PreparedPhysics``)."""
    domain = physics.domain
    beta, mu = pair_tables(physics.materials)
    wall_beta, wall_mu = wall_tables(physics.materials, domain.wall_restitution, domain.wall_friction)
    roll, wall_roll = rolling_tables(physics.materials, domain.wall_rolling_friction)
    if not physics.rotation:
        roll, wall_roll = np.zeros_like(roll), np.zeros_like(wall_roll)
    cohesion, wall_cohesion = cohesion_tables(physics.materials, domain.wall_cohesion)
    law_table, wall_law_table = law_tables(physics)
    origin = local_origin(domain.lo, domain.hi)
    table, grid = pack_fields(physics.fields)
    return PreparedPhysics(origin=origin, lo=np.asarray(domain.lo, np.float64) - origin,
                           hi=np.asarray(domain.hi, np.float64) - origin, wall_mask=domain.wall_mask(), beta=beta,
                           mu=mu, wall_beta=wall_beta, wall_mu=wall_mu, roll=roll, wall_roll=wall_roll,
                           cohesion=cohesion, wall_cohesion=wall_cohesion, law_table=law_table, wall_law_table=wall_law_table,
                           field_table=shift_field_table(table, origin, physics.fields), field_grid=grid)
