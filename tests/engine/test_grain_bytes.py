"""The memory per grain the add-on shows before packing (engine.budget) is the engine's real arrays."""

from __future__ import annotations

import numpy as np
import pytest

from engine.backends.cpu import BackendCpu
from engine.budget import (HISTORY_PER_PAIR, HISTORY_PER_PARTICLE, grain_bytes, history_bytes_per_particle,
                           state_bytes_per_particle)

from .conftest import scene

GRAINS = 300


def _baked_history(rng):
    """A State and a ContactHistory of the full physics (spring friction, rolling, Verlet) after a few
    steps of a falling cloud, on the CPU backend."""
    positions = rng.uniform(0.3, 0.7, (GRAINS, 3)).astype(np.float32)
    setup = scene(positions, np.full(GRAINS, 0.03, np.float32), gravity=(0, 0, -9.81), lo=(0, 0, 0), hi=(1, 1, 1),
                  friction=0.5, rolling_friction=0.1, stiffness=2000.0, integrator="verlet")
    backend = BackendCpu(setup.model)
    backend.set_state(setup.state)
    backend.step(30)
    return backend.get_state(), backend.get_contact_history()


def test_state_bytes_per_grain_are_a_real_states(rng):
    state, _ = _baked_history(rng)
    arrays = (state.positions, state.velocities, state.active, state.angular_velocities, state.orientations,
              state.bonds)
    assert sum(a.nbytes for a in arrays) == GRAINS * state_bytes_per_particle()


def test_history_layout_is_the_cpu_backends(rng):
    _, history = _baked_history(rng)
    arrays = history.to_arrays()
    pairs = arrays["pair_i"].shape[0]
    assert pairs > 0
    # Every array the full physics keeps is counted, per grain or per pair, at its real size.
    assert set(arrays) == set(HISTORY_PER_PARTICLE) | set(HISTORY_PER_PAIR)
    for name, (shape, dtype) in HISTORY_PER_PARTICLE.items():
        assert arrays[name].shape == (GRAINS, *shape) and arrays[name].dtype == dtype, name
    for name, (shape, dtype) in HISTORY_PER_PAIR.items():
        assert arrays[name].shape == (pairs, *shape) and arrays[name].dtype == dtype, name
    per_grain = sum(arrays[name].nbytes for name in HISTORY_PER_PARTICLE) / GRAINS
    per_pair = sum(arrays[name].nbytes for name in HISTORY_PER_PAIR) / pairs
    assert history_bytes_per_particle(pairs_per_particle=2.0) == per_grain + 2.0 * per_pair
    real = sum(a.nbytes for a in arrays.values())
    assert history_bytes_per_particle(pairs_per_particle=pairs / GRAINS) * GRAINS == pytest.approx(real, rel=1e-12)


def test_grain_bytes_scale_with_the_count():
    assert grain_bytes(0) == 0
    assert grain_bytes(1_000_000) == round(1_000_000 * (state_bytes_per_particle() + history_bytes_per_particle()))
