"""Contact detection equals a brute-force oracle, each pair once (the paper's semantics)."""

from __future__ import annotations

import numpy as np
import pytest

from engine.backends.cpu import BackendCpu
from engine.cli.contacts import count_contacts
from engine.cli.main import main
from engine.ply import write_points
from engine.neighbors.brute import brute_force_pairs

from .conftest import scene


def _states(rng):
    n = 1500
    out = {}
    out["uniform polydisperse"] = (rng.uniform(0, 1, (n, 3)), rng.uniform(0.005, 0.03, n))
    # Radius ratio 120:1, log-uniform, so both tiny and huge spheres are common.
    out["ratio 120:1"] = (rng.uniform(0, 1, (n, 3)), np.exp(rng.uniform(np.log(0.0005), np.log(0.06), n)))
    centres = rng.uniform(0, 1, (6, 3))
    out["clusters"] = (centres[rng.integers(0, 6, n)] + rng.normal(0, 0.02, (n, 3)), rng.uniform(0.002, 0.01, n))
    base = rng.uniform(0, 1, (n // 2, 3))
    out["coincident centres"] = (np.concatenate([base, base[: n // 4], base[: n // 4]]),
                                 rng.uniform(0.001, 0.02, n // 2 + 2 * (n // 4)))
    out["far from origin"] = (rng.uniform(0, 1, (n, 3)) + np.array([1000.0, -2000.0, 500.0]),
                              rng.uniform(0.005, 0.03, n))
    # Two-radius lattice: spheres of r on a cubic lattice touching exactly, r/2 in the cube centres.
    r = 0.01
    g = np.stack(np.meshgrid(*[np.arange(8)] * 3, indexing="ij"), -1).reshape(-1, 3) * 2 * r
    small = g[:343] + r
    out["two-radius lattice"] = (np.concatenate([g, small]), np.concatenate([np.full(len(g), r), np.full(len(small), r / 2)]))
    return out


@pytest.mark.parametrize("name", ["uniform polydisperse", "ratio 120:1", "clusters", "coincident centres",
                                  "far from origin", "two-radius lattice"])
def test_contacts_equal_brute_force(name, rng):
    positions, radius = _states(rng)[name]
    positions = positions.astype(np.float32)
    radius = radius.astype(np.float32)
    setup = scene(positions, radius, lo=positions.min(0) - 1, hi=positions.max(0) + 1)
    backend = BackendCpu(setup.model)
    backend.set_state(setup.state)
    pairs = backend.contact_pairs()
    found = {tuple(p) for p in pairs.tolist()}
    assert len(found) == len(pairs), "a pair was resolved more than once"
    assert all(i < j for i, j in found)
    oracle = brute_force_pairs(positions, radius)
    # Both decide in float64 from the same float32 inputs, so even exact touches agree.
    assert found == oracle
    assert len(oracle) > 50, "the state should have plenty of contacts"
    counts = backend.contact_counts()
    expected = np.zeros(len(radius), np.int64)
    for i, j in oracle:
        expected[i] += 1
        expected[j] += 1
    assert np.array_equal(counts, expected)


def test_live_verlet_list_finds_every_contact_while_moving(rng):
    """The skinned list reused between rebuilds finds exactly the contacts of the current positions."""
    n = 800
    positions = rng.uniform(0.2, 0.8, (n, 3)).astype(np.float32)
    velocities = rng.normal(0, 2.0, (n, 3)).astype(np.float32)
    radius = rng.uniform(0.01, 0.03, n).astype(np.float32)
    setup = scene(positions, radius, velocities=velocities, lo=(0, 0, 0), hi=(1, 1, 1), stiffness=200.0,
                  gravity=(0, -9.81, 0), rebuild_interval=25)
    backend = BackendCpu(setup.model)
    backend.set_state(setup.state)
    checked = 0
    for _ in range(12):
        backend.step(7)
        state = backend.get_state()
        live = {tuple(p) for p in backend.live_contact_pairs().tolist()}
        assert live == brute_force_pairs(state.positions, radius)
        checked += len(live)
    assert checked > 100


def test_contacts_cli_matches_counts(tmp_path, rng):
    positions = rng.uniform(0, 1, (500, 3)).astype(np.float32)
    radius = rng.uniform(0.01, 0.05, 500).astype(np.float32)
    write_points(tmp_path / "state.ply", {"x": positions[:, 0], "y": positions[:, 1], "z": positions[:, 2],
                                          "radius": radius})
    assert main(["contacts", str(tmp_path / "state.ply"), "--out", str(tmp_path / "counts.npy")]) == 0
    counts = np.load(tmp_path / "counts.npy")
    assert counts.dtype == np.int32 and counts.shape == (500,)
    assert np.array_equal(counts, count_contacts(positions, radius))
    oracle = brute_force_pairs(positions, radius)
    assert int(counts.sum()) == 2 * len(oracle)
