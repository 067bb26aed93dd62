"""How a collider moves: static, rigid (analytic or keyframed), or deforming (vertices per keyframe).

Every motion answers one question for the solver: where are the collider's vertices at time t and how
fast do they move (``Collider.vertices_at``). Between keyframes a rigid pose is interpolated with a
constant angular velocity (slerp) and a constant linear velocity (lerp), and deforming vertices
linearly, so the velocities returned are the exact time derivatives of the positions returned.
Before the first and after the last keyframe the collider holds still.

The keyframe layouts are what a DCC capture produces per frame (Blender: ``matrix_world`` split into
translation and rotation; the evaluated mesh's vertices for deforming objects).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.spatial.transform import Rotation

from ..errors import MochiError


@dataclass(frozen=True)
class RigidPose:
    """A rigid transform and its rate at one instant: world = rotation @ body + translation.

    Attributes:
        rotation: Rotation matrix, float64 shape (3, 3).
        translation: World position of the body origin [m], float64 shape (3,).
        angular_velocity: World angular velocity ω [rad/s], float64 shape (3,).
        linear_velocity: Velocity of the body origin [m/s], float64 shape (3,). A body point x moves
            at ω × (x − translation) + linear_velocity.
    """

    rotation: np.ndarray
    translation: np.ndarray
    angular_velocity: np.ndarray
    linear_velocity: np.ndarray

    def apply(self, body_vertices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """World positions [m] and velocities [m/s] of body-frame vertices, each (vertex_count, 3)."""
        world = body_vertices @ self.rotation.T + self.translation
        velocity = np.cross(self.angular_velocity, world - self.translation) + self.linear_velocity
        return world, velocity


def _vec3(value, what: str) -> np.ndarray:
    array = np.asarray(value, dtype=np.float64).reshape(-1)
    if array.shape != (3,) or not np.isfinite(array).all():
        raise MochiError(f"The collider {what} must be 3 finite numbers, not {value!r}.")
    return array


def _interval(times: np.ndarray, time: float) -> tuple[int, float, bool]:
    """Key index k, fraction s in [0, 1] between keys k and k + 1, and whether ``time`` is inside."""
    if times.shape[0] == 1 or time <= times[0]:
        return 0, 0.0, False
    if time >= times[-1]:
        return times.shape[0] - 2, 1.0, False
    k = int(np.searchsorted(times, time, side="right")) - 1
    return k, (time - times[k]) / (times[k + 1] - times[k]), True


def _check_times(times, what: str) -> np.ndarray:
    times = np.asarray(times, dtype=np.float64).reshape(-1)
    if times.shape[0] == 0 or not np.isfinite(times).all() or np.any(np.diff(times) <= 0):
        raise MochiError(f"The {what} keyframe times must be finite and strictly increasing, not {times.tolist()!r}.")
    return times


@dataclass(frozen=True, eq=False)
class RigidMotionAnalytic:
    """Constant spin about a pivot moving at constant velocity.

    At time t: world = Rot(ω t) (R0 body + p0 − c0) + c0 + v t, where c0 is the pivot at t = 0.

    Attributes:
        rotation0: Initial rotation R0, float64 (3, 3).
        translation0: Initial body origin p0 [m], float64 (3,).
        pivot: Point c0 the body turns about at t = 0 [m], float64 (3,); it travels with ``velocity``.
        angular_velocity: ω [rad/s], world frame, float64 (3,).
        velocity: Linear velocity v of the pivot [m/s], float64 (3,).
    """

    rotation0: np.ndarray
    translation0: np.ndarray
    pivot: np.ndarray
    angular_velocity: np.ndarray
    velocity: np.ndarray

    kind = "rigid_analytic"

    def __post_init__(self):
        for name in ("translation0", "pivot", "angular_velocity", "velocity"):
            object.__setattr__(self, name, _vec3(getattr(self, name), name.replace("_", " ")))
        object.__setattr__(self, "rotation0", _check_rotation(self.rotation0, "initial rotation"))

    def pose_at(self, time: float) -> RigidPose:
        spin = Rotation.from_rotvec(self.angular_velocity * time).as_matrix()
        pivot = self.pivot + self.velocity * time
        translation = spin @ (self.translation0 - self.pivot) + pivot
        rate = np.cross(self.angular_velocity, translation - pivot) + self.velocity
        return RigidPose(spin @ self.rotation0, translation, self.angular_velocity.copy(), rate)

    def to_json(self) -> dict:
        return {"kind": self.kind, "rotation0": self.rotation0.tolist(), "translation0": self.translation0.tolist(),
                "pivot": self.pivot.tolist(), "angular_velocity": self.angular_velocity.tolist(),
                "velocity": self.velocity.tolist()}

    def arrays(self) -> dict[str, np.ndarray]:
        return {}


@dataclass(frozen=True, eq=False)
class RigidMotionKeyframes:
    """Rigid poses sampled at keyframes (a DCC capture), interpolated per step.

    Attributes:
        times: Keyframe times [s], float64 (key_count,), strictly increasing.
        translations: Body origin per key [m], float64 (key_count, 3).
        rotations: Rotation matrix per key, float64 (key_count, 3, 3) (no scale: bake a constant scale
            into the body vertices, and use a deforming collider for an animated one).
    """

    times: np.ndarray
    translations: np.ndarray
    rotations: np.ndarray

    kind = "rigid_keyframes"

    def __post_init__(self):
        times = _check_times(self.times, "rigid")
        translations = np.asarray(self.translations, dtype=np.float64)
        if translations.shape != (times.shape[0], 3) or not np.isfinite(translations).all():
            raise MochiError(f"The collider keyframes need one finite translation per key time, not an array of "
                             f"shape {translations.shape} for {times.shape[0]} keys.")
        rotations = np.asarray(self.rotations, dtype=np.float64)
        if rotations.shape != (times.shape[0], 3, 3):
            raise MochiError(f"The collider keyframes need one 3×3 rotation per key time, not an array of shape "
                             f"{rotations.shape}.")
        rotations = np.stack([_check_rotation(r, f"rotation at key {k}") for k, r in enumerate(rotations)])
        object.__setattr__(self, "times", times)
        object.__setattr__(self, "translations", translations)
        object.__setattr__(self, "rotations", rotations)

    def pose_at(self, time: float) -> RigidPose:
        k, s, inside = _interval(self.times, time)
        if self.times.shape[0] == 1:
            return RigidPose(self.rotations[0], self.translations[0], np.zeros(3), np.zeros(3))
        span = self.times[k + 1] - self.times[k]
        # Relative rotation in the world frame as an axis·angle: the constant ω of the slerp.
        turn = Rotation.from_matrix(self.rotations[k + 1] @ self.rotations[k].T).as_rotvec()
        rotation = Rotation.from_rotvec(turn * s).as_matrix() @ self.rotations[k]
        step = self.translations[k + 1] - self.translations[k]
        translation = self.translations[k] + s * step
        if not inside:
            return RigidPose(rotation, translation, np.zeros(3), np.zeros(3))
        return RigidPose(rotation, translation, turn / span, step / span)

    def to_json(self) -> dict:
        return {"kind": self.kind}

    def arrays(self) -> dict[str, np.ndarray]:
        return {"times": self.times, "translations": self.translations, "rotations": self.rotations}


@dataclass(frozen=True, eq=False)
class DeformMotion:
    """World vertices per keyframe (an animated or deforming mesh), linearly interpolated per step.

    Attributes:
        times: Keyframe times [s], float64 (key_count,), strictly increasing.
        vertices: World vertex positions per key [m], float64 (key_count, vertex_count, 3); the
            topology (the collider's triangles) is the same at every key.
    """

    times: np.ndarray
    vertices: np.ndarray

    kind = "deforming"

    def __post_init__(self):
        times = _check_times(self.times, "deforming")
        vertices = np.asarray(self.vertices, dtype=np.float64)
        if vertices.ndim != 3 or vertices.shape[0] != times.shape[0] or vertices.shape[2] != 3:
            raise MochiError(f"A deforming collider needs vertices of shape (key_count, vertex_count, 3) with "
                             f"{times.shape[0]} keys, not {vertices.shape}.")
        bad = ~np.isfinite(vertices).all(axis=2)
        if bad.any():
            key, vertex = (int(x[0]) for x in np.nonzero(bad))
            raise MochiError(f"The deforming collider has a NaN or infinite coordinate at vertex {vertex} of key {key}.")
        object.__setattr__(self, "times", times)
        object.__setattr__(self, "vertices", np.ascontiguousarray(vertices))

    def vertices_at(self, time: float) -> tuple[np.ndarray, np.ndarray]:
        """World positions [m] and velocities [m/s] of the vertices at ``time``, each (vertex_count, 3)."""
        k, s, inside = _interval(self.times, time)
        if self.times.shape[0] == 1:
            return self.vertices[0].copy(), np.zeros_like(self.vertices[0])
        a, b = self.vertices[k], self.vertices[k + 1]
        positions = a + s * (b - a)
        if not inside:
            return positions, np.zeros_like(positions)
        return positions, (b - a) / (self.times[k + 1] - self.times[k])

    def to_json(self) -> dict:
        return {"kind": self.kind}

    def arrays(self) -> dict[str, np.ndarray]:
        return {"times": self.times, "vertices": self.vertices}


def _check_rotation(matrix, what: str) -> np.ndarray:
    matrix = np.asarray(matrix, dtype=np.float64)
    if matrix.shape != (3, 3) or not np.isfinite(matrix).all() \
            or not np.allclose(matrix @ matrix.T, np.eye(3), atol=1e-6) or np.linalg.det(matrix) < 0:
        raise MochiError(f"The collider {what} must be a proper rotation matrix without scale or shear.")
    return matrix


def euler_rotation(rotation_deg) -> np.ndarray:
    """Rotation matrix of Euler XYZ angles [degrees] (Blender's 'XYZ': R = Rz Ry Rx), float64 (3, 3)."""
    return Rotation.from_euler("xyz", [math.radians(float(a)) for a in rotation_deg]).as_matrix()


def motion_from_json(data: dict, arrays: dict[str, np.ndarray]):
    """Inverse of a motion's ``to_json`` + ``arrays`` (None for a static collider)."""
    kind = data.get("kind", "static")
    if kind == "static":
        return None
    if kind == RigidMotionAnalytic.kind:
        return RigidMotionAnalytic(np.asarray(data["rotation0"]), data["translation0"], data["pivot"],
                                   data["angular_velocity"], data["velocity"])
    if kind == RigidMotionKeyframes.kind:
        return RigidMotionKeyframes(arrays["times"], arrays["translations"], arrays["rotations"])
    if kind == DeformMotion.kind:
        return DeformMotion(arrays["times"], arrays["vertices"])
    raise MochiError(f"Unknown collider motion '{kind}' in the cache.")
