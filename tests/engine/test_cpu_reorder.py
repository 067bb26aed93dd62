"""The CPU backend's slot reorder is invisible outside it, its list is rebuilt on displacement only,
and its results do not depend on the thread count."""

from __future__ import annotations

import numba
import numpy as np
import pytest

from engine.backends.cpu import BackendCpu
from engine.neighbors.brute import brute_force_pairs

from .conftest import scene


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
            backend.adaptive_threads = False  # this count, not the faster one
            backend.set_state(setup.state)
            backend.step(30)
            states.append((backend.get_state(), backend.get_contact_history()))
    finally:
        numba.set_num_threads(before)
    (one, h1), (two, h2) = states
    assert np.array_equal(one.positions, two.positions) and np.array_equal(one.velocities, two.velocities)
    assert np.array_equal(h1["pair_i"], h2["pair_i"]) and np.array_equal(h1["pair_spring"], h2["pair_spring"])


def _by_pair(history, key):
    return {(int(i), int(j)): tuple(s) for i, j, s in zip(history["pair_i"], history["pair_j"], history[key])}


def test_reorder_carries_rotation_rolling_and_verlet_state(rng):
    """Rolling resistance and cohesion with rotation and velocity Verlet: with and without renumbering,
    the same angular velocities, orientations, stored accelerations and rolling springs by particle id."""
    positions = rng.uniform([-0.2, -0.98, -0.2], [0.2, -0.6, 0.2], (400, 3))
    setup = scene(positions, rng.uniform(0.015, 0.02, 400), gravity=(0.0, -9.81, 0.0), friction=0.4,
                  rolling_friction=0.2, cohesion=2.0e3, stiffness=2.0e4, dt=1e-4, restitution=0.4)
    runs = []
    for reorder in (True, False):
        backend = BackendCpu(setup.model)
        assert backend.full and backend.rolling and backend.reorder
        backend.reorder = reorder
        backend.set_state(setup.state)
        backend.step(1)
        first = backend.get_state()
        backend.step(299)
        runs.append((backend, first, backend.get_state(), backend.get_contact_history()))
    (ordered, first_a, last_a, history_a), (plain, first_b, last_b, history_b) = runs
    assert not np.array_equal(ordered.perm, np.arange(setup.model.particle_count))
    for name in ("positions", "velocities", "angular_velocities", "orientations"):
        np.testing.assert_allclose(getattr(first_a, name), getattr(first_b, name), rtol=0, atol=1e-6)
    np.testing.assert_allclose(last_a.positions, last_b.positions, rtol=0, atol=2e-4)
    np.testing.assert_allclose(last_a.orientations, last_b.orientations, rtol=0, atol=5e-2)
    assert np.abs(last_a.angular_velocities).max() > 0.1  # the grains turn
    np.testing.assert_allclose(history_a["acceleration"], history_b["acceleration"], rtol=0,
                               atol=0.05 * np.abs(history_b["acceleration"]).max())
    assert history_a["wall_rolling"].shape == (setup.model.particle_count, 6, 3)
    a, b = _by_pair(history_a, "pair_rolling"), _by_pair(history_b, "pair_rolling")
    common = set(a) & set(b)
    assert len(common) > 20 and any(np.any(np.asarray(a[key]) != 0.0) for key in common)
    for key in common:
        np.testing.assert_allclose(a[key], b[key], atol=2e-5)


def test_frictionless_full_law_keeps_no_spring_rows(rng):
    """Without friction or rolling resistance the full law keeps no pair or wall springs, and still
    reports (zero) springs of the full shape."""
    positions = rng.uniform([-0.2, -0.98, -0.2], [0.2, -0.6, 0.2], (300, 3))
    setup = scene(positions, np.full(300, 0.018), gravity=(0.0, -9.81, 0.0), stiffness=2.0e4, dt=1e-4,
                  cohesion=1.0e3)
    backend = BackendCpu(setup.model)
    backend.set_state(setup.state)
    backend.step(200)
    assert backend.full and backend.hist.shape[0] == 0 and backend.wall_hist.shape[1] == 0
    assert backend.neighbors.pair_count > 0 and len(backend.contact_pairs()) > 0
    history = backend.get_contact_history()
    assert history["pair_spring"].shape == (0, 3)
    assert history["wall_spring"].shape == (300, 6, 3) and not history["wall_spring"].any()


def test_scenes_with_bonds_or_clumps_keep_particle_order():
    """Bond and clump lists name particles by id: those scenes are not renumbered."""
    from engine.model import Body, Domain, Gravity, Material
    from engine.scene import setup_from_arrays

    positions = np.array([[-0.01, 0.5, 0.0], [0.01, 0.5, 0.0], [0.3, 0.5, 0.0]], np.float32)
    for kind in ("glued", "rigid"):
        setup = setup_from_arrays(
            positions=positions, radius=np.full(3, 0.01, np.float32), materials=(Material(friction=0.5),),
            domain=Domain(lo=(-1, 0, -1), hi=(1, 1, 1)), gravity=Gravity(vector=(0.0, -9.81, 0.0)),
            dt=1.0e-4, stiffness=1.0e4, object_id=np.array([0, 0, 1]), bodies=(Body(object_id=0, kind=kind),))
        backend = BackendCpu(setup.model)
        assert (backend.bonds is not None or backend.clumps is not None) and not backend.reorder
        backend.set_state(setup.state)
        backend.step(50)
        assert np.array_equal(backend.perm, np.arange(3))
