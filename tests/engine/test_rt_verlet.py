"""The rt backend with velocity Verlet (``integrator = "verlet"``): the CPU backend's drift / forces / kick
split (LAMMPS fix nve/sphere), its accelerations stored between steps and carried in the contact history,
against the CPU backend.

Scenes: test_rt_backend's two-radius box (no rotation: the law's full form, as the CPU takes it with
Verlet) and test_rt_rotation's box with rotation, rolling friction and cohesion, under either friction
model. The state is held to test_rt_backend's and test_rt_rotation's bounds. The stored accelerations,
within 0.2 m/s² of the CPU's (on accelerations of up to 1.4e3 m/s²): a contact's force moves by k δx,
and the positions' float32 differences (≤ 3e-7 m) give 2e3 N/m · 3e-7 m / 1.7 g = 0.35 m/s² on the
lightest grain; measured 9e-3 to 4.3e-2 m/s². Euler ends more than 20 times the position bound away from
Verlet on these scenes, so the integrators are told apart. Made wrong on purpose, each failed: the drift
left without its half kick (the trajectory test), the stored accelerations not restored on a resume (the
resume and bake tests, and the CPU history's resume on rt), and the wall rolling springs not restored (the
bake test).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from engine.backends import make_backend

from .test_rt_backend import (FRICTION_MODELS, POSITION_TOLERANCE, STEPS, VELOCITY_TOLERANCE, _assert_same_history,
                              _far, _rt, _run, assert_a_rerun_gives_the_same_bits, assert_same_state,
                              bake_cancelled_and_resumed, resume_halfway, two_radius_box)
from .test_rt_rotation import OMEGA_TOLERANCE, assert_rotating_state_close, rolling_cohesive_box

ACCELERATION_TOLERANCE = 0.2  # [m/s²] (see the module docstring)


def _verlet(setup):
    physics = dataclasses.replace(setup.model.physics, integrator="verlet")
    return dataclasses.replace(setup, model=dataclasses.replace(setup.model, physics=physics))


SCENES = {"paper": lambda friction_model: two_radius_box(friction_model=friction_model),
          "rotating, rolling and cohesion": lambda friction_model: rolling_cohesive_box(friction_model=friction_model)}


@pytest.mark.parametrize("friction_model", FRICTION_MODELS)
@pytest.mark.parametrize("scene", SCENES)
def test_100_verlet_steps_match_the_cpu(rt_device, scene, friction_model):
    euler = SCENES[scene](friction_model)
    setup = _verlet(euler)
    cpu_backend, rt_backend = make_backend("cpu", setup.model), _rt(setup.model, rt_device)
    cpu = _run(cpu_backend, setup.state, STEPS)
    rt = _run(rt_backend, setup.state, STEPS)
    cpu_euler = _run(make_backend("cpu", euler.model), euler.state, STEPS)
    assert np.abs(cpu_euler.positions - cpu.positions).max() > 20 * POSITION_TOLERANCE
    assert rt.step == cpu.step == STEPS
    assert_rotating_state_close(rt, cpu)
    history, reference = rt_backend.get_contact_history(), cpu_backend.get_contact_history()
    assert list(history) == list(reference)  # the CPU's keys, the accelerations included
    assert np.abs(reference["acceleration"]).max() > 100 * ACCELERATION_TOLERANCE
    assert np.abs(history["acceleration"] - reference["acceleration"]).max() <= ACCELERATION_TOLERANCE


def test_a_rerun_with_verlet_gives_the_same_bits(rt_device):
    assert_a_rerun_gives_the_same_bits(_verlet(rolling_cohesive_box()), rt_device)


@pytest.mark.parametrize("friction_model", FRICTION_MODELS)
def test_a_resume_with_verlet_gives_the_same_bits(rt_device, friction_model):
    """As test_rt_backend's resume test, far from the world origin, with Verlet's stored accelerations
    carried by the history (the damper's history holds only them and the rolling springs)."""
    model, state = _far(_verlet(rolling_cohesive_box(friction_model=friction_model)),
                        np.array((1.0e4, -2.5e3, 7.0e3)))
    straight_backend, second, _, history = resume_halfway(model, state, rt_device)
    assert np.abs(history["acceleration"]).max() > 0.0
    assert_same_state(second.get_state(), straight_backend.get_state())
    _assert_same_history(second.get_contact_history(), straight_backend.get_contact_history())


def test_an_rt_bake_with_rotation_rolling_and_verlet_resumes_from_its_cache_bit_for_bit(rt_device, tmp_path):
    """test_rt_backend's bake test on its tilted pile with rotating grains, rolling friction 0.2 and
    velocity Verlet: the cache holds the rolling springs and the stored accelerations, in the CPU
    backend's keys, and the resumed bake writes the same frame files, byte for byte."""
    from .test_rt_backend import tilted_pile

    setup = tilted_pile()
    physics = setup.model.physics
    physics = dataclasses.replace(
        physics, rotation=True, integrator="verlet",
        materials=tuple(dataclasses.replace(m, rolling_friction=0.2) for m in physics.materials),
        domain=dataclasses.replace(physics.domain, wall_rolling_friction=0.2))
    setup = dataclasses.replace(setup, model=dataclasses.replace(setup.model, physics=physics))
    straight, resumed, history = bake_cancelled_and_resumed(setup, tmp_path)
    assert sorted(history) == sorted(["pair_i", "pair_j", "pair_spring", "wall_spring", "pair_rolling",
                                      "wall_rolling", "acceleration", "angular_acceleration"])
    assert np.abs(history["pair_rolling"]).max() > 0.0 and np.abs(history["acceleration"]).max() > 0.0
    assert len(straight) == 3 and straight == resumed


def test_a_cpu_verlet_history_resumes_on_rt(rt_device):
    """50 Verlet steps on the CPU (rotation, rolling friction, cohesion, springs), its state and history to
    rt, 50 more: within the bounds of 100 CPU steps (the history rounded to float32); without the history
    (no accelerations, springs or rolling springs) far outside them."""
    setup = _verlet(rolling_cohesive_box())
    cpu = make_backend("cpu", setup.model)
    cpu.set_state(setup.state)
    cpu.step(STEPS // 2)
    halfway, history = cpu.get_state(), cpu.get_contact_history()
    cpu.step(STEPS // 2)
    reference = cpu.get_state()
    resumed = _rt(setup.model, rt_device)
    resumed.set_state(halfway)
    resumed.set_contact_history(history)
    resumed.step(STEPS // 2)
    rt = resumed.get_state()
    assert np.abs(rt.positions - reference.positions).max() <= POSITION_TOLERANCE
    assert np.abs(rt.velocities - reference.velocities).max() <= VELOCITY_TOLERANCE
    assert np.abs(rt.angular_velocities - reference.angular_velocities).max() <= OMEGA_TOLERANCE
    forgetful = _run(_rt(setup.model, rt_device), halfway, STEPS // 2)
    assert np.abs(forgetful.velocities - reference.velocities).max() > 100 * VELOCITY_TOLERANCE
