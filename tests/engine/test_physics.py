"""Physics checked against physics: restitution, momentum, energy, friction angle, rest, gravity."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from engine.backends.cpu import BackendCpu
from engine.contact_law import contact_force, damping_ratio
from engine.model import Gravity

from .conftest import scene


def _run(setup, steps):
    backend = BackendCpu(setup.model)
    backend.set_state(setup.state)
    backend.step(steps)
    return backend.get_state()


@pytest.mark.parametrize("restitution", [0.3, 0.5, 0.8])
def test_ball_dropped_on_floor_rebounds_to_e_squared_height(restitution):
    r, h = 0.01, 0.1
    setup = scene([[0.0, r + h, 0.0]], [r], gravity=(0, -9.81, 0), lo=(-0.1, 0, -0.1), hi=(0.1, 1, 0.1),
                  restitution=restitution, stiffness=1.0e5, dt=2.0e-5)
    backend = BackendCpu(setup.model)
    backend.set_state(setup.state)
    heights, bounced = [], False
    for _ in range(12000):
        backend.step(1)
        y, vy = float(backend.state.positions[0, 1]), float(backend.state.velocities[0, 1])
        if y < r:
            bounced = True
        if bounced and y > r:
            heights.append(y - r)
            if vy < 0:  # past the apex of the rebound
                break
    apex = max(heights)
    assert apex == pytest.approx(restitution ** 2 * h, rel=0.05)


def test_momentum_is_conserved_without_walls_or_gravity(rng):
    n = 300
    positions = rng.uniform(-0.1, 0.1, (n, 3))
    velocities = rng.normal(0, 1.0, (n, 3))
    radius = rng.uniform(0.008, 0.02, n)
    setup = scene(positions, radius, velocities=velocities, lo=(-50, -50, -50), hi=(50, 50, 50),
                  open_sides=("-x", "+x", "-y", "+y", "-z", "+z"), friction=0.4, stiffness=1e4)
    mass = setup.model.mass.astype(np.float64)[:, None]
    before = (mass * setup.state.velocities).sum(axis=0)
    backend = BackendCpu(setup.model)
    backend.set_state(setup.state)
    collided = 0
    for _ in range(10):
        collided += len(backend.contact_pairs())
        backend.step(30)
    after = (mass * backend.get_state().velocities).sum(axis=0)
    scale = (mass * np.abs(setup.state.velocities)).sum()
    assert collided > 100
    assert np.abs(after - before).max() < 1e-5 * scale


def _energy(setup, state, gravity):
    """Kinetic + gravitational + elastic (pairs and walls) energy [J]."""
    m = setup.model.mass.astype(np.float64)
    v = state.velocities.astype(np.float64)
    x = state.positions.astype(np.float64)
    r = setup.model.radius.astype(np.float64)
    k = setup.model.physics.stiffness
    energy = 0.5 * (m * (v ** 2).sum(1)).sum() - (m * (x @ np.asarray(gravity))).sum()
    backend = BackendCpu(setup.model)
    backend.set_state(state)
    pairs = backend.contact_pairs()
    if len(pairs):
        d = np.linalg.norm(x[pairs[:, 0]] - x[pairs[:, 1]], axis=1)
        energy += 0.5 * k * ((r[pairs[:, 0]] + r[pairs[:, 1]] - d) ** 2).sum()
    lo, hi = np.asarray(setup.model.physics.domain.lo), np.asarray(setup.model.physics.domain.hi)
    energy += 0.5 * k * (np.maximum(r[:, None] - (x - lo), 0) ** 2).sum()
    energy += 0.5 * k * (np.maximum(r[:, None] - (hi - x), 0) ** 2).sum()
    return energy


@pytest.mark.parametrize("gravity", [(0.0, 0.0, 0.0), (0.0, -9.81, 0.0)])
def test_energy_never_grows_with_damping(rng, gravity):
    n = 400
    positions = rng.uniform(0.05, 0.25, (n, 3))
    keep = np.ones(n, bool)
    radius = np.full(n, 0.01)
    setup = scene(positions[keep], radius[keep], velocities=rng.normal(0, 0.5, (n, 3)), gravity=gravity,
                  lo=(0, 0, 0), hi=(0.3, 0.3, 0.3), restitution=0.6, friction=0.3, stiffness=2e3)
    backend = BackendCpu(setup.model)
    backend.set_state(setup.state)
    previous = _energy(setup, setup.state, gravity)
    start = previous
    for _ in range(20):
        backend.step(50)
        current = _energy(setup, backend.get_state(), gravity)
        # Explicit integration wobbles the elastic energy by O(dt); growth beyond that is a bug.
        assert current <= previous + 1e-3 * abs(start)
        previous = current
    assert previous < 0.9 * start or gravity[1] != 0.0


@pytest.mark.parametrize("rotation,rolling", [(False, 0.0), (True, 0.1)])
def test_settled_pile_stays_at_rest(rng, rotation, rolling):
    """Grains poured into a box settle into a bed that then stays put (non-rotating, or rotating with
    rolling resistance: free-rolling spheres keep creeping much longer).

    Friction is the regularised Coulomb law (no static spring), so a free slope creeps at about
    g·sinθ/(2ω); a confined bed must not move measurably.
    """
    r = 0.005
    g = np.stack(np.meshgrid(*[np.arange(6)] * 3, indexing="ij"), -1).reshape(-1, 3) * 2.4 * r + 2 * r
    positions = g + rng.uniform(-0.15 * r, 0.15 * r, g.shape)
    setup = scene(positions, rng.uniform(0.9 * r, r, len(g)), gravity=(0, -9.81, 0), lo=(0, 0, 0),
                  hi=(0.07, 0.3, 0.07), restitution=0.3, friction=0.5, stiffness=2e4, rotation=rotation,
                  integrator="verlet" if rotation else "euler", rolling_friction=rolling)
    backend = BackendCpu(setup.model)
    backend.set_state(setup.state)
    steps_per_second = int(1.0 / setup.model.physics.dt)
    backend.step(steps_per_second)  # 1 s: fall, pour and settle
    settled = backend.get_state()
    backend.step(steps_per_second // 2)
    later = backend.get_state()
    drift = np.linalg.norm(later.positions - settled.positions, axis=1).max()
    speed = np.linalg.norm(later.velocities, axis=1).max()
    assert later.positions[:, 1].max() < 0.06  # it did collapse into a bed
    assert drift < 0.02 * r
    assert speed < 1e-3


@pytest.mark.parametrize("angle_deg,slides", [(15.0, False), (24.0, False), (29.0, True), (40.0, True)])
def test_block_on_slope_slides_only_beyond_friction_angle(angle_deg, slides):
    """A sphere (no rotation, so a sliding block) on the floor, gravity tilted by the slope angle."""
    mu = 0.5  # friction angle atan(0.5) = 26.6°
    r = 0.01
    theta = math.radians(angle_deg)
    g = (9.81 * math.sin(theta), -9.81 * math.cos(theta), 0.0)
    setup = scene([[0.0, r, 0.0]], [r], gravity=g, lo=(-10, 0, -1), hi=(10, 1, 1),
                  friction=mu, restitution=0.2, stiffness=1e5, dt=2e-5, rotation=False)
    backend = BackendCpu(setup.model)
    backend.set_state(setup.state)
    backend.step(10000)  # 0.2 s: settle into the contact
    x0, v0 = float(backend.state.positions[0, 0]), float(backend.state.velocities[0, 0])
    backend.step(25000)  # 0.5 s
    x1, v1 = float(backend.state.positions[0, 0]), float(backend.state.velocities[0, 0])
    if slides:
        expected = 9.81 * (math.sin(theta) - mu * math.cos(theta))
        assert (v1 - v0) / 0.5 == pytest.approx(expected, rel=0.05)
    else:
        assert abs(x1 - x0) < 1e-3 * r  # held by the tangential spring: static friction


def test_rotating_gravity_points_where_it_should():
    gravity = Gravity(vector=(0.0, 0.0, -9.81), rotation_axis=(0.0, 1.0, 0.0), rotation_rate=0.25 * math.pi)
    assert np.allclose(gravity.at(0.0), [0, 0, -9.81])
    assert np.allclose(gravity.at(2.0), [-9.81, 0, 0], atol=1e-9)  # a quarter turn in 2 s, right-handed about +y
    assert np.allclose(gravity.at(4.0), [0, 0, 9.81], atol=1e-9)
    assert np.allclose(gravity.at(8.0), [0, 0, -9.81], atol=1e-9)
    for t in np.linspace(0, 10, 17):
        assert np.linalg.norm(gravity.at(t)) == pytest.approx(9.81)
        assert gravity.at(t)[1] == pytest.approx(0.0, abs=1e-12)


def test_rotating_gravity_moves_a_free_particle_along_the_rotated_vector():
    gravity = (0.0, 0.0, -9.81)
    setup = scene([[0.0, 0.0, 0.0]], [0.01], gravity=gravity, lo=(-100, -100, -100), hi=(100, 100, 100),
                  stiffness=1e3, dt=1e-4)
    setup.model.physics.__dict__  # physics is frozen; build one with rotation instead
    from engine.scene import setup_from_arrays
    from engine.model import Domain, Material

    rotating = setup_from_arrays(positions=np.zeros((1, 3), np.float32), radius=np.array([0.01], np.float32),
                                 domain=Domain(lo=(-100,) * 3, hi=(100,) * 3), materials=(Material(),),
                                 gravity=Gravity(vector=gravity, rotation_axis=(0, 1, 0), rotation_rate=math.pi),
                                 dt=1e-4, stiffness=1e3)
    state = _run(rotating, 10000)  # 1 s = half a turn: the velocity integral of g is (−2g/π, 0, 0)
    assert state.velocities[0, 0] == pytest.approx(-2 * 9.81 / math.pi, rel=1e-3)
    assert state.velocities[0, 2] == pytest.approx(0.0, abs=2e-3)


@pytest.mark.parametrize("friction_model", ["spring", "damper"])
def test_kernel_matches_reference_contact_law(friction_model):
    """Two overlapping spheres with relative motion: one step's velocity change equals F/m·dt of the
    float64 reference in engine.contact_law."""
    positions = np.array([[0.0, 0.0, 0.0], [0.018, 0.004, -0.002]])
    velocities = np.array([[0.3, -0.2, 0.1], [-0.4, 0.5, 0.2]])
    radius = np.array([0.01, 0.012])
    setup = scene(positions, radius, velocities=velocities, friction=0.4, restitution=0.7, stiffness=5e3, dt=1e-6)
    setup = dataclasses.replace(setup, model=dataclasses.replace(
        setup.model, physics=dataclasses.replace(setup.model.physics, friction_model=friction_model)))
    state = _run(setup, 1)
    m = setup.model.mass.astype(np.float64)
    x = setup.state.positions.astype(np.float64)
    v = setup.state.velocities.astype(np.float64)
    force = contact_force(x[0], x[1], v[0], v[1], radius[0], radius[1], m[0], m[1], 5e3, damping_ratio(0.7), 0.4,
                          spring=np.zeros(3) if friction_model == "spring" else None, dt=1e-6)
    if friction_model == "spring":
        force = force[0]
    dv = state.velocities.astype(np.float64) - v
    assert np.allclose(dv[0], force / m[0] * 1e-6, rtol=1e-4, atol=1e-7)  # float32 velocity rounding
    assert np.allclose(dv[1], -force / m[1] * 1e-6, rtol=1e-4, atol=1e-7)  # float32 velocity rounding
    assert np.linalg.norm(force) > 0
