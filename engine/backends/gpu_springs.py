"""The GPU backends' tangential springs on the host: their row layout, and the conversion to and from the
contact history the CPU backend and the bake cache use (``get_contact_history``/``set_contact_history``).

On the device (kernels/dem_params.h ``DemParams::springs``) every particle has a row of
``SPRING_SLOTS`` entries, by model index: spring ξ (x, y, z) [m] as seen from the row's particle and the
partner's model index in w (as int32 bits; −1 ends the row). A pair lives in its owner's row only: the
smaller sphere, the smaller model index on ties (``owns``, dem_owns in kernels/dem_math.cuh). Wall
springs are (n, 6, 3), zero without contact, as on the CPU.

The history format (engine.backends.cpu): ``pair_i``, ``pair_j`` int32 (P,), ``pair_spring`` float64
(P, 3) as seen from ``pair_i``, ``wall_spring`` float64 (n, 6, 3) [m]; with rolling resistance also
``pair_rolling`` float64 (P, 3) and ``wall_rolling`` float64 (n, 6, 3) [m], the rolling histories (the
same seen from either particle of a pair: never negated). On the device a pair's rolling history sits
at the same row and entry as its spring (``DemParams::rolling``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


#: Springs a particle's row holds: DEM_SPRING_SLOTS in kernels/dem_params.h (a test checks they agree).
SPRING_SLOTS = 16
#: Partner of an unused entry (ends a row).
END_OF_ROW = -1


def owns(model_i: np.ndarray, radius_i: np.ndarray, model_j: np.ndarray, radius_j: np.ndarray) -> np.ndarray:
    """Where i owns the pair (i, j): the smaller sphere, the smaller model index on ties (float32 radii)."""
    ri = np.asarray(radius_i, np.float32)
    rj = np.asarray(radius_j, np.float32)
    return (ri < rj) | ((ri == rj) & (np.asarray(model_i) < np.asarray(model_j)))


@dataclass
class SpringRows:
    """Springs in the device layout.

    Attributes:
        grains: float32 (n, SPRING_SLOTS, 4): ξ xyz [m] and the partner's model index as int32 bits in w.
        walls: float32 (n, 6, 3): wall springs [m].
        rolling: float32 (n, SPRING_SLOTS, 3): rolling history ξ_r [m] of each entry, or None (none kept).
        wall_rolling: float32 (n, 6, 3): rolling history against each wall [m], or None.
    """

    grains: np.ndarray
    walls: np.ndarray
    rolling: np.ndarray | None = None
    wall_rolling: np.ndarray | None = None

    @staticmethod
    def empty(n: int, *, rolling: bool = False) -> "SpringRows":
        """Rows of n particles without any pair; with ``rolling``, zero rolling histories too."""
        grains = np.zeros((n, SPRING_SLOTS, 4), np.float32)
        grains.view(np.int32)[..., 3] = END_OF_ROW
        if not rolling:
            return SpringRows(grains, np.zeros((n, 6, 3), np.float32))
        return SpringRows(grains, np.zeros((n, 6, 3), np.float32), np.zeros((n, SPRING_SLOTS, 3), np.float32),
                          np.zeros((n, 6, 3), np.float32))

    def partners(self) -> np.ndarray:
        """Partner model index of every entry, int32 (n, SPRING_SLOTS); −1 after a row's end."""
        partner = self.grains.view(np.int32)[..., 3].copy()
        ended = np.cumsum(partner < 0, axis=1) > 0
        partner[ended] = END_OF_ROW
        return partner


def history_from_rows(rows: SpringRows) -> dict[str, np.ndarray]:
    """The contact history (CPU format) of device springs."""
    partner = rows.partners()
    owner, slot = np.nonzero(partner >= 0)
    history = {"pair_i": owner.astype(np.int32), "pair_j": partner[owner, slot].astype(np.int32),
               "pair_spring": rows.grains[owner, slot, :3].astype(np.float64),
               "wall_spring": rows.walls.astype(np.float64)}
    if rows.rolling is not None:
        history["pair_rolling"] = rows.rolling[owner, slot].astype(np.float64)
        history["wall_rolling"] = rows.wall_rolling.astype(np.float64)
    return history


def rows_from_history(history: dict[str, np.ndarray], radius: np.ndarray) -> tuple[SpringRows, int]:
    """Device springs from a contact history (CPU format), and how many pairs did not fit in a row.

    Each pair goes to its owner's row, its spring negated when the history saw it from the other
    particle (its rolling history never); pairs whose spring and rolling history are both zero are left
    out (a new contact starts from zero anyway).

    Args:
        history: ``pair_i``, ``pair_j``, ``pair_spring``, ``wall_spring`` as described in the module.
        radius: Particle radii [m], (n,).
    """
    n = len(radius)
    rows = SpringRows.empty(n, rolling=True)
    rows.walls[:] = np.asarray(history["wall_spring"], np.float64).reshape(n, 6, 3)
    i = np.asarray(history["pair_i"], np.int64)
    j = np.asarray(history["pair_j"], np.int64)
    spring = np.asarray(history["pair_spring"], np.float64).reshape(-1, 3)
    rolling = np.asarray(history.get("pair_rolling", np.zeros_like(spring)), np.float64).reshape(-1, 3)
    if "wall_rolling" in history:
        rows.wall_rolling[:] = np.asarray(history["wall_rolling"], np.float64).reshape(n, 6, 3)
    live = np.any(spring != 0.0, axis=1) | np.any(rolling != 0.0, axis=1)
    i, j, spring, rolling = i[live], j[live], spring[live], rolling[live]
    i_owns = owns(i, radius[i], j, radius[j])
    owner = np.where(i_owns, i, j)
    partner = np.where(i_owns, j, i)
    seen = np.where(i_owns[:, None], spring, -spring)
    order = np.lexsort((partner, owner))
    owner, partner, seen, rolling = owner[order], partner[order], seen[order], rolling[order]
    first = np.searchsorted(owner, owner, side="left")
    slot = np.arange(len(owner)) - first
    fits = slot < SPRING_SLOTS
    rows.grains[owner[fits], slot[fits], :3] = seen[fits]
    rows.grains.view(np.int32)[owner[fits], slot[fits], 3] = partner[fits]
    rows.rolling[owner[fits], slot[fits]] = rolling[fits]
    return rows, int(np.count_nonzero(~fits))
