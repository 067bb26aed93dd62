"""The rt backend with rotating grains (``rotation = True``): the full contact law's friction torques,
ω and the orientation quaternion stepped by semi-implicit Euler, against the CPU backend.

The scene is test_rt_backend's two-radius box with rotation on: grains thrown at ~0.3 m/s into each
other and the walls spin up to ~200 rad/s within 100 steps, under either friction model.

Tolerances after 100 steps, rt against cpu (same law, float32 against float64 arithmetic; see
test_rt_backend's docstring for the positions and velocities, held to its bounds here too):
angular velocities within 5e-3 rad/s and orientations within 1e-5 (unit quaternion components).
Measured: 1.4e-3 to 1.7e-3 rad/s on spins of up to 200 rad/s (7e-6 relative; at the surface of a
7 mm grain r Δω is 1.2e-5 m/s, the size of the velocities' differences), and 2e-6 to 3.5e-6 on
quaternions that turned by up to 0.5. Physics mistakes are far larger, each made on purpose in
kernels/rt_dem_step.slang and each failing the trajectory test: the wall torques left out (positions off
by 1.6e-3 m), the pair torques left out (3.1e-3 m), the quaternion turned by the old ω instead of the new
one (orientations off by 7e-3). The resume test fails when set_state drops the state's ω.
"""

from __future__ import annotations

import numpy as np
import pytest

from engine.backends import make_backend

from .test_rt_backend import (FRICTION_MODELS, POSITION_TOLERANCE, STEPS, VELOCITY_TOLERANCE, _assert_same_history,
                              _assert_springs_close, _far, _rt, _run, two_radius_box)

#: Tolerances of rt against cpu after 100 steps (see the module docstring).
OMEGA_TOLERANCE = 5e-3  # [rad/s]
ORIENTATION_TOLERANCE = 1e-5  # quaternion components


@pytest.mark.parametrize("friction_model", FRICTION_MODELS)
def test_100_steps_of_rotating_grains_match_the_cpu(rt_device, friction_model):
    setup = two_radius_box(friction_model=friction_model, rotation=True)
    cpu_backend, rt_backend = make_backend("cpu", setup.model), _rt(setup.model, rt_device)
    cpu = _run(cpu_backend, setup.state, STEPS)
    rt = _run(rt_backend, setup.state, STEPS)
    assert rt.step == cpu.step == STEPS
    # The grains spun and turned: the comparisons mean something.
    assert np.abs(cpu.angular_velocities).max() > 1e4 * OMEGA_TOLERANCE
    assert np.abs(cpu.orientations - setup.state.orientations).max() > 1e4 * ORIENTATION_TOLERANCE
    assert np.abs(rt.positions - cpu.positions).max() <= POSITION_TOLERANCE
    assert np.abs(rt.velocities - cpu.velocities).max() <= VELOCITY_TOLERANCE
    assert np.abs(rt.angular_velocities - cpu.angular_velocities).max() <= OMEGA_TOLERANCE
    assert np.abs(rt.orientations - cpu.orientations).max() <= ORIENTATION_TOLERANCE
    np.testing.assert_array_equal(rt.active, cpu.active)
    if friction_model == "spring":
        _assert_springs_close(rt_backend.get_contact_history(), cpu_backend.get_contact_history())


def _assert_same_state(a, b):
    for name in ("positions", "velocities", "angular_velocities", "orientations", "active"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    assert a.step == b.step


def test_a_rerun_of_rotating_grains_gives_the_same_bits(rt_device):
    setup = two_radius_box(friction_model="spring", rotation=True)
    runs = [_rt(setup.model, rt_device) for _ in range(2)]
    first, second = (_run(backend, setup.state, STEPS) for backend in runs)
    _assert_same_state(first, second)
    _assert_same_history(runs[0].get_contact_history(), runs[1].get_contact_history())


def test_a_resume_of_rotating_grains_gives_the_same_bits(rt_device):
    """As test_rt_backend's resume test, far from the world origin, with ω and q carried by the state."""
    model, state = _far(two_radius_box(friction_model="spring", rotation=True), np.array((1.0e4, -2.5e3, 7.0e3)))
    straight_backend = _rt(model, rt_device)
    straight_backend.set_state(state)
    for _ in range(2):
        straight_backend.begin_frame()
        straight_backend.step(STEPS // 2)
    first, second = _rt(model, rt_device), _rt(model, rt_device)
    first.set_state(state)
    first.begin_frame()
    first.step(STEPS // 2)
    halfway = first.get_state()
    assert np.abs(halfway.angular_velocities).max() > 10.0  # spins to carry
    second.set_state(halfway)
    second.set_contact_history(first.get_contact_history())
    second.begin_frame()
    second.step(STEPS // 2)
    _assert_same_state(second.get_state(), straight_backend.get_state())
    _assert_same_history(second.get_contact_history(), straight_backend.get_contact_history())
