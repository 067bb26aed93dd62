"""The colliders of a scene and the solver hooks that apply them (``Model.colliders``).

The CPU backend calls, every step:

1. ``add_forces(t, ...)`` after the grain–grain forces: moves every collider to time t (vertices,
   vertex velocities, BVH refit) and adds each collider's contact forces.
2. ``after_integrate(t + dt, ...)`` after the grains have moved: moves the colliders to t + dt and
   runs the swept test, putting back any grain whose centre crossed a surface during the step.

The GPU backends call ``advance(t)`` instead and upload the vertices, velocities and tree it leaves
in each ``ColliderRuntime`` (``engine.backends.gpu_colliders``).

The tangential and rolling springs of grain–collider contacts live here (per collider, grain and slot),
with the accessors ``get_history``/``set_history``/``reset_history`` the backend uses for exact resume.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..contact_law import damping_ratio, law_tables, surface_cohesion, surface_rolling
from ..errors import MochiError
from . import kernels as k
from .collider import Collider
from .tree import ColliderTree

HISTORY_PREFIX = "collider_"
#: The history keys of the grain–collider springs (``history_from_springs``); the trees of moving
#: colliders add ``collider_tree_order_<index>`` and ``collider_tree_cost_<index>``.
SPRING_HISTORY_KEYS = ("collider_index", "collider_particle", "collider_count", "collider_spring",
                       "collider_normal")


@dataclass(eq=False)
class ColliderRuntime:
    """Where one collider is now: its vertices at ``time``, at the previous time, and its tree.

    The CPU hooks below and the GPU backends (``engine.backends.gpu_colliders``) read these fields
    after ``ColliderSet.advance``: ``vertices``, ``velocities`` and ``previous`` are float64 (V, 3)
    [m], [m/s], [m]; ``tree`` is the ``ColliderTree`` over ``vertices``.

    ``clock`` sums the largest vertex displacement of every step [m]: how far any point of the surface
    can have moved since an earlier clock reading (the grains' clearance test).
    """

    collider: Collider
    clock: float = 0.0
    time: float | None = None
    vertices: np.ndarray | None = None
    velocities: np.ndarray | None = None
    previous: np.ndarray | None = None
    tree: ColliderTree | None = None
    pending_tree: tuple[np.ndarray, float] | None = None
    #: Local origin [m] (engine.local_origin) subtracted from the world vertices, float64 (3,).
    origin: np.ndarray = field(default_factory=lambda: np.zeros(3))

    def _vertices_at(self, time: float) -> tuple[np.ndarray, np.ndarray]:
        vertices, velocities = self.collider.vertices_at(time)
        return (vertices - self.origin if self.origin.any() else vertices), velocities

    def advance(self, time: float) -> None:
        if self.time == time:
            return
        collider = self.collider
        if not collider.moving:
            if self.tree is None:
                self.vertices, self.velocities = self._vertices_at(time)
                self.tree = ColliderTree(self.vertices, collider.triangles)
            self.previous = self.vertices
            self.time = time
            return
        vertices, velocities = self._vertices_at(time)
        self.previous = self.vertices if self.vertices is not None else vertices
        self.vertices = np.ascontiguousarray(vertices)
        self.velocities = np.ascontiguousarray(velocities)
        if self.tree is None:
            self.tree = ColliderTree(self.vertices, collider.triangles)
            if self.pending_tree is not None:
                self.tree.restore(*self.pending_tree, self.vertices)
                self.pending_tree = None
        else:
            self.tree.update(self.vertices)
        if self.previous is not vertices:
            self.clock += float(np.sqrt(((self.vertices - self.previous) ** 2).sum(axis=1)).max())
        self.time = time

    def displacement(self) -> tuple[np.ndarray, float]:
        """Vertex displacement over the last advance [m], (V, 3), and its largest length [m]."""
        if not self.collider.moving:
            return self.velocities, 0.0  # a static collider's are all zero
        displacement = self.vertices - self.previous
        return displacement, float(np.sqrt((displacement ** 2).sum(axis=1)).max())

    def forget(self) -> None:
        """Drop the moving state (a static collider keeps its tree: it never changes)."""
        if self.collider.moving:
            self.time = self.vertices = self.velocities = self.previous = self.tree = None
            self.clock = 0.0
        self.pending_tree = None


@dataclass(eq=False)
class ColliderSet:
    """Triangle-mesh colliders and their contact state.

    Attributes:
        colliders: The colliders, in a fixed order (their index names them in the history).
        swept_corrections: Grains the swept test has put back so far (a diagnostic).
    """

    colliders: tuple[Collider, ...]
    swept_corrections: int = 0
    _runtime: list[ColliderRuntime] = field(default_factory=list, repr=False)
    _springs: np.ndarray | None = field(default=None, repr=False)
    _normals: np.ndarray | None = field(default=None, repr=False)
    _counts: np.ndarray | None = field(default=None, repr=False)
    _clearance: np.ndarray | None = field(default=None, repr=False)
    _clear_from: np.ndarray | None = field(default=None, repr=False)
    _clear_clock: np.ndarray | None = field(default=None, repr=False)
    _pending: dict | None = field(default=None, repr=False)
    _tables: tuple | None = field(default=None, repr=False)
    _surface: tuple | None = field(default=None, repr=False)
    _law: tuple | None = field(default=None, repr=False)
    _last_materials: np.ndarray | None = field(default=None, repr=False)

    def __post_init__(self):
        self.colliders = tuple(self.colliders)
        if not self.colliders:
            raise MochiError("A collider set needs at least one collider.")
        for c in self.colliders:
            if not isinstance(c, Collider):
                raise MochiError(f"Colliders must be engine.colliders.Collider objects, not {type(c).__name__}.")
        self._runtime = [ColliderRuntime(c) for c in self.colliders]

    def __len__(self) -> int:
        return len(self.colliders)

    def max_surface_speed(self) -> float:
        """Fastest any collider surface moves [m/s] (an upper bound, for the time-step choice)."""
        return max(c.max_surface_speed() for c in self.colliders)

    def advance(self, time: float) -> tuple[ColliderRuntime, ...]:
        """Move every collider to ``time`` [s] (vertices, vertex velocities, tree); their runtimes in order."""
        for runtime in self._runtime:
            runtime.advance(time)
        return tuple(self._runtime)

    def set_origin(self, origin) -> None:
        """Give the vertices relative to ``origin`` [m] (the grains' local origin, engine.local_origin);
        a changed origin recomputes them at the next ``advance``."""
        origin = np.asarray(origin, np.float64)
        for runtime in self._runtime:
            if not np.array_equal(runtime.origin, origin):
                runtime.origin = origin
                runtime.time = runtime.vertices = runtime.velocities = runtime.previous = runtime.tree = None

    def fresh_copy(self) -> ColliderSet:
        """The same colliders, in the same local origin, with a motion and contact state of their own
        (for a second backend: the GPU backends' ``DeviceColliders``)."""
        copy = ColliderSet(self.colliders)
        copy.set_origin(self._runtime[0].origin)
        return copy

    # --- solver hooks -----------------------------------------------------------------------------

    def add_forces(self, time, positions, velocities, radius, mass, material_index, active, force, physics,
                   omega=None, torque=None) -> None:
        """Add every collider's contact forces on the grains to ``force`` [N], float64 (n, 3), and with
        ``omega`` (float32 (n, 3) [rad/s]) their torques to ``torque`` [N·m], float64 (n, 3).

        Args:
            time: Time of the step [s].
            positions, velocities: float32 (n, 3) [m], [m/s].
            radius, mass: float32 (n,) [m], [kg].
            material_index: int32 (n,); active: uint8 (n,).
            physics: The model's ``Physics`` (materials, stiffness, dt, friction model).
        """
        n = positions.shape[0]
        self._ensure_arrays(n)
        beta, mu, _ = self.material_tables(physics)
        roll, cohesion = self.surface_tables(physics)
        self._last_materials = material_index
        spring = physics.friction_model == "spring"
        rotation = omega is not None
        if not rotation:
            omega, torque = np.zeros((0, 3), np.float32), np.zeros((0, 3))
        for index, runtime in enumerate(self.advance(time)):
            collider = runtime.collider
            k.collider_forces(positions, velocities, radius, mass, material_index, active, force, runtime.vertices,
                              runtime.velocities, collider.triangles, *runtime.tree.arrays(),
                              0.5 * collider.thickness, beta[index], mu[index], roll[index], cohesion[index],
                              float(physics.stiffness), self.law_table(physics), spring,
                              float(physics.dt), self._springs[index], self._normals[index], self._counts[index],
                              runtime.clock, self._clearance[index], self._clear_from[index], self._clear_clock[index],
                              omega, torque, rotation)

    def after_integrate(self, time_new, old_positions, positions, velocities, radius, active, physics) -> None:
        """Swept test from ``old_positions`` to ``positions`` against every collider at ``time_new``.

        Grains whose centre crossed a surface are put back at contact distance on the side they came
        from and their normal velocity (relative to the surface) is reflected with the restitution.
        ``positions`` and ``velocities`` (float32 (n, 3)) are corrected in place.
        """
        _, _, restitution = self.material_tables(physics)
        self._ensure_arrays(positions.shape[0])
        materials = self._last_materials
        if materials is None or materials.shape[0] != positions.shape[0]:
            materials = np.zeros(positions.shape[0], np.int32)
        for index, runtime in enumerate(self.advance(time_new)):
            displacement, displacement_max = runtime.displacement()
            self.swept_corrections += k.sweep(
                old_positions, positions, velocities, radius, materials, active, runtime.vertices, displacement,
                runtime.velocities, runtime.collider.triangles, *runtime.tree.arrays(), displacement_max,
                0.5 * runtime.collider.thickness, restitution[index], runtime.clock, self._clearance[index],
                self._clear_from[index], self._clear_clock[index])

    # --- contact history (exact resume) -------------------------------------------------------------

    def get_history(self) -> dict[str, np.ndarray]:
        """The contact springs in use and the trees of moving colliders, keys prefixed 'collider_'."""
        if self._pending is not None or self._springs is None:
            history = dict(self._pending or {})
        else:
            history = history_from_springs(self._springs, self._normals, self._counts)
        for index, runtime in enumerate(self._runtime):
            if runtime.collider.moving:
                if runtime.tree is not None:
                    history[f"collider_tree_order_{index}"] = runtime.tree.order.copy()
                    history[f"collider_tree_cost_{index}"] = np.array([runtime.tree.built_cost])
                elif runtime.pending_tree is not None:
                    history[f"collider_tree_order_{index}"] = runtime.pending_tree[0]
                    history[f"collider_tree_cost_{index}"] = np.array([runtime.pending_tree[1]])
        return history

    def set_history(self, history: dict[str, np.ndarray]) -> None:
        """Restore what ``get_history`` returned (other keys are ignored; missing ones mean none)."""
        self.reset_history()
        if "collider_index" in history:
            self._pending = {name: np.asarray(history[name]) for name in SPRING_HISTORY_KEYS}
        for index, runtime in enumerate(self._runtime):
            order = history.get(f"collider_tree_order_{index}")
            if runtime.collider.moving and order is not None:
                if order.shape != (runtime.collider.triangles.shape[0],):
                    raise MochiError(f"The saved contact history does not match collider {index} "
                                     f"('{runtime.collider.name}').")
                runtime.pending_tree = (np.asarray(order, np.int64),
                                        float(history[f"collider_tree_cost_{index}"][0]))

    def reset_history(self) -> None:
        """Forget every contact spring and the moving colliders' trees (a new state was set)."""
        if self._springs is not None:
            self._springs[:] = 0.0
            self._normals[:] = 0.0
            self._counts[:] = 0
            self._clearance[:] = -1.0
        self._pending = None
        for runtime in self._runtime:
            runtime.forget()

    # --- storage -------------------------------------------------------------------------------------

    def save(self, folder) -> None:
        """Write the colliders (geometry, surface, motion) into ``folder``/colliders/ (see ``storage``)."""
        from .storage import save_colliders

        save_colliders(self.colliders, folder)

    # --- internals -----------------------------------------------------------------------------------

    def _ensure_arrays(self, particle_count: int) -> None:
        if self._springs is None or self._springs.shape[1] != particle_count:
            shape = (len(self.colliders), particle_count, k.MAX_CONTACTS, 3)
            self._springs = np.zeros((*shape[:3], 6))  # ξ in columns 0–2, ξ_r in 3–5
            self._normals = np.zeros(shape)
            self._counts = np.zeros(shape[:2], np.int8)
            # Known-free distance per collider and grain (≤ 0: unknown), see kernels.collider_forces.
            self._clearance = np.full(shape[:2], -1.0)
            self._clear_from = np.zeros((*shape[:2], 3))
            self._clear_clock = np.zeros(shape[:2])
        if self._pending is not None:
            springs_from_history(self._pending, self._springs, self._normals, self._counts)
            self._pending = None

    def material_tables(self, physics) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """β, μ and restitution of every (collider, material) pair, float64 (C, M) each, averaged as walls."""
        materials = physics.materials
        if self._tables is None or self._tables[0] != materials:
            beta = np.array([[damping_ratio(0.5 * (m.restitution + c.restitution)) for m in materials]
                             for c in self.colliders])
            mu = np.array([[0.5 * (m.friction + c.friction) for m in materials] for c in self.colliders])
            restitution = np.array([[0.5 * (m.restitution + c.restitution) for m in materials]
                                    for c in self.colliders])
            self._tables = (materials, beta, mu, restitution)
        return self._tables[1], self._tables[2], self._tables[3]

    def law_table(self, physics) -> np.ndarray:
        """E*, G* [Pa] and friction cap of every material against the colliders, float64 (M, 3)
        (``engine.contact_law.law_tables``: the colliders have the walls' Young's modulus and Poisson's
        ratio); no rows for the linear law with Mochi's cap."""
        key = (physics.materials, physics.domain, physics.contact_normal, physics.friction_cap)
        if self._law is None or self._law[0] != key:  # once, not every step
            self._law = (key, law_tables(physics)[1])
        return self._law[1]

    def surface_tables(self, physics) -> tuple[np.ndarray, np.ndarray]:
        """Rolling coefficient μ_r and SJKR cohesion c [Pa] of every (collider, material) pair, float64
        (C, M) each, mixed as against a wall (``engine.contact_law.surface_rolling``/``surface_cohesion``);
        μ_r is zero without rotation (rolling resistance acts through ω only)."""
        key = (physics.materials, bool(physics.rotation))
        if self._surface is None or self._surface[0] != key:  # once, not every step
            roll = np.array([surface_rolling(physics.materials, c.rolling_friction) for c in self.colliders])
            if not physics.rotation:
                roll = np.zeros_like(roll)
            cohesion = np.array([surface_cohesion(physics.materials, c.cohesion) for c in self.colliders])
            self._surface = (key, roll, cohesion)
        return self._surface[1], self._surface[2]


def history_from_springs(springs: np.ndarray, normals: np.ndarray, counts: np.ndarray) -> dict[str, np.ndarray]:
    """The contact springs in use, in the history format (``SPRING_HISTORY_KEYS``), from the arrays
    of ``kernels.collider_forces``; the GPU backends convert theirs with it too.

    Args:
        springs: Tangential spring ξ (columns 0–2) and rolling spring ξ_r (3–5) [m] per collider, grain
            and slot, float64 (C, n, MAX_CONTACTS, 6); a GPU backend without rolling resistance may pass
            (C, n, MAX_CONTACTS, 3), ξ only (ξ_r is zero then).
        normals: Last unit normal per collider, grain and slot, float64 (C, n, MAX_CONTACTS, 3).
        counts: Slots in use per collider and grain, (C, n).

    Returns:
        ``collider_index``, ``collider_particle`` int32 (P,), ``collider_count`` int8 (P,),
        ``collider_spring`` float64 (P, MAX_CONTACTS, 6) (ξ, ξ_r), ``collider_normal`` float64
        (P, MAX_CONTACTS, 3): one entry per (collider, grain) with a contact, in (collider, grain) order.
    """
    collider, particle = np.nonzero(counts)
    rows = np.zeros((collider.shape[0], springs.shape[2], 6))
    rows[:, :, :springs.shape[3]] = springs[collider, particle]
    return {"collider_index": collider.astype(np.int32), "collider_particle": particle.astype(np.int32),
            "collider_count": np.asarray(counts[collider, particle], np.int8),
            "collider_spring": rows,
            "collider_normal": np.asarray(normals[collider, particle], np.float64)}


def springs_from_history(history: dict, springs: np.ndarray, normals: np.ndarray, counts: np.ndarray) -> None:
    """Write a history's contact springs (``history_from_springs``) into the arrays, clearing the rest.

    ``springs`` (C, n, MAX_CONTACTS, 6 or 3) takes the columns both have: a cache written before the
    colliders had rolling resistance holds ξ only (3 columns), and its ξ_r stays zero; a 3-column
    ``springs`` (a GPU backend without rolling resistance) takes ξ alone."""
    springs[:] = 0.0
    normals[:] = 0.0
    counts[:] = 0
    index = (np.asarray(history["collider_index"], np.int64), np.asarray(history["collider_particle"], np.int64))
    counts[index] = history["collider_count"]
    saved = np.asarray(history["collider_spring"], np.float64)
    width = min(saved.shape[-1], springs.shape[-1])
    springs[index + (slice(None), slice(0, width))] = saved[..., :width]
    normals[index] = history["collider_normal"]


def load_colliders(folder) -> ColliderSet:
    """The colliders a bake saved in ``folder`` (see ``engine.colliders.storage``)."""
    from .storage import read_colliders

    return ColliderSet(read_colliders(folder))
