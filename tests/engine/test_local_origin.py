"""A scene 1 km from the world origin keeps float32 precision: every backend simulates relative to a
local origin near the domain (engine.local_origin), so a slow grain still moves, the same as at the
origin, and a resumed bake stays bit-exact."""

from __future__ import annotations

import numpy as np
import pytest

from engine.backends.cpu import BackendCpu
from engine.bake import bake
from engine.cache import read_frame
from engine.local_origin import local_origin, local_to_world, round_to_world, world_to_local

from .conftest import scene

KM = np.array([1000.0, 0.0, -1000.0])  # the offset of the far scene (y stays: the floor is at 0)


def test_origin_is_zero_near_and_exact_far(rng):
    assert not local_origin((0.0, 0.0, 0.0), (1.0, 2.0, 1.0)).any()
    assert not local_origin((-5.0, -5.0, -5.0), (5.0, 5.0, 5.0)).any()
    lo, hi = np.array([999.7, 0.0, -1000.3]), np.array([1000.3, 0.5, -999.7])
    origin = local_origin(lo, hi)
    assert origin[1] == 0.0 and abs(origin[0] - 1000.0) < 1e-3 and abs(origin[2] + 1000.0) < 1e-3
    world = rng.uniform(lo, hi, (10_000, 3)).astype(np.float32)
    local = world_to_local(world, origin)
    assert np.array_equal(local_to_world(local, origin), world)  # world → local is exact
    assert np.abs(local[:, [0, 2]]).max() < 0.31 and np.array_equal(local[:, 1], world[:, 1])
    fine = local + rng.uniform(-1e-6, 1e-6, local.shape).astype(np.float32)
    assert np.array_equal(local_to_world(round_to_world(fine, origin), origin), local_to_world(fine, origin))


def _sliding_grain(offset, *, dt=5e-4):
    """One frictionless grain resting on the floor, sliding along x at 1 mm/s."""
    r = 0.01
    positions = np.array([[0.25, r, 0.25]]) + offset
    lo, hi = np.array([0.0, 0.0, 0.0]) + offset, np.array([0.5, 0.5, 0.5]) + offset
    return scene(positions, [r], velocities=[[1e-3, 0.0, 0.0]], gravity=(0.0, -9.81, 0.0), lo=lo, hi=hi,
                 friction=0.0, restitution=0.5, stiffness=1.0e3, dt=dt)


def test_slow_grain_moves_1_km_from_the_origin():
    """1 mm/s for 1 s at x = 1 km: 16 float32 steps of the world coordinate, 0.05 µm per time step. In
    world float32 each step would round back and the grain would stay where it was."""
    moved = {}
    for name, offset in (("origin", np.zeros(3)), ("1 km", KM)):
        setup = _sliding_grain(offset)
        backend = BackendCpu(setup.model)
        backend.set_state(setup.state)
        backend.step(2000)
        moved[name] = float(np.float64(backend.get_state().positions[0, 0]) - setup.state.positions[0, 0])
    ulp = float(np.spacing(np.float32(1000.25)))  # 6.1e-5 m
    for name in moved:  # 1 mm each (without a local origin the grain 1 km away stays put: 0 mm)
        assert abs(moved[name] - 1e-3) <= 2 * ulp, moved


def test_device_kernels_move_a_slow_grain_1_km_from_the_origin():
    """The GPU update (kernels/dem_integrate.cuh, host build) on the local coordinates the GPU backends
    upload (``DeviceParticles.upload`` converts with engine.local_origin)."""
    pytest.importorskip("ctypes")
    from .test_grain_device_math import NVCC, HostGrains, _build

    if NVCC is None:
        pytest.skip("nvcc is not installed")
    import tempfile
    from pathlib import Path

    lib = _build(Path(tempfile.mkdtemp()) / "grain_host.so", 16)
    moved = {}
    for name, offset in (("origin", np.zeros(3)), ("1 km", KM)):
        setup = _sliding_grain(offset)
        model = setup.model
        origin = local_origin(model.physics.domain.lo, model.physics.domain.hi)
        assert origin.any() == (name == "1 km")
        grains = HostGrains(model, world_to_local(setup.state.positions, origin), setup.state.velocities,
                            np.ones(1, np.uint8))
        physics = model.physics
        for step in range(2000):
            grains.force[:] = 0.0
            a = physics.gravity.at(step * physics.dt).astype(np.float32)
            lib.dem_integrate_host(grains.address, float(a[0]), float(a[1]), float(a[2]), step)
        world = local_to_world(grains.pos[:, :3], origin)
        moved[name] = float(np.float64(world[0, 0]) - setup.state.positions[0, 0])
    ulp = float(np.spacing(np.float32(1000.25)))  # 6.1e-5 m
    for name in moved:  # 1 mm each (without a local origin the grain 1 km away stays put: 0 mm)
        assert abs(moved[name] - 1e-3) <= 2 * ulp, moved


def test_resume_1_km_from_the_origin_is_bit_exact(tmp_path, rng):
    """Frame boundaries round the local positions to the cache's world float32, so a bake resumed from
    a frame continues from the same bits as one baked straight through."""
    n = 60
    r = 0.01
    positions = rng.uniform([0.1, 0.05, 0.1], [0.4, 0.4, 0.4], (n, 3)) + KM
    make = lambda: scene(positions, np.full(n, r), gravity=(0.0, -9.81, 0.0), lo=KM, hi=KM + 0.5,  # noqa: E731
                         friction=0.4, restitution=0.3, stiffness=2.0e3, dt=2e-4, fps=50.0)
    bake(make(), tmp_path / "straight", frames=6)
    bake(make(), tmp_path / "resumed", frames=3)
    bake(None, tmp_path / "resumed", frames=6, resume=True)
    def last_frame(folder):
        columns = read_frame(folder, 6)
        return np.stack([columns["x"], columns["y"], columns["z"]], axis=1)

    straight, resumed = last_frame(tmp_path / "straight"), last_frame(tmp_path / "resumed")
    assert np.array_equal(straight, resumed)
    assert np.abs(straight - make().state.positions).max() > 0.01  # they fell
