"""The rt backend's glue bonds on the host: their static rows on the device, and their state across steps
and resumes.

A glued body's bonds (engine.bonds) act in ``rt_step_forces`` (kernels/rt_dem_step.slang, the law in
kernels/bond_law.h): a touching pair held by a bond intact at the start of the force pass is no contact,
and each grain gathers the forces and torques of its own bonds, in bond order (``engine.bonds.bond_rows``),
after its contacts, as the CPU backend adds them. The bonds' state, ξ_b and the intact flag, stays on the
device in two halves of B float4 rows (xyz = ξ_b [m] as seen from the pair's first grain, w = 1 intact, 0
broken): each force pass reads the half ``parity`` and the pair's first grain writes the other, so no
thread reads a row another thread writes in the same pass. The parity flips after every force pass (the
step's, and Verlet's priming pass).

``to_history`` / ``from_history`` carry that state in the CPU backend's keys (``bond_shear`` float64
(B, 3), ``bond_intact`` uint8 (B,)), so a CPU history resumes on rt (ξ_b rounded to float32) and an rt
history resumes bit for bit.
"""

from __future__ import annotations

import numpy as np

from ..bonds import bond_rows, bonds_per_particle
from ..model import Model
from .rt_device import RtDevice


class RtBonds:
    """A model's glue bonds on an rt device (none: ``count`` 0 and one-row buffers the kernel never reads).

    Args:
        rt: The open device.
        model: The static model; its ``bonds`` (an ``engine.bonds.Bonds`` or None).
    """

    def __init__(self, rt: RtDevice, model: Model):
        self.bonds = model.bonds if model.bonds is not None and model.bonds.count else None
        self.count = 0 if self.bonds is None else self.bonds.count
        self.particle_count = model.particle_count
        if self.bonds is None:
            start = np.zeros(1, np.uint32)
            other = index = np.zeros(1, np.uint32)
            pairs = np.zeros((1, 2), np.uint32)
            props = np.zeros((1, 4), np.float32)
        else:
            b = self.bonds
            start, other, index = (a.astype(np.uint32) for a in bond_rows(b, self.particle_count))
            pairs = b.pairs.astype(np.uint32)
            props = np.stack([b.rest, b.area, b.stiffness, b.strength], axis=1).astype(np.float32)
        self._buffers = {"g_bond_start": rt.buffer(start), "g_bond_other": rt.buffer(other),
                         "g_bond_index": rt.buffer(index), "g_bond_pair": rt.buffer(pairs),
                         "g_bond_props": rt.buffer(props)}
        self._state = rt.buffer(np.zeros((2 * max(self.count, 1), 4), np.float32), write=True)
        self.parity = 0
        self.reset()

    def reset(self) -> None:
        """Every bond intact and unsheared, as at the start (``set_state``)."""
        self._write(np.zeros((self.count, 3)), np.ones(self.count, np.uint8))

    def _write(self, shear: np.ndarray, intact: np.ndarray) -> None:
        """The state the next force pass reads (half 0; the parity restarts)."""
        if self.count == 0:
            return
        rows = np.zeros((2 * self.count, 4), np.float32)
        rows[: self.count, :3] = shear
        rows[: self.count, 3] = intact != 0
        self._state.copy_from_numpy(rows)
        self.parity = 0

    def _read(self) -> tuple[np.ndarray, np.ndarray]:
        """(ξ_b float32 (B, 3) [m], intact uint8 (B,)) that the next force pass reads."""
        rows = self._state.to_numpy().view(np.float32).reshape(-1, 4)
        half = rows[self.parity * self.count:(self.parity + 1) * self.count]
        return half[:, :3].copy(), (half[:, 3] != 0.0).astype(np.uint8)

    def bindings(self) -> dict:
        """The kernel's bond buffers and uniforms for the next force pass."""
        return {**self._buffers, "g_bond_state": self._state, "g_bond_count": self.count,
                "g_bond_parity": self.parity}

    def advance(self) -> None:
        """After a force pass: the next one reads the half this one wrote."""
        self.parity ^= 1

    def to_history(self) -> dict[str, np.ndarray]:
        """``bond_shear`` float64 (B, 3) [m] and ``bond_intact`` uint8 (B,), as the CPU backend writes them;
        empty without bonds."""
        if self.count == 0:
            return {}
        shear, intact = self._read()
        return {"bond_shear": shear.astype(np.float64), "bond_intact": intact}

    def from_history(self, shear: np.ndarray | None, intact: np.ndarray | None) -> None:
        """Restore ``to_history``'s arrays (any backend's); a history without them leaves the bonds as they
        are (every bond intact after ``set_state``), as the CPU backend does."""
        if self.count and intact is not None:
            self._write(np.asarray(shear, np.float64).reshape(-1, 3), np.asarray(intact))

    def per_particle(self) -> np.ndarray | None:
        """Intact bonds of each grain, uint8 (n,), for the state's ``bonds`` column; None without bonds."""
        if self.count == 0:
            return None
        return bonds_per_particle(self.bonds, self._read()[1], self.particle_count)
