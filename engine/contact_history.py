"""What a bake must carry from one frame to the next, beyond the ``State``, to resume bit for bit.

A ``ContactHistory`` is the springs and integrator memory a backend keeps between steps, in particle ids
(every backend reads any backend's history). It is stored beside each cache frame (engine.cache, one
``.npz`` entry per array, keys as the field names) and is also a read-only mapping of those arrays, so
``np.savez(buffer, **history)`` writes exactly the keys, order and bytes the cache always held.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

import numpy as np

from .errors import MochiError

#: The arrays with a field of their own, in the order a cache file stores them.
ARRAY_FIELDS = ("pair_i", "pair_j", "pair_spring", "wall_spring", "pair_rolling", "wall_rolling", "acceleration",
                "angular_acceleration", "bond_shear", "bond_intact")
#: Prefix of the rigid clumps' body-state keys (``clump_centre`` …) and of the mesh colliders' keys.
CLUMP_PREFIX = "clump_"
COLLIDER_PREFIX = "collider_"


@dataclass(frozen=True, eq=False)
class ContactHistory(Mapping):
    """Contact springs and integrator memory, in particle ids; None where the physics keeps none.

    Attributes:
        pair_i, pair_j: The pairs with a spring, int32 (P,); ``pair_i`` is the particle the spring is
            seen from.
        pair_spring: Tangential spring ξ of each pair as seen from ``pair_i`` [m], float64 (P, 3).
        wall_spring: ξ per particle and wall side (−x, +x, −y, +y, −z, +z) [m], float64 (n, 6, 3); zero
            without contact.
        pair_rolling, wall_rolling: Rolling springs ξ_r [m], float64 (P, 3) and (n, 6, 3) (rolling
            resistance only; the same seen from either particle).
        acceleration, angular_acceleration: Velocity Verlet's accelerations of the current state
            [m/s²] and [rad/s²], float64 (n, 3) (once they have been computed).
        bond_shear: Glue bonds' shear displacement ξ_b [m], float64 (B, 3); bond_intact: uint8 (B,).
        clumps: Rigid clumps' body state, keys ``clump_centre``, ``clump_velocity``, ``clump_momentum``
            (C, 3), ``clump_orientation`` (C, 4), ``clump_force``, ``clump_torque`` (C, 3), float64.
        colliders: The mesh colliders' springs and trees, keys prefixed ``collider_``
            (engine.colliders.collider_set.SPRING_HISTORY_KEYS and ``collider_tree_*_<index>``).
    """

    pair_i: np.ndarray | None = None
    pair_j: np.ndarray | None = None
    pair_spring: np.ndarray | None = None
    wall_spring: np.ndarray | None = None
    pair_rolling: np.ndarray | None = None
    wall_rolling: np.ndarray | None = None
    acceleration: np.ndarray | None = None
    angular_acceleration: np.ndarray | None = None
    bond_shear: np.ndarray | None = None
    bond_intact: np.ndarray | None = None
    clumps: dict[str, np.ndarray] = field(default_factory=dict)
    colliders: dict[str, np.ndarray] = field(default_factory=dict)

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, np.ndarray]) -> "ContactHistory":
        """The history of a cache file's arrays or of a backend's dict (keys as ``to_arrays`` writes).

        Raises:
            MochiError: a key this history does not know (a newer engine's cache, or a typo in a backend).
        """
        if isinstance(arrays, ContactHistory):
            return arrays
        known, clumps, colliders = {}, {}, {}
        for name, value in arrays.items():
            if name in ARRAY_FIELDS:
                known[name] = value
            elif name.startswith(CLUMP_PREFIX):
                clumps[name] = value
            elif name.startswith(COLLIDER_PREFIX):
                colliders[name] = value
            else:
                raise MochiError(f"A contact history holds '{name}', which this version of the engine does not "
                                 "know, so the bake cannot continue exactly; bake again with overwrite.")
        return cls(**known, clumps=clumps, colliders=colliders)

    def to_arrays(self) -> dict[str, np.ndarray]:
        """Every array present, by key, in the order a cache file stores them."""
        out = {name: getattr(self, name) for name in ARRAY_FIELDS if getattr(self, name) is not None}
        out.update(self.clumps)
        out.update(self.colliders)
        return out

    # Mapping: what the backends' set_contact_history and np.savez read.
    def __getitem__(self, key: str) -> np.ndarray:
        value = self.to_arrays().get(key)
        if value is None:
            raise KeyError(key)
        return value

    def __iter__(self) -> Iterator[str]:
        return iter(self.to_arrays())

    def __len__(self) -> int:
        return len(self.to_arrays())

