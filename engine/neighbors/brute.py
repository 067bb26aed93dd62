"""The brute-force search: the oracle every other search is tested against.

Exact by construction and independent of the engine's cell lists: candidates come from SciPy's k-d tree
over every centre within the largest possible reach (2 r_max + skin), and each is decided in float64
from the float32 centres, as the backends decide (exact touches count).
"""

from __future__ import annotations

import numpy as np

from .base import NeighborSearch, sorted_pairs, touching


def pairs_within(centres: np.ndarray, radius: np.ndarray, reach: float = 0.0) -> np.ndarray:
    """Every pair with |c_i − c_j| ≤ r_i + r_j + ``reach``, int32 (pairs, 2), i < j, sorted.

    Args:
        centres: Centres [m], (n, 3); taken as float64 of what is given.
        radius: Radii [m], (n,).
        reach: Distance added to every r_i + r_j [m].
    """
    from scipy.spatial import cKDTree

    x = np.asarray(centres, np.float64)
    r = np.asarray(radius, np.float64)
    if x.shape[0] < 2:
        return np.zeros((0, 2), np.int32)
    # The tree's own distance test is only a prefilter (with room for its rounding): touching decides.
    candidates = cKDTree(x).query_pairs(2.0 * float(r.max()) + reach + 1e-12, output_type="ndarray")
    if candidates.shape[0] == 0:
        return np.zeros((0, 2), np.int32)
    return sorted_pairs(*touching(x, r, candidates, reach).T)


def brute_force_pairs(positions: np.ndarray, radius: np.ndarray) -> set[tuple[int, int]]:
    """The touching pairs (i, j), i < j, as a set: the form the tests compare with."""
    return {(int(i), int(j)) for i, j in pairs_within(positions, radius)}


def near_ties(positions: np.ndarray, radius: np.ndarray, rel: float = 1e-6) -> set[tuple[int, int]]:
    """Pairs whose distance is within ``rel`` of r_i + r_j: float32 rounding may decide either way."""
    from scipy.spatial import cKDTree

    x = np.asarray(positions, np.float64)
    r = np.asarray(radius, np.float64)
    candidates = cKDTree(x).query_pairs(2.0 * r.max() * (1 + rel) + 1e-12, output_type="ndarray")
    if candidates.shape[0] == 0:
        return set()
    i, j = candidates[:, 0], candidates[:, 1]
    d = np.linalg.norm(x[i] - x[j], axis=1)
    s = r[i] + r[j]
    tie = np.abs(d - s) <= rel * s
    return {(int(min(a, b)), int(max(a, b))) for a, b in zip(i[tie], j[tie])}


class NeighborSearchBrute(NeighborSearch):
    """The oracle (see the module docstring); fine up to some hundred thousand grains."""

    name = "brute"

    def _search(self, centres, radius, active, skin):
        index = np.flatnonzero(active)
        found = pairs_within(centres[index], radius[index], skin)
        return sorted_pairs(index[found[:, 0]], index[found[:, 1]])

    def describe(self) -> str:
        return "brute (exact float64 oracle over a k-d tree)"
