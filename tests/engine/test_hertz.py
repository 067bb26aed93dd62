"""The Hertz–Mindlin law ([contact] normal = "hertz") checked against Hertz's own answers and against its
float64 reference: an elastic impact lasts 2.87 (m²/(R E*² v))^(1/5) and sinks (15 m v²/(16 E* √R))^(2/5)
deep, a resting grain sinks (3 m g/(4 E* √R))^(2/3), Tsuji's damping gives the same restitution at every
impact speed, a mesh floor gives the wall's trajectory, and the settings are refused where they have no
meaning (a given stiffness, a bad modulus, the GPU backends).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from engine.backends import make_backend
from engine.backends.cpu_kernels_law import contact_law_full
from engine.backends.gpu_params import check_contact_law
from engine.colliders import Collider, ColliderSet
from engine.contact_law import contact_response, effective_moduli
from engine.errors import MochiError
from engine.model import Domain, Gravity, Material
from engine.preset import parse_preset
from engine.scene import setup_from_arrays, setup_from_preset

from .test_colliders import grid_plane

R = 0.01            # grain radius [m]
YOUNGS = 1.0e7      # [Pa], grain and wall
POISSON = 0.3
DENSITY = 2500.0
MASS = DENSITY * 4.0 / 3.0 * math.pi * R ** 3
E_WALL, _ = effective_moduli(YOUNGS, POISSON, YOUNGS, POISSON)  # E* of a grain on the wall


def _drop(speed, *, restitution=1.0, gravity=0.0, surface="wall", dt=1.0e-6, y0=None):
    """One grain just above a floor (a wall of the box or a mesh collider) moving down at ``speed``."""
    material = Material(name="m", density=DENSITY, restitution=restitution, friction=0.3,
                        youngs_modulus=YOUNGS, poisson_ratio=POISSON)
    if surface == "wall":
        lo, colliders = (-1.0, 0.0, -1.0), None
    else:
        lo = (-1.0, -1.0, -1.0)
        vertices, triangles = grid_plane(2.0, 4, height=0.0)
        colliders = ColliderSet((Collider("floor", vertices, triangles, restitution=restitution, friction=0.3),))
    domain = Domain(lo=lo, hi=(1.0, 1.0, 1.0), wall_restitution=restitution, wall_friction=0.3,
                    wall_youngs_modulus=YOUNGS, wall_poisson_ratio=POISSON)
    return setup_from_arrays(positions=np.array([[0.0, R if y0 is None else y0, 0.0]], np.float32),
                             radius=np.array([R], np.float32),
                             velocities=np.array([[0.0, -speed, 0.0]], np.float32), materials=(material,),
                             domain=domain, gravity=Gravity(vector=(0.0, -gravity, 0.0)), dt=dt,
                             colliders=colliders, contact_normal="hertz")


def _impact(speed, *, restitution=1.0, surface="wall", dt=1.0e-6, every=1):
    """(contact time [s], deepest overlap [m], rebound speed [m/s], heights [m]) of a drop without gravity."""
    setup = _drop(speed, restitution=restitution, surface=surface, dt=dt)
    backend = make_backend("cpu", setup.model)
    backend.set_state(setup.state)
    heights, touching = [], 0
    for _ in range(200_000):
        backend.step(every)
        state = backend.get_state()
        y = float(state.positions[0, 1])
        heights.append(y)
        if y < R:
            touching += every
        elif touching:
            return touching * dt, R - min(heights), float(state.velocities[0, 1]), np.array(heights)
    raise AssertionError("the grain never left the floor")


def test_elastic_impact_lasts_and_sinks_as_hertz_says():
    speed = 1.0
    duration, depth, rebound, _ = _impact(speed)
    m_eff, e_star = MASS, E_WALL
    expected_duration = 2.87 * (m_eff ** 2 / (R * e_star ** 2 * speed)) ** 0.2
    expected_depth = (15.0 * m_eff * speed ** 2 / (16.0 * e_star * math.sqrt(R))) ** 0.4
    assert duration == pytest.approx(expected_duration, rel=0.01)
    assert depth == pytest.approx(expected_depth, rel=0.002)
    assert rebound == pytest.approx(speed, rel=1e-3)  # e = 1: no damping at all


def test_tsuji_damping_gives_one_restitution_at_every_speed():
    """Hertz's spring with Tsuji's damping (∝ δ^¼) restitutes the same fraction at 0.3 and 3 m/s (the
    linear dashpot on a Hertz spring would not)."""
    slow = -_impact(0.3, restitution=0.5, dt=2e-6, every=2)[2] / -0.3
    fast = -_impact(3.0, restitution=0.5, dt=1e-6)[2] / -3.0
    assert 0.3 < slow < 0.9
    assert fast == pytest.approx(slow, rel=0.005)


def test_a_resting_grain_sinks_as_hertz_says():
    setup = _drop(0.0, restitution=0.3, gravity=9.81, dt=None, y0=R * 0.9999)
    backend = make_backend("cpu", setup.model)
    backend.set_state(setup.state)
    steps = math.ceil(0.2 / setup.model.physics.dt)
    backend.step(steps)
    depth = R - float(backend.get_state().positions[0, 1])
    expected = (3.0 * MASS * 9.81 / (4.0 * E_WALL * math.sqrt(R))) ** (2.0 / 3.0)
    assert depth == pytest.approx(expected, rel=0.01)


def test_a_mesh_floor_gives_the_walls_impact():
    _, _, wall_rebound, wall = _impact(1.0, restitution=0.6, dt=2e-6)
    _, _, mesh_rebound, mesh = _impact(1.0, restitution=0.6, dt=2e-6, surface="mesh")
    assert mesh_rebound == pytest.approx(wall_rebound, rel=1e-4)
    assert np.allclose(mesh, wall, rtol=0, atol=1e-7)


def test_kernel_follows_the_float64_reference():
    """A spinning, rolling, sliding Hertz pair with springs: the CPU kernel's law against contact_response."""
    n = np.array([0.6, 0.0, 0.8])
    ri, rj, mi, mj, overlap = 0.010, 0.012, 0.002, 0.003, 2e-4
    e_star, g_star = effective_moduli(1e7, 0.3, 5e7, 0.25)
    xi, xj = np.zeros(3), -n * (ri + rj - overlap)
    vi, vj = np.array([-0.3, 0.2, -0.5]), np.array([0.1, 0.0, 0.0])
    wi, wj = np.array([3.0, -2.0, 1.0]), np.array([0.5, 0.0, -1.0])
    spring0, rolling0 = np.array([1e-6, -2e-6, 0.5e-6]), np.array([0.0, 1e-6, 0.0])
    for mu in (0.5, 0.01):  # sticking, then sliding (the cap)
        reference = contact_response(xi, xj, vi, vj, wi, wj, ri, rj, mi, mj, e_star, 0.3, mu, mu_roll=0.2,
                                     spring=spring0, rolling=rolling0, dt=1e-5, shear_modulus=g_star)
        hist = np.concatenate([spring0, rolling0])[None, :].copy()
        f = contact_law_full(*n, overlap, *(vi - vj), *wi, *wj, ri - 0.5 * overlap, rj - 0.5 * overlap,
                             ri * rj / (ri + rj), mi * mj / (mi + mj), e_star, g_star, 0, 0.3, mu, 0.2, 0.0, True, hist,
                             0, 1e-5)
        force, torque_i, torque_j, spring, rolling = reference
        assert np.allclose(f[:3], force, rtol=1e-9, atol=0)
        assert np.allclose(f[3:6], torque_i, rtol=1e-9, atol=1e-18)
        assert np.allclose(f[6:9], torque_j, rtol=1e-9, atol=1e-18)
        assert np.allclose(hist[0, :3], spring, rtol=1e-9) and np.allclose(hist[0, 3:], rolling, rtol=1e-9)
        # Hertz, not Hooke: LIGGGHTS' normal force, written out: kn δ − gamman v_n with kn = 4/3 E* √(R δ),
        # gamman = 2 √(5/6) β √(Sn m_eff), Sn = 2 E* √(R δ).
        size = math.sqrt(ri * rj / (ri + rj) * overlap)
        gamman = 2.0 * math.sqrt(5.0 / 6.0) * 0.3 * math.sqrt(2.0 * e_star * size * mi * mj / (mi + mj))
        assert force @ n == pytest.approx(4.0 / 3.0 * e_star * size * overlap - gamman * ((vi - vj) @ n), rel=1e-12)


def test_auto_time_step_resolves_the_quickest_hertz_contact():
    setup = _drop(2.0, dt=None, restitution=0.5)
    choice = setup.time_step
    assert choice.contact_duration / choice.dt >= 10
    assert setup.model.physics.contact_normal == "hertz"
    # A softer material gets a longer step (Hertz contacts of soft grains last longer).
    soft = setup_from_arrays(positions=np.array([[0.0, R, 0.0]], np.float32), radius=np.array([R], np.float32),
                             velocities=np.array([[0.0, -2.0, 0.0]], np.float32),
                             materials=(Material(youngs_modulus=YOUNGS / 100),),
                             domain=Domain(lo=(-1, 0, -1), hi=(1, 1, 1), wall_youngs_modulus=YOUNGS / 100),
                             gravity=Gravity(vector=(0.0, 0.0, 0.0)), contact_normal="hertz")
    assert soft.model.physics.dt > 2 * choice.dt


def _preset(extra: str, material: str = "") -> str:
    return f"""
[scene]
frames = 1
[contact]
normal = "hertz"
{extra}
[[materials]]
name = "glass"
youngs_modulus = 6.0e7
poisson_ratio = 0.25
{material}
[[emitters]]
type = "box"
count = 20
lo = [0.1, 0.1, 0.1]
hi = [0.9, 0.5, 0.9]
radius = [0.01, 0.01]
"""


def test_a_preset_chooses_hertz_with_its_moduli(tmp_path):
    import tomllib

    path = tmp_path / "glass.toml"
    path.write_text(_preset("") + "[domain]\nwall_youngs_modulus = 1.0e8\nwall_poisson_ratio = 0.2\n")
    preset = parse_preset(tomllib.loads(path.read_text()), str(path))
    setup = setup_from_preset(preset)
    physics = setup.model.physics
    assert physics.contact_normal == "hertz"
    assert physics.materials[0].youngs_modulus == 6.0e7 and physics.materials[0].poisson_ratio == 0.25
    assert physics.domain.wall_youngs_modulus == 1.0e8 and physics.domain.wall_poisson_ratio == 0.2
    backend = make_backend("cpu", setup.model)
    backend.set_state(setup.state)
    backend.step(50)
    assert np.isfinite(backend.get_state().positions).all()


@pytest.mark.parametrize("extra, material, words", [
    ("[time]\nstiffness = 1000.0", "", "no meaning"),
    ("", "poisson_ratio = 0.5", "poisson_ratio"),
    ("", "youngs_modulus = 0.0", "youngs_modulus"),
])
def test_a_preset_with_meaningless_hertz_settings_is_refused(extra, material, words):
    import tomllib

    text = _preset(extra).replace("poisson_ratio = 0.25\n", "poisson_ratio = 0.25\n" if not material else "")
    text = text.replace("youngs_modulus = 6.0e7\n", "" if "youngs" in material else "youngs_modulus = 6.0e7\n")
    text = text.replace('name = "glass"\n', f'name = "glass"\n{material}\n')
    with pytest.raises(MochiError, match=words):
        parse_preset(tomllib.loads(text), "hertz.toml")


def test_the_gpu_backends_refuse_hertz_in_one_sentence():
    setup = _drop(1.0)
    with pytest.raises(MochiError, match="only the linear .Hooke. contact law.*--backend cpu"):
        check_contact_law(setup.model.physics)
    with pytest.raises(MochiError, match="Young's modulus of the material 'm'"):
        setup_from_arrays(positions=np.zeros((1, 3), np.float32) + 0.5, radius=np.array([R], np.float32),
                          materials=(Material(name="m", youngs_modulus=-1.0),), contact_normal="hertz")


def test_steps_before_packing_are_the_packed_grains_steps():
    """The forecast of Blender's dialogs (one grain per size, each size a material of its own) asks for the
    steps 'auto' gives the packed grains: their quickest pairs are the smallest grains', which it has."""
    from engine.timestep import (choose_time_step, expected_impact_speed, hertz_contacts, rayleigh_time,
                                 steps_per_frame_before_packing)

    materials = (Material(name="soft", density=1000.0, youngs_modulus=2.0e6, poisson_ratio=0.45),
                 Material(name="stiff", density=2500.0, youngs_modulus=5.0e7, poisson_ratio=0.2))
    sizes, owner = [0.01, 0.006, 0.02, 0.012], [0, 0, 1, 1]  # a large and a small size per material
    radius = np.repeat(np.array(sizes, np.float32), 40)
    index = np.repeat(np.array(owner, np.int32), 40)
    density = np.array([materials[i].density for i in owner])
    mass = (np.repeat(density, 40) * (4.0 / 3.0 * math.pi) * radius.astype(np.float64) ** 3).astype(np.float32)
    wall = (1.0e7, 0.3)
    packed = choose_time_step(dt=None, stiffness=None, substeps=None, fps=24.0, mass=mass, radius=radius,
                              impact_speed=expected_impact_speed(0.5, 9.81, 0.4), restitution=0.6, gravity=9.81,
                              column_height=1.0, hertz=hertz_contacts(materials, *wall, mass, radius, index),
                              rayleigh=rayleigh_time(materials, radius, index))
    common = dict(fps=24.0, dt=None, substeps=None, stiffness=None, radius=sizes, density=density, restitution=0.6,
                  fall_height=0.4, initial_speed=0.5, gravity=9.81, column_height=1.0)
    before = steps_per_frame_before_packing(**common, youngs_modulus=[materials[i].youngs_modulus for i in owner],
                                            poisson_ratio=[materials[i].poisson_ratio for i in owner],
                                            wall_moduli=wall)
    assert before == packed.steps_per_frame
    assert steps_per_frame_before_packing(**common) != before  # the linear law's 'auto' is another choice


@pytest.mark.parametrize("cap", ["clipped", "absolute", "spring"])
def test_each_friction_cap_follows_the_float64_reference(cap):
    """The three caps (Mochi's, LAMMPS', LIGGGHTS'), sticking then sliding, through the wall kernel's law
    table and against contact_response; the default one is the paper's kernels' cap."""
    from engine.backends.cpu_kernels_law import law_of
    from engine.contact_law import FRICTION_CAPS

    n = np.array([0.0, 1.0, 0.0])
    r, m, overlap = 0.01, 0.004, 3e-4
    e_star, g_star = effective_moduli(1e7, 0.3, 1e7, 0.3)
    vi, wi = np.array([0.4, -0.05, 0.1]), np.array([0.0, 0.0, 12.0])
    for mu in (0.8, 0.05):
        for start in (np.zeros(3), np.array([2e-5, 0.0, -1e-5])):
            reference = contact_response(np.array([0.0, r - overlap, 0.0]), np.zeros(3), vi, np.zeros(3), wi,
                                         np.zeros(3), r, 0.0, m, math.inf, e_star, 0.4, mu, spring=start,
                                         dt=1e-5, shear_modulus=g_star, friction_cap=cap)
            row = np.array([e_star, g_star, FRICTION_CAPS.index(cap)], np.float64)
            k_or_e, shear, rule = law_of(123.0, row)
            hist = np.concatenate([start, np.zeros(3)])[None, :].copy()
            f = contact_law_full(*n, overlap, *vi, *wi, 0.0, 0.0, 0.0, r - 0.5 * overlap, 0.0, r, m, k_or_e, shear,
                                 rule, 0.4, mu, 0.0, 0.0, True, hist, 0, 1e-5)
            assert np.allclose(f[:3], reference[0], rtol=1e-9, atol=1e-15)
            assert np.allclose(f[3:6], reference[1], rtol=1e-9, atol=1e-18)
            assert np.allclose(hist[0, :3], reference[3], rtol=1e-9, atol=1e-18)


def test_the_caps_differ_where_the_peers_do():
    """While sliding, LIGGGHTS' cap leaves the damping out of the spring it keeps: a different spring, so a
    different force the next step; the cap only matters once the contact slides."""
    n_args = dict(spring=np.array([3e-5, 0.0, 0.0]), dt=1e-5, shear_modulus=effective_moduli(1e7, 0.3, 1e7, 0.3)[1])
    e_star = effective_moduli(1e7, 0.3, 1e7, 0.3)[0]
    common = (np.array([0.0, 0.0097, 0.0]), np.zeros(3), np.array([0.4, -0.3, 0.0]), np.zeros(3), np.zeros(3),
              np.zeros(3), 0.01, 0.0, 0.004, math.inf, e_star, 0.4, 0.05)
    springs = {cap: contact_response(*common, friction_cap=cap, **n_args)[3] for cap in ("clipped", "spring")}
    assert not np.allclose(springs["clipped"], springs["spring"], rtol=1e-3)
