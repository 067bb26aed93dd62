"""The Taichi peer baseline (benchmarks/taichi_dem.py) simulates exactly the CPU backend's physics.

Both run the same few hundred grains, thrown down onto the floor of a box, for 200 steps: two
materials (different restitution < 1 and friction > 0, so the pair tables matter), walls with their
own restitution and friction, and in the second scene rotating gravity and an open side that
particles leave through; each under both friction models. The peer computes in float32 and the CPU
backend in float64, and the grains collide many times, so the trajectories differ by amplified
round-off (measured: ≤ 1.7e-5 m in position, spring model, closed box). The position tolerance is 6×
that and 4× below the smallest deviation measured with one term of the law broken on purpose in the
peer (largest position difference over both scenes):

    spring: normal damping ×1.1 1.1e-3 m, k_t ×1.1 6.9e-4 m, γ_t ×1.1 4.6e-4 m, ξ not projected
    onto the tangent plane 4.0e-4 m, no pair history 7.3e-3 m, no wall history 5.4e-3 m, no sliding
    update of ξ 5.9e-3 m, μ cap ×0.5 8.7e-3 m, wall β from the pair table 3.3e-3 m, pair μ not
    averaged 3.3e-3 m;
    damper: normal damping ×1.1 1.3e-3 m, γ_d ×0.5 2.0e-3 m, μ cap ×0.5 8.4e-3 m, no friction
    1.9e-2 m, wall m_eff ×0.5 2.6e-3 m, wall β from the pair table 3.3e-3 m, pair μ not averaged
    3.8e-3 m.
"""

import importlib.util
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("taichi")

from engine.backends.cpu import BackendCpu  # noqa: E402
from engine.errors import MochiError  # noqa: E402
from engine.fields import ForceField  # noqa: E402
from engine.model import Domain, Gravity, Material, Physics, build_model  # noqa: E402
from engine.state import make_state  # noqa: E402

PEER_PATH = Path(__file__).resolve().parents[2] / "benchmarks" / "taichi_dem.py"
STEPS = 200
#: Largest position difference allowed [m] (1 % of the grain radius).
POSITION_TOLERANCE = 1e-4
#: Largest 99th percentile of the per-particle velocity difference allowed [m/s] (measured: ≤ 2.1e-3;
#: the smallest of the broken terms above gives 5.7e-2).
VELOCITY_TOLERANCE = 2e-2


@pytest.fixture(scope="module")
def peer():
    """The peer module, with Taichi started once on the CPU for this test process."""
    spec = importlib.util.spec_from_file_location("taichi_dem", PEER_PATH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.init("cpu")
    return module


def _scene(*, open_x: bool, rotating: bool, friction_model: str = "spring"):
    """A jittered 8×5×8 lattice of grains (r ≈ 1 cm) just above the floor, thrown down at ~1 m/s."""
    rng = np.random.default_rng(0)
    r0, spacing, (nx, ny, nz) = 0.01, 0.023, (8, 5, 8)
    lattice = np.stack(np.meshgrid(np.arange(nx), np.arange(ny), np.arange(nz), indexing="ij"), -1).reshape(-1, 3)
    positions = (lattice + 0.5) * spacing + rng.uniform(-0.1, 0.1, lattice.shape) * r0
    positions[:, 1] += 0.001
    count = len(positions)
    radius = r0 * rng.uniform(0.85, 1.0, count)
    velocities = rng.normal(0.0, 0.5, (count, 3)) + np.array([1.5 if open_x else 0.0, -1.0, 0.0])
    # The peer implements the paper's model: compare with the CPU's non-rotating Euler path.
    physics = Physics(
        materials=(Material("a", 2500.0, 0.5, 0.6), Material("b", 1500.0, 0.8, 0.3)),
        domain=Domain(lo=(0.0, 0.0, 0.0), hi=(nx * spacing + 0.001, 0.4, nz * spacing + 0.001),
                      open_sides=("+x",) if open_x else (), wall_restitution=0.4, wall_friction=0.5),
        gravity=Gravity((0.0, -9.81, 0.0), (1.0, 0.0, 0.0), 20.0) if rotating else Gravity(),
        stiffness=1e4, dt=1e-4, friction_model=friction_model, rotation=False, integrator="euler")  # the peer's model
    model = build_model(radius, physics, material_index=(rng.random(count) < 0.5).astype(np.int32))
    return model, make_state(positions, velocities)


@pytest.mark.parametrize("friction_model", ["spring", "damper"])
@pytest.mark.parametrize("open_x, rotating", [(False, False), (True, True)], ids=["closed-box", "open-rotating"])
def test_peer_matches_cpu_backend(peer, open_x, rotating, friction_model):
    model, state = _scene(open_x=open_x, rotating=rotating, friction_model=friction_model)
    backend = BackendCpu(model)
    backend.set_state(state)
    backend.step(STEPS)
    expected = backend.get_state()
    assert len(backend.contact_pairs()) > 20, "the scene must have grains in contact"
    assert np.abs(expected.positions - state.positions).max() > 0.02, "the grains must move"

    result = peer.run_taichi_dem(state.positions, state.velocities, model.radius, model.mass,
                                 model.material_index, model.physics, steps=STEPS, warmup_steps=2)

    assert result["positions"].dtype == np.float32 and result["velocities"].dtype == np.float32
    assert result["particle_count"] == model.particle_count and result["arch"] == "cpu"
    assert result["seconds"] > 0 and result["particle_steps_per_s"] > 0
    np.testing.assert_array_equal(result["active"], expected.active)
    if open_x:
        assert expected.active.sum() < model.particle_count, "some grains must leave through +x"
    position_error = np.abs(result["positions"] - expected.positions).max()
    assert position_error <= POSITION_TOLERANCE
    velocity_error = np.quantile(np.abs(result["velocities"] - expected.velocities).max(axis=1), 0.99)
    assert velocity_error <= VELOCITY_TOLERANCE


def test_peer_refuses_position_dependent_fields(peer):
    model, state = _scene(open_x=False, rotating=False)
    physics = Physics(materials=model.physics.materials, domain=model.physics.domain,
                      fields=(ForceField("vortex"),), rotation=False, integrator="euler")
    with pytest.raises(MochiError, match="vortex"):
        peer.run_taichi_dem(state.positions, state.velocities, model.radius, model.mass,
                            model.material_index, physics, steps=1)


def test_peer_refuses_rotating_grains(peer):
    model, state = _scene(open_x=False, rotating=False)
    physics = Physics(materials=model.physics.materials, domain=model.physics.domain)  # rotation, Verlet
    with pytest.raises(MochiError, match="do not rotate"):
        peer.run_taichi_dem(state.positions, state.velocities, model.radius, model.mass,
                            model.material_index, physics, steps=1)
