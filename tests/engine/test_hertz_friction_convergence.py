"""Hertz–Mindlin and the friction cap: which cap converges as dt shrinks, and what a Hertz scene is told.

benchmarks/physics_hertz_cap.py's impact (one grain, r = 5 mm, E = 5 MPa, hits a wall of its material at
1 m/s, 20° from the normal, on the CPU backend) at three dt = t_c/N, t_c the Hertz contact time. With the
cap 'spring' (LIGGGHTS') the spin converges; with 'clipped' (Mochi's default) it keeps growing as dt shrinks, because that cap resets a sliding spring to −(F + γ_t v)/k_t and
γ_t/k_t ∝ δ^(−1/4) has no bound at the first touch (engine.contact_law.HERTZ_CONVERGED_CAP). The default is
kept (the linear law's bakes and the paper's bits depend on it) and a Hertz scene with another cap gets a
note naming 'spring'. docs/physics.md records the benchmark's full table (t_c/10 to t_c/50000).
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

from benchmarks.physics_hertz_cap import POISSON, RADIUS, YOUNGS, impact_setup, rebound_spin
from engine.budget import check_steps_per_frame
from engine.contact_law import HERTZ_CONVERGED_CAP, largest_youngs_modulus
from engine.errors import MochiError
from engine.model import Domain, Material
from engine.scene import setup_from_arrays

spin = functools.lru_cache(maxsize=None)(rebound_spin)


def _change(cap: str, coarse: int, fine: int) -> float:
    """Relative change of the spin from dt = t_c/coarse to t_c/fine."""
    return abs(spin(cap, fine) - spin(cap, coarse)) / spin(cap, fine)


def test_the_spring_cap_converges_in_dt_under_hertz():
    # Measured: 41.644, 41.804, 41.838 rad/s at t_c/200, /1000, /5000 (41.838 at /50000).
    assert _change(HERTZ_CONVERGED_CAP, 1000, 5000) < 2e-3
    assert _change(HERTZ_CONVERGED_CAP, 1000, 5000) < _change(HERTZ_CONVERGED_CAP, 200, 1000)


def test_the_default_cap_does_not_converge_under_hertz_which_the_note_says():
    # Measured: 42.42 → 43.37 rad/s from t_c/1000 to t_c/5000, and on to 46.1 at t_c/50000. If this fails,
    # the law no longer needs friction_cap_notes: drop the note and this test together.
    assert _change("clipped", 1000, 5000) > 1e-2
    assert _change("clipped", 1000, 5000) > 10 * _change(HERTZ_CONVERGED_CAP, 1000, 5000)


@pytest.mark.parametrize("cap, noted", [("clipped", True), ("absolute", True), ("spring", False)])
def test_a_hertz_scene_is_told_which_cap_converges(cap, noted):
    notes = [n for n in impact_setup(1e-6, cap).notes if "friction cap" in n]
    assert bool(notes) == noted
    if noted:
        assert f"'{cap}'" in notes[0] and 'friction_cap = "spring"' in notes[0]


def test_a_linear_scene_is_not_told_about_the_cap():
    setup = impact_setup(1e-5, "clipped", normal="hooke")
    assert not [n for n in setup.notes if "friction cap" in n]


def test_the_step_budget_refusal_under_hertz_names_the_moduli_not_a_stiffness():
    physics = impact_setup(1e-6, "spring", wall_youngs=7e10).model.physics
    assert largest_youngs_modulus(physics) == 7e10
    with pytest.raises(MochiError) as refused:
        check_steps_per_frame(200_000, 2e-7, physics.stiffness, limit=100_000,
                              hertz_youngs=largest_youngs_modulus(physics))
    message = str(refused.value)
    assert "7e+10 Pa" in message and "lower Young's modulus" in message and "larger grains" in message
    assert "stiffness" not in message
    with pytest.raises(MochiError, match="softer stiffness"):  # the linear law's sentence is unchanged
        check_steps_per_frame(200_000, 2e-7, 1e6, limit=100_000)


def test_the_overlap_note_names_soft_walls_when_they_are_the_cause():
    # Walls 1000× softer than the grains: grains sink into them, not into each other.
    soft = impact_setup(None, "spring", wall_youngs=YOUNGS / 1000.0)
    wall_notes = [n for n in soft.notes if "overlap" in n or "sink" in n]
    assert wall_notes and "the walls are soft" in wall_notes[0], soft.notes
    # Grains and walls equally soft (the walls' contacts overlap most, but the walls are not softer): the
    # note speaks of the moduli, not of soft walls.
    soft_grains = setup_from_arrays(
        positions=np.array([[0.0, 0.05, 0.0]], np.float32), radius=np.array([RADIUS], np.float32),
        velocities=np.array([[0.0, -20.0, 0.0]], np.float32),
        materials=(Material(density=2500.0, restitution=0.7, friction=0.3, youngs_modulus=1e4,
                            poisson_ratio=POISSON),),
        domain=Domain(lo=(-0.1, 0.0, -0.1), hi=(0.1, 0.1, 0.1), wall_youngs_modulus=1e4,
                      wall_poisson_ratio=POISSON), dt=None, contact_normal="hertz", friction_cap="spring")
    notes = [n for n in soft_grains.notes if "overlap" in n or "sink" in n]
    assert notes and "walls are soft" not in notes[0] and "Young's moduli" in notes[0], soft_grains.notes
