"""Full bakes of the paper's freefall and rotating-gravity presets at 100k particles on each GPU backend,
against the CPU bake of the same scene (issue: prove the GPU backends correct)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from engine.bake import bake
from engine.cache import frame_path
from engine.ply import read_points
from engine.preset import load_preset
from engine.scene import setup_from_preset

from .conftest import make_gpu_backend

PRESETS = Path(__file__).resolve().parents[2] / "presets"
PARTICLES = 100_000
pytestmark = pytest.mark.slow


def _bake(preset: str, backend: str, folder: Path):
    setup = setup_from_preset(load_preset(PRESETS / f"{preset}.toml"), particles=PARTICLES)
    frames = setup.frames
    bake(setup, folder, frames=frames, backend=backend)
    columns = read_points(frame_path(folder, frames))
    return setup, np.stack([columns["x"], columns["y"], columns["z"]], axis=1), columns["active"]


@pytest.fixture(scope="module")
def cpu_bakes(tmp_path_factory):
    return {}


@pytest.mark.parametrize("preset", ["freefall", "rotating_gravity"])
def test_preset_bake_matches_cpu(gpu_name, preset, cpu_bakes, tmp_path_factory):
    setup = setup_from_preset(load_preset(PRESETS / f"{preset}.toml"), particles=PARTICLES)
    make_gpu_backend(gpu_name, setup.model)  # skips with the reason when the backend cannot start
    if preset not in cpu_bakes:
        cpu_bakes[preset] = _bake(preset, "cpu", tmp_path_factory.mktemp(f"{preset}-cpu"))
    _, cpu_positions, cpu_active = cpu_bakes[preset]
    setup, positions, active = _bake(preset, gpu_name, tmp_path_factory.mktemp(f"{preset}-{gpu_name}"))
    n = setup.model.particle_count
    assert positions.shape == (n, 3) and np.isfinite(positions).all()
    assert int(active.sum()) == int(cpu_active.sum()) == n  # closed box: nobody leaves
    # Where the grains are (mean and 95th percentile along each axis; y is the pile height of the
    # freefall) against the CPU bake, within 2%.
    for axis in range(3):
        for stat in (np.mean, lambda v: np.percentile(v, 95)):
            expected = stat(cpu_positions[:, axis])
            assert abs(stat(positions[:, axis]) - expected) <= 0.02 * expected, (axis, stat)
    moved = np.abs(positions - setup.state.positions).max()
    assert moved > 0.05


def _sand_pile(particles: int):
    return setup_from_preset(load_preset(PRESETS / "sand_pile.toml"), particles=particles)


def test_sand_pile_bakes_with_static_friction(gpu_name, tmp_path):
    """The friction preset (friction_model 'spring') bakes on the GPU (it was refused) and piles like
    the CPU bake: the heap's height within 5%."""
    setup = _sand_pile(5000)
    assert setup.model.physics.friction_model == "spring"
    make_gpu_backend(gpu_name, setup.model)
    heights = {}
    for backend in ("cpu", gpu_name):
        folder = tmp_path / backend
        bake(_sand_pile(5000), folder, frames=setup.frames, backend=backend)
        columns = read_points(frame_path(folder, setup.frames))
        heights[backend] = float(np.percentile(columns["y"], 95))
    assert abs(heights[gpu_name] - heights["cpu"]) <= 0.05 * heights["cpu"], heights


def test_cuda_resume_is_bit_exact_with_springs(tmp_path):
    """A CUDA-grid bake of the sand pile resumed from a cached frame ends with the same bits as one
    baked straight through (springs restored from the cache, slots reordered from model order)."""
    _assert_cuda_resume_is_bit_exact(lambda: _sand_pile(3000), 12, tmp_path)


def _assert_cuda_resume_is_bit_exact(make_setup, frames: int, folder: Path) -> None:
    """A CUDA-grid bake resumed halfway ends with the bits of one baked straight through."""
    make_gpu_backend("cuda", make_setup().model)
    bake(make_setup(), folder / "straight", frames=frames, backend="cuda")
    bake(make_setup(), folder / "resumed", frames=frames // 2, backend="cuda")
    bake(None, folder / "resumed", frames=frames, backend="cuda", resume=True)
    straight = read_points(frame_path(folder / "straight", frames))
    resumed = read_points(frame_path(folder / "resumed", frames))
    for column in ("x", "y", "z"):
        assert np.array_equal(straight[column], resumed[column]), column


def _bowl_pour(particles: int):
    return setup_from_preset(load_preset(PRESETS / "bowl_pour.toml"), particles=particles)


def test_bowl_pour_bakes_with_static_friction(gpu_name, tmp_path):
    """The bowl_pour preset (friction_model 'spring', a frictional mesh collider) bakes on the GPU (it
    was refused) and fills the bowl like the CPU bake: the grains inside it within 5%."""
    setup = _bowl_pour(2000)
    assert setup.model.physics.friction_model == "spring" and setup.model.colliders.colliders[0].friction > 0
    make_gpu_backend(gpu_name, setup.model)
    frames = 24
    inside = {}
    for backend in ("cpu", gpu_name):
        folder = tmp_path / backend
        bake(_bowl_pour(2000), folder, frames=frames, backend=backend)
        columns = read_points(frame_path(folder, frames))
        centre = np.array([0.3, 0.32, 0.3])  # the bowl's rim centre (presets/bowl_pour.toml)
        points = np.stack([columns["x"], columns["y"], columns["z"]], axis=1) - centre
        inside[backend] = int(np.count_nonzero((np.linalg.norm(points, axis=1) < 0.15) & (points[:, 1] < 0.0)))
    assert inside["cpu"] > 200, inside
    assert abs(inside[gpu_name] - inside["cpu"]) <= 0.05 * inside["cpu"], inside


def test_cuda_resume_is_bit_exact_with_collider_springs(tmp_path):
    """A CUDA-grid bake of bowl_pour resumed from a cached frame (grain, wall and collider springs from
    the cache) ends with the same bits as one baked straight through."""
    _assert_cuda_resume_is_bit_exact(lambda: _bowl_pour(1500), 16, tmp_path)
