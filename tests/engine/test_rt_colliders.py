"""Mesh colliders, static and moving, on the rt backend (engine/backends/rt_colliders.py, kernels/rt_colliders.slang).

The collider law runs in float64 on the device, as on the CPU (engine/colliders/kernels.py) and in the CUDA
kernels, so its per-step differences are those of the grains' own float32 arithmetic: the tolerances of
tests/engine/test_rt_backend.py hold (1e-6 m, 2e-4 m/s after 100 steps), and the collider springs, which
integrate the same slip, agree within its spring bound (1e-7 m).

Mistakes made on purpose, each caught here: the collider force left out of rt_step_forces (the ramp: off by
far more than the bounds), the springs not read back from the slot inherited (the spring comparison), the
swept test skipped (the thin-shell throw: the grain ends below the plane), the springs not restored on a
resume (bit-exact resume and the CPU history resume), the rolling springs not kept (the rolling-cohesion
ramp), the colliders' force left out of the bowl_pour bake, and, for moving colliders, the surface velocity
left out (the belt) and the swept test's start not moved with the triangle (the plane moving through a grain).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from engine.backends import make_backend
from engine.colliders import Collider, ColliderSet
from engine.model import Domain, Gravity, Material
from engine.scene import setup_from_arrays, setup_from_preset

from .test_rt_backend import (POSITION_TOLERANCE, SPRING_TOLERANCE, STEPS, VELOCITY_TOLERANCE, _rt, _run,
                              assert_a_rerun_gives_the_same_bits, assert_same_state, cpu_history_resumed_on_rt,
                              resume_halfway)

PRESETS = Path(__file__).resolve().parents[2] / "presets"


def ramp(*, angle_deg=20.0, cells=4, size=0.16):
    """A square plane of 2·cells² triangles tilted by ``angle_deg`` about z, through the origin."""
    xs = np.linspace(-size / 2, size / 2, cells + 1)
    x, z = np.meshgrid(xs, xs, indexing="ij")
    vertices = np.stack([x.ravel(), np.zeros(x.size), z.ravel()], axis=1)
    index = np.arange(x.size).reshape(cells + 1, cells + 1)
    a, b, c, d = (index[:-1, :-1].ravel(), index[1:, :-1].ravel(), index[1:, 1:].ravel(), index[:-1, 1:].ravel())
    theta = np.radians(angle_deg)
    tilt = np.array([[np.cos(theta), -np.sin(theta), 0.0], [np.sin(theta), np.cos(theta), 0.0], [0.0, 0.0, 1.0]])
    return vertices @ tilt.T, np.concatenate([np.stack([a, b, c], 1), np.stack([a, c, d], 1)])


def ramp_scene(*, friction_model="spring", rotation=False, integrator="euler", velocities=None, seed=0,
               rolling_friction=0.0, cohesion=0.0, motion=None):
    """~300 grains (radius 5 mm) in four layers just above a tilted ramp collider, some touching it at the
    start and falling onto it, others onto each other; a closed box around it."""
    rng = np.random.default_rng(seed)
    vertices, triangles = ramp()
    plane = Collider("ramp", vertices, triangles, thickness=0.002, restitution=0.4, friction=0.5,
                     rolling_friction=rolling_friction, cohesion=cohesion, motion=motion)
    axis = np.arange(-0.06, 0.0601, 0.0105)
    x, z = np.meshgrid(axis, axis, indexing="ij")
    layers = []
    theta = np.radians(20.0)
    for layer in range(4):
        y = np.tan(theta) * x + 0.006 / np.cos(theta) + 0.0105 * layer
        layers.append(np.stack([x.ravel(), y.ravel(), z.ravel()], 1))
    positions = np.concatenate(layers) + rng.uniform(-5e-4, 5e-4, (len(layers) * x.size, 3))
    if velocities is None:
        velocities = rng.normal(0.0, 0.1, positions.shape)
    material = Material(name="m", density=2500.0, restitution=0.5, friction=0.4, rolling_friction=rolling_friction,
                        cohesion=cohesion)
    return setup_from_arrays(
        positions=positions.astype(np.float32), radius=np.full(len(positions), 0.005, np.float32),
        velocities=np.asarray(velocities, np.float32), materials=(material,),
        domain=Domain(lo=(-0.1, -0.1, -0.1), hi=(0.1, 0.2, 0.1), wall_restitution=0.5, wall_friction=0.3),
        gravity=Gravity(vector=(0.0, -9.81, 0.0)), stiffness=2.0e3, dt=1.0e-4, colliders=ColliderSet((plane,)),
        friction_model=friction_model, rotation=rotation, integrator=integrator)


def collider_springs(history) -> dict[tuple[int, int], np.ndarray]:
    """(collider, grain) → its slots' springs, float64 (MAX_CONTACTS, 6), from a history."""
    c = history.colliders
    return {(int(a), int(b)): s for a, b, s in zip(c["collider_index"], c["collider_particle"], c["collider_spring"])}


def assert_collider_springs_close(history, reference):
    """The same (collider, grain) entries with springs within SPRING_TOLERANCE, slot for slot."""
    ours, theirs = collider_springs(history), collider_springs(reference)
    assert ours.keys() == theirs.keys()
    assert max(np.abs(s).max() for s in theirs.values()) > 10 * SPRING_TOLERANCE  # springs that mean something
    for key, spring in theirs.items():
        assert np.abs(ours[key] - spring).max() <= SPRING_TOLERANCE, key


CASES = {"damper": dict(friction_model="damper"), "spring": dict(friction_model="spring"),
         "rotation-verlet": dict(rotation=True, integrator="verlet"),
         "rolling-cohesion": dict(rotation=True, integrator="verlet", rolling_friction=0.1, cohesion=2.0e3)}


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_100_steps_on_a_ramp_match_the_cpu(rt_device, case):
    setup = ramp_scene(**CASES[case])
    cpu_backend, rt_backend = make_backend("cpu", setup.model), _rt(setup.model, rt_device)
    cpu = _run(cpu_backend, setup.state, STEPS)
    rt = _run(rt_backend, setup.state, STEPS)
    assert rt.step == cpu.step == STEPS
    assert np.abs(cpu.positions - setup.state.positions).max() > 100 * POSITION_TOLERANCE
    assert np.abs(rt.positions - cpu.positions).max() <= POSITION_TOLERANCE
    assert np.abs(rt.velocities - cpu.velocities).max() <= VELOCITY_TOLERANCE
    np.testing.assert_array_equal(rt.active, cpu.active)
    rt_history, cpu_history = rt_backend.get_contact_history(), cpu_backend.get_contact_history()
    assert len(cpu_history.colliders["collider_index"]) > 30  # grains resting on the ramp
    np.testing.assert_array_equal(rt_history.colliders["collider_particle"], cpu_history.colliders["collider_particle"])
    np.testing.assert_array_equal(rt_history.colliders["collider_count"], cpu_history.colliders["collider_count"])
    if case != "damper":
        assert_collider_springs_close(rt_history, cpu_history)
    if case in ("rotation-verlet", "rolling-cohesion"):
        assert np.abs(rt.angular_velocities - cpu.angular_velocities).max() <= 5e-3
    if case == "rolling-cohesion":  # the rolling springs (columns 3–5) kept and compared too
        assert max(np.abs(s[:, 3:]).max() for s in collider_springs(cpu_history).values()) > 10 * SPRING_TOLERANCE


def test_a_grain_that_would_tunnel_through_a_thin_plane_is_put_back_as_on_the_cpu(rt_device):
    """A grain (radius 2 mm) at 60 m/s towards a flat plane 4.5 mm below its centre, 6 mm a step: the centre
    jumps through the 1 mm shell in one step, and the swept test puts it back on top, its velocity reflected,
    as on the CPU (without it the grain ends below the plane, pushed on downwards)."""
    vertices, triangles = ramp(angle_deg=0.0, cells=2)
    plane = Collider("plane", vertices, triangles, thickness=0.001, restitution=0.5, friction=0.0)
    material = Material(name="m", density=2500.0, restitution=0.5, friction=0.0)
    setup = setup_from_arrays(
        positions=np.float32([[0.01, 0.0045, 0.013]]), radius=np.float32([0.002]),
        velocities=np.float32([[0.0, -60.0, 0.0]]), materials=(material,),
        domain=Domain(lo=(-0.1, -0.1, -0.1), hi=(0.1, 0.1, 0.1)), gravity=Gravity(vector=(0.0, 0.0, 0.0)),
        stiffness=1.0e3, dt=1.0e-4, colliders=ColliderSet((plane,)), friction_model="damper", rotation=False,
        integrator="euler")
    rt_backend = _rt(setup.model, rt_device)
    cpu, rt = (_run(backend, setup.state, 1) for backend in (make_backend("cpu", setup.model), rt_backend))
    assert rt.positions[0, 1] > 0.0 and rt.velocities[0, 1] > 0.0  # put back above, moving up
    assert rt_backend.colliders.swept_corrections == 1
    np.testing.assert_array_equal(rt.positions, cpu.positions)
    np.testing.assert_array_equal(rt.velocities, cpu.velocities)


@pytest.mark.parametrize("case", ["spring", "rotation-verlet"])
def test_a_rerun_and_a_resume_give_the_same_bits(rt_device, case):
    setup = ramp_scene(**CASES[case])
    histories = assert_a_rerun_gives_the_same_bits(setup, rt_device)
    assert len(histories[0].colliders["collider_index"]) > 30
    straight, resumed, _, history = resume_halfway(setup.model, setup.state, rt_device)
    assert len(history.colliders["collider_index"]) > 15  # collider springs to carry
    assert_same_state(straight.get_state(), resumed.get_state())
    a, b = straight.get_contact_history().colliders, resumed.get_contact_history().colliders
    assert list(a) == list(b)
    for key in a:
        np.testing.assert_array_equal(a[key], b[key], err_msg=key)


def test_a_cpu_history_resumes_on_rt(rt_device):
    """50 CPU steps, their state and collider springs to rt, 50 more: within the bounds of 100 CPU steps."""
    rt, cpu, _, _ = cpu_history_resumed_on_rt(ramp_scene(), rt_device)
    assert np.abs(rt.get_state().positions - cpu.get_state().positions).max() <= POSITION_TOLERANCE
    assert np.abs(rt.get_state().velocities - cpu.get_state().velocities).max() <= VELOCITY_TOLERANCE
    assert_collider_springs_close(rt.get_contact_history(), cpu.get_contact_history())


def test_bowl_pour_bakes_on_rt_as_on_the_cpu(rt_device, tmp_path):
    """The bowl_pour preset (rotation, velocity Verlet, 'spring', dt ≈ 1.9e-5 s) with 300 grains, their column
    squeezed to 0.4 of its height just above the bowl and thrown down 2.5 m/s faster, so that they land in it
    within the first frame (2172 steps; about a dozen rest on it at the end), baked on rt for one frame:
    finite, the collider springs in the cached history, and as close to the CPU as the CPU is to itself
    started one float32 step away. Over thousands of steps of grain impacts any rounding grows (both
    differences grow together, measured step by step: 3e-6 m at step 800, 2e-5 m at 1000, 2e-3 to 4e-3 m at
    the frame), so the bound is a multiple of that sensitivity, 5x where 2x was measured, and the centroids
    within it; the bowl left out moves grains by a tenth of a metre."""
    from engine.bake import bake
    from engine.cache import read_frame, read_history
    from engine.preset import load_preset

    setup = setup_from_preset(load_preset(PRESETS / "bowl_pour.toml"), particles=300)
    positions, velocities = setup.state.positions.copy(), setup.state.velocities.copy()
    positions[:, 1] = 0.24 + (positions[:, 1] - 0.42) * 0.4
    velocities[:, 1] -= 2.5
    state = dataclasses.replace(setup.state, positions=positions, velocities=velocities)
    setup = dataclasses.replace(setup, state=state)
    steps = setup.model.physics.steps_per_frame
    bake(setup, tmp_path / "rt", frames=2, backend="rt")  # frame 1 is the start, frame 2 one frame later
    frame = read_frame(tmp_path / "rt", 2)
    history = read_history(tmp_path / "rt", 2)
    assert len(history["collider_index"]) > 5 and np.abs(history["collider_spring"]).max() > 0.0
    rt_positions = np.stack([frame[axis] for axis in "xyz"], axis=1).astype(np.float64)
    assert np.isfinite(rt_positions).all()
    cpu, nudged = (_run(make_backend("cpu", setup.model), start, steps) for start in (
        state, dataclasses.replace(state, positions=np.nextafter(state.positions, np.float32(np.inf)))))
    sensitivity = np.abs(nudged.positions - cpu.positions).max()
    assert 0.0 < sensitivity < 0.01
    assert np.abs(rt_positions - cpu.positions).max() <= 5.0 * sensitivity
    assert np.abs(rt_positions.mean(axis=0) - cpu.positions.mean(axis=0)).max() <= sensitivity


MOTIONS = {
    # A conveyor belt: the ramp sliding along x at 0.5 m/s (the surface velocity drags the grains).
    "belt": dict(linear=(0.5, 0.0, 0.0)),
    # The ramp turning about the vertical at 3 rad/s: vertex velocities that vary, normals that turn.
    "turning": dict(angular=(0.0, 3.0, 0.0)),
}


@pytest.mark.parametrize("motion", MOTIONS, ids=list(MOTIONS))
@pytest.mark.parametrize("case", ["spring", "rotation-verlet"])
def test_a_moving_ramp_matches_the_cpu_and_resumes_bit_for_bit(rt_device, motion, case):
    from engine.colliders import RigidMotionAnalytic

    spec = MOTIONS[motion]
    setup = ramp_scene(**CASES[case], motion=RigidMotionAnalytic(
        np.eye(3), (0, 0, 0), (0, 0, 0), spec.get("angular", (0, 0, 0)), spec.get("linear", (0, 0, 0))))
    cpu_backend, rt_backend = make_backend("cpu", setup.model), _rt(setup.model, rt_device)
    cpu = _run(cpu_backend, setup.state, STEPS)
    rt = _run(rt_backend, setup.state, STEPS)
    assert np.abs(rt.positions - cpu.positions).max() <= POSITION_TOLERANCE
    assert np.abs(rt.velocities - cpu.velocities).max() <= VELOCITY_TOLERANCE
    assert_collider_springs_close(rt_backend.get_contact_history(), cpu_backend.get_contact_history())
    straight, resumed, _, history = resume_halfway(setup.model, setup.state, rt_device)
    assert len(history.colliders["collider_index"]) > 3  # (the belt carries most grains off the ramp)
    assert_same_state(straight.get_state(), resumed.get_state())


def test_a_plane_moving_through_a_grain_in_one_step_pushes_it_as_on_the_cpu(rt_device):
    """A thin plane moving up at 60 m/s, 4.5 mm below a resting grain's centre, passes it in one step (6 mm):
    the swept test in the plane's frame puts the grain back on top and gives it the plane's push, as on the
    CPU (without the motion's displacement the grain is left below)."""
    from engine.colliders import RigidMotionAnalytic

    vertices, triangles = ramp(angle_deg=0.0, cells=2)
    plane = Collider("plane", vertices, triangles, thickness=0.001, restitution=0.5, friction=0.0,
                     motion=RigidMotionAnalytic(np.eye(3), (0, 0, 0), (0, 0, 0), (0, 0, 0), (0.0, 60.0, 0.0)))
    material = Material(name="m", density=2500.0, restitution=0.5, friction=0.0)
    setup = setup_from_arrays(
        positions=np.float32([[0.01, 0.0045, 0.013]]), radius=np.float32([0.002]),
        velocities=np.float32([[0.0, 0.0, 0.0]]), materials=(material,),
        domain=Domain(lo=(-0.1, -0.1, -0.1), hi=(0.1, 0.1, 0.1)), gravity=Gravity(vector=(0.0, 0.0, 0.0)),
        stiffness=1.0e3, dt=1.0e-4, colliders=ColliderSet((plane,)), friction_model="damper", rotation=False,
        integrator="euler")
    rt_backend = _rt(setup.model, rt_device)
    cpu, rt = (_run(backend, setup.state, 1) for backend in (make_backend("cpu", setup.model), rt_backend))
    assert rt.positions[0, 1] > 0.006 and rt.velocities[0, 1] > 60.0  # above the plane, faster than it
    assert rt_backend.colliders.swept_corrections == 1
    np.testing.assert_array_equal(rt.positions, cpu.positions)
    np.testing.assert_array_equal(rt.velocities, cpu.velocities)


def test_devices_without_float64_or_ray_queries_are_refused_in_one_sentence(rt_device):
    """Metal has no float64 in shaders; a pipeline-only device no inline ray queries: each is named."""
    from engine.backends.rt_colliders import rt_collider_refusal

    model = ramp_scene().model
    assert rt_collider_refusal(model, rt_device) is None
    for change, words in ((dict(kind="metal"), "float64"), (dict(ray_query=False), "inline ray queries")):
        sentence = rt_collider_refusal(model, dataclasses.replace(rt_device, **change))
        assert words in sentence and "--backend cpu" in sentence and sentence.startswith("The rt backend")
        assert sentence.count(". ") == 0 and sentence.endswith(".")
    assert rt_collider_refusal(two_radius_model(), dataclasses.replace(rt_device, kind="metal")) is None


def two_radius_model():
    from .test_rt_backend import two_radius_box

    return two_radius_box().model
