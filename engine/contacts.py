"""Contacts of a bare state, without a simulation: ``mochi contacts``, the tests.

Which spheres touch (|c_i − c_j| ≤ r_i + r_j) depends only on centres and radii, so this asks a neighbour
search (engine.neighbors) for the touching pairs; no model is built (the GPU searches build their own).
"""

from __future__ import annotations

import numpy as np

from .neighbors import make_neighbor_search


def contact_pairs(positions: np.ndarray, radius: np.ndarray, search: str = "cpu", *,
                  log=lambda message: None, rt_device: str | None = None) -> np.ndarray:
    """Touching pairs (i, j), i < j, sorted, int32 (contacts, 2).

    Args:
        positions: Centres [m], (n, 3); decided in float64 from their float32 values.
        radius: Radii [m], (n,).
        search: Any of ``engine.neighbors.NEIGHBOR_SEARCH_NAMES``; 'auto' reports its choice through ``log``.
        rt_device: Device kind for 'rt' or 'auto' ('vulkan', 'd3d12', 'metal', 'cuda'; None: the first).
    """
    finder = make_neighbor_search(search, log=log, rt_device=rt_device)
    neighbors = finder.allocate(positions, radius)
    return neighbors.contacts(positions)


def count_contacts(positions: np.ndarray, radius: np.ndarray, backend: str = "cpu", *,
                   log=lambda message: None, rt_device: str | None = None) -> np.ndarray:
    """Contacts per particle, int32 (n,), for centres [m] (n, 3) and radii [m] (n,).

    Args:
        backend: Any of ``engine.neighbors.NEIGHBOR_SEARCH_NAMES``; 'auto' reports its choice through ``log``.
        rt_device: As for ``contact_pairs``.
    """
    pairs = contact_pairs(positions, radius, backend, log=log, rt_device=rt_device)
    n = len(radius)
    return (np.bincount(pairs[:, 0], minlength=n) + np.bincount(pairs[:, 1], minlength=n)).astype(np.int32)
