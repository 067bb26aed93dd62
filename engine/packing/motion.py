"""Rigid-body motion given to the particles of one object: their velocities and their spin."""

from __future__ import annotations

import numpy as np


def rigid_velocities(positions, linear, angular, pivot) -> np.ndarray:
    """Velocity of each particle of a rigid body: v + ω × (x − pivot).

    Args:
        positions: Particle centres x [m], shape (particle_count, 3).
        linear: Linear velocity v of the pivot [m/s], shape (3,).
        angular: Angular velocity ω [rad/s], shape (3,), right-handed about its direction.
        pivot: Point the body turns about [m], shape (3,) (usually its centre of mass).

    Returns:
        float32 shape (particle_count, 3) [m/s].
    """
    x = np.asarray(positions, dtype=np.float64).reshape(-1, 3)
    lever = x - np.asarray(pivot, dtype=np.float64)
    v = np.asarray(linear, dtype=np.float64) + np.cross(np.asarray(angular, dtype=np.float64), lever)
    return v.astype(np.float32)


def rigid_spins(count: int, angular) -> np.ndarray:
    """Spin of each of the ``count`` particles of a body turning at ``angular`` ω [rad/s], shape (3,): in a
    rigid turn every part of the body turns at ω, so each grain spins at ω as its centre goes round
    the pivot (``rigid_velocities``); at their contacts the grains then do not slip.

    Returns:
        float32 shape (count, 3) [rad/s].
    """
    return np.tile(np.asarray(angular, dtype=np.float32).reshape(1, 3), (int(count), 1))
