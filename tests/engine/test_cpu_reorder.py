"""The CPU backend's slot reorder is invisible outside it, its list is rebuilt on displacement only,
and its results do not depend on the thread count."""

from __future__ import annotations

import numba
import numpy as np
import pytest

from engine.backends.cpu import BackendCpu

from .conftest import brute_force_pairs, scene


def _heap(rng, n=600, friction=0.4):
    """Grains dropped in a heap at the floor of a small box (contacts, walls and springs at once)."""
    positions = rng.uniform([-0.2, -0.98, -0.2], [0.2, -0.6, 0.2], (n, 3))
    return scene(positions, rng.uniform(0.015, 0.02, n), gravity=(0.0, -9.81, 0.0), friction=friction,
                 stiffness=2.0e4, dt=1e-4, restitution=0.4)


def _pair_set(history):
    return {(int(i), int(j)): tuple(s) for i, j, s in zip(history["pair_i"], history["pair_j"], history["pair_spring"])}


def test_reorder_is_invisible_outside_the_backend(rng):
    """With and without renumbering, the same scene gives the same contacts (by particle id), the same
    states to rounding, and the same springs keyed by the same (row particle, other particle)."""
    setup = _heap(rng)
    runs = []
    for reorder in (True, False):
        backend = BackendCpu(setup.model)
        backend.reorder = reorder
        backend.set_state(setup.state)
        backend.step(1)
        first = backend.get_state()
        backend.step(499)
        runs.append((backend, first, backend.get_state()))
    (ordered, first_a, last_a), (plain, first_b, last_b) = runs
    assert not np.array_equal(ordered.perm, np.arange(setup.model.particle_count))  # it did renumber
    np.testing.assert_allclose(first_a.positions, first_b.positions, rtol=0, atol=1e-7)
    np.testing.assert_allclose(last_a.positions, last_b.positions, rtol=0, atol=2e-4)
    assert last_a.active.tolist() == last_b.active.tolist()
    pairs = ordered.contact_pairs()
    assert {tuple(p) for p in pairs} == {tuple(p) for p in brute_force_pairs(last_a.positions, setup.model.radius)}
    assert {tuple(p) for p in ordered.live_contact_pairs()} == {tuple(p) for p in pairs}
    history_a, history_b = ordered.get_contact_history(), plain.get_contact_history()
    assert history_a["wall_spring"].shape == history_b["wall_spring"].shape == (setup.model.particle_count, 6, 3)
    # Springs are keyed by particle ids; a pair present in both runs holds nearly the same spring.
    a, b = _pair_set(history_a), _pair_set(history_b)
    assert len(a) > 20
    for key in set(a) & set(b):
        np.testing.assert_allclose(a[key], b[key], atol=2e-5)
    assert len(set(a) ^ set(b)) <= max(2, 0.05 * len(a))


def test_resting_grains_keep_their_list_and_moving_ones_rebuild(rng):
    """No rebuild on a fixed count: grains at rest keep the first list; moving ones rebuild once they
    went half the skin, and the live list still finds every contact."""
    n = 400
    positions = rng.uniform(-0.8, 0.8, (n, 3))
    still = scene(positions, np.full(n, 0.01), stiffness=1.0e3, dt=1e-4)
    backend = BackendCpu(still.model)
    backend.set_state(still.state)
    assert backend.step(300).rebuilds == 1
    moving = scene(positions, np.full(n, 0.01), velocities=rng.normal(0.0, 2.0, (n, 3)), stiffness=1.0e3, dt=1e-4)
    backend = BackendCpu(moving.model)
    backend.set_state(moving.state)
    timings = backend.step(300)
    assert 1 < timings.rebuilds < 300
    state = backend.get_state()
    expected = {tuple(p) for p in brute_force_pairs(state.positions, moving.model.radius)}
    assert {tuple(p) for p in backend.live_contact_pairs()} == expected


@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="needs numba with at least 2 threads")
def test_same_bits_on_one_and_two_threads(rng):
    """Above the single-thread threshold, 1 and 2 threads give identical bits (renumbering included)."""
    from engine.backends.cpu import SINGLE_THREAD_BELOW

    n = SINGLE_THREAD_BELOW + 500
    side = 0.5
    positions = rng.uniform([-side, -1.0, -side], [side, -0.6, side], (n, 3))
    setup = scene(positions, rng.uniform(0.006, 0.008, n), gravity=(0.0, -9.81, 0.0), friction=0.3,
                  stiffness=2.0e3, dt=1e-4)
    states = []
    before = numba.get_num_threads()
    try:
        for threads in (1, 2):
            numba.set_num_threads(threads)
            backend = BackendCpu(setup.model)
            backend.set_state(setup.state)
            backend.step(30)
            states.append((backend.get_state(), backend.get_contact_history()))
    finally:
        numba.set_num_threads(before)
    (one, h1), (two, h2) = states
    assert np.array_equal(one.positions, two.positions) and np.array_equal(one.velocities, two.velocities)
    assert np.array_equal(h1["pair_i"], h2["pair_i"]) and np.array_equal(h1["pair_spring"], h2["pair_spring"])
