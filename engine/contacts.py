"""Contacts of a bare state, without a simulation: ``mochi contacts``, the OptiX self-check, the tests.

Which spheres touch (|c_i − c_j| ≤ r_i + r_j) does not depend on the physics, so the model built here
is frictionless with the history-free law: every backend accepts it.
"""

from __future__ import annotations

import numpy as np


def contact_model(positions: np.ndarray, radius: np.ndarray):
    """A frictionless ``Model`` whose domain holds every sphere.

    Args:
        positions: Centres [m], shape (n, 3).
        radius: Radii [m], shape (n,).
    """
    from .model import Domain, Material, Physics, build_model

    positions = np.asarray(positions, np.float64)
    radius = np.asarray(radius)
    lo = tuple(float(x) for x in positions.min(axis=0) - radius.max())
    hi = tuple(float(x) for x in positions.max(axis=0) + radius.max() + 1e-6)
    physics = Physics(domain=Domain(lo=lo, hi=hi, wall_friction=0.0), materials=(Material(friction=0.0),),
                      friction_model="damper")
    return build_model(radius, physics)


def count_contacts(positions: np.ndarray, radius: np.ndarray, backend: str = "cpu", *,
                   log=lambda message: None) -> np.ndarray:
    """Contacts per particle, int32 (n,), for centres [m] (n, 3) and radii [m] (n,).

    Args:
        backend: Any of ``engine.backends.BACKEND_NAMES``; 'auto' reports its choice through ``log``.
    """
    from .backends import make_backend
    from .state import make_state

    runner = make_backend(backend, contact_model(positions, radius), log=log)
    runner.set_state(make_state(positions))
    return runner.contact_counts()
