"""Inside/outside classification of lattice sites with as few winding-number evaluations as possible.

When a mesh has no boundary (every oriented edge is cancelled by an opposite one: closed, possibly
non-manifold or self-intersecting, possibly flipped), its winding number is an integer that stays
constant on every connected region that does not touch the surface. Two neighbouring sites p, q lie in
the same region when the segment between them is inside a surface-free ball, i.e. when
max(d(p), d(q)) > |p − q| with d the distance to the surface. Sites are joined along such safe edges
(union-find over the lattice's three forward neighbours) and the winding number is evaluated once per
group, at its site farthest from the surface. On a mesh with a boundary the winding number varies
smoothly instead, so every site gets its own (fast, hierarchical) evaluation.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .bvh import KERNEL_OPTIONS, MeshBvh
from .progress import PackProgress, begin_stage, run_chunked
from .queries import winding_numbers


def mesh_has_boundary(triangles: np.ndarray) -> bool:
    """True when some oriented edge is not cancelled by the same edge traversed the other way.

    A consistently flipped closed mesh has no boundary; an open cube or a mesh with a few faces
    flipped does.

    Args:
        triangles: Vertex indices, shape (triangle_count, 3).
    """
    triangles = np.asarray(triangles, dtype=np.int64)
    heads = triangles.ravel()
    tails = triangles[:, [1, 2, 0]].ravel()
    keep = heads != tails
    heads = heads[keep]
    tails = tails[keep]
    lo = np.minimum(heads, tails)
    hi = np.maximum(heads, tails)
    sign = np.where(heads < tails, 1, -1)
    key = lo * (int(hi.max(initial=0)) + 1) + hi
    unique, inverse = np.unique(key, return_inverse=True)
    total = np.zeros(unique.size, dtype=np.int64)
    np.add.at(total, inverse, sign)
    return bool(np.any(total != 0))


def classify_sites(bvh: MeshBvh, positions: np.ndarray, flat_ids: np.ndarray, dims, distances: np.ndarray,
                   *, closed: bool, progress: PackProgress | None = None) -> np.ndarray:
    """Winding number of each candidate site, float64 shape (candidate_count,).

    Args:
        bvh: The mesh and its hierarchy.
        positions: Candidate centres [m], shape (candidate_count, 3).
        flat_ids: Flat lattice index of each candidate, increasing, shape (candidate_count,).
        dims: Lattice index extent (ni, nj, nk).
        distances: Distance of each candidate to the surface [m] (clamped at a cap of at least the
            largest neighbour distance), shape (candidate_count,).
        closed: The mesh has no boundary (see ``mesh_has_boundary``); groups share one evaluation.
        progress: Runs the loops in chunks, recording progress and honouring a cancel between them.
    """
    if positions.shape[0] == 0:
        return np.zeros(0)
    if not closed:
        begin_stage(progress, "testing which sites are inside")
        return winding_numbers(bvh, positions, progress=progress)
    group, representatives = safe_groups(np.asarray(flat_ids, np.int64), np.asarray(dims, np.int64),
                                         np.ascontiguousarray(positions, np.float64),
                                         np.ascontiguousarray(distances, np.float64), progress=progress)
    begin_stage(progress, "testing which sites are inside")
    return winding_numbers(bvh, positions[representatives], progress=progress)[group]


def safe_groups(flat_ids: np.ndarray, dims: np.ndarray, positions: np.ndarray, distances: np.ndarray, *,
                progress: PackProgress | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Group label per candidate (0..group_count−1), int64 shape (candidate_count,), and each group's
    representative candidate (its site farthest from the surface), int64 shape (group_count,).

    Sites are joined in increasing order, then labelled in increasing order, as one pass each would;
    ``progress`` only splits the passes into chunks (same unions in the same order, same labels).
    """
    n = flat_ids.shape[0]
    parent = np.arange(n)
    begin_stage(progress, "grouping the sites")
    run_chunked(n, lambda begin, end: _join_safe_neighbours(flat_ids, dims, positions, distances, parent, begin, end),
                progress)
    label = np.full(n, -1, np.int64)
    best = np.empty(n, np.int64)
    group = np.empty(n, np.int64)
    group_count = np.zeros(1, np.int64)
    begin_stage(progress, "labelling the groups")
    run_chunked(n, lambda begin, end: _label_groups(parent, distances, label, best, group, group_count, begin, end),
                progress)
    return group, best[:group_count[0]].copy()


@njit(**KERNEL_OPTIONS)
def _find(parent, a):
    while parent[a] != a:
        parent[a] = parent[parent[a]]
        a = parent[a]
    return a


@njit(**KERNEL_OPTIONS)
def _join_safe_neighbours(flat_ids, dims, positions, distances, parent, begin, end):
    """Union the candidates ``begin..end`` with their forward lattice neighbours along safe edges."""
    n = flat_ids.shape[0]
    for a in range(begin, end):
        f = flat_ids[a]
        k = f % dims[2]
        j = (f // dims[2]) % dims[1]
        i = f // (dims[1] * dims[2])
        for step in range(3):
            if step == 0:
                if i + 1 >= dims[0]:
                    continue
                g = f + dims[1] * dims[2]
            elif step == 1:
                if j + 1 >= dims[1]:
                    continue
                g = f + dims[2]
            else:
                if k + 1 >= dims[2]:
                    continue
                g = f + 1
            # flat_ids is sorted: a binary search instead of a lattice-sized lookup table.
            b = np.searchsorted(flat_ids, g)
            if b >= n or flat_ids[b] != g:
                continue
            dx = positions[a, 0] - positions[b, 0]
            dy = positions[a, 1] - positions[b, 1]
            dz = positions[a, 2] - positions[b, 2]
            if max(distances[a], distances[b]) ** 2 > dx * dx + dy * dy + dz * dz:
                ra = _find(parent, a)
                rb = _find(parent, b)
                # Smaller index wins, so the grouping does not depend on the order of unions.
                if ra < rb:
                    parent[rb] = ra
                elif rb < ra:
                    parent[ra] = rb


@njit(**KERNEL_OPTIONS)
def _label_groups(parent, distances, label, best, group, group_count, begin, end):
    """Label the candidates ``begin..end`` by their root (new roots numbered in order of first sight, counted
    in ``group_count[0]``) and keep each group's candidate farthest from the surface in ``best``."""
    for a in range(begin, end):
        root = _find(parent, a)
        if label[root] < 0:
            label[root] = group_count[0]
            best[group_count[0]] = a
            group_count[0] += 1
        g = label[root]
        group[a] = g
        if distances[a] > distances[best[g]]:
            best[g] = a
