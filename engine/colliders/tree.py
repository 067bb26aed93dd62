"""A collider's triangle BVH in world space, kept current as its vertices move.

Built with ``engine.packing.bvh.build_bvh``; for a moving collider refit every step (boxes recomputed
from the new vertices, same topology) and rebuilt when the refit tree's cost (summed node surface
area) exceeds ``REBUILD_COST_RATIO`` times its cost when it was built. A median-split tree's node
layout depends only on the triangle count, so the triangle ``order`` and that reference cost are the
whole tree state: they go into the resume history, which makes a resumed bake refit exactly the tree
an uninterrupted one would have.
"""

from __future__ import annotations

import numpy as np

from ..packing.bvh import build_bvh
from . import kernels as k

#: Rebuild once refitting has made the tree this much costlier than when it was built.
REBUILD_COST_RATIO = 1.5


class ColliderTree:
    """Flat BVH arrays (layout of ``engine.packing.bvh``) over a collider's current vertices.

    Attributes:
        order, left, start, count: Topology, int64.
        box_lo, box_hi: Node boxes [m], float64 (node_count, 3).
        built_cost: Cost at the last build [m²].
        rebuilds: Builds so far (including the first).
    """

    def __init__(self, vertices: np.ndarray, triangles: np.ndarray):
        self.triangles = triangles
        self.rebuilds = 0
        self.build(vertices)

    def build(self, vertices: np.ndarray) -> None:
        bvh = build_bvh(vertices, self.triangles)
        self.order, self.left, self.start, self.count = bvh.order, bvh.left, bvh.start, bvh.count
        self.box_lo, self.box_hi = bvh.box_lo.copy(), bvh.box_hi.copy()
        self.built_cost = float(k.tree_cost(self.box_lo, self.box_hi))
        self.rebuilds += 1

    def update(self, vertices: np.ndarray) -> None:
        """Refit to moved vertices, rebuilding when the refit tree has become too costly."""
        cost = k.refit(vertices, self.triangles, self.order, self.left, self.start, self.count, self.box_lo,
                       self.box_hi)
        if cost > REBUILD_COST_RATIO * self.built_cost:
            self.build(vertices)

    def restore(self, order: np.ndarray, built_cost: float, vertices: np.ndarray) -> None:
        """Adopt a saved topology (``order``) and reference cost, refit to ``vertices``."""
        if order.shape != self.order.shape:
            raise ValueError("saved tree does not match the collider")
        self.order = np.ascontiguousarray(order, np.int64)
        self.built_cost = float(built_cost)
        k.refit(vertices, self.triangles, self.order, self.left, self.start, self.count, self.box_lo, self.box_hi)

    def arrays(self) -> tuple:
        """The tree arrays in the order the kernels take them."""
        return self.order, self.box_lo, self.box_hi, self.left, self.start, self.count
