"""The grain–grain GPU code (kernels/dem_math.cuh, grid.cu, optix_dem.cu), compiled for the host with nvcc
and run one thread at a time, against the brute-force oracle, the CPU backend and the float64 contact
law: the same pairs, each resolved once, and forces that agree to float32 rounding.

The CUDA grid path runs its own kernels (grid_keys, grid_gather_sorted, grid_forces, grid_pairs) over
a stable bucket sort done here in numpy (the device's deterministic bucket sort is stable too). The
OptiX path runs kernels/optix_dem.cu's ray-generation and intersection programs with the traversal
emulated (tests/engine/native/optix_emulated/optix.h): every proxy box the point ray meets is offered
in reverse order, once or twice — OptiX may run an intersection program more than once for the same
primitive, and the program must keep each partner once. Only the launches themselves need a GPU
(tests/gpu/).
"""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from engine.backends.cpu import BackendCpu
from engine.backends.cuda_grid import grid_layout
from engine.backends.gpu_params import (DEM_PARAMS_DTYPE, INFO_ACTIVE, INFO_MATERIAL_SHIFT, INT_MAX,
                                        OPTIX_DEM_PARAMS_DTYPE, fill_dem_params, grid_fields, moments_of_inertia,
                                        rotating_law, rotation_tables)
from engine.backends.gpu_springs import SPRING_SLOTS
from engine.backends.gpu_toolchain import KERNEL_DIR
from engine.backends.optix_pipeline import RAY_TMAX_FRACTION
from engine.bonds import bond_rows
from engine.contact_law import contact_force, pair_tables, wall_tables
from engine.model import Domain, Material, Physics, build_model
from engine.state import make_state
from engine.neighbors.brute import brute_force_pairs

from .test_contacts import _states

NVCC = shutil.which("nvcc")
pytestmark = pytest.mark.skipif(NVCC is None, reason="nvcc is not installed")
NATIVE = Path(__file__).resolve().parent / "native"
#: Partners per OptiX batch: the kernel's default, and a tiny one so that most rays need several.
BATCHES = (16, 3)
STATES = ["uniform polydisperse", "ratio 120:1", "clusters", "coincident centres", "two-radius lattice", "crowd"]


def _build(out: Path, batch: int):
    result = subprocess.run(
        [NVCC, "-x", "c++", "-std=c++17", "-O2", "-shared", "-Xcompiler", "-fPIC,-ffp-contract=off,-Wall,-Werror",
         f"-I{NATIVE / 'optix_emulated'}", f"-I{KERNEL_DIR}", f"-DOPTIX_DEM_BATCH={batch}",
         f"-DDEM_SPRING_SLOTS={SPRING_SLOTS}", "-o", str(out),
         str(NATIVE / "grain_host.cpp")],
        capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    library = ctypes.CDLL(str(out))
    p = ctypes.c_void_p
    for name, args, restype in (("grid_keys_host", [p, p], None), ("grid_gather_sorted_host", [p, p, p], None),
                                ("grid_forces_host", [p, p, p, p], None),
                                ("grid_forces_rotating_host", [p, p, p, p], None),
                                ("grid_pairs_host", [p, p, p, p, p, p, ctypes.c_uint], None),
                                ("dem_proxy_aabbs_host", [p, p], None),
                                ("optix_dem_launch_host", [p, p, ctypes.c_int], ctypes.c_longlong),
                                ("dem_integrate_host", [p, ctypes.c_float, ctypes.c_float, ctypes.c_float, ctypes.c_int],
                                 None),
                                ("dem_integrate_rotating_host",
                                 [p, ctypes.c_float, ctypes.c_float, ctypes.c_float, ctypes.c_int], None),
                                ("dem_clump_step_host", [p, ctypes.c_int], None)):
        getattr(library, name).argtypes = args
        getattr(library, name).restype = restype
    return library


#: The host builds of this session by batch size: the modules that share the fixtures below build each once.
_BUILDS: dict[int, ctypes.CDLL] = {}


def _built(batch: int, tmp_path_factory):
    # The fixtures are imported by other test files that carry no skip mark of their own: skip here,
    # or every test taking them would error where nvcc is missing.
    if NVCC is None:
        pytest.skip("nvcc is not installed")
    if batch not in _BUILDS:
        _BUILDS[batch] = _build(tmp_path_factory.mktemp("grain_host") / "grain_host.so", batch)
    return _BUILDS[batch]


@pytest.fixture(scope="module", params=BATCHES, ids=lambda b: f"batch{b}")
def host_library(request, tmp_path_factory):
    """grain_host.cpp (kernels/grid.cu and optix_dem.cu) built for the host, without fused multiply-adds
    (the launcher compiles with --fmad=false)."""
    return _built(request.param, tmp_path_factory)


@pytest.fixture(scope="module")
def grain_library(tmp_path_factory):
    """The host build with the kernel's default OptiX batch, for tests of the CUDA grid path only."""
    return _built(BATCHES[0], tmp_path_factory)


def bond_arrays(model) -> dict[str, np.ndarray]:
    """The glue-bond arrays of ``DemParams`` (engine.bonds.bond_rows), every bond intact in half 0."""
    bonds = model.bonds
    if bonds is None or bonds.count == 0:
        return {name: np.zeros(2, np.int32) for name in ("bond_start", "bond_other", "bond_index", "bond_pairs")} | {
            "bond_props": np.zeros(4), "bond_state": np.zeros((1, 4), np.float32)}
    start, other, index = bond_rows(bonds, model.particle_count)
    state = np.zeros((2 * bonds.count, 4), np.float32)
    state[:bonds.count, 3] = 1.0
    return {"bond_start": start.astype(np.int32), "bond_other": other.astype(np.int32),
            "bond_index": index.astype(np.int32), "bond_pairs": np.ascontiguousarray(bonds.pairs, np.int32),
            "bond_props": np.ascontiguousarray(np.stack([bonds.rest, bonds.area, bonds.stiffness, bonds.strength], 1)),
            "bond_state": state}


def clump_arrays(model) -> dict[str, np.ndarray]:
    """The rigid-clump arrays of ``DemParams`` (engine.bonds.Clumps); the bodies are set by the caller."""
    c = getattr(model, "clumps", None)
    if c is None:
        return {"clump_of": np.zeros(2, np.int32), "clump_start": np.zeros(2, np.int32),
                "clump_members": np.zeros(2, np.int32), "clump_offset": np.zeros(3), "clump_mass": np.zeros(3),
                "clump_inertia_inv": np.zeros(3), "clump_body": np.zeros((1, 19))}
    return {"clump_of": np.ascontiguousarray(c.clump, np.int32), "clump_start": np.ascontiguousarray(c.start, np.int32),
            "clump_members": np.ascontiguousarray(c.members, np.int32), "clump_offset": np.ascontiguousarray(c.offset),
            "clump_mass": np.ascontiguousarray(c.mass), "clump_inertia_inv": np.ascontiguousarray(c.inertia_inv).ravel(),
            "clump_body": np.zeros((c.count, 19))}


class HostGrains:
    """One model and state in the device layout (slot k = particle k), with ``DemParams`` over them."""

    def __init__(self, model, positions, velocities, active):
        n = model.particle_count
        self.model = model
        self.pos = np.zeros((n, 4), np.float32)
        self.pos[:, :3], self.pos[:, 3] = positions, model.radius
        self.vel = np.zeros((n, 4), np.float32)
        self.vel[:, :3], self.vel[:, 3] = velocities, model.mass
        self.force = np.zeros((n, 4), np.float32)
        self.info = (active.astype(np.uint32) & INFO_ACTIVE) | (model.material_index.astype(np.uint32) << INFO_MATERIAL_SHIFT)
        physics = model.physics
        beta, mu = pair_tables(physics.materials)
        wall_beta, wall_mu = wall_tables(physics.materials, physics.domain.wall_restitution,
                                         physics.domain.wall_friction)
        self.arrays = dict(pos=self.pos, vel=self.vel, force=self.force, info=self.info,
                           beta=np.ascontiguousarray(beta.ravel()), mu=np.ascontiguousarray(mu.ravel()),
                           wall_beta=wall_beta, wall_mu=wall_mu, field_table=np.zeros(16, np.float32),
                           field_grid=np.zeros(1, np.float32), diag=np.array([INT_MAX, INT_MAX, 0, 0], np.int32),
                           springs=np.zeros((2 * n * SPRING_SLOTS + 1, 4), np.float32),
                           wall_springs=np.zeros((6 * n + 1, 4), np.float32),
                           slot_to_model=np.arange(n, dtype=np.int32), spring_parity=np.zeros(1, np.int32),
                           omega=np.zeros((n, 4), np.float32), torque=np.zeros((n, 4), np.float32),
                           orientation=np.tile(np.float32([1, 0, 0, 0]), (n, 1)), accel=np.zeros((n, 4), np.float32),
                           alpha=np.zeros((n, 4), np.float32),
                           rolling=np.zeros((2 * n * SPRING_SLOTS + 1, 4), np.float32),
                           wall_rolling=np.zeros((6 * n + 1, 4), np.float32),
                           history_dt=np.full(1, physics.dt, np.float32),
                           model_to_slot=np.arange(n, dtype=np.int32), **bond_arrays(model), **clump_arrays(model),
                           **{name: np.ascontiguousarray(table.ravel())
                              for name, table in rotation_tables(physics).items()})
        self.arrays["omega"][:, 3] = moments_of_inertia(model)
        self.arrays["springs"].view(np.int32)[:, 3] = -1
        self.cell, self.grid_bits = grid_layout(model)
        self.params = np.zeros(1, DEM_PARAMS_DTYPE)
        fill_dem_params(self.params[0], self.arrays, model, field_count=0, pointer=lambda a: a.ctypes.data,
                        **grid_fields(self.cell, self.grid_bits))

    @property
    def address(self) -> int:
        return self.params.ctypes.data


def grid_run(lib, grains: HostGrains) -> tuple[np.ndarray, set]:
    """Forces (n, 3) float32 and the pairs of kernels/grid.cu: keys, stable bucket sort, gather, forces, pairs."""
    n = grains.model.particle_count
    key = np.zeros(n, np.uint32)
    lib.grid_keys_host(grains.address, key.ctypes.data)
    buckets = (1 << sum(grains.grid_bits)) + 1
    sorted_slots = np.argsort(key, kind="stable").astype(np.int32)
    start = np.zeros(buckets + 1, np.uint32)
    start[1:] = np.cumsum(np.bincount(key, minlength=buckets))
    pos_sorted = np.zeros((n, 4), np.float32)
    lib.grid_gather_sorted_host(grains.address, sorted_slots.ctypes.data, pos_sorted.ctypes.data)
    grains.force[:] = np.nan  # grid_forces writes every slot
    # The kernel the launcher picks (engine.backends.cuda_grid): the paper's, or the rotating law's.
    forces = lib.grid_forces_rotating_host if rotating_law(grains.model) else lib.grid_forces_host
    forces(grains.address, start.ctypes.data, sorted_slots.ctypes.data, pos_sorted.ctypes.data)
    capacity = 64 * n
    pairs = np.zeros((capacity, 2), np.int32)
    count = np.zeros(1, np.uint32)
    lib.grid_pairs_host(grains.address, start.ctypes.data, sorted_slots.ctypes.data, pos_sorted.ctypes.data,
                        pairs.ctypes.data, count.ctypes.data, capacity)
    assert count[0] <= capacity
    listed = pairs[:count[0]]
    found = {tuple(p) for p in listed.tolist()}
    assert len(found) == len(listed), "the CUDA grid listed a pair twice"
    return grains.force[:, :3].copy(), found


def optix_run(lib, grains: HostGrains, *, offers: int) -> tuple[np.ndarray, set, int]:
    """Forces (n, 3), pairs and intersection-program calls of kernels/optix_dem.cu, traversal emulated."""
    n = grains.model.particle_count
    aabb = np.zeros((n, 6), np.float32)
    lib.dem_proxy_aabbs_host(grains.address, aabb.ctypes.data)
    capacity = 64 * n
    pairs = np.zeros((capacity, 2), np.int32)
    count = np.zeros(1, np.uint32)
    launch = np.zeros(1, OPTIX_DEM_PARAMS_DTYPE)
    launch[0]["dem"] = grains.params[0]
    launch[0]["pairs"] = pairs.ctypes.data
    launch[0]["pair_count"] = count.ctypes.data
    launch[0]["pair_capacity"] = capacity
    launch[0]["ray_tmax"] = RAY_TMAX_FRACTION * float(grains.model.radius.min())
    launch[0]["mode"] = 1
    lib.optix_dem_launch_host(launch.ctypes.data, aabb.ctypes.data, offers)
    assert count[0] <= capacity
    listed = pairs[:count[0]]
    found = {(min(i, j), max(i, j)) for i, j in listed.tolist()}
    assert len(found) == len(listed), "the OptiX program resolved a pair twice"
    grains.force[:] = 0.0  # the OptiX program accumulates
    launch[0]["mode"] = 0
    calls = lib.optix_dem_launch_host(launch.ctypes.data, aabb.ctypes.data, offers)
    return grains.force[:, :3].copy(), found, int(calls)


def reference_forces(model, positions, velocities, pairs) -> tuple[np.ndarray, np.ndarray]:
    """Contact forces (n, 3) [N] from the float64 law (engine.contact_law.contact_force) over ``pairs``,
    and each particle's sum of |pair force|, the scale of its rounding."""
    physics = model.physics
    beta, mu = pair_tables(physics.materials)
    force = np.zeros((model.particle_count, 3))
    scale = np.zeros(model.particle_count)
    for i, j in sorted(pairs):
        mi, mj = model.material_index[i], model.material_index[j]
        f = contact_force(positions[i], positions[j], velocities[i], velocities[j], float(model.radius[i]),
                          float(model.radius[j]), float(model.mass[i]), float(model.mass[j]), physics.stiffness,
                          float(beta[mi, mj]), float(mu[mi, mj]))
        force[i] += f
        force[j] -= f
        scale[i] += np.abs(f).sum()
        scale[j] += np.abs(f).sum()
    return force, scale


def _state(name, rng):
    if name == "crowd":  # many partners per ray: 12 grains on one point, 50 more within a radius
        n = 300
        positions = rng.uniform(0, 0.3, (n, 3))
        positions[:12] = positions[0]
        positions[12:62] = positions[0] + rng.normal(0, 0.004, (50, 3))
        return positions, np.full(n, 0.01)
    return _states(rng)[name]


@pytest.mark.parametrize("name", STATES)
def test_grain_kernels_equal_oracle_and_cpu(host_library, name, rng):
    positions, radius = _state(name, rng)
    positions = positions.astype(np.float32)
    radius = radius.astype(np.float32)
    n = len(radius)
    velocities = rng.normal(0, 0.3, (n, 3)).astype(np.float32)
    active = np.ones(n, np.uint8)
    active[5::41] = 0
    physics = Physics(materials=(Material(friction=0.3, restitution=0.5), Material(friction=0.6, restitution=0.8)),
                      domain=Domain(lo=tuple(positions.min(0) - 1.0), hi=tuple(positions.max(0) + 1.0)),
                      stiffness=1.0e4, friction_model="damper", rotation=False, integrator="euler")
    model = build_model(radius, physics, material_index=rng.integers(0, 2, n).astype(np.int32))

    alive = np.flatnonzero(active)
    oracle = {(int(alive[a]), int(alive[b])) for a, b in brute_force_pairs(positions[alive], radius[alive])}
    assert len(oracle) > 50
    cpu = BackendCpu(model)
    cpu.set_state(make_state(positions, velocities, active))
    assert {tuple(p) for p in cpu.contact_pairs().tolist()} == oracle
    expected, scale = reference_forces(model, positions.astype(np.float64), velocities.astype(np.float64), oracle)

    grains = HostGrains(model, positions, velocities, active)
    grid_force, grid_pairs = grid_run(host_library, grains)
    assert grid_pairs == oracle
    # float32 contact law against float64: a few float32 roundings of each pair force (at most 2.5e-6 of
    # a particle's force scale was seen, in the deep overlaps of the clusters).
    assert np.all(np.abs(grid_force - expected) <= 1e-5 * scale[:, None])
    assert not grid_force[active == 0].any()

    once_force, once_pairs, once_calls = optix_run(host_library, grains, offers=1)
    twice_force, twice_pairs, twice_calls = optix_run(host_library, grains, offers=2)
    assert once_pairs == oracle and twice_pairs == oracle
    assert twice_calls >= 2 * once_calls > 0
    # Offering every primitive twice changes nothing, bit for bit: each partner is kept once.
    assert np.array_equal(once_force, twice_force)
    # The same pair forces as the grid, summed in another order: equal to float32 rounding of the sums.
    assert np.all(np.abs(twice_force - grid_force) <= 1e-6 * scale[:, None])
    assert not twice_force[active == 0].any()


def test_crowded_ray_needs_several_batches(host_library, rng):
    """62 grains about one point: rays with more partners than a batch holds are traced again, and every
    pair is still found once."""
    positions, radius = _state("crowd", rng)
    positions = positions.astype(np.float32)
    radius = radius.astype(np.float32)
    model = build_model(radius, Physics(domain=Domain(lo=(-1.0,) * 3, hi=(1.3,) * 3), friction_model="damper",
                                                rotation=False, integrator="euler"))
    n = len(radius)
    grains = HostGrains(model, positions, np.zeros((n, 3), np.float32), np.ones(n, np.uint8))
    _, pairs, calls = optix_run(host_library, grains, offers=2)
    assert pairs == brute_force_pairs(positions, radius)
    owned_by_first = sum(1 for i, j in pairs if i == 0)
    assert owned_by_first >= 40  # slot 0 owns more partners than any batch holds
