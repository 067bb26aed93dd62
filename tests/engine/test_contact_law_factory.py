"""The CPU's one contact law, compiled per physics: switched-off terms vanish, switched-on ones act."""

from __future__ import annotations

import numpy as np

from engine.backends.cpu_kernels_law import contact_law_full, contact_law_paper, make_contact_law
from engine.contact_law import contact_response

NORMAL = (0.6, 0.0, 0.8)
DV = (-0.3, 0.2, -0.5)


def _law(law, *, omega=(0.0, 0.0, 0.0), mu=0.5, mu_roll=0.0, cohesive=0.0, spring=False):
    hist = np.zeros((1, 6))
    f = law(*NORMAL, 1e-4, *DV, *omega, 0.0, 0.0, 0.0, 0.0099, 0.0, 0.01, 0.002, 5000.0, 0.0, 0, 0.3, mu, mu_roll,
            cohesive, spring, hist, 0, 1e-4)
    return np.array(f), hist


def test_flags_off_ignore_what_they_switch_off():
    plain, _ = _law(contact_law_paper)
    ignored, hist = _law(contact_law_paper, omega=(3.0, -2.0, 1.0), mu_roll=0.2, cohesive=0.05)
    assert np.array_equal(plain, ignored) and not ignored[3:].any() and not hist.any()
    # The same physics through the full instance: the same force, to the bit.
    full, _ = _law(contact_law_full)
    assert np.array_equal(full[:3], plain[:3])


def test_flags_on_act():
    base, _ = _law(contact_law_full, mu=0.0)
    sticky, _ = _law(contact_law_full, mu=0.0, cohesive=0.05)
    assert np.allclose(base[:3] - sticky[:3], 0.05 * np.array(NORMAL), rtol=0, atol=1e-15)
    spinning, _ = _law(contact_law_full, omega=(3.0, -2.0, 1.0))
    assert np.abs(spinning[3:6]).max() > 0 and not np.allclose(spinning[:3], base[:3])
    rolling, hist = _law(contact_law_full, omega=(3.0, -2.0, 1.0), mu_roll=0.2)
    assert hist[0, 3:].any() and not np.allclose(rolling[3:6], spinning[3:6])
    no_rolling, hist = _law(make_contact_law(rotation=True, rolling=False, cohesion=True, tabled=False),
                            omega=(3.0, -2.0, 1.0), mu_roll=0.2)
    assert not hist[0, 3:].any() and np.array_equal(no_rolling, spinning)


def test_full_instance_follows_the_float64_reference():
    """contact_response (engine.contact_law) is the reference: a spinning, rolling, sliding pair with
    springs, force and both torques to rounding."""
    n = np.array(NORMAL)
    ri, rj, mi, mj, overlap = 0.010, 0.012, 0.002, 0.003, 1e-4
    xi, xj = np.zeros(3), -n * (ri + rj - overlap)
    vi, vj = np.array(DV), np.array([0.1, 0.0, 0.0])
    wi, wj = np.array([3.0, -2.0, 1.0]), np.array([0.5, 0.0, -1.0])
    reference = contact_response(xi, xj, vi, vj, wi, wj, ri, rj, mi, mj, 5000.0, 0.3, 0.5, mu_roll=0.2,
                                 spring=(0.0, 0.0, 0.0), rolling=(0.0, 0.0, 0.0), dt=1e-4)
    hist = np.zeros((1, 6))
    f = contact_law_full(*n, overlap, *(vi - vj), *wi, *wj, ri - 0.5 * overlap, rj - 0.5 * overlap,
                         ri * rj / (ri + rj), mi * mj / (mi + mj), 5000.0, 0.0, 0, 0.3, 0.5, 0.2, 0.0, True, hist, 0, 1e-4)
    force, torque_i, torque_j, spring, rolling = reference
    assert np.allclose(f[:3], force, rtol=1e-9, atol=0)
    assert np.allclose(f[3:6], torque_i, rtol=1e-9, atol=1e-18)
    assert np.allclose(f[6:9], torque_j, rtol=1e-9, atol=1e-18)
    assert np.allclose(hist[0, :3], spring, rtol=1e-9) and np.allclose(hist[0, 3:], rolling, rtol=1e-9)
    assert np.abs(rolling).max() > 0 and np.abs(torque_i).max() > 0
