"""The paper model's fused CPU step (engine.backends.cpu_fused) and what feeds it: the same bits for any
cut into blocks, the same physics as the three-pass path, a neighbour list holding exactly the pairs
within reach, walls and exits for grains near a side, and rebuilds unchanged by the displacement bound."""

from __future__ import annotations

import numpy as np
import pytest

import engine.backends.cpu as cpu_module
import engine.backends.cpu_kernels as cpu_kernels
from engine.backends.cpu import BackendCpu
from engine.backends.cpu_neighbors import NeighborListCpu
from engine.neighbors.brute import brute_force_pairs

from .conftest import scene


def _heap(rng, n=3000, friction=0.3, open_sides=()):
    """Grains dropped at the floor of a small box: contacts, walls, springs and (with open sides) exits."""
    positions = rng.uniform([-0.3, -1.0, -0.3], [0.3, -0.6, 0.3], (n, 3))
    velocities = rng.normal(0.0, 0.5, (n, 3))
    return scene(positions, rng.uniform(0.006, 0.009, n), velocities=velocities, gravity=(0.0, -9.81, 0.0),
                 lo=(-0.3, -1.0, -0.3), hi=(0.3, 1.0, 0.3), friction=friction, stiffness=2.0e3, dt=1e-4,
                 open_sides=open_sides, rotation=False, integrator="euler")


def _run(setup, steps, **attributes):
    backend = BackendCpu(setup.model)
    for name, value in attributes.items():
        setattr(backend, name, value)
    backend.set_state(setup.state)
    timings = backend.step(steps)
    return backend, backend.get_state(), timings


@pytest.mark.parametrize("friction, open_sides", [(0.0, ()), (0.4, ("-x",))])
def test_same_bits_for_any_number_of_blocks(rng, friction, open_sides):
    """1, 2, 3 and 7 blocks (threads or not) give the same bits: positions, velocities, springs."""
    setup = _heap(rng, friction=friction, open_sides=open_sides)
    runs = [_run(setup, 250, fused_blocks=blocks) for blocks in (1, 2, 3, 7)]
    (reference, first, timings), *others = runs
    assert not reference.full and reference.reorder  # the fused path ran
    assert timings.fused_s > 0 and timings.detect_s == 0
    assert len(reference.contact_pairs()) > 50
    if open_sides:
        assert 0 < first.active.sum() < setup.model.particle_count  # some left through the open side
    history = reference.get_contact_history()
    for backend, state, _ in others:
        assert np.array_equal(state.positions, first.positions)
        assert np.array_equal(state.velocities, first.velocities)
        assert np.array_equal(state.active, first.active)
        other = backend.get_contact_history()
        for key in ("pair_i", "pair_j", "pair_spring", "wall_spring"):
            assert np.array_equal(other[key], history[key]), key


def test_blocks_really_cross(rng, monkeypatch):
    """With several blocks, forces across a block boundary matter: dropping the crossing reactions
    changes the result (so the test above compares something)."""
    setup = _heap(rng)
    _, honest, _ = _run(setup, 150, fused_blocks=3)
    real = cpu_module.block_reach

    def without_crossing_reactions(nbr_start, nbr_j, block_start):
        cross_from, reached_to = real(nbr_start, nbr_j, block_start)
        assert (reached_to > block_start[:-1])[1:].all()  # later blocks do receive reactions
        return cross_from, block_start[:-1].copy()

    monkeypatch.setattr(cpu_module, "block_reach", without_crossing_reactions)
    _, broken, _ = _run(setup, 150, fused_blocks=3)
    assert not np.allclose(honest.velocities, broken.velocities, atol=1e-3)


def test_fused_and_three_pass_paths_agree(rng):
    """The fused step and the three-pass path (kept for colliders; here forced by not renumbering) run
    the same physics: same grains left, positions within float32 rounding drift."""
    setup = _heap(rng, open_sides=("-x",))
    fused, a, _ = _run(setup, 300)
    plain, b, _ = _run(setup, 300, reorder=False)
    assert fused.reorder and not plain.reorder
    assert a.active.tolist() == b.active.tolist()
    np.testing.assert_allclose(a.positions, b.positions, rtol=0, atol=2e-4)
    np.testing.assert_allclose(a.velocities, b.velocities, rtol=0, atol=5e-2)


def test_list_holds_exactly_the_pairs_within_reach(rng):
    """The run-based cell scan lists every pair closer than r_i + r_j + skin once, and no other."""
    n = 2500
    positions = rng.uniform(-0.5, 0.5, (n, 3)).astype(np.float32)
    radius = rng.uniform(0.01, 0.02, n).astype(np.float32)
    active = np.ones(n, np.uint8)
    active[::17] = 0
    skin = 0.01
    nb = NeighborListCpu(n)
    nb.bin(positions, radius, active, skin)
    nb.build(positions, radius, in_cell_order=False)
    i, j = nb.pairs()
    listed = {(min(a, b), max(a, b)) for a, b in zip(i.tolist(), j.tolist())}
    assert len(listed) == nb.pair_count  # each pair once
    keep = np.flatnonzero(active)
    inflated = brute_force_pairs(positions[keep].astype(np.float64), radius[keep].astype(np.float64) + skin / 2)
    expected = {(int(keep[a]), int(keep[b])) for a, b in inflated}
    assert listed == expected


def test_grains_near_walls_bounce_and_leave_through_open_sides(rng, monkeypatch):
    """Grains thrown at the walls within one list's lifetime: closed sides push them back (no grain
    ends outside a closed side), the open side lets them out, as in the three-pass path that tests
    every grain against the walls (no grain marked interior)."""
    n = 1500
    positions = rng.uniform(-0.25, 0.25, (n, 3))
    velocities = rng.normal(0.0, 3.0, (n, 3))
    setup = scene(positions, np.full(n, 0.01), velocities=velocities, lo=(-0.3, -0.3, -0.3), hi=(0.3, 0.3, 0.3),
                  open_sides=("+y",), stiffness=1.0e4, dt=5e-5, rotation=False, integrator="euler")
    fused, state, _ = _run(setup, 2000)
    assert 0 < fused.interior.sum() < n  # the wall pass skipped some grains, not all
    monkeypatch.setattr(cpu_kernels, "mark_interior", lambda pos, radius, active, lo, hi, margin, interior: None)
    plain, reference, _ = _run(setup, 2000, reorder=False)
    assert not plain.interior.any()
    inside = state.active.astype(bool)
    assert 0 < inside.sum() < n
    assert state.active.tolist() == reference.active.tolist()
    lo, hi = np.array([-0.3, -0.3, -0.3]), np.array([0.3, 0.3, 0.3])
    assert (state.positions[inside] > lo - 0.01).all() and (state.positions[inside] < hi + 0.01).all()
    assert (state.positions[~inside][:, 1] > 0.3).all()  # the ones gone left through +y
    np.testing.assert_allclose(state.positions, reference.positions, rtol=0, atol=1e-3)


def test_displacement_bound_changes_no_rebuild(rng):
    """Skipping the displacement pass while the speed bound stays below half the skin gives the very
    same rebuilds and bits as measuring it every step."""
    setup = _heap(rng)
    _, bounded, timings = _run(setup, 400)
    backend = BackendCpu(setup.model)
    backend.rounding_per_step = 1.0
    backend.set_state(setup.state)
    measured_timings = backend.step(400)
    measured = backend.get_state()
    assert 1 < timings.rebuilds == measured_timings.rebuilds
    assert np.array_equal(bounded.positions, measured.positions)
    assert np.array_equal(bounded.velocities, measured.velocities)


def test_full_law_same_bits_for_any_number_of_blocks(rng):
    """The full law's fused pass (rotation, rolling resistance, cohesion, velocity Verlet) gives the same
    bits for 1, 2 and 5 blocks, and the same physics as its five-pass path (not renumbered)."""
    n = 2500
    positions = rng.uniform([-0.3, -1.0, -0.3], [0.3, -0.6, 0.3], (n, 3))
    setup = scene(positions, rng.uniform(0.006, 0.009, n), velocities=rng.normal(0.0, 0.5, (n, 3)),
                  gravity=(0.0, -9.81, 0.0), lo=(-0.3, -1.0, -0.3), hi=(0.3, 1.0, 0.3), friction=0.5,
                  rolling_friction=0.2, cohesion=2.0e3, stiffness=2.0e3, dt=1e-4)
    runs = [_run(setup, 200, fused_blocks=blocks) for blocks in (1, 2, 5)]
    (reference, first, timings), *others = runs
    assert reference.full and reference.rolling and reference.reorder
    assert timings.fused_s > 0 and timings.detect_s == 0
    assert len(reference.contact_pairs()) > 50
    history = reference.get_contact_history()
    for backend, state, _ in others:
        for name in ("positions", "velocities", "angular_velocities", "orientations"):
            assert np.array_equal(getattr(state, name), getattr(first, name)), name
        other = backend.get_contact_history()
        for key in ("pair_i", "pair_spring", "pair_rolling", "wall_spring", "acceleration"):
            assert np.array_equal(other[key], history[key]), key
    _, plain, _ = _run(setup, 200, reorder=False)
    np.testing.assert_allclose(first.positions, plain.positions, rtol=0, atol=2e-4)
    np.testing.assert_allclose(first.angular_velocities, plain.angular_velocities, rtol=0, atol=0.5)


def test_full_law_lean_pass_has_the_bits_of_the_general_one(rng):
    """A scene without cohesion or law tables steps with the lean instance of the full law's fused pass
    (the law compiled without those switches and inlined); the general instance gives the same bits on
    it, on one block and on three. A scene with cohesion takes the general instance."""
    from engine.backends.cpu_fused import full_law_pass

    n = 2500
    positions = rng.uniform([-0.3, -1.0, -0.3], [0.3, -0.6, 0.3], (n, 3))
    kwargs = dict(velocities=rng.normal(0.0, 0.5, (n, 3)), gravity=(0.0, -9.81, 0.0), lo=(-0.3, -1.0, -0.3),
                  hi=(0.3, 1.0, 0.3), friction=0.5, rolling_friction=0.2, stiffness=2.0e3, dt=1e-4)
    radius = rng.uniform(0.006, 0.009, n)
    setup = scene(positions, radius, **kwargs)
    sticky = scene(positions, radius, cohesion=2.0e3, **kwargs)
    assert BackendCpu(setup.model).full_pass is full_law_pass(lean=True)
    assert BackendCpu(sticky.model).full_pass is full_law_pass(lean=False)
    for blocks in (1, 3):
        lean, lean_state, _ = _run(setup, 150, fused_blocks=blocks)
        general, general_state, _ = _run(setup, 150, fused_blocks=blocks, full_pass=full_law_pass(lean=False))
        assert len(lean.contact_pairs()) > 50
        for name in ("positions", "velocities", "angular_velocities", "orientations"):
            assert np.array_equal(getattr(lean_state, name), getattr(general_state, name)), name
        for key in ("pair_i", "pair_spring", "pair_rolling", "wall_spring", "acceleration"):
            assert np.array_equal(lean.get_contact_history()[key], general.get_contact_history()[key]), key


def test_prepare_primes_verlet_with_the_same_bits(rng):
    """``prepare`` computes velocity Verlet's first accelerations (the set-up LAMMPS times outside its
    loop): the steps after it report no set-up and give the bits of steps without it, whose first step
    reports the priming as set-up, not as integration."""
    n = 1500
    positions = rng.uniform([-0.3, -1.0, -0.3], [0.3, -0.6, 0.3], (n, 3))
    setup = scene(positions, rng.uniform(0.006, 0.009, n), velocities=rng.normal(0.0, 0.5, (n, 3)),
                  gravity=(0.0, -9.81, 0.0), lo=(-0.3, -1.0, -0.3), hi=(0.3, 1.0, 0.3), friction=0.5,
                  rolling_friction=0.2, stiffness=2.0e3, dt=1e-4)
    plain, plain_state, plain_timings = _run(setup, 60)
    assert plain.full and not plain.euler
    assert plain_timings.setup_s > 0
    prepared = BackendCpu(setup.model)
    prepared.set_state(setup.state)
    prepared.prepare()
    assert prepared.primed
    timings = prepared.step(60)
    assert timings.setup_s == 0
    state = prepared.get_state()
    for name in ("positions", "velocities", "angular_velocities", "orientations"):
        assert np.array_equal(getattr(state, name), getattr(plain_state, name)), name
