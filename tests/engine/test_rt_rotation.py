"""The rt backend with rotating grains (``rotation = True``): the full contact law's friction and rolling
torques, rolling springs, SJKR cohesion, ω and the orientation quaternion stepped by semi-implicit Euler,
against the CPU backend.

The scene is test_rt_backend's two-radius box with rotation on: grains thrown at ~0.3 m/s into each
other and the walls spin up to ~200 rad/s within 100 steps, under either friction model; and the same box
with rolling friction and cohesion (``rolling_cohesive_box``).

Tolerances after 100 steps, rt against cpu (same law, float32 against float64 arithmetic; see
test_rt_backend's docstring for the positions and velocities, held to its bounds here too):
angular velocities within 5e-3 rad/s and orientations within 1e-5 (unit quaternion components).
Measured: 1.4e-3 to 1.7e-3 rad/s on spins of up to 200 rad/s (7e-6 relative; at the surface of a
7 mm grain r Δω is 1.2e-5 m/s, the size of the velocities' differences), and 2e-6 to 3.5e-6 on
quaternions that turned by up to 0.5. Physics mistakes are far larger, each made on purpose in
kernels/rt_dem_step.slang and each failing the trajectory test: the wall torques left out (positions off
by 1.6e-3 m), the pair torques left out (3.1e-3 m), the quaternion turned by the old ω instead of the new
one (orientations off by 7e-3). The resume test fails when set_state drops the state's ω.

With rolling resistance and cohesion the same bounds hold (measured 3e-7 m, 2.8e-5 m/s, 2.4e-3 rad/s,
7e-6), and the rolling springs, pair and wall, agree within test_rt_backend's 1e-7 m for springs
(measured 3e-9 to 1.1e-8 m on rolling springs of up to 9e-4 m). Left out or wrong on purpose, each failed:
the pair cohesion (positions off by 3.3e-3 m), the wall cohesion (4e-3 m), the rolling torque of the pairs
with the wrong sign (7.6e-4 m), the rolling springs not carried to the next step's rows (1.2e-4 m), and
the wall rolling springs not restored on a resume (the resume test).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from engine.backends import make_backend

from .test_rt_backend import (FRICTION_MODELS, POSITION_TOLERANCE, STEPS, VELOCITY_TOLERANCE, _assert_same_history,
                              _far, _rt, _run, assert_a_rerun_gives_the_same_bits, assert_same_state,
                              assert_springs_close, resume_halfway, two_radius_box)

#: Tolerances of rt against cpu after 100 steps (see the module docstring).
OMEGA_TOLERANCE = 5e-3  # [rad/s]
ORIENTATION_TOLERANCE = 1e-5  # quaternion components


def assert_rotating_state_close(rt, cpu):
    """rt's state within the tolerances of the CPU's: positions, velocities, ω and orientations."""
    assert np.abs(rt.positions - cpu.positions).max() <= POSITION_TOLERANCE
    assert np.abs(rt.velocities - cpu.velocities).max() <= VELOCITY_TOLERANCE
    assert np.abs(rt.angular_velocities - cpu.angular_velocities).max() <= OMEGA_TOLERANCE
    assert np.abs(rt.orientations - cpu.orientations).max() <= ORIENTATION_TOLERANCE
    np.testing.assert_array_equal(rt.active, cpu.active)


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
        assert_springs_close(rt_backend.get_contact_history(), cpu_backend.get_contact_history())


def rolling_cohesive_box(*, friction_model="spring", rolling=0.1, cohesion=2.0e4):
    """The two-radius box with rotation, rolling friction μ_r (material a and the walls; b: half) and SJKR
    cohesion c [Pa] (both materials and the walls): 2π R_eff c is a tenth of k for the small grains'
    pairs, so cohesion pulls without binding everything."""
    setup = two_radius_box(friction_model=friction_model, rotation=True)
    physics = setup.model.physics
    materials = tuple(dataclasses.replace(m, rolling_friction=rolling * scale, cohesion=cohesion)
                      for m, scale in zip(physics.materials, (1.0, 0.5)))
    domain = dataclasses.replace(physics.domain, wall_rolling_friction=rolling, wall_cohesion=cohesion)
    physics = dataclasses.replace(physics, materials=materials, domain=domain)
    return dataclasses.replace(setup, model=dataclasses.replace(setup.model, physics=physics))


@pytest.mark.parametrize("friction_model", FRICTION_MODELS)
def test_100_steps_with_rolling_resistance_and_cohesion_match_the_cpu(rt_device, friction_model):
    setup = rolling_cohesive_box(friction_model=friction_model)
    cpu_backend, rt_backend = make_backend("cpu", setup.model), _rt(setup.model, rt_device)
    cpu = _run(cpu_backend, setup.state, STEPS)
    rt = _run(rt_backend, setup.state, STEPS)
    # Rolling resistance and cohesion each change the CPU's result far beyond the tolerances.
    without_rolling = _run(make_backend("cpu", rolling_cohesive_box(friction_model=friction_model, rolling=0.0).model),
                           setup.state, STEPS)
    assert np.abs(without_rolling.angular_velocities - cpu.angular_velocities).max() > 20 * OMEGA_TOLERANCE
    without_cohesion = _run(make_backend("cpu", rolling_cohesive_box(friction_model=friction_model,
                                                                     cohesion=0.0).model), setup.state, STEPS)
    assert np.abs(without_cohesion.positions - cpu.positions).max() > 20 * POSITION_TOLERANCE
    assert_rotating_state_close(rt, cpu)
    history, reference = rt_backend.get_contact_history(), cpu_backend.get_contact_history()
    assert list(history) == list(reference)  # the CPU's keys: rolling springs with either friction model
    assert_springs_close(history, reference, "rolling")
    if friction_model == "spring":
        assert_springs_close(history, reference)


SCENES = {"friction torques": lambda: two_radius_box(friction_model="spring", rotation=True),
          "rolling and cohesion": rolling_cohesive_box}


@pytest.mark.parametrize("scene", SCENES)
def test_a_rerun_of_rotating_grains_gives_the_same_bits(rt_device, scene):
    assert_a_rerun_gives_the_same_bits(SCENES[scene](), rt_device)


@pytest.mark.parametrize("scene", SCENES)
def test_a_resume_of_rotating_grains_gives_the_same_bits(rt_device, scene):
    """As test_rt_backend's resume test, far from the world origin, with ω and q carried by the state (and
    the rolling springs by the history)."""
    model, state = _far(SCENES[scene](), np.array((1.0e4, -2.5e3, 7.0e3)))
    straight_backend, second, halfway, history = resume_halfway(model, state, rt_device)
    assert np.abs(halfway.angular_velocities).max() > 10.0  # spins to carry
    if scene == "rolling and cohesion":  # rolling springs to carry
        assert np.abs(history["pair_rolling"]).max() > 0.0 and np.abs(history["wall_rolling"]).max() > 0.0
    assert_same_state(second.get_state(), straight_backend.get_state())
    _assert_same_history(second.get_contact_history(), straight_backend.get_contact_history())
