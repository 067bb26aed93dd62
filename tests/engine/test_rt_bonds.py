"""The rt backend with glued bodies (engine.backends.rt_bonds, the law in kernels/bond_law.h): glue bonds
that break under stress, against the CPU backend.

The scene (``glued_ball``) is a ball of 147 grains of radius 6 mm packed on a cubic lattice and glued
(330 bonds), thrown at the floor at 1.5 m/s: it lands within about 10 steps and a part of its bonds breaks
on impact. Two versions: the paper's grains (no rotation, semi-implicit Euler, damper; the bonds make the
CPU take the law's full form, and rt with it) and rotating grains with rolling friction, tangential
springs and velocity Verlet (the glued presets' physics).

Tolerances after 100 steps, rt against cpu: those of test_rt_backend (positions, velocities, springs:
the bonds' shear springs ξ_b are held to its 1e-7 m) and test_rt_rotation (ω, orientations). Measured:
1.5e-8 to 2.2e-8 m, 7.6e-6 to 1.1e-5 m/s, 2.7e-3 rad/s on spins of up to 190 rad/s, 3.3e-6 in q, ξ_b
within 1.4e-8 to 1.8e-8 m of up to 9.2e-4 m; the same bonds break (68 and 42 of 330: the intact flags
are equal). The glued bunny
presets (coarse, 398 grains, 1857 bonds, their own dt of 2.4e-4 s) land harder than these bounds assume:
there the CPU's own response to positions moved by one float32 step, 100 steps later, is 7e-3 to 1e-2
rad/s, 1.1e-5 in q and 4.5e-7 m in ξ_b, and rt − cpu is 6.1e-3 to 6.9e-3 rad/s, 9e-6 and 3.9e-7 m; the
bunny test holds ω, q and ξ_b to three times the CPU's own response (``BUNNY_*``).

Mistakes made on purpose, each failing these tests: the bonded pairs' contacts not skipped (positions off
by 3.8e-3 m), the bonds' torques left out (2.7e-3 m), the state's halves not swapped after a pass (2.4e-3
m), the bonds' state not restored from the history, or read from the wrong half (the resume tests).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from engine.backends import make_backend
from engine.model import Body, Domain, Gravity, Material
from engine.preset import load_preset
from engine.scene import setup_from_arrays, setup_from_preset

from .test_rt_backend import (POSITION_TOLERANCE, SPRING_TOLERANCE, STEPS, VELOCITY_TOLERANCE, _assert_same_history,
                              _far, _rt, _run, assert_a_rerun_gives_the_same_bits, assert_same_state,
                              cpu_history_resumed_on_rt, resume_halfway)
from .test_rt_rotation import OMEGA_TOLERANCE, assert_rotating_state_close

PRESETS = Path(__file__).resolve().parents[2] / "presets"
#: The bunny's bounds: three times the CPU's own response to a one-float32-step nudge (module docstring).
BUNNY_OMEGA_TOLERANCE = 3e-2  # [rad/s]
BUNNY_ORIENTATION_TOLERANCE = 3.5e-5
BUNNY_SHEAR_TOLERANCE = 1.5e-6  # [m]


def glued_ball(*, rotation=True, strength=5.0e3, fps=24.0):
    """147 grains of radius 6 mm on a 12 mm cubic lattice within a ball, one glued body of glue strength
    ``strength`` [Pa], 1.7 mm above the floor of a 0.2 m box, thrown down at 1.5 m/s (and sideways);
    with ``rotation``: rotating grains, rolling friction 0.1, tangential springs and velocity Verlet,
    otherwise the paper's grains with the damper and semi-implicit Euler; ``fps``: a bake's frame rate."""
    r = 0.006
    lattice = np.stack(np.meshgrid(*[np.arange(7)] * 3, indexing="ij"), -1).reshape(-1, 3) * 2 * r
    lattice = lattice - lattice.mean(axis=0)
    positions = lattice[np.linalg.norm(lattice, axis=1) <= 6.4 * r] + [0.1, 7.2 * r + 5e-4, 0.1]
    n = len(positions)
    rolling = 0.1 if rotation else 0.0
    return setup_from_arrays(
        positions=positions.astype(np.float32), radius=np.full(n, r, np.float32),
        velocities=np.tile(np.float32([0.3, -1.5, 0.1]), (n, 1)),
        materials=(Material(friction=0.5, restitution=0.3, rolling_friction=rolling),),
        domain=Domain(lo=(0.0, 0.0, 0.0), hi=(0.2, 0.3, 0.2), wall_friction=0.5, wall_restitution=0.3,
                      wall_rolling_friction=rolling),
        gravity=Gravity(vector=(0.0, -9.81, 0.0)), dt=1.0e-4, stiffness=2.0e3,
        friction_model="spring" if rotation else "damper", rotation=rotation,
        integrator="verlet" if rotation else "euler", fps=fps,
        bodies=(Body(object_id=0, kind="glued", glue_strength=strength),))


SCENES = {"paper grains": lambda: glued_ball(rotation=False), "rotating grains": glued_ball}


def _assert_bonds_close(history, reference, shear_tolerance=SPRING_TOLERANCE):
    """The same bonds intact, some broken and some not, and the shear springs within ``shear_tolerance``."""
    intact = reference["bond_intact"]
    assert 0 < int(intact.sum()) < intact.shape[0]  # the glue cracked: the comparison means something
    np.testing.assert_array_equal(history["bond_intact"], intact)
    assert np.abs(reference["bond_shear"]).max() > 20 * shear_tolerance
    assert np.abs(history["bond_shear"] - reference["bond_shear"]).max() <= shear_tolerance


@pytest.mark.parametrize("scene", SCENES)
def test_a_glued_ball_dropped_on_the_floor_matches_the_cpu(rt_device, scene):
    setup = SCENES[scene]()
    assert setup.model.bonds.count == 330
    cpu_backend, rt_backend = make_backend("cpu", setup.model), _rt(setup.model, rt_device)
    cpu = _run(cpu_backend, setup.state, STEPS)
    rt = _run(rt_backend, setup.state, STEPS)
    assert rt.step == cpu.step == STEPS
    assert_rotating_state_close(rt, cpu)
    _assert_bonds_close(rt_backend.get_contact_history(), cpu_backend.get_contact_history())
    np.testing.assert_array_equal(rt.bonds, cpu.bonds)  # the cache's column of intact bonds per grain
    # The bonds hold the ball: without them (loose grains) the CPU ends far outside the bounds.
    loose = dataclasses.replace(setup.model, bonds=None)
    apart = _run(make_backend("cpu", loose), setup.state, STEPS)
    assert np.abs(apart.positions - cpu.positions).max() > 100 * POSITION_TOLERANCE


def test_a_rerun_with_glue_gives_the_same_bits(rt_device):
    histories = assert_a_rerun_gives_the_same_bits(glued_ball(), rt_device)
    assert 0 < int(histories[0]["bond_intact"].sum()) < glued_ball().model.bonds.count


@pytest.mark.parametrize("scene", SCENES)
def test_a_resume_with_glue_gives_the_same_bits(rt_device, scene):
    """As test_rt_backend's resume test, far from the world origin: the bonds' state (broken flags and
    shear springs) is carried by the history, bit for bit."""
    model, state = _far(SCENES[scene](), np.array((1.0e4, -2.5e3, 7.0e3)))
    straight_backend, second, _, history = resume_halfway(model, state, rt_device)
    assert 0 < int(history["bond_intact"].sum()) < model.bonds.count  # broken bonds to carry
    assert np.abs(history["bond_shear"]).max() > 0.0
    assert_same_state(second.get_state(), straight_backend.get_state())
    _assert_same_history(second.get_contact_history(), straight_backend.get_contact_history())


def test_a_cpu_history_with_glue_resumes_on_rt(rt_device):
    """50 steps on the CPU, its state and history (bonds, springs, accelerations) to rt, 50 more: within the
    bounds of 100 CPU steps, the same bonds broken; without the history the broken bonds come back."""
    setup = glued_ball()
    resumed, cpu, halfway, history = cpu_history_resumed_on_rt(setup, rt_device)
    assert int(history["bond_intact"].sum()) < setup.model.bonds.count
    assert_rotating_state_close(resumed.get_state(), cpu.get_state())
    _assert_bonds_close(resumed.get_contact_history(), cpu.get_contact_history())
    forgetful = _rt(setup.model, rt_device)
    _run(forgetful, halfway, STEPS // 2)
    assert forgetful.get_contact_history()["bond_intact"].sum() > cpu.get_contact_history()["bond_intact"].sum()


@pytest.mark.parametrize("name", ["glued_weak", "glued_strong"])
def test_a_glued_bunny_preset_lands_on_rt_as_on_the_cpu(rt_device, name):
    """The bunny presets (coarse: 398 grains), moved to 2 mm above the floor and falling at 2.5 m/s (as
    they land), 100 steps: the same bonds break (weak glue: some; strong: none), within the bounds of
    test_rt_backend for positions and velocities and the bunny's own for ω, q and ξ_b."""
    setup = setup_from_preset(load_preset(PRESETS / f"bunny_{name}.toml"), particles=400)
    model, state = setup.model, setup.state
    positions = state.positions.copy()
    positions[:, 1] -= float((positions[:, 1] - model.radius).min()) - 0.002
    velocities = state.velocities.copy()
    velocities[:, 1] = -2.5
    state = dataclasses.replace(state, positions=positions, velocities=velocities)
    cpu_backend, rt_backend = make_backend("cpu", model), _rt(model, rt_device)
    cpu = _run(cpu_backend, state, STEPS)
    rt = _run(rt_backend, state, STEPS)
    assert np.abs(rt.positions - cpu.positions).max() <= POSITION_TOLERANCE
    assert np.abs(rt.velocities - cpu.velocities).max() <= VELOCITY_TOLERANCE
    assert np.abs(cpu.angular_velocities).max() > 1e3 * OMEGA_TOLERANCE
    assert np.abs(rt.angular_velocities - cpu.angular_velocities).max() <= BUNNY_OMEGA_TOLERANCE
    assert np.abs(rt.orientations - cpu.orientations).max() <= BUNNY_ORIENTATION_TOLERANCE
    history, reference = rt_backend.get_contact_history(), cpu_backend.get_contact_history()
    np.testing.assert_array_equal(history["bond_intact"], reference["bond_intact"])
    broken = model.bonds.count - int(reference["bond_intact"].sum())
    assert (broken > 0) == (name == "glued_weak")
    assert np.abs(history["bond_shear"] - reference["bond_shear"]).max() <= BUNNY_SHEAR_TOLERANCE


def test_an_rt_bake_of_a_glued_ball_resumes_from_its_cache_bit_for_bit(rt_device, tmp_path):
    """mochi's bake on rt: 3 frames straight, and 2 frames, cancelled, resumed to 3 from the cache (the
    bonds' state read back from disk in the CPU backend's keys): the same frame files, byte for byte,
    whose ``bonds`` column shows the crack."""
    from engine.cache import read_frame

    from .test_rt_backend import bake_cancelled_and_resumed

    setup = glued_ball(fps=100.0)  # 100 steps a frame: the ball lands and cracks in the first
    straight, resumed, history = bake_cancelled_and_resumed(setup, tmp_path)
    assert 0 < int(history["bond_intact"].sum()) < setup.model.bonds.count
    assert history["bond_shear"].dtype == np.float64 and history["bond_intact"].dtype == np.uint8
    assert len(straight) == 3 and straight == resumed
    second, third = (read_frame(tmp_path / "full", frame)["bonds"] for frame in (2, 3))
    assert 0 < third.sum() <= second.sum() < 2 * setup.model.bonds.count
    assert second.sum() == 2 * history["bond_intact"].sum()  # each intact bond counted by both its grains
