"""The neighbour-search interface: every search equals the brute-force oracle; lists grow on overflow."""

from __future__ import annotations

import numpy as np
import pytest

from engine.contacts import contact_pairs
from engine.errors import MochiError
from engine.neighbors import NEIGHBOR_SEARCH_NAMES, make_neighbor_search
from engine.neighbors.brute import brute_force_pairs, near_ties, pairs_within

from .test_contacts import _states

HOST_SEARCHES = ("brute", "cpu")


def _rt_search():
    """'rt' where a device with ray tracing exists (lavapipe in CI), else skipped with the reason."""
    try:
        make_neighbor_search("rt")
    except MochiError as exc:
        return pytest.param("rt", marks=pytest.mark.skip(reason=str(exc)))
    return "rt"


#: Every search that runs on this machine: the host ones and the ray-traced one.
SEARCHES = HOST_SEARCHES + (_rt_search(),)


@pytest.mark.parametrize("name", ["uniform polydisperse", "ratio 120:1", "coincident centres", "far from origin",
                                  "two-radius lattice"])
@pytest.mark.parametrize("search", SEARCHES)
def test_contacts_equal_the_oracle(search, name, rng):
    positions, radius = _states(rng)[name]
    positions, radius = positions.astype(np.float32), radius.astype(np.float32)
    pairs = contact_pairs(positions, radius, search)
    assert pairs.dtype == np.int32 and np.all(pairs[:, 0] < pairs[:, 1])
    assert np.array_equal(pairs, np.unique(pairs, axis=0)), "pairs sorted, each once"
    oracle = brute_force_pairs(positions, radius)
    assert {tuple(p) for p in pairs.tolist()} == oracle and len(oracle) > 50


@pytest.mark.parametrize("search", SEARCHES)
def test_skin_list_holds_every_pair_within_reach(search, rng):
    positions = rng.uniform(0, 1, (1200, 3)).astype(np.float32)
    radius = rng.uniform(0.005, 0.02, 1200).astype(np.float32)
    skin = 0.01
    neighbors = make_neighbor_search(search).allocate(positions, radius, skin=skin)
    found = {tuple(p) for p in neighbors.candidates().tolist()}
    expected = {tuple(p) for p in pairs_within(positions, radius, skin).tolist()}
    # The cell list sums r_i + skin + r_j in another order: a pair at the very reach may go either way.
    tight = {tuple(p) for p in pairs_within(positions, radius, skin * (1 - 1e-6)).tolist()}
    loose = {tuple(p) for p in pairs_within(positions, radius, skin * (1 + 1e-6)).tolist()}
    assert tight <= found <= loose and len(loose - tight) < 3 and len(expected) > 100
    assert neighbors.count == len(found) and neighbors.capacity > neighbors.count and not neighbors.overflow


def test_update_keeps_the_list_until_half_the_skin_is_used(rng):
    positions = rng.uniform(0, 1, (500, 3)).astype(np.float32)
    radius = np.full(500, 0.02, np.float32)
    search = make_neighbor_search("cpu")
    neighbors = search.allocate(positions, radius, skin=0.01)
    moved = positions.copy()
    moved[0] += np.float32(0.004)  # 0.004·√3 ≈ 0.0069 > half the skin
    small = positions.copy()
    small[0, 0] += np.float32(0.004)  # 0.004 < 0.005
    assert search.update(neighbors, small) is neighbors
    rebuilt = search.update(neighbors, moved)
    assert rebuilt is not neighbors and rebuilt.builds == 2
    assert {tuple(p) for p in rebuilt.contacts(moved).tolist()} == brute_force_pairs(moved, radius)


@pytest.mark.parametrize("search", SEARCHES)
def test_overflow_is_flagged_then_acted_on(search, rng):
    """A list allocated over a sparse state overflows once the grains crowd together; the flag is
    set (not an exception) and ``update_or_allocate`` allocates again with room."""
    radius = np.full(400, 0.02, np.float32)
    sparse = rng.uniform(0, 4, (400, 3)).astype(np.float32)
    dense = rng.uniform(0, 0.4, (400, 3)).astype(np.float32)
    finder = make_neighbor_search(search)
    neighbors = finder.allocate(sparse, radius, capacity_margin=1.0)
    updated = finder.update(neighbors, dense)
    assert updated.overflow and updated.count > updated.capacity == neighbors.capacity
    assert len(updated.candidates()) == updated.capacity
    grown = finder.update_or_allocate(neighbors, dense)
    assert not grown.overflow and grown.capacity >= grown.count
    assert {tuple(p) for p in grown.contacts(dense).tolist()} == brute_force_pairs(dense, radius)


def test_inactive_grains_have_no_pairs(rng):
    positions = rng.uniform(0, 0.3, (300, 3)).astype(np.float32)
    radius = np.full(300, 0.03, np.float32)
    active = rng.uniform(size=300) > 0.3
    for search in HOST_SEARCHES:
        pairs = make_neighbor_search(search).allocate(positions, radius, active=active).contacts(positions)
        expected = {(i, j) for i, j in brute_force_pairs(positions, radius) if active[i] and active[j]}
        assert {tuple(p) for p in pairs.tolist()} == expected


def test_near_ties_are_found_by_the_oracle():
    radius = np.full(2, 0.5, np.float32)
    positions = np.array([[0, 0, 0], [1, 0, 0]], np.float32)  # exactly touching
    assert brute_force_pairs(positions, radius) == {(0, 1)}
    assert near_ties(positions, radius) == {(0, 1)}


def test_names_and_refusals():
    assert set(NEIGHBOR_SEARCH_NAMES) >= {"brute", "cpu", "cuda", "optix", "auto", "rt"}
    with pytest.raises(MochiError, match="Unknown neighbour search 'kd'"):
        make_neighbor_search("kd")
    with pytest.raises(MochiError, match="skin 0"):
        make_neighbor_search("cuda").allocate(np.zeros((2, 3)), np.ones(2), skin=0.1)


def test_contacts_cli_brute(tmp_path, rng):
    from engine.cli.main import main
    from engine.ply import write_points

    positions = rng.uniform(0, 1, (400, 3)).astype(np.float32)
    radius = rng.uniform(0.01, 0.05, 400).astype(np.float32)
    write_points(tmp_path / "s.ply", {"x": positions[:, 0], "y": positions[:, 1], "z": positions[:, 2],
                                      "radius": radius})
    counts = {}
    for search in ("brute", "cpu"):
        assert main(["contacts", str(tmp_path / "s.ply"), "--out", str(tmp_path / f"{search}.npy"),
                     "--backend", search]) == 0
        counts[search] = np.load(tmp_path / f"{search}.npy")
    assert np.array_equal(counts["brute"], counts["cpu"]) and counts["cpu"].sum() > 0
