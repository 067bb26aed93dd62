"""A packing answers while it runs (engine.packing.progress): it records its stage and share done between
chunks, stops at the first chunk after a cancel, and the chunking changes no bit of the result."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import trimesh

import engine.packing.progress as progress_module
from engine.packing import PackCancelled, PackProgress, pack_mesh, pack_mesh_file
from engine.packing.fill import _clear_of
from engine.packing.progress import run_chunked
from engine.packing.regions import safe_groups

ROOT = Path(__file__).resolve().parents[2]
BUNNY = ROOT / "presets" / "bunny.obj"


@pytest.fixture
def small_chunks(monkeypatch):
    """Chunks of 256 items whatever they cost, so a test-sized packing runs in many chunks."""
    monkeypatch.setattr(progress_module, "FIRST_CHUNK", 256)
    monkeypatch.setattr(progress_module, "CHUNK_GROWTH", 1.0)


class CancelAfter(PackProgress):
    """A progress that asks to cancel once ``after`` chunks are done, and counts the chunks it sees then."""

    def __init__(self, after: int):
        super().__init__()
        self.after = after
        self.stages: list[str] = []

    def begin(self, stage: str) -> None:
        self.stages.append(stage)
        super().begin(stage)

    def advance(self, fraction: float) -> None:
        if self.chunks + 1 == self.after:
            self.request_cancel()
        super().advance(fraction)


def test_chunked_packing_gives_the_same_bits_and_reports_its_stages(small_chunks):
    plain = pack_mesh_file(BUNNY, radius=0.02, fit=0.5, small_ratio=0.5)
    progress = CancelAfter(after=10 ** 9)
    chunked = pack_mesh_file(BUNNY, radius=0.02, fit=0.5, small_ratio=0.5, progress=progress)
    assert chunked.positions.tobytes() == plain.positions.tobytes()
    assert chunked.radius.tobytes() == plain.radius.tobytes()
    assert progress.chunks > 20  # every long loop went in chunks
    assert progress.fraction == 1.0
    for stage in ("large grains: distances to the surface", "grouping the sites", "testing which sites are inside",
                  "small grains: laying out the lattice", "keeping the small grains clear of the large"):
        assert stage in progress.stages


@pytest.mark.parametrize("after", [1, 7, 25])
def test_a_cancel_stops_the_packing_at_the_next_chunk(small_chunks, after):
    progress = CancelAfter(after=after)
    with pytest.raises(PackCancelled):
        pack_mesh_file(BUNNY, radius=0.02, fit=0.5, progress=progress)
    assert progress.chunks == after  # not one chunk more


def test_a_cancel_before_the_start_packs_nothing():
    progress = PackProgress()
    progress.request_cancel()
    with pytest.raises(PackCancelled):
        pack_mesh_file(BUNNY, radius=0.02, fit=0.5, progress=progress)
    assert progress.chunks == 0


def test_a_count_search_says_which_radius_it_packs(small_chunks):
    progress = CancelAfter(after=10 ** 9)
    sphere = trimesh.creation.icosphere(3, radius=0.5)
    result = pack_mesh(sphere.vertices, sphere.faces, count=3000, progress=progress)
    assert progress.attempts_most == 8 and 1 < progress.attempt <= 8
    assert "radius" in progress.line() and "%" in progress.line()
    assert abs(result.particle_count - 3000) < 300


def test_chunks_aim_at_a_fixed_time():
    """Each chunk is scaled towards CHUNK_SECONDS by the last one's time, at most CHUNK_GROWTH at once."""
    clock_now = [0.0]
    sizes = []
    cost = {"per_item": 1e-4}  # a chunk of 1,000 items takes CHUNK_SECONDS

    def run(begin, end):
        sizes.append(end - begin)
        clock_now[0] += (end - begin) * cost["per_item"]

    progress = PackProgress()
    run_chunked(20_000, run, progress, clock=lambda: clock_now[0])
    assert sizes[0] == progress_module.FIRST_CHUNK
    assert sum(sizes) == 20_000 and progress.fraction == 1.0 and progress.chunks == len(sizes)
    assert all(size <= 1000 for size in sizes[1:])  # 2,048 took 0.2 s: the next ones aim at 0.1 s
    assert all(abs(size - 1000) <= 1 for size in sizes[1:-1])

    sizes.clear()
    cost["per_item"] = 1e-8  # cheap items: each chunk at most CHUNK_GROWTH times the last
    run_chunked(10 ** 6, run, PackProgress(), clock=lambda: clock_now[0])
    assert sizes[:4] == [2048, 8192, 32768, 131072]


def test_one_call_without_progress():
    calls = []
    run_chunked(10 ** 7, lambda begin, end: calls.append((begin, end)), None)
    assert calls == [(0, 10 ** 7)]


def test_chunked_grouping_and_clearance_equal_one_pass(small_chunks):
    rng = np.random.default_rng(3)
    dims = np.array([30, 30, 30], np.int64)
    flat_ids = np.sort(rng.choice(27_000, 9_000, replace=False)).astype(np.int64)
    k = flat_ids % 30
    j = (flat_ids // 30) % 30
    i = flat_ids // 900
    positions = np.stack([i, j, k], axis=1).astype(np.float64) + rng.normal(0, 0.05, (9_000, 3))
    distances = rng.uniform(0.0, 3.0, 9_000)
    one = safe_groups(flat_ids, dims, positions, distances)
    chunked = safe_groups(flat_ids, dims, positions, distances, progress=PackProgress())
    assert np.array_equal(one[0], chunked[0]) and np.array_equal(one[1], chunked[1])
    assert one[1].size < 9_000  # some sites were joined

    large = positions[::2] + rng.normal(0, 0.3, positions[::2].shape)
    small = positions[1::2]
    plain = _clear_of(small, large, 0.6)
    assert 0 < len(plain) < len(small)
    assert np.array_equal(_clear_of(small, large, 0.6, PackProgress()), plain)
