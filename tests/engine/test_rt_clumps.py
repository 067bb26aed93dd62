"""The rt backend with rigid bodies (clumps: engine.backends.rt_clumps, kernels/rt_clumps.slang) against the
CPU backend.

The scene (``rigid_bodies``) is two irregular rigid bodies of 20 and 16 grains (radii 5 to 8 mm,
overlapping within a body) and 24 loose grains, in a 0.25 m box: the bodies start 2 mm above the floor,
falling at 1.5 m/s, spinning, and thrown at each other, so within 100 steps each body hits the floor, the
other body and loose grains. Both integrators: semi-implicit Euler with the damper, and velocity Verlet with
tangential springs and rolling friction (the rigid preset's physics).

Tolerances after 100 steps, rt against cpu: those of test_rt_backend (positions, velocities, springs) and
test_rt_rotation (ω, orientations); no wider bound is needed. The body state itself (centre, velocity,
angular momentum, orientation; float64 on both) is held to the same bounds (``assert_bodies_close``).
Measured: 7.5e-9 to 3.7e-8 m, 3.5e-6 to 8.9e-6 m/s, 1.4e-4 to 1.2e-3 rad/s on spins of up to 200 rad/s,
1.6e-7 to 2.3e-6 in q, springs 9.8e-9 m (the CPU's own response to positions moved by one float32 step:
2e-8 m, 5.5e-6 m/s, 6e-4 rad/s, 1.2e-6); the bunny 6e-8 m, 2.4e-7 m/s, 2.4e-7 rad/s.

Mistakes made on purpose, each failing some of these tests: the members' torques τ/I left out of the body's
sum, or the orientation turned by the old Ω (every comparison with the CPU, the bake's included), the
accelerations not stored with Euler (the Euler comparisons), two grains of one body left to touch (the
Verlet comparison: with the damper a body's inner contacts cancel in its sums), the body state not restored
from the history (the resume tests and the resumed bake), a body state that differs between two runs by
one part in 1e15 (the rerun test), the refusal of grains that do not rotate left out (its test).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from engine.backends import make_backend
from engine.backends.rt_support import rt_refusal
from engine.errors import MochiError
from engine.model import Body, Domain, Gravity, Material
from engine.preset import load_preset
from engine.scene import setup_from_arrays, setup_from_preset

from .test_rt_backend import (POSITION_TOLERANCE, SPRING_TOLERANCE, STEPS, VELOCITY_TOLERANCE, _assert_same_history,
                              _far, _pair_map, _rt, _run, assert_a_rerun_gives_the_same_bits, assert_same_state,
                              cpu_history_resumed_on_rt, resume_halfway)
from .test_rt_rotation import OMEGA_TOLERANCE, ORIENTATION_TOLERANCE, assert_rotating_state_close

PRESETS = Path(__file__).resolve().parents[2] / "presets"


def _body(rng, count, centre):
    """``count`` grain centres within 14 mm of ``centre`` and radii of 5 to 8 mm (overlapping)."""
    return rng.uniform(-0.014, 0.014, (count, 3)) + centre, rng.uniform(0.005, 0.008, count)


def rigid_bodies(*, integrator="euler", seed=3):
    """Two rigid bodies (object ids 0 and 1) and loose grains (id 2) thrown at the floor and at each other
    (module docstring). Euler: the damper, grains that rotate; Verlet: tangential springs and rolling
    friction 0.1."""
    rng = np.random.default_rng(seed)
    a, ra = _body(rng, 20, (0.095, 0.0245, 0.12))
    b, rb = _body(rng, 16, (0.150, 0.0245, 0.12))
    lowest = min(float((a[:, 1] - ra).min()), float((b[:, 1] - rb).min()))
    a[:, 1] += 0.002 - lowest
    b[:, 1] += 0.002 - lowest
    # B 1 mm from A along x (their closest members' surfaces), so that they meet within a few steps.
    gap = np.linalg.norm(a[:, None] - b[None], axis=2) - ra[:, None] - rb[None]
    b[:, 0] -= gap.min() - 0.001
    # Loose grains: 12 falling on the bodies from 1 mm above their highest grain, 12 on the floor apart.
    top = max(float((a[:, 1] + ra).max()), float((b[:, 1] + rb).max())) + 0.001 + 0.007
    above = np.stack(np.meshgrid(np.linspace(0.085, 0.16, 4), [top], [0.11, 0.12, 0.13], indexing="ij"),
                     -1).reshape(-1, 3)
    floor = np.stack(np.meshgrid([0.03, 0.21], [0.008], np.linspace(0.04, 0.2, 6), indexing="ij"), -1).reshape(-1, 3)
    loose = np.concatenate([above, floor])
    loose[:, 0] += rng.uniform(-0.002, 0.002, len(loose))
    rl = np.full(len(loose), 0.007)
    positions = np.concatenate([a, b, loose])
    radius = np.concatenate([ra, rb, rl])
    object_id = np.repeat(np.int32([0, 1, 2]), [len(a), len(b), len(loose)])
    spin_a, spin_b = np.array([4.0, 9.0, -6.0]), np.array([-7.0, 3.0, 5.0])
    velocities = np.zeros_like(positions)
    velocities[object_id == 0] = np.cross(spin_a, a - a.mean(axis=0)) + [0.9, -1.5, 0.1]
    velocities[object_id == 1] = np.cross(spin_b, b - b.mean(axis=0)) + [-0.9, -1.5, -0.1]
    velocities[object_id == 2] = rng.normal(0.0, 0.3, (len(loose), 3))
    velocities[len(a) + len(b):len(a) + len(b) + len(above), 1] = -3.0  # onto the bodies, falling at 1.5 m/s
    verlet = integrator == "verlet"
    rolling = 0.1 if verlet else 0.0
    return setup_from_arrays(
        positions=positions.astype(np.float32), radius=radius.astype(np.float32),
        velocities=velocities.astype(np.float32), object_id=object_id,
        materials=(Material(friction=0.5, restitution=0.4, rolling_friction=rolling),),
        domain=Domain(lo=(0.0, 0.0, 0.0), hi=(0.25, 0.25, 0.25), wall_friction=0.5, wall_restitution=0.4,
                      wall_rolling_friction=rolling),
        gravity=Gravity(vector=(0.0, -9.81, 0.0)), dt=1.0e-4, stiffness=2.0e3,
        friction_model="spring" if verlet else "damper", rotation=True, integrator=integrator,
        bodies=(Body(object_id=0, kind="rigid"), Body(object_id=1, kind="rigid")))


INTEGRATORS = ("euler", "verlet")
#: The body state's bounds: centre and members' positions as test_rt_backend's, velocity too, angular
#: momentum L = I Ω held as Ω (divided by the body's largest principal inverse inertia).
BODY_KEYS = ("clump_centre", "clump_velocity", "clump_momentum", "clump_orientation")


def assert_bodies_close(history, reference, model):
    """The bodies' state of two histories (float64) within the bounds of the grains' (module docstring)."""
    assert history["clump_centre"].dtype == np.float64 and history["clump_centre"].shape == (model.clumps.count, 3)
    np.testing.assert_array_less(np.abs(history["clump_centre"] - reference["clump_centre"]), POSITION_TOLERANCE)
    np.testing.assert_array_less(np.abs(history["clump_velocity"] - reference["clump_velocity"]), VELOCITY_TOLERANCE)
    scale = np.linalg.norm(model.clumps.inertia_inv, ord=2, axis=(1, 2))[:, None]  # Ω per L
    np.testing.assert_array_less(scale * np.abs(history["clump_momentum"] - reference["clump_momentum"]),
                                 OMEGA_TOLERANCE)
    np.testing.assert_array_less(np.abs(history["clump_orientation"] - reference["clump_orientation"]),
                                 ORIENTATION_TOLERANCE)


@pytest.mark.parametrize("integrator", INTEGRATORS)
def test_rigid_bodies_thrown_at_the_floor_and_each_other_match_the_cpu(rt_device, integrator):
    setup = rigid_bodies(integrator=integrator)
    model = setup.model
    assert model.clumps.count == 2
    cpu_backend, rt_backend = make_backend("cpu", model), _rt(model, rt_device)
    cpu = _run(cpu_backend, setup.state, STEPS)
    rt = _run(rt_backend, setup.state, STEPS)
    assert rt.step == cpu.step == STEPS
    assert_rotating_state_close(rt, cpu)
    history, reference = rt_backend.get_contact_history(), cpu_backend.get_contact_history()
    assert_bodies_close(history, reference, model)
    # Rigid: every member's orientation is its body's; the bodies turned (and hit something: the CPU's
    # bodies moved off the free flight's straight line).
    for c in range(2):
        members = model.clumps.members[model.clumps.start[c]:model.clumps.start[c + 1]]
        assert np.all(rt.orientations[members] == rt.orientations[members[0]])
        assert abs(float(reference["clump_orientation"][c, 0])) < 0.99999
    # The bodies matter: the same grains loose end far outside the bounds.
    loose = dataclasses.replace(model, clumps=None)
    apart = _run(make_backend("cpu", loose), setup.state, STEPS)
    assert np.abs(apart.positions - cpu.positions).max() > 100 * POSITION_TOLERANCE
    if integrator == "verlet":  # the springs of the few pairs still touching, and of the walls
        for kind in ("spring", "rolling"):
            mine, theirs = (_pair_map(h, f"pair_{kind}", signed=kind == "spring") for h in (history, reference))
            assert len(theirs) >= 3 and set(mine) == set(theirs)
            assert max(np.abs(mine[pair] - theirs[pair]).max() for pair in theirs) <= SPRING_TOLERANCE
            assert np.abs(reference[f"wall_{kind}"]).max() > 20 * SPRING_TOLERANCE
            assert np.abs(history[f"wall_{kind}"] - reference[f"wall_{kind}"]).max() <= SPRING_TOLERANCE


def test_a_rerun_with_rigid_bodies_gives_the_same_bits(rt_device):
    histories = assert_a_rerun_gives_the_same_bits(rigid_bodies(integrator="verlet"), rt_device)
    assert histories[0]["clump_centre"].shape == (2, 3)


@pytest.mark.parametrize("integrator", INTEGRATORS)
def test_a_resume_with_rigid_bodies_gives_the_same_bits(rt_device, integrator):
    """As test_rt_backend's resume test, far from the world origin: the bodies' state is carried by the
    history (in the world frame, float64), bit for bit."""
    model, state = _far(rigid_bodies(integrator=integrator), np.array((1.0e4, -2.5e3, 7.0e3)))
    straight_backend, second, _, history = resume_halfway(model, state, rt_device)
    assert np.abs(history["clump_momentum"]).max() > 0.0
    assert_same_state(second.get_state(), straight_backend.get_state())
    _assert_same_history(second.get_contact_history(), straight_backend.get_contact_history())


@pytest.mark.parametrize("integrator", INTEGRATORS)
def test_a_cpu_history_with_rigid_bodies_resumes_on_rt(rt_device, integrator):
    """50 steps on the CPU, its state and history (bodies, springs, accelerations) to rt, 50 more: within the
    bounds of 100 CPU steps; without the history the bodies restart from their members (orientation
    identity), off the CPU's."""
    setup = rigid_bodies(integrator=integrator)
    resumed, cpu, halfway, _ = cpu_history_resumed_on_rt(setup, rt_device)
    assert_rotating_state_close(resumed.get_state(), cpu.get_state())
    assert_bodies_close(resumed.get_contact_history(), cpu.get_contact_history(), setup.model)
    forgetful = _rt(setup.model, rt_device)
    _run(forgetful, halfway, STEPS // 2)
    turned = forgetful.get_contact_history()["clump_orientation"] - cpu.get_contact_history()["clump_orientation"]
    assert np.abs(turned).max() > 100 * ORIENTATION_TOLERANCE


def landing_bunny():
    """presets/bunny_rigid.toml (coarse: 398 grains, one body, its own dt of 2.4e-4 s), moved to 2 mm above
    the floor and falling at 2.5 m/s (as it lands)."""
    setup = setup_from_preset(load_preset(PRESETS / "bunny_rigid.toml"), particles=400)
    state = setup.state
    positions = state.positions.copy()
    positions[:, 1] -= float((positions[:, 1] - setup.model.radius).min()) - 0.002
    velocities = state.velocities.copy()
    velocities[:, 1] = -2.5
    return dataclasses.replace(setup, state=dataclasses.replace(state, positions=positions, velocities=velocities))


def test_the_rigid_bunny_preset_lands_on_rt_as_on_the_cpu(rt_device):
    """The landing bunny, 100 steps: finite, and within the bounds of test_rt_backend and test_rt_rotation."""
    setup = landing_bunny()
    model, state = setup.model, setup.state
    assert model.clumps.count == 1 and model.physics.rotation
    cpu_backend, rt_backend = make_backend("cpu", model), _rt(model, rt_device)
    cpu = _run(cpu_backend, state, STEPS)
    rt = _run(rt_backend, state, STEPS)
    assert np.isfinite(rt.positions).all() and np.isfinite(rt.angular_velocities).all()
    assert np.abs(cpu.angular_velocities).max() > 10 * OMEGA_TOLERANCE  # it hit the floor and turned
    assert_rotating_state_close(rt, cpu)
    assert_bodies_close(rt_backend.get_contact_history(), cpu_backend.get_contact_history(), model)


def test_an_rt_bake_of_the_rigid_bunny_matches_the_cpu_and_resumes_from_its_cache_bit_for_bit(rt_device, tmp_path):
    """mochi's bake of the landing bunny on rt: 3 frames (492 steps) straight, and 2 frames, cancelled, resumed
    to 3 from the cache (the bodies' state read back from disk in the CPU backend's keys): the same frame
    files, byte for byte; every frame finite and within the bounds of test_rt_backend of the CPU's bake."""
    from engine.bake import bake
    from engine.cache import read_frame

    from .test_rt_backend import bake_cancelled_and_resumed

    setup = landing_bunny()
    straight, resumed, history = bake_cancelled_and_resumed(setup, tmp_path)
    clumps = {key: value for key, value in history.items() if key.startswith("clump_")}
    assert sorted(clumps) == sorted(f"clump_{name}" for name in
                                    ("centre", "velocity", "momentum", "orientation", "force", "torque"))
    assert all(value.dtype == np.float64 for value in clumps.values())
    assert len(straight) == 3 and straight == resumed
    bake(setup, tmp_path / "cpu", frames=3, backend="cpu")
    for frame in (1, 2, 3):
        rt, cpu = (read_frame(tmp_path / name, frame) for name in ("full", "cpu"))
        for axis in "xyz":
            assert np.isfinite(rt[axis]).all()
            assert np.abs(rt[axis] - cpu[axis]).max() <= POSITION_TOLERANCE, (frame, axis)
    assert np.abs(cpu["y"] - setup.state.positions[:, 1]).max() > 0.01  # it fell, landed and moved


def test_rigid_bodies_of_grains_that_do_not_rotate_are_refused_before_any_device_work(monkeypatch):
    """As on the CUDA backends (gpu_params.check_bodies); rigid bodies of rotating grains are stepped."""
    from engine.backends import rt_backend

    def no_device(kind=None):
        raise AssertionError("a device was opened for a model the rt backend refuses")

    monkeypatch.setattr(rt_backend, "open_rt_device", no_device)
    setup = rigid_bodies()
    assert rt_refusal(setup.model) is None
    flat = setup_from_arrays(positions=setup.state.positions, radius=setup.model.radius,
                             object_id=np.where(setup.model.clumps.clump >= 0, setup.model.clumps.clump, 2),
                             materials=setup.model.physics.materials, domain=setup.model.physics.domain, dt=1.0e-4,
                             stiffness=2.0e3, rotation=False, integrator="euler",
                             bodies=setup.model.physics.bodies).model
    assert flat.clumps.count == 2
    with pytest.raises(MochiError) as info:
        make_backend("rt", flat)
    sentence = str(info.value)
    assert sentence.startswith("The rt backend ") and "rigid bodies" in sentence and "rotat" in sentence
    assert sentence.endswith(".") and sentence.count(". ") == 0 and "--backend cpu" in sentence
