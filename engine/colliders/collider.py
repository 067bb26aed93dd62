"""A collider: a triangle mesh with a thickness, a surface material and a motion.

Meshes need not be closed: the surface is a shell of ``thickness`` that grains touch from either side
(a grain of radius r touches it when its centre is closer than r + thickness/2 to a triangle), so a
bowl, a single plane or a paddle works as well as a closed box.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from ..errors import MochiError
from ..packing.mesh import check_triangle_arrays, read_trimesh
from ..settings_schema import COLLIDER, settings_dataclass, settings_for
from .motion import DeformMotion, RigidMotionAnalytic, RigidMotionKeyframes

Motion = RigidMotionAnalytic | RigidMotionKeyframes | DeformMotion | None


@dataclass(frozen=True, eq=False)
class _Collider:
    """One triangle-mesh collider.

    Attributes:
        name: Label used in messages (a file path, a Blender object name).
        vertices: Vertex positions [m], float64 (vertex_count, 3): world positions for a static or
            deforming collider (for a deforming one, those of its first key), body-frame positions for a
            rigid one.
        triangles: Vertex indices, int64 (triangle_count, 3).
        motion: None (static), ``RigidMotionAnalytic``, ``RigidMotionKeyframes`` or ``DeformMotion``.

    The surface (thickness [m], grains keeping their centres r + thickness/2 from it; restitution,
    friction and rolling resistance averaged with the grain material's as the walls' are; cohesion [Pa],
    the smaller of it and the grain's) are engine.settings_schema's collider settings.
    """

    name: str
    vertices: np.ndarray
    triangles: np.ndarray
    motion: Motion = None

    def __post_init__(self):
        vertices, triangles = check_collider_mesh(self.vertices, self.triangles, self.name)
        object.__setattr__(self, "vertices", vertices)
        object.__setattr__(self, "triangles", triangles)
        for setting in settings_for(COLLIDER):
            value = getattr(self, setting.key)
            if not setting.allows(value):
                raise MochiError(f"The collider '{self.name}' {setting.key} must be a number {setting.bounds_text()}, "
                                 f"not {value!r}.")
        if isinstance(self.motion, DeformMotion) and self.motion.vertices.shape[1] != vertices.shape[0]:
            raise MochiError(f"The deforming collider '{self.name}' has {self.motion.vertices.shape[1]} vertices per "
                             f"key but its mesh has {vertices.shape[0]}.")

    @property
    def kind(self) -> str:
        """'static', 'rigid_analytic', 'rigid_keyframes' or 'deforming'."""
        return "static" if self.motion is None else self.motion.kind

    @property
    def moving(self) -> bool:
        return self.motion is not None

    def vertices_at(self, time: float) -> tuple[np.ndarray, np.ndarray]:
        """World vertex positions [m] and velocities [m/s] at ``time`` [s], float64 (vertex_count, 3) each."""
        if self.motion is None:
            return self.vertices, np.zeros_like(self.vertices)
        if isinstance(self.motion, DeformMotion):
            return self.motion.vertices_at(time)
        return self.motion.pose_at(time).apply(self.vertices)

    def key_times(self) -> np.ndarray:
        """Times [s] at which the motion is sampled or piecewise changes (empty for analytic motion)."""
        if isinstance(self.motion, (RigidMotionKeyframes, DeformMotion)):
            return self.motion.times
        return np.zeros(0)

    def max_surface_speed(self) -> float:
        """An upper bound of how fast any point of the surface moves [m/s] (for choosing dt)."""
        if self.motion is None:
            return 0.0
        if isinstance(self.motion, RigidMotionAnalytic):
            m = self.motion
            lever = self.vertices @ m.rotation0.T + m.translation0 - m.pivot
            return float(np.linalg.norm(m.velocity) + np.linalg.norm(m.angular_velocity)
                         * np.sqrt((lever ** 2).sum(axis=1)).max())
        times = self.key_times()
        if times.shape[0] < 2:
            return 0.0
        # Piecewise-constant rates: the speed at each interval's midpoint covers the whole interval
        # for deforming meshes; a rigid interval's speed varies only by the turn, bounded the same way.
        mids = 0.5 * (times[1:] + times[:-1])
        return float(max(np.sqrt((self.vertices_at(t)[1] ** 2).sum(axis=1)).max() for t in mids))


Collider = settings_dataclass("Collider", _Collider, COLLIDER, eq=False)


def check_collider_mesh(vertices, triangles, name: str) -> tuple[np.ndarray, np.ndarray]:
    """Validated float64 (V, 3) vertices and int64 (T, 3) triangles.

    Raises:
        MochiError: no faces, bad shapes, indices out of range, or NaN/infinite vertices.
    """
    triangles = np.asarray(triangles)
    if triangles.size and not np.issubdtype(triangles.dtype, np.integer):
        raise MochiError(f"The collider '{name}' has triangle indices that are not integers.")
    return check_triangle_arrays(vertices, triangles, f"The collider '{name}'",
                                 "so grains would have nothing to touch")


def load_collider_mesh(path: str | os.PathLike) -> tuple[np.ndarray, np.ndarray]:
    """Vertices (V, 3) [file units, taken as m] and triangles (T, 3) of a mesh file read by trimesh.

    Raises:
        MochiError: the file is missing or unreadable, has no faces or holds NaN coordinates.
    """
    mesh = read_trimesh(path, role="collider mesh file", why_faces="so grains would have nothing to touch")
    return check_collider_mesh(mesh.vertices, mesh.faces, str(path))
