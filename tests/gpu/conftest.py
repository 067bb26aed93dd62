"""Fixtures of the GPU tests: every test here is marked ``gpu`` and skipped, with the reason, where
CuPy, a GPU or (for the OptiX backend) pyoptix with a matching driver is missing."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from engine.model import Domain, Gravity, Material, Physics, build_model
from engine.state import make_state


def pytest_collection_modifyitems(items):
    for item in items:
        if "tests/gpu/" in str(item.fspath).replace("\\", "/"):
            item.add_marker(pytest.mark.gpu)


def make_gpu_backend(name: str, model):
    """The GPU backend ``name`` for ``model``, or skip the test with the reason it cannot start."""
    from engine.backends import make_backend
    from engine.backends.gpu_toolchain import GpuUnavailable

    try:
        return make_backend(name, model)
    except GpuUnavailable as exc:
        pytest.skip(f"{name} backend unavailable: {exc}")


@pytest.fixture(params=["cuda", "optix"])
def gpu_name(request):
    return request.param


def model_and_state(positions, radius, *, velocities=None, lo=None, hi=None, gravity=(0.0, 0.0, 0.0),
                    restitution=0.5, friction=0.0, density=2500.0, stiffness=1.0e4, dt=1.0e-4,
                    rebuild_interval=10, rotation_axis=None, rotation_rate=0.0, open_sides=()):
    """A model with explicit physics: the paper's law (friction_model 'damper', no rotation, semi-implicit
    Euler), which these tests were written for; tests/gpu/test_gpu_rotation.py covers the rotating law."""
    positions = np.asarray(positions, np.float32)
    radius = np.asarray(radius, np.float32)
    lo = positions.min(0) - 1.0 if lo is None else lo
    hi = positions.max(0) + 1.0 if hi is None else hi
    physics = Physics(materials=(Material(density=density, restitution=restitution, friction=friction),),
                      domain=Domain(lo=tuple(float(v) for v in lo), hi=tuple(float(v) for v in hi),
                                    open_sides=tuple(open_sides), wall_restitution=restitution,
                                    wall_friction=friction),
                      gravity=Gravity(vector=tuple(gravity), rotation_axis=rotation_axis, rotation_rate=rotation_rate),
                      stiffness=stiffness, dt=dt, rebuild_interval=rebuild_interval, speed_limit=100.0)
    if "friction_model" in {f.name for f in dataclasses.fields(Physics)}:
        physics = dataclasses.replace(physics, friction_model="damper", rotation=False, integrator="euler")
    return build_model(radius, physics), make_state(positions, velocities)


@pytest.fixture
def rng():
    return np.random.default_rng(12345)
