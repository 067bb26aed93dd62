"""The GPU contact law run by Slang (kernels/contact_law.h through kernels/rt_contact_forces.slang,
engine/backends/rt_law.py) against the float64 reference of engine/contact_law.py.

Many random contacts — grain pairs and walls (j with R_j = 0, ω_j = 0, m_j = ∞), the paper's form and
the full one, damper and spring friction, with and without rolling resistance and cohesion, springs
and rolling histories on both sides of their caps (sticking and sliding) — each evaluated by the device
in float32 and by ``contact_force`` / ``contact_response`` in float64.

Tolerance: every result must agree within ``TOLERANCE`` = 2e-6 of the contact's scale S, the sum of the
magnitudes of the terms the law adds (k δ, γ_n |v|, c A, the spring and dashpot terms of the tangential
and rolling sliders); torques within 2e-6 S R, histories within 2e-6 S / k_t. That is about 17 float32
ulps (2⁻²³ ≈ 1.2e-7) of the largest term: the inputs are rounded to float32 (half an ulp each), the law
runs a few dozen float32 operations in sequence, and a Vulkan driver may contract multiply-adds and round
sqrt and division within a few ulps (lavapipe's worst is about 1.5e-7 S, little more than one ulp). A
wrong term, sign, factor or branch moves a result by far more (a dashpot factor of 2.001 instead of 2
fails here). The cap branches are continuous (at |F| = cap both branches give the same force and
history), so a contact that sticks in float64 and slides in float32 stays within the tolerance.

Runs on any device with Vulkan ray tracing (CI: Mesa's lavapipe), and skips where slangpy or such a
device is missing, as tests/engine/test_rt_detect.py.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from engine.contact_law import (TANGENTIAL_STIFFNESS_RATIO, contact_area, contact_force, contact_response,
                                damping_ratio)
from engine.errors import MochiError

rt_law = pytest.importorskip("engine.backends.rt_law")

#: Allowed error, as a fraction of each contact's scale S (module docstring).
TOLERANCE = 2e-6
#: Contacts per batch; a quarter of them walls.
COUNT = 3000
DT = 1e-5
DENSITY = 2500.0


@pytest.fixture(scope="module")
def law(rt_device):
    return rt_law.RtContactLaw(rt_device)


def _unit(rng, count):
    v = rng.normal(size=(count, 3))
    return v / np.linalg.norm(v, axis=1)[:, None]


def _log_uniform(rng, lo, hi, count):
    return np.exp(rng.uniform(math.log(lo), math.log(hi), count))


def random_contacts(seed: int, *, rolling: bool, cohesion: bool) -> dict:
    """Random touching contacts in float64: geometry, materials, velocities and histories (one row each)."""
    rng = np.random.default_rng(seed)
    n = COUNT
    wall = rng.random(n) < 0.25
    ri = rng.uniform(0.5e-3, 2e-3, n)
    rj = np.where(wall, 0.0, rng.uniform(0.5e-3, 2e-3, n))
    mi = DENSITY * 4 / 3 * np.pi * ri**3
    mj = np.where(wall, np.inf, DENSITY * 4 / 3 * np.pi * rj**3)
    overlap = ri * _log_uniform(rng, 1e-4, 0.05, n)
    normal = _unit(rng, n)
    xi = rng.uniform(-0.01, 0.01, (n, 3))
    xj = xi - (ri + rj - overlap)[:, None] * normal  # walls: the foot of the perpendicular, d = r_i − δ
    stiffness = _log_uniform(rng, 1e2, 1e5, n)
    beta = np.array([damping_ratio(e) for e in rng.uniform(0.3, 0.95, n)])
    mu = rng.uniform(0.1, 0.8, n)
    mu_r = np.where(rng.random(n) < 0.7, rng.uniform(0.01, 0.3, n), 0.0) if rolling else np.zeros(n)
    c = stiffness / (np.pi * ri) * rng.uniform(0.0, 2.0, n) if cohesion else np.zeros(n)
    vi = _unit(rng, n) * _log_uniform(rng, 1e-3, 1.0, n)[:, None]
    vj = np.where(wall[:, None], 0.0, _unit(rng, n) * _log_uniform(rng, 1e-3, 1.0, n)[:, None])
    wi = _unit(rng, n) * _log_uniform(rng, 1.0, 1e3, n)[:, None]
    wj = np.where(wall[:, None], 0.0, _unit(rng, n) * _log_uniform(rng, 1.0, 1e3, n)[:, None])
    # Histories of about the length the cap allows (μ k δ / k_t), from far below to far above it.
    reach = stiffness * overlap / (TANGENTIAL_STIFFNESS_RATIO * stiffness)
    spring = _unit(rng, n) * (mu * reach * _log_uniform(rng, 0.03, 30.0, n))[:, None]
    rolling_history = _unit(rng, n) * (np.maximum(mu_r, 0.01) * reach * _log_uniform(rng, 0.03, 30.0, n))[:, None]
    return dict(wall=wall, ri=ri, rj=rj, mi=mi, mj=mj, overlap=overlap, normal=normal, xi=xi, xj=xj,
                stiffness=stiffness, beta=beta, mu=mu, mu_r=mu_r, c=c, vi=vi, vj=vj, wi=wi, wj=wj,
                spring=spring, rolling=rolling_history)


def device_inputs(s: dict) -> dict:
    """The law's inputs as a contact pass computes them (walls: R_j = 0, ω_j = 0, R_eff = r_i)."""
    wall = s["wall"]
    m_eff = np.where(wall, s["mi"], s["mi"] * s["mj"] / np.where(wall, 1.0, s["mi"] + s["mj"]))
    r_eff = np.where(wall, s["ri"], s["ri"] * s["rj"] / (s["ri"] + s["rj"]))
    dist = s["ri"] + s["rj"] - s["overlap"]
    area = np.array([contact_area(d, a, b, wall=w) for d, a, b, w in zip(dist, s["ri"], s["rj"], wall)])
    return dict(normal=s["normal"], overlap=s["overlap"], velocity=s["vi"] - s["vj"], m_eff=m_eff,
                stiffness=s["stiffness"], beta=s["beta"], mu=s["mu"], arm_i=s["ri"] - 0.5 * s["overlap"],
                arm_j=np.where(wall, 0.0, s["rj"] - 0.5 * s["overlap"]), omega_i=s["wi"], omega_j=s["wj"],
                r_eff=r_eff, mu_r=s["mu_r"], cohesion=s["c"] * area)


def scale(s: dict, inputs: dict, *, law: str, rolling: bool) -> np.ndarray:
    """S of each contact [N]: the sum of the magnitudes of the terms the law adds (the paper's form:
    no spin, rolling or cohesion)."""
    k, m = s["stiffness"], inputs["m_eff"]
    k_t = TANGENTIAL_STIFFNESS_RATIO * k
    g_n = 2 * s["beta"] * np.sqrt(m * k)
    g_t = 2 * s["beta"] * np.sqrt(m * k_t)
    norm = lambda v: np.linalg.norm(v, axis=1)  # noqa: E731
    full = law == "full"
    spin = (inputs["arm_i"] * norm(s["wi"]) + inputs["arm_j"] * norm(s["wj"])) * full
    v_c = norm(inputs["velocity"]) + spin
    v_r = inputs["r_eff"] * (norm(s["wi"]) + norm(s["wj"])) * (full and rolling)
    history_r = norm(s["rolling"]) * (full and rolling)
    return (k * s["overlap"] + g_n * norm(inputs["velocity"]) + inputs["cohesion"] * full
            + k_t * (norm(s["spring"]) + v_c * DT) + (g_t + 2 * np.sqrt(m * k)) * v_c
            + k_t * (history_r + v_r * DT) + g_t * v_r)


def reference(s: dict, *, law: str, spring: bool, rolling: bool) -> dict:
    """float64 results of engine/contact_law.py for every contact."""
    out = {"force": [], "spring": [], "rolling": [], "torque_i": [], "torque_j": []}
    for i in range(COUNT):
        args = (s["xi"][i], s["xj"][i], s["vi"][i], s["vj"][i])
        tangential = s["spring"][i] if spring else None
        if law == "paper":
            result = contact_force(*args, s["ri"][i], s["rj"][i], s["mi"][i], s["mj"][i], s["stiffness"][i],
                                   s["beta"][i], s["mu"][i], spring=tangential, dt=DT)
            force, xi_t = result if spring else (result, None)
            torque_i = torque_j = xi_r = np.zeros(3)
        else:
            force, torque_i, torque_j, xi_t, xi_r = contact_response(
                *args, s["wi"][i], s["wj"][i], s["ri"][i], s["rj"][i], s["mi"][i], s["mj"][i], s["stiffness"][i],
                s["beta"][i], s["mu"][i], mu_roll=s["mu_r"][i] if rolling else 0.0, cohesion=s["c"][i],
                spring=tangential, rolling=s["rolling"][i], dt=DT)
            if not (rolling and s["mu_r"][i] > 0):
                xi_r = s["rolling"][i]  # a history the law does not run is left as it was
        for key, value in (("force", force), ("spring", xi_t), ("rolling", xi_r), ("torque_i", torque_i),
                           ("torque_j", torque_j)):
            out[key].append(np.zeros(3) if value is None else value)
    return {key: np.array(value) for key, value in out.items()}


def sliding(s: dict, inputs: dict, force: np.ndarray) -> np.ndarray:
    """True where the tangential force sits at its cap μ max(f_n, 0) (float64)."""
    n = s["normal"]
    v_n = np.einsum("ij,ij->i", inputs["velocity"], n)
    f_n = s["stiffness"] * s["overlap"] - 2 * s["beta"] * np.sqrt(inputs["m_eff"] * s["stiffness"]) * v_n
    cap = s["mu"] * np.maximum(f_n, 0.0)
    tangential = force - np.einsum("ij,ij->i", force, n)[:, None] * n
    return (cap > 0) & (np.linalg.norm(tangential, axis=1) >= cap * (1 - 1e-9))


def _assert_close(name, got, expected, allowed):
    error = np.linalg.norm(got - expected, axis=1)
    worst = int(np.argmax(error / allowed))
    assert (error <= allowed).all(), (
        f"{name}: {int((error > allowed).sum())} contacts beyond the tolerance; worst #{worst}: {got[worst]} "
        f"against {expected[worst]} (allowed {allowed[worst]:.3g})")


CASES = [  # (law, friction model, rolling, cohesion)
    ("paper", "damper", False, False),
    ("paper", "spring", False, False),
    ("full", "damper", False, False),
    ("full", "spring", False, False),
    ("full", "damper", True, True),
    ("full", "spring", True, False),
    ("full", "spring", False, True),
    ("full", "spring", True, True),
]


@pytest.mark.parametrize("form, friction, rolling, cohesion", CASES)
def test_device_law_matches_the_float64_reference(law, form, friction, rolling, cohesion):
    s = random_contacts(CASES.index((form, friction, rolling, cohesion)), rolling=rolling, cohesion=cohesion)
    inputs = device_inputs(s)
    spring = friction == "spring"
    got = law.forces(law=form, **inputs, spring=s["spring"] if spring else None, dt=DT,
                     tangential_ratio=TANGENTIAL_STIFFNESS_RATIO, rolling=s["rolling"] if rolling else None)
    expected = reference(s, law=form, spring=spring, rolling=rolling)
    size = scale(s, inputs, law=form, rolling=rolling)
    # Both sides of the friction cap are exercised: sticking and sliding contacts, pairs and walls.
    slides = sliding(s, inputs, expected["force"])
    assert 0.1 < slides.mean() < 0.9, slides.mean()
    assert 0.1 < s["wall"].mean() < 0.5
    _assert_close("force", got.force, expected["force"], TOLERANCE * size)
    k_t = TANGENTIAL_STIFFNESS_RATIO * s["stiffness"]
    if spring:
        _assert_close("spring", got.spring, expected["spring"], TOLERANCE * size / k_t)
    else:
        assert got.spring is None
    if rolling:
        _assert_close("rolling", got.rolling, expected["rolling"], TOLERANCE * size / k_t)
    if form == "full":
        arm = np.maximum(inputs["arm_i"], inputs["r_eff"])
        _assert_close("torque on i", got.torque_i, expected["torque_i"], TOLERANCE * size * arm)
        arm_j = np.maximum(inputs["arm_j"], inputs["r_eff"])
        _assert_close("torque on j", got.torque_j, expected["torque_j"], TOLERANCE * size * arm_j)
        # The arms the torques are made of: τ_i = −R_i n × F_t + R_eff n × F_r.
        torque = -inputs["arm_i"][:, None] * got.n_x_ft + inputs["r_eff"][:, None] * got.n_x_fr
        _assert_close("torque arms", torque, expected["torque_i"], TOLERANCE * size * arm)


def test_rolling_histories_stick_and_slide(law):
    """The rolling slider's cap is met by some contacts and not by others (the case above that runs it)."""
    s = random_contacts(CASES.index(("full", "spring", True, True)), rolling=True, cohesion=True)
    inputs = device_inputs(s)
    got = law.forces(law="full", **inputs, spring=s["spring"], dt=DT, tangential_ratio=TANGENTIAL_STIFFNESS_RATIO,
                     rolling=s["rolling"])
    v_n = np.einsum("ij,ij->i", inputs["velocity"], s["normal"])
    f_n = s["stiffness"] * s["overlap"] - 2 * s["beta"] * np.sqrt(inputs["m_eff"] * s["stiffness"]) * v_n
    cap = s["mu_r"] * np.maximum(f_n, 0.0)
    # |F_r| = |n × F_r| for F_r in the tangent plane; at the cap it equals μ_r max(f_n, 0).
    at_cap = np.linalg.norm(got.n_x_fr, axis=1) >= cap * (1 - 1e-4)
    rolling_contacts = cap > 0
    share = at_cap[rolling_contacts].mean()
    assert 0.1 < share < 0.9, share


def test_unknown_law_and_wrong_shapes_are_refused(law):
    with pytest.raises(MochiError, match="Unknown contact law"):
        law.forces(law="hertz", normal=np.eye(3), overlap=np.ones(3), velocity=np.zeros((3, 3)), m_eff=1.0,
                   stiffness=1.0, beta=0.1, mu=0.5, tangential_ratio=TANGENTIAL_STIFFNESS_RATIO)
    with pytest.raises(MochiError, match="normal"):
        law.forces(law="paper", normal=np.ones(3), overlap=np.ones(3), velocity=np.zeros((3, 3)), m_eff=1.0,
                   stiffness=1.0, beta=0.1, mu=0.5, tangential_ratio=TANGENTIAL_STIFFNESS_RATIO)
    with pytest.raises(MochiError, match="overlap"):
        law.forces(law="paper", normal=np.eye(3), overlap=np.ones(2), velocity=np.zeros((3, 3)), m_eff=1.0,
                   stiffness=1.0, beta=0.1, mu=0.5, tangential_ratio=TANGENTIAL_STIFFNESS_RATIO)


def test_empty_batch(law):
    out = law.forces(law="full", normal=np.zeros((0, 3)), overlap=np.zeros(0), velocity=np.zeros((0, 3)), m_eff=1.0,
                     stiffness=1.0, beta=0.1, mu=0.5, spring=np.zeros((0, 3)), tangential_ratio=0.5)
    assert out.force.shape == (0, 3) and out.spring.shape == (0, 3) and out.rolling is None
