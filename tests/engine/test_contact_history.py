"""The typed contact history keeps the cache's keys, order and bytes, and every backend returns one."""

from __future__ import annotations

import dataclasses
import io

import numpy as np
import pytest

from engine.backends.cpu import BackendCpu
from engine.contact_history import ARRAY_FIELDS, ContactHistory
from engine.errors import MochiError

from .conftest import scene


def _cpu_history(rng) -> tuple[BackendCpu, dict]:
    positions = rng.uniform(0.3, 0.7, (300, 3)).astype(np.float32)
    setup = scene(positions, np.full(300, 0.03, np.float32), gravity=(0, 0, -9.81), lo=(0, 0, 0), hi=(1, 1, 1),
                  friction=0.5, rolling_friction=0.1, stiffness=2000.0, integrator="verlet")
    backend = BackendCpu(setup.model)
    backend.set_state(setup.state)
    backend.step(30)
    return backend, setup


def test_fields_cover_every_array():
    assert set(ARRAY_FIELDS) == {f.name for f in dataclasses.fields(ContactHistory)} - {"clumps", "colliders"}


def test_round_trip_through_a_cache_file_is_byte_identical(rng):
    backend, _ = _cpu_history(rng)
    history = backend.get_contact_history()
    assert isinstance(history, ContactHistory)
    assert history.pair_spring.shape == (history.pair_i.shape[0], 3) and np.any(history.pair_spring != 0)
    assert history.wall_rolling is not None and history.acceleration is not None
    # The keys in the order the cache always stored them (the CPU backend's dict before the type).
    assert list(history) == ["pair_i", "pair_j", "pair_spring", "wall_spring", "pair_rolling", "wall_rolling",
                             "acceleration", "angular_acceleration"]
    first, second = io.BytesIO(), io.BytesIO()
    np.savez(first, **history)
    np.savez(second, **history.to_arrays())
    first.seek(0)
    with np.load(first) as data:
        read = ContactHistory.from_arrays({name: data[name] for name in data.files})
    again = io.BytesIO()
    np.savez(again, **read)
    assert again.getvalue() == second.getvalue()


def test_restored_history_resumes_bit_for_bit(rng):
    backend, setup = _cpu_history(rng)
    state, history = backend.get_state(), backend.get_contact_history()
    backend.begin_frame()
    backend.step(20)
    resumed = BackendCpu(setup.model)
    resumed.set_state(state)
    resumed.set_contact_history(ContactHistory.from_arrays(dict(history)))
    resumed.begin_frame()
    resumed.step(20)
    assert np.array_equal(resumed.get_state().positions, backend.get_state().positions)


def test_unknown_keys_are_refused():
    with pytest.raises(MochiError, match="^A contact history holds 'pair_sprung', which this version"):
        ContactHistory.from_arrays({"pair_sprung": np.zeros(3)})
    history = ContactHistory.from_arrays({"clump_centre": np.zeros((1, 3)), "collider_tree_order_0": np.arange(3)})
    assert list(history) == ["clump_centre", "collider_tree_order_0"] and "pair_i" not in history
