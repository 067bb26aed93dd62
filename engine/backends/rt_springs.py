"""The rt backend's tangential springs on the host: carried from row to row, and to and from the contact history.

The rt backend (engine.backends.rt_backend) keeps one tangential spring ξ [m] per entry of its partner
rows, parallel to the partners: grain i's entry for partner j holds ξ as seen from i, and j's entry for i
holds ξ as seen from j. The force kernel (kernels/rt_dem_step.slang) updates each entry from its own row's
side only; the law turns every input of the pair into its negation on the other side (n, v_i − v_j and ξ
flip, the overlap, v_n and the cap do not), and negation is exact in floating point, so the two entries
stay ξ_ji = −ξ_ij bit for bit without either thread reading the other's.

Rows are addressed by a key ``grain · count + partner`` (int64), ascending in the rows' order
(``engine.backends.rt_backend.pair_rows`` sorts by grain, then partner). After each step's search the new
rows take their springs from the old ones by key, zero for a new pair: a pair that touched at the last step
is always found again while it touches (the search reaches a hair farther than touching), and the kernel
zeroes the spring of a listed pair that no longer touches, as the CPU backend clears its list entries.

Wall springs are ξ per grain and wall side (−x, +x, −y, +y, −z, +z) [m], float32 (n, 6, 3) on the host and
(6 n) float4 rows on the device, zero without contact, as the CPU backend keeps them.

With rolling resistance each row entry and wall side also keeps a rolling spring ξ_r [m] (a second
device buffer of the same shape); on the host an entry's history is float32 (6,): ξ, then ξ_r, as the CPU
backend's ``hist`` columns. ξ_r is the same seen from either grain (kernels/contact_law.h: both factors of
v_r = R_eff (ω_i − ω_j) × n flip), so it is never negated.

History format (engine.contact_history, as the CPU backend writes it): ``pair_i`` < ``pair_j`` int32 (P,),
the pairs with a non-zero spring, ``pair_spring`` float64 (P, 3) as seen from ``pair_i``, ``wall_spring``
float64 (n, 6, 3), and with rolling resistance ``pair_rolling`` (P, 3) and ``wall_rolling`` (n, 6, 3). A
history from another backend may list a pair either way round; both rows are set.
"""

from __future__ import annotations

import numpy as np

from ..contact_history import ContactHistory


def row_keys(row_start: np.ndarray, partner: np.ndarray, count: int) -> np.ndarray:
    """Key ``grain · count + partner`` of every row entry, int64 (entries,), ascending.

    Args:
        row_start: uint32 (count + 1,); grain g's entries are ``row_start[g]:row_start[g + 1]``.
        partner: Partner of each entry, uint32 (entries,), ascending within a row.
        count: Grains.
    """
    grain = np.repeat(np.arange(count, dtype=np.int64), np.diff(row_start.astype(np.int64)))
    return grain * count + partner.astype(np.int64)


def carry_springs(old_keys: np.ndarray, old_springs: np.ndarray, new_keys: np.ndarray) -> np.ndarray:
    """The new rows' histories: each entry's old history where its key was in the old rows, zero elsewhere.

    Args:
        old_keys: Keys of the old rows, int64 (P_old,), ascending.
        old_springs: Their histories [m], float32 (P_old, 6): ξ, then ξ_r.
        new_keys: Keys of the new rows, int64 (P_new,), ascending.

    Returns:
        float32 (P_new, 6) [m].
    """
    springs = np.zeros((new_keys.shape[0], old_springs.shape[1]), np.float32)
    if old_keys.shape[0] == 0 or new_keys.shape[0] == 0:
        return springs
    where = np.minimum(np.searchsorted(old_keys, new_keys), old_keys.shape[0] - 1)
    found = old_keys[where] == new_keys
    springs[found] = old_springs[where[found]]
    return springs


def springs_to_history(keys: np.ndarray, springs: np.ndarray, wall: np.ndarray, count: int, *,
                       rolling: bool) -> ContactHistory:
    """The contact history of the rows (particle ids = model indices: the rt backend never renumbers).

    Args:
        keys: Row keys, int64 (P,), ascending; springs: their ξ and ξ_r [m], float32 (P, 6).
        wall: Wall ξ and ξ_r [m], float32 (count, 6, 6).
        count: Grains.
        rolling: Write the rolling springs too (as the CPU backend does with rolling resistance only).

    Returns:
        The pairs i < j with a non-zero history, ξ as seen from i, and the wall springs, in float64.
    """
    i, j = keys // count, keys % count
    keep = (i < j) & np.any(springs != 0.0, axis=1)
    history = dict(pair_i=i[keep].astype(np.int32), pair_j=j[keep].astype(np.int32),
                   pair_spring=springs[keep, :3].astype(np.float64), wall_spring=wall[:, :, :3].astype(np.float64))
    if rolling:
        history.update(pair_rolling=springs[keep, 3:].astype(np.float64),
                       wall_rolling=wall[:, :, 3:].astype(np.float64))
    return ContactHistory(**history)


def springs_from_history(history: ContactHistory, count: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows of a contact history: (keys int64 (2P,) ascending, ξ and ξ_r float32 (2P, 6), wall float32
    (count, 6, 6)), each pair in both rows, ξ negated in the partner's, ξ_r not (it is the same seen from
    either grain).

    A history without springs (a damper run's, or none stored) gives empty rows and zero wall springs.
    """
    pair_i = np.asarray(history.pair_i if history.pair_i is not None else [], np.int64)
    pair_j = np.asarray(history.pair_j if history.pair_j is not None else [], np.int64)
    hist = np.zeros((pair_i.shape[0], 6), np.float32)
    if history.pair_spring is not None:
        hist[:, :3] = np.asarray(history.pair_spring).reshape(-1, 3)
    if history.pair_rolling is not None:
        hist[:, 3:] = np.asarray(history.pair_rolling).reshape(-1, 3)
    partner = hist.copy()
    partner[:, :3] = -partner[:, :3]
    keys = np.concatenate([pair_i * count + pair_j, pair_j * count + pair_i])
    springs = np.concatenate([hist, partner])
    order = np.argsort(keys, kind="stable")
    wall = np.zeros((count, 6, 6), np.float32)
    if history.wall_spring is not None:
        wall[:, :, :3] = history.wall_spring
    if history.wall_rolling is not None:
        wall[:, :, 3:] = history.wall_rolling
    return keys[order], springs[order], wall
