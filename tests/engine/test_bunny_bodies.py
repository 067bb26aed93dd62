"""The three bunny presets of issue 16: rigid stays whole, weak glue cracks, strong glue holds."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from engine.backends.cpu import BackendCpu
from engine.preset import load_preset
from engine.scene import setup_from_preset

PRESETS = Path(__file__).resolve().parents[2] / "presets"


def _dropped(name, seconds=0.4):
    setup = setup_from_preset(load_preset(PRESETS / f"bunny_{name}.toml"), particles=400)
    backend = BackendCpu(setup.model)
    backend.set_state(setup.state)
    lowest = 1.0
    for _ in range(40):  # lands at about 0.25 s
        backend.step(int(seconds / setup.model.physics.dt / 40))
        lowest = min(lowest, float((backend.state.positions[:, 1] - setup.model.radius).min()))
    assert lowest < 0.0  # it did hit the floor
    return setup, backend, backend.get_state()


def _distances(positions):
    x = positions.astype(np.float64)
    return np.linalg.norm(x[:, None] - x[None], axis=2)


def test_rigid_bunny_lands_whole():
    setup, _, state = _dropped("rigid")
    np.testing.assert_allclose(_distances(state.positions), _distances(setup.state.positions), atol=1e-5)


@pytest.mark.parametrize("name, cracks", [("glued_weak", True), ("glued_strong", False)])
def test_glued_bunny_cracks_with_weak_glue_and_holds_with_strong(name, cracks):
    setup, backend, state = _dropped(name)
    broken = setup.model.bonds.count - int(backend.bond_intact.sum())
    if cracks:
        assert broken > 0.05 * setup.model.bonds.count
    else:
        assert broken == 0
        # held together: every bonded pair still at its rest length to within a small strain
        i, j = setup.model.bonds.pairs.T
        d = np.linalg.norm(state.positions[i].astype(np.float64) - state.positions[j], axis=1)
        assert np.abs(d / setup.model.bonds.rest - 1.0).max() < 0.05
