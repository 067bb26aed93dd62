"""The rt backend with force fields (engine/fields.py): the uniform and rotating fields added to gravity on the
host, the others per grain by kernels/field_law.h (the CUDA kernels' own source) in
kernels/rt_dem_step.slang, against the CPU backend's float64 fields (engine/backends/cpu_fields.py).

Scene: test_rt_backend's two-radius box (343 grains, 0.14 m) with one field of each kind and shape at a
time, each strong enough (20 to 50 m/s² where the grains are) that the CPU with the field ends more than
20 times the position bound and 20 times the velocity bound away from the CPU without it, so a field left
out, or evaluated in the wrong frame, fails. Held to test_rt_backend's bounds (1e-6 m, 2e-4 m/s after 100
steps): the field adds a float32 evaluation of an acceleration of ~50 m/s², off by a few float32 ulps
(~1e-5 m/s², a pow or a sqrt of lavapipe's), which is 1e-7 m/s over 100 steps of 1e-4 s: the contacts'
rounding (test_rt_backend's docstring) stays what sets the bounds. Measured on lavapipe: 3.7e-8 to
4.1e-7 m and 1.4e-5 to 5.6e-5 m/s. With velocity Verlet and rotating grains (rolling friction, cohesion,
every field at once) the fields are evaluated at the drifted position with the half-step velocity, as the
CPU's kick, and the stored accelerations carry them: held to test_rt_rotation's and test_rt_verlet's
bounds (measured 3.7e-8 m, 1.7e-5 m/s, 2.4e-3 rad/s, 1.7e-6 in q, accelerations 2.4e-2 m/s² of up to
1.2e3). Reruns and a resume halfway give the same bits, far from the world origin too (the field table
shifted to the backend's local origin as the CPU's; a table left unshifted puts every centred field 1e4 m
away, and the run diverges).

One thing the bounds do not cover, fields or not: a contact that begins at a near tie, the gap below the
float32 resolution of the distance (~1e-9 m), is decided differently by rt's float32 and the CPU's
float64 and changes a grain's velocity by ~1e-2 m/s at once (the damper acts from the first touch). A
uniform field of (30, 0, 0) m/s² meets one at step 30 (grains 248 and 255, 6.5e-10 m apart), exactly as
gravity (30, −9.81, 0) without a field does; the scenes here meet none.

presets/candy_vortex.toml, scaled to 200 grains, bakes on rt (2 frames: 1,138 steps of Verlet with
rotating grains and spring friction): finite, within the bounds of the CPU's bake (measured 3e-8 m,
4.5e-8 m/s: the candy falls freely in that frame), and spun by the vortex as on the CPU (the angular
momentum about the vortex axis, 0 without the field).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from engine.backends import make_backend
from engine.backends.rt_support import rt_refusal
from engine.fields import ForceField

from .test_rt_backend import (POSITION_TOLERANCE, STEPS, VELOCITY_TOLERANCE, _assert_same_history, _rt, _run,
                              assert_a_rerun_gives_the_same_bits, assert_same_state, resume_halfway, two_radius_box)
from .test_rt_rotation import assert_rotating_state_close, rolling_cohesive_box
from .test_rt_verlet import ACCELERATION_TOLERANCE

PRESETS = Path(__file__).resolve().parents[2] / "presets"
#: The middle of test_rt_backend's box [m].
MIDDLE = (0.07, 0.07, 0.07)


def _sampled_grid(folder: Path) -> str:
    """A (4, 5, 6, 3) field of random accelerations [m/s²] saved in ``folder``; its path."""
    path = folder / "sampled.npy"
    np.save(path, np.random.default_rng(3).normal(0.0, 30.0, (4, 5, 6, 3)).astype(np.float32))
    return str(path)


#: One field of each kind, shape, profile and option; each a function of a folder (for the sampled grid).
FIELDS = {
    "uniform": lambda folder: ForceField(kind="uniform", vector=(0.0, 0.0, 30.0)),
    "rotating": lambda folder: ForceField(kind="rotating", vector=(30.0, 0.0, 0.0), axis=(0.0, 1.0, 0.0),
                                          rate=100.0),
    "vortex rankine": lambda folder: ForceField(kind="vortex", center=(0.07, 0.0, 0.07), axis=(0.0, 1.0, 0.0),
                                                strength=30.0, core_radius=0.03, falloff_power=1.0,
                                                max_distance=0.08),
    "vortex blender_point": lambda folder: ForceField(kind="vortex", center=(0.07, 0.05, 0.07), axis=(0.2, 1.0, 0.0),
                                                      strength=600.0, profile="blender_point",
                                                      z_direction="positive"),
    "vortex blender_plane": lambda folder: ForceField(kind="vortex", center=(0.07, 0.0, 0.07), axis=(0.0, 1.0, 0.0),
                                                      strength=25.0, profile="blender_plane", shape="plane",
                                                      flow=2.0),
    "force point": lambda folder: ForceField(kind="force", center=MIDDLE, strength=-40.0, falloff_power=2.0,
                                             min_distance=0.02, max_distance=0.1),
    "force plane": lambda folder: ForceField(kind="force", center=MIDDLE, axis=(1.0, 1.0, 0.0), strength=30.0,
                                             shape="plane", z_direction="negative"),
    "wind": lambda folder: ForceField(kind="wind", center=MIDDLE, axis=(0.0, 1.0, 1.0), strength=40.0, shape="plane",
                                      falloff_power=0.5, flow=5.0),
    "turbulence": lambda folder: ForceField(kind="turbulence", center=MIDDLE, strength=50.0, size=0.03, seed=9,
                                            falloff_power=1.0),
    # Spans part of the box only: the grains outside it feel nothing.
    "sampled": lambda folder: ForceField(kind="sampled", path=_sampled_grid(folder), lo=(0.02, 0.0, 0.01),
                                         hi=(0.12, 0.1, 0.13), strength=1.5),
}


def _with_fields(setup, fields, offset=(0.0, 0.0, 0.0)):
    """``setup`` with ``fields``; with ``offset`` [m] the scene, its box and its fields moved by it (the
    backends then keep a local origin, and the field table is shifted to it)."""
    offset = np.asarray(offset, np.float64)
    moved = []
    for field in fields:
        change = dict(center=tuple(np.add(field.center, offset)))
        if field.kind == "sampled":
            change.update(lo=tuple(np.add(field.lo, offset)), hi=tuple(np.add(field.hi, offset)))
        moved.append(dataclasses.replace(field, **change))
    physics = setup.model.physics
    domain = dataclasses.replace(physics.domain, lo=tuple(np.add(physics.domain.lo, offset)),
                                 hi=tuple(np.add(physics.domain.hi, offset)))
    physics = dataclasses.replace(physics, fields=tuple(moved), domain=domain)
    positions = (setup.state.positions.astype(np.float64) + offset).astype(np.float32)
    return dataclasses.replace(setup, model=dataclasses.replace(setup.model, physics=physics),
                               state=dataclasses.replace(setup.state, positions=positions))


@pytest.fixture(scope="module")
def without_fields():
    """The box's state after STEPS CPU steps with no field."""
    setup = two_radius_box()
    return _run(make_backend("cpu", setup.model), setup.state, STEPS)


@pytest.mark.parametrize("field", FIELDS)
def test_100_steps_with_a_field_match_the_cpu(rt_device, field, without_fields, tmp_path):
    setup = _with_fields(two_radius_box(), (FIELDS[field](tmp_path),))
    assert rt_refusal(setup.model) is None
    cpu = _run(make_backend("cpu", setup.model), setup.state, STEPS)
    rt = _run(_rt(setup.model, rt_device), setup.state, STEPS)
    # The field moved the grains far beyond the tolerances: the comparison tells a field left out.
    assert np.abs(cpu.positions - without_fields.positions).max() > 20 * POSITION_TOLERANCE
    assert np.abs(cpu.velocities - without_fields.velocities).max() > 20 * VELOCITY_TOLERANCE
    assert rt.step == cpu.step == STEPS
    assert np.abs(rt.positions - cpu.positions).max() <= POSITION_TOLERANCE
    assert np.abs(rt.velocities - cpu.velocities).max() <= VELOCITY_TOLERANCE
    np.testing.assert_array_equal(rt.active, cpu.active)


def _every_field(folder):
    return tuple(make(folder) for make in FIELDS.values())


def test_every_field_at_once_with_rotation_and_verlet_matches_the_cpu(rt_device, tmp_path):
    """The fields under velocity Verlet with rotating grains, rolling friction and cohesion: the CPU kick's
    fields (drifted position, half-step velocity) in the stored accelerations too."""
    euler = _with_fields(rolling_cohesive_box(), _every_field(tmp_path))
    physics = dataclasses.replace(euler.model.physics, integrator="verlet")
    setup = dataclasses.replace(euler, model=dataclasses.replace(euler.model, physics=physics))
    cpu_backend, rt_backend = make_backend("cpu", setup.model), _rt(setup.model, rt_device)
    cpu = _run(cpu_backend, setup.state, STEPS)
    rt = _run(rt_backend, setup.state, STEPS)
    assert_rotating_state_close(rt, cpu)
    history, reference = rt_backend.get_contact_history(), cpu_backend.get_contact_history()
    assert np.abs(history["acceleration"] - reference["acceleration"]).max() <= ACCELERATION_TOLERANCE


def test_a_rerun_with_fields_gives_the_same_bits(rt_device, tmp_path):
    assert_a_rerun_gives_the_same_bits(_with_fields(two_radius_box(friction_model="spring"), _every_field(tmp_path)),
                                       rt_device)


def test_fields_far_from_the_origin_match_the_cpu_and_resume_bit_for_bit(rt_device, tmp_path):
    """Every field at once, the scene 1e4 m from the world origin: rt within the bounds of the CPU (the
    field table shifted to the same local origin), and 50 steps, a resume, 50 more equal 100 straight
    steps bit for bit (rotating grains, springs and Verlet's accelerations carried)."""
    offset = (1.0e4, -2.5e3, 7.0e3)
    setup = _with_fields(rolling_cohesive_box(), _every_field(tmp_path), offset)
    physics = dataclasses.replace(setup.model.physics, integrator="verlet")
    model = dataclasses.replace(setup.model, physics=physics)
    straight_backend, second, _, history = resume_halfway(model, setup.state, rt_device)
    assert history is not None and "acceleration" in history
    assert_same_state(second.get_state(), straight_backend.get_state())
    _assert_same_history(second.get_contact_history(), straight_backend.get_contact_history())
    cpu = make_backend("cpu", model)
    cpu.set_state(setup.state)
    for _ in range(2):  # the frame boundaries of resume_halfway's runs
        cpu.begin_frame()
        cpu.step(STEPS // 2)
    assert_rotating_state_close(straight_backend.get_state(), cpu.get_state())


def _swirl(state, axis_point=(0.0, 0.0)):
    """Sum over the active grains of (y × r)·v about the vertical axis through (x, z) = ``axis_point``
    [m²/s]: the angular momentum per unit mass of the candy about the vortex's axis."""
    active = state.active != 0
    rx = state.positions[active, 0].astype(np.float64) - axis_point[0]
    rz = state.positions[active, 2].astype(np.float64) - axis_point[1]
    v = state.velocities[active].astype(np.float64)
    return float(np.sum(rz * v[:, 0] - rx * v[:, 2]))


def test_candy_vortex_bakes_on_rt(rt_device, tmp_path):
    """presets/candy_vortex.toml at 200 grains: one frame after the first (1,138 steps of Verlet with rotating
    grains and spring friction) baked on rt: finite, within the bounds of the CPU's bake, spun by the vortex
    as on the CPU."""
    from engine.bake import bake
    from engine.cache import read_frame
    from engine.preset import load_preset
    from engine.scene import setup_from_preset
    from engine.state import State

    setup = setup_from_preset(load_preset(PRESETS / "candy_vortex.toml"), particles=200)
    assert setup.model.physics.fields and rt_refusal(setup.model) is None
    still = dataclasses.replace(setup.model.physics, fields=())
    states = {}
    for name, backend, scene in (("rt", "rt", setup), ("cpu", "cpu", setup),
                                 ("no field", "cpu", dataclasses.replace(setup, model=dataclasses.replace(
                                     setup.model, physics=still)))):
        bake(scene, tmp_path / name, frames=2, backend=backend)
        frame = read_frame(tmp_path / name, 2)
        states[name] = State(np.stack([frame["x"], frame["y"], frame["z"]], axis=1),
                             np.stack([frame["vx"], frame["vy"], frame["vz"]], axis=1), frame["active"], 0)
    rt, cpu = states["rt"], states["cpu"]
    assert np.isfinite(rt.positions).all() and np.isfinite(rt.velocities).all()
    assert np.abs(rt.velocities).max() > 0.1  # the candy fell
    assert np.abs(rt.positions - cpu.positions).max() <= POSITION_TOLERANCE
    assert np.abs(rt.velocities - cpu.velocities).max() <= VELOCITY_TOLERANCE
    # The vortex (strength 6 m/s², axis +y) spins the candy counter-clockwise seen from above, as on the CPU;
    # without it the candy falls straight.
    assert _swirl(cpu) > 0.0 and abs(_swirl(states["no field"])) < 1e-3 * _swirl(cpu)
    assert abs(_swirl(rt) - _swirl(cpu)) <= 1e-3 * _swirl(cpu)
