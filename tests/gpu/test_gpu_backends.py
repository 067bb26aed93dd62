"""The CUDA grid and OptiX backends against the CPU reference and a brute-force oracle."""

from __future__ import annotations

import numpy as np
import pytest

from engine.backends.cpu import BackendCpu
from engine.neighbors.brute import brute_force_pairs, near_ties

from .conftest import make_gpu_backend, model_and_state

SCENARIOS = ["ratio 120:1", "uniform polydisperse", "clusters", "coincident centres", "far from origin",
             "two-radius lattice"]


def scenario(name: str, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(positions float32 (n, 3), radii float32 (n,)) of a named contact-detection state."""
    n = 3000
    if name == "ratio 120:1":  # log-uniform radii, so both tiny and huge spheres are common
        pos, rad = rng.uniform(0, 1, (n, 3)), np.exp(rng.uniform(np.log(0.0005), np.log(0.06), n))
    elif name == "uniform polydisperse":
        pos, rad = rng.uniform(0, 1, (n, 3)), rng.uniform(0.005, 0.03, n)
    elif name == "clusters":
        centres = rng.uniform(0, 1, (6, 3))
        pos, rad = centres[rng.integers(0, 6, n)] + rng.normal(0, 0.02, (n, 3)), rng.uniform(0.002, 0.01, n)
    elif name == "coincident centres":
        base = rng.uniform(0, 1, (n // 2, 3))
        pos = np.concatenate([base, base[: n // 4], base[: n // 4]])
        rad = rng.uniform(0.001, 0.02, len(pos))
    elif name == "far from origin":
        pos, rad = rng.uniform(0, 1, (n, 3)) + np.array([1000.0, -2000.0, 500.0]), rng.uniform(0.005, 0.03, n)
    else:  # spheres of r touching exactly on a cubic lattice, r/2 in the cube centres
        r = 0.01
        g = np.stack(np.meshgrid(*[np.arange(10)] * 3, indexing="ij"), -1).reshape(-1, 3) * 2 * r
        small = g[:729] + r
        pos = np.concatenate([g, small])
        rad = np.concatenate([np.full(len(g), r), np.full(len(small), r / 2)])
    return pos.astype(np.float32), rad.astype(np.float32)


def pair_set(pairs: np.ndarray) -> set[tuple[int, int]]:
    found = {tuple(p) for p in pairs.tolist()}
    assert len(found) == len(pairs), "a pair was resolved more than once"
    assert all(i < j for i, j in found)
    return found


@pytest.mark.parametrize("name", SCENARIOS)
def test_contacts_equal_cpu_and_oracle(gpu_name, name):
    positions, radius = scenario(name, np.random.default_rng(7))
    model, state = model_and_state(positions, radius)
    gpu = make_gpu_backend(gpu_name, model)
    gpu.set_state(state)
    found = pair_set(gpu.contact_pairs())
    # The GPU tests pairs in float64 from the float32 inputs with the oracle's roundings, so even the
    # exact ties of the lattice agree with it.
    oracle = brute_force_pairs(positions, radius)
    assert found == oracle
    assert len(oracle) > 50
    expected = np.zeros(len(radius), np.int64)
    for i, j in oracle:
        expected[i] += 1
        expected[j] += 1
    assert np.array_equal(gpu.contact_counts(), expected)
    # The CPU backend's candidate search rounds in float32 and may drop exact ties (see its tests).
    cpu = BackendCpu(model)
    cpu.set_state(state)
    ties = near_ties(positions, radius)
    assert found - ties == pair_set(cpu.contact_pairs()) - ties


def _moving_state(rng, n=4000):
    positions = rng.uniform(0, 1, (n, 3))
    radius = np.exp(rng.uniform(np.log(0.002), np.log(0.03), n))
    velocities = rng.normal(0, 2.0, (n, 3))
    return positions, radius, velocities


def test_refit_and_rebuild_find_the_same_contacts(gpu_name):
    positions, radius, velocities = _moving_state(np.random.default_rng(11))
    # A soft spring, so that the overlaps of the random start push gently.
    model, state = model_and_state(positions, radius, velocities=velocities, lo=(-0.5,) * 3, hi=(1.5,) * 3,
                                   stiffness=1.0, rebuild_interval=1000)
    refit = make_gpu_backend(gpu_name, model)
    refit.set_state(state)
    timings = refit.step(60)  # one build, then refits (OptiX) / the Morton order of step 0 (grid)
    assert timings.rebuilds == 1 and timings.steps == 60
    moved = refit.get_state()
    assert float(np.abs(moved.positions - state.positions).max()) > 0.01
    refitted = pair_set(refit.contact_pairs())
    rebuilt_backend = make_gpu_backend(gpu_name, model)
    rebuilt_backend.set_state(moved)
    rebuilt = pair_set(rebuilt_backend.contact_pairs())
    assert refitted == rebuilt
    cpu = BackendCpu(model)
    cpu.set_state(moved)
    assert refitted == pair_set(cpu.contact_pairs())
    assert len(refitted) > 100


def _packed_box(rng, n=2500):
    """Spheres of radius 0.01 jittered on a lattice so that many touch, in a closed box."""
    side = int(np.ceil(n ** (1 / 3)))
    g = np.stack(np.meshgrid(*[np.arange(side)] * 3, indexing="ij"), -1).reshape(-1, 3)[:n]
    positions = 0.05 + g * 0.0195 + rng.uniform(-0.0005, 0.0005, (n, 3))
    return positions, np.full(n, 0.01), rng.normal(0, 0.05, (n, 3))


@pytest.mark.parametrize("rotating", [False, True])
def test_100_steps_agree_with_cpu(gpu_name, rotating):
    positions, radius, velocities = _packed_box(np.random.default_rng(3))
    model, state = model_and_state(positions, radius, velocities=velocities, lo=(0, 0, 0), hi=(0.35, 0.4, 0.35),
                                   gravity=(0.0, -9.81, 0.0) if not rotating else (0.0, 0.0, -9.81),
                                   rotation_axis=(0.0, 1.0, 0.0) if rotating else None,
                                   rotation_rate=np.pi / 4 if rotating else 0.0,
                                   restitution=0.5, friction=0.3, stiffness=1.0e3, dt=1.0e-4)
    gpu = make_gpu_backend(gpu_name, model)
    gpu.set_state(state)
    gpu.step(40)
    gpu.step(60)
    got = gpu.get_state()
    cpu = BackendCpu(model)
    cpu.set_state(state)
    assert len(cpu.contact_pairs()) > 1000
    cpu.step(100)
    expected = cpu.get_state()
    assert got.step == expected.step == 100
    # float32 contact forces on the GPU, float64 on the CPU: agreement to float32 round-off.
    np.testing.assert_allclose(got.positions, expected.positions, rtol=0, atol=2e-6)
    np.testing.assert_allclose(got.velocities, expected.velocities, rtol=0, atol=2e-4)
    assert np.array_equal(got.active, expected.active)
    assert float(np.abs(got.positions - state.positions).max()) > 1e-4


def test_grid_backend_is_deterministic():
    positions, radius, velocities = _packed_box(np.random.default_rng(5))
    model, state = model_and_state(positions, radius, velocities=velocities, lo=(0, 0, 0), hi=(0.35, 0.4, 0.35),
                                   gravity=(0.0, -9.81, 0.0), stiffness=1.0e3)
    runs = []
    for _ in range(2):
        gpu = make_gpu_backend("cuda", model)
        gpu.set_state(state)
        gpu.step(50)
        runs.append(gpu.get_state())
    assert np.array_equal(runs[0].positions, runs[1].positions)
    assert np.array_equal(runs[0].velocities, runs[1].velocities)


def test_open_side_deactivates_and_divergence_is_reported(gpu_name):
    from engine.errors import SimulationDiverged

    rng = np.random.default_rng(9)
    positions = rng.uniform(0.2, 0.8, (500, 3))
    model, state = model_and_state(positions, np.full(500, 0.005), lo=(0, 0, 0), hi=(1, 1, 1),
                                   gravity=(0.0, -9.81, 0.0), open_sides=("-y",), stiffness=1e3, dt=1e-3)
    gpu = make_gpu_backend(gpu_name, model)
    gpu.set_state(state)
    gpu.step(600)  # 0.6 s: everything falls more than 0.8 m, through the open floor
    out = gpu.get_state()
    assert out.active.sum() == 0
    fast = make_gpu_backend(gpu_name, model)
    fast.set_state(type(state)(state.positions, np.full_like(state.velocities, 500.0), state.active.copy(), 0))
    fast.step(3)
    with pytest.raises(SimulationDiverged, match="step 1 "):
        fast.get_state()


@pytest.mark.slow
def test_bake_like_run_of_100k_stays_finite(gpu_name):
    rng = np.random.default_rng(1)
    n = 100_000
    side = 47
    sites = rng.choice(side ** 3, n, replace=False)
    g = np.stack(np.unravel_index(sites, (side,) * 3), axis=1)
    positions = 0.01 + g * 0.021
    radius = rng.uniform(0.008, 0.01, n)
    model, state = model_and_state(positions, radius, lo=(0, 0, 0), hi=(1, 1, 1), gravity=(0.0, 0.0, -9.81),
                                   rotation_axis=(0.0, 1.0, 0.0), rotation_rate=np.pi / 4, stiffness=2.0e3,
                                   dt=1.0e-4, density=500.0)
    gpu = make_gpu_backend(gpu_name, model)
    gpu.set_state(state)
    for _ in range(10):  # frames of 300 steps: 0.3 s in all
        timings = gpu.step(300)
        frame = gpu.get_state()
        assert np.isfinite(frame.positions).all() and np.isfinite(frame.velocities).all()
        assert frame.positions.shape == (n, 3) and int(frame.active.sum()) == n
    assert timings.steps == 300 and timings.rebuilds >= 30
    assert float(np.abs(frame.positions - state.positions).max()) > 0.1
    lo = frame.positions - radius[:, None]
    assert lo.min() > -0.01 and (frame.positions + radius[:, None]).max() < 1.01


def test_auto_names_a_backend_that_starts_and_says_why():
    from engine.backends import make_backend
    from engine.backends.gpu_toolchain import GpuUnavailable, device_summary, import_cupy
    from engine.backends.select import RT_CORE_CAPABILITIES, available_backends, choose_backend_name, unavailable_backends

    try:
        cupy = import_cupy()
    except GpuUnavailable as exc:
        pytest.skip(str(exc))
    messages = []
    name = choose_backend_name(log=messages.append)
    _, capability = device_summary(cupy)
    expected = "cuda"
    if capability in RT_CORE_CAPABILITIES and "optix" in available_backends():
        from engine.backends.optix_self_check import optix_passes_self_check

        expected = "optix" if optix_passes_self_check(log=lambda message: None)[0] else "cuda"
    assert name == expected
    assert messages[-1].startswith(f"auto backend: {name} on ")
    for reason in unavailable_backends().values():
        assert reason.endswith(".") or reason.endswith(")")
    model, _ = model_and_state(np.zeros((2, 3)) + [[0, 0, 0], [1, 0, 0]], np.full(2, 0.1))
    assert make_backend("auto", model, log=lambda message: None).name == name


def test_optix_self_check_passes_here():
    """The self-check 'auto' runs before it trusts optix: OptiX's contacts equal the CUDA grid's."""
    from engine.backends.optix_self_check import run_self_check, self_check_state
    from engine.model import contact_model

    positions, radius = self_check_state()
    make_gpu_backend("optix", contact_model(positions, radius))  # skips without optix
    passed, reason = run_self_check()
    assert passed, reason


@pytest.mark.parametrize("name", ["cuda", "optix"])
def test_mochi_contacts_on_gpu_backends_equals_cpu(name, rng):
    """``mochi contacts --backend cuda|optix``: the same counts as the cpu backend (was refused)."""
    from engine.contacts import count_contacts
    from engine.model import contact_model

    positions = rng.uniform(0, 1, (3000, 3)).astype(np.float32)
    radius = np.exp(rng.uniform(np.log(0.0005), np.log(0.06), 3000)).astype(np.float32)
    make_gpu_backend(name, contact_model(positions, radius))
    assert np.array_equal(count_contacts(positions, radius, name), count_contacts(positions, radius, "cpu"))
