"""Static friction on the GPU backends, run on the host: the device kernels (grid forces, the OptiX
programs with the traversal emulated, the per-slot update with its walls) stepped here with tangential
springs, against the CPU backend's 'spring' model; springs survive slot reorders; a pile on a slope
below the friction angle holds with springs and creeps with the history-free law. The conversion of
the springs to and from the bake cache's history format is checked too.

Only the launches need a GPU (tests/gpu/); here each kernel runs one thread at a time.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from engine.backends.cpu import BackendCpu
from engine.backends.gpu_params import DIAG_SPRING_OVERFLOW
from engine.backends.gpu_springs import SPRING_SLOTS
from engine.backends.gpu_toolchain import KERNEL_DIR
from engine.backends.gpu_springs import SpringRows, history_from_rows, owns, rows_from_history
from engine.model import Domain, Gravity, Material, Physics, build_model
from engine.state import make_state

from .test_grain_device_math import HostGrains, grid_run, optix_run
from .test_grain_device_math import host_library  # noqa: F401  (the fixture the tests below take)


def test_spring_slots_match_the_header():
    header = (KERNEL_DIR / "dem_params.h").read_text()
    assert int(re.search(r"#define DEM_SPRING_SLOTS (\d+)", header).group(1)) == SPRING_SLOTS


def _pile(rng, *, count=120, friction=0.5, tilt_deg=0.0, model="spring"):
    """Grains settled-ish on the floor of a box: a loose 3-layer heap with small overlaps."""
    r = 0.005
    side = int(np.ceil(np.sqrt(count / 3)))
    g = np.stack(np.meshgrid(np.arange(side), np.arange(3), np.arange(side), indexing="ij"), -1).reshape(-1, 3)[:count]
    positions = (g * 2 * r * 0.9995 + r * 0.9995).astype(np.float32)
    positions[:, [0, 2]] += 0.02
    positions += rng.normal(0, r * 0.0002, positions.shape).astype(np.float32)
    radius = rng.uniform(0.999 * r, r, count).astype(np.float32)
    tilt = np.deg2rad(tilt_deg)
    physics = Physics(materials=(Material(friction=friction, restitution=0.3),),
                      domain=Domain(lo=(0.0, 0.0, 0.0), hi=(0.2, 0.2, 0.2), wall_friction=friction, wall_restitution=0.3),
                      gravity=Gravity(vector=(9.81 * np.sin(tilt), -9.81 * np.cos(tilt), 0.0)),
                      stiffness=2.0e4, dt=2.0e-5, friction_model=model, rotation=False, integrator="euler")
    return build_model(radius, physics), positions


def host_step(lib, grains: HostGrains, steps: int, *, path: str = "grid", permute=None, rng=None):
    """``steps`` steps of the GPU step loop on the host: forces (grid or OptiX), flip, integrate."""
    physics = grains.model.physics
    for _ in range(steps):
        step = int(grains.step)
        if path == "grid":
            grid_run(lib, grains)
        else:
            optix_run(lib, grains, offers=2)
        grains.arrays["spring_parity"][0] ^= 1
        a = (physics.gravity.at(step * physics.dt)).astype(np.float32)
        lib.dem_integrate_host(grains.address, float(a[0]), float(a[1]), float(a[2]), step)
        grains.step += 1
        if permute is not None and grains.step % permute == 0:
            shuffle_slots(grains, rng)


def shuffle_slots(grains: HostGrains, rng) -> None:
    """Permute every slot array as a Morton reorder does (springs live by model index and stay)."""
    order = rng.permutation(grains.model.particle_count)
    for name in ("pos", "vel", "info", "slot_to_model"):
        grains.arrays[name][:] = grains.arrays[name][order]


def model_order(grains: HostGrains) -> tuple[np.ndarray, np.ndarray]:
    """Positions and velocities (n, 3) in model order."""
    s2m = grains.arrays["slot_to_model"]
    pos = np.empty((len(s2m), 3), np.float32)
    vel = np.empty((len(s2m), 3), np.float32)
    pos[s2m] = grains.pos[:, :3]
    vel[s2m] = grains.vel[:, :3]
    return pos, vel


def start(model, positions, velocities=None) -> HostGrains:
    n = model.particle_count
    velocities = np.zeros((n, 3), np.float32) if velocities is None else velocities
    grains = HostGrains(model, positions, velocities, np.ones(n, np.uint8))
    grains.step = 0
    return grains


@pytest.mark.parametrize("path", ["grid", "optix"])
def test_springs_follow_the_cpu_backend_through_reorders(host_library, path, rng):
    model, positions = _pile(rng)
    velocities = rng.normal(0, 0.02, positions.shape).astype(np.float32)  # stirred: springs load and slip
    cpu = BackendCpu(model)
    cpu.set_state(make_state(positions, velocities))
    cpu.step(600)
    reference = cpu.get_state()
    grains = start(model, positions, velocities)
    host_step(host_library, grains, 600, path=path, permute=37, rng=rng)
    pos, vel = model_order(grains)
    radius = float(model.radius.max())
    moved = np.abs(reference.positions - positions).max()
    assert moved > 0.02 * radius, "the pile should settle noticeably"
    # float32 law against float64: the trajectories agree far below a grain's size; velocities, which
    # stiff contacts make ring, to a few percent of the fastest grain's.
    assert np.abs(pos - reference.positions).max() < 1e-3 * radius
    assert np.abs(vel - reference.velocities).max() < 2e-2 * np.abs(reference.velocities).max()
    # The springs match the CPU backend's too (same pairs, seen from the same side).
    gpu_history = history_from_rows(SpringRows(grains.arrays["springs"][:-1].reshape(2, -1, SPRING_SLOTS, 4)
                                               [grains.arrays["spring_parity"][0]].copy(),
                                               grains.arrays["wall_springs"][:-1, :3].reshape(-1, 6, 3).copy()))
    cpu_rows, dropped = rows_from_history(cpu.get_contact_history(), model.radius)
    gpu_rows, _ = rows_from_history(gpu_history, model.radius)
    assert dropped == 0 and grains.arrays["diag"][DIAG_SPRING_OVERFLOW] == 0
    assert np.array_equal(cpu_rows.partners(), gpu_rows.partners())
    assert np.count_nonzero(cpu_rows.partners() >= 0) > model.particle_count // 2
    scale = np.abs(cpu_rows.grains[..., :3]).max()
    assert np.abs(cpu_rows.grains[..., :3] - gpu_rows.grains[..., :3]).max() < 1e-2 * scale
    assert np.abs(cpu_rows.walls - gpu_rows.walls).max() < 1e-2 * np.abs(cpu_rows.walls).max()


def test_pile_holds_on_a_slope_with_springs_and_creeps_without(host_library, rng):
    """Gravity tilted 12° (tan 12° = 0.21 < μ = 0.5): with springs the pile stops; the history-free
    law lets it creep (the slow slump of GPU piles before)."""
    drift = {}
    for friction_model in ("spring", "damper"):
        model, positions = _pile(np.random.default_rng(5), tilt_deg=12.0, model=friction_model)
        grains = start(model, positions)
        host_step(host_library, grains, 1500, path="grid")
        before, _ = model_order(grains)
        host_step(host_library, grains, 1500, path="grid")
        after, _ = model_order(grains)
        drift[friction_model] = float(np.mean(after[:, 0] - before[:, 0]))
    assert drift["damper"] > 20 * abs(drift["spring"]), drift


def test_history_round_trip_and_owner_rows(rng):
    n = 50
    radius = rng.choice([0.01, 0.02], n).astype(np.float32)
    pairs = {(int(a), int(b)) for a, b in rng.integers(0, n, (200, 2)) if a != b}
    i = np.array([p[0] for p in pairs], np.int32)
    j = np.array([p[1] for p in pairs], np.int32)
    keep = np.unique(np.sort(np.stack([i, j], 1), axis=1), axis=0, return_index=True)[1]
    i, j = i[keep], j[keep]
    spring = rng.normal(0, 1e-4, (len(i), 3))
    history = {"pair_i": i, "pair_j": j, "pair_spring": spring, "wall_spring": rng.normal(0, 1e-4, (n, 6, 3))}
    rows, dropped = rows_from_history(history, radius)
    assert dropped == 0
    back = history_from_rows(rows)
    # Every pair comes back from its owner's side, the spring negated when the history had the other side.
    i_owns = owns(i, radius[i], j, radius[j])
    expected = {(int(a), int(b)) if o else (int(b), int(a)): tuple(np.float32(s if o else -s))
                for a, b, s, o in zip(i, j, spring, i_owns)}
    found = {(int(a), int(b)): tuple(np.float32(s)) for a, b, s in zip(back["pair_i"], back["pair_j"], back["pair_spring"])}
    assert found == expected
    assert np.array_equal(back["wall_spring"], history["wall_spring"].astype(np.float32).astype(np.float64))
    # A row holds SPRING_SLOTS pairs: the rest are counted, not silently mixed up.
    crowd = {"pair_i": np.zeros(SPRING_SLOTS + 3, np.int32), "pair_j": np.arange(1, SPRING_SLOTS + 4, dtype=np.int32),
             "pair_spring": np.ones((SPRING_SLOTS + 3, 3)), "wall_spring": np.zeros((n, 6, 3))}
    rows, dropped = rows_from_history(crowd, np.full(n, 0.01, np.float32))
    assert dropped == 3 and np.count_nonzero(rows.partners()[0] >= 0) == SPRING_SLOTS
