"""The ray-traced contact detection (engine/backends/rt_detect.py) against the brute-force oracle.

Runs on any device with Vulkan ray tracing: in CI that is Mesa's lavapipe (Mesa ≥ 24.1, installed by
scripts/install_lavapipe.sh), exact but slow, so the states are a few thousand spheres. Positions
are multiples of 1/16 and radii exact binary fractions, so the float32 pair test on the device and
the float64 oracle agree exactly: every pair must match, with no tolerance.
"""

from __future__ import annotations

import numpy as np
import pytest

from engine.errors import MochiError
from tests.engine.conftest import brute_force_pairs

rt_detect = pytest.importorskip("engine.backends.rt_detect")


@pytest.fixture(scope="module", params=rt_detect.ENTRIES)
def search(request, rt_device):
    if not (rt_device.ray_query if request.param == "ray_query" else rt_device.pipeline):
        pytest.skip(f"{rt_device.describe()} has no {request.param}")
    return rt_detect.RayTracedPairs(rt_device, request.param)


def _grid(values: np.ndarray) -> np.ndarray:
    return np.round(values * 16.0) / 16.0


def two_radii(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    radius = np.where(rng.random(n) < 0.5, 1.0, 0.5)
    side = ((4 / 3 * np.pi * radius**3).sum() / 0.5) ** (1 / 3)
    return _grid(rng.uniform(0, side, (n, 3))), radius


def radii_120_to_1(seed=1):
    """A few spheres of radius 7.5 among many of 1/16 (ratio 120), touching and not."""
    rng = np.random.default_rng(seed)
    big = _grid(rng.uniform(0, 30, (6, 3)))
    small = _grid(rng.uniform(-2, 32, (2500, 3)))
    return np.concatenate([big, small]), np.concatenate([np.full(6, 7.5), np.full(2500, 1 / 16)])


def clustered(seed=2):
    rng = np.random.default_rng(seed)
    centres = rng.uniform(0, 40, (8, 3))
    positions = np.concatenate([c + rng.normal(0, 1.5, (300, 3)) for c in centres])
    return _grid(positions), np.where(rng.random(len(positions)) < 0.3, 0.5, 0.25)


def coincident(seed=3):
    """Pairs and triples of spheres at the very same centre (distance 0 touches)."""
    positions, radius = two_radii(600, seed)
    return np.concatenate([positions, positions[:200], positions[:50]]), np.concatenate(
        [radius, radius[:200], radius[:50] * 0.5])


def far_from_origin(seed=4):
    positions, radius = two_radii(2000, seed)
    return positions + np.array([1e4, -2.5e3, 7e3]), radius


def touching_lattice():
    """A cubic lattice of spacing 1 and radius 1/2: every neighbour touches exactly (|d| = r_i + r_j)."""
    axis = np.arange(12, dtype=np.float64)
    positions = np.stack(np.meshgrid(axis, axis, axis, indexing="ij"), axis=-1).reshape(-1, 3)
    return positions, np.full(len(positions), 0.5)


STATES = {"two_radii": two_radii, "radii_120_to_1": radii_120_to_1, "clustered": clustered,
          "coincident": coincident, "far_from_origin": far_from_origin, "touching_lattice": touching_lattice}


def _as_set(i, j):
    return set(zip(i.tolist(), j.tolist()))


@pytest.mark.parametrize("state", sorted(STATES))
def test_pairs_equal_the_brute_force_oracle(search, state):
    positions, radius = STATES[state]()
    search.build(positions, radius)
    i, j = search.pairs()
    expected = brute_force_pairs(positions, radius)
    assert len(i) == len(expected)  # no pair twice
    assert _as_set(i, j) == expected
    if state == "touching_lattice":
        assert len(expected) == 3 * 12 * 12 * 11  # the oracle itself sees every exact touch


def test_a_skin_finds_every_pair_within_reach(search):
    """With a skin s the list holds every pair with |d| ≤ r_i + r_j + s: the pairs that touch when every
    radius grows by s/2 (0.125 here, exact in binary)."""
    positions, radius = two_radii(seed=9)
    search.build(positions, radius, skin=0.25)
    i, j = search.pairs()
    expected = brute_force_pairs(positions, radius + 0.125)
    assert _as_set(i, j) == expected
    assert len(expected) > len(brute_force_pairs(positions, radius))


def test_both_entry_shapes_give_the_same_bits(rt_device):
    if not (rt_device.ray_query and rt_device.pipeline):
        pytest.skip(f"{rt_device.describe()} lacks one of the two entry shapes")
    positions, radius = clustered()
    results = [rt_detect.rt_contact_pairs(positions, radius, entry=entry, device=rt_device)
               for entry in rt_detect.ENTRIES]
    for a, b in zip(results[0], results[1]):
        assert np.array_equal(a, b)


def test_refit_after_motion_equals_a_rebuild(search):
    positions, radius = two_radii(seed=5)
    search.build(positions, radius)
    moved = _grid(positions + np.random.default_rng(6).uniform(-0.2, 0.2, positions.shape))
    search.refit(moved)
    refitted = search.pairs()
    search.build(moved, radius)
    rebuilt = search.pairs()
    assert all(np.array_equal(a, b) for a, b in zip(refitted, rebuilt))
    assert _as_set(*refitted) == brute_force_pairs(moved, radius)
    assert _as_set(*refitted) != brute_force_pairs(positions, radius)  # the motion changed the contacts


def test_repeated_queries_give_the_same_bits(search):
    positions, radius = two_radii(seed=7)
    search.build(positions, radius)
    first = search.pairs()
    second = search.pairs()
    assert all(np.array_equal(a, b) for a, b in zip(first, second))


def test_a_full_pair_buffer_is_grown_not_truncated(rt_device, monkeypatch):
    monkeypatch.setattr(rt_detect, "PAIRS_PER_SPHERE", 0)  # start with only 1,024 slots
    positions, radius = touching_lattice()  # 4,752 pairs
    search = rt_detect.RayTracedPairs(rt_device)
    search.build(positions, radius)
    assert search._capacity == 1024
    i, j = search.pairs()
    assert _as_set(i, j) == brute_force_pairs(positions, radius)
    assert search._capacity >= len(i)


def test_morton_order_is_a_permutation_along_space():
    positions, _ = two_radii(500, seed=8)
    order = rt_detect.morton_order(positions)
    assert np.array_equal(np.sort(order), np.arange(500))
    steps = np.linalg.norm(np.diff(positions[order], axis=0), axis=1).mean()
    assert steps < 0.5 * np.linalg.norm(np.diff(positions, axis=0), axis=1).mean()


@pytest.mark.parametrize("positions, radius, skin", [
    (np.zeros((3, 2)), np.ones(3), 0.0),
    (np.zeros((3, 3)), np.ones(2), 0.0),
    (np.array([[0.0, 0.0, np.nan]]), np.ones(1), 0.0),
    (np.zeros((1, 3)), np.zeros(1), 0.0),
    (np.zeros((1, 3)), np.ones(1), -1.0),
    (np.zeros((1, 3)), np.ones(1), np.inf),
])
def test_bad_spheres_are_refused_in_one_sentence(search, positions, radius, skin):
    with pytest.raises(MochiError) as info:
        search.build(positions, radius, skin=skin)
    assert str(info.value).endswith(".") and "\n" not in str(info.value)


def test_an_unknown_device_kind_is_refused():
    from engine.backends.rt_device import open_rt_device
    with pytest.raises(MochiError, match="Unknown ray-tracing device 'opengl'"):
        open_rt_device("opengl")


def test_lavapipe_is_known_as_a_software_device(rt_device):
    if "llvmpipe" not in rt_device.adapter.lower():
        pytest.skip(f"not lavapipe: {rt_device.adapter}")
    assert rt_device.is_software
