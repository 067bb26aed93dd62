"""Consistent triangle orientation for meshes whose faces were flipped one by one.

The generalized winding number tolerates holes and self-intersections but not a mix of orientations:
two neighbours facing opposite ways cancel each other's solid angle. So faces are re-oriented by a
breadth-first walk over manifold edges (edges shared by exactly two faces), each face taking the
orientation that makes the shared edge run opposite ways, and each connected piece is then turned so
its signed volume is positive (outward normals).
"""

from __future__ import annotations

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import breadth_first_order, connected_components


def orient_consistently(vertices: np.ndarray, triangles: np.ndarray) -> np.ndarray:
    """Triangles with orientations made consistent across manifold edges and outward per piece.

    Args:
        vertices: Vertex positions [m], shape (vertex_count, 3).
        triangles: Vertex indices, int64 shape (triangle_count, 3).

    Returns:
        int64 shape (triangle_count, 3): the same faces, some with two corners swapped.
    """
    n = len(triangles)
    heads = triangles.ravel()
    tails = triangles[:, [1, 2, 0]].ravel()
    face = np.repeat(np.arange(n), 3)
    forward = heads < tails
    key = np.minimum(heads, tails) * (int(triangles.max()) + 1) + np.maximum(heads, tails)
    order = np.argsort(key, kind="stable")
    key = key[order]
    # Manifold edges: a key that occurs exactly twice.
    pair = key[:-1] == key[1:]
    alone_before = np.r_[True, key[1:-1] != key[:-2]]
    alone_after = np.r_[key[2:] != key[1:-1], True]
    first = np.flatnonzero(pair & alone_before & alone_after)
    a = order[first]
    b = order[first + 1]
    same_direction = (forward[a] == forward[b]).astype(np.int8)
    fa, fb = face[a], face[b]
    graph = coo_matrix((np.ones(len(fa)), (fa, fb)), shape=(n, n)).tocsr()
    graph = graph + graph.T
    flip_edge = {}
    for u, v, s in zip(fa.tolist(), fb.tolist(), same_direction.tolist()):
        flip_edge[(u, v)] = flip_edge[(v, u)] = s
    flip = np.zeros(n, np.int8)
    seen = np.zeros(n, bool)
    piece_count, piece = connected_components(graph, directed=False)
    for root in range(n):
        if seen[root]:
            continue
        visit, parent = breadth_first_order(graph, root, directed=False, return_predecessors=True)
        seen[visit] = True
        for f in visit[1:]:
            flip[f] = flip[parent[f]] ^ flip_edge[(int(parent[f]), int(f))]
    out = triangles.copy()
    out[flip == 1] = out[flip == 1][:, [0, 2, 1]]
    # Outward per piece: the signed volume of a consistently oriented closed piece is positive.
    p0, p1, p2 = (vertices[out[:, k]] for k in range(3))
    signed = np.einsum("ij,ij->i", p0, np.cross(p1, p2))
    volume = np.zeros(piece_count)
    np.add.at(volume, piece, signed)
    inward = volume[piece] < 0
    out[inward] = out[inward][:, [0, 2, 1]]
    return out
