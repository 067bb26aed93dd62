"""Rotation, rolling resistance, cohesion and velocity Verlet (issue 16) on the CUDA grid and OptiX
backends against the CPU reference; the host builds of the same kernels are tested without a GPU in
tests/engine/test_grain_device_rotation.py and test_cuda_grid_host_backend.py."""

from __future__ import annotations

import numpy as np
import pytest

from engine.backends.cpu import BackendCpu
from engine.model import Domain, Gravity, Material, Physics, build_model
from engine.state import make_state

from .conftest import make_gpu_backend


def heap(rng, integrator: str, count: int = 600):
    """A stirred, spinning heap on the floor of a box: frictional, rolling-resistant and cohesive."""
    r = 0.005
    side = int(np.ceil(np.sqrt(count / 4)))
    g = np.stack(np.meshgrid(np.arange(side), np.arange(4), np.arange(side), indexing="ij"), -1).reshape(-1, 3)[:count]
    positions = (g * 2 * r * 0.9995 + r * 0.9995 + np.array([0.02, 0.0, 0.02])).astype(np.float32)
    physics = Physics(materials=(Material(friction=0.5, restitution=0.3, rolling_friction=0.2, cohesion=2.0e3),),
                      domain=Domain(lo=(0.0, 0.0, 0.0), hi=(0.3, 0.2, 0.3), wall_friction=0.5, wall_restitution=0.3,
                                    wall_rolling_friction=0.1),
                      gravity=Gravity(vector=(0.0, -9.81, 0.0)), stiffness=2.0e4, dt=2.0e-5, rotation=True,
                      integrator=integrator)
    model = build_model(rng.uniform(0.999 * r, r, count).astype(np.float32), physics)
    state = make_state(positions, rng.normal(0, 0.02, (count, 3)).astype(np.float32))
    state.angular_velocities = rng.normal(0, 5.0, (count, 3)).astype(np.float32)
    return model, state


@pytest.mark.parametrize("integrator", ["verlet", "euler"])
def test_rotating_heap_follows_the_cpu(gpu_name, integrator):
    model, state = heap(np.random.default_rng(3), integrator)
    gpu = make_gpu_backend(gpu_name, model)
    gpu.set_state(state)
    gpu.step(500)
    got = gpu.get_state()
    cpu = BackendCpu(model)
    cpu.set_state(state)
    cpu.step(500)
    want = cpu.get_state()
    r = float(model.radius.max())
    assert np.abs(want.positions - state.positions).max() > 0.02 * r
    assert np.abs(got.positions - want.positions).max() < 1e-3 * r
    assert np.abs(got.angular_velocities - want.angular_velocities).max() < 2e-2 * np.abs(want.angular_velocities).max()
    assert np.abs(got.orientations - want.orientations).max() < 1e-3


def test_cuda_grid_resumes_bit_for_bit():
    model, state = heap(np.random.default_rng(4), "verlet")
    straight = make_gpu_backend("cuda", model)
    straight.set_state(state)
    straight.step(200)
    straight.begin_frame()
    middle, history = straight.get_state(), straight.get_contact_history()
    straight.step(200)
    resumed = make_gpu_backend("cuda", model)
    resumed.set_state(middle)
    resumed.set_contact_history(history)
    resumed.step(200)
    a, b = straight.get_state(), resumed.get_state()
    for name in ("positions", "velocities", "angular_velocities", "orientations", "active"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
