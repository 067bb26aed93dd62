"""A bounding-volume hierarchy over a triangle mesh, with the per-node data of the fast winding number.

The tree is stored as flat arrays (numba-friendly): node ``k`` covers the triangles
``order[start[k]:start[k] + count[k]]``; ``left[k] == -1`` marks a leaf, otherwise its children are
``left[k]`` and ``left[k] + 1``. Children always have larger indices than their parent, so a reverse
sweep over the nodes is a post-order traversal.

For the fast winding number (Barill et al., "Fast Winding Numbers for Soups and Clouds", SIGGRAPH
2018) every node also stores the first-order (dipole) expansion of its triangles: the summed area
vector ``normal_sum`` (Σ ½ (b − a) × (c − a)), the area-weighted centroid ``center`` and the radius
``reach`` of the ball about ``center`` that holds all the node's vertices.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numba import njit

from ..kernel_options import KERNEL_OPTIONS

LEAF_SIZE = 8


@dataclass(frozen=True)
class MeshBvh:
    """A triangle mesh and its hierarchy, ready for ``engine.packing.queries``.

    Attributes:
        vertices: Vertex positions [m], float64, shape (vertex_count, 3).
        triangles: Vertex indices, int64, shape (triangle_count, 3).
        order: Triangle index of each leaf slot, int64, shape (triangle_count,).
        box_lo, box_hi: Node bounding boxes [m], float64, shape (node_count, 3).
        left: First child of each node or −1 for a leaf, int64, shape (node_count,).
        start, count: Range of each node in ``order``, int64, shape (node_count,).
        normal_sum: Summed area vector of each node [m²], float64, shape (node_count, 3).
        center: Area-weighted centroid of each node [m], float64, shape (node_count, 3).
        reach: Radius about ``center`` enclosing the node's vertices [m], float64, shape (node_count,).
    """

    vertices: np.ndarray
    triangles: np.ndarray
    order: np.ndarray
    box_lo: np.ndarray
    box_hi: np.ndarray
    left: np.ndarray
    start: np.ndarray
    count: np.ndarray
    normal_sum: np.ndarray
    center: np.ndarray
    reach: np.ndarray


def build_bvh(vertices: np.ndarray, triangles: np.ndarray) -> MeshBvh:
    """Build the hierarchy of a triangle soup (median split on the longest centroid axis).

    Args:
        vertices: Vertex positions [m], shape (vertex_count, 3).
        triangles: Vertex indices, shape (triangle_count, 3); degenerate triangles are allowed.
    """
    vertices = np.ascontiguousarray(vertices, dtype=np.float64)
    triangles = np.ascontiguousarray(triangles, dtype=np.int64)
    tri = vertices[triangles]
    order, box_lo, box_hi, left, start, count = _build_tree(tri.min(axis=1), tri.max(axis=1), tri.mean(axis=1),
                                                            LEAF_SIZE)
    normal_sum, center, reach = _node_moments(vertices, triangles, order, left, start, count)
    return MeshBvh(vertices, triangles, order, box_lo, box_hi, left, start, count, normal_sum, center, reach)


@njit(**KERNEL_OPTIONS)
def _build_tree(tri_lo, tri_hi, centroid, leaf_size):
    n = tri_lo.shape[0]
    capacity = max(1, 2 * n)
    order = np.arange(n)
    box_lo = np.empty((capacity, 3))
    box_hi = np.empty((capacity, 3))
    left = np.full(capacity, -1, np.int64)
    start = np.zeros(capacity, np.int64)
    count = np.zeros(capacity, np.int64)
    start[0] = 0
    count[0] = n
    node_count = 1
    stack = np.empty(128, np.int64)
    stack[0] = 0
    top = 1
    while top > 0:
        top -= 1
        node = stack[top]
        s = start[node]
        e = s + count[node]
        lo = np.full(3, np.inf)
        hi = np.full(3, -np.inf)
        clo = np.full(3, np.inf)
        chi = np.full(3, -np.inf)
        for slot in range(s, e):
            t = order[slot]
            for a in range(3):
                lo[a] = min(lo[a], tri_lo[t, a])
                hi[a] = max(hi[a], tri_hi[t, a])
                clo[a] = min(clo[a], centroid[t, a])
                chi[a] = max(chi[a], centroid[t, a])
        box_lo[node] = lo
        box_hi[node] = hi
        if e - s <= leaf_size or top + 2 > stack.shape[0]:
            continue
        axis = 0
        for a in range(1, 3):
            if chi[a] - clo[a] > chi[axis] - clo[axis]:
                axis = a
        # A stable sort keeps the tree (and every result built on it) independent of ties' order.
        keys = np.empty(e - s)
        for slot in range(s, e):
            keys[slot - s] = centroid[order[slot], axis]
        ranked = np.argsort(keys, kind="mergesort")
        order[s:e] = order[s:e][ranked]
        mid = s + (e - s) // 2
        child = node_count
        node_count += 2
        left[node] = child
        start[child] = s
        count[child] = mid - s
        start[child + 1] = mid
        count[child + 1] = e - mid
        stack[top] = child
        stack[top + 1] = child + 1
        top += 2
    return (order, box_lo[:node_count].copy(), box_hi[:node_count].copy(), left[:node_count].copy(),
            start[:node_count].copy(), count[:node_count].copy())


@njit(**KERNEL_OPTIONS)
def _node_moments(vertices, triangles, order, left, start, count):
    m = left.shape[0]
    normal_sum = np.zeros((m, 3))
    weighted = np.zeros((m, 3))
    area = np.zeros(m)
    plain = np.zeros((m, 3))
    for node in range(m - 1, -1, -1):
        if left[node] < 0:
            for slot in range(start[node], start[node] + count[node]):
                t = order[slot]
                a = vertices[triangles[t, 0]]
                b = vertices[triangles[t, 1]]
                c = vertices[triangles[t, 2]]
                u = b - a
                v = c - a
                nx = 0.5 * (u[1] * v[2] - u[2] * v[1])
                ny = 0.5 * (u[2] * v[0] - u[0] * v[2])
                nz = 0.5 * (u[0] * v[1] - u[1] * v[0])
                w = math.sqrt(nx * nx + ny * ny + nz * nz)
                normal_sum[node, 0] += nx
                normal_sum[node, 1] += ny
                normal_sum[node, 2] += nz
                for k in range(3):
                    centroid = (a[k] + b[k] + c[k]) / 3.0
                    weighted[node, k] += w * centroid
                    plain[node, k] += centroid
                area[node] += w
        else:
            for child in (left[node], left[node] + 1):
                area[node] += area[child]
                for k in range(3):
                    normal_sum[node, k] += normal_sum[child, k]
                    weighted[node, k] += weighted[child, k]
                    plain[node, k] += plain[child, k]
    center = np.empty((m, 3))
    reach = np.zeros(m)
    for node in range(m):
        for k in range(3):
            # Zero-area nodes (degenerate triangles only) fall back to the plain centroid.
            center[node, k] = weighted[node, k] / area[node] if area[node] > 0 else plain[node, k] / max(count[node], 1)
        best = 0.0
        for slot in range(start[node], start[node] + count[node]):
            t = order[slot]
            for corner in range(3):
                p = vertices[triangles[t, corner]]
                d = (p[0] - center[node, 0]) ** 2 + (p[1] - center[node, 1]) ** 2 + (p[2] - center[node, 2]) ** 2
                best = max(best, d)
        reach[node] = math.sqrt(best)
    return normal_sum, center, reach
