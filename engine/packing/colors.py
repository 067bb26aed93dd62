"""Per-particle colours taken from a mesh's vertex colours."""

from __future__ import annotations

import numpy as np
from scipy.spatial import cKDTree

from .progress import PackProgress, run_chunked


def colors_from_vertices(positions: np.ndarray, vertices: np.ndarray, vertex_colors: np.ndarray, *,
                         progress: PackProgress | None = None) -> np.ndarray:
    """Colour of the nearest mesh vertex for every particle.

    Nearest-vertex lookup is enough here: particles only sample the colour near the surface they came
    from, and it never blends colours that the artist did not paint.

    Args:
        positions: Particle centres [m], shape (particle_count, 3).
        vertices: Mesh vertex positions [m], shape (vertex_count, 3), in the same frame.
        vertex_colors: RGBA in 0..1, shape (vertex_count, 4).
        progress: Runs the particles in chunks, recording progress and honouring a cancel between them.

    Returns:
        float32 shape (particle_count, 4).
    """
    tree = cKDTree(vertices)
    nearest = np.empty(len(positions), np.int64)

    def run(begin: int, end: int) -> None:
        nearest[begin:end] = tree.query(positions[begin:end], k=1, workers=-1)[1]

    run_chunked(len(positions), run, progress)
    return np.asarray(vertex_colors, dtype=np.float32)[nearest]
