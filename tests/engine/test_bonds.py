"""Glue bonds (engine.bonds): made at the start, break at the set stress, stay broken, resume exactly."""

from __future__ import annotations

import math

import numpy as np
import pytest

from engine.backends.cpu import BackendCpu
from engine.bake import BakeProgress, bake
from engine.bonds import BOND_REACH, make_bonds
from engine.cache import read_frame
from engine.errors import MochiError
from engine.model import Body, Domain, Gravity, Material
from engine.scene import setup_from_arrays

R = 0.01
K = 1.0e4
STRENGTH = 2.0e5  # [Pa]


def _pair(speed, strength=STRENGTH, hi=1.0):
    """Two glued grains just touching, flying apart at ±speed along x (no gravity, no damping)."""
    positions = np.array([[-R, 0.5, 0.0], [R, 0.5, 0.0]], np.float32)
    velocities = np.array([[-speed, 0, 0], [speed, 0, 0]], np.float32)
    return setup_from_arrays(
        positions=positions, radius=np.full(2, R, np.float32), velocities=velocities,
        materials=(Material(restitution=1.0, friction=0.5),),
        domain=Domain(lo=(-hi, 0, -1), hi=(hi, 1, 1), wall_restitution=1.0),
        gravity=Gravity(vector=(0.0, 0.0, 0.0)), dt=1.0e-4, stiffness=K,
        bodies=(Body(object_id=0, kind="glued", glue_strength=STRENGTH),))


def _breaking_speed():
    """Undamped: ½ m_eff (2v)² = ½ k_b A Δ² at the largest stretch Δ; it breaks when k_bn Δ > σ_b."""
    mass = 2500.0 * 4.0 / 3.0 * math.pi * R ** 3
    area = math.pi * R ** 2
    k_b = K  # glue_stiffness 0: k_bn A_b = k
    stretch = STRENGTH * area / k_b
    return 0.5 * stretch * math.sqrt(k_b / (0.5 * mass))


def test_bonds_join_touching_grains_of_glued_objects_only():
    x = np.array([[0, 0, 0], [0.0205, 0, 0], [0.05, 0, 0], [0.07, 0, 0], [0.09, 0, 0]], np.float32)
    r = np.full(5, R, np.float32)
    obj = np.array([0, 0, 0, 1, 1])
    bonds = make_bonds(x, r, obj, (Body(0, "glued"),), K)
    assert bonds.pairs.tolist() == [[0, 1]]  # gap 0.5 mm < 5 % of 2 cm; 1–2 too far; object 1 loose
    assert bonds.rest[0] == pytest.approx(0.0205, rel=1e-6)
    assert bonds.area[0] * bonds.stiffness[0] == pytest.approx(K)
    assert 0.0205 < 2 * R * (1 + BOND_REACH)
    with pytest.raises(MochiError, match="body 'sticky'"):
        make_bonds(x, r, obj, (Body(0, "sticky"),), K)


@pytest.mark.parametrize("fraction, breaks", [(0.9, False), (1.1, True)])
def test_bonded_pair_breaks_at_the_set_stress_and_stays_broken(fraction, breaks):
    setup = _pair(fraction * _breaking_speed(), hi=0.2)
    backend = BackendCpu(setup.model)
    backend.set_state(setup.state)
    gaps = []
    for _ in range(300):  # 0.3 s: broken halves reach the walls at ±0.2 m, bounce and meet again
        backend.step(10)
        p = backend.state.positions
        gaps.append(float(p[1, 0] - p[0, 0]) - 2 * R)
    intact = int(backend.bond_intact[0])
    state = backend.get_state()
    if breaks:
        assert intact == 0 and state.bonds.tolist() == [0, 0]
        assert max(gaps) > 0.1  # flew apart
        assert min(gaps[100:]) < 0.0  # met again, as ordinary grains (the bond stayed broken)
    else:
        assert intact == 1 and state.bonds.tolist() == [1, 1]
        assert max(gaps) < 0.01 * R + 2.0 * STRENGTH * math.pi * R ** 2 / K  # held


def test_glued_bake_resumes_bit_exact_and_writes_bond_counts(tmp_path):
    """A weakly glued block of 64 grains (and a loose grain beside it) dropped on the floor cracks;
    a bake resumed from a middle frame gives the same bits."""
    g = np.stack(np.meshgrid(*[np.arange(4)] * 3, indexing="ij"), -1).reshape(-1, 3) * 2 * 0.008
    x = np.concatenate([g + [-0.024, 0.1, -0.024], [[0.08, 0.01, 0.08]]]).astype(np.float32)
    n = len(x)
    obj = np.zeros(n, np.int32)
    obj[-1] = 1
    setup = setup_from_arrays(positions=x, radius=np.full(n, 0.008, np.float32), object_id=obj,
                              materials=(Material(friction=0.5),), domain=Domain(lo=(-0.1, 0, -0.1), hi=(0.1, 1, 0.1)),
                              dt=1e-4, stiffness=1e4, fps=50,
                              bodies=(Body(object_id=0, kind="glued", glue_strength=1.0e4),))
    assert setup.model.bonds.count == 3 * 4 * 4 * 3  # the lattice's nearest neighbours
    full = tmp_path / "full"
    bake(setup, full, frames=10)
    first, last = read_frame(full, 2)["bonds"], read_frame(full, 10)["bonds"]
    assert first.sum() == 2 * setup.model.bonds.count and first[-1] == 0
    assert 0 < last.sum() < first.sum()  # cracked on impact, not shattered to dust
    part = tmp_path / "part"
    progress = BakeProgress()

    def cancel(p):
        if p.frames_done == 7:
            p.request_cancel()

    bake(setup, part, frames=10, progress=progress, on_frame=cancel)
    bake(None, part, frames=10, resume=True)
    assert all((part / f).read_bytes() == (full / f).read_bytes() for f in ("frame_0008.ply", "frame_0010.ply"))


def _clump_setup(rng, gravity=(0.0, 0.0, 0.0), rotation=True, restitution=0.5):
    """An irregular rigid body of 12 grains, spinning about a tilted axis and moving, in free space."""
    x = rng.uniform(-0.02, 0.02, (12, 3)) + [0.0, 0.5, 0.0]
    r = rng.uniform(0.006, 0.01, 12)
    spin = np.array([3.0, 11.0, -5.0])
    v = np.cross(spin, x - x.mean(axis=0)) + [0.1, 0.0, 0.05]
    return setup_from_arrays(positions=x.astype(np.float32), radius=r.astype(np.float32), velocities=v.astype(np.float32),
                             materials=(Material(friction=0.5, restitution=restitution),),
                             domain=Domain(lo=(-1, 0, -1), hi=(1, 1, 1), wall_restitution=restitution),
                             gravity=Gravity(vector=gravity), dt=1e-4, stiffness=1e4, rotation=rotation,
                             integrator="verlet", bodies=(Body(object_id=0, kind="rigid"),))


def _angular_momentum(model, state):
    m = model.mass.astype(np.float64)[:, None]
    x = state.positions.astype(np.float64)
    v = state.velocities.astype(np.float64)
    centre = (m * x).sum(axis=0) / m.sum()
    spin = 0.4 * m * model.radius.astype(np.float64)[:, None] ** 2 * state.angular_velocities
    return (np.cross(x - centre, m * v) + spin).sum(axis=0), (m * v).sum(axis=0)


def test_clump_conserves_angular_momentum_and_shape_in_free_flight(rng):
    setup = _clump_setup(rng)
    assert setup.model.clumps.count == 1
    backend = BackendCpu(setup.model)
    backend.set_state(setup.state)
    backend.step(1)
    start = backend.get_state()
    l0, p0 = _angular_momentum(setup.model, start)
    backend.step(3000)  # 0.3 s: several turns about a tilted axis (the body tumbles)
    end = backend.get_state()
    l1, p1 = _angular_momentum(setup.model, end)
    np.testing.assert_allclose(l1, l0, rtol=1e-4, atol=1e-6 * np.abs(l0).max())
    np.testing.assert_allclose(p1, p0, rtol=1e-5, atol=1e-9)
    gaps = lambda s: np.linalg.norm(s.positions[:, None].astype(np.float64) - s.positions[None], axis=2)  # noqa: E731
    np.testing.assert_allclose(gaps(end), gaps(setup.state), atol=2e-6)  # rigid: the shape never changes
    turned = end.orientations[0]
    assert abs(turned[0]) < 0.99 and np.all(end.orientations == turned)  # all members share the body's turn


def test_rigid_clump_lands_whole(rng):
    setup = _clump_setup(rng, gravity=(0.0, -9.81, 0.0), restitution=0.05)
    backend = BackendCpu(setup.model)
    backend.set_state(setup.state)
    backend.step(8000)  # falls 0.45 m in 0.3 s, lands and tumbles
    end = backend.get_state()
    gaps = lambda s: np.linalg.norm(s.positions[:, None].astype(np.float64) - s.positions[None], axis=2)  # noqa: E731
    np.testing.assert_allclose(gaps(end), gaps(setup.state), atol=5e-6)
    lowest = float((end.positions[:, 1] - setup.model.radius).min())
    assert abs(lowest) < 1e-3  # on the floor (it may still roll: a roundish body on a flat floor)
