"""Force fields and time-step selection."""

from __future__ import annotations

import math

import numpy as np
import pytest

from engine.backends.cpu import BackendCpu
from engine.errors import MochiError
from engine.fields import ForceField, uniform_acceleration
from engine.model import Domain, Gravity, Material
from engine.scene import setup_from_arrays
from engine.timestep import MAX_OVERLAP, TARGET_OVERLAP, choose_time_step, critical_time_step


def _free_particles(positions, fields, steps=1, dt=1e-3):
    setup = setup_from_arrays(positions=np.asarray(positions, np.float32), radius=np.full(len(positions), 1e-3, np.float32),
                              materials=(Material(),), domain=Domain(lo=(-10,) * 3, hi=(10,) * 3),
                              gravity=Gravity(vector=(0.0, 0.0, 0.0)), fields=tuple(fields), dt=dt, stiffness=1.0)
    backend = BackendCpu(setup.model)
    backend.set_state(setup.state)
    backend.step(steps)
    return backend.get_state().velocities.astype(np.float64) / (steps * dt)


def test_vortex_swirls_right_handed_with_rankine_profile():
    field = ForceField(kind="vortex", center=(0, 0, 0), axis=(0, 1, 0), strength=2.0, core_radius=0.5)
    a = _free_particles([[0.25, 0, 0], [1.0, 3, 0], [0, 0, 2.0]], [field])
    # ω × r for ω along +y: at +x the swirl points to −z; at +z it points to +x.
    assert np.allclose(a[0], [0, 0, -2.0 * 0.25 / 0.5], atol=1e-4)
    assert np.allclose(a[1], [0, 0, -2.0 * 0.5 / 1.0], atol=1e-4)
    assert np.allclose(a[2], [2.0 * 0.5 / 2.0, 0, 0], atol=1e-4)


def test_sampled_field_is_trilinear_and_zero_outside(tmp_path):
    nodes = np.stack(np.meshgrid(*[np.linspace(0, 1, 5)] * 3, indexing="ij"), -1)
    grid = np.stack([2 * nodes[..., 0] + nodes[..., 1], -nodes[..., 2], np.ones(nodes.shape[:3])], -1)
    np.save(tmp_path / "f.npy", grid.astype(np.float32))
    field = ForceField(kind="sampled", path=str(tmp_path / "f.npy"), lo=(0, 0, 0), hi=(1, 1, 1), strength=3.0)
    points = np.array([[0.13, 0.71, 0.42], [0.5, 0.5, 0.5], [2.0, 0.5, 0.5]])
    a = _free_particles(points, [field])
    expected = 3.0 * np.stack([2 * points[:, 0] + points[:, 1], -points[:, 2], np.ones(3)], -1)
    expected[2] = 0.0
    assert np.allclose(a, expected, atol=1e-4)


def test_uniform_and_rotating_fields_add_to_gravity():
    fields = (ForceField(kind="uniform", vector=(1.0, 0, 0)),
              ForceField(kind="rotating", vector=(0, 0, 2.0), axis=(0, 1, 0), rate=math.pi / 2))
    assert np.allclose(uniform_acceleration(fields, 0.0), [1, 0, 2])
    assert np.allclose(uniform_acceleration(fields, 1.0), [3, 0, 0])


def test_auto_stiffness_and_dt_resolve_the_lightest_collision():
    mass = np.array([1e-3, 2e-3])
    radius = np.array([0.005, 0.006])
    choice = choose_time_step(dt=None, stiffness=None, substeps=None, fps=25, mass=mass, radius=radius,
                              impact_speed=2.0)
    # Heaviest per radius² at 2 m/s stops within TARGET_OVERLAP of its radius: k = m v² / (ε r)².
    assert choice.stiffness == pytest.approx(2e-3 * 4 / (TARGET_OVERLAP * 0.006) ** 2)
    assert choice.expected_overlap == pytest.approx(TARGET_OVERLAP)
    assert choice.contact_duration / choice.dt >= 10 - 1e-9
    assert choice.dt * choice.steps_per_frame == pytest.approx(1 / 25)
    assert choice.dt < choice.critical_dt


def test_auto_stiffness_from_given_dt_keeps_overlap_or_names_the_dt():
    """The paper's freefall step (1e-4 s) with 0.5 mm grains landing at 4.4 m/s would overlap 300%+: it
    is refused with the step that would not, and that step is accepted."""
    mass, radius = np.array([2.6e-7]), np.array([5e-4])
    with pytest.raises(MochiError, match=r"dt = 0\.0001 s.*overlap \d+% of their radius; use dt ≤ (\S+) s") as info:
        choose_time_step(dt=1e-4, stiffness=None, substeps=None, fps=25, mass=mass, radius=radius,
                         impact_speed=4.4)
    suggested = float(str(info.value).split("use dt ≤ ")[1].split(" s")[0])
    choice = choose_time_step(dt=suggested, stiffness=None, substeps=None, fps=25, mass=mass, radius=radius,
                              impact_speed=4.4)
    assert choice.expected_overlap <= MAX_OVERLAP
    assert choice.dt < critical_time_step(choice.stiffness, 2.6e-7)
    assert choice.contact_duration == pytest.approx(10 * suggested)


def test_a_given_stiffness_that_lets_grains_overlap_gets_a_note_with_the_stiffness_that_would_not():
    noted = choose_time_step(dt=None, stiffness=2e3, substeps=None, fps=25, mass=np.array([1e-3]),
                             radius=np.array([0.01]), impact_speed=3.0)
    assert noted.expected_overlap > MAX_OVERLAP
    (note,) = [n for n in noted.notes if "overlap" in n]
    suggested = float(note.split("; ")[1].split(" N/m")[0])
    fixed = choose_time_step(dt=None, stiffness=suggested, substeps=None, fps=25, mass=np.array([1e-3]),
                             radius=np.array([0.01]), impact_speed=3.0)
    assert fixed.expected_overlap <= MAX_OVERLAP * 1.001 and not any("overlap" in n for n in fixed.notes)


def test_fall_height_is_the_real_drop_not_the_domain():
    """A packed block falls as one (its lowest grain's fall counts: every layer lands at the block's
    speed); a loose cloud grain by grain (its highest grain counts); rotating gravity can point anywhere
    (the domain's largest side counts)."""
    from engine.scene import expected_fall_height

    domain = Domain(lo=(0, 0, 0), hi=(2, 4, 2))
    down = Gravity(vector=(0, -9.81, 0))
    grid = np.stack(np.meshgrid(*[np.arange(10) * 0.02] * 3, indexing="ij"), -1).reshape(-1, 3)
    block = grid + (1.0, 0.5, 1.0)  # touching spheres of r = 0.01, from y = 0.5 to 0.68
    cloud = np.random.default_rng(0).uniform((0.5, 1.0, 0.5), (1.5, 3.0, 1.5), (300, 3))
    r_block, r_cloud = np.full(len(block), 0.01), np.full(len(cloud), 0.01)
    ids_block = np.zeros(len(block), np.int32)
    assert expected_fall_height(block, r_block, ids_block, down, domain) == pytest.approx(0.5)
    assert expected_fall_height(cloud, r_cloud, np.zeros(300, np.int32), down, domain) == pytest.approx(
        cloud[:, 1].max())
    both = expected_fall_height(np.vstack([block, cloud]), np.concatenate([r_block, r_cloud]),
                                np.concatenate([ids_block, np.ones(300, np.int32)]), down, domain)
    assert both == pytest.approx(cloud[:, 1].max())
    turning = Gravity(vector=(0, -9.81, 0), rotation_axis=(0, 0, 1), rotation_rate=1.0)
    assert expected_fall_height(block, r_block, ids_block, turning, domain) == 4.0


def test_unstable_dt_is_refused_with_the_numbers():
    with pytest.raises(MochiError, match=r"dt = 0\.001 s would blow up.*stiffness 1e\+06 N/m.*below"):
        choose_time_step(dt=1e-3, stiffness=1e6, substeps=None, fps=25, mass=np.array([1e-3]),
                         radius=np.array([0.01]), impact_speed=1.0)
