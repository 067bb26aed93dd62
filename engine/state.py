"""Time-varying state of a simulation.

A ``State`` is exactly what a cache frame stores (positions, velocities, activity) plus the global step
index, so restoring a frame restores the simulation bit for bit.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .errors import MochiError
from .settings_types import COORDINATE_LIMIT, RADIUS_RANGE


@dataclass(eq=False)
class State:
    """Positions, velocities and activity of every particle.

    Attributes:
        positions: Sphere centres [m], shape (particle_count, 3), float32.
        velocities: Velocities [m/s], shape (particle_count, 3), float32.
        active: 1 while a particle is simulated, 0 once it has left an open domain, shape
            (particle_count,), uint8. Inactive particles keep their last position and velocity.
        step: Number of steps taken since the start of the bake.
        angular_velocities: ω [rad/s], shape (particle_count, 3), float32 (zero without rotation).
        orientations: Unit quaternions (w, x, y, z), shape (particle_count, 4), float32; identity at
            the start (the accumulated rotation a render applies to an instanced mesh).
        bonds: Intact glue bonds of each particle, shape (particle_count,), uint8 (for renders that show
            cracks; the bonds themselves are in the backend's contact history).
    """

    positions: np.ndarray
    velocities: np.ndarray
    active: np.ndarray
    step: int = 0
    angular_velocities: np.ndarray | None = None
    orientations: np.ndarray | None = None
    bonds: np.ndarray | None = None

    def __post_init__(self):
        n = self.positions.shape[0]
        if self.angular_velocities is None:
            self.angular_velocities = np.zeros((n, 3), np.float32)
        if self.orientations is None:
            self.orientations = identity_orientations(n)
        if self.bonds is None:
            self.bonds = np.zeros(n, np.uint8)

    @property
    def particle_count(self) -> int:
        return int(self.positions.shape[0])

    def copy(self) -> "State":
        return State(self.positions.copy(), self.velocities.copy(), self.active.copy(), self.step,
                     self.angular_velocities.copy(), self.orientations.copy(), self.bonds.copy())


def identity_orientations(count: int) -> np.ndarray:
    """Identity unit quaternions (w, x, y, z), float32 (count, 4)."""
    q = np.zeros((count, 4), np.float32)
    q[:, 0] = 1.0
    return q


def make_state(positions: np.ndarray, velocities: np.ndarray | None = None,
               active: np.ndarray | None = None, step: int = 0,
               angular_velocities: np.ndarray | None = None, orientations: np.ndarray | None = None) -> State:
    """Validate and assemble a ``State``.

    Raises:
        MochiError: wrong shapes, or NaN/infinite positions or velocities.
    """
    positions = np.ascontiguousarray(positions, dtype=np.float32)
    if positions.ndim != 2 or positions.shape[1] != 3:
        raise MochiError(f"Positions must have shape (particle_count, 3), not {positions.shape}.")
    n = positions.shape[0]
    if n == 0:
        raise MochiError("The scene has no particles.")
    if velocities is None:
        velocities = np.zeros((n, 3), np.float32)
    velocities = np.ascontiguousarray(velocities, dtype=np.float32)
    if velocities.shape != positions.shape:
        raise MochiError(f"Velocities have shape {velocities.shape} but positions have {positions.shape}.")
    for name, array in (("position", positions), ("velocity", velocities)):
        bad = ~np.isfinite(array).all(axis=1)
        if bad.any():
            raise MochiError(f"Particle {int(np.flatnonzero(bad)[0])} has a NaN or infinite {name}.")
    active = np.ones(n, np.uint8) if active is None else np.ascontiguousarray(active, dtype=np.uint8)
    omega = np.zeros((n, 3), np.float32) if angular_velocities is None else \
        np.ascontiguousarray(angular_velocities, dtype=np.float32)
    quat = identity_orientations(n) if orientations is None else np.ascontiguousarray(orientations, np.float32)
    if omega.shape != (n, 3) or quat.shape != (n, 4):
        raise MochiError(f"Angular velocities must have shape ({n}, 3) and orientations ({n}, 4), not "
                         f"{omega.shape} and {quat.shape}.")
    bad = ~np.isfinite(omega).all(axis=1)
    if bad.any():
        raise MochiError(f"Particle {int(np.flatnonzero(bad)[0])} has a NaN or infinite angular velocity.")
    return State(positions, velocities, active, int(step), omega, quat)


def check_particles(positions: np.ndarray, radius: np.ndarray, where: str) -> None:
    """Refuse particles a float32 simulation cannot hold: a position that is not finite or farther than
    ``COORDINATE_LIMIT`` from the origin along an axis, or a radius outside ``RADIUS_RANGE``
    (engine.settings_types says why). ``mochi contacts``, ``mochi bench --state``, a preset's file
    emitters (all through ``engine.ply.read_particles``) and every new scene (``engine.scene``) check here.

    Args:
        positions: Centres [m], shape (particle_count, 3).
        radius: Radii [m], shape (particle_count,).
        where: What holds them, for the sentence (a file, 'This scene').

    Raises:
        MochiError: naming the first particle at fault, its value and the range.
    """
    positions = np.asarray(positions)
    radius = np.asarray(radius)
    bad = ~np.isfinite(positions).all(axis=1)
    if bad.any():
        raise MochiError(f"{where}: particle {int(np.flatnonzero(bad)[0])} has a NaN or infinite position.")
    bad = ~(np.abs(positions) <= COORDINATE_LIMIT).all(axis=1)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise MochiError(f"{where}: particle {i} is at {tuple(float(x) for x in positions[i])}; positions must be "
                         f"within ±{COORDINATE_LIMIT:g} m of the origin (they are float32: farther out neither their "
                         "differences nor a grid over them can be computed), so move the scene nearer the origin.")
    low, high = RADIUS_RANGE
    with np.errstate(invalid="ignore"):
        bad = ~((radius >= low) & (radius <= high))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise MochiError(f"{where}: particle {i} has radius {float(radius[i])!r}; every radius must be positive, "
                         f"from {low:g} to {high:g} m.")
