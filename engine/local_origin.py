"""Coordinates relative to a local origin near the domain, so that a scene far from the world origin
keeps float32 precision inside the backends.

States and caches hold float32 world positions. 1 km from the origin one float32 step is 6.1e-5 m,
so a grain moving 1e-7 m per step would never move. The backends therefore simulate in local
coordinates, ``local = world − origin``, and convert at ``set_state``/``get_state``.

The origin (``local_origin``) is chosen per axis:
- 0 when the domain is near the world origin on that axis (its centre within twice its extent): then
  local and world coordinates are the same numbers and nothing changes for ordinary scenes;
- otherwise the domain's centre rounded to a multiple of the float32 step at the domain's farthest
  coordinate. Every float32 world coordinate in the domain is a multiple of that step, so
  ``world − origin`` is exact in float32 (``world_to_local`` loses nothing), and ``local + origin``
  rounds to the nearest float32 world coordinate (``local_to_world``).

A bake resumed from a cache frame starts from world positions, so a backend that keeps finer local
positions rounds them to the same world grid at every frame boundary (``round_to_world``), which
keeps resuming bit-exact. The domain box, position-dependent fields and collider vertices are shifted
by the same origin (float64 arithmetic before any float32 rounding).
"""

from __future__ import annotations

import numpy as np

#: An axis whose domain centre lies within this many extents of 0 keeps origin 0 there.
NEAR_EXTENTS = 2.0


def local_origin(lo, hi) -> np.ndarray:
    """The local origin [m] for the domain box ``lo``–``hi`` [m]: float64 (3,), each value a float32."""
    lo = np.asarray(lo, np.float64)
    hi = np.asarray(hi, np.float64)
    centre = 0.5 * (lo + hi)
    extent = np.maximum(hi - lo, 0.0)
    far = np.abs(centre) > NEAR_EXTENTS * extent
    farthest = np.maximum(np.abs(lo), np.abs(hi)).astype(np.float32)
    step = np.spacing(farthest).astype(np.float64)  # float32 step at the farthest coordinate
    origin = np.where(far, np.round(centre / step) * step, 0.0)
    return origin.astype(np.float32).astype(np.float64)


def world_to_local(positions: np.ndarray, origin: np.ndarray) -> np.ndarray:
    """float32 (n, 3) local positions [m] of float32 world positions (exact inside the domain)."""
    if not origin.any():
        return np.array(positions, np.float32, copy=True)
    return (np.asarray(positions, np.float64) - origin).astype(np.float32)


def local_to_world(positions: np.ndarray, origin: np.ndarray) -> np.ndarray:
    """float32 (n, 3) world positions [m] of local positions (rounded to the nearest float32)."""
    if not origin.any():
        return np.array(positions, np.float32, copy=True)
    return (np.asarray(positions, np.float64) + origin).astype(np.float32)


def round_to_world(positions: np.ndarray, origin: np.ndarray) -> np.ndarray:
    """Local positions rounded to what a cache frame holds: ``world_to_local(local_to_world(·))``."""
    return world_to_local(local_to_world(positions, origin), origin)


def shift_field_table(table: np.ndarray, origin: np.ndarray, fields) -> np.ndarray:
    """The field table of ``engine.fields.pack_fields`` with its positions made local: a centred field's
    centre, a sampled field's corners (recomputed in float64 from ``fields``, then rounded)."""
    if not origin.any() or table.shape[0] == 0:
        return table
    from .fields import CENTRED_KINDS, KIND_SAMPLED

    out = table.copy()
    rows = [f for f in fields if f.kind in CENTRED_KINDS or f.kind == "sampled"]
    for row, f in zip(out, rows):
        if int(row[0]) == KIND_SAMPLED:
            row[5:8] = np.asarray(f.lo, np.float64) - origin
            row[8:11] = np.asarray(f.hi, np.float64) - origin
        else:
            row[1:4] = np.asarray(f.center, np.float64) - origin
    return out
