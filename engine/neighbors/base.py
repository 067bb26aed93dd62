"""The neighbour-search interface: ``allocate`` a list with room to spare, ``update`` it as the grains move.

After JAX MD's ``partition.neighbor_list``: ``allocate`` runs on the host and sizes the pair array with a
capacity margin; ``update`` refills that same array (fixed shape) and reports with ``overflow`` when the
pairs no longer fit, instead of raising in the middle of a loop: the caller reads the flag and allocates
again (``update_or_allocate`` does both). A list holds every pair closer than r_i + r_j + skin, so it
stays valid until some grain has moved half the skin since it was built (``needs_rebuild``); ``update``
searches again only then. Implementations are chosen by name (engine.neighbors.make_neighbor_search):
'brute' (the oracle the tests compare every other search with), 'cpu' (the cell list of the CPU backend)
and the GPU backends' searches.
"""

from __future__ import annotations

import abc
import dataclasses
from dataclasses import dataclass

import numpy as np

#: Pairs an allocated list has room for, as a multiple of those found when it was allocated.
CAPACITY_MARGIN = 1.25
#: Extra rows on top of the margin, so a list allocated over few pairs still has room to grow.
CAPACITY_SLACK = 16


@dataclass(frozen=True, eq=False)
class NeighborList:
    """Candidate pairs of one state, in a fixed-capacity array.

    Attributes:
        pairs: Candidate pairs (i, j), i < j, sorted, closer than r_i + r_j + skin, int32
            (capacity, 2); rows from ``count`` on are −1.
        count: Pairs found by the last search; above ``capacity`` when they did not fit.
        overflow: The last search found more pairs than ``capacity``: ``pairs`` misses some, allocate
            again (``update_or_allocate``).
        skin: Distance added to every reach [m].
        reference: Centres the list was built from [m], float64 (particle_count, 3).
        radius: Radii [m], float32 (particle_count,).
        active: Which grains take part, bool (particle_count,).
        builds: Searches made since ``allocate`` (1 after it).
    """

    pairs: np.ndarray
    count: int
    overflow: bool
    skin: float
    reference: np.ndarray
    radius: np.ndarray
    active: np.ndarray
    builds: int = 1

    @property
    def capacity(self) -> int:
        return int(self.pairs.shape[0])

    @property
    def particle_count(self) -> int:
        return int(self.radius.shape[0])

    def candidates(self) -> np.ndarray:
        """The pairs the list holds, int32 (min(count, capacity), 2)."""
        return self.pairs[:min(self.count, self.capacity)]

    def needs_rebuild(self, positions: np.ndarray) -> bool:
        """Whether some active grain has moved more than half the skin since the build: a pair that was
        farther apart than r_i + r_j + skin may touch now. Centres [m], (particle_count, 3)."""
        if self.skin <= 0.0:
            return not np.array_equal(np.asarray(positions, np.float64), self.reference)
        moved = np.asarray(positions, np.float64)[self.active] - self.reference[self.active]
        return bool(moved.size) and 4.0 * float((moved * moved).sum(axis=1).max()) > self.skin * self.skin

    def contacts(self, positions: np.ndarray) -> np.ndarray:
        """The touching pairs (|c_i − c_j| ≤ r_i + r_j, decided in float64 from float32 centres) among
        the candidates, int32 (contacts, 2), i < j, sorted. Centres [m], (particle_count, 3)."""
        return touching(as_centres(positions), self.radius, self.candidates())


class NeighborSearch(abc.ABC):
    """Finds the pairs of spheres within reach of each other. Subclasses implement ``_search``."""

    #: The name ``make_neighbor_search`` knows it by.
    name: str = ""

    def allocate(self, positions: np.ndarray, radius: np.ndarray, *, active: np.ndarray | None = None,
                 skin: float = 0.0, capacity_margin: float = CAPACITY_MARGIN) -> NeighborList:
        """Search from scratch and size the list with room for ``capacity_margin`` times the pairs found.

        Args:
            positions: Centres [m], (particle_count, 3); stored as float32, as the engine's state.
            radius: Radii [m], (particle_count,).
            active: Which grains take part (default: all), (particle_count,).
            skin: Distance added to every reach [m], so the list stays valid while grains move.
            capacity_margin: Room to grow, as a multiple of the pairs found now (≥ 1).
        """
        centres, radius, active = as_centres(positions), np.ascontiguousarray(radius, np.float32), \
            np.ones(len(radius), bool) if active is None else np.asarray(active, bool)
        found = self._search(centres, radius, active, float(skin))
        capacity = int(np.ceil(found.shape[0] * max(capacity_margin, 1.0))) + CAPACITY_SLACK
        pairs = np.full((capacity, 2), -1, np.int32)
        pairs[:found.shape[0]] = found
        return NeighborList(pairs, int(found.shape[0]), False, float(skin), centres.astype(np.float64), radius,
                            active)

    def update(self, neighbors: NeighborList, positions: np.ndarray, *,
               active: np.ndarray | None = None) -> NeighborList:
        """The list for new centres: the same one while no grain has moved half the skin (and ``active``
        is unchanged), else a new search into the same capacity, ``overflow`` set when it does not fit.

        Args:
            neighbors: What ``allocate`` or a previous ``update`` returned.
            positions: Centres [m], (particle_count, 3).
            active: Which grains take part now (default: as before).
        """
        centres = as_centres(positions)
        active = neighbors.active if active is None else np.asarray(active, bool)
        if not neighbors.needs_rebuild(centres) and np.array_equal(active, neighbors.active):
            return neighbors
        found = self._search(centres, neighbors.radius, active, neighbors.skin)
        pairs = np.full_like(neighbors.pairs, -1)
        fits = min(found.shape[0], pairs.shape[0])
        pairs[:fits] = found[:fits]
        return dataclasses.replace(neighbors, pairs=pairs, count=int(found.shape[0]),
                                   overflow=found.shape[0] > pairs.shape[0], reference=centres.astype(np.float64),
                                   active=active, builds=neighbors.builds + 1)

    def update_or_allocate(self, neighbors: NeighborList, positions: np.ndarray, *,
                           active: np.ndarray | None = None) -> NeighborList:
        """``update``, reading its overflow flag: when the pairs did not fit, allocate again with the
        margin on the new count (the one place a search grows its list)."""
        updated = self.update(neighbors, positions, active=active)
        if not updated.overflow:
            return updated
        return self.allocate(positions, updated.radius, active=updated.active, skin=updated.skin)

    @abc.abstractmethod
    def _search(self, centres: np.ndarray, radius: np.ndarray, active: np.ndarray, skin: float) -> np.ndarray:
        """Every pair of active grains with |c_i − c_j| ≤ r_i + r_j + skin, int32 (pairs, 2), i < j,
        sorted by (i, j); decided in float64 from the float32 centres [m] (n, 3) and radii [m] (n,)."""

    def describe(self) -> str:
        """One line naming the search and its device."""
        return self.name


def as_centres(positions: np.ndarray) -> np.ndarray:
    """Centres as the engine stores them: float32, C-contiguous, (n, 3); a ``State`` gives its positions."""
    positions = getattr(positions, "positions", positions)
    return np.ascontiguousarray(positions, np.float32)


def sorted_pairs(i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """Pairs (min, max) of two index arrays, int32 (k, 2), sorted by (i, j)."""
    pairs = np.stack([np.minimum(i, j), np.maximum(i, j)], axis=1).astype(np.int32)
    if pairs.shape[0] == 0:
        return pairs.reshape(0, 2)
    return pairs[np.lexsort((pairs[:, 1], pairs[:, 0]))]


def touching(centres: np.ndarray, radius: np.ndarray, pairs: np.ndarray, reach: float = 0.0) -> np.ndarray:
    """The pairs with |c_i − c_j| ≤ r_i + r_j + reach, in float64 (exact touches count), int32 (k, 2).

    Args:
        centres: Centres [m], (n, 3). radius: Radii [m], (n,). pairs: int (k, 2). reach: [m].
    """
    if pairs.shape[0] == 0:
        return pairs.astype(np.int32).reshape(0, 2)
    x = np.asarray(centres, np.float64)
    r = np.asarray(radius, np.float64)
    i, j = pairs[:, 0], pairs[:, 1]
    d = x[i] - x[j]
    limit = r[i] + r[j] + reach
    return pairs[(d * d).sum(axis=1) <= limit * limit].astype(np.int32)
