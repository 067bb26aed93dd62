"""Rotation, rolling resistance, cohesion and velocity Verlet checked against physics and against the
float64 reference law (engine.contact_law.contact_response)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from engine.backends import cpu
from engine.backends import cpu_kernels as k
from engine.backends.cpu import BackendCpu
from engine.contact_law import contact_response, damping_ratio

from .conftest import scene

R = 0.01          # grain radius [m]
STIFFNESS = 1.0e4  # [N/m]
DT = 1.0e-4       # [s]: ~64 steps per contact period for a 1 cm glass bead
THETA = math.radians(20.0)
G = 9.81


def _slope(rolling_friction=0.0, friction=0.5):
    """One grain resting on the floor with gravity tilted by THETA: a sphere on a 20° slope."""
    mass = 2500.0 * 4.0 / 3.0 * math.pi * R ** 3
    rest = mass * G * math.cos(THETA) / STIFFNESS  # resting overlap
    setup = scene([[0.0, R - rest, 0.0]], [R], gravity=(G * math.sin(THETA), -G * math.cos(THETA), 0.0),
                  lo=(-10, 0, -1), hi=(10, 1, 1), friction=friction, restitution=0.3, stiffness=STIFFNESS,
                  dt=DT, rolling_friction=rolling_friction)
    backend = BackendCpu(setup.model)
    backend.set_state(setup.state)
    return backend


def _trajectory(backend, steps, every=10):
    t, x, v, w = [], [], [], []
    for _ in range(steps // every):
        backend.step(every)
        s = backend.state
        t.append(s.step * DT)
        x.append(float(s.positions[0, 0]))
        v.append(float(s.velocities[0, 0]))
        w.append(float(s.angular_velocities[0, 2]))
    return np.array(t), np.array(x), np.array(v), np.array(w)


def test_sphere_rolls_down_a_slope_at_five_sevenths_g_sin_theta_without_slip():
    t, x, v, w = _trajectory(_slope(), 3000)
    late = t > 0.02
    acceleration = 2.0 * np.polyfit(t[late], x[late], 2)[0]
    assert acceleration == pytest.approx(5.0 / 7.0 * G * math.sin(THETA), rel=0.01)
    # Rolling without slip: the contact point is at rest, v_x = −ω_z R.
    assert np.abs(v[late] + w[late] * R).max() < 0.01 * np.abs(v[late]).max()


def test_rolling_resistance_slows_rolling_by_its_coefficient():
    mu_r = 0.5 * math.tan(THETA)
    t, x, _, _ = _trajectory(_slope(rolling_friction=mu_r), 3000)
    late = t > 0.02
    acceleration = 2.0 * np.polyfit(t[late], x[late], 2)[0]
    # m a = m g sinθ − F, (2/5) m r² α = F r − μ_r N r, a = α r  ⇒  a = 5/7 g (sinθ − μ_r cosθ).
    assert acceleration == pytest.approx(5.0 / 7.0 * G * (math.sin(THETA) - mu_r * math.cos(THETA)), rel=0.02)


def test_rolling_resistance_above_the_slope_holds_the_sphere():
    backend = _slope(rolling_friction=1.5 * math.tan(THETA))
    backend.step(1000)  # settle into the springs
    x0 = float(backend.state.positions[0, 0])
    backend.step(2000)
    assert abs(float(backend.state.positions[0, 0]) - x0) < 1e-3 * R
    assert abs(float(backend.state.velocities[0, 0])) < 1e-4
    # and the same slope without rolling resistance rolls away
    free = _slope()
    free.step(3000)
    assert float(free.state.positions[0, 0]) > 0.05


def _pulled_grain(pull_fraction):
    """A grain stuck to the floor by SJKR cohesion, pulled off by an upward 'gravity'.

    With the linear spring the net normal force is f(δ) = kδ − cπ(2Rδ − δ²): for c > k/(2πR) it has an
    attractive well, the grain rests at δ* = 2R − k/(πc), and the largest pull it resists is
    cπ(δ*/2)² (at δ = δ*/2).
    """
    c = 2.0e5
    depth = 2.0 * R - STIFFNESS / (math.pi * c)
    strongest = c * math.pi * (0.5 * depth) ** 2
    mass = 2500.0 * 4.0 / 3.0 * math.pi * R ** 3
    setup = scene([[0.0, R - depth, 0.0]], [R], gravity=(0.0, pull_fraction * strongest / mass, 0.0),
                  lo=(-1, 0, -1), hi=(1, 1, 1), friction=0.5, restitution=0.5, stiffness=STIFFNESS, dt=DT,
                  cohesion=c)
    backend = BackendCpu(setup.model)
    backend.set_state(setup.state)
    backend.step(1000)
    return float(backend.state.positions[0, 1])


def test_cohesion_holds_against_a_pull_below_its_strength_and_lets_go_above():
    assert _pulled_grain(0.3) < R  # still in contact after 0.1 s
    assert _pulled_grain(1.5) > R + 0.05  # pulled off and gone


def _random_contacts(rng, count):
    for _ in range(count):
        ri, rj = rng.uniform(0.005, 0.02, 2)
        direction = rng.normal(size=3)
        direction /= np.linalg.norm(direction)
        dist = (ri + rj) * rng.uniform(0.8, 0.999)
        xi = rng.uniform(-0.1, 0.1, 3)
        yield (np.float32(ri), np.float32(rj), xi.astype(np.float32),
               (xi - dist * direction).astype(np.float32))


@pytest.mark.parametrize("friction_model", ["spring", "damper"])
def test_full_kernel_matches_the_reference_on_random_contacts(rng, friction_model):
    spring = friction_model == "spring"
    beta = np.array([[damping_ratio(0.4)]], np.float32)
    mu = np.array([[0.4]], np.float32)
    roll = np.array([[0.1]], np.float32)
    cohesion = np.array([[3.0e4]])
    for ri, rj, xi, xj in _random_contacts(rng, 40):
        pos = np.stack([xi, xj])
        vel = rng.normal(0, 0.3, (2, 3)).astype(np.float32)
        omega = rng.normal(0, 30.0, (2, 3)).astype(np.float32)
        radius = np.array([ri, rj], np.float32)
        mass = (2500.0 * 4.0 / 3.0 * math.pi * radius.astype(np.float64) ** 3).astype(np.float32)
        hist = rng.normal(0, 1e-5, (1, 6))
        before = hist.copy()
        pair_force, pair_torque = np.zeros((1, 3)), np.zeros((1, 6))
        force, torque = np.zeros((2, 3)), np.zeros((2, 3))
        k.pair_forces_full(pos, vel, omega, radius, mass, np.zeros(2, np.int32), np.ones(2, np.uint8),
                           np.array([0, 1, 1], np.int64), np.array([1], np.int32), beta, mu, roll, cohesion,
                           STIFFNESS, np.zeros((0, 0, 3)), spring, DT, hist, pair_force, pair_torque, force, torque, np.zeros(1, np.uint8),
                           np.full(2, -1, np.int32))
        f, ti, tj, xi_t, xi_r = contact_response(
            pos[0], pos[1], vel[0], vel[1], omega[0], omega[1], float(ri), float(rj), float(mass[0]),
            float(mass[1]), STIFFNESS, float(beta[0, 0]), float(mu[0, 0]), mu_roll=float(roll[0, 0]),
            cohesion=float(cohesion[0, 0]), spring=before[0, :3] if spring else None, rolling=before[0, 3:], dt=DT)
        scale = np.abs(f).max()
        np.testing.assert_allclose(pair_force[0], f, rtol=1e-9, atol=1e-12 * scale)
        np.testing.assert_allclose(pair_torque[0, :3], ti, rtol=1e-9, atol=1e-12 * scale * R)
        np.testing.assert_allclose(pair_torque[0, 3:], tj, rtol=1e-9, atol=1e-12 * scale * R)
        if spring:
            np.testing.assert_allclose(hist[0, :3], xi_t, rtol=1e-9, atol=1e-18)
        np.testing.assert_allclose(hist[0, 3:], xi_r, rtol=1e-9, atol=1e-18)


def test_full_wall_contact_matches_the_reference(rng):
    """Floor contacts through ``wall_forces_full`` then ``kick`` (acceleration only: kick_dt 0) against the
    reference wall."""
    for _ in range(30):
        r = np.float32(rng.uniform(0.005, 0.02))
        y = np.float32(r * rng.uniform(0.8, 0.999))
        pos = np.array([[0.3, y, 0.2]], np.float32)
        vel = rng.normal(0, 0.3, (1, 3)).astype(np.float32)
        omega = rng.normal(0, 30.0, (1, 3)).astype(np.float32)
        mass = np.array([2500.0 * 4.0 / 3.0 * math.pi * float(r) ** 3], np.float32)
        wall_hist = np.zeros((1, 6, 6))
        wall_hist[0, 2] = rng.normal(0, 1e-5, 6)
        before = wall_hist[0, 2].copy()
        acc, alpha = np.zeros((1, 3)), np.zeros((1, 3))
        mask = np.array([0, 0, 1, 0, 0, 0], np.int32)  # the floor only (side -y)
        beta = damping_ratio(0.4)
        force, torque = np.zeros((1, 3)), np.zeros((1, 3))
        vel, omega = vel.copy(), omega.copy()
        k.wall_forces_full(np.zeros(1, np.int64), pos, vel, omega, np.array([r]), mass, np.zeros(1, np.int32),
                           np.ones(1, np.uint8), np.zeros(3), np.ones(3), mask, np.array([beta], np.float32),
                           np.array([0.4], np.float32), np.array([0.1], np.float32), np.array([3.0e4]), STIFFNESS,
                           np.zeros((0, 3)), True, wall_hist, np.zeros(1, np.uint8), DT, force, torque, np.zeros(1, np.uint8))
        k.kick(pos, vel, omega, np.array([[1, 0, 0, 0]], np.float32), force, torque, np.array([r]), mass,
               np.ones(1, np.uint8), np.zeros(3), DT, 0.0, False, True, np.zeros(3), np.ones(3), mask,
               np.zeros((0, 12)), np.zeros(0), acc, alpha, pos.copy())
        f, ti, _, xi_t, xi_r = contact_response(
            pos[0], pos[0] * np.float32([1, 0, 1]), vel[0], [0, 0, 0], omega[0], [0, 0, 0], float(r), 0.0, float(mass[0]),
            math.inf, STIFFNESS, float(np.float32(beta)), float(np.float32(0.4)), mu_roll=float(np.float32(0.1)),
            cohesion=3.0e4, spring=before[:3], rolling=before[3:], dt=DT)
        inertia = 0.4 * float(mass[0]) * float(r) ** 2
        np.testing.assert_allclose(acc[0] * float(mass[0]), f, rtol=1e-9, atol=1e-12 * np.abs(f).max())
        np.testing.assert_allclose(alpha[0] * inertia, ti, rtol=1e-9, atol=1e-12 * np.abs(f).max() * R)
        np.testing.assert_allclose(wall_hist[0, 2, :3], xi_t, rtol=1e-9, atol=1e-18)
        np.testing.assert_allclose(wall_hist[0, 2, 3:], xi_r, rtol=1e-9, atol=1e-18)


def _pile(rng, n=300):
    positions = rng.uniform([-0.08, 0.0, -0.08], [0.08, 0.3, 0.08], (n, 3))
    positions[:, 1] += 0.012
    return scene(positions, rng.uniform(0.008, 0.012, n), gravity=(0, -9.81, 0), lo=(-0.1, 0, -0.1),
                 hi=(0.1, 1, 0.1), friction=0.5, stiffness=STIFFNESS, dt=DT, rolling_friction=0.2, cohesion=1.0e5)


def test_full_law_results_do_not_depend_on_the_thread_count(rng, monkeypatch):
    import numba

    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("one thread only")
    monkeypatch.setattr(cpu, "SINGLE_THREAD_BELOW", 0)
    setup = _pile(rng)
    results = []
    threads = numba.get_num_threads()
    try:
        for count in (1, 2):
            numba.set_num_threads(count)
            backend = BackendCpu(setup.model)
            backend.adaptive_threads = False  # this count, not the faster one
            backend.set_state(setup.state)
            backend.step(600)
            s = backend.get_state()
            results.append(np.concatenate([s.positions, s.velocities, s.angular_velocities, s.orientations], 1))
    finally:
        numba.set_num_threads(threads)
    assert np.abs(results[0][:, 6:9]).max() > 1.0  # the grains do spin
    assert np.array_equal(results[0], results[1])


def test_orientation_follows_a_constant_spin():
    """A free grain spinning at ω about z turns by ω t (quaternion (cos ωt/2, 0, 0, sin ωt/2))."""
    setup = scene([[0.0, 0.5, 0.0]], [R], lo=(-1, 0, -1), hi=(1, 1, 1), stiffness=STIFFNESS, dt=DT)
    setup.state.angular_velocities[0] = (0.0, 0.0, 10.0)
    backend = BackendCpu(setup.model)
    backend.set_state(setup.state)
    backend.step(1000)  # 0.1 s: 1 rad
    q = backend.get_state().orientations[0]
    np.testing.assert_allclose(q, [math.cos(0.5), 0.0, 0.0, math.sin(0.5)], atol=1e-5)


@pytest.mark.parametrize("ratio", [0.8, 1.05])
def test_cohesion_note_names_the_binding_threshold_and_the_depth_grains_settle_at(ratio):
    """Below k/(π r) stickiness only softens contacts (the note says so and the pair does not bind);
    above it, a pair in zero gravity settles at the overlap the note predicts."""
    from engine.model import Domain, Gravity, Material
    from engine.scene import setup_from_arrays

    r, k = 0.01, 1.0e4
    threshold = k / (math.pi * r)
    material = Material(density=1000.0, restitution=0.2, friction=0.0, cohesion=ratio * threshold)
    gap = 2.0 * r - 0.01 * r  # touching, 1% overlap
    setup = setup_from_arrays(positions=np.array([[0.05, 0.05, 0.05], [0.05 + gap, 0.05, 0.05]]),
                              radius=np.full(2, r), materials=(material,), domain=Domain(hi=(0.1, 0.1, 0.1)),
                              gravity=Gravity(vector=(0.0, 0.0, 0.0)), stiffness=k, dt=2.0e-5)
    [note] = [n for n in setup.notes if "Stickiness" in n]
    backend = BackendCpu(setup.model)
    backend.set_state(setup.state)
    backend.step(20_000)
    x = backend.get_state().positions.astype(np.float64)
    overlap = (2.0 * r - np.linalg.norm(x[1] - x[0])) / r
    if ratio < 1.0:
        assert "only softens" in note
        assert overlap < 0.05 * 0.01  # the 1% start is pushed out to nothing: no depth holds them
    else:
        predicted = 4.0 * (1.0 - 1.0 / ratio)
        assert f"{predicted:.0%}" in note
        assert overlap == pytest.approx(predicted, rel=0.02)
