"""Triangle meshes for packing: loading files through trimesh, checking them, placing them in the world.

Placement order (the same for files and for arrays): world transform → rotation by Euler XYZ angles
about the bounding-box centre → uniform scale so the largest bounding-box edge equals ``fit`` →
translation so the bounding-box centre lands on ``center``.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import MochiError


@dataclass(frozen=True)
class MeshArrays:
    """A checked triangle mesh.

    Attributes:
        vertices: Vertex positions [m], float64, shape (vertex_count, 3).
        triangles: Vertex indices, int64, shape (triangle_count, 3).
        vertex_colors: Linear RGBA in 0..1, float32, shape (vertex_count, 4), or None.
        name: What to call the mesh in error messages (a file path or 'the mesh').
    """

    vertices: np.ndarray
    triangles: np.ndarray
    vertex_colors: np.ndarray | None
    name: str


def read_trimesh(path: str | os.PathLike, *, role: str = "mesh file",
                 why_faces: str = "so it encloses no volume to fill"):
    """A trimesh mesh read from ``path`` without processing (NaN vertices and degenerate faces are
    kept so the callers report them), every part of a scene merged into one mesh.

    Args:
        role: How errors name the file ("mesh file", "collider mesh file").
        why_faces: End of the sentence when the file has no faces.

    Raises:
        MochiError: the file is missing, unreadable, or holds no triangles.
    """
    import trimesh  # heavy import kept out of ``import engine``

    path = Path(path)
    if not path.is_file():
        raise MochiError(f"The {role} '{path}' does not exist.")
    try:
        mesh = trimesh.load(str(path), force="mesh", process=False)
    except Exception as exc:  # trimesh raises many types for malformed or unknown files
        raise MochiError(f"Cannot read the {role} '{path}' ({type(exc).__name__}: {exc}).") from None
    faces = getattr(mesh, "faces", None)
    if faces is None or len(faces) == 0:
        raise MochiError(f"The {role} '{path}' has no faces, {why_faces}.")
    return mesh


def load_mesh_file(path: str | os.PathLike) -> MeshArrays:
    """Read an OBJ/PLY/STL/... file with trimesh (every part of a scene merged into one mesh).

    Raises:
        MochiError: the file is missing, unreadable, or holds no triangles.
    """
    mesh = read_trimesh(path)
    colors = None
    visual = getattr(mesh, "visual", None)
    if visual is not None and getattr(visual, "kind", None) == "vertex":
        colors = np.asarray(visual.vertex_colors, dtype=np.float32)[:, :4] / 255.0
    return check_mesh(mesh.vertices, mesh.faces, vertex_colors=colors, name=f"The mesh file '{path}'")


def check_triangle_arrays(vertices, triangles, name: str, why_faces: str) -> tuple[np.ndarray, np.ndarray]:
    """Contiguous float64 (V, 3) vertices and int64 (T, 3) triangles, checked.

    Args:
        name: Subject of the error sentences ("The mesh", "The collider 'x'").
        why_faces: End of the sentence when there are no faces.

    Raises:
        MochiError: no faces, bad shapes, indices out of range, or NaN/infinite vertices.
    """
    vertices = np.ascontiguousarray(vertices, dtype=np.float64)
    triangles = np.asarray(triangles)
    if triangles.size == 0:
        raise MochiError(f"{name} has no faces, {why_faces}.")
    if vertices.ndim != 2 or vertices.shape[1] != 3 or triangles.ndim != 2 or triangles.shape[1] != 3:
        raise MochiError(f"{name} must have vertices of shape (n, 3) and triangles of shape (m, 3), "
                         f"not {vertices.shape} and {triangles.shape}.")
    triangles = np.ascontiguousarray(triangles, dtype=np.int64)
    if triangles.min() < 0 or triangles.max() >= len(vertices):
        raise MochiError(f"{name} has a triangle index outside 0..{len(vertices) - 1}.")
    bad = ~np.isfinite(vertices).all(axis=1)
    if bad.any():
        raise MochiError(f"{name} has a NaN or infinite coordinate at vertex {int(np.flatnonzero(bad)[0])}.")
    return vertices, triangles


def check_mesh(vertices, triangles, *, vertex_colors=None, name: str = "The mesh") -> MeshArrays:
    """Validate and convert triangle arrays.

    Args:
        vertices: Vertex positions [m], shape (vertex_count, 3).
        triangles: Vertex indices, shape (triangle_count, 3).
        vertex_colors: Optional RGB or RGBA per vertex in 0..1, shape (vertex_count, 3 or 4).
        name: Subject of the error sentences.

    Raises:
        MochiError: no faces, bad shapes, indices out of range, or NaN/infinite vertices.
    """
    vertices, triangles = check_triangle_arrays(vertices, triangles, name, "so it encloses no volume to fill")
    colors = None
    if vertex_colors is not None:
        colors = np.asarray(vertex_colors, dtype=np.float32)
        if colors.shape[0] != len(vertices) or colors.shape[1] not in (3, 4):
            raise MochiError(f"{name} has {colors.shape[0]} vertex colours for {len(vertices)} vertices.")
        if colors.shape[1] == 3:
            colors = np.concatenate([colors, np.ones((len(colors), 1), np.float32)], axis=1)
    return MeshArrays(vertices, triangles, colors, name)


def euler_xyz_matrix(rotation_deg) -> np.ndarray:
    """Rotation matrix of Euler angles in degrees, applied about X, then Y, then Z (Blender's 'XYZ').

    Returns:
        float64 shape (3, 3), acting on column vectors: R = Rz @ Ry @ Rx.
    """
    rx, ry, rz = (math.radians(float(a)) for a in rotation_deg)
    cx, sx, cy, sy, cz, sz = math.cos(rx), math.sin(rx), math.cos(ry), math.sin(ry), math.cos(rz), math.sin(rz)
    mx = np.array([[1, 0, 0], [0, cx, -sx], [0, sx, cx]])
    my = np.array([[cy, 0, sy], [0, 1, 0], [-sy, 0, cy]])
    mz = np.array([[cz, -sz, 0], [sz, cz, 0], [0, 0, 1]])
    return mz @ my @ mx


def place_vertices(vertices: np.ndarray, *, transform=None, rotation_deg=(0.0, 0.0, 0.0), fit: float | None = None,
                   center=None, name: str = "The mesh") -> np.ndarray:
    """Apply the placement chain of this module's docstring.

    Args:
        vertices: Vertex positions, shape (vertex_count, 3).
        transform: Optional 4×4 world matrix (column-vector convention, translation in the last column).
        rotation_deg: Euler XYZ angles [degrees].
        fit: Largest bounding-box edge after scaling [m], or None to keep the size.
        center: Bounding-box centre after placement [m], or None to keep it.
        name: Subject of the error sentences.

    Returns:
        float64 shape (vertex_count, 3).

    Raises:
        MochiError: a malformed transform, a non-positive fit, or a mesh of zero size with ``fit``.
    """
    out = np.array(vertices, dtype=np.float64)
    if transform is not None:
        matrix = np.asarray(transform, dtype=np.float64)
        if matrix.shape != (4, 4) or not np.isfinite(matrix).all():
            raise MochiError(f"{name}: the world transform must be a finite 4×4 matrix, not shape {matrix.shape}.")
        out = out @ matrix[:3, :3].T + matrix[:3, 3]
    if any(float(a) != 0.0 for a in rotation_deg):
        pivot = 0.5 * (out.min(axis=0) + out.max(axis=0))
        out = (out - pivot) @ euler_xyz_matrix(rotation_deg).T + pivot
    if fit is not None:
        if not (math.isfinite(fit) and fit > 0):
            raise MochiError(f"{name}: fit must be a positive size in metres, not {fit!r}.")
        size = float((out.max(axis=0) - out.min(axis=0)).max())
        if size <= 0.0:
            raise MochiError(f"{name} has zero size, so it cannot be scaled to fit {fit} m.")
        pivot = 0.5 * (out.min(axis=0) + out.max(axis=0))
        out = (out - pivot) * (fit / size) + pivot
    if center is not None:
        pivot = 0.5 * (out.min(axis=0) + out.max(axis=0))
        out = out + (np.asarray(center, dtype=np.float64) - pivot)
    return out
