"""numba kernels of the CPU backend's neighbour bookkeeping: cell binning, sorting and gathering, the
list's transpose, and what follows a list from one build to the next (contact flags, displacement,
pair history). Launched from ``engine.backends.cpu`` and ``cpu_neighbors``; conventions in ``cpu_kernels``.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from ..kernel_options import KERNEL_OPTIONS


@njit(parallel=True, **KERNEL_OPTIONS)
def active_bounds(pos, active):
    """Bounding box of active centres: (lo float64 (3,), hi float64 (3,), active count)."""
    n = pos.shape[0]
    lx = ly = lz = np.inf
    hx = hy = hz = -np.inf
    count = 0
    for i in prange(n):
        if active[i]:
            lx = min(lx, pos[i, 0])
            ly = min(ly, pos[i, 1])
            lz = min(lz, pos[i, 2])
            hx = max(hx, pos[i, 0])
            hy = max(hy, pos[i, 1])
            hz = max(hz, pos[i, 2])
            count += 1
    return np.array([lx, ly, lz]), np.array([hx, hy, hz]), count


@njit(parallel=True, **KERNEL_OPTIONS)
def max_speed_squared(vel, active):
    """Largest |v|² among active particles [m²/s²]."""
    best = 0.0
    for i in prange(vel.shape[0]):
        if active[i]:
            best = max(best, vel[i, 0] * vel[i, 0] + vel[i, 1] * vel[i, 1] + vel[i, 2] * vel[i, 2])
    return best


@njit(**KERNEL_OPTIONS)
def _cell_coord(x, lo, inv_h, dim):
    """Cell coordinate along one axis in a grid padded by one empty cell on each side."""
    c = int(math.floor((x - lo) * inv_h))
    return min(max(c, 0), dim - 3) + 1


@njit(parallel=True, **KERNEL_OPTIONS)
def assign_cells(pos, active, lo, inv_h, dims, cell_of):
    """Linear cell index of every particle (−1 when inactive), written to ``cell_of`` (int64).

    ``dims`` includes the padding, so the 27 neighbours of any occupied cell exist and the neighbour
    scan needs no bounds checks.
    """
    for i in prange(pos.shape[0]):
        if active[i]:
            cx = _cell_coord(pos[i, 0], lo[0], inv_h, dims[0])
            cy = _cell_coord(pos[i, 1], lo[1], inv_h, dims[1])
            cz = _cell_coord(pos[i, 2], lo[2], inv_h, dims[2])
            cell_of[i] = (cx * dims[1] + cy) * dims[2] + cz
        else:
            cell_of[i] = -1


@njit(parallel=True, **KERNEL_OPTIONS)
def take_rows(source, order, out):
    """out[s] = source[order[s]] for 2-D arrays (first axis: particles); numpy's fancy indexing is
    several times slower on the narrow rows the backend keeps."""
    for s in prange(order.shape[0]):
        src = order[s]
        for c in range(source.shape[1]):
            out[s, c] = source[src, c]


@njit(**KERNEL_OPTIONS)
def counting_sort(cell_of, cell_count):
    """Stable counting sort of particles by cell: (cell_start (cells+1,), sorted particle ids)."""
    start = np.zeros(cell_count + 1, np.int64)
    for i in range(cell_of.shape[0]):
        if cell_of[i] >= 0:
            start[cell_of[i] + 1] += 1
    for c in range(cell_count):
        start[c + 1] += start[c]
    fill = start[:-1].copy()
    order = np.empty(start[cell_count], np.int32)
    for i in range(cell_of.shape[0]):
        c = cell_of[i]
        if c >= 0:
            order[fill[c]] = i
            fill[c] += 1
    return start, order


@njit(parallel=True, **KERNEL_OPTIONS)
def gather_sorted(pos, radius, cell_of, order, spos, srad, scell):
    """Copies of centres, radii and cells in cell order, so the neighbour scan reads memory in order."""
    for a in prange(order.shape[0]):
        i = order[a]
        spos[a, 0] = pos[i, 0]
        spos[a, 1] = pos[i, 1]
        spos[a, 2] = pos[i, 2]
        srad[a] = radius[i]
        scell[a] = cell_of[i]


@njit(**KERNEL_OPTIONS)
def transpose_pairs(nbr_j, particle_count):
    """Transpose of the half list: (rev_start (n+1,), rev_pair (P,)), entries in increasing p."""
    rev_start = np.zeros(particle_count + 1, np.int64)
    for p in range(nbr_j.shape[0]):
        rev_start[nbr_j[p] + 1] += 1
    for j in range(particle_count):
        rev_start[j + 1] += rev_start[j]
    fill = rev_start[:-1].copy()
    rev_pair = np.empty(nbr_j.shape[0], np.int64)
    for p in range(nbr_j.shape[0]):
        j = nbr_j[p]
        rev_pair[fill[j]] = p
        fill[j] += 1
    return rev_start, rev_pair


@njit(parallel=True, **KERNEL_OPTIONS)
def max_displacement_squared(pos, pos_ref):
    """Largest |x − x_ref|² over all slots [m²], computed as ``advance`` computes it (float32)."""
    out = 0.0
    for i in prange(pos.shape[0]):
        ddx = pos[i, 0] - pos_ref[i, 0]
        ddy = pos[i, 1] - pos_ref[i, 1]
        ddz = pos[i, 2] - pos_ref[i, 2]
        out = max(out, ddx * ddx + ddy * ddy + ddz * ddz)
    return out


@njit(parallel=True, **KERNEL_OPTIONS)
def contact_flags(pos, radius, active, nbr_start, nbr_j, flags):
    """flags[p] = 1 where list entry p touches (|x_i − x_j| ≤ r_i + r_j), else 0."""
    for i in prange(pos.shape[0]):
        for p in range(nbr_start[i], nbr_start[i + 1]):
            j = nbr_j[p]
            flags[p] = 0
            if active[i] == 0 or active[j] == 0:
                continue
            dx = np.float64(pos[i, 0]) - pos[j, 0]
            dy = np.float64(pos[i, 1]) - pos[j, 1]
            dz = np.float64(pos[i, 2]) - pos[j, 2]
            reach = np.float64(radius[i]) + radius[j]
            if dx * dx + dy * dy + dz * dz <= reach * reach:
                flags[p] = 1


@njit(parallel=True, **KERNEL_OPTIONS)
def remap_history(old_start, old_j, old_hist, new_start, new_j, new_hist, new_to_old):
    """Carry each pair's history (P, 6) from the old list to the rebuilt one.

    A pair may change rows between builds (the row is the particle whose cell came first); the
    tangential spring ξ (columns 0–2) is stored as seen from the row's particle, so it changes sign
    when the pair changes row; the rolling spring ξ_r (3–5) does not (ω_i − ω_j and n both flip, so
    v_r and ξ_r stay). The new list may number the particles differently (the reorder of
    ``cpu_neighbors``): ``new_to_old[s]`` is the old slot of the particle in new slot s.
    """
    for a in prange(new_start.shape[0] - 1):
        i = new_to_old[a]
        for p in range(new_start[a], new_start[a + 1]):
            j = new_to_old[new_j[p]]
            for c in range(6):
                new_hist[p, c] = 0.0
            found = False
            for q in range(old_start[i], old_start[i + 1]):
                if old_j[q] == j:
                    for c in range(6):
                        new_hist[p, c] = old_hist[q, c]
                    found = True
                    break
            if not found:
                for q in range(old_start[j], old_start[j + 1]):
                    if old_j[q] == i:
                        for c in range(3):
                            new_hist[p, c] = -old_hist[q, c]
                        for c in range(3, 6):
                            new_hist[p, c] = old_hist[q, c]
                        break
