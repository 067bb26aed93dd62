"""Point queries against a ``MeshBvh``: generalized winding number and distance to the surface.

The generalized winding number (Jacobson et al., "Robust Inside-Outside Segmentation using
Generalized Winding Numbers", SIGGRAPH 2013) is the sum of the signed solid angles of the triangles
seen from a point, over 4π: 1 inside a closed outward-facing mesh, 0 outside, −1 inside a flipped one,
and a smooth value in between for open, non-manifold or self-intersecting meshes, thresholded at ½.
It is evaluated hierarchically (Barill et al. 2018): a node whose triangles all lie farther than
``WINDING_BETA`` times their reach is replaced by its dipole, so a query costs O(log n) triangles.

Each kernel runs in parallel over points, every point independently, so results do not depend on the
thread count.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from .bvh import KERNEL_OPTIONS, MeshBvh
from .progress import PackProgress, run_chunked

# Barill et al. use 2 with a second-order expansion; with the first-order one a larger ratio keeps the
# error well under the 0.5 threshold near the surface (checked against brute force in the tests).
WINDING_BETA = 3.0
STACK_DEPTH = 128


def winding_numbers(bvh: MeshBvh, points: np.ndarray, *, progress: PackProgress | None = None) -> np.ndarray:
    """Generalized winding number of every point, float64 shape (point_count,).

    Args:
        bvh: The mesh and its hierarchy.
        points: Query points [m], shape (point_count, 3).
        progress: Runs the points in chunks, recording progress and honouring a cancel between them.
    """
    points = np.ascontiguousarray(points, dtype=np.float64).reshape(-1, 3)
    out = np.empty(points.shape[0])

    def run(begin: int, end: int) -> None:
        out[begin:end] = _winding_kernel(points[begin:end], bvh.vertices, bvh.triangles, bvh.order, bvh.left,
                                         bvh.start, bvh.count, bvh.normal_sum, bvh.center, bvh.reach, WINDING_BETA)

    run_chunked(points.shape[0], run, progress)
    return out


def winding_numbers_exact(bvh: MeshBvh, points: np.ndarray) -> np.ndarray:
    """Brute-force winding numbers (every triangle for every point): the oracle of the tests."""
    points = np.ascontiguousarray(points, dtype=np.float64).reshape(-1, 3)
    return _winding_brute_kernel(points, bvh.vertices, bvh.triangles)


def surface_distances(bvh: MeshBvh, points: np.ndarray, cap: float, *,
                      progress: PackProgress | None = None) -> np.ndarray:
    """Unsigned distance from every point to the nearest triangle, clamped to ``cap`` [m].

    Clamping lets the search skip every node farther than ``cap``, which is what makes the 'is this
    sphere of radius r clear of the surface' test cheap deep inside a mesh.

    Args:
        bvh: The mesh and its hierarchy.
        points: Query points [m], shape (point_count, 3).
        cap: Largest distance of interest [m]; farther points get exactly ``cap``.
        progress: Runs the points in chunks, recording progress and honouring a cancel between them.

    Returns:
        float64 shape (point_count,).
    """
    points = np.ascontiguousarray(points, dtype=np.float64).reshape(-1, 3)
    out = np.empty(points.shape[0])

    def run(begin: int, end: int) -> None:
        out[begin:end] = _distance_kernel(points[begin:end], bvh.vertices, bvh.triangles, bvh.order, bvh.box_lo,
                                          bvh.box_hi, bvh.left, bvh.start, bvh.count, float(cap))

    run_chunked(points.shape[0], run, progress)
    return out


@njit(**KERNEL_OPTIONS)
def _solid_angle(px, py, pz, vertices, tri):
    """Signed solid angle of one triangle seen from p (Van Oosterom & Strackee 1983) [sr]."""
    ax = vertices[tri[0], 0] - px
    ay = vertices[tri[0], 1] - py
    az = vertices[tri[0], 2] - pz
    bx = vertices[tri[1], 0] - px
    by = vertices[tri[1], 1] - py
    bz = vertices[tri[1], 2] - pz
    cx = vertices[tri[2], 0] - px
    cy = vertices[tri[2], 1] - py
    cz = vertices[tri[2], 2] - pz
    la = math.sqrt(ax * ax + ay * ay + az * az)
    lb = math.sqrt(bx * bx + by * by + bz * bz)
    lc = math.sqrt(cx * cx + cy * cy + cz * cz)
    det = ax * (by * cz - bz * cy) - ay * (bx * cz - bz * cx) + az * (bx * cy - by * cx)
    div = la * lb * lc + (ax * bx + ay * by + az * bz) * lc + (ax * cx + ay * cy + az * cz) * lb \
        + (bx * cx + by * cy + bz * cz) * la
    return 2.0 * math.atan2(det, div)


@njit(parallel=True, **KERNEL_OPTIONS)
def _winding_brute_kernel(points, vertices, triangles):
    out = np.empty(points.shape[0])
    for i in prange(points.shape[0]):
        total = 0.0
        for t in range(triangles.shape[0]):
            total += _solid_angle(points[i, 0], points[i, 1], points[i, 2], vertices, triangles[t])
        out[i] = total / (4.0 * math.pi)
    return out


@njit(parallel=True, **KERNEL_OPTIONS)
def _winding_kernel(points, vertices, triangles, order, left, start, count, normal_sum, center, reach, beta):
    out = np.empty(points.shape[0])
    for i in prange(points.shape[0]):
        px = points[i, 0]
        py = points[i, 1]
        pz = points[i, 2]
        stack = np.empty(STACK_DEPTH, np.int64)
        stack[0] = 0
        top = 1
        total = 0.0
        while top > 0:
            top -= 1
            node = stack[top]
            dx = center[node, 0] - px
            dy = center[node, 1] - py
            dz = center[node, 2] - pz
            d2 = dx * dx + dy * dy + dz * dz
            if d2 > (beta * reach[node]) ** 2:
                # Dipole term: the node's area vector seen from p as one small patch at its centroid.
                total += (dx * normal_sum[node, 0] + dy * normal_sum[node, 1] + dz * normal_sum[node, 2]) \
                    / (d2 * math.sqrt(d2))
            elif left[node] < 0:
                for slot in range(start[node], start[node] + count[node]):
                    total += _solid_angle(px, py, pz, vertices, triangles[order[slot]])
            else:
                stack[top] = left[node]
                stack[top + 1] = left[node] + 1
                top += 2
        out[i] = total / (4.0 * math.pi)
    return out


@njit(**KERNEL_OPTIONS)
def triangle_edges(vertices, tri):
    """Corner a of a triangle and its edges b − a and c − a [m], as nine scalars."""
    ax = vertices[tri[0], 0]
    ay = vertices[tri[0], 1]
    az = vertices[tri[0], 2]
    return (ax, ay, az, vertices[tri[1], 0] - ax, vertices[tri[1], 1] - ay, vertices[tri[1], 2] - az,
            vertices[tri[2], 0] - ax, vertices[tri[2], 1] - ay, vertices[tri[2], 2] - az)


@njit(**KERNEL_OPTIONS)
def closest_on_triangle(px, py, pz, vertices, tri):
    """Closest point q of a triangle to p and its barycentric weights (Ericson, RTCD §5.1.5).

    Returns:
        (|p − q|² [m²], qx, qy, qz, weight of corner 0, 1, 2).
    """
    ax, ay, az, abx, aby, abz, acx, acy, acz = triangle_edges(vertices, tri)
    apx = px - ax
    apy = py - ay
    apz = pz - az
    d1 = abx * apx + aby * apy + abz * apz
    d2 = acx * apx + acy * apy + acz * apz
    v = 0.0
    w = 0.0
    if d1 <= 0.0 and d2 <= 0.0:
        pass  # corner 0
    else:
        bpx = apx - abx
        bpy = apy - aby
        bpz = apz - abz
        d3 = abx * bpx + aby * bpy + abz * bpz
        d4 = acx * bpx + acy * bpy + acz * bpz
        cpx = apx - acx
        cpy = apy - acy
        cpz = apz - acz
        d5 = abx * cpx + aby * cpy + abz * cpz
        d6 = acx * cpx + acy * cpy + acz * cpz
        vc = d1 * d4 - d3 * d2
        vb = d5 * d2 - d1 * d6
        va = d3 * d6 - d5 * d4
        if d3 >= 0.0 and d4 <= d3:
            v = 1.0
        elif d6 >= 0.0 and d5 <= d6:
            w = 1.0
        # Each edge region needs its edge to have a length (d1 − d3 = |ab|², d2 − d6 = |ac|²,
        # (d4 − d3) + (d5 − d6) = |bc|²): with two corners at one point (a collapsed or welded
        # triangle) the other edges give the answer, where 0/0 would have given NaN.
        elif vc <= 0.0 and d1 >= 0.0 and d3 <= 0.0 and d1 - d3 > 0.0:
            v = d1 / (d1 - d3)
        elif vb <= 0.0 and d2 >= 0.0 and d6 <= 0.0 and d2 - d6 > 0.0:
            w = d2 / (d2 - d6)
        elif va <= 0.0 and (d4 - d3) >= 0.0 and (d5 - d6) >= 0.0 and (d4 - d3) + (d5 - d6) > 0.0:
            w = (d4 - d3) / ((d4 - d3) + (d5 - d6))
            v = 1.0 - w
        else:
            denom = va + vb + vc
            if denom > 0.0:
                v = vb / denom
                w = vc / denom
            else:
                # Degenerate (zero-area) triangle: the nearest of its corners.
                best = apx * apx + apy * apy + apz * apz
                db = bpx * bpx + bpy * bpy + bpz * bpz
                dc = cpx * cpx + cpy * cpy + cpz * cpz
                if db < best:
                    best = db
                    v = 1.0
                if dc < best:
                    v = 0.0
                    w = 1.0
    qx = ax + abx * v + acx * w
    qy = ay + aby * v + acy * w
    qz = az + abz * v + acz * w
    return (px - qx) ** 2 + (py - qy) ** 2 + (pz - qz) ** 2, qx, qy, qz, 1.0 - v - w, v, w


@njit(**KERNEL_OPTIONS)
def _triangle_distance_squared(px, py, pz, vertices, tri):
    """Squared distance from p to a triangle [m²]."""
    return closest_on_triangle(px, py, pz, vertices, tri)[0]


@njit(**KERNEL_OPTIONS)
def _box_distance_squared(px, py, pz, lo, hi):
    dx = max(lo[0] - px, 0.0, px - hi[0])
    dy = max(lo[1] - py, 0.0, py - hi[1])
    dz = max(lo[2] - pz, 0.0, pz - hi[2])
    return dx * dx + dy * dy + dz * dz


@njit(parallel=True, **KERNEL_OPTIONS)
def _distance_kernel(points, vertices, triangles, order, box_lo, box_hi, left, start, count, cap):
    out = np.empty(points.shape[0])
    for i in prange(points.shape[0]):
        px = points[i, 0]
        py = points[i, 1]
        pz = points[i, 2]
        best = cap * cap
        stack = np.empty(STACK_DEPTH, np.int64)
        stack[0] = 0
        top = 1
        while top > 0:
            top -= 1
            node = stack[top]
            if _box_distance_squared(px, py, pz, box_lo[node], box_hi[node]) >= best:
                continue
            if left[node] < 0:
                for slot in range(start[node], start[node] + count[node]):
                    best = min(best, _triangle_distance_squared(px, py, pz, vertices, triangles[order[slot]]))
            else:
                a = left[node]
                b = a + 1
                # Visit the nearer child first (pushed last) so 'best' shrinks early.
                if _box_distance_squared(px, py, pz, box_lo[a], box_hi[a]) \
                        < _box_distance_squared(px, py, pz, box_lo[b], box_hi[b]):
                    a, b = b, a
                stack[top] = a
                stack[top + 1] = b
                top += 2
        out[i] = math.sqrt(best)
    return out
