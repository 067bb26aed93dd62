"""Per-particle colours taken from a mesh's vertex colours."""

from __future__ import annotations

import numpy as np
from scipy.spatial import cKDTree


def colors_from_vertices(positions: np.ndarray, vertices: np.ndarray, vertex_colors: np.ndarray) -> np.ndarray:
    """Colour of the nearest mesh vertex for every particle.

    Nearest-vertex lookup is enough here: particles only sample the colour near the surface they came
    from, and it never blends colours that the artist did not paint.

    Args:
        positions: Particle centres [m], shape (particle_count, 3).
        vertices: Mesh vertex positions [m], shape (vertex_count, 3), in the same frame.
        vertex_colors: RGBA in 0..1, shape (vertex_count, 4).

    Returns:
        float32 shape (particle_count, 4).
    """
    _, nearest = cKDTree(vertices).query(positions, k=1, workers=-1)
    return np.asarray(vertex_colors, dtype=np.float32)[nearest]
