"""Verlet half list of the CPU backend, and the spatial reorder of particle slots made at each build.

The list (CSR ``nbr_start``/``nbr_j`` and its transpose, layouts in ``cpu_kernels``) holds every pair
closer than r_i + r_j + skin, found through a uniform cell grid. At a build the backend may first
renumber its particles ("slots") in cell order, so that neighbours sit close in memory and the force
loop reads them from cache; ``slot_order`` chooses that order. The order depends only on the positions
and the particle ids (cell first, then id), never on the previous order: a bake resumed from a cache
frame (particles in id order) gets the very slots an uninterrupted one has after the same build, which
keeps resumes bit-exact.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from . import cpu_kernels as k
from .cpu_kernels import KERNEL_OPTIONS

#: Candidates per particle kept from the counting scan, so the filling pass copies them instead of
#: scanning the cells again (rows longer than this are scanned twice). 4 bytes each.
KEPT_PER_PARTICLE = 12


@njit(**KERNEL_OPTIONS)
def _slot_order(cell_of, perm, cell_count):
    """Slots sorted by (cell, particle id), inactive (cell −1) last by id: new slot → old slot, int64 (n,).

    ``perm[slot]`` is the particle id held by a slot; ``cell_of[slot]`` its cell.
    """
    n = cell_of.shape[0]
    slot_of = np.empty(n, np.int64)
    for s in range(n):
        slot_of[perm[s]] = s
    # Bucket cell_count collects the inactive slots.
    start = np.zeros(cell_count + 2, np.int64)
    for s in range(n):
        c = cell_of[s]
        start[(c if c >= 0 else cell_count) + 1] += 1
    for c in range(cell_count + 1):
        start[c + 1] += start[c]
    order = np.empty(n, np.int64)
    for pid in range(n):  # ids in increasing order: ties within a cell are broken by id
        s = slot_of[pid]
        c = cell_of[s]
        b = c if c >= 0 else cell_count
        order[start[b]] = s
        start[b] += 1
    return order


def neighbour_runs(dims: np.ndarray) -> np.ndarray:
    """The 13 'forward' neighbour cells (half stencil) of a cell, as 4 runs of 3 consecutive linear
    indices, int64 (4, 2): run k is cells c + runs[k, 0] … c + runs[k, 1].

    Every pair of particles in adjacent cells is seen exactly once, from the cell whose neighbour lies
    forward of it (pairs inside one cell in sorted order). With z the fastest axis of the linear index,
    the forward cells (0, 0, +1), (0, +1, −1…+1) and (+1, −1…+1, −1…+1) form runs of consecutive cells,
    whose particles are consecutive in cell order: one loop per run instead of one per cell, which
    saves the scan most of its short, unpredictable loops. The runs come in increasing offset order.
    (The first, (0, 0, +1), is scanned together with the particle's own cell.)
    """
    plane = int(dims[1] * dims[2])
    row = int(dims[2])
    runs = [(row - 1, row + 1)] + [(plane + ay * row - 1, plane + ay * row + 1) for ay in (-1, 0, 1)]
    return np.array(runs, np.int64)


@njit(**KERNEL_OPTIONS)
def _within(b, xi, yi, zi, ri, spos, srad):
    # float64, like the contact test itself: a candidate test in float32 could drop exact touches.
    dx = xi - np.float64(spos[b, 0])
    dy = yi - np.float64(spos[b, 1])
    dz = zi - np.float64(spos[b, 2])
    reach = ri + np.float64(srad[b])
    return dx * dx + dy * dy + dz * dz <= reach * reach


@njit(**KERNEL_OPTIONS)
def _scan(a, spos, srad, scell, order, cell_start, runs, skin, out, slot, cap):
    """Candidates of the particle at sorted position a: later particles of its own cell and all
    particles of the 13 forward cells closer than r_i + r_j + skin, in cell order. Writes the first
    ``cap`` of them (their original ids) to ``out[slot:]``; returns how many there are."""
    c = scell[a]
    xi, yi, zi = np.float64(spos[a, 0]), np.float64(spos[a, 1]), np.float64(spos[a, 2])
    ri = np.float64(srad[a]) + skin
    found = 0
    for b in range(a + 1, cell_start[c + 2]):  # own cell, then (0, 0, +1): consecutive
        if _within(b, xi, yi, zi, ri, spos, srad):
            if found < cap:
                out[slot + found] = order[b]
            found += 1
    for r in range(runs.shape[0]):
        for b in range(cell_start[c + runs[r, 0]], cell_start[c + runs[r, 1] + 1]):
            if _within(b, xi, yi, zi, ri, spos, srad):
                if found < cap:
                    out[slot + found] = order[b]
                found += 1
    return found


@njit(parallel=True, **KERNEL_OPTIONS)
def _count_keep(spos, srad, scell, order, cell_start, runs, skin, counts, kept):
    """counts[i] = candidates of particle i's row; the first KEPT of them to kept[a] (a: sorted position)."""
    cap = kept.shape[1]
    for a in prange(order.shape[0]):
        counts[order[a]] = _scan(a, spos, srad, scell, order, cell_start, runs, skin, kept[a], 0, cap)


@njit(parallel=True, **KERNEL_OPTIONS)
def _fill_kept(spos, srad, scell, order, cell_start, runs, skin, kept, nbr_start, nbr_j):
    """Write the rows into the CSR list: copied from ``kept`` where they fit, scanned again where not."""
    cap = kept.shape[1]
    for a in prange(order.shape[0]):
        i = order[a]
        start = nbr_start[i]
        count = nbr_start[i + 1] - start
        if count <= cap:
            for q in range(count):
                nbr_j[start + q] = kept[a, q]
        else:
            _scan(a, spos, srad, scell, order, cell_start, runs, skin, nbr_j, start, count)


class NeighborListCpu:
    """The Verlet half list and its transpose (arrays described in ``cpu_kernels``), over slots.

    A build runs in two calls so the caller can renumber its particles in between: ``bin`` fits the
    cell grid and assigns each slot its cell; ``slot_order`` gives a cell-ordered renumbering (apply it
    to every per-particle array and to ``cell_of`` with ``permute``); ``build`` makes the list.
    """

    def __init__(self, particle_count: int):
        self.nbr_start = np.zeros(particle_count + 1, np.int64)
        self.nbr_j = np.zeros(0, np.int32)
        self.rev_start = np.zeros(particle_count + 1, np.int64)
        self.rev_pair = np.zeros(0, np.int64)
        self.skin = 0.0
        self.cell_of = np.zeros(particle_count, np.int64)
        self.counts = np.zeros(particle_count, np.int64)
        self.dims = np.ones(3, np.int64)
        self.active_count = 0

    def bin(self, pos: np.ndarray, radius: np.ndarray, active: np.ndarray, skin: float) -> None:
        """Fit a cell grid for cut-off r_i + r_j + ``skin`` [m] and fill ``cell_of`` (−1: inactive)."""
        n = pos.shape[0]
        lo, hi, count = k.active_bounds(pos, active)
        self.skin = skin
        self.active_count = count
        if count == 0:
            self.cell_of[:] = -1
            self.dims = np.ones(3, np.int64)
            return
        r_max = float(radius[active.astype(bool)].max()) if count < n else float(radius.max())
        cell = 2.0 * r_max + skin
        extent = np.maximum(hi - lo, 0.0)
        # Keep the grid at most ~2 cells per particle; larger cells stay correct, only slower.
        cell = max(cell, float(np.prod(extent + cell) / (2.0 * count + 8.0)) ** (1.0 / 3.0))
        self.dims = np.floor(extent / cell).astype(np.int64) + 3  # +2: an empty cell of padding on each side
        k.assign_cells(pos, active, lo, 1.0 / cell, self.dims, self.cell_of)

    def slot_order(self, perm: np.ndarray) -> np.ndarray:
        """New slot → old slot, int64 (n,): cell order, ties by particle id (``perm``: slot → id)."""
        return _slot_order(self.cell_of, perm, int(np.prod(self.dims)))

    def permute(self, order: np.ndarray) -> None:
        """Follow a renumbering of the slots (``order``: new slot → old slot) made after ``bin``."""
        self.cell_of = self.cell_of[order]

    def build(self, pos: np.ndarray, radius: np.ndarray, *, in_cell_order: bool) -> None:
        """Make the list over the grid of the last ``bin``. ``in_cell_order``: the slots were renumbered
        with ``slot_order`` since, so the scan reads the arrays themselves instead of sorted copies."""
        n = pos.shape[0]
        if self.active_count == 0:
            self.nbr_start[:] = 0
            self.nbr_j = np.zeros(0, np.int32)
            self.rev_start[:] = 0
            self.rev_pair = np.zeros(0, np.int64)
            return
        cell_start, cell_order = k.counting_sort(self.cell_of, int(np.prod(self.dims)))
        runs = neighbour_runs(self.dims)
        if in_cell_order:
            spos, srad, scell = pos, radius, self.cell_of  # cell_order is 0, 1, …: the slots themselves
        else:
            m = cell_order.shape[0]
            spos, srad, scell = np.empty((m, 3), np.float32), np.empty(m, np.float32), np.empty(m, np.int64)
            k.gather_sorted(pos, radius, self.cell_of, cell_order, spos, srad, scell)
        skin = self.skin
        self.counts[:] = 0
        kept = np.empty((cell_order.shape[0], KEPT_PER_PARTICLE), np.int32)
        _count_keep(spos, srad, scell, cell_order, cell_start, runs, skin, self.counts, kept)
        self.nbr_start[0] = 0
        np.cumsum(self.counts, out=self.nbr_start[1:])
        self.nbr_j = np.empty(int(self.nbr_start[-1]), np.int32)
        _fill_kept(spos, srad, scell, cell_order, cell_start, runs, skin, kept, self.nbr_start, self.nbr_j)
        self.rev_start, self.rev_pair = k.transpose_pairs(self.nbr_j, n)

    @property
    def pair_count(self) -> int:
        return int(self.nbr_j.shape[0])

    def pairs(self) -> tuple[np.ndarray, np.ndarray]:
        """(i, j) slots of every list entry, int32 arrays of length pair_count."""
        i = np.repeat(np.arange(self.nbr_start.shape[0] - 1, dtype=np.int32), np.diff(self.nbr_start))
        return i, self.nbr_j
